"""npu-share-concatenations: a concatenation that extends an earlier one
writes into the same buffer; a piece made long before its concatenation is
inserted where it is made.

Runs on tensors, right before bufferization. A concatenation is a chain of
`tensor.insert_slice` ops filling a `tensor.empty` along one dim. When its
first piece (at offset 0) is itself such a concatenation along the same dim
- DenseNet's dense block: each layer's input is Concat(previous input, new
features) - bufferization gives each its own buffer and copies the whole
earlier concatenation into it, so a block of n layers moves O(n^2) bytes.
The same for a concatenation whose first pieces are an earlier one's, at the
same offsets (torchvision's DenseNet: each layer's input is the Concat of the
block's input and all the features so far).
Here the chain of concatenations becomes one tensor of the last one's shape:
the first one's pieces are inserted into it, each later one inserts only its
new pieces, and every earlier concatenation is read as the slice of the
channels it had (an extract_slice: a strided view after bufferization, no
copy).

eliminate-empty-tensors then makes each piece's producer write its slice,
when the insert's destination comes before the piece's own tensor. A U-Net's
skip tensor is made long before the concatenation that reads it: its insert,
into the result of the insert before it, comes too late, and bufferization
copies it (through DRAM). So the inserts of a concatenation larger than the
SRAM are rebuilt in the order their pieces are made, each right after its
piece, into a tensor.empty made before the first piece's own tensor. (One
that fits the SRAM is left to the buffer plan, which may keep it there with
its pieces copied into it from SRAM.)
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import tensor

from ..frontend.builders import empty, element_of, extract_slice, shape_of
from ..recipes.ir_queries import latest
from ..recipes.tile_ir import static
from . import ModulePass, PassContext, function_bodies, tensor_bytes


@dataclass
class Concatenation:
    value: ir.Value         # the last insert_slice's result
    inserts: list           # first to last
    empty: ir.Operation
    dim: int

    @property
    def pieces(self) -> list:
        """(value, offsets, sizes) of each piece, in program order."""
        return [(insert.operands[0], static(insert, "static_offsets"),
                 static(insert, "static_sizes")) for insert in self.inserts]


def concatenation(value: ir.Value) -> Concatenation | None:
    """`value` as a concatenation: insert_slice ops with static offsets and unit
    strides, each but the last used only by the next, filling a tensor.empty
    that only the first reads along one dim, without gap or overlap."""
    inserts = []
    current = value
    while isinstance(current, ir.OpResult) and current.owner.name == "tensor.insert_slice":
        insert = current.owner
        if len(insert.operands) != 2 or any(s != 1 for s in static(insert, "static_strides")):
            return None
        if inserts and len(list(current.uses)) != 1:
            return None
        inserts.append(insert.operation)
        current = insert.operands[1]
    if len(inserts) < 2 or not (isinstance(current, ir.OpResult)
                                and current.owner.name == "tensor.empty"
                                and len(list(current.uses)) == 1):
        return None
    inserts.reverse()
    shape = shape_of(value)
    dims = {d for insert in inserts for d, (offset, size) in enumerate(zip(
        static(insert, "static_offsets"), static(insert, "static_sizes")))
        if offset != 0 or size != shape[d]}
    if len(dims) != 1:
        return None
    dim = dims.pop()
    end = 0
    for offset, size in sorted((static(insert, "static_offsets")[dim],
                                static(insert, "static_sizes")[dim]) for insert in inserts):
        if offset != end:
            return None
        end += size
    return Concatenation(value, inserts, current.owner.operation, dim) \
        if end == shape[dim] else None


def extended(concat: Concatenation) -> Concatenation | None:
    """The concatenation `concat`'s first piece is, along the same dim, when
    that piece is its first channels (offset 0)."""
    first_insert = concat.inserts[0]
    if static(first_insert, "static_offsets")[concat.dim] != 0:
        return None
    first = concatenation(first_insert.operands[0])
    return first if first is not None and first.dim == concat.dim else None


def piece_keys(concat: Concatenation) -> tuple:
    """(dim, value, offset, size) of each piece, in the order of their offsets."""
    return tuple(sorted(((concat.dim, value, offsets[concat.dim], sizes[concat.dim])
                         for value, offsets, sizes in concat.pieces), key=lambda k: k[2]))


def prefix_of(concat: Concatenation, by_pieces: dict) -> Concatenation | None:
    """The longest other concatenation of the same first pieces, at the same
    offsets: torchvision's DenseNet concatenates all the features made so far
    anew for each layer (Concat(f0, ..., fk)), not the previous Concat and fk."""
    keys = piece_keys(concat)
    for length in range(len(keys) - 1, 1, -1):
        earlier = by_pieces.get(keys[:length])
        if earlier is not None:
            return earlier
    return None


def chains(body: ir.Block) -> list:
    """Chains of concatenations, first to last, each extending the one before
    (and the only one extending it)."""
    found = {}
    for op in body.operations:
        op = op.operation
        if op.name == "tensor.insert_slice":
            concat = concatenation(op.results[0])
            if concat is not None:
                found[concat.value] = concat
    previous, extenders = {}, {}
    by_pieces = {piece_keys(concat): concat for concat in found.values()}
    for concat in found.values():
        earlier = extended(concat)
        if earlier is None or earlier.value not in found:
            earlier = prefix_of(concat, by_pieces)
        if earlier is not None and earlier.value in found:
            previous[concat.value] = found[earlier.value]
            extenders.setdefault(earlier.value, []).append(concat.value)
    # One buffer cannot hold two different extensions of the same one.
    for later in extenders.values():
        if len(later) > 1:
            for value in later:
                del previous[value]
    extended_values = {earlier.value for earlier in previous.values()}
    result = []
    for value, concat in found.items():
        if value in extended_values or value not in previous:
            continue   # not the last of a chain of two or more
        chain = [concat]
        while chain[-1].value in previous:
            chain.append(previous[chain[-1].value])
        result.append(chain[::-1])
    return result


def share(chain: list) -> None:
    """Rewrite `chain` (first to last) as inserts into one tensor of the last
    one's shape; each earlier one's other readers read its slice of it."""
    last = chain[-1]
    with chain[0].empty.location, ir.InsertionPoint(chain[0].empty):
        shared = empty(shape_of(last.value), element_of(last.value))
    for index, concat in enumerate(chain):
        # Those the one before inserted (itself, or its own pieces) are in already.
        start = 0 if index == 0 else shape_of(chain[index - 1].value)[concat.dim]
        pieces = [piece for piece in concat.pieces if piece[1][concat.dim] >= start]
        anchor = concat.inserts[-1]
        with anchor.location, ir.InsertionPoint(anchor):
            for value, offsets, sizes in pieces:
                shared = tensor.InsertSliceOp(value, shared, [], [], [], offsets, sizes,
                                              [1] * len(sizes)).result
            if concat is last:
                replacement = shared
            else:
                size = shape_of(concat.value)
                replacement = extract_slice(shared, [0] * len(size), size)
        link = None if concat is last else chain[index + 1].inserts[0].operation
        readers = [(use.owner.operation, use.operand_number) for use in concat.value.uses
                   if link is None or use.owner.operation != link]
        for reader, number in readers:
            reader.operands[number] = replacement
    for concat in reversed(chain):
        for insert in reversed(concat.inserts):
            insert.erase()
        concat.empty.erase()


def defined_at(value: ir.Value, position: dict) -> int:
    """The position in the body of the op defining `value` (-1: an argument)."""
    return position[value.owner.operation] if isinstance(value, ir.OpResult) else -1


def origin(value: ir.Value) -> ir.Operation:
    """The first op of the chain of destinations that makes `value`: the
    tensor.empty a linalg op's result is written into, through the ops
    writing into its init in turn (a conv into its bias's broadcast)."""
    op = value.owner.operation
    while op.name.startswith("linalg.") and op.operands and isinstance(
            op.operands[len(op.operands) - 1], ir.OpResult):
        init = op.operands[len(op.operands) - 1].owner.operation
        if init.block != op.block:
            break
        op = init
    return op


def insert_as_produced(concat: Concatenation, body: ir.Block) -> bool:
    """Rebuild the inserts of `concat` in the order its pieces are made, each
    right after its piece: bufferization then computes every piece in its
    slice (eliminate-empty-tensors replaces a piece's empty tensor by a slice
    of the insert's destination, which must come before it). Returns whether
    the order changed."""
    position = {op.operation: index for index, op in enumerate(body.operations)}
    made = [piece for piece in concat.pieces if defined_at(piece[0], position) >= 0]
    if not made:
        return False   # the function's arguments: nothing to compute in place
    in_order = sorted(made, key=lambda piece: defined_at(piece[0], position))
    if in_order == made and position[concat.empty] < defined_at(in_order[0][0], position):
        return False
    pieces = [piece for piece in concat.pieces if piece not in made] + in_order
    if concat.empty.operands:
        return False   # (dynamic sizes: computed where they are)
    concat.empty.move_before(origin(in_order[0][0]))
    current = concat.empty.results[0]
    for value, offsets, sizes in pieces:
        after = latest([v.owner.operation for v in (value, current)
                        if isinstance(v, ir.OpResult)])
        with after.location, ir.InsertionPoint.after(after):
            current = tensor.InsertSliceOp(value, current, [], [], [], offsets, sizes,
                                           [1] * len(sizes)).result
    concat.value.replace_all_uses_with(current)
    for insert in reversed(concat.inserts):
        insert.erase()
    return True


@dataclass(frozen=True)
class NpuShareConcatenations(ModulePass):
    argument = "npu-share-concatenations"
    summary = "Write a chain of concatenations into one tensor; insert pieces where they are made"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            for body in function_bodies(module):
                for chain in chains(body):
                    saved = sum(tensor_bytes(concat.value) or 0 for concat in chain[:-1])
                    context.diagnostics.remark(
                        chain[-1].inserts[-1].location, f"{len(chain)} concatenations, each "
                        f"extending the one before, write into one tensor: the earlier ones "
                        f"are its slices ({saved} B not copied again)")
                    share(chain)
                found = [concatenation(op.results[0]) for op in body.operations
                         if op.operation.name == "tensor.insert_slice"]
                # Only one larger than the SRAM: the buffer plan may keep a
                # smaller one there, its pieces copied into it from SRAM.
                for concat in [concat for concat in found if concat is not None and
                               tensor_bytes(concat.value) > context.target.max_sram_bytes]:
                    location = concat.inserts[-1].location
                    if insert_as_produced(concat, body):
                        context.diagnostics.remark(
                            location, "concatenation: each piece inserted where it is made, "
                            "so that it is computed in its slice")
