"""The tile search: the array evaluation picks the schedule a loop over the
candidates picks, schedules are memoised per op signature, and a budget that
is too small makes the search relax before it refuses."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
from mlir import ir

from atvoss_mlir.context import make_context
from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.passes import tile_candidates, tile_search
from atvoss_mlir.passes.npu_tile import Unsupported, dma_cycles, linalg_ops, tiling_problem
from atvoss_mlir.passes.tile_cost import (BUSY_WEIGHT, compute_busy, estimate, trip_counts,
                                          working_set)
from atvoss_mlir.recipes.problem import LoopDim
from atvoss_mlir.passes.tile_candidates import loop_orders, tile_grid
from atvoss_mlir.passes.tile_search import (Schedule, Space, choose_schedule, search, signature,
                                            transfer_cycles)
from atvoss_mlir.target import parse_target
from test_lowering_cases import check_case, compile_text, conv_case, matmul_case


def reference_schedule(problem, target, stages, explicit=None):
    """The search as a plain loop over every candidate, one at a time."""
    orders = loop_orders(problem)
    best, smallest, ties = None, None, 0
    for tiles in itertools.product(*tile_grid(problem, target, orders, explicit)):
        for order in orders:
            size = working_set(problem, tiles, order, stages, target.sram_alignment)
            smallest = size if smallest is None else min(smallest, size)
            if size > target.max_sram_bytes:
                continue
            cycles = estimate(problem, tiles, order, target, stages)
            cost = cycles + BUSY_WEIGHT * compute_busy(problem, tiles)
            key = (cost, math.prod(trip_counts(problem, tiles)), -sum(tiles))
            if best is not None and key == best[0]:
                ties += 1
            if best is None or key < best[0]:
                best = (key, Schedule(tuple(tiles), order, cycles, size))
    return (best[1] if best else None), smallest, ties


PROGRAMS = """
func.func @matmul(%a: memref<37x29xf16>, %b: memref<29x45xf16>, %c: memref<37x45xf32>) {
  linalg.matmul ins(%a, %b : memref<37x29xf16>, memref<29x45xf16>) outs(%c : memref<37x45xf32>)
  return
}
func.func @matmul$tiny(%a: memref<8x8xf16>, %b: memref<8x8xf16>, %c: memref<8x8xf32>) {
  linalg.matmul ins(%a, %b : memref<8x8xf16>, memref<8x8xf16>) outs(%c : memref<8x8xf32>)
  return
}
func.func @matmul$i8(%a: memref<256x300xi8>, %b: memref<300x512xi8>, %c: memref<256x512xi32>) {
  linalg.matmul ins(%a, %b : memref<256x300xi8>, memref<300x512xi8>)
    outs(%c : memref<256x512xi32>)
  return
}
func.func @matmul$f32(%a: memref<512x1000xf32>, %b: memref<1000x64xf32>, %c: memref<512x64xf32>) {
  linalg.matmul ins(%a, %b : memref<512x1000xf32>, memref<1000x64xf32>)
    outs(%c : memref<512x64xf32>)
  return
}
func.func @batch_matmul(%a: memref<3x20x40xf16>, %b: memref<3x40x30xf16>, %c: memref<3x20x30xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<3x20x40xf16>, memref<3x40x30xf16>)
    outs(%c : memref<3x20x30xf32>)
  return
}
func.func @conv$3x3(%x: memref<1x58x58x64xf16>, %w: memref<3x3x64x64xf16>, %y: memref<1x56x56x64xf32>) {
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x58x58x64xf16>, memref<3x3x64x64xf16>) outs(%y : memref<1x56x56x64xf32>)
  return
}
func.func @conv$1x1_stride2(%x: memref<1x28x28x256xf16>, %w: memref<1x1x256x512xf16>, %y: memref<1x14x14x512xf32>) {
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>,
                            npu.conv_strategy = "implicit-gemm"}
    ins(%x, %w : memref<1x28x28x256xf16>, memref<1x1x256x512xf16>) outs(%y : memref<1x14x14x512xf32>)
  return
}
func.func @conv$im2col(%x: memref<1x14x14x3xf16>, %w: memref<3x3x3x16xf16>, %y: memref<1x12x12x16xf32>) {
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>,
                            npu.conv_strategy = "im2col"}
    ins(%x, %w : memref<1x14x14x3xf16>, memref<3x3x3x16xf16>) outs(%y : memref<1x12x12x16xf32>)
  return
}
func.func @conv$7x7_stride2(%x: memref<1x229x229x3xf16>, %w: memref<7x7x3x64xf16>, %y: memref<1x112x112x64xf32>) {
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w : memref<1x229x229x3xf16>, memref<7x7x3x64xf16>) outs(%y : memref<1x112x112x64xf32>)
  return
}
func.func @depthwise(%x: memref<1x18x18x24xf16>, %w: memref<3x3x24xf16>) -> memref<1x16x16x24xf16> {
  %zero = arith.constant 0.0 : f16
  %y = memref.alloc() : memref<1x16x16x24xf16>
  linalg.fill ins(%zero : f16) outs(%y : memref<1x16x16x24xf16>)
  linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x18x18x24xf16>, memref<3x3x24xf16>) outs(%y : memref<1x16x16x24xf16>)
  return %y : memref<1x16x16x24xf16>
}
func.func @pool(%x: memref<1x112x112x64xf16>) -> memref<1x55x55x64xf16> {
  %lowest = arith.constant 0xFC00 : f16
  %y = memref.alloc() : memref<1x55x55x64xf16>
  linalg.fill ins(%lowest : f16) outs(%y : memref<1x55x55x64xf16>)
  %k = memref.alloc() : memref<3x3xf16>
  linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %k : memref<1x112x112x64xf16>, memref<3x3xf16>) outs(%y : memref<1x55x55x64xf16>)
  return %y : memref<1x55x55x64xf16>
}
func.func @add(%a: memref<1x28x28x256xf16>, %b: memref<1x28x28x256xf16>, %c: memref<1x28x28x256xf16>) {
  linalg.add ins(%a, %b : memref<1x28x28x256xf16>, memref<1x28x28x256xf16>)
    outs(%c : memref<1x28x28x256xf16>)
  return
}
"""

TARGETS = ["npu", "npu -pipeline-stages=1 -max-sram-bytes=16384",
           "npu -pipeline-stages=3 -max-sram-bytes=32768 -dataflow=os",
           "npu -tile-max=16 -dataflow=auto", "npu -max-sram-bytes=4096 -tile-min=1",
           "npu -array-rows=16 -array-cols=64 -dma-burst-bytes=128 -sram-alignment=256"]


@pytest.fixture(scope="module")
def programs():
    """(context, the linalg ops of PROGRAMS the NPU runs), the module kept alive."""
    context = make_context()
    module = ir.Module.parse(PROGRAMS, context)
    with context:
        ops = []
        for op in linalg_ops(module.operation):
            try:
                tiling_problem(op, parse_target("npu"))
            except Unsupported:
                continue
            ops.append(op)
    yield context, [op for op in ops if op.name != "linalg.fill"]
    del module


@pytest.mark.parametrize("target_text", TARGETS)
def test_array_search_picks_the_schedule_of_the_candidate_loop(programs, target_text):
    context, ops = programs
    target = parse_target(target_text)
    assert len(ops) == 12
    ties = 0
    with context:
        for op in ops:
            problem = tiling_problem(op, target)
            expected, smallest, tied = reference_schedule(problem, target, target.pipeline_stages)
            ties += tied
            assert choose_schedule(problem, target, target.pipeline_stages) == \
                (expected, smallest), f"{op.name} {[d.size for d in problem.dims]}"
    # Candidates with the same cycles, trips and tile sum: the first one wins.
    assert ties > 0


def test_one_evaluation_serves_every_budget(programs, monkeypatch):
    """The buffer plan searches an op at many SRAM budgets: each answer, from
    the space evaluated once, is the candidate loop's at that budget."""
    context, ops = programs
    monkeypatch.setattr(tile_search, "_SPACES", {})
    evaluated = []
    original = tile_search.evaluate_space
    monkeypatch.setattr(tile_search, "evaluate_space",
                        lambda *args: evaluated.append(1) or original(*args))
    with context:
        for op in ops[:6]:
            problem = tiling_problem(op, parse_target("npu"))
            _, smallest, _ = reference_schedule(problem, parse_target("npu"), 2)
            budgets = sorted({smallest - 1, smallest, smallest + 4096, 65536, 262144, 1 << 20})
            for budget in budgets:
                target = parse_target(f"npu -max-sram-bytes={budget}")
                assert choose_schedule(problem, target, 2) == \
                    reference_schedule(problem, target, 2)[:2], f"{op.name} at {budget} B"
    assert len(evaluated) == 6


