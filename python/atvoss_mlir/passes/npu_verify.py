"""npu-verify: the semantic checks of the `npu` dialect that IRDL cannot express.

IRDL only checks operand counts, that operands are memrefs or tokens, and that
required attributes are present. This pass checks, reporting every error at the
offending op (with a note at the other op involved):

1. Memory spaces: compute-op operands, `npu.alloc` results and `npu.dealloc`
   operands are in SRAM (memory space 1); `npu.dma_load` copies DRAM -> SRAM
   and `npu.dma_store` SRAM -> DRAM.
2. Shapes, element types and attributes of each op, as its description in
   `dialects/npu.td` defines them: matmul MxK * KxN -> MxN, the conv/pool
   output size `(H - d*(K-1) - 1) / s + 1`, broadcasting, permutations,
   `clip` bounds, DMA channels, static, identity-layout, aligned allocs.
3. DMA tokens: every token reaches an `npu.wait` (also through scf.for
   iter_args and scf.yield), and in program order no op touches an SRAM
   buffer while a DMA filling it is pending, writes a buffer a pending
   `npu.dma_store` reads, or deallocates a buffer with a pending DMA; and
   no DMA touches an SRAM buffer that a compute op issued since the last
   `npu.barrier` uses (DMA engines do not wait for compute).
4. Static SRAM offsets: an alloc with an `offset` fits in the target's SRAM,
   and buffers whose lifetimes overlap do not share bytes.

Buffers are tracked per root `npu.alloc` (through memref view ops), so two
slots of one alloc count as the same buffer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from mlir import ir

from ..diagnostics import Diagnostic, DiagnosticEngine
from ..dialects.npu import SRAM_MEMORY_SPACE, is_sram
from ..machine_model import (ACCUMULATOR_TYPE, MATRIX_INPUT_TYPES, element_bytes,
                             refused_type_reason)
from ..target import NpuTarget
from . import ModulePass, PassContext
from ..block_order import block_ops, unchanged_blocks

# Operand names of each npu op, in operand order (from dialects/npu.td).
OPERAND_NAMES = {
    "npu.matmul": ("lhs", "rhs", "output", "bias"),
    "npu.conv2d": ("input", "filter", "output", "bias"),
    "npu.depthwise_conv2d": ("input", "filter", "output", "bias"),
    "npu.elementwise": ("lhs", "rhs", "output"),
    "npu.activation": ("input", "output"),
    "npu.pool2d": ("input", "output"),
    "npu.transpose": ("input", "output"),
    "npu.im2col": ("input", "output"),
    "npu.fill": ("output",),
    "npu.requantize": ("input", "output"),
    "npu.dma_load": ("source", "target"),
    "npu.dma_store": ("source", "target"),
    "npu.dealloc": ("buffer",),
}
# The operand each compute op writes.
OUTPUT_OPERAND = {
    "npu.matmul": 2, "npu.conv2d": 2, "npu.depthwise_conv2d": 2, "npu.elementwise": 2,
    "npu.activation": 1, "npu.pool2d": 1, "npu.transpose": 1, "npu.im2col": 1,
    "npu.fill": 0, "npu.requantize": 1,
}
COMPUTE_OPS = frozenset(OUTPUT_OPERAND)
DMA_OPS = frozenset({"npu.dma_load", "npu.dma_store"})
# Ops whose result is a view of their first operand: the same SRAM buffer.
VIEW_OPS = frozenset({"memref.subview", "memref.cast", "memref.view", "memref.reinterpret_cast",
                      "memref.collapse_shape", "memref.expand_shape"})
# Ops with an `activation`-style attribute that may be `clip`.
CLIP_ATTRIBUTE = {"npu.matmul": "activation", "npu.conv2d": "activation",
                  "npu.depthwise_conv2d": "activation", "npu.activation": "kind"}
SCF_FOR_INIT_OPERANDS = 3  # scf.for operands: lower bound, upper bound, step, inits...
# Ops whose scf.yield operand i becomes their result i.
YIELDS_TO_RESULTS = frozenset({"scf.for", "scf.if", "scf.execute_region"})


@dataclass(frozen=True)
class NpuVerify(ModulePass):
    argument = "npu-verify"
    summary = "Check SRAM placement, shapes, DMA token use and SRAM offsets of npu ops"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        try:
            with unchanged_blocks():
                self.check(module, context)
        finally:
            _TOKEN_TYPES.clear()  # its types keep their context alive

    def check(self, module: ir.Operation, context: PassContext) -> None:
        report = Reporter(context.diagnostics)
        target = context.target
        for op in walk_ops(module):
            check_memory_spaces(op, report)
            check_op_rules(op, report, target)
            check_token_waited(op, report)
        for function in module.regions[0].blocks[0].operations:
            for region in function.regions:
                for block in region.blocks:
                    check_dma_hazards(block, {}, report)
                    check_dma_after_compute(block, {}, report)
            check_sram_offsets(function, report, target)


@dataclass
class Reporter:
    diagnostics: DiagnosticEngine

    def error(self, op, message: str, notes: Sequence[tuple[object, str]] = ()) -> None:
        """An error at `op`, with (other op, message) notes."""
        self.diagnostics.error(op.location, f"'{op.name}' op {message}",
                               [Diagnostic("note", note, other.location) for other, note in notes])


def walk_ops(op):
    """Every op nested in `op`, in pre-order (program order)."""
    for region in op.regions:
        for block in region.blocks:
            for nested in block_ops(block):
                yield nested
                yield from walk_ops(nested)


# ---------------------------------------------------------------------------
# Types and shapes
# ---------------------------------------------------------------------------

def is_memref(value: ir.Value) -> bool:
    return isinstance(value.type, ir.MemRefType)


_TOKEN_TYPES: dict = {}    # type -> whether it is !npu.token (printing a type is slow),
                           # during one npu-verify run


def is_token(value: ir.Value) -> bool:
    type_ = value.type
    found = _TOKEN_TYPES.get(type_)
    if found is None:
        found = _TOKEN_TYPES[type_] = str(type_) == "!npu.token"
    return found


def dims(value: ir.Value) -> list[int | None]:
    """The shape of a memref value, None for a dynamic size."""
    memref_type = ir.MemRefType(value.type)
    return [None if memref_type.is_dynamic_dim(i) else size
            for i, size in enumerate(memref_type.shape)]


def element(value: ir.Value) -> str:
    return str(ir.MemRefType(value.type).element_type)


def show(shape) -> str:
    return "x".join("?" if size is None else str(size) for size in shape) or "scalar"


def same_size(a: int | None, b: int | None) -> bool:
    return a is None or b is None or a == b


def same_shape(a, b) -> bool:
    return len(a) == len(b) and all(same_size(x, y) for x, y in zip(a, b))


def operand_name(op, index: int) -> str:
    names = OPERAND_NAMES.get(op.name, ())
    return names[index] if index < len(names) else f"operand #{index}"


# ---------------------------------------------------------------------------
# 1. Memory spaces
# ---------------------------------------------------------------------------

def check_memory_spaces(op, report: Reporter) -> None:
    if op.name in COMPUTE_OPS or op.name == "npu.dealloc":
        for index, value in enumerate(op.operands):
            if is_memref(value) and not is_sram(value.type):
                report.error(op, f"{operand_name(op, index)} must be in SRAM (memory space "
                                 f"{SRAM_MEMORY_SPACE}), got '{value.type}'")
    elif op.name == "npu.alloc":
        if not is_sram(op.results[0].type):
            report.error(op, f"result must be in SRAM (memory space {SRAM_MEMORY_SPACE}), "
                             f"got '{op.results[0].type}'")
    elif op.name in DMA_OPS:
        sram_index = dma_sram_operand(op)
        dram_index = 1 - sram_index
        sram_side, dram_side = op.operands[sram_index], op.operands[dram_index]
        if not is_sram(sram_side.type):
            report.error(op, f"{operand_name(op, sram_index)} must be in SRAM (memory space "
                             f"{SRAM_MEMORY_SPACE}), got '{sram_side.type}'")
        if is_sram(dram_side.type):
            report.error(op, f"{operand_name(op, dram_index)} must be in DRAM, "
                             f"got SRAM '{dram_side.type}'")


def dma_sram_operand(dma) -> int:
    """The operand index of a DMA's SRAM side: a load's target, a store's source."""
    return 1 if dma.name == "npu.dma_load" else 0


