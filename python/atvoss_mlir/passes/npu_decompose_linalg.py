"""npu-decompose-linalg: rewrite linalg ops that are not structured ops into ones that are.

Runs on tensors, first in the pipeline. `linalg.softmax` becomes its upstream
decomposition (a max reduction, `exp(x - max)`, a sum reduction and a
division: four `linalg.generic`s), `linalg.pack` / `linalg.unpack` become
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
    %op = transform.structured.match ops{{["{name}"]}} in %root
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
                          rewrite=DECOMPOSITIONS[name].format(h="%op"))


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
                self.decompose(module, name, ops, context)

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