GEMV = """
func.func @logits(%a: memref<1x2048xf32>, %b: memref<2048x1000xf32>, %c: memref<1x1000xf32>) {
  linalg.matmul ins(%a, %b : memref<1x2048xf32>, memref<2048x1000xf32>) outs(%c : memref<1x1000xf32>)
  return
}
"""


def test_dma_bound_op_takes_fewer_busy_cycles_for_little_time():
    """A classifier's GEMV waits for its weights whatever its tiles: the search
    takes the tiles that keep the matrix unit busy least, at no more estimated
    time than BUSY_WEIGHT of the busy cycles saved. Each candidate's busy
    cycles are its tiles' compute, each at its shape."""
    context = make_context()
    module = ir.Module.parse(GEMV, context)
    target = parse_target("npu")
    with context:
        problem = tiling_problem(linalg_ops(module.operation)[0], target)
        orders = loop_orders(problem)
        space = Space(problem, tile_grid(problem, target, orders))
        sizes, cycles, busy = tile_search.evaluate_space(problem, space, orders, target, 2)
        for index in range(0, len(sizes), max(1, len(sizes) // 50)):
            tiles = tuple(int(t) for t in space.tiles[index // len(orders)])
            assert busy[index] == compute_busy(problem, tiles)
        fits = np.flatnonzero(sizes <= target.max_sram_bytes)
        fastest = fits[np.argmin(cycles[fits])]
        chosen, _ = choose_schedule(problem, target, 2)
        chosen_busy = compute_busy(problem, chosen.tiles)
    assert chosen_busy < busy[fastest]
    assert chosen.cycles - cycles[fastest] <= BUSY_WEIGHT * (busy[fastest] - chosen_busy)


def test_transfer_cycles_are_dma_cycles_of_every_candidate(programs):
    context, ops = programs
    target = parse_target("npu -dma-burst-bytes=64")
    with context:
        for op in ops:
            problem = tiling_problem(op, target)
            per_dim = tile_grid(problem, target, loop_orders(problem))
            grid = list(itertools.product(*per_dim))
            for operand in problem.operands:
                expected = [dma_cycles(operand, tiles, target) for tiles in grid]
                found = transfer_cycles(operand, Space(problem, per_dim), target)
                assert found.tolist() == expected, f"{op.name} {operand.role}"


def test_array_search_with_explicit_tiles(programs):
    context, ops = programs
    target = parse_target("npu -max-sram-bytes=65536")
    with context:
        matmul = tiling_problem(ops[0], target)
        for explicit in ([16, 16, 16], [64, 64, 64], [1, 45, 29]):
            assert choose_schedule(matmul, target, 2, explicit) == \
                reference_schedule(matmul, target, 2, explicit)[:2]


def test_schedules_are_memoised_per_op_signature(monkeypatch):
    monkeypatch.setattr(tile_search, "_MEMO", {})
    searched = []
    original = tile_search._search

    def counting(problem, target, stages, explicit):
        searched.append(problem.op.name)
        return original(problem, target, stages, explicit)
    monkeypatch.setattr(tile_search, "_search", counting)
    conv = """
func.func @f(%x: memref<1x30x30x32xf16>, %w: memref<3x3x32x32xf16>, %y: memref<1x28x28x32xf32>,
             %z: memref<1x28x28x32xf32>, %u: memref<1x14x14x32xf32>) {
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x30x30x32xf16>, memref<3x3x32x32xf16>) outs(%y : memref<1x28x28x32xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x30x30x32xf16>, memref<3x3x32x32xf16>) outs(%z : memref<1x28x28x32xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w : memref<1x30x30x32xf16>, memref<3x3x32x32xf16>) outs(%u : memref<1x14x14x32xf32>)
  return
}"""
    target = parse_target("npu")
    signatures, outcomes = [], []
    for _ in range(2):  # two modules: equal signatures are not the same Python objects
        context = make_context()
        module = ir.Module.parse(conv, context)
        with context:
            for op in linalg_ops(module.operation):
                problem = tiling_problem(op, target)
                signatures.append(signature(problem))
                outcomes.append(search(problem, target, 2))
    assert signatures[0] == signatures[1] == signatures[3] == signatures[4]
    assert signatures[2] != signatures[0] and signatures[2] == signatures[5]
    assert len(searched) == 2                       # stride 1 and stride 2
    assert outcomes[0] == outcomes[1] == outcomes[4] and outcomes[2] == outcomes[5]
    assert search(problem, parse_target("npu -max-sram-bytes=65536"), 2) is not outcomes[2]
    assert len(searched) == 3                       # the target is part of the key


def test_a_folded_fill_is_part_of_the_signature(monkeypatch):
    """Two matmuls alike but for a fill of the output before one: that one
    starts its output from the fill, the other loads it to accumulate onto.
    Their schedules differ, and neither takes the other's from the memo."""
    program = """
func.func @f(%a: memref<37x29xf16>, %b: memref<29x45xf16>)
    -> (memref<37x45xf32>, memref<37x45xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<37x45xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<37x45xf32>)
  linalg.matmul ins(%a, %b : memref<37x29xf16>, memref<29x45xf16>) outs(%c : memref<37x45xf32>)
  %d = memref.alloc() : memref<37x45xf32>
  linalg.matmul ins(%a, %b : memref<37x29xf16>, memref<29x45xf16>) outs(%d : memref<37x45xf32>)
  return %c, %d : memref<37x45xf32>, memref<37x45xf32>
}"""
    target = parse_target("npu")
    context = make_context()
    module = ir.Module.parse(program, context)
    with context:
        problems = [tiling_problem(op, target) for op in linalg_ops(module.operation)
                    if op.name == "linalg.matmul"]
        alone = []
        for problem in problems:
            monkeypatch.setattr(tile_search, "_MEMO", {})
            monkeypatch.setattr(tile_search, "_SPACES", {})
            alone.append(search(problem, target, 2).schedule)
        together = [search(problem, target, 2).schedule for problem in problems]
    assert problems[0].init_value == 0.0 and problems[1].init_value is None
    assert alone[0].cycles < alone[1].cycles      # no load of the output
    assert together == alone


@pytest.mark.parametrize("m, target, relaxed, budget", [
    (64, "npu -max-sram-bytes=8192 -tile-min=32 -dataflow=ws", "1 pipeline stage instead of 2 (with 2, the "
     "smallest working set is 16384 B, above the SRAM budget 8192 B)", 8192),
    (40, "npu -max-sram-bytes=4096 -tile-min=32 -pipeline-stages=3", "tiles below -tile-min=32",
     4096)])
def test_the_search_relaxes_before_it_refuses(m, target, relaxed, budget):
    case = matmul_case(np.random.default_rng(0), m, 64, 64)
    result, _, diagnostics = check_case(case, target)
    [remark] = [d.message for d in diagnostics if d.message.startswith("'linalg.matmul': tiles")]
    assert f"fits only with {relaxed}" in remark
    assert result.report["sram_peak_bytes"] <= budget


def test_a_refusal_names_a_budget_that_fits():
    case = conv_case(np.random.default_rng(0), 1, 64, 256, 3, 32, 7, stride=2, pad=3)
    with pytest.raises(DiagnosticError) as failure:
        compile_text(case.text, "npu -max-sram-bytes=2048")
    [error] = [d.message for d in failure.value.diagnostics if d.severity == "error"]
    found = re.search(r"working set (\d+) B exceeds SRAM budget 2048 B even with 1 pipeline "
                      r"stage and tiles down to 1; -max-sram-bytes=(\d+) would fit", error)
    assert found, error
    smallest, budget = int(found.group(1)), int(found.group(2))
    assert smallest <= budget < smallest + 1024
    check_case(case, f"npu -max-sram-bytes={budget}")


def test_explicit_tiles_that_do_not_fit_name_the_budget(programs):
    context, ops = programs
    target = parse_target("npu -max-sram-bytes=16384")
    with context:
        matmul = tiling_problem(ops[2], target)     # 256x512x300 int8
        outcome = search(matmul, target, 2, [256, 512, 300])
        assert outcome.schedule is None
        assert outcome.refusal == (f"working set {outcome.smallest} B exceeds SRAM budget "
                                   f"16384 B with these tile sizes; -max-sram-bytes="
                                   f"{-(-outcome.smallest // 1024) * 1024} would fit")
        fits = parse_target(f"npu -max-sram-bytes={-(-outcome.smallest // 1024) * 1024}")
        assert search(matmul, fits, 2, [256, 512, 300]).schedule is not None


def test_schedule_attributes_of_another_element_type_are_malformed():
    text = """
func.func @main(%a: memref<64x64xf16>, %b: memref<64x64xf16>, %c: memref<64x64xf32>) {
  linalg.matmul {npu.tile_sizes = array<i8: 32, 32, 32>, npu.loop_order = array<i64: 0, 1, 2>}
    ins(%a, %b : memref<64x64xf16>, memref<64x64xf16>) outs(%c : memref<64x64xf32>)
  return
}"""
    with pytest.raises(DiagnosticError) as failure:
        compile_text(text)
    assert [d.message for d in failure.value.diagnostics if d.severity == "error"] == \
        ["'linalg.matmul' has malformed npu.tile_sizes/npu.loop_order"]


def test_thinning_keeps_small_tiles_and_the_whole_dim():
    """A space over MAX_CANDIDATES thins its longest dim's upper half: the
    sizes left grow geometrically, the small ones and the whole dim stay."""
    target = parse_target("npu")
    values = tile_candidates.candidates(LoopDim("m", 100000, candidates="stream"), target)
    thinned = values
    while len(thinned) > 20:
        thinned = tile_candidates.thinned(thinned)
    assert thinned[:6] == values[:6]
    assert thinned[-1] == 100000 and thinned == sorted(set(thinned))
    ratios = [b / a for a, b in zip(thinned[6:], thinned[7:])]
    assert all(r > 1 for r in ratios) and ratios[-2] > ratios[0]
    assert tile_candidates.thinned([32, 100000]) == [100000]


def test_a_huge_gemm_keeps_array_sized_tiles():
    """Thinned, the space of a 100000^3 GEMM still holds array-sized tiles of
    the reduction (not 8 of the array's 32 rows)."""
    text = """
func.func @main(%a: memref<100000x100000xf32>, %b: memref<100000x100000xf32>,
                %c: memref<100000x100000xf32>) {
  linalg.matmul ins(%a, %b : memref<100000x100000xf32>, memref<100000x100000xf32>)
      outs(%c : memref<100000x100000xf32>)
  return
}"""
    context = make_context()
    module = ir.Module.parse(text, context)
    with context:
        (op,) = linalg_ops(module.operation)
        target = parse_target("npu")
        schedule = search(tiling_problem(op, target), target, target.pipeline_stages).schedule
    tiles = dict(zip("mnk", schedule.tiles))
    assert tiles["k"] % 32 == 0 and tiles["n"] % 32 == 0


def test_vector_steps_cost_whole_arrays_of_tiles():
    """A conv's folded prologue costs its steps per tile (step_cycles): the
    search evaluates it on the array of every candidate's tile at once, as it
    does one tile at a time."""
    from atvoss_mlir.recipes.elementwise import step_cycles
    from atvoss_mlir.recipes.vector_steps import ActivationStep, BinaryStep, Ref
    target = parse_target("npu")
    elements = np.array([1, 7, 64, 1000, 12544])
    chains = [[], [BinaryStep("mul", Ref("in", 0), Ref("in", 1), Ref("tmp", 0)),
                   BinaryStep("div", Ref("tmp", 0), Ref("in", 1), Ref("tmp", 0)),
                   ActivationStep("sigmoid", Ref("tmp", 0), Ref("tmp", 0))]]
    for steps in chains:
        assert step_cycles(steps, elements, target).tolist() == \
            [step_cycles(steps, int(count), target) for count in elements]
