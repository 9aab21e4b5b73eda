"""The atvoss-mlir simulator: runs npu programs with real numerics and a
cycle/SRAM model of the machine described by an `NpuTarget`.

    from atvoss_mlir.sim import simulate
    result = simulate(text, [a, b], target="npu -dataflow=os")   # text, bytecode or ir.Module
    result.outputs, result.report["total_cycles"]

Inputs and outputs: the entry's memref arguments are DRAM buffers (SRAM ones,
memory space 1, are placed first-fit in SRAM), filled from
`inputs` (a list in argument order, or a dict with keys "arg0", "arg1", ... or
ints); missing inputs are random (seeded). The outputs are the function's
results; a function without results (destination-passing style) returns the
final value of each of its memref arguments instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from mlir import ir
from mlir.dialects.transform import interpreter as transform_interpreter

from atvoss_mlir.diagnostics import Diagnostic, DiagnosticError, diagnostics_of, error_at
from atvoss_mlir.limits import check_program
from atvoss_mlir.passes.npu_decompose_linalg import DECOMPOSITIONS
from atvoss_mlir.target import DEFAULT_TARGET, NpuTarget, parse_target

from .interpreter import HANDLERS, TERMINATORS, Translator
from .machine import Machine, OpInfo
from .ops_linalg import needs_generalizing
from .report import build_report, chrome_trace, format_table, to_json
from .ops_builtin import float_rounder
from .ops_memref import memory_space
from .values import (DRAM, SRAM, Buffer, MemRef, identity_strides, numpy_dtype,
                     unsupported_element)

__all__ = ["simulate", "SimResult", "random_inputs", "DiagnosticError"]


@dataclass
class SimResult:
    outputs: list
    report: dict
    trace_events: list | None = None
    engines: list = field(default_factory=list)
    target: NpuTarget = DEFAULT_TARGET

    @property
    def total_cycles(self) -> int:
        return self.report["total_cycles"]

    def table(self) -> str:
        return format_table(self.report)

    def json(self) -> str:
        return to_json(self.report)

    def chrome_trace(self) -> dict:
        if self.trace_events is None:
            raise ValueError("simulate(..., trace=True) records the trace")
        return chrome_trace(self.trace_events, self.engines, self.target)


def _parse(program):
    """A module from an ir.Module, MLIR text or MLIR bytecode (bytes)."""
    if isinstance(program, ir.Module):
        return program
    from atvoss_mlir.artifact import parse_program
    from atvoss_mlir.context import make_context
    return parse_program(program, make_context())


def _ops_to_generalize(module: ir.Module) -> list:
    """The linalg ops no handler runs as they are, outermost only (linalg.index
    and linalg.yield belong to the body of the op that holds them)."""
    found = []

    def visit(op):
        parent = op.parent
        if op.name.startswith("linalg.") and op.name not in TERMINATORS \
                and not (parent is not None and parent.name.startswith("linalg.")) \
                and needs_generalizing(op):
            found.append(op)
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    return found


# Ops tagged with this attribute are generalized (the tag goes with them).
_GENERALIZE_TAG = "atvoss.generalize"
_GENERALIZE = """
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %ops = transform.structured.match attributes{TAG} in %root
        : (!transform.any_op) -> !transform.any_op
    %generic = transform.structured.generalize %ops : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
