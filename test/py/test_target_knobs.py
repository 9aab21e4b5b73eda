"""Every NpuTarget option does something: a knob that changes nothing is a defect.

One model (a conv with a relu epilogue, max pooling, an NCHW relu and pool
whose layout transform -layout-pref places, an int8 matmul with few
rows, a softmax on the vector unit, a sine left to the fallback engine, a tall
matmul on which
weight-stationary beats output-stationary) is compiled and simulated with
the default target and with each non-default option value. The compiled
program, the simulation report or the timeline (the Chrome trace) must
differ from the default's. Option values that cannot have an effect yet are
listed in PENDING with the issue that gives them one, and must change
nothing: when one starts to matter, the test fails until it leaves the list.
Values that make the default's choices on this model are listed, with the
reason, in SAME_AS_DEFAULT, and must change nothing either.
"""

from __future__ import annotations

import dataclasses
import functools
import json

import pytest

from atvoss_mlir.sim import simulate
from atvoss_mlir.target import NpuTarget
from test_lowering_cases import compile_text

MODEL = """
func.func @main(%x: tensor<1x18x18x16xf16>, %w: tensor<3x3x16x32xf16>,
                %a: tensor<16x256xi8>, %b: tensor<256x64xi8>, %s: tensor<4x16xf32>,
                %p: tensor<1024x32xf16>, %q: tensor<32x32xf16>, %y: tensor<1x8x8x8xf32>)
    -> (tensor<1x8x8x32xf32>, tensor<16x64xi32>, tensor<4x16xf32>, tensor<1024x32xf32>,
        tensor<1x8x4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant 0xFF800000 : f32
  %zero_i = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x16x16x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x16x32xf32>) -> tensor<1x16x16x32xf32>
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x18x18x16xf16>, tensor<3x3x16x32xf16>) outs(%f : tensor<1x16x16x32xf32>)
      -> tensor<1x16x16x32xf32>
  %e2 = tensor.empty() : tensor<1x16x16x32xf32>
  %relu = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                                           affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%conv : tensor<1x16x16x32xf32>) outs(%e2 : tensor<1x16x16x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x16x16x32xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  %ep = tensor.empty() : tensor<1x8x8x32xf32>
  %fp = linalg.fill ins(%lowest : f32) outs(%ep : tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32>
  %pool = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%relu, %window : tensor<1x16x16x32xf32>, tensor<2x2xf32>) outs(%fp : tensor<1x8x8x32xf32>)
      -> tensor<1x8x8x32xf32>
  %em = tensor.empty() : tensor<16x64xi32>
  %fm = linalg.fill ins(%zero_i : i32) outs(%em : tensor<16x64xi32>) -> tensor<16x64xi32>
  %mm = linalg.matmul ins(%a, %b : tensor<16x256xi8>, tensor<256x64xi8>) outs(%fm : tensor<16x64xi32>)
      -> tensor<16x64xi32>
  %es = tensor.empty() : tensor<4x16xf32>
  %sm = linalg.softmax dimension(1) ins(%s : tensor<4x16xf32>) outs(%es : tensor<4x16xf32>) -> tensor<4x16xf32>
  %en = tensor.empty() : tensor<4x16xf32>
  %sine = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                           affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%sm : tensor<4x16xf32>) outs(%en : tensor<4x16xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.sin %v : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  %et = tensor.empty() : tensor<1024x32xf32>
  %ft = linalg.fill ins(%zero : f32) outs(%et : tensor<1024x32xf32>) -> tensor<1024x32xf32>
  %tall = linalg.matmul ins(%p, %q : tensor<1024x32xf16>, tensor<32x32xf16>) outs(%ft : tensor<1024x32xf32>)
      -> tensor<1024x32xf32>
  %ey = tensor.empty() : tensor<1x8x8x8xf32>
  %nchw = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                                           affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y : tensor<1x8x8x8xf32>) outs(%ey : tensor<1x8x8x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x8x8x8xf32>
  %eq = tensor.empty() : tensor<1x8x4x4xf32>
  %fq = linalg.fill ins(%lowest : f32) outs(%eq : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %pool_nchw = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%nchw, %window : tensor<1x8x8x8xf32>, tensor<2x2xf32>) outs(%fq : tensor<1x8x4x4xf32>)
      -> tensor<1x8x4x4xf32>
  return %pool, %mm, %sine, %tall, %pool_nchw : tensor<1x8x8x32xf32>, tensor<16x64xi32>, tensor<4x16xf32>, tensor<1024x32xf32>, tensor<1x8x4x4xf32>
}
"""

