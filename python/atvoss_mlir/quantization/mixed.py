"""-precision=mixed: each layer (Conv, MatMul, Gemm: the ops the matrix unit
runs faster in int8) in int8 or fp16, chosen from measurements.

1. Sensitivity: for each layer, the model with that layer alone in int8 (QDQ
   around it, the rest fp16) runs with onnxruntime on the calibration
   samples; its error is 1 - cosine of the outputs against the fp32 model's,
   the worst over the samples.
2. Cycles: the -precision=fp16 and -precision=int8 models compiled and
   simulated (timing only); a layer's cycles are its node's with the
   BatchNormalization/Relu/Clip chain that alone reads it (analysis.profile
   rolls cycles up per node).
3. Greedy: the layers int8 makes faster, by cycles saved per unit of error,
   each taken in int8 if the model with it and those already taken keeps
   the worst cosine >= -accuracy-budget (measured again: errors do not add
   exactly); a layer that breaks the budget stays fp16 and the next ones are
   still tried, since a less sensitive one may fit what is left.
4. The result is the fastest in the simulator of that model and the fp16 and
   int8 models, among those within the budget (the most accurate when none
   is): the per-layer model pays for the Casts, QuantizeLinears and
   DequantizeLinears where int8 meets fp16, which the layers' own cycles do
   not show, so int8 everywhere can be faster and within the budget.

The per-layer model is onnxruntime's QDQ model with only the chosen layers
quantised (the Relu/Clip after one is dropped; MaxPool, Reshape, ... right
after one run on its int8 tensor), every other node converted to fp16 by
`to_fp16`, and a Cast where an fp16 tensor meets a QuantizeLinear or a
DequantizeLinear meets an fp16 node. Scales stay float32.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from ..diagnostics import Diagnostic, DiagnosticError, SourcePosition
from .calibration import _quiet, load_calibration, opset_13, quantize_model
from .fp16 import to_fp16

LAYER_OPS = ("Conv", "MatMul", "Gemm")
# onnxruntime's quantiser takes these only when their input is quantised
# already: after an int8 layer they stay in int8 instead of crossing to fp16.
FOLLOWERS = ("Relu", "Clip", "MaxPool", "Reshape", "Transpose", "Flatten", "Squeeze",
             "Unsqueeze", "Slice")
# onnxruntime quantises these whatever their inputs: they are taken in int8
# only when every input they compute on comes out of int8 layers (a residual
# Add of two), which spares the Casts, DequantizeLinears and QuantizeLinears
# two int8 layers around an fp16 node would need.
JOINS = ("Add", "Mul", "Concat", "GlobalAveragePool", "AveragePool")
# Nodes whose cycles count as their layer's: folded into it (BatchNormalization)
# or into its requantisation (Relu, Clip) in int8.
EPILOGUES = ("BatchNormalization", "Relu", "Clip")
QDQ = ("QuantizeLinear", "DequantizeLinear")


@dataclass
class Layer:
    name: str
    op_type: str
    index: int | None           # position in the given model (its line in locations)
    error: float = 0.0          # 1 - worst cosine with this layer alone in int8
    fp16_cycles: int = 0
    int8_cycles: int = 0
    quantizable: bool = True    # onnxruntime's quantiser quantises it
    taken: bool = False         # by the greedy
    int8: bool = False          # in the result
    tried_cosine: float | None = None   # the model's when the greedy tried this layer

    @property
    def saved(self) -> int:
        return self.fp16_cycles - self.int8_cycles


@dataclass
class Candidate:
    name: str                   # "per layer", "int8" or "fp16"
    model: onnx.ModelProto
    cosine: float               # worst over the samples, vs fp32
    cycles: int | None = None


@dataclass
class MixedPrecision:
    model: onnx.ModelProto
    layers: list[Layer]
    chosen: Candidate
    candidates: list[Candidate]
    budget: float
    samples: int

    @property
    def cosine(self) -> float:
        return self.chosen.cosine

    def remarks(self, source: str | None = None) -> list[Diagnostic]:
        """One remark per layer (facts["node"] names it) and a summary."""
        where = source or "<onnx>"
        remarks = []
        for layer in self.layers:
            why = ""
            if not layer.quantizable:
                why = " (onnxruntime's quantiser leaves it in float)"
            elif not layer.int8 and layer.saved <= 0:
                why = " (int8 saves no cycles in its node)"
            elif not layer.int8 and layer.taken:
                why = " (taken by the greedy, whose model is not the fastest within the budget)"
            elif not layer.int8 and layer.tried_cosine is not None:
                why = f" (with it in int8 the cosine would be {layer.tried_cosine:.6f})"
            precision = "int8" if layer.int8 else "fp16"
            remarks.append(Diagnostic(
                "remark", f"-precision=mixed: {precision}{why}; error {layer.error:.2e} with this "
                f"layer alone in int8; {layer.int8_cycles} cycles in int8, {layer.fp16_cycles} in "
                f"fp16", position=None if layer.index is None else
                SourcePosition(where, layer.index + 1, 1),
                facts={"node": layer.name, "precision": precision, "error": layer.error,
                       "int8_cycles": layer.int8_cycles, "fp16_cycles": layer.fp16_cycles}))
        taken = sum(layer.int8 for layer in self.layers)
        if self.cosine < self.budget:
            how = f"no model is within the budget: the most accurate, the {self.chosen.name} one"
        elif self.chosen.name == "per layer":
            how = "chosen per layer"
        else:
            how = f"the -precision={self.chosen.name} model: the fastest within the budget"
        others = ", ".join(f"{c.name} {c.cycles} cycles, cosine {c.cosine:.6f}"
                           for c in self.candidates if c is not self.chosen)
        remarks.append(Diagnostic(
            "remark", f"-precision=mixed: {taken} of {len(self.layers)} layers in int8 ({how}); "
            f"{self.chosen.cycles} cycles; output cosine vs fp32 {self.cosine:.6f} (the worst "
            f"of {self.samples} calibration samples), budget {self.budget}"
            + (f"; against {others}" if others else ""),
            facts={"cosine": self.cosine, "budget": self.budget, "cycles": self.chosen.cycles}))
        return remarks


def mixed_precision(model: onnx.ModelProto, calibration, target,
                    source: str | None = None) -> onnx.ModelProto:
    """The model with each layer in int8 or fp16 (see choose_precision)."""
    return choose_precision(model, calibration, target, source).model


def choose_precision(model: onnx.ModelProto, calibration, target,
                     source: str | None = None) -> MixedPrecision:
    """The layers' precisions for `target.accuracy_budget` (the module
    docstring gives the algorithm), the model and the measurements behind
    the choice. `calibration`: an .npz path or {input name: samples}.
    Raises DiagnosticError."""
    model = _named(model)
    # Remarks point at the layers' lines in the given model; onnxruntime names
    # a node it fuses after the first one ('MatMul/MatMulAddFusion').
    lines = {node.name: index for index, node in enumerate(model.graph.node)}
    samples = load_calibration(calibration, model)
    evaluate = _Evaluator(model, samples)
    model = _prepared(opset_13(model))
    budget = target.accuracy_budget
    layers = [Layer(node.name, node.op_type,
                    lines.get(node.name, lines.get(node.name.rsplit("/", 1)[0])))
              for node in model.graph.node if node.op_type in LAYER_OPS]

    def build(names) -> tuple[onnx.ModelProto, float]:
        """The model with `names` in int8, the rest fp16, and its cosine."""
        try:
            built = _build(model, calibration, sorted(names), source)
        except DiagnosticError:
            raise
        except Exception as error:  # noqa: BLE001 - onnx raises several kinds
            raise DiagnosticError([Diagnostic(
                "error", f"-precision=mixed: the model with {len(names)} layer(s) in int8 and the "
                f"rest in fp16 cannot be built: {type(error).__name__}: {error}")]) from None
        return built, evaluate(built, f"the model with {len(names)} layer(s) in int8")

    fp16 = Candidate("fp16", *build([]))
    groups = _epilogues(model, [layer.name for layer in layers])
    fp16.cycles, by_layer = _cycles(fp16.model, groups, target)
    candidates = [fp16]
    if layers:
        int8_model = quantize_model(model, calibration, per_channel=True, source=source)
        int8 = Candidate("int8", int8_model, evaluate(int8_model, "the int8 model"))
        int8.cycles, int8_by_layer = _cycles(int8.model, groups, target)
        candidates.append(int8)
        for layer in layers:
            layer.fp16_cycles, layer.int8_cycles = by_layer[layer.name], int8_by_layer[layer.name]
            alone, cosine_alone = build([layer.name])
            layer.error = 1.0 - cosine_alone
            layer.quantizable = _dequantized_input(alone, layer.name)
        # Only the accepted model is kept: a large model's copies would not fit.
        chosen, accepted = [], None
        for layer in sorted((layer for layer in layers if layer.saved > 0 and layer.quantizable),
                            key=lambda layer: -layer.saved / max(layer.error, 1e-12)):
            trial, layer.tried_cosine = build(chosen + [layer.name])
            if layer.tried_cosine >= budget:
                chosen.append(layer.name)
                layer.taken = True
                accepted = Candidate("per layer", trial, layer.tried_cosine)
        if accepted is not None:
            accepted.cycles, _ = _cycles(accepted.model, {}, target)
            candidates.append(accepted)
    # The fastest within the budget, else the most accurate: then neither
    # fixed precision is both faster and more accurate than the result.
    within = [c for c in candidates if c.cosine >= budget]
    best = min(within, key=lambda c: (c.cycles, -c.cosine)) if within else \
        max(candidates, key=lambda c: c.cosine)
    for layer in layers:
        layer.int8 = best.name == "int8" or (best.name == "per layer" and layer.taken)
    return MixedPrecision(best.model, layers, best, candidates, budget, len(samples))


def _prepared(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model as onnxruntime's preparation for quantisation leaves it
    (quantize_model prepares it too): BatchNormalization folded into Conv,
    MatMul + Add fused into a Gemm named after the MatMul. Prepared here first,
    the layers have the names the quantiser selects them by."""
    from onnxruntime.quantization.shape_inference import quant_pre_process
    with tempfile.TemporaryDirectory(prefix="atvoss-mixed-") as directory, _quiet():
        original = os.path.join(directory, "model.onnx")
        prepared = os.path.join(directory, "prepared.onnx")
        onnx.save(model, original)
        try:
            quant_pre_process(original, prepared, skip_symbolic_shape=True)
        except Exception:  # noqa: BLE001 - quantize_model quantises such a model as given
            return model
        return onnx.load(prepared) if os.path.exists(prepared) else model


