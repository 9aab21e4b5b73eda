"""The chains npu-cascade-rows runs in strips of rows: their members (window
ops on static NHWC tensors, the paddings between them, elementwise ops, a
transpose into NHWC heading a chain, a last op accumulating onto a skip) and
how a member's output rows map to the rows of its input; and the copies of
ops at a part of their shape that both cascades (rows and channels) make."""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir

from ..frontend.builders import element_of, extract_slice, is_float, shape_of, tensor_type
from ..machine_model import element_bytes
from ..recipes.conv import CONV2D
from ..recipes.ir_queries import RESIDUAL_START_ATTR, ints, optional_attr
from ..recipes.pooling import POOLING
from ..recipes.problem import Unsupported
from ..recipes.vector_body import body_program
from ..diagnostics import name_of
from .npu_select_conv_strategy import tensor_shape

WINDOW_OPS = ("linalg.conv_2d_nhwc_hwcf", "linalg.depthwise_conv_2d_nhwc_hwc",
              "linalg.pooling_nhwc_max", "linalg.pooling_nhwc_sum")
# The ops that apply an elementwise op writing their input as a prologue: those
# of the recipes that fold one (recipes/prologue.py's input_prologue).
PROLOGUE_READERS = CONV2D.ops + POOLING.ops


def read_as_prologue(op) -> bool:
    """Whether `op`'s result is only the input of a conv or pool, unpadded:
    that op applies `op` to its input tiles as a prologue."""
    uses = list(op.results[0].uses)
    return len(uses) == 1 and uses[0].operand_number == 0 \
        and uses[0].owner.name in PROLOGUE_READERS


# Ops making an op's initial value, which a strip makes again at its own shape.
INIT_OPS = ("tensor.empty", "linalg.fill", "linalg.broadcast")

@dataclass
class Member:
    """One op of a chain and how its output rows map to its input rows."""
    op: ir.Operation
    kernel: int = 1      # rows of the window (dilated)
    stride: int = 1
    pad_low: int = 0     # tensor.pad: rows added above
    source_rows_dim: int = 1   # the dim of the source its rows are (a transpose's)
    # An elementwise op whole a prologue of the window op reading it (no op,
    # no tensor of its own): the chain's head only (chain_ending_at).
    is_prologue: bool = False

    @property
    def source(self) -> ir.Value:
        return self.op.operands[0]

    @property
    def is_transpose(self) -> bool:
        return self.op.name == "linalg.transpose"

    def source_bytes(self, rows: int | None = None) -> int:
        """Bytes of the source, or of `rows` of its rows."""
        return tensor_bytes(self.source, rows, self.source_rows_dim)

    @property
    def is_pad(self) -> bool:
        return self.op.name == "tensor.pad"

    @property
    def is_elementwise(self) -> bool:
        return self.op.name == "linalg.generic"

    def input_rows(self, first: int, last: int) -> tuple[int, int]:
        """The rows of the op's input that its output rows [first, last) read
        (for a pad: those of its source, clipped to it)."""
        if self.is_pad:
            height = shape_of(self.source)[1]
            return max(first - self.pad_low, 0), min(last - self.pad_low, height)
        return first * self.stride, (last - 1) * self.stride + self.kernel


def producer_of(value: ir.Value):
    return value.owner.operation if isinstance(value, ir.OpResult) else None


def _static_nhwc(value: ir.Value) -> bool:
    shape = tensor_shape(value)
    return shape is not None and len(shape) == 4


def tensor_bytes(value: ir.Value, rows: int | None = None, rows_dim: int = 1) -> int:
    """Bytes of a static 4-d tensor value, or of `rows` of its rows (dim
    `rows_dim`: 1 in NHWC)."""
    shape = shape_of(value)
    if rows is not None:
        shape = shape[:rows_dim] + [rows] + shape[rows_dim + 1:]
    return math.prod(shape) * (element_bytes(element_of(value)) or 0)


def init_of(op) -> ir.Value:
    return op.operands[len(op.operands) - 1]


