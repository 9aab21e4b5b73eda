"""What the passes and recipes read off ops and values: the npu attributes the
passes write (and check when they read them back), views and the buffers
they view, structured ops' operands and maps, constants; and the two ways a
recipe refuses an op (`Unsupported`, `Malformed`)."""

from __future__ import annotations

from mlir import ir

TILE_SIZES_ATTR = "npu.tile_sizes"
LOOP_ORDER_ATTR = "npu.loop_order"
STRATEGY_ATTR = "npu.conv_strategy"
CONV_STRATEGIES = ("implicit-gemm", "direct", "im2col")
ACTIVATION_ATTR = "npu.activation"
CLIP_ATTRS = ("npu.clip_min", "npu.clip_max")   # a clip activation's bounds
EPILOGUE_ATTRS = (ACTIVATION_ATTR,) + CLIP_ATTRS
# The epilogues an npu matmul, conv or elementwise op applies (the dialect's
# activation attribute).
ACTIVATIONS = ("none", "relu", "relu6", "clip", "gelu", "sigmoid", "tanh", "exp", "log", "erf",
               "reciprocal", "rsqrt", "sqrt", "neg", "abs")
TILE_LOOP_ATTR = "npu.tile_loop"   # the outermost loop of a tile nest
INIT_ATTR = "npu.init"             # the initial value of an SRAM tile, folded into its op
RESIDENT_ATTR = "npu.resident"     # an SRAM buffer holding a whole intermediate tensor
# The interior of a buffer kept padded in SRAM (a memref.subview), its producer's output.
PADDED_INTERIOR_ATTR = "npu.padded_interior"
DATAFLOW_ATTR = "npu.dataflow"     # the matrix-unit dataflow chosen for a tiled op
RESIDUAL_START_ATTR = "npu.residual_start"  # skip + bias: a conv/matmul's initial value


class Unsupported(Exception):
    """The NPU cannot run this op; the message says why."""


class Malformed(Unsupported):
    """An npu attribute on the op that is not of the form the passes read: an
    error at the op, not a reason to leave it on the fallback engine."""


def is_reduction(op) -> bool:
    """A linalg.reduce, or a linalg.generic with a reduction loop."""
    op = op.operation
    if op.name == "linalg.reduce":
        return True
    if op.name != "linalg.generic":
        return False
    return any("reduction" in str(kind) for kind in ir.ArrayAttr(op.attributes["iterator_types"]))


def type_name(value: ir.Value) -> str:
    """The element type of a memref or tensor value, as text ("f32")."""
    return str(ir.ShapedType(value.type).element_type)


def made_by(value: ir.Value, name: str):
    """The op named `name` that makes `value`, else None."""
    return value.owner if isinstance(value, ir.OpResult) and value.owner.name == name else None


def static_shape(value: ir.Value, what: str) -> list[int]:
    if not isinstance(value.type, ir.MemRefType):
        raise Unsupported(f"{what} is not a memref (run bufferization first)")
    memref = ir.MemRefType(value.type)
    if not memref.has_static_shape:
        raise Unsupported(f"{what} has a dynamic shape")
    if memref.memory_space is not None and not is_resident(value):
        raise Unsupported(f"{what} is not in DRAM")
    return list(memref.shape)


def root_buffer(value: ir.Value) -> ir.Value:
    """The buffer (an alloc's result) a value is a view of, through RESIDENT_VIEWS."""
    while isinstance(value, ir.OpResult) and value.owner.operation.name in RESIDENT_VIEWS:
        value = value.owner.operands[0]
    return value


def is_resident(value: ir.Value) -> bool:
    """Whether `value` is (a view of) a whole tensor kept in SRAM between the ops
    that produce and read it (npu-keep-in-sram): an `npu.alloc` marked RESIDENT_ATTR."""
    value = root_buffer(value)
    return isinstance(value, ir.OpResult) and value.owner.operation.name == "npu.alloc" \
        and RESIDENT_ATTR in value.owner.attributes


def defined_within(value: ir.Value, op: ir.Operation) -> bool:
    """Whether `value` is a result of `op` or an argument or result of an op
    within its regions."""
    owner = value.owner
    owner = owner.owner if isinstance(owner, ir.Block) else owner
    owner = getattr(owner, "operation", owner)
    while owner is not None:
        if owner == op:
            return True
        owner = owner.parent
    return False


def attributes_of(op) -> dict:
    return {name: str(op.attributes[name]) for name in op.attributes}