""".replace("TAG", _GENERALIZE_TAG)


def _prepared(module: ir.Module) -> ir.Module:
    """The module to interpret: linalg ops without a handler for their form
    generalized to linalg.generic (on a copy: the caller's module is left as
    it was). Ops that are not structured ops are refused at their location."""
    ops = _ops_to_generalize(module)
    if not ops:
        return module
    for op in ops:
        if op.name in DECOMPOSITIONS:
            raise error_at(op.location, f"'{op.name}' is not a structured op: the fallback "
                           f"engine runs it once decomposed on tensors (npu-decompose-linalg, "
                           f"part of the npu pipeline)")
    copy = ir.Module.parse(module.operation.get_asm(enable_debug_info=True))
    for op in _ops_to_generalize(copy):
        op.attributes[_GENERALIZE_TAG] = ir.UnitAttr.get()
    script = ir.Module.parse(_GENERALIZE)
    try:
        transform_interpreter.apply_named_sequence(copy.operation, script.body.operations[0], script)
    except ir.MLIRError as failure:
        raise DiagnosticError(diagnostics_of(failure)) from None
    except ValueError as failure:  # the transform's own diagnostics are in the text
        raise error_at(ops[0].location, f"cannot generalize '{ops[0].name}' for the fallback "
                       f"engine: {' '.join(str(failure).split())}") from None
    return copy


def _entry_function(module: ir.Module, entry: str | None):
    funcs = [op for op in module.body.operations if op.operation.name == "func.func"
             and op.regions[0].blocks]
    names = [ir.StringAttr(op.attributes["sym_name"]).value for op in funcs]
    if entry in names:
        return funcs[names.index(entry)]
    if entry in (None, "main") and len(funcs) == 1:
        return funcs[0]
    wanted = f"'{entry}'" if entry else "'main'"
    raise DiagnosticError([Diagnostic(
        "error", f"no entry function {wanted} in the module (functions: {', '.join(names)})")])


def random_inputs(module_or_text, entry: str | None = "main", seed: int = 0) -> list:
    """Random arguments for the entry function (floats in [-1, 1), int8 in full range)."""
    module = _parse(module_or_text)
    with module.context:
        func = _entry_function(module, entry)
        arg_types = list(ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
                         .inputs)
        rng = np.random.default_rng(seed)
        return [_random_value(func, i, type_, rng) for i, type_ in enumerate(arg_types)]


def _random_value(func, index: int, type_: ir.Type, rng):
    if not isinstance(type_, ir.MemRefType):
        raise error_at(func.location, f"argument #{index} of type {type_} needs an input value")
    memref = ir.MemRefType(type_)
    if not memref.has_static_shape:
        raise error_at(func.location, f"argument #{index} has a dynamic shape: give an input")
    dtype = numpy_dtype(memref.element_type)
    if dtype is None:
        raise error_at(func.location, f"argument #{index}: "
                       f"{unsupported_element(memref.element_type)}")
    shape = list(memref.shape)
    if dtype.kind == "f":
        return rng.uniform(-1.0, 1.0, shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(dtype)
    if dtype.itemsize == 1:
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max + 1, shape).astype(dtype)
    return rng.integers(-64, 64, shape).astype(dtype)


def _argument(func, index: int, type_: ir.Type, value, machine: Machine, info: OpInfo):
    """The run-time value of one entry argument: a scalar, or a memref whose
    buffer is in DRAM (or placed first-fit in SRAM for an SRAM argument)."""
    if not isinstance(type_, ir.MemRefType):
        if value is None:
            raise error_at(func.location, f"argument #{index} of type {type_} needs an input value")
        if isinstance(type_, (ir.IntegerType, ir.IndexType)):
            return int(value)
        return float_rounder(type_)(float(value))
    dtype = numpy_dtype(type_.element_type)
    if dtype is None:
        raise error_at(func.location, f"argument #{index}: "
                       f"{unsupported_element(type_.element_type)}")
    dynamic = ir.ShapedType.get_dynamic_size()
    if value is None:  # timing-only without inputs: shapes suffice
        if not type_.has_static_shape:
            raise error_at(func.location, f"argument #{index} has a dynamic shape: give an input")
        shape = list(type_.shape)
    else:
        value = np.asarray(value)
        shape = list(value.shape)
        if len(shape) != type_.rank or any(s != dynamic and s != n
                                           for s, n in zip(type_.shape, shape)):
            raise error_at(func.location, f"argument #{index} expects shape "
                           f"{'x'.join('?' if s == dynamic else str(s) for s in type_.shape)}, "
                           f"the input has shape {'x'.join(map(str, shape))}")
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if memory_space(type_) == SRAM:
        buffer = machine.sram_alloc(info, nbytes, None, f"arg{index}")
        buffer.written = None  # holds the input
    else:
        buffer = Buffer(nbytes, DRAM, f"arg{index}", numerics=machine.numerics)
        buffer.touched = np.zeros(nbytes, np.uint8)
    memref = MemRef(buffer, dtype, shape, identity_strides(shape))
    if machine.numerics:
        memref.array()[...] = value.astype(dtype, copy=False)
    return memref


def _input_list(inputs, count: int) -> list:
    if inputs is None:
        return [None] * count
    if isinstance(inputs, dict):
        values = [None] * count
        for key, value in inputs.items():
            index = key if isinstance(key, int) else int(str(key).removeprefix("arg"))
            if not 0 <= index < count:
                raise DiagnosticError([Diagnostic("error", f"input '{key}' names no argument "
                                                  f"(the entry has {count})")])
            values[index] = value
        return values
    values = list(inputs)
    if len(values) != count:
        raise DiagnosticError([Diagnostic(
            "error", f"the entry takes {count} arguments, {len(values)} inputs were given")])
    return values


def simulate(module_or_text, inputs=None, target: NpuTarget | str | None = DEFAULT_TARGET,
             entry: str | None = "main", timing_only: bool = False, seed: int = 0,
             trace: bool = False, filename: str = "-") -> SimResult:
    """Run the entry function on the simulated NPU; returns outputs and a report.

    Raises DiagnosticError (located at the offending op) for malformed programs,
    hazards, SRAM errors and ops without a handler.
    """
    if not isinstance(target, NpuTarget):
        target = parse_target(target)
    module = _parse(module_or_text)
    with module.context, ir.Location.unknown():
        module = _prepared(module)
        func = _entry_function(module, entry)
        refused = check_program(module, func, timing_only)
        if refused:  # before any buffer is allocated
            raise error_at(*refused)
        name = ir.StringAttr(func.attributes["sym_name"]).value
        function_type = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
        arg_types = list(function_type.inputs)
        values = _input_list(inputs, len(arg_types))
        if not timing_only and any(v is None for v in values):
            rng = np.random.default_rng(seed)
            values = [_random_value(func, i, t, rng) if v is None else v
                      for i, (t, v) in enumerate(zip(arg_types, values))]
        machine = Machine(target, numerics=not timing_only, trace=[] if trace else None,
                          filename=filename)
        info = OpInfo("func.func", func.location, filename)
        args = [_argument(func, i, t, v, machine, info)
                for i, (t, v) in enumerate(zip(arg_types, values))]
        translator = Translator(module, machine)
        results = translator.function(name, func.location).call(args)
        total_cycles = machine.now

    machine.flush_touches()
    memref_args = [a for a in args if isinstance(a, MemRef)]
    masks = [a.buffer.touched for a in memref_args if a.buffer.touched is not None]
    compulsory = sum(int(np.count_nonzero(m & 1)) for m in masks)
    # Constants (memref.global: the weights) are read from DRAM at least once.
    compulsory += sum(int(np.count_nonzero(b.touched & 1)) for b in machine.dram_globals)
    if results:
        compulsory += sum(r.nbytes for r in results if isinstance(r, MemRef))
        finals = results
    else:
        compulsory += sum(int(np.count_nonzero(m & 2)) for m in masks)
        finals = memref_args
    outputs = [(np.array(v.array()) if not timing_only else None) if isinstance(v, MemRef)
               else np.asarray(v) for v in finals]
    report = build_report(machine, entry=name, total_cycles=total_cycles,
                          compulsory_dram_bytes=compulsory)
    return SimResult(outputs, report, machine.trace, list(machine.engine_free), target)
