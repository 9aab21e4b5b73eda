"""Hypothesis strategies for mutated MLIR inputs of atvoss-opt and atvoss-sim.

Seeds are the repository's own test inputs (every chunk of the lit tests and
the examples, RUN/CHECK comments stripped) plus small programs compiled by
the npu pipeline; each input is a seed with one to four mutations applied
(line deletion, duplication and swaps, literal and type replacement, SSA
name and op name replacement, punctuation insertion, truncation). Hypothesis
shrinks a failing input towards fewer and simpler mutations.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]

INTERESTING_INTEGERS = ["0", "1", "-1", "2", "3", "7", "31", "33", "64", "4096", "65535",
                        "2147483648", "-2147483649", "9223372036854775807",
                        "18446744073709551616", "1000000000000"]
TYPES = ["f16", "f32", "f64", "bf16", "i1", "i8", "i32", "i64", "index", "ui8", "f8E4M3FN",
         "complex<f32>", "none", "!npu.token", "memref<4xf16, 1>", "tensor<?xf32>"]
OP_NAMES = ["npu.alloc", "npu.dealloc", "npu.dma_load", "npu.dma_store", "npu.wait",
            "npu.barrier", "npu.matmul", "npu.conv2d", "npu.depthwise_conv2d",
            "npu.elementwise", "npu.activation", "npu.pool2d", "npu.transpose", "npu.im2col",
            "npu.fill", "npu.requantize", "npu.dequantize", "npu.quantized_add",
            "linalg.matmul", "linalg.generic", "linalg.fill", "linalg.copy", "memref.subview",
            "memref.cast", "arith.addf", "scf.for", "npu.bogus", "func.call"]
PUNCTUATION = ["(", ")", "{", "}", "<", ">", "[", "]", ",", ":", "%", "^", "\"", "=", "x",
               "?", "->", "#", "!", "@", "\n", "0x7C00", "-0.0", "nan", "inf", "1e40"]

# Flags per category: parser/verifier alone, each pass, the full pipeline.
PASSES = ["npu-decompose-linalg", "npu-convert-layout", "npu-propagate-layout",
          "npu-pool-before-conv", "npu-fuse-epilogue", "npu-fold-transposes", "npu-fuse-elementwise",
          "npu-cascade-rows", "npu-select-conv-strategy", "npu-share-concatenations",
          "npu-readonly-inputs", "npu-pad-in-place", "npu-share-input-windows",
          "npu-convert-copies", "npu-keep-in-sram",
          "npu-tile", "npu-promote-to-sram",
          "npu-prefetch-weights", "npu-prefetch-inputs", "npu-overlap-ops", "npu-allocate-sram",
          "npu-verify"]
OPT_FLAGS = ([[]] + [[f"--{p}"] for p in PASSES] + [["--npu-pipeline"]]
             + [["--pass-pipeline=builtin.module(canonicalize,npu-tile,npu-promote-to-sram)"],
                ["--split-input-file", "--npu-verify"], ["--npu-pipeline", "--remarks"]])
SIM_FLAGS = [["--report=json"], ["--timing-only"], ["--report=table", "--seed=3"]]


def _strip_lit(text: str) -> str:
    lines = [line for line in text.splitlines()
             if not re.match(r"\s*//\s*(RUN|CHECK|[A-Z]+:|expected-)", line)]
    return "\n".join(lines)


def _chunks(path: Path) -> list[str]:
    text = _strip_lit(path.read_text())
    return [chunk.strip() + "\n" for chunk in re.split(r"^// -----$", text, flags=re.MULTILINE)
            if "func.func" in chunk or "module" in chunk]


@functools.lru_cache(maxsize=None)
def opt_seeds() -> tuple[str, ...]:
    paths = sorted((ROOT / "test" / "lit").rglob("*.mlir")) + sorted(
        (ROOT / "examples").glob("*.mlir"))
    seeds = []
    for path in paths:
        if "Output" in path.parts or "Inputs" in path.parts:
            continue
        seeds += _chunks(path)
    return tuple(seeds)


@functools.lru_cache(maxsize=None)
def sim_seeds() -> tuple[str, ...]:
    """npu programs: the simulator's lit inputs and the pipeline's output on small inputs."""
    from atvoss_mlir.compiler import compile as compile_model
    seeds = [chunk for path in sorted((ROOT / "test" / "lit" / "sim").glob("*.mlir"))
             for chunk in _chunks(path)]
    for name in ("matmul", "conv-3x3-stride2", "depthwise", "pooling", "elementwise-chain"):
        source = _strip_lit((ROOT / "test" / "lit" / "pipeline" / f"{name}.mlir").read_text())
        seeds.append(without_locations(compile_model(source).program))
    return tuple(seeds)


def without_locations(program: str) -> str:
    from mlir import ir
    from atvoss_mlir.context import make_context
    return str(ir.Module.parse(program, make_context()))


# -- mutations ---------------------------------------------------------------------------

def _replace_match(draw, text: str, pattern: str, replacements) -> str:
    matches = list(re.finditer(pattern, text))
    if not matches:
        return text
    m = matches[draw(st.integers(0, len(matches) - 1))]
    new = draw(st.sampled_from(replacements if not callable(replacements)
                               else replacements(text)))
    return text[:m.start()] + new + text[m.end():]


def _ssa_names(text: str) -> list[str]:
    return sorted(set(re.findall(r"%[\w.$#-]+", text))) or ["%0"]


@st.composite
def mutate(draw, text: str) -> str:
    lines = text.split("\n")
    kind = draw(st.sampled_from(["delete_line", "duplicate_line", "swap_lines", "integer",
                                 "type", "ssa_name", "op_name", "punctuation", "truncate",
                                 "shape"]))
    index = draw(st.integers(0, max(0, len(lines) - 1)))
    if kind == "delete_line":
        del lines[index]
        return "\n".join(lines)
    if kind == "duplicate_line":
        lines.insert(draw(st.integers(0, len(lines))), lines[index])
        return "\n".join(lines)
    if kind == "swap_lines":
        other = draw(st.integers(0, max(0, len(lines) - 1)))
        lines[index], lines[other] = lines[other], lines[index]
        return "\n".join(lines)
    if kind == "integer":
        return _replace_match(draw, text, r"(?<![%\w#])-?\d+(?![\w.])", INTERESTING_INTEGERS)
    if kind == "type":
        return _replace_match(draw, text, r"\b(f16|f32|f64|i1|i8|i32|i64|index)\b", TYPES)
    if kind == "ssa_name":
        return _replace_match(draw, text, r"%[\w.$#-]+", _ssa_names)
    if kind == "op_name":
        return _replace_match(draw, text, r"\b(npu|linalg|memref|arith|scf)\.[a-z_0-9]+", OP_NAMES)
    if kind == "shape":
        return _replace_match(draw, text, r"(?<=[<x])\d+(?=x)", ["0", "1", "3", "1000000",
                                                                  "?", "4294967296"])
    if kind == "truncate":
        return text[:draw(st.integers(0, len(text)))]
    position = draw(st.integers(0, len(text)))
    return text[:position] + draw(st.sampled_from(PUNCTUATION)) + text[position:]


@st.composite
def mutated(draw, seeds: tuple[str, ...]) -> str:
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        text = draw(mutate(text))
    return text


def opt_inputs():
    """(argv flags, MLIR text) for atvoss-opt."""
    return st.tuples(st.sampled_from(OPT_FLAGS), mutated(opt_seeds()))


def sim_inputs():
    """(argv flags, npu program text) for atvoss-sim."""
    return st.tuples(st.sampled_from(SIM_FLAGS), mutated(sim_seeds()))
