"""Elementwise ops on the vector unit: linalg.generic with parallel loops and
a body of vector-unit steps, the named binary ops (linalg.add, ...) and
linalg.broadcast, as a chain of npu.elementwise / npu.activation on SRAM
tiles. Inputs indexed by a projected identity map are broadcast: their tile
keeps the output's rank with unit dims. An input or output indexed by a
permutation of the loops (a layout transform folded into the op by
npu-fold-transposes) keeps its own layout in SRAM: its tile is transposed on
the vector unit after the load or before the store, never through DRAM."""

from __future__ import annotations

import dataclasses
import math

from mlir import ir

from ..dialects import npu
from .problem import (INIT_ATTR, VECTOR_TYPES, LoopDim, OperandTile, Recipe, Tiled, TilingProblem,
                      Unsupported, Whole, Window, element_bytes, indexing_maps, ins_outs, is_reduction,
                      is_resident, static_shape, type_name, vector_cycles, vector_kind_cycles)
from .sram_ops import full_rank_view, in_sram, largest_sizes, scratch, sram_buffer, view_sizes
from .tile_ir import static, subview
from .vector_body import body_program
from .vector_steps import (COMMUTATIVE, FLOAT_TYPES, SWAPPED, ActivationStep, BinaryStep,
                           CompareStep, CopyStep, QuantizedAddStep, QuantizeStep, Ref,
                           SelectStep, numbered, step_constants, step_types, with_epilogues)

NAMED_BINARY = {"linalg.add": "add", "linalg.sub": "sub", "linalg.mul": "mul",
                "linalg.max": "max", "linalg.min": "min"}


def elementwise_dims(shape: list[int]) -> list[LoopDim]:
    """Leading dims are tiled freely; the last one stays whole when it can."""
    return [LoopDim(f"d{i}", n, candidates="rows" if i < len(shape) - 1 else "array")
            for i, n in enumerate(shape)]


def broadcast_region(affine_map: ir.AffineMap, shape: list[int]):
    """The operand region of an input indexed by a projected identity map
    (broadcasting drops dims, never permutes), where a unit dim of the operand
    may also be indexed by the constant 0 (`(i, j) -> (i, 0)`); or None."""
    positions, region = [], []
    for expr, size in zip(affine_map.results, shape):
        if isinstance(expr, ir.AffineConstantExpr) and expr.value == 0 and size == 1:
            region.append(Whole(1))
            continue
        if not isinstance(expr, ir.AffineDimExpr):
            return None
        positions.append(expr.position)
        region.append(Tiled(expr.position))
    if positions != sorted(positions) or len(set(positions)) != len(positions):
        return None
    return tuple(region)


def permutation_of(affine_map: ir.AffineMap) -> list[int] | None:
    """The loop of each result of a map that permutes the loops out of order, or None."""
    positions = [expr.position for expr in affine_map.results
                 if isinstance(expr, ir.AffineDimExpr)]
    if len(positions) != affine_map.n_dims or len(affine_map.results) != affine_map.n_dims \
            or sorted(positions) != list(range(affine_map.n_dims)) \
            or positions == sorted(positions):
        return None
    return positions


def loops_of(affine_map: ir.AffineMap) -> list[int] | None:
    """The loop of each result of an identity or permutation map, else None."""
    if affine_map == ir.AffineMap.get_identity(affine_map.n_dims):
        return list(range(affine_map.n_dims))
    return permutation_of(affine_map)


def is_broadcast(affine_map: ir.AffineMap) -> bool:
    return affine_map != ir.AffineMap.get_identity(affine_map.n_dims) \
        and permutation_of(affine_map) is None


def static_slice(value: ir.Value):
    """(source, offsets, sizes) of a static unit-stride memref.subview that keeps
    the rank, else None."""
    if not (isinstance(value, ir.OpResult) and value.owner.name == "memref.subview"
            and len(value.owner.operands) == 1):
        return None
    view = value.owner
    offsets, sizes = static(view, "static_offsets"), static(view, "static_sizes")
    if any(o == ir.ShapedType.get_dynamic_stride_or_offset() for o in offsets) \
            or any(s != 1 for s in static(view, "static_strides")) \
            or len(sizes) != ir.MemRefType(value.type).rank:
        return None
    return view.operands[0], offsets, sizes


