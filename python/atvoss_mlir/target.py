"""`NpuTarget`: the one description of the machine, shared by the compiler
(tiling, cost model) and the simulator (timing).

A target string names the machine and overrides fields:

    npu -max-sram-bytes=1048576 -pipeline-stages=2 -layout-pref=NHWC -fusion=2

Every field has a default (an edge NPU with a 32x32 weight-stationary array).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field


class TargetError(ValueError):
    """A malformed target string or an option value out of range."""


def _option(name: str, default, help: str, *, choices: tuple = (), minimum=None, maximum=None):
    return field(default=default, metadata={"option": name, "help": help, "choices": choices,
                           "minimum": minimum, "maximum": maximum})


@dataclass(frozen=True)
class NpuTarget:
    # Matrix unit.
    array_rows: int = _option("array-rows", 32, "systolic array rows (MACs)", minimum=1)
    array_cols: int = _option("array-cols", 32, "systolic array columns (MACs)", minimum=1)
    dataflow: str = _option("dataflow", "auto", "matrix-unit dataflow per op",
                            choices=("ws", "os", "auto"))
    clock_ghz: float = _option("clock-ghz", 1.0, "clock frequency in GHz", minimum=1e-3)
    int8_speedup: int = _option("int8-speedup", 2, "int8 MACs per fp16 MAC slot", minimum=1)
    # On-chip memory.
    max_sram_bytes: int = _option("max-sram-bytes", 1048576, "SRAM capacity in bytes", minimum=1)
    sram_alignment: int = _option("sram-alignment", 32, "SRAM buffer alignment in bytes", minimum=1)
    # DRAM and DMA.
    dram_bytes_per_cycle: int = _option("dram-bytes-per-cycle", 64, "DRAM bandwidth", minimum=1)
    dma_channels: int = _option("dma-channels", 2, "number of DMA channels", minimum=1, maximum=16)
    dma_setup_cycles: int = _option("dma-setup-cycles", 100, "fixed cost of one DMA", minimum=0)
    # At most a DRAM page: the burst count of a view is a histogram over the
    # positions in a burst, as large as the burst.
    dma_burst_bytes: int = _option("dma-burst-bytes", 32, "DMA burst size in bytes", minimum=1,
                                   maximum=4096)
    # Vector unit and fallback.
    vector_lanes: int = _option("vector-lanes", 64, "vector unit elements per cycle", minimum=1)
    fallback_cycles_per_element: int = _option(
        "fallback-cycles-per-element", 8, "scalar fallback cost per element op", minimum=1)
    # Compiler knobs.
    pipeline_stages: int = _option("pipeline-stages", 2, "SRAM buffers per tile (2 = double buffering)",
                                   minimum=1, maximum=3)
    layout_pref: str = _option("layout-pref", "NHWC", "layout of the tensors between layers "
                               "(auto: folds weighed, and NCHW kept when simulated 2% faster)",
                               choices=("NHWC", "NCHW", "auto"))
    fusion: int = _option("fusion", 2, "0 none, 1 epilogues, 2 aggressive", minimum=0, maximum=2)
    tile_min: int = _option("tile-min", 8, "smallest tile size searched", minimum=1)
    tile_max: int = _option("tile-max", 2048, "largest tile size searched", minimum=1)
    precision: str = _option("precision", "fp32",
                             "arithmetic of an fp32 ONNX model: as is, fp16, int8 "
                             "(needs --calibration) or int8/fp16 per layer (mixed)",
                             choices=("fp32", "fp16", "int8", "mixed"))
    accuracy_budget: float = _option("accuracy-budget", 0.999,
                                     "-precision=mixed: smallest output cosine vs fp32",
                                     minimum=0.0, maximum=1.0)

    def __post_init__(self):
        if self.tile_min > self.tile_max:
            raise TargetError(f"-tile-min={self.tile_min} exceeds -tile-max={self.tile_max}")
        if self.sram_alignment & (self.sram_alignment - 1):
            raise TargetError(f"-sram-alignment={self.sram_alignment} is not a power of two")

    @property
    def peak_macs_per_cycle(self) -> int:
        """fp16/fp32 MACs per cycle (machine_model.peak_macs_per_cycle also gives int8's)."""
        from .machine_model import peak_macs_per_cycle
        return peak_macs_per_cycle(self)

    def __str__(self) -> str:
        parts = ["npu"]
        for f in dataclasses.fields(self):
            parts.append(f"-{f.metadata['option']}={getattr(self, f.name)}")
        return " ".join(parts)

    @classmethod
    def options_help(cls) -> str:
        defaults = DEFAULT_TARGET
        return "\n".join(
            f"  -{f.metadata['option']}=<{f.type}> {f.metadata['help']} "
            f"(default {getattr(defaults, f.name)})" for f in dataclasses.fields(cls))


DEFAULT_TARGET = NpuTarget()
_FIELDS_BY_OPTION = {f.metadata["option"]: f for f in dataclasses.fields(NpuTarget)}


def _convert(f: dataclasses.Field, text: str):
    option = f.metadata["option"]
    kind = {"int": int, "float": float, "str": str}[f.type]
    try:
        value = kind(text)
    except ValueError:
        noun = {"int": "an integer", "float": "a number", "str": "a string"}[f.type]
        raise TargetError(f"option '-{option}' expects {noun}, got '{text}'") from None
    choices = f.metadata["choices"]
    if choices and value not in choices:
        raise TargetError(f"option '-{option}' expects one of {', '.join(choices)}, got '{text}'")
    low, high = f.metadata["minimum"], f.metadata["maximum"]
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise TargetError(f"option '-{option}' must be {bounds}, got '{text}'")
    return value


def parse_target(text: str | None) -> NpuTarget:
    """Parse `npu -opt=value ...` into an NpuTarget; raises TargetError."""
    if text is None or not text.strip():
        return DEFAULT_TARGET
    words = text.split()
    if words[0] != "npu":
        raise TargetError(f"unknown target '{words[0]}': expected 'npu'")
    overrides = {}
    for word in words[1:]:
        name, sep, value = word.lstrip("-").partition("=")
        if not word.startswith("-") or not sep:
            raise TargetError(f"malformed target option '{word}': expected -name=value")
        if name not in _FIELDS_BY_OPTION:
            raise TargetError(f"unknown target option '-{name}'; known options: "
                              + ", ".join(sorted(_FIELDS_BY_OPTION)))
        f = _FIELDS_BY_OPTION[name]
        overrides[f.name] = _convert(f, value)
    return dataclasses.replace(DEFAULT_TARGET, **overrides)
