"""The pipelined tile loop of npu-promote-to-sram (pipeline-stages = S >= 2).

Every tile that changes has S SRAM buffers; tile t uses buffer (t / period) % S.
Loads run S-1 tiles ahead of compute, and nothing waits for a DMA before the
tile that needs it:

    prologue:     load tile 0 (and the resident tiles), wait; load tiles 1..S-2
    iteration t:  npu.barrier {engines = "compute"}   compute(t-1) is done, so
                  store(t-1)                          its output can leave and
                  load(t+S-1)                         its input buffers refill
                  npu.wait tile t's loads, the previous iteration's store
                  compute(t)

A compute that ends on the vector unit (the requantisation of an int8 conv or
matmul, one reduction step per tile) issues its matrix op first, so that it
runs during the previous tile's epilogue:

    iteration t:  npu.barrier {engines = "matrix"}    matmul(t-1) is done:
                  load(t+S-1) of the matmul's operands   its buffers refill
                  npu.wait tile t's loads
                  matmul(t)
                  npu.barrier {engines = "vector"}    epilogue(t-1) is done:
                  store(t-1), load(t+S-1) of the      its output leaves, the
                  epilogue's operands                 scales and skip refill
                  npu.wait the previous iteration's store
                  epilogue(t)
    epilogue:     npu.barrier {engines = "compute"}, npu.wait on the tokens the
                  loop carries out (its last store), store the last tile

The tokens of the loads in flight (S-1 per operand) and of the last store are
loop-carried values (`scf.for` iter_args); an iteration that loads nothing
passes its newest token on, and waiting again on a finished DMA costs nothing.
So the DMAs of the next S-1 tiles overlap the compute of this one, and a long
transfer may span several iterations.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import scf

from ..dialects import npu
from ..recipes.loops import with_iter_args
from ..recipes.prologue import PROLOGUE
from ..recipes.tile_ir import add, both, compare, sub, when, when_yielding


class Pipeline:
    def __init__(self, program, groups: dict, output_period, first: dict):
        """`groups`: reuse period -> roles of the changing loaded operands;
        `first`: role -> token of tile 0's load (already waited)."""
        self.program = program
        self.stages = program.stages
        self.groups = groups
        self.output_period = output_period
        self.roles = [role for roles in groups.values() for role in roles]
        self.first = first
        # Stores overlap the next compute unless the output is loaded too: its
        # next tile's load must not overwrite a buffer a store still reads.
        self.carries_store = bool(first) and not program.problem.loads(program.problem.output) \
            and not program.problem.output.resident

    def prologue(self) -> dict:
        """Load tiles 1..S-2 without waiting; role -> tokens of tiles 0..S-2."""
        program = self.program
        ahead = {role: [self.first[role]] for role in self.roles}
        for u in range(1, self.stages - 1):
            for period, roles in self.groups.items():
                loaded = program.load(roles, u, wait=False) \
                    if u < program.iterations and u % period == 0 else {}
                for role in roles:
                    ahead[role].append(loaded.get(role, ahead[role][-1]))
        return ahead

    def emit(self) -> None:
        program = self.program
        ahead = self.prologue()
        inits = [token for role in self.roles for token in ahead[role]]
        if self.carries_store:
            inits.append(next(iter(self.first.values())))   # a finished DMA: no wait
        loop = program.loop = with_iter_args(program.loop, inits)
        carried = list(loop.regions[0].blocks[0].arguments)[1:]
        depth = self.stages - 1
        in_flight = {role: carried[i * depth:(i + 1) * depth] for i, role in enumerate(self.roles)}
        last_store = carried[-1] if self.carries_store else None
        t = loop.regions[0].blocks[0].arguments[0]
        with ir.InsertionPoint(program.op):
            if program.has_vector_epilogue():
                store, loaded = self.emit_overlapped(t, in_flight, last_store)
            else:
                npu.BarrierOp(engines="compute")
                store = self.store_previous(t, last_store)
                loaded = self.load_ahead(t, in_flight)
                npu.WaitOp([in_flight[role][0] for role in self.roles] +
                           ([last_store] if last_store is not None else []))
                program.copy_kept_tiles(t)
                matrix = program.recipe.matrix_unit
                if not matrix:
                    self.input_prologue(t, in_flight)
                program.compute(t)
                if matrix:
                    self.input_prologue(t, {role: tokens[1:] + [loaded[role]]
                                            for role, tokens in in_flight.items()}, ahead=True)
            program.refill_padding(t)
        with ir.InsertionPoint(loop.regions[0].blocks[0]):
            scf.YieldOp([token for role in self.roles for token in in_flight[role][1:] +
                         [loaded[role]]] + ([store] if store is not None else []))

    def emit_overlapped(self, t, in_flight: dict, last_store):
        """Iteration t of a tile program whose compute ends on the vector unit
        (an int8 op's requantisation). Two barriers, each on one unit: the
        matrix one lets the operands only the matmul reads refill as soon as
        the matmul of tile t-1 ends; the vector one, after the matmul of tile
        t is issued, waits for the epilogue of tile t-1 (and hence for its
        matmul, which the epilogue reads), so the matmul of tile t overlaps it.
        (store, loaded) as in `emit`."""
        program = self.program
        epilogue_reads = program.epilogue_reads()
        # A padded window's halo is refilled on the vector unit after the epilogue.
        late = [role for role in self.roles
                if role in epilogue_reads or program.staged[role].operand.pad_value is not None]
        early = [role for role in self.roles if role not in epilogue_reads]
        npu.BarrierOp(engines="matrix")
        loaded = self.load_ahead(t, in_flight, [role for role in self.roles if role not in late])
        if early:
            npu.WaitOp([in_flight[role][0] for role in early])
        issued = {}

        def before_epilogue():
            npu.BarrierOp(engines="vector")
            issued["store"] = self.store_previous(t, last_store)
            loaded.update(self.load_ahead(t, in_flight, late))
            # The epilogue's tiles, and tile t's output buffer (stored from t-2).
            waited = [in_flight[role][0] for role in self.roles if role in epilogue_reads] + \
                ([last_store] if last_store is not None else [])
            if waited:
                npu.WaitOp(waited)
        program.copy_kept_tiles(t)
        program.compute(t, before_epilogue)
        return issued["store"], loaded

    def input_prologue(self, t, in_flight: dict, ahead: bool = False) -> None:
        """In iteration t, the prologue folded into the op on the input of tile
        u = t (t+1 when `ahead`), once its loads are done (`in_flight`: role ->
        the tokens of tiles u, u+1, ...). A matrix op's is tile t+1's, after
        compute(t): the vector unit runs it beside the matmul, and the loads of
        the next tiles do not wait for it. A vector op's (a pool's) is tile t's,
        right before its compute: the unit runs one after the other anyway.
        Tile 0's comes before the loop."""
        program = self.program
        period = program.prologue_period()
        if period is None:
            return
        u = add(t, 1) if ahead else t

        def run():
            tokens = [in_flight[role][0] for role in
                      ["input"] + program.problem.details[PROLOGUE].roles if role in in_flight]
            if tokens:
                npu.WaitOp(tokens)
            program.prologue_at(u)
        first = compare("ult", u, program.iterations) if ahead else compare("ne", t, 0)
        when(both(first, program.changes_at(period, u)), run)

    def store_previous(self, t, last_store):
        """Store tile t-1 when the output tile changes at t; the store's token
        (or the previous one) when stores are carried."""
        if self.output_period is None:
            return last_store
        program = self.program
        changed = both(compare("ne", t, 0), program.changes_at(self.output_period, t))
        if last_store is None:
            when(changed, lambda: program.store(sub(t, 1)))
            return None
        return when_yielding(changed, lambda: [program.store(sub(t, 1), wait=False)],
                             [last_store])[0]

    def load_ahead(self, t, in_flight: dict, only=None) -> dict:
        """Start the loads of tile t+S-1 (of the roles in `only`, when given);
        role -> its token (or the newest one)."""
        program = self.program
        later = add(t, self.stages - 1)
        exists = compare("ult", later, program.iterations)
        loaded = {}
        for period, roles in self.groups.items():
            roles = [role for role in roles if only is None or role in only]
            if not roles:
                continue
            tokens = when_yielding(
                both(exists, program.changes_at(period, later)),
                lambda roles=roles: list(program.load(roles, later, wait=False).values()),
                [in_flight[role][-1] for role in roles])
            loaded.update(zip(roles, tokens))
        return loaded