# ---------------------------------------------------------------------------
# 2. Shapes, element types and attributes
# ---------------------------------------------------------------------------

def check_op_rules(op, report: Reporter, target: NpuTarget) -> None:
    if op.name.startswith("npu."):
        for value in op.operands:
            reason = is_memref(value) and refused_type_reason(element(value))
            if reason:
                report.error(op, reason)
                return
    check = OP_RULES.get(op.name)
    if check is not None:
        check(op, report, target)
    if op.name in CLIP_ATTRIBUTE:
        check_clip_bounds(op, report)


def ranks_ok(op, report: Reporter, expected: dict[int, int]) -> bool:
    """Report each operand (by index) whose rank differs from the expected one."""
    ok = True
    for index, rank in expected.items():
        if index >= len(op.operands):
            continue
        value = op.operands[index]
        if ir.MemRefType(value.type).rank != rank:
            report.error(op, f"{operand_name(op, index)} must be rank {rank}, got '{value.type}'")
            ok = False
    return ok


def positive_pair(op, report: Reporter, name: str) -> tuple[int, int] | None:
    """The attribute `name` as two positive integers, or None after reporting."""
    attribute = op.attributes[name] if name in op.attributes else None
    if isinstance(attribute, ir.DenseI64ArrayAttr):
        values = list(attribute)
        if len(values) == 2 and all(v > 0 for v in values):
            return values[0], values[1]
    report.error(op, f"{name} must have 2 positive entries, got {attribute}")
    return None


