"""Hazards, SRAM errors and unsupported ops: located errors, never silent."""

import numpy as np
import pytest

from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.sim import simulate

HEAD = """func.func @main(%A: memref<32x32xf16>, %C: memref<32x32xf32>) {
  %a = "npu.alloc"() : () -> memref<32x32xf16, 1>
  %c = "npu.alloc"() : () -> memref<32x32xf32, 1>
"""
LOAD = ('"npu.dma_load"(%A, %a) {channel = CH : i64} '
        ': (memref<32x32xf16>, memref<32x32xf16, 1>) -> !npu.token')
MATMUL = ('"npu.matmul"(%a, %a, %c) {accumulate = false, activation = "none"} '
          ': (memref<32x32xf16, 1>, memref<32x32xf16, 1>, memref<32x32xf32, 1>) -> ()')
STORE = ('"npu.dma_store"(%c, %C) {channel = 1 : i64} '
         ': (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token')


def program(*lines: str) -> str:
    """HEAD (lines 1-3), then `lines` from line 4 on, then return."""
    body = "".join(f"  {line}\n" for line in lines)
    return HEAD + body.replace("CH", "0") + "  return\n}\n"


def error_of(text: str, **kwargs):
    with pytest.raises(DiagnosticError) as caught:
        simulate(text, **kwargs)
    (diagnostic,) = caught.value.diagnostics
    return diagnostic.resolved_position().line, diagnostic.message


def test_well_synchronised_program_runs():
    simulate(program(f"%t = {LOAD}", '"npu.wait"(%t) : (!npu.token) -> ()', MATMUL,
                     '"npu.barrier"() : () -> ()', f"%s = {STORE}",
                     '"npu.wait"(%s) : (!npu.token) -> ()'))


def test_read_before_wait_is_a_raw_hazard():
    line, message = error_of(program(f"%t = {LOAD}", MATMUL, '"npu.wait"(%t) : (!npu.token) -> ()'))
    assert line == 5
    assert message.startswith("npu.matmul: reads SRAM bytes")
    assert "npu.dma_load at -:4:" in message and "read-after-write" in message


BARRIER = '"npu.barrier"() : () -> ()'


def test_store_before_the_producing_matmul_completes_is_a_hazard():
    line, message = error_of(program(f"%t = {LOAD}", '"npu.wait"(%t) : (!npu.token) -> ()',
                                     MATMUL, f"%s = {STORE}"))
    assert line == 7
    assert message.startswith("npu.dma_store: reads SRAM bytes")
    assert "npu.matmul at -:6:" in message and "read-after-write" in message
    assert "npu.barrier" in message


def test_reload_of_a_tile_a_matmul_still_reads_is_a_hazard():
    line, message = error_of(program(f"%t = {LOAD}", '"npu.wait"(%t) : (!npu.token) -> ()',
                                     MATMUL, f"%t2 = {LOAD}"))
    assert line == 7
    assert message.startswith("npu.dma_load: overwrites SRAM bytes")
    assert "npu.matmul at -:6:" in message and "write-after-read" in message


def test_barrier_orders_dma_after_compute():
    result = simulate(program(f"%t = {LOAD}", '"npu.wait"(%t) : (!npu.token) -> ()', MATMUL,
                              BARRIER, f"%s = {STORE}", f"%t2 = {LOAD}",
                              '"npu.wait"(%s, %t2) : (!npu.token, !npu.token) -> ()'),
                      timing_only=True, trace=True)
    matmul = next(e for e in result.trace_events if e.name == "npu.matmul")
    later = [e.name for e in result.trace_events if e.start >= matmul.finish]
    assert sorted(later) == ["npu.dma_load", "npu.dma_store"]


VECTOR_BARRIER = '"npu.barrier"() {engines = "vector"} : () -> ()'
RELU = ('"npu.activation"(%c, %c) {kind = "relu"} '
        ': (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()')


def test_vector_barrier_leaves_the_matrix_unit_running():
    """Nothing on the vector unit reads the matmul's result: the barrier does
    not wait for it, and reloading its input races with it."""
    line, message = error_of(program(f"%t = {LOAD}", '"npu.wait"(%t) : (!npu.token) -> ()',
                                     MATMUL, VECTOR_BARRIER, f"%t2 = {LOAD}"))
    assert line == 8
    assert message.startswith("npu.dma_load: overwrites SRAM bytes")
    assert "npu.matmul at -:6:" in message and "write-after-read" in message


