"""Resource limits, checked from estimates before the work starts.

A model or program too large for this machine is refused with the estimate
and the limit, located where the size comes from, instead of running until
the operating system kills the process:

- the ONNX importer adds up the bytes of every tensor of the graph (inputs,
  initializers, each node's outputs from ONNX shape inference) and refuses
  at the node where the total passes the memory limit;
- the simulator adds up the DRAM buffers it would allocate (entry arguments,
  memref.alloc, memref.global) and the ops it would execute (static loop trip
  counts) and refuses above the memory or the op limit.

Limits: `ATVOSS_MEMORY_LIMIT` (bytes; suffixes K, M, G, T as powers of 1024
are accepted) defaults to half the machine's memory, at most 8 GiB;
`ATVOSS_OP_LIMIT` (ops the simulator executes) defaults to 10^7: the
simulator executes about 250 K ops a second (a conv over a batch of 10^6
images, 2.9 * 10^7 ops, took two minutes), the largest zoo program
(DenseNet-121) about 10^5.
"""

from __future__ import annotations

import os
import re

GiB = 1 << 30
DEFAULT_MEMORY_LIMIT = 8 * GiB
DEFAULT_OP_LIMIT = 10 ** 7
_SUFFIXES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class LimitError(ValueError):
    pass


def parse_bytes(text: str) -> int:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not match:
        raise LimitError(f"expected a byte count such as 8G or 1048576, got '{text}'")
    return int(float(match.group(1)) * _SUFFIXES[match.group(2).upper()])


