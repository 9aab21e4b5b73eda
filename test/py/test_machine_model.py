"""The machine model (atvoss_mlir.machine_model): its formulas, and that the
compiler and the simulator use it rather than copies of it."""

import itertools
import pathlib
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import atvoss_mlir
from atvoss_mlir import machine_model
from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.passes import npu_allocate_sram, npu_select_conv_strategy, npu_tile
from atvoss_mlir.recipes import problem
from atvoss_mlir.target import parse_target

ROOT = pathlib.Path(__file__).resolve().parents[2]


def bursts_run_by_run(shape, strides, itemsize, start_byte, burst) -> int:
    """The definition, one run at a time: the innermost contiguous dimensions form
    a run; each run touches the bursts from its first byte's to its last's."""
    dims = [(n, s) for n, s in zip(shape, strides) if n != 1]
    run = 1
    if dims and dims[-1][1] == 1:
        while dims and dims[-1][1] == run:
            run *= dims.pop()[0]
    total = 0
    for index in itertools.product(*(range(n) for n, _ in dims)):
        first = start_byte + sum(i * s for i, (_, s) in zip(index, dims)) * itemsize
        total += -(-(first + run * itemsize) // burst) - first // burst
    return total


@pytest.mark.parametrize("seed", range(40))
def test_bursts_match_counting_run_by_run(seed):
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 4))
    shape = tuple(int(n) for n in rng.integers(1, 6, rank))
    itemsize = int(rng.choice([1, 2, 4]))
    # Row-major views of a bigger buffer, sometimes with a step in some dims.
    full = [n + int(rng.integers(0, 4)) for n in shape]
    steps = [int(rng.choice([1, 1, 2, 3])) for _ in shape]
    strides = [s * step for s, step in zip(machine_model.identity_strides(full), steps)]
    burst = int(rng.choice([4, 8, 32, 48]))
    start = int(rng.integers(0, 200)) * itemsize
    expected = bursts_run_by_run(shape, strides, itemsize, start, burst)
    assert machine_model.dma_bursts(shape, tuple(strides), itemsize, start % burst, burst) \
        == expected


@pytest.mark.parametrize("seed", range(20))
def test_bursts_of_many_views_match_counting_run_by_run(seed):
    """Views of a buffer counted together: in some rows the innermost dims
    merge into one run, in others not; rows of zero and one elements."""
    rng = np.random.default_rng(100 + seed)
    rank = int(rng.integers(1, 5))
    full = [int(n) for n in rng.integers(1, 9, rank)]
    itemsize = int(rng.choice([1, 2, 4]))
    steps = [int(rng.choice([1, 1, 2, 3])) for _ in full]
    strides = tuple(s * step for s, step in zip(machine_model.identity_strides(full), steps))
    burst = int(rng.choice([4, 8, 32, 48, 64]))
    start = int(rng.integers(0, 200)) * itemsize
    extents = np.array([[int(rng.integers(0 if rng.random() < 0.05 else 1, n + 1))
                         for n in full] for _ in range(30)] + [full, [1] * rank],
                       dtype=np.int64)
    # An empty view moves nothing.
    expected = [bursts_run_by_run(tuple(row), strides, itemsize, start, burst) if all(row)
                else 0 for row in extents.tolist()]
    assert machine_model.dma_bursts_many(extents, strides, itemsize, start % burst,
                                         burst).tolist() == expected