def window_output_size(size: int, kernel: int, stride: int, dilation: int) -> int | None:
    """Output size of a sliding window, None when the window does not fit."""
    span = size - dilation * (kernel - 1) - 1
    return None if span < 0 else span // stride + 1


def check_window_output(op, report: Reporter, input_shape, kernel_hw, output_hw,
                        strides, dilations) -> list[int | None] | None:
    """Check OH and OW of an NHWC window op; returns them, None if a window does not fit.

    An `output_hw` of None only computes the sizes (im2col checks them itself).
    """
    sizes = []
    for axis, name in ((0, "height"), (1, "width")):
        size, kernel = input_shape[1 + axis], kernel_hw[axis]
        if size is None or kernel is None:
            sizes.append(None)
            continue
        expected = window_output_size(size, kernel, strides[axis], dilations[axis])
        if expected is None:
            report.error(op, f"window does not fit: input {name} {size} is smaller than the "
                             f"dilated kernel {name} {dilations[axis] * (kernel - 1) + 1}")
            return None
        sizes.append(expected)
        if output_hw is not None and not same_size(output_hw[axis], expected):
            report.error(op, f"output {name} is {output_hw[axis]}, expected ({size} - "
                             f"{dilations[axis]}*({kernel}-1) - 1) / {strides[axis]} + 1 = "
                             f"{expected}")
    return sizes


def check_sizes_agree(op, report: Reporter, what: str, first: tuple[str, int | None],
                      second: tuple[str, int | None]) -> None:
    (first_name, first_size), (second_name, second_size) = first, second
    if not same_size(first_size, second_size):
        report.error(op, f"{what} differ: {first_name} has {first_size}, "
                         f"{second_name} has {second_size}")


def check_bias(op, report: Reporter, size: int | None, size_name: str) -> None:
    if len(op.operands) < 4:
        return
    bias = op.operands[3]
    bias_shape = dims(bias)
    if len(bias_shape) != 1 or not same_size(bias_shape[0], size):
        report.error(op, f"bias must be rank 1 of size {size_name} = {show([size])}, "
                         f"got '{bias.type}'")


def check_matrix_element_types(op, report: Reporter) -> None:
    """lhs/input and rhs/filter share a supported type; output is it or the accumulator."""
    first, second, output = (element(op.operands[i]) for i in range(3))
    names = [operand_name(op, i) for i in range(3)]
    if first != second:
        report.error(op, f"{names[0]} element type {first} and {names[1]} element type "
                         f"{second} differ")
        return
    if first not in MATRIX_INPUT_TYPES:
        report.error(op, f"element type {first} is not supported (expected one of "
                         f"{', '.join(MATRIX_INPUT_TYPES)})")
        return
    if output not in (first, ACCUMULATOR_TYPE[first]):
        report.error(op, f"output element type {output} must be {first} (the input type) "
                         f"or {ACCUMULATOR_TYPE[first]} (the accumulator type)")


