"""The context: upstream dialects plus npu, and malformed npu ops rejected."""

import pytest
from mlir import ir

from atvoss_mlir.context import make_context
from atvoss_mlir.dialects import npu


def test_upstream_and_npu_dialects_are_registered():
    context = make_context()
    assert not context.allow_unregistered_dialects
    module = ir.Module.parse("""
      func.func @f(%a: memref<8x8xf16>) {
        %b = "npu.alloc"() {offset = 0 : i64} : () -> memref<8x8xf16, 1>
        %t = "npu.dma_load"(%a, %b) {channel = 0 : i64}
            : (memref<8x8xf16>, memref<8x8xf16, 1>) -> !npu.token
        "npu.wait"(%t) : (!npu.token) -> ()
        %zero = arith.constant 0.0 : f16
        linalg.fill ins(%zero : f16) outs(%b : memref<8x8xf16, 1>)
        return
      }""", context)
    names = [op.name for op in module.body.operations[0].regions[0].blocks[0].operations]
    assert names[:3] == ["npu.alloc", "npu.dma_load", "npu.wait"]


def test_parsed_npu_ops_are_generated_classes():
    context = make_context()
    module = ir.Module.parse('%0 = "npu.alloc"() : () -> memref<4xf32, 1>', context)
    assert isinstance(module.body.operations[0], npu.AllocOp)


@pytest.mark.parametrize("text, message", [
    ('"npu.wait"() : () -> ()\n"npu.barrier"(%x) : (i32) -> ()', "undeclared"),
    ('%0 = "npu.alloc"() : () -> i32', "expected base type 'builtin.memref'"),
    ('"npu.unknown_op"() : () -> ()', "unregistered operation 'npu.unknown_op'"),
    ('"other.op"() : () -> ()', "unregistered dialect"),
])
def test_malformed_ops_are_rejected_with_a_location(text, message):
    context = make_context()
    with pytest.raises(ir.MLIRError) as error:
        ir.Module.parse(text, context)
    diagnostics = error.value.error_diagnostics
    assert message in diagnostics[0].message
    assert diagnostics[0].location.is_a_file()


def test_missing_attribute_is_rejected():
    context = make_context()
    with pytest.raises(ir.MLIRError) as error:
        ir.Module.parse("""
          func.func @f(%a: memref<4x4xf32, 1>) {
            "npu.matmul"(%a, %a, %a) {accumulate = false} : (memref<4x4xf32, 1>, memref<4x4xf32, 1>, memref<4x4xf32, 1>) -> ()
            return
          }""", context)
    diagnostic = error.value.error_diagnostics[0]
    assert 'attribute "activation" is expected' in diagnostic.message
    assert diagnostic.location.start_line == 3


def test_build_npu_program_from_python():
    context = make_context()
    f16, f32 = None, None
    with context, ir.Location.unknown():
        f16, f32 = ir.F16Type.get(), ir.F32Type.get()
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            lhs = npu.AllocOp(npu.sram_memref([16, 32], f16), offset=0)
            rhs = npu.AllocOp(npu.sram_memref([32, 8], f16), offset=1024)
            out = npu.AllocOp(npu.sram_memref([16, 8], f32), offset=1536)
            npu.FillOp(out, 0.0)
            npu.MatmulOp(lhs, rhs, out, accumulate=True, activation="relu")
            npu.BarrierOp()
    text = str(module)
    assert '"npu.matmul"(%0, %1, %2) {accumulate = true, activation = "relu"}' in text
    assert npu.is_sram(lhs.result.type)
    # What Python built parses back through the IRDL registration.
    reparsed = ir.Module.parse(text, context)
    assert reparsed.operation.verify()


def test_token_type_and_dma_builders():
    context = make_context()
    with context, ir.Location.unknown():
        f32 = ir.F32Type.get()
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            dram = ir.MemRefType.get([4], f32)
            source = ir.Operation.create("memref.alloc", results=[dram])
            target = npu.AllocOp(npu.sram_memref([4], f32))
            load = npu.DmaLoadOp(npu.token_type(), source.result, target, channel=1)
            npu.WaitOp([load.result])
        assert str(load.result.type) == "!npu.token"
        assert module.operation.verify()