# option=value -> the issue that gives it a meaning (until then it must change nothing).
PENDING: dict[str, str] = {}
# option=value -> why it makes the default's choices on this model (it must change nothing).
SAME_AS_DEFAULT = {
    # The one layout transform here (a relu's NCHW result before an NHWC pool)
    # costs less folded into the relu than as an op, as NHWC always folds it.
    "layout-pref=auto": "every layout move and fold pays on this model",
    # -precision rewrites an ONNX model before import (test/py/quantization
    # checks what it changes); this model is linalg, whose types are its precision.
    "precision=fp16": "it rewrites ONNX models only", "precision=int8": "it rewrites ONNX models only",
    "precision=mixed": "it rewrites ONNX models only",
    "accuracy-budget=0.99": "it applies to -precision=mixed on ONNX models only",
}

# A non-default value of every option (each choice of the enumerated ones). On this
# model -clock-ghz shows only in the timeline (microseconds; the report counts
# cycles) and -sram-alignment only in the program (SRAM offsets).
VALUES = {
    "array-rows": [16], "array-cols": [16], "dataflow": ["ws", "os"], "clock-ghz": [2.0],
    "int8-speedup": [1], "max-sram-bytes": [32768], "sram-alignment": [256],
    "dram-bytes-per-cycle": [16], "dma-channels": [1], "dma-setup-cycles": [10],
    "dma-burst-bytes": [128], "vector-lanes": [16], "fallback-cycles-per-element": [2],
    "pipeline-stages": [1, 3], "layout-pref": ["NCHW", "auto"], "fusion": [0, 1],
    "tile-min": [64], "tile-max": [16], "precision": ["fp16", "int8", "mixed"],
    "accuracy-budget": [0.99],
}
OPTIONS = [f"{option}={value}" for option, values in VALUES.items() for value in values]


@functools.lru_cache(maxsize=None)
def observed(target: str) -> tuple[str, str, str]:
    """(program, report, timeline) of the model on `target`; the report without its
    echo of the target string."""
    program, _ = compile_text(MODEL, target)
    result = simulate(program, target=target, trace=True)
    report = {key: value for key, value in result.report.items() if key != "target"}
    return program, json.dumps(report, sort_keys=True), \
        json.dumps(result.chrome_trace(), sort_keys=True)


def test_every_target_option_is_checked():
    fields = {f.metadata["option"] for f in dataclasses.fields(NpuTarget)}
    assert fields == set(VALUES)
    defaults = {f.metadata["option"]: f.default for f in dataclasses.fields(NpuTarget)}
    for option, values in VALUES.items():
        assert defaults[option] not in values, option
        choices = dataclasses.fields(NpuTarget)[list(defaults).index(option)].metadata["choices"]
        assert set(values) >= set(choices) - {defaults[option]}, option
    assert set(PENDING) <= set(OPTIONS) and set(SAME_AS_DEFAULT) <= set(OPTIONS)


@pytest.mark.parametrize("option", OPTIONS)
def test_option_changes_the_program_or_its_simulation(option):
    default, changed = observed("npu"), observed(f"npu -{option}")
    differs = [what for what, a, b in zip(("program", "report", "timeline"), default, changed)
               if a != b]
    if option in PENDING:
        assert not differs, (f"-{option} now changes the {', '.join(differs)}: remove it "
                             f"from PENDING ({PENDING[option]})")
    elif option in SAME_AS_DEFAULT:
        assert not differs, (f"-{option} now changes the {', '.join(differs)}, although "
                             f"{SAME_AS_DEFAULT[option]}")
    else:
        assert differs, f"-{option} changes neither the program nor its simulation"