def same_view(a: ir.Value, b: ir.Value) -> bool:
    """Whether two memrefs are the same view of one buffer: the same value, or
    views made alike (the same op, attributes and operands) of the same views."""
    if a == b:
        return True
    if not (isinstance(a, ir.OpResult) and isinstance(b, ir.OpResult)):
        return False
    first, second = a.owner.operation, b.owner.operation
    if first.name != second.name or first.name not in RESIDENT_VIEWS \
            or len(first.operands) != len(second.operands) or a.type != b.type \
            or attributes_of(first) != attributes_of(second):
        return False
    return all(same_view(x, y) for x, y in zip(first.operands, second.operands))


# Views through which an op may read a resident tensor.
RESIDENT_VIEWS = ("memref.subview", "memref.cast", "memref.collapse_shape",
                  "memref.expand_shape")


def ints(attribute, default) -> list[int]:
    if attribute is None:
        return list(default)
    if isinstance(attribute, ir.DenseI64ArrayAttr):
        return list(attribute)
    return [int(v) for v in ir.DenseIntElementsAttr(attribute)]


def optional_attr(op, name):
    return op.attributes[name] if name in op.attributes else None


def checked_attr(op, name: str, kind, valid, expected: str):
    """The value of the op's attribute `name` as `kind` (ir.IntegerAttr or
    ir.StringAttr), None without one; Malformed, saying what was `expected`,
    when it is another kind of attribute or its value is not `valid`."""
    attribute = optional_attr(op, name)
    if attribute is None:
        return None
    try:
        value = kind(attribute).value
    except ValueError:   # another kind of attribute
        value = None
    if value is None or not valid(value):
        raise Malformed(f"malformed {name} {attribute}: expected {expected}")
    return value


def latest(ops: list):
    """The last in their block of ops of one block (None for none)."""
    found = None
    for op in ops:
        if found is None or found.is_before_in_block(op):
            found = op
    return found


def built_op(out: ir.Value) -> ir.Operation:
    """The op just built before the current insertion point, writing `out`
    (linalg builders on memrefs return no result to reach it by): the last of
    `out`'s users in the block before that point, found without walking the
    block (a long one, a whole program's top level, made this quadratic)."""
    point = ir.InsertionPoint.current
    here = point.ref_operation
    return latest([use.owner.operation for use in out.uses
                   if use.owner.operation.block == point.block
                   and (here is None or use.owner.operation.is_before_in_block(here))])


def npu_attribute_names(op) -> list[str]:
    """The names of the op's attributes that npu passes set (`npu.*`)."""
    names = [named if isinstance(named, str) else named.name for named in op.attributes]
    return [name for name in names if name.startswith("npu.")]


def copy_npu_attributes(source, built) -> None:
    for name in npu_attribute_names(source):
        built.attributes[name] = source.attributes[name]


def ins_outs(op) -> tuple[list, list]:
    """The op's inputs and outputs; for an op tiled by `npu-tile`, the DRAM
    buffers its tiles are views of."""
    view = op.opview
    if hasattr(view, "inputs"):
        inputs = list(view.inputs)
        outputs = list(view.outputs if hasattr(view, "outputs") else view.inits)  # linalg.reduce
    else:
        operands = list(op.operands)
        inputs, outputs = operands[:-1], operands[-1:]
    return [untiled(v) for v in inputs], [untiled(v) for v in outputs]


def indexing_maps(op) -> list[ir.AffineMap]:
    """A structured op's indexing maps (inputs, then outputs)."""
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def input_count(op) -> int:
    """How many of a linalg.generic's operands are inputs (the rest are outputs)."""
    return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))[0]


def tile_nest_root(op):
    """The outermost loop of the tile nest `op` is in (itself when untiled)."""
    root, parent = op, op.parent
    while parent is not None and parent.name == "scf.for":
        if TILE_LOOP_ATTR in parent.attributes:
            return parent
        parent = parent.parent
    return root


def untiled(value):
    """The buffer a tile of a tiled op views: the source of the memref.subview
    that upstream tiling made inside the tile loop; any other value itself."""
    if isinstance(value, ir.OpResult) and value.owner.name == "memref.subview":
        owner = value.owner
        if tile_nest_root(owner) != owner:
            return owner.operands[0]
    return value


def constant_value(value: ir.Value):
    if isinstance(value, ir.OpResult) and value.owner.name == "arith.constant":
        attribute = value.owner.attributes["value"]
        if isinstance(attribute, ir.FloatAttr):
            return attribute.value
        if isinstance(attribute, ir.IntegerAttr):
            return attribute.value
        if isinstance(attribute, ir.BoolAttr):   # an i1 constant: a mask's 0 or 1
            return int(attribute.value)
    return None


def drop_epilogue(op) -> None:
    """Remove the activation folded into `op` (npu-fuse-epilogue) and its bounds."""
    for name in EPILOGUE_ATTRS:
        if name in op.attributes:
            del op.attributes[name]