def _dequantized_input(model: onnx.ModelProto, name: str) -> bool:
    """Whether node `name` reads a DequantizeLinear's output."""
    producers = {out: node.op_type for node in model.graph.node for out in node.output}
    node = next((n for n in model.graph.node if n.name == name), None)
    return node is not None and bool(node.input) and \
        producers.get(node.input[0]) == "DequantizeLinear"


def _named(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy whose nodes all have distinct names: the quantiser selects
    nodes by name and the profile finds them by name."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    taken = set()
    for index, node in enumerate(copy.graph.node):
        name = node.name or f"{node.op_type}_{index}"
        while name in taken:
            name = f"{name}_{index}"
        node.name = name
        taken.add(name)
    return copy


class _Evaluator:
    """The worst cosine over the samples of a model's outputs against the
    fp32 model's, both run by onnxruntime."""

    def __init__(self, model: onnx.ModelProto, samples: list[dict]):
        self.samples = samples
        try:
            session = self._session(model)
            self.reference = [self._outputs(session, sample) for sample in samples]
        except Exception as error:  # noqa: BLE001 - onnxruntime raises several kinds
            raise DiagnosticError([Diagnostic(
                "error", f"-precision=mixed: onnxruntime cannot run the fp32 model: "
                f"{type(error).__name__}: {error}")]) from None

    @staticmethod
    def _session(model: onnx.ModelProto):
        from ..reference import reference_session
        return reference_session(model, quiet=True)

    @staticmethod
    def _outputs(session, sample) -> np.ndarray:
        return np.concatenate([np.asarray(value, np.float64).ravel()
                               for value in session.run(None, sample)])

    def __call__(self, model: onnx.ModelProto, what: str) -> float:
        try:
            session = self._session(model)
            return min(cosine(reference, self._outputs(session, sample))
                       for reference, sample in zip(self.reference, self.samples))
        except Exception as error:  # noqa: BLE001 - onnxruntime raises several kinds
            raise DiagnosticError([Diagnostic(
                "error", f"-precision=mixed: onnxruntime cannot run {what}: "
                f"{type(error).__name__}: {error}")]) from None


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    if norms == 0:
        return 1.0 if not a.any() and not b.any() else 0.0
    return float(np.dot(a, b) / norms)


def _build(model: onnx.ModelProto, calibration, int8_layers: list[str],
           source: str | None) -> onnx.ModelProto:
    """`model` with `int8_layers` in int8 and the rest in fp16."""
    if not int8_layers:
        return to_fp16(model)
    qdq = quantize_model(model, calibration, per_channel=True, source=source,
                         nodes=_int8_nodes(model, int8_layers))
    return _fp16_outside_int8(qdq)


def _int8_nodes(model: onnx.ModelProto, int8_layers: list[str]) -> list[str]:
    """The nodes for onnxruntime's quantiser: the layers, every FOLLOWER
    (it quantises them only after a quantised tensor) and the JOINS whose
    every input computed on is an int8 layer's output (after followers)."""
    constants = {tensor.name for tensor in model.graph.initializer}
    chosen, int8_tensors, nodes = set(int8_layers), set(), []
    for node in model.graph.node:     # in topological order, as ONNX wants
        data = [name for name in node.input if name and name not in constants]
        if node.op_type in FOLLOWERS:
            nodes.append(node.name)
            if data and data[0] in int8_tensors:
                int8_tensors.update(node.output)
        elif node.name in chosen or (node.op_type in JOINS and data and
                                     all(name in int8_tensors for name in data)):
            nodes.append(node.name)
            int8_tensors.update(node.output)
    return nodes


def _fp16_outside_int8(qdq: onnx.ModelProto) -> onnx.ModelProto:
    """A QDQ model with every node outside its int8 islands in fp16. An
    island is the Q/DQ nodes and the nodes between them (inputs from a
    DequantizeLinear, outputs read only by QuantizeLinears); the rest, cut
    out as a model of its own whose inputs are what the islands give it and
    whose outputs are what they take, goes through `to_fp16`, whose Casts at
    that model's inputs and outputs become the Casts at the islands' edges."""
    inferred = onnx.shape_inference.infer_shapes(qdq)
    graph = inferred.graph
    infos = {info.name: info for info in list(graph.input) + list(graph.value_info)
             + list(graph.output)}
    producer = {name: node for node in graph.node for name in node.output}
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    graph_outputs = [info.name for info in graph.output]

    def in_island(node) -> bool:
        if node.op_type in QDQ:
            return True
        dequantized = any(producer.get(name) is not None and
                          producer[name].op_type == "DequantizeLinear" for name in node.input)
        return dequantized and all(
            name not in graph_outputs and consumers.get(name) and
            all(user.op_type == "QuantizeLinear" for user in consumers[name])
            for name in node.output)

    island = [node for node in graph.node if in_island(node)]
    rest = [node for node in graph.node if not in_island(node)]
    island_ids = {id(node) for node in island}
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    graph_inputs = [info for info in graph.input if info.name not in initializers]
    rest_reads = {name for node in rest for name in node.input if name}
    island_reads = {name for node in island for name in node.input if name}
    # What the islands give the rest and take from it.
    exits = [name for node in island for name in node.output if name in rest_reads]
    entries = sorted(name for name in island_reads
                     if name in producer and id(producer[name]) not in island_ids)

    def info(name: str) -> onnx.ValueInfoProto:
        if name in infos:
            return infos[name]
        raise ValueError(f"no type for tensor '{name}'")

    rest_initializers = [tensor for tensor in graph.initializer if tensor.name in rest_reads]
    cut_outputs = [info(name) for name in graph_outputs
                   if id(producer.get(name)) not in island_ids] + \
        [info(name) for name in entries if name not in graph_outputs]
    cut = helper.make_graph(rest, graph.name, graph_inputs + [info(name) for name in exits],
                            cut_outputs, rest_initializers)
    converted = to_fp16(helper.make_model(cut, opset_imports=list(qdq.opset_import),
                                          ir_version=qdq.ir_version)).graph

    # The islands keep their float32 scales: an initializer the rest reads
    # too (now fp16) is given to them under another name.
    island_initializers = []
    renamed = {}
    for name in sorted(island_reads & initializers.keys()):
        tensor = onnx.TensorProto()
        tensor.CopyFrom(initializers[name])
        if name in rest_reads:
            renamed[name] = tensor.name = f"{name}.int8_island"
        island_initializers.append(tensor)
    for node in island:
        for position, name in enumerate(node.input):
            node.input[position] = renamed.get(name, name)

    nodes = _live(_topological(list(converted.node) + island), graph_outputs)
    outputs = {o.name: o for o in list(converted.output) + list(graph.output)}
    result = helper.make_graph(nodes, graph.name, list(graph_inputs),
                               [outputs[name] for name in graph_outputs],
                               list(converted.initializer) + island_initializers)
    model = helper.make_model(result, opset_imports=list(qdq.opset_import),
                              ir_version=qdq.ir_version)
    onnx.checker.check_model(model)
    return model


def _topological(nodes: list) -> list:
    produced = {name: index for index, node in enumerate(nodes) for name in node.output}
    order, state = [], {}

    def visit(index: int) -> None:
        stack = [(index, False)]
        while stack:
            current, done = stack.pop()
            if done:
                state[current] = 2
                order.append(nodes[current])
                continue
            if state.get(current):
                continue
            state[current] = 1
            stack.append((current, True))
            for name in nodes[current].input:
                before = produced.get(name)
                if before is not None and not state.get(before):
                    stack.append((before, False))
    for index in range(len(nodes)):
        visit(index)
    return order


def _live(nodes: list, outputs: list[str]) -> list:
    """The nodes an output depends on (the fp16 Cast of an input only an
    island reads is not)."""
    needed = set(outputs)
    kept = []
    for node in reversed(nodes):
        if any(name in needed for name in node.output):
            kept.append(node)
            needed.update(name for name in node.input if name)
    return kept[::-1]


def _epilogues(model: onnx.ModelProto, layers: list[str]) -> dict[str, list[str]]:
    """Each layer's node and the chain of BatchNormalization/Relu/Clip that
    alone reads its output."""
    graph = model.graph
    by_name = {node.name: node for node in graph.node}
    readers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    groups = {}
    for name in layers:
        group, node = [name], by_name[name]
        while len(node.output) and len(readers.get(node.output[0], [])) == 1 and \
                readers[node.output[0]][0].op_type in EPILOGUES:
            node = readers[node.output[0]][0]
            group.append(node.name)
        groups[name] = group
    return groups


def _cycles(model: onnx.ModelProto, groups: dict[str, list[str]],
            target) -> tuple[int, dict[str, int]]:
    """The model's simulated cycles and each layer's: its group's nodes'."""
    from ..analysis.profile import build_profile
    from ..compiler import compile as compile_model
    compiled = compile_model(model, dataclasses.replace(target, precision="fp32"))
    compiled.run(None, timing_only=True, trace=True)
    profile = build_profile(compiled.last_result, compiled.target)
    by_node = {node["node"]: node["cycles"] for node in profile["nodes"]}
    return profile["total_cycles"], {layer: sum(by_node.get(name, 0) for name in group)
                                     for layer, group in groups.items()}
