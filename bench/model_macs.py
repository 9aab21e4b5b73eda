"""The multiply-accumulates an ONNX model asks for, counted from its graph
(Conv, ConvTranspose, Gemm, MatMul), independently of any compiled program.

The simulator's report counts the MACs the program executes, which include
work a schedule adds (the halo rows a cascade of strips computes twice); a
roofline ratio against those would flatter such schedules. The benchmarks
divide by the roofline of the model's own MACs instead."""

from __future__ import annotations

import math

import onnx

from atvoss_mlir.frontend.onnx_model import inferred_shapes
from atvoss_mlir.machine_model import roofline_cycles


def _shapes(model: onnx.ModelProto) -> dict:
    """Static shapes of the graph's inputs, initializers and inferred values."""
    shapes = {info.name: [d.dim_value for d in info.type.tensor_type.shape.dim]
              for info in model.graph.input}
    shapes.update({tensor.name: list(tensor.dims) for tensor in model.graph.initializer})
    shapes.update(inferred_shapes(model))
    return shapes


def model_macs(model: onnx.ModelProto | str) -> int:
    if isinstance(model, str):
        model = onnx.load(model)
    shapes = _shapes(model)
    total = 0
    for node in model.graph.node:
        if node.op_type in ("Conv", "ConvTranspose"):
            weight = shapes[node.input[1]]
            # Each output element of a conv sums Cin/group * kh * kw products;
            # each input element of a transposed conv feeds Cout/group * kh * kw.
            counted = shapes[node.output[0] if node.op_type == "Conv" else node.input[0]]
            total += math.prod(counted) * math.prod(weight[1:])
        elif node.op_type == "Gemm":
            a = shapes[node.input[0]]
            trans_a = next((attr.i for attr in node.attribute if attr.name == "transA"), 0)
            total += math.prod(shapes[node.output[0]]) * a[0 if trans_a else 1]
        elif node.op_type == "MatMul":
            total += math.prod(shapes[node.output[0]]) * shapes[node.input[0]][-1]
    return total


def model_roofline(model: onnx.ModelProto | str, report: dict, target) -> int:
    """Roofline cycles of the model's MACs (at the fp peak) and the program's
    compulsory DRAM bytes (the model's inputs, outputs and weights)."""
    return roofline_cycles(model_macs(model), 0, report["compulsory_dram_bytes"], target)