def check_matmul(op, report: Reporter, target: NpuTarget) -> None:
    check_matrix_element_types(op, report)
    if not ranks_ok(op, report, {0: 2, 1: 2, 2: 2}):
        return
    (m, k), (k2, n), output = dims(op.operands[0]), dims(op.operands[1]), dims(op.operands[2])
    if not same_size(k, k2):
        report.error(op, f"lhs is {show([m, k])} but rhs is {show([k2, n])}: "
                         f"contraction sizes {show([k])} and {show([k2])} differ")
    elif not same_shape(output, [m, n]):
        report.error(op, f"output is {show(output)}, expected {show([m, n])} "
                         f"(lhs rows x rhs columns)")
    check_bias(op, report, n, "N")


def check_conv2d(op, report: Reporter, target: NpuTarget) -> None:
    check_matrix_element_types(op, report)
    strides, dilations = positive_pair(op, report, "strides"), positive_pair(op, report, "dilations")
    if not ranks_ok(op, report, {0: 4, 1: 4, 2: 4}):
        return
    source, weights, output = (dims(op.operands[i]) for i in range(3))
    check_sizes_agree(op, report, "batch sizes", ("input", source[0]), ("output", output[0]))
    check_sizes_agree(op, report, "input channels", ("input (NHWC)", source[3]),
                      ("filter (HWCF)", weights[2]))
    check_sizes_agree(op, report, "output channels", ("filter (HWCF)", weights[3]),
                      ("output (NHWC)", output[3]))
    if strides and dilations:
        check_window_output(op, report, source, weights[:2], output[1:3], strides, dilations)
    check_bias(op, report, weights[3], "F")


def check_depthwise_conv2d(op, report: Reporter, target: NpuTarget) -> None:
    strides, dilations = positive_pair(op, report, "strides"), positive_pair(op, report, "dilations")
    if not ranks_ok(op, report, {0: 4, 1: 3, 2: 4}):
        return
    source, weights, output = (dims(op.operands[i]) for i in range(3))
    check_sizes_agree(op, report, "batch sizes", ("input", source[0]), ("output", output[0]))
    check_sizes_agree(op, report, "channels", ("input", source[3]), ("filter (HWC)", weights[2]))
    check_sizes_agree(op, report, "channels", ("input", source[3]), ("output", output[3]))
    if strides and dilations:
        check_window_output(op, report, source, weights[:2], output[1:3], strides, dilations)
    check_bias(op, report, source[3], "C")


def broadcasts_to(shape, target_shape) -> bool:
    """numpy rules: align trailing dimensions; each is 1 or the target's size."""
    if len(shape) > len(target_shape):
        return False
    return all(size == 1 or same_size(size, target_size)
               for size, target_size in zip(reversed(shape), reversed(target_shape)))


def check_elementwise(op, report: Reporter, target: NpuTarget) -> None:
    lhs, rhs, output = (dims(op.operands[i]) for i in range(3))
    if not same_shape(lhs, output):
        report.error(op, f"lhs shape {show(lhs)} differs from output shape {show(output)}")
    if not broadcasts_to(rhs, output):
        report.error(op, f"rhs shape {show(rhs)} does not broadcast to output shape "
                         f"{show(output)}")
    types = [element(op.operands[i]) for i in range(3)]
    if len(set(types)) > 1:
        report.error(op, f"element types differ: lhs {types[0]}, rhs {types[1]}, "
                         f"output {types[2]}")


def check_activation(op, report: Reporter, target: NpuTarget) -> None:
    source, output = dims(op.operands[0]), dims(op.operands[1])
    if not same_shape(source, output):
        report.error(op, f"input shape {show(source)} differs from output shape {show(output)}")


def check_pool2d(op, report: Reporter, target: NpuTarget) -> None:
    window, strides = positive_pair(op, report, "window"), positive_pair(op, report, "strides")
    if not ranks_ok(op, report, {0: 4, 1: 4}):
        return
    source, output = dims(op.operands[0]), dims(op.operands[1])
    check_sizes_agree(op, report, "batch sizes", ("input", source[0]), ("output", output[0]))
    check_sizes_agree(op, report, "channels", ("input", source[3]), ("output", output[3]))
    if window and strides:
        check_window_output(op, report, source, window, output[1:3], strides, (1, 1))