def shift_of(affine_map: ir.AffineMap):
    """(dim, k) when the map is the identity but for one result `d + k`, k > 0."""
    found = None
    for position, expr in enumerate(affine_map.results):
        if isinstance(expr, ir.AffineDimExpr) and expr.position == position:
            continue
        if found is None and isinstance(expr, ir.AffineAddExpr) \
                and isinstance(expr.lhs, ir.AffineDimExpr) and expr.lhs.position == position \
                and isinstance(expr.rhs, ir.AffineConstantExpr) and expr.rhs.value > 0:
            found = (position, expr.rhs.value)
            continue
        return None
    return found if len(affine_map.results) == affine_map.n_dims else None


def shared_windows(inputs, maps) -> dict:
    """input number -> (owner, dim, shift, kernel, window): the inputs reading one
    view at shifts along a loop dim (npu-share-input-windows), with the
    identity-indexed input viewing that view's first slice. The first of them
    (the owner) loads the window; the others compute on views of its tile."""
    shifted = {}
    for number, (value, affine_map) in enumerate(zip(inputs, maps)):
        shift = shift_of(affine_map)
        if shift is not None:
            shifted.setdefault(value, []).append((number, *shift))
    found = {}
    for window, members in shifted.items():
        if len({dim for _, dim, _ in members}) != 1:
            raise Unsupported("an input read at shifts along several dims")
        dim = members[0][1]
        group = [(number, shift) for number, _, shift in members]
        union = static_slice(window)
        for number, (value, affine_map) in enumerate(zip(inputs, maps)):
            first = static_slice(value)
            if affine_map == ir.AffineMap.get_identity(affine_map.n_dims) and union \
                    and first and first[0] == union[0] and first[1] == union[1]:
                group.insert(0, (number, 0))
                break
        kernel = max(shift for _, shift in group) + 1
        for number, shift in group:
            found[number] = (group[0][0], dim, shift, kernel, window)
    return found


def binary_op(step: BinaryStep, lhs, rhs, result, epilogue: ActivationStep | None = None):
    """The npu.elementwise of a binary step, with the activation step after it
    as its epilogue when given (with_epilogues)."""
    if epilogue is None:
        return npu.ElementwiseOp(lhs, rhs, result, step.kind)
    return npu.ElementwiseOp(lhs, rhs, result, step.kind, activation=epilogue.kind,
                             clip_min=epilogue.clip_min, clip_max=epilogue.clip_max)


def step_cycles(steps, elements: int, target) -> int:
    """The vector-unit cycles of a chain of steps on tiles of `elements` (a
    number, or an array of them)."""
    if not steps:
        return vector_cycles(elements, target)
    # An epilogue rides on the step before it.
    return sum(vector_cycles(elements, target, step.passes) if hasattr(step, "passes") else
               vector_kind_cycles(getattr(step, "kind", "none"), elements, target)
               for _, step, _ in with_epilogues(steps))


