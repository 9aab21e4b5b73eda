"""`-precision=fp32|fp16|int8|mixed`: the fp32 ONNX model rewritten before
import. fp16 converts weights at compile time and keeps activations in fp16;
int8 quantises with onnxruntime's quantiser on the calibration data; mixed
takes int8 per layer while the output stays within -accuracy-budget."""

from __future__ import annotations

import onnx

from ..diagnostics import Diagnostic, DiagnosticError

QUANTIZED_OPS = {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul",
                 "MatMulInteger", "ConvInteger", "DynamicQuantizeLinear"}


def is_quantized(model: onnx.ModelProto) -> bool:
    return any(node.op_type in QUANTIZED_OPS for node in model.graph.node)


def apply_precision(model: onnx.ModelProto, target, calibration=None,
                    source: str | None = None, remarks: list | None = None) -> onnx.ModelProto:
    """The model to import for `target.precision`. `calibration`: the inputs'
    calibration samples (an .npz path or {name: array}), needed by int8 and
    mixed. `remarks` receives mixed's choice: a remark per layer and one for
    the model."""
    precision = target.precision
    if precision == "fp32":
        return model
    if is_quantized(model):
        raise DiagnosticError([Diagnostic(
            "error", f"-precision={precision} applies to fp32 models; this model is already "
            "quantised (compile it with the default -precision=fp32, which keeps its own "
            "precision)")])
    if precision == "fp16":
        from .fp16 import to_fp16
        return to_fp16(model)
    if calibration is None:
        raise DiagnosticError([Diagnostic(
            "error", f"-precision={precision} needs calibration data: --calibration data.npz "
            "(arrays named after the model's inputs)")])
    if precision == "int8":
        from .calibration import quantize_model
        return quantize_model(model, calibration, per_channel=True)
    from .mixed import choose_precision
    choice = choose_precision(model, calibration, target, source)
    if remarks is not None:
        remarks.extend(choice.remarks(source))
    return choice.model
