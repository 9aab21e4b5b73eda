"""Shared helpers of the importer tests: single-node ONNX models built with
onnx.helper, onnxruntime as the reference, and the imported module run on
the simulator after upstream bufferization."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper
from mlir import ir
from mlir.dialects.transform import interpreter
from mlir.passmanager import PassManager

from atvoss_mlir.frontend import import_onnx
from atvoss_mlir.sim import simulate

BUFFERIZE = ("builtin.module(one-shot-bufferize{bufferize-function-boundaries "
             "function-boundary-type-conversion=identity-layout-map})")

# tensor.pad bufferizes to linalg.map, which the simulator does not run;
# upstream's rewrite turns it into linalg.fill + tensor.insert_slice first.
PAD_TO_FILL = """
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %pads = transform.structured.match ops{["tensor.pad"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %filled = transform.structured.rewrite_in_destination_passing_style %pads
        : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
"""

_NP_TO_ONNX = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
               np.dtype(np.float16): TensorProto.FLOAT16}


def model(nodes, inputs: dict, outputs: dict, initializers: dict | None = None, opset: int = 17,
          initializers_as_inputs: bool = False) -> onnx.ModelProto:
    """inputs/outputs: name -> shape (float32); initializers: name -> array."""
    initializers = initializers or {}
    graph_inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()]
    if initializers_as_inputs:
        graph_inputs += [helper.make_tensor_value_info(n, _NP_TO_ONNX[v.dtype], list(v.shape))
                         for n, v in initializers.items()]
    graph = helper.make_graph(
        nodes, "test", graph_inputs,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs.items()],
        [numpy_helper.from_array(v, n) for n, v in initializers.items()])
    ir_version = 3 if initializers_as_inputs else 8
    made = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=ir_version)
    return made


def single(op_type, inputs: dict, output_shape, attributes=None, initializers=None, opset=17,
           extra_inputs=(), name="node0"):
    """A model of one node reading `inputs` (runtime), then `initializers`/`extra_inputs`
    (names, "" for an absent optional input) in that order."""
    initializers = initializers or {}
    names = list(inputs) + list(initializers) + list(extra_inputs)
    node = helper.make_node(op_type, names, ["y"], name=name, **(attributes or {}))
    return model([node], inputs, {"y": output_shape}, initializers, opset)


def reference(onnx_model, feeds: dict) -> list[np.ndarray]:
    session = onnxruntime.InferenceSession(onnx_model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def bufferize(module: ir.Module) -> ir.Module:
    with module.context:
        script = ir.Module.parse(PAD_TO_FILL)
        interpreter.apply_named_sequence(module.operation, script.body.operations[0], script)
        PassManager.parse(BUFFERIZE).run(module.operation)
    return module


def simulated(onnx_model, feeds: dict) -> list[np.ndarray]:
    module = bufferize(import_onnx(onnx_model))
    return simulate(module, list(feeds.values())).outputs


def check(onnx_model, feeds: dict, rtol=1e-4, atol=1e-5):
    """The imported model on the simulator agrees with onnxruntime."""
    expected = reference(onnx_model, feeds)
    actual = simulated(onnx_model, feeds)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
