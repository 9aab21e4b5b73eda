"""Programs of linalg on tensors with numpy references, compiled by the npu
pipeline and run on the simulator (shared by the lowering tests and benches)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from mlir import ir

from atvoss_mlir.context import make_context
from atvoss_mlir.passes import PassContext
from atvoss_mlir.pipeline import named_pipeline, run_pipeline
from atvoss_mlir.sim import simulate
from atvoss_mlir.target import parse_target

ACCUMULATOR = {"f16": "f32", "f32": "f32", "i8": "i32"}
NUMPY = {"f16": np.float16, "f32": np.float32, "i8": np.int8, "i32": np.int32}


def shape_type(shape, element: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{element}>"


def zero(element: str) -> str:
    return "0" if element.startswith("i") else "0.0"


def identity_maps(rank: int, count: int) -> str:
    dims = ", ".join(f"d{i}" for i in range(rank))
    return ", ".join([f"affine_map<({dims}) -> ({dims})>"] * count)


@dataclass
class Case:
    text: str
    inputs: list
    reference: np.ndarray
    tolerance: float = 1e-2
    notes: dict = field(default_factory=dict)


def random_array(rng, shape, element: str):
    if element == "i8":
        return rng.integers(-8, 8, shape).astype(np.int8)
    return rng.uniform(-1, 1, shape).astype(NUMPY[element])


def matmul_case(rng, m, n, k, element="f16", relu=False) -> Case:
    acc = ACCUMULATOR[element]
    a, b = random_array(rng, (m, k), element), random_array(rng, (k, n), element)
    out = shape_type((m, n), acc)
    epilogue = ""
    result = "%r"
    if relu:
        epilogue = f"""
  %e2 = tensor.empty() : {out}
  %act = linalg.generic {{indexing_maps = [{identity_maps(2, 2)}],
      iterator_types = ["parallel", "parallel"]}} ins(%r : {out}) outs(%e2 : {out}) {{
  ^bb0(%x: {acc}, %o: {acc}):
    %y = {"arith.maxsi" if acc == "i32" else "arith.maximumf"} %x, %z : {acc}
    linalg.yield %y : {acc}
  }} -> {out}"""
        result = "%act"
    text = f"""
func.func @main(%a: {shape_type((m, k), element)}, %b: {shape_type((k, n), element)}) -> {out} {{
  %z = arith.constant {zero(acc)} : {acc}
  %e = tensor.empty() : {out}
  %f = linalg.fill ins(%z : {acc}) outs(%e : {out}) -> {out}
  %r = linalg.matmul ins(%a, %b : {shape_type((m, k), element)}, {shape_type((k, n), element)})
      outs(%f : {out}) -> {out}{epilogue}
  return {result} : {out}
}}"""
    wide = np.int64 if element == "i8" else np.float64
    reference = (a.astype(wide) @ b.astype(wide))
    if relu:
        reference = np.maximum(reference, 0)
    return Case(text, [a, b], reference.astype(NUMPY[acc]), tolerance=1e-2 * np.sqrt(k))


def batch_matmul_case(rng, batch, m, n, k, element="f16") -> Case:
    acc = ACCUMULATOR[element]
    a = random_array(rng, (batch, m, k), element)
    b = random_array(rng, (batch, k, n), element)
    ta, tb, out = (shape_type((batch, m, k), element), shape_type((batch, k, n), element),
                   shape_type((batch, m, n), acc))
    text = f"""
func.func @main(%a: {ta}, %b: {tb}) -> {out} {{
  %z = arith.constant {zero(acc)} : {acc}
  %e = tensor.empty() : {out}
  %f = linalg.fill ins(%z : {acc}) outs(%e : {out}) -> {out}
  %r = linalg.batch_matmul ins(%a, %b : {ta}, {tb}) outs(%f : {out}) -> {out}
  return %r : {out}
}}"""
    wide = np.int64 if element == "i8" else np.float64
    reference = np.matmul(a.astype(wide), b.astype(wide)).astype(NUMPY[acc])
    return Case(text, [a, b], reference, tolerance=1e-2 * np.sqrt(k))


def conv_output(size, kernel, stride, dilation, pad):
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


def pad_text(name, shape, pad, element, value="0.0") -> tuple[str, str, list]:
    if not pad:
        return "", name, list(shape)
    padded = [shape[0], shape[1] + 2 * pad, shape[2] + 2 * pad, shape[3]]
    text = f"""
  %pv = arith.constant {value} : {element}
  %padded = tensor.pad {name} low[0, {pad}, {pad}, 0] high[0, {pad}, {pad}, 0] {{
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %pv : {element}
  }} : {shape_type(shape, element)} to {shape_type(padded, element)}"""
    return text, "%padded", padded


def conv_case(rng, n, h, w, c, f, kernel, stride=1, dilation=1, pad=0, element="f16",
              relu=False, strategy=None) -> Case:
    acc = ACCUMULATOR[element]
    x = random_array(rng, (n, h, w, c), element)
    weights = random_array(rng, (kernel, kernel, c, f), element)
    oh = conv_output(h, kernel, stride, dilation, pad)
    ow = conv_output(w, kernel, stride, dilation, pad)
    padding, source, padded = pad_text("%x", (n, h, w, c), pad, element, zero(element))
    out = shape_type((n, oh, ow, f), acc)
    attrs = f"dilations = dense<{dilation}> : tensor<2xi64>, strides = dense<{stride}> : tensor<2xi64>"
    if strategy:
        attrs += f', npu.conv_strategy = "{strategy}"'
    epilogue, result = "", "%r"
    if relu:
        epilogue = f"""
  %e2 = tensor.empty() : {out}
  %act = linalg.generic {{indexing_maps = [{identity_maps(4, 2)}],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}}
      ins(%r : {out}) outs(%e2 : {out}) {{
  ^bb0(%v: {acc}, %o: {acc}):
    %y = {"arith.maxsi" if acc == "i32" else "arith.maximumf"} %v, %z : {acc}
    linalg.yield %y : {acc}
  }} -> {out}"""
        result = "%act"
    text = f"""