def _remakeable_init(op) -> bool:
    """Whether `op`'s initial value is an empty, a fill, a per-channel
    broadcast or a residual start (skip + bias, which a strip makes from its
    rows of the skip) that only it reads (a strip makes its own)."""
    init = producer_of(init_of(op))
    if init is None or len(list(init.results[0].uses)) != 1:
        return False
    if RESIDUAL_START_ATTR in init.attributes:
        return shape_of(init.operands[0]) == shape_of(op.results[0])
    if init.name not in INIT_OPS:
        return False
    return init.name != "linalg.broadcast" or \
        ints(init.attributes["dimensions"], []) == [0, 1, 2]


def skip_of(op) -> ir.Value | None:
    """The skip tensor `op` accumulates onto (its residual start's), else None."""
    init = producer_of(init_of(op))
    return init.operands[0] if init is not None and RESIDUAL_START_ATTR in init.attributes \
        else None


def rows_elementwise(op, as_prologue: bool = False) -> bool:
    """Whether `op` is an elementwise linalg.generic a strip can run on its
    rows alone: all loops parallel, input 0 and the output indexed alike
    (identity), every other input the same tensor or indexed without the
    rows (a per-channel scale, bias or gate), and a body the vector unit runs
    on the float type of input 0 and the output. Not a quantization step (a
    type change the int8 passes match whole), nor a residual start (the
    initial value a conv accumulates onto), nor an op only a conv or pool
    reads, unpadded (read_as_prologue): that one folds into the reader's
    input loads as a prologue (recipes/prologue.py), where it costs no op;
    with `as_prologue`, only such an op."""
    if op.name != "linalg.generic" or len(op.results) != 1 \
            or RESIDUAL_START_ATTR in op.attributes \
            or element_of(op.operands[0]) != element_of(op.results[0]) \
            or not is_float(element_of(op.results[0])):
        return False
    if as_prologue != read_as_prologue(op):
        return False
    iterators = [str(ir.Attribute(kind)) for kind in ir.ArrayAttr(op.attributes["iterator_types"])]
    if any("parallel" not in kind for kind in iterators):
        return False
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    identity = ir.AffineMap.get_identity(4)
    if maps[0] != identity or maps[-1] != identity:
        return False
    source = op.operands[0]
    for value, affine_map in zip(list(op.operands)[1:-1], maps[1:-1]):
        if value == source and affine_map == identity:
            continue
        if not _broadcast_over_rows(affine_map):
            return False
    try:
        body_program(op.regions[0].blocks[0], len(op.operands) - 1)
    except Unsupported:
        return False
    return True


def _broadcast_over_rows(affine_map: ir.AffineMap) -> bool:
    """Whether the map indexes its operand by loops other than the rows (dim 1)
    or constants only: every strip reads that operand whole."""
    return all(isinstance(expr, ir.AffineConstantExpr)
               or (isinstance(expr, ir.AffineDimExpr) and expr.position != 1)
               for expr in affine_map.results)


def readers_of(value: ir.Value) -> set:
    """The ops reading `value`, each once (one may read it as several operands)."""
    return {use.owner.operation for use in value.uses}


def read_only_by(value: ir.Value, reader) -> bool:
    """Whether `reader` is the one use of `value`."""
    uses = list(value.uses)
    return len(uses) == 1 and uses[0].owner.operation == reader.operation


def sole_reader(value: ir.Value):
    """The one op reading `value`, else None."""
    readers = readers_of(value)
    return next(iter(readers)) if len(readers) == 1 else None


