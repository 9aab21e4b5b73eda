"""Static int8 quantisation of an fp32 ONNX model with onnxruntime's
quantiser, calibrated on sample inputs (`atvoss quantize`, -precision=int8).

Calibration data is an .npz file (or a {name: array} dict) with one array per
model input, named after it. An array holds N samples stacked on the input's
first (batch) axis: for an input of shape [B, d1, ..., dk] it has shape
[N*B, d1, ..., dk] and each sample is B consecutive rows; with a symbolic
batch each row is one sample. With a fixed batch, one sample is exactly the
input's shape. A rank-0 input takes an array of shape [N]. Every array has the input's element
type, the same N (at least 1) and only finite values; all of this is checked
before any work.

The result is a QDQ model (QuantizeLinear/DequantizeLinear pairs around the
quantised ops): activations uint8 asymmetric, so a tensor whose range is
one-sided (after a Relu) spends all 256 levels on it; weights int8 symmetric,
so their zero point is 0 and the weight side of a MAC needs no zero-point
correction. Weights are quantised per output channel with `per_channel`.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import tempfile
import zipfile
from collections.abc import Mapping

import numpy as np
import onnx
import onnx.version_converter

from ..diagnostics import Diagnostic, DiagnosticError, SourcePosition
from ..inputs import InputSpec, onnx_input_spec

METHODS = ("minmax", "entropy", "percentile")


def _error(message: str, where: str) -> DiagnosticError:
    return DiagnosticError([Diagnostic("error", message, position=SourcePosition(where, 1, 1))])


def _shape(dims) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def model_inputs(model: onnx.ModelProto) -> list[InputSpec]:
    """The graph inputs a caller feeds (an initializer listed as an input, as
    old exporters write, has a value already)."""
    initializers = {init.name for init in model.graph.initializer}
    return [onnx_input_spec(info) for info in model.graph.input if info.name not in initializers]


def _expected(spec: InputSpec) -> str:
    """The shape of an input's calibration array, N standing for the samples."""
    if not spec.shape:
        return "[N]"
    batch = spec.shape[0]
    first = "N" if batch in (None, 1) else f"N*{batch}"
    rest = ["?" if d is None else d for d in spec.shape[1:]]
    return _shape([first] + rest)


def _read_npz(path: str) -> dict[str, np.ndarray]:
    if not os.path.exists(path):
        raise _error("cannot read calibration data: no such file", path)
    try:
        data = np.load(path, allow_pickle=False)
    except OSError as error:
        raise _error(f"cannot read calibration data: {error.strerror or error}", path) from None
    except (zipfile.BadZipFile, EOFError) as error:
        raise _error(f"cannot read calibration data: a damaged .npz archive ({error})",
                     path) from None
    except ValueError:  # numpy's guess, a pickle, is refused: the file is something else
        raise _error("cannot read calibration data: not an .npz archive (numpy.savez writes "
                     "one)", path) from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise _error("calibration data is a single array, not an .npz of arrays named after "
                     "the model's inputs", path)
    arrays = {}
    with data:
        for key in data.files:
            try:
                arrays[key] = data[key]
            except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
                # Object arrays (pickles) and damaged members.
                raise _error(f"calibration array '{key}' cannot be read: {error}", path) from None
    return arrays


def _samples(spec: InputSpec, array: np.ndarray, where: str) -> int:
    """The number of samples in an input's array (checked against the input)."""
    name = spec.name
    given = f"calibration array '{name}' has shape {_shape(array.shape)}"
    dims = _shape(["?" if d is None else d for d in spec.shape])
    wanted = f"input '{name}' ({spec.dtype.name} {dims}) takes {_expected(spec)}"
    if array.dtype != spec.dtype:
        raise _error(f"calibration array '{name}' is {array.dtype.name}; input '{name}' is "
                     f"{spec.dtype.name}", where)
    if array.ndim != max(len(spec.shape), 1):
        raise _error(f"{given} (rank {array.ndim}); {wanted} (rank {max(len(spec.shape), 1)})",
                     where)
    for axis, (size, dim) in enumerate(zip(array.shape[1:], spec.shape[1:]), 1):
        if dim is not None and size != dim:
            raise _error(f"{given}; {wanted}: dimension {axis} is {size}, expected {dim}", where)
    rows = array.shape[0]
    batch = spec.shape[0] if spec.shape else 1
    if rows == 0:
        raise _error(f"{given}: it holds no samples; {wanted} with N at least 1", where)
    if batch is not None and rows % batch:
        raise _error(f"{given}; {wanted}: {rows} rows are not a whole number of samples of "
                     f"batch {batch}", where)
    if array.dtype.kind in "fc":
        bad = ~np.isfinite(array)
        if bad.any():
            first = [int(i) for i in np.argwhere(bad)[0]]
            raise _error(f"calibration array '{name}' holds {int(bad.sum())} non-finite "
                         f"value(s) (NaN or infinity), the first at index {first}", where)
    return rows // (batch or 1)