func.func @main(%x: {shape_type((n, h, w, c), element)}, %w: {shape_type((kernel, kernel, c, f), element)}) -> {out} {{{padding}
  %z = arith.constant {zero(acc)} : {acc}
  %e = tensor.empty() : {out}
  %f = linalg.fill ins(%z : {acc}) outs(%e : {out}) -> {out}
  %r = linalg.conv_2d_nhwc_hwcf {{{attrs}}}
      ins({source}, %w : {shape_type(padded, element)}, {shape_type((kernel, kernel, c, f), element)})
      outs(%f : {out}) -> {out}{epilogue}
  return {result} : {out}
}}"""
    wide = np.int64 if element == "i8" else np.float64
    xp = np.pad(x.astype(wide), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    reference = np.zeros((n, oh, ow, f), wide)
    for i in range(kernel):
        for j in range(kernel):
            window = xp[:, i * dilation:i * dilation + (oh - 1) * stride + 1:stride,
                        j * dilation:j * dilation + (ow - 1) * stride + 1:stride, :]
            reference += np.einsum("nhwc,cf->nhwf", window, weights[i, j].astype(wide))
    if relu:
        reference = np.maximum(reference, 0)
    return Case(text, [x, weights], reference.astype(NUMPY[acc]),
                tolerance=1e-2 * np.sqrt(kernel * kernel * c))


def depthwise_case(rng, n, h, w, c, kernel, stride=1, pad=0, element="f16") -> Case:
    x = random_array(rng, (n, h, w, c), element)
    weights = random_array(rng, (kernel, kernel, c), element)
    oh, ow = conv_output(h, kernel, stride, 1, pad), conv_output(w, kernel, stride, 1, pad)
    padding, source, padded = pad_text("%x", (n, h, w, c), pad, element, zero(element))
    out = shape_type((n, oh, ow, c), element)
    text = f"""
func.func @main(%x: {shape_type((n, h, w, c), element)}, %w: {shape_type((kernel, kernel, c), element)}) -> {out} {{{padding}
  %z = arith.constant {zero(element)} : {element}
  %e = tensor.empty() : {out}
  %f = linalg.fill ins(%z : {element}) outs(%e : {out}) -> {out}
  %r = linalg.depthwise_conv_2d_nhwc_hwc
      {{dilations = dense<1> : tensor<2xi64>, strides = dense<{stride}> : tensor<2xi64>}}
      ins({source}, %w : {shape_type(padded, element)}, {shape_type((kernel, kernel, c), element)})
      outs(%f : {out}) -> {out}
  return %r : {out}
}}"""
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    reference = np.zeros((n, oh, ow, c))
    for i in range(kernel):
        for j in range(kernel):
            reference += xp[:, i:i + (oh - 1) * stride + 1:stride,
                            j:j + (ow - 1) * stride + 1:stride, :] * weights[i, j]
    return Case(text, [x, weights], reference.astype(NUMPY[element]),
                tolerance=2e-2 * kernel)


def pool_case(rng, n, h, w, c, kernel, stride=1, pad=0, kind="max", element="f16") -> Case:
    x = random_array(rng, (n, h, w, c), element)
    oh, ow = conv_output(h, kernel, stride, 1, pad), conv_output(w, kernel, stride, 1, pad)
    pad_value = "0xFC00" if kind == "max" and element == "f16" else \
        ("-3.0e38" if kind == "max" else "0.0")
    padding, source, padded = pad_text("%x", (n, h, w, c), pad, element, pad_value)
    out = shape_type((n, oh, ow, c), element)
    init = pad_value if kind == "max" else "0.0"
    text = f"""
