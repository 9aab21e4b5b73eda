"""npu-pool-before-conv: pool a 1x1 convolution's input, not its output.

Runs on tensors, from -fusion=1, before npu-fuse-epilogue. A sum pooling (an
average pool is one, then a division) whose input is a 1x1 stride-1
convolution's result, read by nothing else, commutes with it: both are linear
and the conv mixes channels pixel by pixel, so

    sum_pool(conv(x, W) + b) = conv(sum_pool(x), W) + kh*kw*b

(unpadded windows, the pool starting from zero). Pooling first, the conv
computes only the pooled pixels: DenseNet's transition (1x1 conv, then a 2x2
stride-2 average pool) multiplies a quarter of them, and the tensor between
the two ops shrinks. The pool then reads the conv's input channels instead of
its output channels; the machine model weighs the matrix cycles saved against
the vector cycles added, and a remark gives both. A pool after a conv it may
not move before (a window, a stride, an epilogue, other readers, a bias that is
no constant) stays, with a remark saying why. Float types only: an integer
pool of a requantised int8 result is not linear.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import linalg

from ..frontend.builders import constant_tensor, empty, fill
from ..machine_model import gemm_cycles, vector_cycles
from ..recipes.problem import constant_value, ints, npu_attribute_names, optional_attr
from . import ModulePass, PassContext, erase_if_unused, ops_where
from .npu_select_conv_strategy import tensor_shape as static_shape

# Float types whose constants numpy holds (the bias is scaled at compile time).
FLOAT_TYPES = {"f32": np.float32, "f16": np.float16}


def constant_array(value: ir.Value) -> np.ndarray | None:
    """The elements of an arith.constant tensor, when they are readable."""
    if not isinstance(value, ir.OpResult) or value.owner.name != "arith.constant":
        return None
    try:
        return np.array(ir.DenseFPElementsAttr(value.owner.attributes["value"]))
    except (ValueError, TypeError):   # a resource blob or another attribute
        return None


def zero_fill(value: ir.Value) -> bool:
    """Whether `value` is a linalg.fill of 0.0 (a sum pool's start)."""
    return isinstance(value, ir.OpResult) and value.owner.name == "linalg.fill" \
        and constant_value(value.owner.operands[0]) == 0.0


def channel_bias(broadcast) -> np.ndarray | None:
    """The per-channel constant a linalg.broadcast spreads over N, H and W (a
    conv's bias), when it is one and readable."""
    if ints(broadcast.attributes["dimensions"], ()) != [0, 1, 2]:
        return None
    return constant_array(broadcast.operands[0])


def scaled_bias(init: ir.Value, factor: int):
    """The conv's start (`outs`) times `factor`: (kind, elements), kind "fill" or
    "broadcast"; None when it is neither of a readable constant."""
    if not isinstance(init, ir.OpResult):
        return None
    op = init.owner
    if op.name == "linalg.fill":
        value = constant_value(op.operands[0])
        return None if value is None else ("fill", value * factor)
    if op.name == "linalg.broadcast":
        bias = channel_bias(op)
        return None if bias is None else ("broadcast", bias * factor)
    return None


def refusal(pool, conv) -> str | None:
    """Why the pool may not move before the conv it reads (None: it may)."""
    window = static_shape(pool.operands[1])
    if static_shape(conv.operands[1])[:2] != [1, 1]:
        return "the convolution is not 1x1"
    if ints(optional_attr(conv, "strides"), (1, 1)) != [1, 1]:
        return "the convolution has a stride"
    if npu_attribute_names(conv):
        return "the convolution has an epilogue of its own"
    if len(list(conv.results[0].uses)) != 1:
        return "other ops read the convolution's result"
    if any(str(ir.RankedTensorType(v.type).element_type) not in FLOAT_TYPES
           for v in list(conv.operands) + list(pool.operands[:1])):
        return "not in a float type"
    if not zero_fill(pool.operands[2]):
        return "the pool does not start from zero"
    if scaled_bias(conv.operands[2], window[0] * window[1]) is None:
        return "the convolution's bias is not a constant"
    return None


@dataclass(frozen=True)
class NpuPoolBeforeConv(ModulePass):
    argument = "npu-pool-before-conv"
    summary = "Sum-pool a 1x1 convolution's input instead of its output (-fusion=1)"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        if context.target.fusion < 1:
            return
        with module.context:
            for pool in ops_where(module, lambda op: op.name == "linalg.pooling_nhwc_sum"):
                source = pool.operands[0]
                if not isinstance(source, ir.OpResult) \
                        or source.owner.name != "linalg.conv_2d_nhwc_hwcf":
                    continue
                conv = source.owner
                if None in (static_shape(v) for v in list(conv.operands) + list(pool.operands)):
                    continue
                reason = refusal(pool, conv)
                if reason is None:
                    reason = self.weigh(pool, conv, context)
                if reason is not None:
                    context.diagnostics.remark(
                        pool.location, f"sum pooling stays after the 1x1 convolution it "
                                       f"reads: {reason}")
                    continue
                self.swap(pool, conv)

    @staticmethod
    def weigh(pool, conv, context: PassContext) -> str | None:
        """None when pooling first takes fewer estimated cycles (with a remark
        saying so), else why not."""
        target = context.target
        n, h, w, channels = static_shape(conv.operands[0])
        filters = static_shape(conv.operands[1])[3]
        _, oh, ow, _ = static_shape(pool.results[0])
        kh, kw = static_shape(pool.operands[1])
        before = gemm_cycles(n * h * w, filters, channels, target) + \
            vector_cycles(n * oh * ow * filters, target, kh * kw)
        after = gemm_cycles(n * oh * ow, filters, channels, target) + \
            vector_cycles(n * oh * ow * channels, target, kh * kw)
        if after >= before:
            return f"pooling its {channels} input channels first would take ~{after} " \
                   f"estimated cycles, not ~{before}"
        context.diagnostics.remark(
            pool.location, f"sum pooling moved before the 1x1 convolution it reads: the "
                           f"convolution computes {n * oh * ow} pixels instead of {n * h * w} "
                           f"(~{after} estimated cycles instead of ~{before})")
        return None

    @staticmethod
    def swap(pool, conv) -> None:
        image, weights, init = conv.operands
        n, _, _, channels = static_shape(image)
        out_type = ir.RankedTensorType(pool.results[0].type)
        _, oh, ow, filters = list(out_type.shape)
        window = static_shape(pool.operands[1])
        kind, value = scaled_bias(init, window[0] * window[1])
        element = out_type.element_type
        with ir.InsertionPoint(pool), pool.location:
            pooled = linalg.pooling_nhwc_sum(
                image, pool.operands[1], outs=[fill(0.0, [n, oh, ow, channels], element)],
                strides=ir.DenseIntElementsAttr(pool.attributes["strides"]),
                dilations=ir.DenseIntElementsAttr(pool.attributes["dilations"]))
            if kind == "fill":
                start = fill(value, [n, oh, ow, filters], element)
            else:
                bias = constant_tensor(value.astype(FLOAT_TYPES[str(element)]))
                start = linalg.broadcast(bias, outs=[empty([n, oh, ow, filters], element)],
                                         dimensions=[0, 1, 2])
            moved = linalg.conv_2d_nhwc_hwcf(
                pooled, weights, outs=[start],
                strides=ir.DenseIntElementsAttr(conv.attributes["strides"]),
                dilations=ir.DenseIntElementsAttr(conv.attributes["dilations"]))
        pool.results[0].replace_all_uses_with(moved)
        pool_init = pool.operands[2]
        pool.erase()
        conv.erase()
        erase_if_unused(init)
        erase_if_unused(pool_init)