def load_calibration(calibration, model: onnx.ModelProto,
                     source: str | None = None) -> list[dict[str, np.ndarray]]:
    """The calibration samples of `model`, each {input name: array of the
    input's shape}, from an .npz path or a {name: array} dict (the module
    docstring gives the rule). Raises DiagnosticError located at the
    calibration file (`source` names a dict's origin; default
    '<calibration>') for a missing or unreadable file, a missing, extra,
    misshapen or mistyped array, no samples, or non-finite values."""
    if isinstance(calibration, (str, os.PathLike)):
        where = os.fspath(calibration)
        arrays = _read_npz(where)
    else:
        where = source or "<calibration>"
        if not isinstance(calibration, Mapping):
            raise _error(f"calibration data is a {type(calibration).__name__}, not an .npz path "
                         f"or a {{input name: array}} dict", where)
        arrays = {str(key): np.asarray(value) for key, value in calibration.items()}
    specs = model_inputs(model)
    for info in model.graph.input:
        if info.type.HasField("tensor_type") and not info.type.tensor_type.HasField("shape") \
                and info.name in {spec.name for spec in specs}:
            raise _error(f"input '{info.name}' has no shape in the model; calibration samples "
                         f"need one to be checked against", where)
    takes = ", ".join(f"'{s.name}' ({s.dtype.name if s.dtype else '?'} {_expected(s)})"
                      for s in specs)
    if not arrays:
        raise _error(f"calibration data holds no arrays; the model takes {takes}", where)
    for spec in specs:
        if spec.name not in arrays:
            holds = ", ".join(f"'{key}'" for key in arrays)
            raise _error(f"calibration data has no array for input '{spec.name}' (it holds "
                         f"{holds}); the model takes {takes}", where)
    names = {spec.name for spec in specs}
    for key in arrays:
        if key not in names:
            raise _error(f"calibration array '{key}' names no input of the model; the model "
                         f"takes {takes}", where)
    counts = {}
    for spec in specs:
        if spec.dtype is None:
            raise _error(f"input '{spec.name}' is not a tensor of a numpy element type: it "
                         f"cannot be calibrated", where)
        counts[spec.name] = _samples(spec, arrays[spec.name], where)
    if len(set(counts.values())) > 1:
        held = ", ".join(f"'{name}' {count}" for name, count in counts.items())
        raise _error(f"calibration arrays hold different numbers of samples: {held}", where)
    count = next(iter(counts.values()), 0)
    samples = []
    for index in range(count):
        sample = {}
        for spec in specs:
            array = arrays[spec.name]
            if not spec.shape:
                sample[spec.name] = array[index]
            else:
                rows = spec.shape[0] or 1
                sample[spec.name] = np.ascontiguousarray(array[index * rows:(index + 1) * rows])
        samples.append(sample)
    return samples


@contextlib.contextmanager
def _quiet():
    """Silence onnxruntime's quantiser: its warnings (Python logging, its
    native logger) and the progress its calibrators print are not the user's
    business, and its failures reach the user as DiagnosticErrors."""
    import onnxruntime
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    onnxruntime.set_default_logger_severity(3)  # errors only
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        logging.disable(previous)
        onnxruntime.set_default_logger_severity(2)  # onnxruntime's default: warnings


def quantized_nodes(model: onnx.ModelProto) -> list[str]:
    """The nodes of a QDQ model that compute on quantised operands: every node
    but Q/DQ that reads a DequantizeLinear output."""
    dequantized = {out for node in model.graph.node if node.op_type == "DequantizeLinear"
                   for out in node.output}
    return [node.name or node.op_type for node in model.graph.node
            if node.op_type not in ("QuantizeLinear", "DequantizeLinear")
            and any(name in dequantized for name in node.input)]


