"""onnxruntime as the numerical reference: `atvoss run --check`, -precision=mixed
and the tests take their sessions from here."""

from __future__ import annotations

# On x86 CPUs without VNNI, onnxruntime's default kernels for a uint8 x int8
# product add pairs of products in 16 bits, which saturates (an int8
# QLinearMatMul came out 25 steps off, a quantised MLP lost 1% of its
# accuracy). This option has it multiply such products exactly, as the ONNX
# operators define and the NPU computes.
EXACT_PRODUCTS = "session.x64quantprecision"


def reference_session(model, quiet: bool = False):
    """A CPU onnxruntime session of `model` (a ModelProto, its bytes or a path)
    with exact integer products. A model whose int8 operators have no kernel
    under that option (an int8 QLinearConv) gets the default kernels, which
    compute int8 x int8 products exactly; so does one that onnxruntime fails
    to initialise under that option alone (a quantised torchvision DenseNet:
    'Attempt to replace the existing tensor')."""
    import onnxruntime
    if hasattr(model, "SerializeToString"):
        model = model.SerializeToString()

    def session(exact: bool):
        options = onnxruntime.SessionOptions()
        if quiet:
            options.log_severity_level = 3
        if exact:
            options.add_session_config_entry(EXACT_PRODUCTS, "1")
        return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    try:
        return session(exact=True)
    except Exception as error:  # noqa: BLE001 - onnxruntime raises its own kinds
        try:
            return session(exact=False)
        except Exception:  # noqa: BLE001 - the model itself fails: say the first error
            raise error from None
