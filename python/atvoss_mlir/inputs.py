"""Checking the inputs a user gives a compiled model (`CompiledModel.run(dict)`,
`atvoss run --inputs x.npz`, the ONNX backend) against what the model takes.

Every mistake is an error naming the input, its expected shape and element
type, and what was given: an unknown or missing name, an array of strings or
objects, another element type, another shape. One conversion is accepted, with
a note: an array of a narrower type of the same kind (float16 for a float32
input, int32 for an int64 one) is widened, which is exact for every value.
Python scalars and lists, which have no element type of their own, are
converted to the input's type when every value is exactly representable.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx

from .diagnostics import Diagnostic, DiagnosticError, SourcePosition


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple[int | None, ...]   # None: a dynamic dimension
    dtype: np.dtype | None          # None: an element type numpy cannot hold

    def describe(self) -> str:
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        return f"{_type_name(self.dtype)} of shape [{dims}]"


def _type_name(dtype: np.dtype | None) -> str:
    return "an unsupported element type" if dtype is None else np.dtype(dtype).name


def _given(value) -> str:
    """What the user gave, in the words of the messages."""
    if isinstance(value, (np.ndarray, np.generic)):
        kind = value.dtype.kind
        if kind in "US":
            return f"an array of strings ({value.dtype.str}) of shape {list(value.shape)}"
        if kind == "O":
            return f"an array of Python objects of shape {list(value.shape)}"
        article = "an" if value.dtype.name.startswith("i") else "a"
        return f"{article} {value.dtype.name} array of shape {list(value.shape)}"
    return f"a {type(value).__name__}"


def onnx_input_spec(info: onnx.ValueInfoProto) -> InputSpec:
    """The spec of an ONNX graph input (tensors; other types have no dtype)."""
    if not info.type.HasField("tensor_type"):
        return InputSpec(info.name, (), None)
    tensor_type = info.type.tensor_type
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type))
    except (KeyError, ValueError, TypeError):
        dtype = None
    shape = tuple(d.dim_value if d.HasField("dim_value") else None
                  for d in tensor_type.shape.dim)
    return InputSpec(info.name, shape, dtype)


def function_input_specs(function, names: list[str]) -> list[InputSpec]:
    """The specs of an entry function's arguments (memrefs or tensors), by name."""
    from mlir import ir
    from .sim.values import numpy_dtype
    types = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value).inputs
    specs = []
    with function.context:
        for name, type_ in zip(names, types):
            if isinstance(type_, ir.ShapedType):
                shaped = ir.ShapedType(type_)
                dynamic = ir.ShapedType.get_dynamic_size()
                shape = tuple(None if d == dynamic else d for d in shaped.shape)
                specs.append(InputSpec(name, shape, numpy_dtype(shaped.element_type)))
            else:  # a scalar argument
                specs.append(InputSpec(name, (), numpy_dtype(type_)))
    return specs


def _error(message: str, source: str | None) -> DiagnosticError:
    position = SourcePosition(source, 1, 1) if source else None
    return DiagnosticError([Diagnostic("error", message, position=position)])


def _expected(spec: InputSpec) -> str:
    return f"input '{spec.name}' expects {spec.describe()}"


def _convert(spec: InputSpec, value, source: str | None, notes: list[Diagnostic]) -> np.ndarray:
    """`value` as an array of the spec's type and shape, or an error."""
    if not isinstance(value, (np.ndarray, np.generic)):
        try:
            raw = np.asarray(value)
        except (ValueError, TypeError):
            raise _error(f"{_expected(spec)}, given {_given(value)} that is not an "
                         f"array", source) from None
        if raw.dtype.kind not in "biuf" or spec.dtype is None:
            raise _error(f"{_expected(spec)}, given {_given(value)} holding "
                         f"{_given(raw)}", source)
        with np.errstate(all="ignore"):
            converted = raw.astype(spec.dtype)
            exact = np.array_equal(converted.astype(raw.dtype), raw)
        if not exact:
            raise _error(f"{_expected(spec)}, given {_given(value)} of {raw.dtype.name} "
                         f"values that {spec.dtype.name} cannot all hold exactly", source)
        value = converted
    array = np.asarray(value)
    if spec.dtype is None:
        raise _error(f"{_expected(spec)}: the simulator cannot hold this element type", source)
    if array.dtype != spec.dtype:
        if not _widens(array.dtype, spec.dtype):
            raise _error(f"{_expected(spec)}, given {_given(array)}", source)
        notes.append(Diagnostic("note", f"input '{spec.name}': {array.dtype.name} widened to "
                                f"{spec.dtype.name} (exact)", position=SourcePosition(
                                    source, 1, 1) if source else None))
        array = array.astype(spec.dtype)
    if len(array.shape) != len(spec.shape) or any(
            d is not None and d != n for d, n in zip(spec.shape, array.shape)):
        raise _error(f"{_expected(spec)}, given {_given(array)}", source)
    return array


def _widens(given: np.dtype, expected: np.dtype) -> bool:
    """A conversion exact for every value of `given`, within one kind of number."""
    same_kind = given.kind == expected.kind or (given.kind == "u" and expected.kind == "i")
    return same_kind and given.kind in "iuf" and np.can_cast(given, expected, casting="safe")


def check_inputs(specs: list[InputSpec], given: dict, source: str | None = None,
                 require_all: bool = True) -> tuple[dict[str, np.ndarray], list[Diagnostic]]:
    """The given inputs (name -> value), checked and converted: (arrays by
    name, notes). `source` names where they came from (an .npz file) in the
    diagnostics. Nothing else than the specs may be given, and every spec
    unless `require_all` is false (npu programs in destination-passing style
    take their output buffers as arguments)."""
    by_name = {spec.name: spec for spec in specs}
    unknown = [name for name in given if name not in by_name]
    if unknown:
        takes = ", ".join(f"'{s.name}' ({s.describe()})" for s in specs) or "no inputs"
        raise _error(f"unknown input(s) {', '.join(repr(n) for n in unknown)}: the model "
                     f"takes {takes}", source)
    missing = [spec for spec in specs if spec.name not in given]
    if missing and require_all:
        raise _error("missing input(s) " + ", ".join(
            f"'{s.name}' ({s.describe()})" for s in missing), source)
    notes: list[Diagnostic] = []
    arrays = {spec.name: _convert(spec, given[spec.name], source, notes) for spec in specs
              if spec.name in given}
    return arrays, notes
