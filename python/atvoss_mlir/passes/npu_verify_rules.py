"""npu-verify's checks of each op on its own: memory spaces (SRAM operands,
DMA directions) and the shapes, element types and attributes that
`dialects/npu.td` defines for each op."""

from __future__ import annotations

from mlir import ir

from ..dialects.npu import SRAM_MEMORY_SPACE, is_sram
from ..machine_model import (ACCUMULATOR_TYPE, MATRIX_INPUT_TYPES, ONE_PASS_ACTIVATIONS,
                             refused_type_reason)
from ..target import NpuTarget
from .npu_verify_common import (CLIP_ATTRIBUTE, COMPUTE_OPS, DMA_OPS, Reporter, dims, element,
                                is_memref, operand_name, same_shape, same_size, show)


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
    if op.name in ("npu.matmul", "npu.conv2d") and "dataflow" in op.attributes:
        dataflow = op.attributes["dataflow"]
        if not (isinstance(dataflow, ir.StringAttr) and dataflow.value in ("ws", "os")):
            report.error(op, f"dataflow must be \"ws\" or \"os\", got {dataflow}")


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


def check_binary_shapes(op, report: Reporter) -> None:
    """An lhs of the output's shape and an rhs that broadcasts to it."""
    lhs, rhs, output = (dims(op.operands[i]) for i in range(3))
    if not same_shape(lhs, output):
        report.error(op, f"lhs shape {show(lhs)} differs from output shape {show(output)}")
    if not broadcasts_to(rhs, output):
        report.error(op, f"rhs shape {show(rhs)} does not broadcast to output shape "
                         f"{show(output)}")


def check_elementwise(op, report: Reporter, target: NpuTarget) -> None:
    check_binary_shapes(op, report)
    types = [element(op.operands[i]) for i in range(3)]
    if len(set(types)) > 1:
        report.error(op, f"element types differ: lhs {types[0]}, rhs {types[1]}, "
                         f"output {types[2]}")
    if "activation" in op.attributes:
        # Optional, so the dialect's own check does not see it: any attribute.
        attribute = op.attributes["activation"]
        kind = attribute.value if isinstance(attribute, ir.StringAttr) else None
        if kind not in ONE_PASS_ACTIVATIONS:
            shown = f"'{kind}'" if kind is not None else str(attribute)
            report.error(op, f"activation epilogue {shown} is not one the lanes apply in one "
                             f"pass ({', '.join(ONE_PASS_ACTIVATIONS)})")


def check_activation(op, report: Reporter, target: NpuTarget) -> None:
    source, output = dims(op.operands[0]), dims(op.operands[1])
    if not same_shape(source, output):
        report.error(op, f"input shape {show(source)} differs from output shape {show(output)}")
    types = [element(op.operands[i]) for i in range(2)]
    kind = ir.StringAttr(op.attributes["kind"]).value
    if types[0] != types[1] and not (kind == "none" and all(t in ("f16", "f32") for t in types)):
        report.error(op, f"element types differ: input {types[0]}, output {types[1]} (only "
                         f"kind 'none' converts, between f16 and f32)")


def check_compare(op, report: Reporter, target: NpuTarget) -> None:
    check_binary_shapes(op, report)
    types = [element(op.operands[i]) for i in range(3)]
    if types[0] != types[1] or types[2] != "i1":
        report.error(op, f"compares {types[0]} with {types[1]} into {types[2]} (one type into "
                         f"i1)")


def check_select(op, report: Reporter, target: NpuTarget) -> None:
    output = dims(op.operands[3])
    for number, name in enumerate(("condition", "on_true", "on_false")):
        shape = dims(op.operands[number])
        if not broadcasts_to(shape, output):
            report.error(op, f"{name} shape {show(shape)} does not broadcast to output shape "
                             f"{show(output)}")
    types = [element(op.operands[i]) for i in range(4)]
    if types[0] != "i1" or len(set(types[1:])) > 1:
        report.error(op, f"condition {types[0]} (i1), on_true {types[1]}, on_false "
                         f"{types[2]} and output {types[3]} (one type)")


def check_reduce(op, report: Reporter, target: NpuTarget) -> None:
    source, output = dims(op.operands[0]), dims(op.operands[1])
    attribute = op.attributes["dims"]
    if not isinstance(attribute, ir.DenseI64ArrayAttr):
        report.error(op, f"dims must be an array<i64: ...> of dimensions, got {attribute}")
        return
    reduced = list(attribute)
    if reduced != sorted(set(reduced)) or any(not 0 <= d < len(source) for d in reduced):
        report.error(op, f"dims {reduced} are not ascending dimensions of the rank-"
                         f"{len(source)} input")
        return
    kept = tuple(n for d, n in enumerate(source) if d not in reduced)
    if not same_shape(kept, output):
        report.error(op, f"output shape {show(output)} is not the input shape {show(source)} "
                         f"without dims {reduced}")
    types = [element(op.operands[i]) for i in range(2)]
    if types[0] != types[1]:
        report.error(op, f"element types differ: input {types[0]}, output {types[1]}")


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
    if element(source) not in ("i32", "f32"):
        report.error(op, f"input element type must be i32 or f32, got {element(source)}")
    if element(output) != "i8":
        report.error(op, f"output element type must be i8, got {element(output)}")
    if not same_shape(dims(source), dims(output)):
        report.error(op, f"input shape {show(dims(source))} differs from output shape "
                         f"{show(dims(output))}")
    if len(op.operands) > 2 and element(op.operands[2]) != "f32":
        report.error(op, f"scales element type must be f32, got {element(op.operands[2])}")


def check_dequantize(op, report: Reporter, target: NpuTarget) -> None:
    source, output = op.operands[0], op.operands[1]
    if element(source) != "i8":
        report.error(op, f"input element type must be i8, got {element(source)}")
    if element(output) not in ("f32", "f16"):
        report.error(op, f"output element type must be f32 or f16, got {element(output)}")
    if not same_shape(dims(source), dims(output)):
        report.error(op, f"input shape {show(dims(source))} differs from output shape "
                         f"{show(dims(output))}")


def check_quantized_add(op, report: Reporter, target: NpuTarget) -> None:
    lhs, rhs, output = op.operands[0], op.operands[1], op.operands[2]
    for name, value in (("lhs", lhs), ("rhs", rhs), ("output", output)):
        if element(value) != "i8":
            report.error(op, f"{name} element type must be i8, got {element(value)}")
    if not same_shape(dims(lhs), dims(output)):
        report.error(op, f"lhs shape {show(dims(lhs))} differs from output shape "
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


def check_barrier(op, report: Reporter, target: NpuTarget) -> None:
    if "engines" not in op.attributes:
        return
    engines = op.attributes["engines"]
    if not (isinstance(engines, ir.StringAttr)
            and engines.value in ("all", "compute", "matrix", "vector")):
        report.error(op, f"engines must be \"all\", \"compute\", \"matrix\" or \"vector\", "
                         f"got {engines}")


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
    if kind_name not in op.attributes:   # an optional epilogue left out
        return
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
    "npu.reduce": check_reduce,
    "npu.compare": check_compare,
    "npu.select": check_select,
    "npu.pool2d": check_pool2d,
    "npu.transpose": check_transpose,
    "npu.im2col": check_im2col,
    "npu.requantize": check_requantize,
    "npu.dequantize": check_dequantize,
    "npu.quantized_add": check_quantized_add,
    "npu.dma_load": check_dma,
    "npu.dma_store": check_dma,
    "npu.alloc": check_alloc,
    "npu.barrier": check_barrier,
}