def _machine_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def memory_limit() -> int:
    text = os.environ.get("ATVOSS_MEMORY_LIMIT")
    if text:
        return parse_bytes(text)
    machine = _machine_memory()
    return min(DEFAULT_MEMORY_LIMIT, machine // 2) if machine else DEFAULT_MEMORY_LIMIT


def op_limit() -> int:
    text = os.environ.get("ATVOSS_OP_LIMIT")
    if text:
        try:
            return int(float(text))
        except ValueError:
            raise LimitError(f"ATVOSS_OP_LIMIT expects a number, got '{text}'") from None
    return DEFAULT_OP_LIMIT


def format_bytes(count: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size:
            if count // size >= 10 ** 300:   # past what a float holds: its power of ten
                return f"about 10^{len(str(count // size)) - 1} {unit}"
            return f"{count / size:.3g} {unit}"
    return f"{count} B"


def format_limit(limit: int) -> str:
    return f"{format_bytes(limit)} (set ATVOSS_MEMORY_LIMIT to change it)"


# -- ONNX models ------------------------------------------------------------------------

def _element_bytes(elem_type: int) -> int:
    import onnx
    try:
        return max(1, onnx.helper.tensor_dtype_to_np_dtype(elem_type).itemsize)
    except (KeyError, ValueError, TypeError):
        return 4


def onnx_tensor_check(model, inferred: dict[str, list[int]], limit: int | None = None):
    """None if the graph's tensors fit `limit`, else (node index or None,
    message) for the first graph input or node whose tensors pass it."""
    limit = memory_limit() if limit is None else limit
    graph = model.graph
    elem_types = {info.name: info.type.tensor_type.elem_type
                  for info in list(graph.input) + list(graph.output) + list(graph.value_info)}
    total = 0
    seen = set()
    for init in graph.initializer:
        seen.add(init.name)
        total += _count(init.dims) * _element_bytes(init.data_type)
    for info in graph.input:
        if info.name in seen:
            continue
        seen.add(info.name)
        dims = [d.dim_value for d in info.type.tensor_type.shape.dim]
        size = _count(dims) * _element_bytes(info.type.tensor_type.elem_type)
        total += size
        if total > limit:
            return None, (f"graph input '{info.name}' ({'x'.join(map(str, dims))}) needs "
                          f"{format_bytes(size)}; with the weights the model needs "
                          f"{format_bytes(total)} of tensors, above the memory limit of "
                          f"{format_limit(limit)}")
    for index, node in enumerate(graph.node):
        for name in node.output:
            shape = inferred.get(name)
            if not name or name in seen or shape is None:
                continue
            seen.add(name)
            size = _count(shape) * _element_bytes(elem_types.get(name, 1))
            total += size
            if total > limit:
                node_name = node.name or f"{node.op_type}_{index}"
                return index, (f"node '{node_name}' ({node.op_type}): output '{name}' "
                               f"({'x'.join(map(str, shape))}) needs {format_bytes(size)}; "
                               f"the model needs {format_bytes(total)} of tensors up to "
                               f"this node, above the memory limit of {format_limit(limit)}")
    return None


def folded_bytes(op_type: str, inputs: list) -> int | None:
    """Bytes (at 8 per element) a numpy fold of a node would create, for the op
    types whose output size follows from input values; None when unknown."""
    import math

    import numpy as np
    try:
        if op_type == "Range":
            start, limit, delta = (float(np.asarray(v).reshape(-1)[0]) for v in inputs[:3])
            return 8 * max(0, math.ceil((limit - start) / delta)) if delta else None
        if op_type == "ConstantOfShape":
            return 8 * _count(np.asarray(inputs[0]).reshape(-1).tolist())
        if op_type in ("Expand", "Tile"):
            data = np.asarray(inputs[0] if inputs[0] is not None else 0)  # shape unknown: ()
            sizes = np.asarray(inputs[1]).reshape(-1).tolist()
            if op_type == "Tile":
                return 8 * data.size * _count(sizes)
            rank = max(data.ndim, len(sizes))
            dims = [1] * (rank - data.ndim) + list(data.shape)
            sizes = [1] * (rank - len(sizes)) + sizes
            return 8 * _count(max(int(a), int(b)) for a, b in zip(dims, sizes))
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return None


VALUE_SIZED = ("Range", "ConstantOfShape", "Expand", "Tile")


def onnx_folding_check(model, limit: int | None = None):
    """None, or (node index, message) for the first node whose output size,
    given by small constant inputs (Range bounds, ConstantOfShape shapes...),
    passes the memory limit: checked before ONNX shape inference, whose data
    propagation would build such outputs."""
    from onnx import numpy_helper
    limit = memory_limit() if limit is None else limit
    graph = model.graph
    constants = {}
    for init in graph.initializer:
        if _count(init.dims) <= 64:
            try:
                constants[init.name] = numpy_helper.to_array(init)
            except Exception:  # noqa: BLE001 - a malformed tensor is diagnosed later
                pass
    for index, node in enumerate(graph.node):
        if node.op_type == "Constant":
            for attribute in node.attribute:
                if attribute.name == "value" and _count(attribute.t.dims) <= 64 and node.output:
                    try:
                        constants[node.output[0]] = numpy_helper.to_array(attribute.t)
                    except Exception:  # noqa: BLE001
                        pass
        if node.op_type not in VALUE_SIZED:
            continue
        inputs = [constants.get(name) for name in node.input]
        needed = folded_bytes(node.op_type, inputs)
        if needed is not None and needed > limit:
            node_name = node.name or f"{node.op_type}_{index}"
            return index, (f"node '{node_name}' ({node.op_type}): its output needs "
                           f"{format_bytes(needed)} (from its constant inputs), above the "
                           f"memory limit of {format_limit(limit)}")
    return None


def _count(dims) -> int:
    count = 1
    for d in dims:
        count *= max(int(d), 0)
    return count


# -- simulated programs ----------------------------------------------------------------------

def _constant_int(value) -> int | None:
    owner = value.owner
    if not hasattr(owner, "name") or owner.name != "arith.constant":
        return None
    try:
        return int(owner.attributes["value"].value)
    except (AttributeError, KeyError, TypeError, ValueError):
        return None


def _trip_count(op) -> int:
    """Iterations of an scf.for with constant bounds (1 when unknown)."""
    if op.name != "scf.for" or len(op.operands) < 3:
        return 1
    low, high, step = (_constant_int(v) for v in list(op.operands)[:3])
    if low is None or high is None or not step or step < 0:
        return 1
    return max(0, -(-(high - low) // step))


def _memref_bytes(memref_type) -> int:
    from mlir import ir
    if not isinstance(memref_type, ir.MemRefType) or not memref_type.has_static_shape:
        return 0
    space = memref_type.memory_space
    if space is not None and str(space) not in ("0", "0 : i64"):
        return 0  # SRAM: the target's capacity bounds it
    from .machine_model import element_bytes
    return _count(memref_type.shape) * (element_bytes(memref_type.element_type) or 8)


def program_estimate(module, func) -> dict:
    """DRAM bytes of the entry's arguments and of the buffers the program
    allocates, and the ops it executes (static trip counts; unknown trip
    counts count once), with the op contributing most of each."""
    from mlir import ir
    function_type = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    estimate = {"argument_bytes": sum(_memref_bytes(t) for t in function_type.inputs),
                "buffer_bytes": 0, "largest_buffer": None, "ops": 0, "busiest_op": None}
    largest = [0]
    for op in module.body.operations:
        if op.operation.name == "memref.global":
            size = _memref_bytes(ir.TypeAttr(op.attributes["type"]).value)
            estimate["buffer_bytes"] += size
            if size > largest[0]:
                largest[0], estimate["largest_buffer"] = size, op.location

    def visit(block, multiplier: int) -> int:
        executed = 0
        for op in block.operations:
            name = op.operation.name
            if name in ("memref.alloc", "memref.alloca"):
                size = _memref_bytes(op.results[0].type)
                estimate["buffer_bytes"] += size
                if size > largest[0]:
                    largest[0], estimate["largest_buffer"] = size, op.location
            inner = multiplier * _trip_count(op.operation)
            count = multiplier
            for region in op.operation.regions:
                for child in region.blocks:
                    count += visit(child, inner)
            executed += count
            if multiplier == 1 and count > busiest[0]:
                busiest[0], estimate["busiest_op"] = count, op.location
        return executed

    busiest = [0]
    for region in func.operation.regions:
        for block in region.blocks:
            estimate["ops"] += visit(block, 1)
    return estimate


def check_program(module, func, timing_only: bool, memory: int | None = None,
                  ops: int | None = None):
    """None if the simulation fits the limits, else (location, message)."""
    memory = memory_limit() if memory is None else memory
    ops = op_limit() if ops is None else ops
    estimate = program_estimate(module, func)
    needed = estimate["argument_bytes"] + (0 if timing_only else estimate["buffer_bytes"])
    if needed > memory:
        if timing_only or estimate["argument_bytes"] > memory:
            hint = ""
        else:
            hint = ("; --timing-only runs without the data (only the arguments' "
                    f"{format_bytes(estimate['argument_bytes'])} are kept)")
        where = estimate["largest_buffer"] if estimate["buffer_bytes"] > estimate[
            "argument_bytes"] and not timing_only else func.location
        return where, (f"the simulation needs {format_bytes(needed)} of DRAM buffers "
                       f"(arguments {format_bytes(estimate['argument_bytes'])}, buffers "
                       f"{format_bytes(0 if timing_only else estimate['buffer_bytes'])}), above "
                       f"the memory limit of {format_limit(memory)}{hint}")
    if estimate["ops"] > ops:
        return estimate["busiest_op"] or func.location, (
            f"the simulation would execute about {estimate['ops']:.3g} ops, above the limit of "
            f"{ops:.3g} (set ATVOSS_OP_LIMIT to change it)")
    return None