def test_vector_barrier_waits_for_the_matmul_its_vector_op_reads():
    result = simulate(program(f"%t = {LOAD}", '"npu.wait"(%t) : (!npu.token) -> ()', MATMUL,
                              RELU, VECTOR_BARRIER, f"%s = {STORE}", f"%t2 = {LOAD}",
                              '"npu.wait"(%s, %t2) : (!npu.token, !npu.token) -> ()'),
                      timing_only=True, trace=True)
    relu = next(e for e in result.trace_events if e.name == "npu.activation")
    matmul = next(e for e in result.trace_events if e.name == "npu.matmul")
    assert relu.start >= matmul.finish
    later = [e.name for e in result.trace_events if e.start >= relu.finish]
    assert sorted(later) == ["npu.dma_load", "npu.dma_store"]


MATRIX_BARRIER = '"npu.barrier"() {engines = "matrix"} : () -> ()'


def test_matrix_barrier_refills_the_matmuls_input_but_not_the_vector_ops_output():
    """After a matrix barrier the matmul's input may be reloaded while the
    vector op reading its result runs on; storing that op's result races."""
    result = simulate(program(f"%t = {LOAD}", '"npu.wait"(%t) : (!npu.token) -> ()', MATMUL,
                              RELU, MATRIX_BARRIER, f"%t2 = {LOAD}",
                              '"npu.wait"(%t2) : (!npu.token) -> ()'),
                      timing_only=True, trace=True)
    relu = next(e for e in result.trace_events if e.name == "npu.activation")
    reload = [e for e in result.trace_events if e.name == "npu.dma_load"][-1]
    assert reload.start < relu.finish
    line, message = error_of(program(f"%t = {LOAD}", '"npu.wait"(%t) : (!npu.token) -> ()',
                                     MATMUL, RELU, MATRIX_BARRIER, f"%s = {STORE}"))
    assert line == 9
    assert message.startswith("npu.dma_store: reads SRAM bytes")
    assert "npu.activation at -:7:" in message and "read-after-write" in message


def test_load_into_a_tile_a_pending_store_reads_is_a_war_hazard():
    line, message = error_of(program(
        f"%t = {LOAD}", '"npu.wait"(%t) : (!npu.token) -> ()', MATMUL, BARRIER,
        f"%s = {STORE}", "%D = memref.alloc() : memref<32x32xf32>",
        '%d = "npu.dma_load"(%D, %c) {channel = 0 : i64} '
        ': (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token'))
    assert line == 10
    assert message.startswith("npu.dma_load: overwrites SRAM bytes [2048, 6144)")
    assert "npu.dma_store at -:8:" in message and "write-after-read" in message


def test_release_with_a_pending_dma():
    line, message = error_of(program(f"%t = {LOAD}",
                                     '"npu.dealloc"(%a) : (memref<32x32xf16, 1>) -> ()'))
    assert line == 5 and "npu.dma_load at -:4:" in message and "pending" in message


def test_compute_overwriting_a_tile_being_stored_is_a_hazard():
    line, message = error_of(program(f"%t = {LOAD}", '"npu.wait"(%t) : (!npu.token) -> ()',
                                     MATMUL, BARRIER, f"%s = {STORE}", MATMUL))
    assert line == 9
    assert message.startswith("npu.matmul: overwrites SRAM bytes")
    assert "npu.dma_store at -:8:" in message


def test_two_channels_loading_one_tile_without_wait():
    second = LOAD.replace("CH", "1")
    line, message = error_of(program(f"%t = {LOAD}", f"%t2 = {second}"))
    assert line == 5 and "write-after-write" in message


def test_same_channel_dmas_are_ordered():
    simulate(program(f"%t = {LOAD}", f"%t2 = {LOAD}",
                     '"npu.wait"(%t, %t2) : (!npu.token, !npu.token) -> ()'))


def test_vector_after_matrix_needs_no_synchronisation():
    # The compute scoreboard orders the activation after the matmul writing %c.
    result = simulate(program(
        f"%t = {LOAD}", '"npu.wait"(%t) : (!npu.token) -> ()', MATMUL,
        '"npu.activation"(%c, %c) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()'),
        timing_only=True)
    matmul = next(o for o in result.report["ops"] if o["op"] == "npu.matmul")
    activation = next(o for o in result.report["ops"] if o["op"] == "npu.activation")
    assert result.total_cycles == 100 + 32 + matmul["cycles"] + activation["cycles"]