def check_transpose(op, report: Reporter, target: NpuTarget) -> None:
    source, output = dims(op.operands[0]), dims(op.operands[1])
    attribute = op.attributes["permutation"]
    permutation = list(attribute) if isinstance(attribute, ir.DenseI64ArrayAttr) else None
    if permutation is None or sorted(permutation) != list(range(len(source))):
        report.error(op, f"permutation {attribute} is not a permutation of "
                         f"0..{len(source) - 1} (the input rank is {len(source)})")
        return
    expected = [source[axis] for axis in permutation]
    if not same_shape(output, expected):
        report.error(op, f"output shape {show(output)}, expected {show(expected)} "
                         f"(input {show(source)} permuted by {permutation})")


def check_im2col(op, report: Reporter, target: NpuTarget) -> None:
    window = positive_pair(op, report, "window")
    strides, dilations = positive_pair(op, report, "strides"), positive_pair(op, report, "dilations")
    if not ranks_ok(op, report, {0: 4, 1: 2}) or not (window and strides and dilations):
        return
    source, output = dims(op.operands[0]), dims(op.operands[1])
    sizes = check_window_output(op, report, source, window, None, strides, dilations)
    if sizes is None:
        return
    batch, out_h, out_w, channels = source[0], sizes[0], sizes[1], source[3]
    rows = None if None in (batch, out_h, out_w) else batch * out_h * out_w
    columns = None if channels is None else window[0] * window[1] * channels
    if not same_shape(output, [rows, columns]):
        report.error(op, f"output shape {show(output)}, expected {show([rows, columns])} "
                         f"= [N*OH*OW, KH*KW*C] with N = {show([batch])}, OH = {show([out_h])}, "
                         f"OW = {show([out_w])}, KH*KW = {window[0]}*{window[1]}, "
                         f"C = {show([channels])}")


def check_requantize(op, report: Reporter, target: NpuTarget) -> None:
    source, output = op.operands[0], op.operands[1]
    if element(source) != "i32":
        report.error(op, f"input element type must be i32, got {element(source)}")
    if element(output) != "i8":
        report.error(op, f"output element type must be i8, got {element(output)}")
    if not same_shape(dims(source), dims(output)):
        report.error(op, f"input shape {show(dims(source))} differs from output shape "
                         f"{show(dims(output))}")


def check_dma(op, report: Reporter, target: NpuTarget) -> None:
    source, destination = op.operands[0], op.operands[1]
    if not same_shape(dims(source), dims(destination)):
        report.error(op, f"source shape {show(dims(source))} differs from target shape "
                         f"{show(dims(destination))}")
    if element(source) != element(destination):
        report.error(op, f"source element type {element(source)} differs from target "
                         f"element type {element(destination)}")
    channel = op.attributes["channel"]
    if isinstance(channel, ir.IntegerAttr) and not 0 <= channel.value < target.dma_channels:
        report.error(op, f"channel {channel.value} is out of range: the target has "
                         f"{target.dma_channels} DMA channels (0..{target.dma_channels - 1})")


def check_alloc(op, report: Reporter, target: NpuTarget) -> None:
    buffer_type = ir.MemRefType(op.results[0].type)
    if not buffer_type.has_static_shape:
        report.error(op, f"result must have a static shape, got '{buffer_type}'")
    layout = buffer_type.layout
    if not (isinstance(layout, ir.AffineMapAttr)
            and layout.value == ir.AffineMap.get_identity(buffer_type.rank, layout.context)):
        report.error(op, f"result must have the identity layout, got '{buffer_type}'")
    if "offset" not in op.attributes:
        return
    offset = op.attributes["offset"]
    if not isinstance(offset, ir.IntegerAttr):
        report.error(op, f"offset must be an integer attribute, got {offset}")
    elif offset.value < 0:
        report.error(op, f"offset {offset.value} is negative")
    elif offset.value % target.sram_alignment:
        report.error(op, f"offset {offset.value} is not a multiple of the SRAM alignment "
                         f"{target.sram_alignment}")


def check_clip_bounds(op, report: Reporter) -> None:
    bounds = {}
    for name in ("clip_min", "clip_max"):
        if name in op.attributes:
            attribute = op.attributes[name]
            if isinstance(attribute, ir.FloatAttr):
                bounds[name] = attribute.value
            else:
                report.error(op, f"{name} must be a float attribute, got {attribute}")
    kind_name = CLIP_ATTRIBUTE[op.name]
    kind = op.attributes[kind_name]
    if not (isinstance(kind, ir.StringAttr) and kind.value == "clip"):
        return
    if "clip_min" not in op.attributes or "clip_max" not in op.attributes:
        report.error(op, f"{kind_name} 'clip' needs both clip_min and clip_max")
    elif len(bounds) == 2 and bounds["clip_min"] > bounds["clip_max"]:
        report.error(op, f"clip_min {bounds['clip_min']} exceeds clip_max {bounds['clip_max']}")