def test_bursts_of_large_views_are_fast_and_exact():
    # 56 rows of 100 pixels of a 224-pixel wide f16 image of 3 channels, starting
    # 6 B into a burst: every row (1344 B apart) starts there too.
    bursts = machine_model.dma_bursts((1, 56, 100, 3), (150528, 672, 3, 1), 2, 6, 32)
    assert bursts == 56 * -(-(6 + 100 * 3 * 2) // 32)
    # Whole rows are one contiguous run.
    bursts = machine_model.dma_bursts((1, 56, 224, 3), (150528, 672, 3, 1), 2, 6, 32)
    assert bursts == -(-(6 + 56 * 224 * 3 * 2) // 32)
    # A million runs, counted per start position in a burst rather than one by one.
    assert machine_model.dma_bursts((1000, 1000, 3), (4000, 4, 1), 2, 0, 32) == 10 ** 6


def test_dma_cycles_formula():
    target = parse_target("npu")  # 100 setup, 32 B bursts, 64 B/cycle
    assert machine_model.dma_cycles((64, 64), (64, 1), 2, 0, target) == 100 + 8192 // 64
    # One row of 16 B starting 24 B into a burst touches two bursts.
    assert machine_model.dma_cycles((8,), (1,), 2, 24, target) == 100 + 1
    assert machine_model.dma_transfer_cycles((8,), (1,), 2, 24, target) == 1


def test_gemm_cycles_folds_and_int8():
    target = parse_target("npu -dataflow=ws")
    assert machine_model.gemm_cycles(256, 256, 256, target) == 22400
    assert machine_model.gemm_schedule(256, 256, 256, parse_target("npu -dataflow=os")) == \
        (20352, "os")
    assert machine_model.gemm_schedule(256, 256, 256, parse_target("npu -dataflow=auto")) == \
        (20352, "os")
    # int8 streams half as long: ws folds 8x8, each 2*32 + 32 + 128 - 2.
    assert machine_model.gemm_cycles(256, 256, 256, target, int8=True) == 64 * 222


def test_peak_and_roofline():
    target = parse_target("npu -int8-speedup=4")
    assert target.peak_macs_per_cycle == machine_model.peak_macs_per_cycle(target) == 1024
    assert machine_model.peak_macs_per_cycle(target, int8=True) == 4096
    # 1024 fp16 MACs take a cycle, 4096 int8 MACs another; bytes bound below.
    assert machine_model.roofline_cycles(1024 + 4096, 4096, 64, target) == 2
    assert machine_model.roofline_cycles(0, 0, 6400, target) == 100


def test_first_fit():
    assert machine_model.first_fit([], 100, 32) == 0
    assert machine_model.first_fit([(0, 100)], 10, 32) == 128
    assert machine_model.first_fit([(128, 64), (0, 100)], 28, 32) == 192
    assert machine_model.first_fit([(64, 64)], 64, 32) == 0
    assert machine_model.first_fit([(64, 64)], 65, 32) == 128


def test_element_types():
    assert [machine_model.element_bytes(t) for t in ("i1", "i8", "f16", "bf16", "f32", "i32",
                                                     "index", "f64", "ui8", "f8E4M3FN")] == \
        [1, 1, 2, 2, 4, 4, 8, 8, 1, 1]
    assert machine_model.element_bytes("complex<f32>") is None
    assert machine_model.matrix_output_types("f16") == ("f16", "f32")
    assert machine_model.matrix_output_types("f32") == ("f32",)
    assert machine_model.matrix_output_types("i8") == ("i8", "i32")
    assert "bf16" not in machine_model.MATRIX_INPUT_TYPES + machine_model.VECTOR_TYPES
    assert "bf16 is not supported" in machine_model.refused_type_reason("bf16")


def test_compiler_cost_helpers_are_the_machine_model():
    """The recipes' tiling problems, the tile pass, the conv strategy and SRAM
    placement call the model's functions."""
    assert problem.gemm_cycles is machine_model.gemm_cycles
    assert problem.vector_cycles is machine_model.vector_cycles
    assert problem.element_bytes is npu_tile.element_bytes is machine_model.element_bytes
    assert npu_select_conv_strategy.gemm_cycles is machine_model.gemm_cycles
    assert npu_allocate_sram.first_fit is machine_model.first_fit


def test_one_definition_of_each_formula():
    """No module outside the machine model defines the cost helpers or a table of
    element sizes again."""
    pattern = re.compile(r"^\s*def (gemm_cycles|gemm_schedule|vector_cycles|fallback_cycles|"
                         r"dma_bursts|_bursts|dma_transfer_cycles|element_bytes|_fold_sum|"
                         r"first_fit|peak_macs_per_cycle|roofline_cycles)\(|"
                         r"^\s*(ELEMENT_BYTES|_BYTES|MATRIX_INPUT_TYPES|ACCUMULATOR_TYPE)\s*=",
                         re.M)
    found = []
    for path in list((ROOT / "python").rglob("*.py")) + list((ROOT / "sim").rglob("*.py")):
        if path.name == "machine_model.py":
            continue
        for match in pattern.finditer(path.read_text()):
            found.append(f"{path.relative_to(ROOT)}: {match.group(0).strip()}")
    # NpuTarget.peak_macs_per_cycle is a property that calls the model.
    found = [f for f in found if not f.startswith("python/atvoss_mlir/target.py: def peak")]
    assert found == []


def test_onnx_bf16_input_is_refused(tmp_path):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu0")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [4])])
    path = tmp_path / "bf16.onnx"
    onnx.save(helper.make_model(graph), path)
    with pytest.raises(DiagnosticError, match="graph input 'x': bf16 is not supported"):
        atvoss_mlir.compile(str(path))


def test_mlir_bf16_program_is_refused_at_the_op():
    program = """
func.func @main(%a: tensor<4x4xbf16>, %b: tensor<4x4xbf16>) -> tensor<4x4xbf16> {
  %r = linalg.add ins(%a, %b : tensor<4x4xbf16>, tensor<4x4xbf16>) outs(%a : tensor<4x4xbf16>) -> tensor<4x4xbf16>
  return %r : tensor<4x4xbf16>
}"""
    with pytest.raises(DiagnosticError, match=r"3:8: error: 'linalg.add': bf16 is not supported"):
        atvoss_mlir.compile(program)