def elementwise_problem(op, target) -> TilingProblem:
    inputs, outputs = ins_outs(op)
    if len(outputs) != 1:
        raise Unsupported("more than one output")
    out = outputs[0]
    out_shape = static_shape(out, "output")
    rank = len(out_shape)
    out_loops = list(range(rank))
    if op.name in NAMED_BINARY:
        steps = [BinaryStep(NAMED_BINARY[op.name], Ref("in", 0), Ref("in", 1), Ref("tmp", 0))]
        maps = [ir.AffineMap.get_identity(rank)] * 2
    else:
        all_maps = indexing_maps(op)
        out_loops = loops_of(all_maps[-1])
        if out_loops is None:
            raise Unsupported("a linalg.generic whose output map is neither the identity "
                              "nor a permutation")
        maps = all_maps[:-1]
        steps = body_program(op.regions[0].blocks[0], len(inputs))
    # The loops' sizes: the output's, in loop order.
    shape = [out_shape[out_loops.index(d)] for d in range(rank)]
    transposed = int(out_loops != list(range(rank)))
    element = type_name(out)
    compares = len(steps) == 1 and isinstance(steps[0], CompareStep)
    # i1 results: a comparison's mask, or masks combined by selects.
    masks = all(isinstance(step, (CompareStep, SelectStep)) for step in steps)
    if element not in VECTOR_TYPES and not (masks and element == "i1"):
        raise Unsupported(f"element type {element} on the vector unit")
    converts = steps == [CopyStep(Ref("in", 0))] and len(inputs) == 1 \
        and {type_name(inputs[0]), element} <= set(FLOAT_TYPES) - {"f64"}
    # A quantisation step checked its own types (quantized_body.quantization_step).
    converts = converts or any(isinstance(step, (QuantizeStep, QuantizedAddStep))
                               for step in steps)
    conditions = {s.condition.value for s in steps if isinstance(s, SelectStep)}
    windows = shared_windows(inputs, maps) if op.name == "linalg.generic" else {}
    operands = []
    for i, (value, affine_map) in enumerate(zip(inputs, maps)):
        if not isinstance(value.type, ir.MemRefType):
            raise Unsupported("a scalar input")
        shape_in = static_shape(value, f"input #{i}")
        expected = "i1" if i in conditions else type_name(inputs[0]) if compares else element
        if type_name(value) != expected and not converts:
            raise Unsupported("inputs and output of different element types")
        if compares and expected not in VECTOR_TYPES:
            raise Unsupported(f"a comparison of {expected} on the vector unit")
        if i in windows:
            operands.append(window_operand(i, windows[i], rank))
            continue
        region = broadcast_region(affine_map, shape_in)
        if region is None and permutation_of(affine_map) is not None:
            region = tuple(Tiled(d) for d in permutation_of(affine_map))
            transposed += 1
        if region is None:
            raise Unsupported(f"input #{i} is neither broadcast nor a permutation of the loops")
        operands.append(OperandTile(f"in{i}", value, region))
    operands.append(OperandTile("output", out, tuple(Tiled(d) for d in out_loops),
                                is_output=True))
    steps = check_broadcasts(steps, {i for i, m in enumerate(maps)
                                     if is_broadcast(m) and i not in windows})
    n_steps = max(1, len(steps))
    constants = step_constants(steps)
    dims = elementwise_dims(shape)

    # Scratch tiles hold the steps' results: f32 between a dequantisation and
    # a quantisation to an i8 output.
    scratch_bytes = max([element_bytes(operands[-1].element_type)] + [
        element_bytes(name) for name in step_types(steps, [type_name(v) for v in inputs],
                                                element)[:-1]])

    def temporaries(t):
        alignment = target.sram_alignment
        tile_bytes = -(-math.prod(t) * scratch_bytes // alignment) * alignment
        # A scratch tile per step but the last, and per tile transposed in SRAM.
        return (max(0, n_steps - 1) + transposed) * tile_bytes \
            + len(constants) * target.sram_alignment
    return TilingProblem(op, ELEMENTWISE, dims, operands,
                         lambda t: step_cycles(steps, math.prod(t), target)
                         + transposed * vector_cycles(math.prod(t), target),
                         temporaries, {"steps": steps})


def window_operand(number: int, shared, rank: int) -> OperandTile:
    """Input `number` of a shared window: the owner's tile is the window (of the
    whole view, along its dim), the others are views of it."""
    owner, dim, shift, kernel, window = shared
    if number != owner:
        return OperandTile(f"in{number}", window, tuple(Tiled(d) for d in range(rank)),
                           shift=shift, window_owner=f"in{owner}")
    size = ir.MemRefType(window.type).shape[dim]
    region = tuple(Window(d, 1, 1, kernel, 0, size) if d == dim else Tiled(d)
                   for d in range(rank))
    return OperandTile(f"in{number}", window, region, shift=shift)


def check_broadcasts(steps, broadcast_inputs: set[int]) -> list:
    """npu.elementwise broadcasts only its rhs; a broadcast lhs must be swappable,
    or be a subtraction's: b - x becomes (-x) + b, the same value (IEEE
    subtraction adds the negation). Returns the steps."""
    def broadcast(ref):
        return ref.source == "in" and ref.value in broadcast_inputs
    checked = []
    for step in steps:
        step = dataclasses.replace(step)
        if isinstance(step, (BinaryStep, CompareStep)):
            if broadcast(step.lhs):
                full_rhs = step.rhs.source == "tmp" or (step.rhs.source == "in"
                                                        and not broadcast(step.rhs))
                if isinstance(step, CompareStep) and full_rhs:
                    step.kind = SWAPPED[step.kind]
                    step.lhs, step.rhs = step.rhs, step.lhs
                elif step.kind in COMMUTATIVE and full_rhs:
                    step.lhs, step.rhs = step.rhs, step.lhs
                elif isinstance(step, BinaryStep) and step.kind == "sub" and full_rhs:
                    # A name no step has; `numbered` gives it its place.
                    negated = Ref("tmp", -1 - len(checked))
                    checked.append(ActivationStep("neg", step.rhs, negated))
                    step = BinaryStep("add", negated, step.lhs, step.result)
                else:
                    raise Unsupported("a broadcast left operand of a non-commutative op")
            if broadcast(step.lhs):
                raise Unsupported("an elementwise op between two broadcast operands")
        elif isinstance(step, ActivationStep) and broadcast(step.source):
            raise Unsupported("an activation of a broadcast operand")
        elif isinstance(step, QuantizeStep) and broadcast(step.source):
            # npu.requantize / npu.dequantize write a tile of their input's shape
            raise Unsupported("a quantisation of a broadcast operand")
        checked.append(step)
    return numbered(checked)


def broadcast_problem(op, target) -> TilingProblem:
    """linalg.broadcast, and linalg.copy (a broadcast that adds no dims): each
    tile is loaded, copied on the vector unit, and stored."""
    (source,), (out,) = ins_outs(op)
    added = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"])) \
        if op.name == "linalg.broadcast" else []
    shape = static_shape(out, "output")
    static_shape(source, "input")
    if type_name(source) not in VECTOR_TYPES:
        raise Unsupported(f"element type {type_name(source)} on the vector unit")
    if type_name(source) != type_name(out):
        raise Unsupported("input and output of different element types")
    kept = [d for d in range(len(shape)) if d not in added]
    operands = [OperandTile("in0", source, tuple(Tiled(d) for d in kept)),
                OperandTile("output", out, tuple(Tiled(d) for d in range(len(shape))),
                            is_output=True)]
    steps = [CopyStep(Ref("in", 0))]  # the lowering keeps the input tile at the output's rank
    return TilingProblem(op, ELEMENTWISE, elementwise_dims(shape), operands,
                         lambda t: vector_cycles(math.prod(t), target), details={"steps": steps})


class ElementwiseRecipe(Recipe):
    name = "elementwise"
    # linalg.copy: a DRAM copy (npu-convert-copies), or on SRAM tiles the
    # widening/rounding of fp32 accumulators.
    ops = ("linalg.generic", "linalg.broadcast", "linalg.copy", *NAMED_BINARY)

    def recognises(self, op) -> bool:
        return not is_reduction(op)

    def problem(self, op, target) -> TilingProblem:
        build = broadcast_problem if op.name in ("linalg.broadcast", "linalg.copy") \
            else elementwise_problem
        return build(op, target)

    def broadcast_inputs(self, problem) -> bool:
        return True

    def on_sram_tiles(self, compute, problem) -> None:
        """Inputs of a shared window compute on views of its tile at their shift:
        on SRAM tiles they are indexed by the identity."""
        if not any(operand.shift for operand in problem.operands):
            return
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(compute.attributes["indexing_maps"])]
        maps = [ir.AffineMap.get_identity(m.n_dims) if shift_of(m) is not None else m
                for m in maps]
        compute.attributes["indexing_maps"] = ir.ArrayAttr.get(
            [ir.AffineMapAttr.get(m) for m in maps])

    def rewrite(self, op, rewriter):
        """A chain of npu.elementwise / npu.activation, each step but the last
        into a scratch tile; scalar constants live in one-element buffers."""
        operation = op.operation
        operands = list(operation.operands)
        out = operands[-1]
        if not in_sram(out) or INIT_ATTR in operation.attributes or is_reduction(operation):
            return True
        rank = ir.MemRefType(out.type).rank
        maps = [ir.AffineMap.get_identity(rank)] * len(operands)
        if operation.name in ("linalg.broadcast", "linalg.copy"):
            steps = [CopyStep(Ref("in", 0))]
        elif operation.name in NAMED_BINARY:
            steps = [BinaryStep(NAMED_BINARY[operation.name], Ref("in", 0), Ref("in", 1),
                                Ref("tmp", 0))]
        else:
            steps = body_program(operation.regions[0].blocks[0], len(operands) - 1)
            maps = indexing_maps(operation)
            steps = check_broadcasts(steps, {i for i, m in enumerate(maps[:-1])
                                             if is_broadcast(m)})
        element_type = ir.MemRefType(out.type).element_type
        # The steps run on tiles in loop order; a permuted output is transposed last.
        out_loops = loops_of(maps[-1])
        # Scratch tiles at the output tile's size: its view's, when static (a
        # tensor kept in SRAM, computed on in place through a strided view, is
        # not as large as the buffer it is a view of), else its tile buffer's;
        # a tile of a kept tensor written in place, at its largest.
        out_type = ir.MemRefType(out.type)
        out_shape = out_type.shape if out_type.has_static_shape \
            else ir.MemRefType(sram_buffer(out).type).shape
        if not out_type.has_static_shape and is_resident(out):
            out_shape = largest_sizes(out) or out_shape
        tile_shape = [out_shape[out_loops.index(d)] for d in range(rank)]
        with rewriter.ip, op.location:
            constants, results, transposed = {}, [], {}
            out_sizes = view_sizes(out)
            sizes = [out_sizes[out_loops.index(d)] for d in range(rank)]

            def loop_order_tile(element):
                return subview(scratch(op, tile_shape, element), [0] * rank, sizes)
            types = [ir.Type.parse(name) for name in step_types(
                steps, [type_name(v) for v in operands[:-1]], str(element_type))]
            # Scalar constants: one-element buffers of the type of the op's
            # values they combine with (a comparison's inputs, not its i1 mask).
            for constant, number in step_constants(steps, numbers=True):
                constant_type = ir.MemRefType(operands[0].type).element_type \
                    if isinstance(steps[number], CompareStep) else types[number]
                # rank 0 for a scalar op (numpy rules)
                constants[constant] = scratch(op, [1] if rank else [], constant_type, constant)

            def value(ref: Ref):
                if ref.source == "in":
                    loops = permutation_of(maps[ref.value])
                    if loops is None:
                        return full_rank_view(operands[ref.value])
                    if ref.value not in transposed:  # into loop order, once
                        view = operands[ref.value]
                        transposed[ref.value] = loop_order_tile(
                            ir.MemRefType(view.type).element_type)
                        npu.TransposeOp(view, transposed[ref.value],
                                        [loops.index(d) for d in range(rank)])
                    return transposed[ref.value]
                if ref.source == "const":
                    return constants[ref.value]
                return results[ref.value]
            # An activation of a binary step's result is that npu.elementwise's
            # epilogue: it writes where the activation would have.
            for number, step, epilogue in with_epilogues(steps):
                last = number + (epilogue is not None) == len(steps) - 1
                result = out if last and out_loops == list(range(rank)) else \
                    loop_order_tile(types[number])
                if isinstance(step, BinaryStep):
                    binary_op(step, value(step.lhs), value(step.rhs), result, epilogue)
                elif isinstance(step, ActivationStep):
                    npu.ActivationOp(value(step.source), result, step.kind,
                                     clip_min=step.clip_min, clip_max=step.clip_max)
                elif isinstance(step, CompareStep):
                    npu.CompareOp(value(step.lhs), value(step.rhs), result, step.kind)
                elif isinstance(step, QuantizedAddStep):
                    npu.QuantizedAddOp(value(step.lhs), value(step.rhs), result, step.lhs_scale,
                                       step.rhs_scale, step.offset, step.input_shift,
                                       step.zero_point)
                elif isinstance(step, QuantizeStep) and step.kind == "dequantize":
                    npu.DequantizeOp(value(step.source), result, step.scale, step.zero_point)
                elif isinstance(step, QuantizeStep):
                    npu.RequantizeOp(value(step.source), result, step.scale, step.zero_point,
                                     scales=value(step.scales) if step.scales else None,
                                     divide=True if step.kind == "quantize" else None,
                                     offset=step.offset or None)
                elif isinstance(step, SelectStep):
                    npu.SelectOp(value(step.condition), value(step.on_true),
                                 value(step.on_false), result)
                else:  # a copy, broadcasting the input over the tile
                    source = value(step.source)
                    if ir.MemRefType(source.type).shape == ir.MemRefType(result.type).shape:
                        npu.ActivationOp(source, result, "none")
                    else:
                        npu.FillOp(result, 0.0)
                        npu.ElementwiseOp(result, source, result, "add")
                results.append(result)
                if epilogue is not None:   # later steps read the epilogue's number
                    results.append(result)
            if results[-1] != out:
                npu.TransposeOp(results[-1], out, out_loops)
        rewriter.erase_op(op.operation)


ELEMENTWISE = ElementwiseRecipe()