OP_RULES = {
    "npu.matmul": check_matmul,
    "npu.conv2d": check_conv2d,
    "npu.depthwise_conv2d": check_depthwise_conv2d,
    "npu.elementwise": check_elementwise,
    "npu.activation": check_activation,
    "npu.pool2d": check_pool2d,
    "npu.transpose": check_transpose,
    "npu.im2col": check_im2col,
    "npu.requantize": check_requantize,
    "npu.dma_load": check_dma,
    "npu.dma_store": check_dma,
    "npu.alloc": check_alloc,
}


# ---------------------------------------------------------------------------
# 3. DMA tokens
# ---------------------------------------------------------------------------

def loop_body(loop) -> ir.Block:
    return loop.regions[0].blocks[0]


def yielded(region: ir.Region, index: int) -> ir.Value | None:
    """Operand `index` of the terminator of a single-block region."""
    operations = region.blocks[0].operations
    terminator = operations[len(operations) - 1]
    return terminator.operands[index] if index < len(terminator.operands) else None


def token_destinations(user, operand_number: int) -> list[ir.Value]:
    """Where a token operand of `user` flows on through scf control flow."""
    if user.name == "scf.yield" and user.parent.name in YIELDS_TO_RESULTS:
        parent = user.parent
        destinations = [parent.results[operand_number]]
        if parent.name == "scf.for":  # also the next iteration's iter_arg
            destinations.append(loop_body(parent).arguments[1 + operand_number])
        return destinations
    if user.name == "scf.for" and operand_number >= SCF_FOR_INIT_OPERANDS:
        index = operand_number - SCF_FOR_INIT_OPERANDS
        return [user.results[index], loop_body(user).arguments[1 + index]]
    return []


def token_reaches_wait(token: ir.Value) -> bool:
    seen, work = set(), [token]
    while work:
        value = work.pop()
        if value in seen:
            continue
        seen.add(value)
        for use in value.uses:
            if use.owner.operation.name == "npu.wait":
                return True
            work.extend(token_destinations(use.owner, use.operand_number))
    return False


def check_token_waited(op, report: Reporter) -> None:
    if op.name in DMA_OPS and not token_reaches_wait(op.results[0]):
        report.error(op, "DMA token is never waited on (no npu.wait receives it)")


def token_sources(token: ir.Value) -> list:
    """The DMA ops whose token may be `token`, through scf.for/scf.if results and iter_args."""
    sources, seen, work = [], set(), [token]
    while work:
        value = work.pop(0)  # breadth first: sources in program order
        if value is None or value in seen:
            continue
        seen.add(value)
        if isinstance(value, ir.OpResult):
            owner, index = value.owner.operation, value.result_number
            if owner.name in DMA_OPS:
                sources.append(owner)
            elif owner.name == "scf.for":
                work += [owner.operands[SCF_FOR_INIT_OPERANDS + index],
                         yielded(owner.regions[0], index)]
            elif owner.name in ("scf.if", "scf.execute_region"):
                work += [yielded(region, index) for region in owner.regions
                         if len(region.blocks)]
        elif isinstance(value, ir.BlockArgument):
            loop = value.owner.owner.operation
            if loop.name == "scf.for" and value.arg_number >= 1:
                index = value.arg_number - 1
                work += [loop.operands[SCF_FOR_INIT_OPERANDS + index],
                         yielded(loop.regions[0], index)]
    return sources


def root_buffer(value: ir.Value) -> ir.Value:
    """The buffer a memref value views: an npu.alloc result or a block argument."""
    while isinstance(value, ir.OpResult) and value.owner.operation.name in VIEW_OPS:
        value = value.owner.operands[0]
    return value


@dataclass
class PendingDma:
    dma: object           # the npu.dma_load / npu.dma_store op
    buffer: ir.Value      # root of its SRAM side

    @property
    def is_load(self) -> bool:
        return self.dma.name == "npu.dma_load"


def pending_dma(dma) -> PendingDma:
    return PendingDma(dma, root_buffer(dma.operands[dma_sram_operand(dma)]))


