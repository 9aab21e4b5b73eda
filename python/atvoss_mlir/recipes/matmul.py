"""Matrix multiplication on the matrix unit: linalg.matmul and
linalg.batch_matmul (the batch dim tiled by one) as npu.matmul on SRAM tiles,
accumulating across the K tiles."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import linalg

from ..dialects import npu
from .absorbed import output_init, output_init_or_bias
from .requantize import with_requantize
from .sram_ops import accumulation_start, dataflow_of, epilogue, in_sram, view_sizes
from .tile_ir import subview
from .problem import (ACCUMULATOR_TYPES, MATRIX_TYPES, LoopDim, OperandTile, Recipe, Tiled,
                      TilingProblem, Unsupported, built_op, copy_npu_attributes, matrix_cycles,
                      with_fp32_accumulator, ins_outs, static_shape, type_name)

MATMUL_MAPS = ["affine_map<(d0, d1, d2) -> (d0, d2)>", "affine_map<(d0, d1, d2) -> (d2, d1)>",
               "affine_map<(d0, d1, d2) -> (d0, d1)>"]
BATCH_MATMUL_MAPS = ["affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>",
                     "affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>",
                     "affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>"]


def default_maps(op, expected: list[str]) -> bool:
    if "indexing_maps" not in op.attributes:
        return True
    return [str(m) for m in ir.ArrayAttr(op.attributes["indexing_maps"])] == expected


def check_matrix_types(lhs, rhs, out) -> None:
    a, b, c = type_name(lhs), type_name(rhs), type_name(out)
    if a != b or a not in MATRIX_TYPES:
        raise Unsupported(f"the matrix unit takes fp16/fp32/int8 operands of one type, "
                          f"got {a} and {b}")
    if c not in ACCUMULATOR_TYPES[a]:
        raise Unsupported(f"the matrix unit cannot produce {c} from {a} inputs")


def matmul_problem(op, target) -> TilingProblem:
    (lhs, rhs), (out,) = ins_outs(op)
    if not default_maps(op, MATMUL_MAPS):
        raise Unsupported("linalg.matmul with non-default indexing maps (transposed operands)")
    (m, k), (_, n) = static_shape(lhs, "lhs"), static_shape(rhs, "rhs")
    static_shape(out, "output")
    check_matrix_types(lhs, rhs, out)
    int8 = type_name(lhs) == "i8"
    dims = [LoopDim("m", m, candidates="stream"), LoopDim("n", n), LoopDim("k", k, True)]
    operands = [OperandTile("lhs", lhs, (Tiled(0), Tiled(2))),
                OperandTile("rhs", rhs, (Tiled(2), Tiled(1))),
                OperandTile("output", out, (Tiled(0), Tiled(1)), is_output=True)]
    def gemm(t):
        return t[0], t[1], t[2], int8
    return with_requantize(output_init_or_bias(with_fp32_accumulator(TilingProblem(
        op, MATMUL, dims, operands, matrix_cycles(gemm, target), details={"gemm": gemm}),
        target.pipeline_stages), 1, fold_bias=target.fusion >= 1), 1, target)


def batch_matmul_problem(op, target) -> TilingProblem:
    (lhs, rhs), (out,) = ins_outs(op)
    if not default_maps(op, BATCH_MATMUL_MAPS):
        raise Unsupported("linalg.batch_matmul with non-default indexing maps")
    (b, m, k), (_, _, n) = static_shape(lhs, "lhs"), static_shape(rhs, "rhs")
    static_shape(out, "output")
    check_matrix_types(lhs, rhs, out)
    int8 = type_name(lhs) == "i8"
    dims = [LoopDim("b", b, candidates="one"), LoopDim("m", m, candidates="stream"),
            LoopDim("n", n), LoopDim("k", k, True)]
    operands = [OperandTile("lhs", lhs, (Tiled(0), Tiled(1), Tiled(3)), dropped=(0,)),
                OperandTile("rhs", rhs, (Tiled(0), Tiled(3), Tiled(2)), dropped=(0,)),
                OperandTile("output", out, (Tiled(0), Tiled(1), Tiled(2)), is_output=True,
                            dropped=(0,))]
    def gemm(t):   # one batch per tile
        return t[1], t[2], t[3], int8
    return output_init(with_fp32_accumulator(TilingProblem(
        op, MATMUL, dims, operands, matrix_cycles(gemm, target), details={"gemm": gemm}),
        target.pipeline_stages))


def drop_batch(view: ir.Value) -> ir.Value:
    """The 2-D matrix of a tile with one batch."""
    sizes = view_sizes(view)
    return subview(view, [0, 0, 0], [1, sizes[1], sizes[2]], dropped=(0,))


class MatmulRecipe(Recipe):
    name = "matmul"
    ops = ("linalg.matmul", "linalg.batch_matmul")
    matrix_unit = True
    accumulates = True

    def problem(self, op, target) -> TilingProblem:
        build = matmul_problem if op.name == "linalg.matmul" else batch_matmul_problem
        return build(op, target)

    def reads_output(self, problem) -> bool:
        return not problem.starts_output

    def build_on_tiles(self, op, inputs, out):
        builder = linalg.matmul if op.name == "linalg.matmul" else linalg.batch_matmul
        builder(*inputs, outs=[out])
        built = built_op(out)
        copy_npu_attributes(op, built)
        return built

    def rewrite(self, op, rewriter):
        lhs, rhs, out = op.operation.operands
        if not in_sram(out):
            return True
        check_matrix_types(lhs, rhs, out)
        with rewriter.ip, op.location:
            accumulate, bias = accumulation_start(op, out, rewriter)
            if ir.MemRefType(out.type).rank == 3:  # batch_matmul: one batch per tile
                lhs, rhs, out = (drop_batch(view) for view in (lhs, rhs, out))
            activation, clip_min, clip_max = epilogue(op)
            npu.MatmulOp(lhs, rhs, out, accumulate, activation, bias=bias, clip_min=clip_min,
                         clip_max=clip_max, dataflow=dataflow_of(op))
        rewriter.erase_op(op.operation)


MATMUL = MatmulRecipe()
