"""npu-decompose-linalg: rewrite linalg ops that are not structured ops into ones that are.

Runs on tensors, first in the pipeline. A `linalg.softmax` whose rows fit the
SRAM budget stays, for the one-pass softmax recipe (recipes/softmax.py); any
other becomes its upstream decomposition (a max reduction, `exp(x - max)`, a
sum reduction and a division: four `linalg.generic`s, four passes through
DRAM), with a remark saying which and why. `linalg.pack` / `linalg.unpack` become
`tensor.pad` / reshapes around a `linalg.transpose`, and the Winograd
transforms become loops of `linalg.matmul`s. None of the originals has an
iteration space the NPU or the simulator's fallback engine could run, and
pack, unpack and the Winograd ops do not bufferize; every op they become
does. The rewrites are upstream transform ops (`decompose_interface`,
`lower_pack`, `lower_unpack`, `decompose_winograd_op`) applied from here.

    %r = linalg.softmax dimension(1) ins(%x : tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
becomes
    %max = linalg.generic {... ["parallel", "reduction"]} ins(%x) outs(%fill_nan) { arith.maxnumf }
    %exp = linalg.generic {... ["parallel", "parallel"]} ins(%x, %max) outs(%e) { arith.subf, math.exp }
    %sum = linalg.generic {... ["parallel", "reduction"]} ins(%exp) outs(%fill_zero) { arith.addf }
    %r = linalg.generic {... ["parallel", "parallel"]} ins(%exp, %sum) outs(%e) { arith.divf }
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects.transform import interpreter as transform_interpreter

from ..recipes.softmax import SOFTMAX_TYPES, whole_row_working_set
from . import ModulePass, PassContext

# op name -> the transform op that rewrites one of them (its result types).
DECOMPOSITIONS = {
    "linalg.softmax": "transform.structured.decompose_interface {h} "
                      ": (!transform.any_op) -> !transform.any_op",
    "linalg.pack": "transform.structured.lower_pack {h} : (!transform.op<\"linalg.pack\">) -> "
                   "(!transform.op<\"tensor.pad\">, !transform.op<\"tensor.expand_shape\">, "
                   "!transform.op<\"linalg.transpose\">)",
    "linalg.unpack": "transform.structured.lower_unpack {h} : (!transform.op<\"linalg.unpack\">) "
                     "-> (!transform.op<\"tensor.empty\">, !transform.op<\"linalg.transpose\">, "
                     "!transform.op<\"tensor.collapse_shape\">, "
                     "!transform.op<\"tensor.extract_slice\">)",
    **{f"linalg.winograd_{kind}_transform":
       "transform.structured.decompose_winograd_op {h} "
       ": (!transform.any_op) -> !transform.any_op" for kind in ("filter", "input", "output")},
}

_SCRIPT = """
module attributes {{transform.with_named_sequence}} {{
  transform.named_sequence @__transform_main(%root: !transform.any_op {{transform.readonly}}) {{
    %op = transform.structured.match ops{{["{name}"]}}{attributes} in %root
        : (!transform.any_op) -> {handle_type}
    {rewrite}
    transform.yield
  }}
}}
"""


def script_for(name: str) -> str:
    handle_type = ("!transform.any_op" if "any_op) ->" in DECOMPOSITIONS[name]
                   else f'!transform.op<"{name}">')
    return _SCRIPT.format(name=name, handle_type=handle_type,
                          rewrite=DECOMPOSITIONS[name].format(h="%op"),
                          attributes=f" attributes {{{DECOMPOSE_ATTR}}}"
                          if name == "linalg.softmax" else "")


DECOMPOSE_ATTR = "npu.decompose"   # marks the softmax ops to decompose


def softmax_kept(op, target) -> tuple[bool, str]:
    """Whether the one-pass softmax recipe can run `op` (its rows fit the SRAM
    budget), and the remark saying so or why not."""
    result = ir.RankedTensorType(op.results[0].type)
    axis = ir.IntegerAttr(op.attributes["dimension"]).value
    decomposed = "'linalg.softmax' decomposed into max, exp, sum and divide passes"
    if not result.has_static_shape or str(result.element_type) not in SOFTMAX_TYPES:
        return False, f"{decomposed}: the one-pass form takes static f16/f32 tensors"
    shape = list(result.shape)
    needs = whole_row_working_set(shape, axis, result.element_type, target)
    if needs > target.max_sram_bytes:
        return False, (f"{decomposed}: a row of {shape[axis]} elements needs {needs} B of SRAM "
                       f"with {target.pipeline_stages} stages, above the budget "
                       f"{target.max_sram_bytes} B")
    return True, f"'linalg.softmax' in one pass: its rows of {shape[axis]} stay whole in SRAM"


@dataclass(frozen=True)
class NpuDecomposeLinalg(ModulePass):
    argument = "npu-decompose-linalg"
    summary = "Decompose linalg.softmax, pack, unpack and the Winograd transforms into " \
              "structured linalg ops (on tensors)"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            found = {}

            def visit(op):
                if op.name in DECOMPOSITIONS:
                    found.setdefault(op.name, []).append(op)
                return ir.WalkResult.ADVANCE
            module.walk(visit)
            for name, ops in found.items():
                on_memrefs = [op for op in ops if not all(
                    isinstance(v.type, ir.RankedTensorType) for v in op.operands
                    if isinstance(v.type, ir.ShapedType))]
                for op in on_memrefs:
                    context.diagnostics.error(op.location, f"'{name}' is decomposed on tensors, "
                                              f"before bufferization: it cannot run on memrefs")
                if on_memrefs:
                    continue
                if name == "linalg.softmax":
                    ops = self.mark_softmax_to_decompose(ops, context)
                    if not ops:
                        continue
                self.decompose(module, name, ops, context)

    @staticmethod
    def mark_softmax_to_decompose(ops: list, context: PassContext) -> list:
        """The softmax ops to decompose, marked for the transform's match; each
        gets a remark."""
        marked = []
        for op in ops:
            kept, remark = softmax_kept(op, context.target)
            context.diagnostics.remark(op.location, remark)
            if not kept:
                op.attributes[DECOMPOSE_ATTR] = ir.UnitAttr.get()
                marked.append(op)
        return marked

    def decompose(self, module: ir.Operation, name: str, ops: list, context: PassContext) -> None:
        script = ir.Module.parse(script_for(name))
        try:
            transform_interpreter.apply_named_sequence(module, script.body.operations[0], script)
        except (ValueError, ir.MLIRError) as failure:
            # The bindings give the transform's diagnostics as text only:
            # "Diagnostic message at loc(...): <message>", at the payload op.
            by_location = {str(op.location): op.location for op in ops}
            reported = False
            for line in str(failure).splitlines():
                where, sep, message = line.removeprefix("Diagnostic message at ").partition("): ")
                if line.startswith("Diagnostic message at ") and sep:
                    location = by_location.get(where + ")", ops[0].location)
                    context.diagnostics.error(location, f"cannot decompose '{name}': {message}")
                    reported = True
            if not reported:
                context.diagnostics.error(ops[0].location, f"cannot decompose '{name}': "
                                          f"{' '.join(str(failure).split())}")