def memory_accesses(op) -> list[tuple[int, bool, bool]]:
    """(operand index, reads, writes) of each memref operand `op` touches."""
    if op.name in COMPUTE_OPS:
        output = OUTPUT_OPERAND[op.name]
        # An accumulating matmul/conv2d reads its output too.
        accumulate = op.attributes["accumulate"] if "accumulate" in op.attributes else None
        accumulates = isinstance(accumulate, ir.BoolAttr) and accumulate.value
        return [(index, index != output or accumulates, index == output)
                for index in range(len(op.operands))]
    if op.name == "npu.dma_load":
        return [(1, False, True)]
    if op.name == "npu.dma_store":
        return [(0, True, False)]
    if op.name.startswith("npu.") or op.name in VIEW_OPS or len(op.regions):
        return []
    # Any other op given a buffer (a call, memref.copy) may read and write it.
    return [(index, True, True) for index, value in enumerate(op.operands) if is_memref(value)]


def check_access(op, index: int, reads: bool, writes: bool,
                 pending: dict[ir.Value, PendingDma], report: Reporter) -> None:
    buffer = root_buffer(op.operands[index])
    on_buffer = [entry for entry in pending.values() if entry.buffer == buffer]
    loads = [entry.dma for entry in on_buffer if entry.is_load]
    stores = [entry.dma for entry in on_buffer if not entry.is_load]
    if not loads and not (stores and writes):
        return
    # get_name() prints the function to number values: only for an error.
    described = f"SRAM buffer {buffer.get_name()} ({operand_name(op, index)})"
    if loads:
        verb = "reads" if reads else "writes"
        report.error(op, f"{verb} {described} before waiting on the DMA that fills it",
                     [(dma, "the DMA filling it, not yet waited on") for dma in loads])
    if stores and writes:
        report.error(op, f"writes {described} while a DMA storing it is pending",
                     [(dma, "the DMA reading it, not yet waited on") for dma in stores])


def check_dealloc(op, pending: dict[ir.Value, PendingDma], report: Reporter) -> None:
    buffer = root_buffer(op.operands[0])
    using = [entry.dma for entry in pending.values() if entry.buffer == buffer]
    if using:
        report.error(op, f"releases SRAM buffer {buffer.get_name()} while a DMA using it "
                         f"is pending", [(dma, "the pending DMA, not yet waited on") for dma in using])


def add_pending(pending: dict[ir.Value, PendingDma], token: ir.Value) -> None:
    for dma in token_sources(token):
        pending[dma.results[0]] = pending_dma(dma)


def update_pending(op, pending: dict[ir.Value, PendingDma]) -> None:
    if op.name == "npu.wait":
        for token in op.operands:
            for dma in token_sources(token):
                pending.pop(dma.results[0], None)
    elif op.name == "npu.barrier":
        pending.clear()
    else:
        # A DMA's own token, or a loop/if result carrying DMAs started inside it.
        for result in op.results:
            if is_token(result):
                add_pending(pending, result)


def check_dma_hazards(block: ir.Block, inherited: dict[ir.Value, PendingDma],
                      report: Reporter) -> None:
    """Walk `block` in program order with the DMAs pending at each op.

    Pending DMAs are keyed by their token; a loop body starts with the DMAs
    its token iter_args carry (started before the loop or by the previous
    iteration), which a wait on the iter_arg completes.
    """
    pending = dict(inherited)
    if block.owner is not None and block.owner.operation.name == "scf.for":
        for argument in list(block.arguments)[1:]:
            if is_token(argument):
                add_pending(pending, argument)
    for op in block_ops(block):
        if op.name == "npu.dealloc":
            check_dealloc(op, pending, report)
        for index, reads, writes in memory_accesses(op):
            check_access(op, index, reads, writes, pending, report)
        for region in op.regions:
            for nested in region.blocks:
                check_dma_hazards(nested, pending, report)
        update_pending(op, pending)