def opset_13(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model at opset 13 at least: below it onnxruntime's quantiser
    writes per-channel DequantizeLinears (an axis, from opset 13) into an
    opset 11 model, which onnxruntime then refuses to run."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None or opset >= 13:
        return model
    try:
        return onnx.version_converter.convert_version(model, 13)
    except Exception as error:  # noqa: BLE001 - the converter raises several kinds
        raise DiagnosticError([Diagnostic(
            "error", f"the opset {opset} model cannot be converted to opset 13, "
            f"which per-channel int8 needs: {type(error).__name__}: {error}")]) from None


def _gemm_bias_as_vector(path: str) -> None:
    """A Gemm bias C of shape [1, N] (as skl2onnx writes an MLP's intercepts)
    saved as [N]: the same broadcast, and the shape onnxruntime's per-channel
    quantiser expects of a bias."""
    model = onnx.load(path)
    initializers = {i.name: i for i in model.graph.initializer}
    uses = {}
    for node in model.graph.node:
        for name in node.input:
            uses[name] = uses.get(name, 0) + 1
    changed = set()
    for node in model.graph.node:
        if node.op_type != "Gemm" or len(node.input) < 3:
            continue
        bias = initializers.get(node.input[2])
        if bias is not None and len(bias.dims) == 2 and bias.dims[0] == 1 \
                and uses[bias.name] == 1:
            bias.dims[:] = [bias.dims[1]]
            changed.add(bias.name)
    if changed:
        for info in list(model.graph.input) + list(model.graph.value_info):
            if info.name in changed:
                shape = info.type.tensor_type.shape
                if len(shape.dim) == 2:
                    shape.dim.pop(0)
        onnx.save(model, path)


def quantize_model(model: onnx.ModelProto, calibration, per_channel: bool = True,
                   method: str = "minmax", source: str | None = None,
                   nodes: list[str] | None = None) -> onnx.ModelProto:
    """The QDQ int8 form of fp32 `model`, calibrated on `calibration` (an .npz
    path or {input name: array}; see load_calibration) with `method`:
    minmax (the observed range), entropy (the range whose quantised
    histogram is closest, by KL divergence, to the observed one: outliers
    are clipped) or percentile (the range holding 99.999% of the values).
    `source` is the model's file name, where errors about the model are
    located. `nodes` names the nodes to quantise (default: all that
    onnxruntime quantises). Raises DiagnosticError."""
    from .precision import is_quantized

    where = source or "<onnx>"
    if method not in METHODS:
        raise _error(f"unknown calibration method '{method}' (one of {', '.join(METHODS)})",
                     where)
    if is_quantized(model):
        raise _error("the model is already quantised; quantisation takes an fp32 model", where)
    samples = load_calibration(calibration, model)
    try:
        import onnxruntime.quantization as ort_quantization
        from onnxruntime.quantization import calibrate
        from onnxruntime.quantization.shape_inference import quant_pre_process
    except ImportError as error:
        raise _error(f"quantisation needs onnxruntime (pip install onnxruntime): {error}",
                     where) from None
    calibration_method = {"minmax": ort_quantization.CalibrationMethod.MinMax,
                          "entropy": ort_quantization.CalibrationMethod.Entropy,
                          "percentile": ort_quantization.CalibrationMethod.Percentile}[method]

    class Reader(ort_quantization.CalibrationDataReader):
        def __init__(self):
            self.position = 0

        def get_next(self):
            if self.position == len(samples):
                return None
            self.position += 1
            return samples[self.position - 1]

        def rewind(self):
            self.position = 0

        def __len__(self):
            return len(samples)

    with tempfile.TemporaryDirectory(prefix="atvoss-quantize-") as directory, _quiet():
        original = os.path.join(directory, "model.onnx")
        prepared = os.path.join(directory, "prepared.onnx")
        ranges = os.path.join(directory, "ranges.json")
        output = os.path.join(directory, "model.qdq.onnx")
        onnx.save(opset_13(model) if per_channel else model, original)
        # onnxruntime's recommended preparation: ONNX shape inference gives the
        # quantiser every tensor's type and shape (a tensor of unknown shape is
        # not quantised) and its basic optimisations fold BatchNormalization
        # into Conv weights, so the folded weights are quantised once. Its
        # symbolic shape inference (for symbolic dims, which the compiler does
        # not take anyway) would need sympy. A model it cannot prepare is
        # quantised as given.
        try:
            quant_pre_process(original, prepared, skip_symbolic_shape=True)
        except Exception:
            pass
        if not os.path.exists(prepared):
            prepared = original
        _gemm_bias_as_vector(prepared)
        options = dict(quant_format=ort_quantization.QuantFormat.QDQ, per_channel=per_channel,
                       activation_type=ort_quantization.QuantType.QUInt8,
                       weight_type=ort_quantization.QuantType.QInt8,
                       calibrate_method=calibration_method, nodes_to_quantize=nodes,
                       extra_options={"WeightSymmetric": True, "ActivationSymmetric": False})
        cached = _takes_ranges(ort_quantization.quantize_static, calibrate)

        def quantize(nodes_to_exclude=None):
            if nodes_to_exclude:
                options["nodes_to_exclude"] = nodes_to_exclude
            if cached:
                ort_quantization.quantize_static(prepared, output, None,
                                                 calibration_cache_path=ranges, **options)
            else:
                ort_quantization.quantize_static(prepared, output, Reader(), **options)
            return onnx.load(output)
        try:
            if cached:
                # quantize_static calibrates entropy on 128 histogram bins, which
                # leaves it a single candidate range: the full one, as minmax.
                # Calibrating here on 2048 bins (TensorRT's choice) makes it clip.
                calibrator = calibrate.create_calibrator(
                    prepared, augmented_model_path=os.path.join(directory, "augmented.onnx"),
                    calibrate_method=calibration_method, providers=["CPUExecutionProvider"],
                    extra_options={"num_bins": 2048} if method == "entropy" else {})
                calibrator.collect_data(Reader())
                calibrate.save_tensors_data(calibrator.compute_data(), ranges)
                del calibrator
            quantized = quantize()
            unrepresentable = _without_int8_step(quantized)
            if unrepresentable:   # their readers and writers stay in float
                quantized = quantize(_nodes_touching(prepared, unrepresentable))
        except Exception as error:
            raise _error(f"onnxruntime's quantiser failed: {type(error).__name__}: {error}",
                         where) from None
    # onnxruntime's optimiser imports every domain it knows; keep those in use.
    used = {node.domain for node in quantized.graph.node} | {"", "ai.onnx"}
    kept = [opset for opset in quantized.opset_import if opset.domain in used]
    del quantized.opset_import[:]
    quantized.opset_import.extend(kept)
    return quantized


def _without_int8_step(quantized: onnx.ModelProto) -> set[str]:
    """The tensors onnxruntime's quantiser gave a scale that is not finite and
    positive: an attention mask's bias of -inf has a range no 8-bit step spans
    (the compiler refuses such a QuantizeLinear)."""
    from onnx import numpy_helper
    scales = {t.name: t for t in quantized.graph.initializer}
    found = set()
    for node in quantized.graph.node:
        if node.op_type == "QuantizeLinear" and len(node.input) > 1 \
                and node.input[1] in scales:
            scale = numpy_helper.to_array(scales[node.input[1]])
            if not (np.isfinite(scale).all() and (scale > 0).all()):
                found.add(node.input[0])
    return found


def _nodes_touching(path: str, tensors: set[str]) -> list[str]:
    """The names of the nodes of the model at `path` that read or write one of
    `tensors`, naming those without a name (the quantiser excludes by name)."""
    model = onnx.load(path)
    names = []
    for number, node in enumerate(model.graph.node):
        if tensors & (set(node.input) | set(node.output)):
            node.name = node.name or f"unnamed_{number}_{node.op_type}"
            names.append(node.name)
    onnx.save(model, path)
    return names


def _takes_ranges(quantize_static, calibrate) -> bool:
    """Whether this onnxruntime's quantize_static takes ranges computed
    beforehand (its calibration cache, which onnxruntime 1.32 has)."""
    import inspect
    return ("calibration_cache_path" in inspect.signature(quantize_static).parameters
            and hasattr(calibrate, "save_tensors_data"))