func.func @main(%x: {shape_type((n, h, w, c), element)}) -> {out} {{{padding}
  %init = arith.constant {init} : {element}
  %e = tensor.empty() : {out}
  %f = linalg.fill ins(%init : {element}) outs(%e : {out}) -> {out}
  %k = tensor.empty() : tensor<{kernel}x{kernel}x{element}>
  %r = linalg.pooling_nhwc_{kind}
      {{dilations = dense<1> : tensor<2xi64>, strides = dense<{stride}> : tensor<2xi64>}}
      ins({source}, %k : {shape_type(padded, element)}, tensor<{kernel}x{kernel}x{element}>)
      outs(%f : {out}) -> {out}
  return %r : {out}
}}"""
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)),
                constant_values=fill)
    windows = [xp[:, i:i + (oh - 1) * stride + 1:stride, j:j + (ow - 1) * stride + 1:stride, :]
               for i in range(kernel) for j in range(kernel)]
    reference = np.max(windows, axis=0) if kind == "max" else np.sum(windows, axis=0)
    return Case(text, [x], reference.astype(NUMPY[element]), tolerance=2e-2 * kernel)


def elementwise_chain_case(rng, shape, element="f16") -> Case:
    """relu((a + b) * bias) - a, clamped to [-0.5, 0.5]; bias broadcast over rows."""
    rank = len(shape)
    a, b = random_array(rng, shape, element), random_array(rng, shape, element)
    bias = random_array(rng, shape[-1:], element)
    t = shape_type(shape, element)
    tb = shape_type(shape[-1:], element)
    dims = ", ".join(f"d{i}" for i in range(rank))
    iterators = ", ".join(['"parallel"'] * rank)
    text = f"""
func.func @main(%a: {t}, %b: {t}, %bias: {tb}) -> {t} {{
  %e = tensor.empty() : {t}
  %r = linalg.generic {{indexing_maps = [affine_map<({dims}) -> ({dims})>,
      affine_map<({dims}) -> ({dims})>, affine_map<({dims}) -> (d{rank - 1})>,
      affine_map<({dims}) -> ({dims})>], iterator_types = [{iterators}]}}
      ins(%a, %b, %bias : {t}, {t}, {tb}) outs(%e : {t}) {{
  ^bb0(%x: {element}, %y: {element}, %s: {element}, %o: {element}):
    %zero = arith.constant 0.0 : {element}
    %lo = arith.constant -0.5 : {element}
    %hi = arith.constant 0.5 : {element}
    %0 = arith.addf %x, %y : {element}
    %1 = arith.mulf %0, %s : {element}
    %2 = arith.maximumf %1, %zero : {element}
    %3 = arith.subf %2, %x : {element}
    %4 = arith.maximumf %3, %lo : {element}
    %5 = arith.minimumf %4, %hi : {element}
    linalg.yield %5 : {element}
  }} -> {t}
  return %r : {t}
}}"""
    wide = [v.astype(np.float64) for v in (a, b, bias)]
    reference = np.clip(np.maximum((wide[0] + wide[1]) * wide[2], 0) - wide[0], -0.5, 0.5)
    return Case(text, [a, b, bias], reference.astype(NUMPY[element]), tolerance=1e-2)


def transpose_case(rng, shape, permutation, element="f16") -> Case:
    x = random_array(rng, shape, element)
    out_shape = [shape[p] for p in permutation]
    t, to = shape_type(shape, element), shape_type(out_shape, element)
    text = f"""
func.func @main(%x: {t}) -> {to} {{
  %e = tensor.empty() : {to}
  %r = linalg.transpose ins(%x : {t}) outs(%e : {to}) permutation = {list(permutation)}
  return %r : {to}
}}"""
    return Case(text, [x], np.transpose(x, permutation), tolerance=0)


def broadcast_case(rng, shape, dimensions, element="f16") -> Case:
    kept = [n for i, n in enumerate(shape) if i not in dimensions]
    x = random_array(rng, kept, element)
    t, to = shape_type(kept, element), shape_type(shape, element)
    text = f"""
func.func @main(%x: {t}) -> {to} {{
  %e = tensor.empty() : {to}
  %r = linalg.broadcast ins(%x : {t}) outs(%e : {to}) dimensions = {list(dimensions)}
  return %r : {to}
}}"""
    expanded = x.reshape([1 if i in dimensions else n for i, n in enumerate(shape)])
    return Case(text, [x], np.broadcast_to(expanded, shape), tolerance=0)


def compile_text(text: str, target: str = "npu", pipeline: str | None = None):
    """(compiled module text, diagnostics) of the npu pipeline on `text`."""
    module = ir.Module.parse(text, make_context())
    pass_context = PassContext(target=parse_target(target))
    run_pipeline(module, pipeline or named_pipeline("npu-pipeline"), pass_context)
    return str(module), pass_context.diagnostics.diagnostics


def run_case(case: Case, target: str = "npu", timing_only: bool = False):
    """Compile and simulate; returns (simulation result, compiled text, diagnostics)."""
    compiled, diagnostics = compile_text(case.text, target)
    result = simulate(compiled, None if timing_only else case.inputs, target=target,
                      timing_only=timing_only)
    return result, compiled, diagnostics


def check_case(case: Case, target: str = "npu"):
    result, compiled, diagnostics = run_case(case, target)
    output = np.asarray(result.outputs[0]).astype(np.float64)
    expected = np.asarray(case.reference).astype(np.float64)
    assert output.shape == expected.shape
    error = np.max(np.abs(output - expected)) if output.size else 0.0
    assert error <= case.tolerance, f"max error {error} > {case.tolerance}"
    return result, compiled, diagnostics
