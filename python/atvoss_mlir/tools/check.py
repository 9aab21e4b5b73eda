"""`atvoss run --check`: the program's outputs against onnxruntime's, each
within the tolerance of its element type and precision (one quantisation
step for a quantised model)."""

from __future__ import annotations

import numpy as np

from .common import CommandLineError

# Default tolerances of --check by output element type.
TOLERANCES = {np.dtype(np.float32): (1e-4, 1e-5), np.dtype(np.float16): (2e-2, 1e-2),
              np.dtype(np.float64): (1e-7, 1e-9)}
EXACT = (0.0, 0.0)
# -precision=fp16 computes an fp32 model in fp16: its errors scale with the
# output's magnitude, so atol is this fraction of the largest expected value
# (fp16 rounding over MobileNetV2's ~50 layers reaches 1.4e-2 of it).
FP16_COMPUTE_TOLERANCE = (2e-2, 2e-2)
# fp32 sums taken in another order than onnxruntime's (tiles, accumulation
# onto a skip) round differently, by amounts that scale with the output's
# magnitude, not each element's: MobileNetV2 at 224 with random weights is off
# by 5.2e-6 of its largest output on a logit near zero. An fp32 output's atol
# is at least this fraction of its largest expected value.
FP32_SCALED_ATOL = 1e-5


def reference_outputs(args, compiled, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    if not args.model.endswith(".onnx"):
        raise CommandLineError("--check needs an ONNX model (onnxruntime is the reference)")
    from ..reference import reference_session
    model = args.model
    if compiled.target.precision in ("int8", "mixed"):
        # The quantised model the program computes: its own rounding is the reference.
        model = compiled.rewritten_model.SerializeToString()
    session = reference_session(model)
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs)))


def quantization_steps(args, compiled) -> dict[str, float]:
    """One quantisation step (LSB) of each output of a quantised model: 1 for
    an 8-bit output, the scale of the DequantizeLinear writing a float one."""
    import onnx
    from ..quantization.precision import is_quantized
    model = compiled.rewritten_model if compiled.rewritten_model is not None else \
        onnx.load(args.model, load_external_data=False)
    if not is_quantized(model):
        return {}
    constants = {i.name: i for i in model.graph.initializer}
    producers = {output: node for node in model.graph.node for output in node.output}
    steps = {}
    for output in model.graph.output:
        kind = output.type.tensor_type.elem_type
        node = producers.get(output.name)
        if kind in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8):
            steps[output.name] = 1.0
        elif node is not None and node.op_type == "DequantizeLinear" \
                and node.input[1] in constants:
            scale = onnx.numpy_helper.to_array(constants[node.input[1]])
            steps[output.name] = float(np.max(scale))
    return steps


def compare(args, outputs, reference, precision: str = "fp32", steps=None) -> dict:
    """`steps`: the outputs of a quantised model and their quantisation step;
    those are within one step of onnxruntime's (its own int8 kernels round a
    few elements otherwise)."""
    results = {}
    steps = steps or {}
    for name, actual in outputs.items():
        expected = np.asarray(reference[name])
        actual = np.asarray(actual).astype(np.float64)
        wanted = expected.astype(np.float64)
        rtol, atol = TOLERANCES.get(np.dtype(expected.dtype), EXACT)
        if name in steps:
            # Two dequantised values a step apart differ by the step up to
            # their own float rounding (at 0.08, 62 steps of 1.3e-3, 3.4e-6
            # of the step).
            rounding = 2 * float(np.spacing(np.abs(expected).max())) \
                if expected.dtype.kind == "f" and expected.size else 0.0
            rtol, atol = 0.0, steps[name] * (1 + 1e-6) + rounding
        elif precision == "fp16" and expected.dtype.kind == "f":
            rtol, atol = FP16_COMPUTE_TOLERANCE
            atol *= float(np.abs(wanted).max()) if wanted.size else 0.0
        elif expected.dtype == np.float32 and wanted.size:
            atol = max(atol, FP32_SCALED_ATOL * float(np.abs(wanted).max()))
        rtol = args.rtol if args.rtol is not None else rtol
        atol = args.atol if args.atol is not None else atol
        if actual.shape != wanted.shape:
            results[name] = {"max_abs_error": None, "max_rel_error": None, "ok": False,
                             "error": f"shape {list(actual.shape)} != {list(wanted.shape)}"}
            continue
        difference = np.abs(actual - wanted)
        max_abs = float(difference.max()) if difference.size else 0.0
        relative = difference / np.maximum(np.abs(wanted), np.finfo(np.float64).tiny)
        max_rel = float(relative.max()) if relative.size else 0.0
        ok = bool(np.all(difference <= atol + rtol * np.abs(wanted)))
        results[name] = {"max_abs_error": max_abs, "max_rel_error": max_rel, "ok": ok,
                         "rtol": rtol, "atol": atol}
    return results
