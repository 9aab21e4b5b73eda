"""The registry of atvoss-mlir passes.

A pass is a frozen dataclass whose fields are its options, parsed from
`name{option=value ...}`; its `run(module, context)` reports problems through
`context.diagnostics` (errors fail the pass). One module per pass, named after
its argument (`npu-verify` -> `npu_verify.py`), loaded lazily.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass, field
from typing import Callable, ClassVar

from mlir import ir

from ..diagnostics import DiagnosticEngine
from ..machine_model import type_bytes
from ..target import DEFAULT_TARGET, NpuTarget

# pass argument -> "module:ClassName" under atvoss_mlir.passes
_REGISTRY = {
    "npu-verify": "npu_verify:NpuVerify",
    "npu-convert-layout": "npu_convert_layout:NpuConvertLayout",
    "npu-propagate-layout": "npu_propagate_layout:NpuPropagateLayout",
    "npu-fold-transposes": "npu_fold_transposes:NpuFoldTransposes",
    "npu-sink-channel-shuffles": "npu_sink_channel_shuffles:NpuSinkChannelShuffles",
    "npu-fuse-elementwise": "npu_fuse_elementwise:NpuFuseElementwise",
    "npu-convert-copies": "npu_convert_copies:NpuConvertCopies",
    "npu-pad-in-place": "npu_pad_in_place:NpuPadInPlace",
    "npu-forward-copies": "npu_forward_copies:NpuForwardCopies",
    "npu-share-input-windows": "npu_share_input_windows:NpuShareInputWindows",
    "npu-normalize-contractions": "npu_normalize_contractions:NpuNormalizeContractions",
    "npu-decompose-linalg": "npu_decompose_linalg:NpuDecomposeLinalg",
    "npu-repeat-depthwise-channels": "npu_repeat_depthwise_channels:NpuRepeatDepthwiseChannels",
    "npu-pool-before-conv": "npu_pool_before_conv:NpuPoolBeforeConv",
    "npu-pack-groups": "npu_pack_groups:NpuPackGroups",
    "npu-fuse-epilogue": "npu_fuse_epilogue:NpuFuseEpilogue",
    "npu-select-conv-strategy": "npu_select_conv_strategy:NpuSelectConvStrategy",
    "npu-cascade-rows": "npu_cascade_rows:NpuCascadeRows",
    "npu-cascade-channels": "npu_cascade_channels:NpuCascadeChannels",
    "npu-split-depthwise": "npu_split_depthwise:NpuSplitDepthwise",
    "npu-readonly-inputs": "npu_readonly_inputs:NpuReadonlyInputs",
    "npu-reuse-dead-inputs": "npu_reuse_dead_inputs:NpuReuseDeadInputs",
    "npu-keep-in-sram": "npu_keep_in_sram:NpuKeepInSram",
    "npu-tile": "npu_tile:NpuTile",
    "npu-promote-to-sram": "npu_promote_to_sram:NpuPromoteToSram",
    "npu-convert-linalg-to-npu": "npu_convert_linalg_to_npu:NpuConvertLinalgToNpu",
    "npu-share-constant-tiles": "npu_share_constant_tiles:NpuShareConstantTiles",
    "npu-prefetch-weights": "npu_prefetch_weights:NpuPrefetchWeights",
    "npu-prefetch-inputs": "npu_prefetch_inputs:NpuPrefetchInputs",
    "npu-defer-store-waits": "npu_defer_store_waits:NpuDeferStoreWaits",
    "npu-share-concatenations": "npu_share_concatenations:NpuShareConcatenations",
    "npu-overlap-ops": "npu_overlap_ops:NpuOverlapOps",
    "npu-narrow-barriers": "npu_narrow_barriers:NpuNarrowBarriers",
    "npu-interleave-loops": "npu_interleave_loops:NpuInterleaveLoops",
    "npu-allocate-sram": "npu_allocate_sram:NpuAllocateSram",
}


def ops_where(root: ir.Operation, keep) -> list:
    """The ops nested in `root`, in program order, for which `keep(op)` holds
    (collected before a pass rewrites any of them)."""
    found = []
    root.walk(lambda op: (found.append(op) if keep(op) else None) or ir.WalkResult.ADVANCE)
    return found


def top_level(op, block: ir.Block):
    """The ancestor of `op` in `block`; None when `block` does not hold `op`
    (an op with no parent, the module, has no block to ask for)."""
    while op is not None and op.parent is not None:
        if op.block == block:
            return op
        op = op.parent
    return None


def defined_functions(module: ir.Operation) -> list:
    """Every func.func of the module that has a body."""
    return [function.operation for function in module.regions[0].blocks[0].operations
            if function.operation.name == "func.func" and function.regions[0].blocks]


def function_bodies(module: ir.Operation) -> list:
    """The body block of every func.func of the module that has one."""
    return [function.regions[0].blocks[0] for function in defined_functions(module)]


def tensor_bytes(value: ir.Value) -> int | None:
    """Bytes of a statically shaped tensor value."""
    return type_bytes(ir.RankedTensorType(value.type))


def left_to_buffer_plan(value: ir.Value, target: NpuTarget) -> bool:
    """Whether a tensor between two ops is small enough (at most a quarter of the
    SRAM) that fusing them is left to the buffer plan (npu-keep-in-sram), which
    keeps such a tensor in SRAM between them when it fits, at no vector cost."""
    return 4 * tensor_bytes(value) <= target.max_sram_bytes


def erase_if_unused(value: ir.Value) -> None:
    """Erase the op making an init tensor nothing reads any more (an empty, or a
    fill or broadcast of one), then what it wrote into."""
    if isinstance(value, ir.OpResult) and not list(value.uses) \
            and value.owner.name in ("tensor.empty", "linalg.fill", "linalg.broadcast"):
        owner = value.owner
        feeds = owner.operands[1] if owner.name != "tensor.empty" else None
        owner.erase()
        if feeds is not None:
            erase_if_unused(feeds)


class PassOptionError(ValueError):
    pass


@dataclass
class PassContext:
    """What every pass of one compilation shares."""

    target: NpuTarget = DEFAULT_TARGET
    diagnostics: DiagnosticEngine = field(default_factory=DiagnosticEngine)
    # Tracebacks of exceptions a pass raised, for --debug output.
    internal_errors: list[str] = field(default_factory=list)
    # problem -> a tuned schedule (tuning.database.TunedSchedule) or None:
    # npu-tile takes it instead of searching.
    tuned_schedule: Callable | None = None


@dataclass(frozen=True)
class ModulePass:
    argument: ClassVar[str]
    summary: ClassVar[str]

    def run(self, module: ir.Operation, context: PassContext) -> None:
        raise NotImplementedError

    @classmethod
    def options(cls) -> list[dataclasses.Field]:
        return list(dataclasses.fields(cls))

    @classmethod
    def from_options(cls, options: dict[str, str]) -> "ModulePass":
        fields = {f.name.replace("_", "-"): f for f in cls.options()}
        values = {}
        for key, text in options.items():
            f = fields.get(key)
            if f is None:
                known = ", ".join(sorted(fields)) or "none"
                raise PassOptionError(f"pass '{cls.argument}' has no option '{key}' "
                                      f"(options: {known})")
            values[f.name] = _convert_option(cls.argument, key, f, text)
        return cls(**values)


def _convert_option(pass_name: str, key: str, f: dataclasses.Field, text: str):
    kind = f.type if isinstance(f.type, str) else f.type.__name__
    try:
        if kind == "bool":
            if text not in ("true", "false", "1", "0"):
                raise ValueError
            return text in ("true", "1")
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "str":
            return text
        if kind == "list[int]":
            return [int(part) for part in text.split(",") if part]
    except ValueError:
        raise PassOptionError(f"option '{key}' of pass '{pass_name}' expects "
                              f"{kind}, got '{text}'") from None
    raise PassOptionError(f"option '{key}' of pass '{pass_name}' has unsupported type {kind}")


def registered_passes() -> list[str]:
    return sorted(_REGISTRY)


def lookup_pass(argument: str) -> type[ModulePass] | None:
    entry = _REGISTRY.get(argument)
    if entry is None:
        return None
    module_name, class_name = entry.split(":")
    module = importlib.import_module(f"{__name__}.{module_name}")
    return getattr(module, class_name)