ALLOC = '%x = "npu.alloc"() {offset = OFF : i64} : () -> memref<SHAPExf16, 1>'


def alloc(offset, shape="64x64", name="%x"):
    return ALLOC.replace("OFF", str(offset)).replace("SHAPE", shape).replace("%x", name)


def test_misaligned_offset():
    line, message = error_of(program(alloc(16)))
    assert line == 4
    assert message == "npu.alloc: offset 16 is not aligned to the SRAM alignment of 32 B"


def test_buffer_exceeding_sram():
    line, message = error_of(program('%x = "npu.alloc"() : () -> memref<1024x1024xf16, 1>'))
    assert line == 4 and "exceeds the SRAM capacity of 1048576 B" in message
    line, message = error_of(program(alloc(1048576 - 4096, "64x64")),
                             target="npu -max-sram-bytes=1048576")
    assert line == 4 and message.startswith("npu.alloc: buffer [1044480, 1052672) exceeds")


def test_live_buffers_overlap():
    line, message = error_of(program(alloc(65536), alloc(65536 + 4096, name="%y")))
    assert line == 5
    assert "overlaps the live buffer [65536, 73728) allocated at -:4:" in message


def test_dealloc_frees_space_and_first_fit_reuses_it():
    result = simulate(program(
        '%x = "npu.alloc"() : () -> memref<512x512xf16, 1>',
        '"npu.dealloc"(%x) : (memref<512x512xf16, 1>) -> ()',
        '%y = "npu.alloc"() : () -> memref<512x512xf16, 1>'), timing_only=True)
    # %a and %c (2 KiB + 4 KiB) plus one 512 KiB buffer at a time.
    assert result.report["sram_peak_bytes"] == 2048 + 4096 + 524288


def test_dma_shape_mismatch():
    line, message = error_of(program(
        '%h = "npu.alloc"() : () -> memref<32x16xf16, 1>',
        '%t = "npu.dma_load"(%A, %h) {channel = 0 : i64} '
        ': (memref<32x32xf16>, memref<32x16xf16, 1>) -> !npu.token'))
    assert line == 5 and message.startswith("npu.dma_load: source and target differ")


def test_dma_out_of_bounds_of_its_buffer():
    line, message = error_of(program(
        '%v = memref.reinterpret_cast %A to offset: [512], sizes: [32, 32], strides: [32, 1] '
        ': memref<32x32xf16> to memref<32x32xf16, strided<[32, 1], offset: 512>>',
        '%t = "npu.dma_load"(%v, %a) {channel = 0 : i64} '
        ': (memref<32x32xf16, strided<[32, 1], offset: 512>>, memref<32x32xf16, 1>) -> !npu.token'))
    assert line == 5
    assert "outside its DRAM buffer of 2048 B" in message and message.startswith("npu.dma_load")


def test_subview_out_of_bounds():
    line, message = error_of(program(
        "%c20 = arith.constant 20 : index",
        "%v = memref.subview %A[%c20, 0] [16, 32] [1, 1] : memref<32x32xf16> "
        "to memref<16x32xf16, strided<[32, 1], offset: ?>>"))
    assert line == 5 and "out of bounds" in message and message.startswith("memref.subview")


def test_dma_channel_out_of_range():
    line, message = error_of(program(f"%t = {LOAD.replace('CH', '5')}"))
    assert line == 4 and "channel 5 does not exist" in message


def test_op_without_handler_is_an_error():
    line, message = error_of(program("%f = arith.constant 1.0 : f32", "%e = math.exp %f : f32"))
    assert line == 5
    assert message == "math.exp: the simulator has no handler for this op"


def test_alloc_in_a_loop_reuses_its_buffer():
    result = simulate(program(
        "%c0 = arith.constant 0 : index", "%c8 = arith.constant 8 : index",
        "%c1 = arith.constant 1 : index",
        "scf.for %i = %c0 to %c8 step %c1 {",
        '  %x = "npu.alloc"() : () -> memref<256x256xf16, 1>',
        "}"), timing_only=True)
    assert result.report["sram_peak_bytes"] == 2048 + 4096 + 131072


def test_inputs_are_checked():
    with pytest.raises(DiagnosticError, match="expects shape 32x32"):
        simulate(program(), [np.zeros((3, 3)), np.zeros((32, 32))])
    with pytest.raises(DiagnosticError, match="takes 2 arguments"):
        simulate(program(), [np.zeros((32, 32))])