def check_dma_after_compute(block: ir.Block, running: dict[ir.Value, list], report: Reporter
                            ) -> dict[ir.Value, list]:
    """DMA engines do not wait for compute: a DMA touching an SRAM buffer that a
    compute op issued since the last npu.barrier reads or writes (one of them
    writing) races with it. `running` maps buffer roots to (op, writes) pairs;
    returns the state at the end of the block."""
    running = {buffer: list(users) for buffer, users in running.items()}
    for op in block_ops(block):
        if op.name == "npu.barrier":
            running.clear()
        elif op.name in DMA_OPS:
            sram_index = dma_sram_operand(op)
            buffer = root_buffer(op.operands[sram_index])
            dma_writes = op.name == "npu.dma_load"
            racing = [user for user, writes in running.get(buffer, []) if writes or dma_writes]
            if racing:
                verb = "overwrites" if dma_writes else "reads"
                report.error(op, f"{verb} SRAM buffer {buffer.get_name()} that a compute op "
                                 f"issued before it may still be using: DMA engines do not wait "
                                 f"for compute, put an npu.barrier between them",
                             [(user, "the compute op, with no npu.barrier after it")
                              for user in racing])
        elif op.name in COMPUTE_OPS:
            for index, reads, writes in memory_accesses(op):
                running.setdefault(root_buffer(op.operands[index]), []).append((op, writes))
        for region in op.regions:
            for nested in region.blocks:
                for buffer, users in check_dma_after_compute(nested, running, report).items():
                    known = running.setdefault(buffer, [])
                    known.extend(user for user in users if user not in known)
    return running


# ---------------------------------------------------------------------------
# 4. Static SRAM offsets
# ---------------------------------------------------------------------------

@dataclass
class PlacedBuffer:
    alloc: object
    offset: int
    size: int
    first_op: int   # pre-order number of the alloc
    last_op: int = 0  # of its dealloc, or of the last op in the alloc's block

    @property
    def byte_range(self) -> str:
        return f"[{self.offset}, {self.offset + self.size})"


def placed_buffer(alloc, number: int) -> PlacedBuffer | None:
    """The alloc's placement, if it has a usable offset and a static size."""
    offset = alloc.attributes["offset"] if "offset" in alloc.attributes else None
    buffer_type = ir.MemRefType(alloc.results[0].type)
    byte_size = element_bytes(buffer_type.element_type)
    if not isinstance(offset, ir.IntegerAttr) or offset.value < 0 or byte_size is None \
            or not buffer_type.has_static_shape:
        return None
    return PlacedBuffer(alloc, offset.value, math.prod(buffer_type.shape) * byte_size, number)


class LifetimeNumbering:
    """Numbers the ops of a function in pre-order, so that ops in nested loop
    bodies compare correctly, and collects the placed buffers' lifetimes."""

    def __init__(self):
        self.buffers: list[PlacedBuffer] = []
        self.dealloc_numbers: dict[ir.Value, int] = {}
        self.last_number = -1

    def visit(self, block: ir.Block) -> None:
        in_block = []
        for op in block_ops(block):
            self.last_number += 1
            if op.name == "npu.alloc":
                buffer = placed_buffer(op, self.last_number)
                if buffer is not None:
                    in_block.append(buffer)
            elif op.name == "npu.dealloc":
                self.dealloc_numbers.setdefault(root_buffer(op.operands[0]), self.last_number)
            for region in op.regions:
                for nested in region.blocks:
                    self.visit(nested)
        # Without a dealloc, a buffer lives to the end of its block.
        for buffer in in_block:
            buffer.last_op = self.dealloc_numbers.get(buffer.alloc.results[0], self.last_number)
        self.buffers += in_block


def check_sram_offsets(function, report: Reporter, target: NpuTarget) -> None:
    numbering = LifetimeNumbering()
    for region in function.regions:
        for block in region.blocks:
            numbering.visit(block)
    buffers = sorted(numbering.buffers, key=lambda buffer: buffer.first_op)
    for buffer in buffers:
        end = buffer.offset + buffer.size
        if end > target.max_sram_bytes:
            report.error(buffer.alloc, f"buffer at bytes {buffer.byte_range} ends at byte {end}, "
                                       f"beyond the SRAM capacity of {target.max_sram_bytes} bytes")
    # Buffers come in order of their first op, so one that has died before a
    # buffer starts is dead for every later one: only the live ones are compared.
    live: list = []
    for later in buffers:
        live = [earlier for earlier in live if earlier.last_op >= later.first_op]
        for earlier in live:
            bytes_overlap = (earlier.offset < later.offset + later.size
                             and later.offset < earlier.offset + earlier.size)
            if bytes_overlap:
                report.error(later.alloc, f"SRAM bytes {later.byte_range} overlap bytes "
                                          f"{earlier.byte_range} of a buffer that is still live",
                             [(earlier.alloc, f"the live buffer at bytes {earlier.byte_range} "
                                              f"is allocated here")])
        live.append(later)