def member_of(op, prologue: bool = False) -> Member | None:
    """`op` as a chain member: a window op on static NHWC tensors making its own
    initial value, a tensor.pad of rows and columns, an elementwise op on rows
    (rows_elementwise) making its own output, or a transpose into NHWC that
    keeps the batch dim (the model's NCHW input: its strips transpose rows of
    it in SRAM). With `prologue`, only such an elementwise op that its reader
    folds as a prologue (read_as_prologue), as a prologue member."""
    if len(op.results) != 1 or not len(op.operands) or not _static_nhwc(op.results[0]) \
            or not _static_nhwc(op.operands[0]):
        return None
    if prologue:
        return Member(op, is_prologue=True) \
            if rows_elementwise(op, as_prologue=True) and _remakeable_init(op) else None
    if op.name in WINDOW_OPS:
        if not _remakeable_init(op):
            return None
        dilation = ints(optional_attr(op, "dilations"), [1, 1])[0]
        stride = ints(optional_attr(op, "strides"), [1, 1])[0]
        kernel = shape_of(op.operands[1])[0]
        return Member(op, kernel=(kernel - 1) * dilation + 1, stride=stride)
    if rows_elementwise(op) and _remakeable_init(op):
        return Member(op)
    if op.name == "linalg.transpose" and _remakeable_init(op):
        permutation = ints(op.attributes["permutation"], [])
        if permutation[0] == 0:
            return Member(op, source_rows_dim=permutation[1])
    if op.name == "tensor.pad" and len(op.operands) == 1 and constant_padding(op):
        low = ints(op.attributes["static_low"], [])
        high = ints(op.attributes["static_high"], [])
        if low[0] == high[0] == low[3] == high[3] == 0:
            return Member(op, pad_low=low[1])
    return None


def padding_value(pad) -> ir.Value:
    """The value a tensor.pad's body yields."""
    return list(pad.regions[0].blocks[0].operations)[-1].operands[0]


def constant_padding(pad) -> bool:
    """Whether the pad yields one value everywhere (not one computed from the
    indices, which a strip would shift)."""
    owner = padding_value(pad).owner
    return not isinstance(owner, ir.Block) and owner.operation.parent != pad


def chain_ending_at(last, claimed: set) -> list[Member]:
    """The longest chain of members ending at the window op `last`, last first:
    each member's operand 0 is made by the one after it, read by nothing else.
    The caller checks `padded_in_place(last)`."""
    first = member_of(last)
    if first is None or first.is_pad:
        return []
    chain = [first]
    while not chain[-1].is_transpose:   # a transpose's source rows are another dim
        producer = producer_of(chain[-1].source)
        if producer is None or producer in claimed \
                or sole_reader(producer.results[0]) is None:
            break
        member = member_of(producer)
        if member is None:
            # An elementwise op only this window op reads: it folds into the
            # op's loads as a prologue, which the op's strips cannot take (they
            # read rows of its result); its strips run it on their rows
            # instead. The chain ends there, as it would at the prologue.
            head = member_of(producer, prologue=True)
            if head is not None:
                chain.append(head)
            break
        chain.append(member)
    return chain


def padded_in_place(op) -> ir.Operation | None:
    """A pad of `op`'s result that an op other than a conv or pool reads, else
    None. Such a pad's source is written in the padded buffer's interior by its
    producer (npu-pad-in-place), which a chain's strips are not: the result
    stays whole. Convs and pools fold the padding into their loads."""
    for use in op.results[0].uses:
        pad = use.owner.operation
        if pad.name == "tensor.pad" and any(
                reader.owner.operation.name not in WINDOW_OPS for reader in pad.results[0].uses):
            return pad
    return None


def producer_is_pad(member: Member) -> bool:
    producer = producer_of(member.source)
    return producer is not None and producer.name == "tensor.pad"


def node_names(members: list) -> str:
    """The members' model nodes (or op names and lines), first to last."""
    return ", ".join(dict.fromkeys(name_of(m.op) for m in reversed(members) if not m.is_pad))


def slice_along(value: ir.Value, dim: int, first: int, last: int) -> ir.Value:
    """`value`'s entries [first, last) along `dim`, whole along the others."""
    shape = shape_of(value)
    offsets, sizes = [0] * len(shape), list(shape)
    offsets[dim], sizes[dim] = first, last - first
    return extract_slice(value, offsets, sizes)


def copy_at_shape(op, operands: dict, shape, anchor) -> ir.Operation:
    """A copy of `op` before `anchor` with operands replaced (index -> value)
    and a result of `shape`."""
    with ir.InsertionPoint(anchor):
        copy = op.clone()
    for index, value in operands.items():
        copy.operands[index] = value
    copy.results[0].set_type(tensor_type(shape, element_of(op.results[0])))
    return copy
