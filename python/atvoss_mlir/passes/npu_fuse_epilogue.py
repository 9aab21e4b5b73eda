"""npu-fuse-epilogue: fold an activation that directly follows a matmul or
convolution into it, so the matrix unit applies it as its epilogue.

Runs on tensors, before bufferization. A `linalg.generic` whose body is
`max(x, 0)` (relu) or `min(max(x, lo), hi)` (clip), applied elementwise to the
only use of a linalg.matmul / batch_matmul / conv_2d_nhwc_hwcf /
depthwise_conv_2d_nhwc_hwc result of the same type, is removed; the producer
gets `npu.activation` (and `npu.clip_min` / `npu.clip_max`), which
`npu-promote-to-sram` turns into the npu op's `activation` on the last
reduction step. Disabled by the target's `-fusion=0`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from . import ModulePass, PassContext
from ..recipes import linalg_ops
from ..recipes.problem import ACTIVATION_ATTR, Unsupported, ins_outs
from ..recipes.vector_body import ActivationStep, Ref, body_program

PRODUCERS = ("linalg.matmul", "linalg.batch_matmul", "linalg.conv_2d_nhwc_hwcf",
             "linalg.depthwise_conv_2d_nhwc_hwc")


def activation_of(op):
    """(kind, clip_min, clip_max) when `op` is an elementwise relu/clip of one tensor."""
    if op.name != "linalg.generic":
        return None
    inputs, outputs = ins_outs(op)
    if len(inputs) != 1 or len(outputs) != 1 or len(op.results) != 1:
        return None
    if not isinstance(inputs[0].type, ir.RankedTensorType):
        return None
    rank = ir.RankedTensorType(inputs[0].type).rank
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    if any(m != ir.AffineMap.get_identity(rank) for m in maps):
        return None
    try:
        steps = body_program(op.regions[0].blocks[0], 1)
    except Unsupported:
        return None
    if len(steps) != 1 or not isinstance(steps[0], ActivationStep) \
            or steps[0].source != Ref("in", 0):
        return None
    return steps[0].kind, steps[0].clip_min, steps[0].clip_max


@dataclass(frozen=True)
class NpuFuseEpilogue(ModulePass):
    argument = "npu-fuse-epilogue"
    summary = "Fold relu/clip following a matmul or convolution into its epilogue"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            if context.target.fusion < 1:
                return
            for op in linalg_ops(module):
                found = activation_of(op)
                if found is None:
                    continue
                source = ins_outs(op)[0][0]
                if not isinstance(source, ir.OpResult):
                    continue
                producer = source.owner
                kind, clip_min, clip_max = found
                if producer.name not in PRODUCERS or ACTIVATION_ATTR in producer.attributes:
                    continue
                if len(list(source.uses)) != 1 or source.type != op.results[0].type:
                    # Another reader needs the value before the activation.
                    context.diagnostics.remark(op.location, f"{kind} not folded into "
                                               f"'{producer.name}': its result has other uses "
                                               f"or another type")
                    continue
                with op.location:
                    producer.attributes[ACTIVATION_ATTR] = ir.StringAttr.get(kind)
                    f64 = ir.F64Type.get()
                    if clip_min is not None:
                        producer.attributes["npu.clip_min"] = ir.FloatAttr.get(f64, clip_min)
                        producer.attributes["npu.clip_max"] = ir.FloatAttr.get(f64, clip_max)
                op.results[0].replace_all_uses_with(source)
                op.erase()
                context.diagnostics.remark(producer.location, f"'{producer.name}': {kind} folded "
                                                              f"into its epilogue")
