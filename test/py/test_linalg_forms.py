"""Every linalg program the npu pipeline compiles runs on the simulator.

Property test: random programs of the forms a user writes by hand (matmuls
with transposed operands through `indexing_maps`, generics reading
`linalg.index`, softmax over any axis, reductions, broadcasts, elementwise
ops with transposing and broadcasting maps), in f32 or fp16, compiled by the
npu pipeline, simulated and compared with numpy. Then the named ops of the linalg dialect,
one program each: each runs (on the NPU or the fallback engine) and matches
numpy, or is refused at compile time with a located error.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.sim import simulate
from test_lowering_cases import Case, check_case, compile_text

# Bounded and reproducible: the same examples on every run.
PROFILE = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.too_slow])
SIZE = st.integers(1, 9)
TOLERANCE = 1e-4  # f32 programs of at most a few hundred terms per output


def tensor(shape, element="f32") -> str:
    return f"tensor<{''.join(f'{n}x' for n in shape)}{element}>"


def affine(rank: int, results) -> str:
    dims = ", ".join(f"d{i}" for i in range(rank))
    return f"affine_map<({dims}) -> ({', '.join(f'd{r}' for r in results)})>"


def iterators(kinds) -> str:
    return ", ".join(f'"{kind}"' for kind in kinds)


def uniform(rng, shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def function(args: list, result_shape, body: str, result: str = "%r") -> str:
    signature = ", ".join(f"%a{i}: {tensor(shape)}" for i, shape in enumerate(args))
    out = tensor(result_shape)
    return f"""
func.func @main({signature}) -> {out} {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : {out}
  %f = linalg.fill ins(%zero : f32) outs(%e : {out}) -> {out}
  {body}
  return {result} : {out}
}}"""


# -- random programs --------------------------------------------------------------------------

@st.composite
def matmul_with_maps(draw, rng):
    """linalg.matmul / batch_matmul with either operand transposed through indexing_maps."""
    m, n, k = draw(SIZE), draw(SIZE), draw(SIZE)
    transpose_a, transpose_b = draw(st.booleans()), draw(st.booleans())
    batch = draw(st.sampled_from([None, 1, 3]))
    lead = [] if batch is None else [batch]
    b = [] if batch is None else [0]  # the batch loop dimension
    dm, dn, dk = [d + len(b) for d in (0, 1, 2)]
    a_dims = [dk, dm] if transpose_a else [dm, dk]
    b_dims = [dn, dk] if transpose_b else [dk, dn]
    rank = 3 + len(b)
    maps = [affine(rank, b + a_dims), affine(rank, b + b_dims), affine(rank, b + [dm, dn])]
    sizes = {dm: m, dn: n, dk: k}
    a_shape = lead + [sizes[d] for d in a_dims]
    b_shape = lead + [sizes[d] for d in b_dims]
    a, bv = uniform(rng, a_shape), uniform(rng, b_shape)
    name = "linalg.matmul" if batch is None else "linalg.batch_matmul"
    out = lead + [m, n]
    body = (f"%r = {name} indexing_maps = [{', '.join(maps)}] "
            f"ins(%a0, %a1 : {tensor(a_shape)}, {tensor(b_shape)}) "
            f"outs(%f : {tensor(out)}) -> {tensor(out)}")
    lhs = np.swapaxes(a, -1, -2) if transpose_a else a
    rhs = np.swapaxes(bv, -1, -2) if transpose_b else bv
    reference = lhs.astype(np.float64) @ rhs.astype(np.float64)
    return Case(function([a_shape, b_shape], out, body), [a, bv], reference, TOLERANCE)


@st.composite
def generic_with_index(draw, rng):
    """x * 0.5 + i0 - 2 * i_last (parallel dims), optionally masked by i0 <= i1, or a
    reduction weighting each term by its reduction index."""
    rank = draw(st.integers(1, 3))
    shape = [draw(SIZE) for _ in range(rank)]
    x = uniform(rng, shape)
    grids = np.meshgrid(*[np.arange(n) for n in shape], indexing="ij")
    if rank >= 2 and draw(st.booleans()):  # sum over the last dim of x[..., j] * j
        out = shape[:-1]
        maps = [affine(rank, range(rank)), affine(rank, range(rank - 1))]
        body = f"""%r = linalg.generic {{indexing_maps = [{', '.join(maps)}],
      iterator_types = [{iterators(['parallel'] * (rank - 1) + ['reduction'])}]}}
      ins(%a0 : {tensor(shape)}) outs(%f : {tensor(out)}) {{
  ^bb0(%x: f32, %acc: f32):
    %j = linalg.index {rank - 1} : index
    %ji = arith.index_cast %j : index to i32
    %jf = arith.sitofp %ji : i32 to f32
    %t = arith.mulf %x, %jf : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  }} -> {tensor(out)}"""
        reference = np.sum(x.astype(np.float64) * grids[-1], axis=-1)
        return Case(function([shape], out, body), [x], reference, TOLERANCE * shape[-1] * 10)
    masked = rank >= 2 and draw(st.booleans())
    identity = affine(rank, range(rank))
    mask = ""
    result = "%v"
    if masked:
        mask = """
    %i1 = linalg.index 1 : index
    %keep = arith.cmpi ule, %i0, %i1 : index
    %w = arith.select %keep, %v, %zero : f32"""
        result = "%w"
    body = f"""%r = linalg.generic {{indexing_maps = [{identity}, {identity}],
      iterator_types = [{iterators(['parallel'] * rank)}]}}
      ins(%a0 : {tensor(shape)}) outs(%e : {tensor(shape)}) {{
  ^bb0(%x: f32, %o: f32):
    %half = arith.constant 0.5 : f32
    %two = arith.constant 2 : index
    %i0 = linalg.index 0 : index
    %il = linalg.index {rank - 1} : index
    %scaled = arith.muli %il, %two : index
    %i0i = arith.index_cast %i0 : index to i64
    %sci = arith.index_cast %scaled : index to i64
    %i0f = arith.sitofp %i0i : i64 to f32
    %scf = arith.sitofp %sci : i64 to f32
    %h = arith.mulf %x, %half : f32
    %u = arith.addf %h, %i0f : f32
    %v = arith.subf %u, %scf : f32{mask}
    linalg.yield {result} : f32
  }} -> {tensor(shape)}"""
    reference = x.astype(np.float64) * 0.5 + grids[0] - 2 * grids[-1]
    if masked:
        reference = np.where(grids[0] <= grids[1], reference, 0.0)
    return Case(function([shape], shape, body), [x], reference, TOLERANCE)


@st.composite
def softmax(draw, rng):
    rank = draw(st.integers(1, 3))
    shape = [draw(SIZE) for _ in range(rank)]
    axis = draw(st.integers(0, rank - 1))
    x = (uniform(rng, shape) * 4).astype(np.float32)
    body = (f"%r = linalg.softmax dimension({axis}) ins(%a0 : {tensor(shape)}) "
            f"outs(%e : {tensor(shape)}) -> {tensor(shape)}")
    wide = np.exp(x.astype(np.float64) - x.max(axis=axis, keepdims=True))
    reference = wide / wide.sum(axis=axis, keepdims=True)
    return Case(function([shape], shape, body), [x], reference, TOLERANCE)


REDUCTIONS = {  # combiner -> (identity as an f32 bit pattern or literal, numpy reduction)
    "arith.addf": ("0.0", np.sum),
    "arith.maximumf": ("0xFF800000", np.max),
    "arith.minimumf": ("0x7F800000", np.min),
}


@st.composite
def reduction(draw, rng):
    rank = draw(st.integers(1, 3))
    shape = [draw(SIZE) for _ in range(rank)]
    dims = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1)))
    combiner = draw(st.sampled_from(sorted(REDUCTIONS)))
    identity, reduce_fn = REDUCTIONS[combiner]
    out = [n for i, n in enumerate(shape) if i not in dims]
    x = uniform(rng, shape)
    body = f"""%init = arith.constant {identity} : f32
  %fi = linalg.fill ins(%init : f32) outs(%e : {tensor(out)}) -> {tensor(out)}
  %r = linalg.reduce ins(%a0 : {tensor(shape)}) outs(%fi : {tensor(out)}) dimensions = {dims}
    (%x: f32, %acc: f32) {{
      %s = {combiner} %x, %acc : f32
      linalg.yield %s : f32
    }}"""
    reference = reduce_fn(x.astype(np.float64), axis=tuple(dims))
    return Case(function([shape], out, body), [x], reference, TOLERANCE * 10)


@st.composite
def broadcast(draw, rng):
    rank = draw(st.integers(1, 3))
    shape = [draw(SIZE) for _ in range(rank)]
    added = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank - 1)
                        if rank > 1 else st.just({0})))
    kept = [n for i, n in enumerate(shape) if i not in added]
    x = uniform(rng, kept)
    form = draw(st.sampled_from(["broadcast", "generic"]))
    if form == "broadcast":
        body = (f"%r = linalg.broadcast ins(%a0 : {tensor(kept)}) outs(%e : {tensor(shape)}) "
                f"dimensions = {added}")
    else:
        maps = [affine(rank, [d for d in range(rank) if d not in added]), affine(rank, range(rank))]
        body = f"""%r = linalg.generic {{indexing_maps = [{', '.join(maps)}],
      iterator_types = [{iterators(['parallel'] * rank)}]}}
      ins(%a0 : {tensor(kept)}) outs(%e : {tensor(shape)}) {{
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }} -> {tensor(shape)}"""
    reference = np.broadcast_to(x.reshape([1 if i in added else n for i, n in enumerate(shape)]),
                                shape)
    return Case(function([kept], shape, body), [x], reference, 0)


BINARY = {  # linalg.elementwise kind -> (body op of a generic, numpy)
    "add": ("arith.addf", np.add), "sub": ("arith.subf", np.subtract),
    "mul": ("arith.mulf", np.multiply), "max_signed": ("arith.maximumf", np.maximum),
    "min_signed": ("arith.minimumf", np.minimum),
}
UNARY = {"exp": ("math.exp", np.exp), "negf": ("arith.negf", np.negative),
         "abs": ("math.absf", np.abs), "tanh": ("math.tanh", np.tanh)}


@st.composite
def operand_map(draw, rank):
    """A projected permutation of the output dims: a transposed and/or broadcast operand."""
    dims = draw(st.lists(st.integers(0, rank - 1), unique=True, min_size=1, max_size=rank))
    return dims


@st.composite
def elementwise(draw, rng):
    rank = draw(st.integers(1, 3))
    shape = [draw(SIZE) for _ in range(rank)]
    unary = draw(st.booleans())
    kind = draw(st.sampled_from(sorted(UNARY if unary else BINARY)))
    body_op, numpy_fn = (UNARY if unary else BINARY)[kind]
    operand_dims = [draw(operand_map(rank)) for _ in range(1 if unary else 2)]
    shapes = [[shape[d] for d in dims] for dims in operand_dims]
    values = [uniform(rng, s) for s in shapes]
    maps = [affine(rank, dims) for dims in operand_dims] + [affine(rank, range(rank))]
    names = ", ".join(f"%a{i}" for i in range(len(values)))
    types = ", ".join(tensor(s) for s in shapes)
    if draw(st.booleans()):
        body = (f"%r = linalg.elementwise kind=#linalg.elementwise_kind<{kind}> "
                f"indexing_maps = [{', '.join(maps)}] ins({names} : {types}) "
                f"outs(%e : {tensor(shape)}) -> {tensor(shape)}")
    else:
        args = ", ".join(f"%x{i}: f32" for i in range(len(values)))
        operands = ", ".join(f"%x{i}" for i in range(len(values)))
        body = f"""%r = linalg.generic {{indexing_maps = [{', '.join(maps)}],
      iterator_types = [{iterators(['parallel'] * rank)}]}}
      ins({names} : {types}) outs(%e : {tensor(shape)}) {{
  ^bb0({args}, %o: f32):
    %y = {body_op} {operands} : f32
    linalg.yield %y : f32
  }} -> {tensor(shape)}"""

    def expanded(value, dims):  # the operand seen in the output's dims
        order = sorted(range(len(dims)), key=lambda i: dims[i])
        moved = np.transpose(value.astype(np.float64), order)
        present = sorted(dims)
        return moved.reshape([shape[d] if d in present else 1 for d in range(rank)])
    reference = numpy_fn(*[expanded(v, d) for v, d in zip(values, operand_dims)])
    reference = np.broadcast_to(reference, shape)
    return Case(function(shapes, shape, body), values, reference, TOLERANCE)


FORMS = [matmul_with_maps, generic_with_index, softmax, reduction, broadcast, elementwise]


def in_fp16(case: Case) -> Case:
    """The same program on fp16 tensors, the NPU's own type (its vector unit takes
    some of these ops); the reference stays the f32 one, within fp16's precision."""
    text = case.text.replace("f32", "f16").replace("0xFF800000", "0xFC00") \
        .replace("0x7F800000", "0x7C00")
    scale = float(np.max(np.abs(case.reference), initial=1.0))
    return Case(text, [x.astype(np.float16) for x in case.inputs], case.reference,
                max(case.tolerance, 3e-2 * scale))


@st.composite
def linalg_programs(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    case = draw(draw(st.sampled_from(FORMS))(rng))
    return in_fp16(case) if draw(st.booleans()) else case


@PROFILE
@given(case=linalg_programs())
def test_random_linalg_programs_compile_run_and_match_numpy(case):
    check_case(case)


@pytest.mark.parametrize("form", FORMS, ids=lambda form: form.__name__)
def test_each_form_is_generated(form):
    """Every form yields a program that runs (the property test draws them at random)."""
    @settings(max_examples=3, deadline=None, derandomize=True, database=None)
    @given(seed=st.integers(0, 2**16), data=st.data())
    def run(seed, data):
        check_case(data.draw(form(np.random.default_rng(seed))))
    run()


# -- the named ops, one program each ----------------------------------------------------------

def named(op: str, shapes: list, out, attributes: str = "", init: str = "%f") -> str:
    names = ", ".join(f"%a{i}" for i in range(len(shapes)))
    types = ", ".join(tensor(s) for s in shapes)
    return function(shapes, out, f"%r = {op} {attributes} ins({names} : {types}) "
                                 f"outs({init} : {tensor(out)}) -> {tensor(out)}")


def windows(x, kernel, axes, stride=1):
    """Sliding windows of `kernel` over `axes` (window dims appended), every `stride`-th."""
    view = np.lib.stride_tricks.sliding_window_view(x.astype(np.float64), kernel, axis=axes)
    index = [slice(None)] * x.ndim
    for axis in axes:
        index[axis] = slice(None, None, stride)
    return view[tuple(index)]


def strides(rank: int, stride: int = 1) -> str:
    return (f"{{dilations = dense<1> : tensor<{rank}xi64>, "
            f"strides = dense<{stride}> : tensor<{rank}xi64>}}")


def pooling(op: str, shape, kernel, out, stride) -> str:
    return function([shape], out, f"""%w = tensor.empty() : {tensor(kernel)}
  %r = {op} {strides(len(kernel), stride)} ins(%a0, %w : {tensor(shape)}, {tensor(kernel)})
      outs(%f : {tensor(out)}) -> {tensor(out)}""")


def elementwise_maps(rank, *operand_dims) -> str:
    maps = [affine(rank, d) for d in operand_dims] + [affine(rank, range(rank))]
    return f"indexing_maps = [{', '.join(maps)}]"


# Winograd F(4, 3) filter transform matrix G (6x3), as upstream defines it.
WINOGRAD_G = np.array([[1, 0, 0], [-1 / 3, 1 / 3, -1 / 3], [-1 / 3, -1 / 3, -1 / 3],
                       [1 / 12, -1 / 6, 1 / 3], [1 / 12, 1 / 6, 1 / 3], [0, 0, 1]])

# name -> (program, input shapes, reference from the inputs); init %f is zero-filled.
NAMED_OPS = {
    "matmul_transpose_a": (
        named("linalg.matmul", [(6, 4), (6, 5)], (4, 5),
              f"indexing_maps = [{affine(3, [2, 0])}, {affine(3, [2, 1])}, {affine(3, [0, 1])}]"),
        [(6, 4), (6, 5)],
        lambda a, b: a.T @ b),
    "matmul_broadcast_a": (
        named("linalg.matmul", [(6,), (6, 5)], (4, 5),
              f"indexing_maps = [{affine(3, [2])}, {affine(3, [2, 1])}, {affine(3, [0, 1])}]"),
        [(6,), (6, 5)], lambda a, b: np.broadcast_to(a @ b, (4, 5))),
    "batch_reduce_matmul": (
        named("linalg.batch_reduce_matmul", [(2, 4, 6), (2, 6, 5)], (4, 5)),
        [(2, 4, 6), (2, 6, 5)], lambda a, b: np.einsum("bmk,bkn->mn", a, b)),
    "matvec": (named("linalg.matvec", [(4, 6), (6,)], (4,)), [(4, 6), (6,)],
               lambda a, x: a @ x),
    "vecmat": (named("linalg.vecmat", [(6,), (6, 5)], (5,)), [(6,), (6, 5)],
               lambda x, b: x @ b),
    "batch_matvec": (named("linalg.batch_matvec", [(2, 4, 6), (2, 6)], (2, 4)),
                     [(2, 4, 6), (2, 6)], lambda a, x: np.einsum("bmk,bk->bm", a, x)),
    "dot": (named("linalg.dot", [(6,), (6,)], ()), [(6,), (6,)], lambda a, b: a @ b),
    "contract": (
        named("linalg.contract", [(4, 6), (5, 6)], (4, 5),
              f"indexing_maps = [{affine(3, [0, 2])}, {affine(3, [1, 2])}, {affine(3, [0, 1])}]"),
        [(4, 6), (5, 6)], lambda a, b: a @ b.T),
    "mmt4d": (named("linalg.mmt4d", [(2, 3, 4, 2), (5, 3, 4, 2)], (2, 5, 4, 4)),
              [(2, 3, 4, 2), (5, 3, 4, 2)],
              lambda a, b: np.einsum("MKmk,NKnk->MNmn", a, b)),
    "add": (named("linalg.add", [(4, 6), (4, 6)], (4, 6), init="%e"), [(4, 6), (4, 6)], np.add),
    "exp": (named("linalg.exp", [(4, 6)], (4, 6), init="%e"), [(4, 6)], np.exp),
    "reciprocal": (named("linalg.reciprocal", [(4, 6)], (4, 6), init="%e"), [(4, 6)],
                   lambda x: 1 / x),
    "square": (named("linalg.square", [(4, 6)], (4, 6), init="%e"), [(4, 6)], np.square),
    "elementwise_transposed": (
        named("linalg.elementwise", [(4, 6), (6, 4)], (4, 6),
              "kind=#linalg.elementwise_kind<mul> " + elementwise_maps(2, [0, 1], [1, 0]),
              init="%e"), [(4, 6), (6, 4)], lambda a, b: a * b.T),
    "copy": (named("linalg.copy", [(4, 6)], (4, 6), init="%e"), [(4, 6)], lambda x: x),
    "transpose": (function([(4, 6)], (6, 4), "%r = linalg.transpose ins(%a0 : tensor<4x6xf32>) "
                           "outs(%e : tensor<6x4xf32>) permutation = [1, 0]"),
                  [(4, 6)], np.transpose),
    "map": (function([(4, 6), (4, 6)], (4, 6), """%r = linalg.map
      ins(%a0, %a1 : tensor<4x6xf32>, tensor<4x6xf32>) outs(%e : tensor<4x6xf32>)
      (%x: f32, %y: f32, %o: f32) {
        %s = arith.mulf %x, %y : f32
        linalg.yield %s : f32
      }"""), [(4, 6), (4, 6)], np.multiply),
    "conv_1d": (named("linalg.conv_1d", [(8,), (3,)], (6,)), [(8,), (3,)],
                lambda x, w: windows(x, (3,), (0,)) @ w),
    "conv_2d": (named("linalg.conv_2d", [(8, 7), (3, 2)], (6, 6)), [(8, 7), (3, 2)],
                lambda x, w: np.einsum("hwij,ij->hw", windows(x, (3, 2), (0, 1)), w)),
    "conv_1d_nwc_wcf": (
        named("linalg.conv_1d_nwc_wcf", [(1, 8, 3), (3, 3, 4)], (1, 6, 4), strides(1)),
        [(1, 8, 3), (3, 3, 4)],
        lambda x, w: np.einsum("nwci,icf->nwf", windows(x, (3,), (1,)), w)),
    "conv_2d_nhwc_fhwc": (
        named("linalg.conv_2d_nhwc_fhwc", [(1, 8, 8, 3), (4, 3, 3, 3)], (1, 6, 6, 4),
              strides(2)), [(1, 8, 8, 3), (4, 3, 3, 3)],
        lambda x, w: np.einsum("nhwcij,fijc->nhwf", windows(x, (3, 3), (1, 2)), w)),
    "conv_2d_nchw_fchw": (
        named("linalg.conv_2d_nchw_fchw", [(1, 3, 8, 8), (4, 3, 3, 3)], (1, 4, 6, 6),
              strides(2)), [(1, 3, 8, 8), (4, 3, 3, 3)],
        lambda x, w: np.einsum("nchwij,fcij->nfhw", windows(x, (3, 3), (2, 3)), w)),
    "conv_2d_ngchw_fgchw": (
        named("linalg.conv_2d_ngchw_fgchw", [(1, 2, 2, 6, 6), (3, 2, 2, 3, 3)],
              (1, 2, 3, 4, 4), strides(2)), [(1, 2, 2, 6, 6), (3, 2, 2, 3, 3)],
        lambda x, w: np.einsum("ngchwij,fgcij->ngfhw", windows(x, (3, 3), (3, 4)), w)),
    "conv_3d_ndhwc_dhwcf": (
        named("linalg.conv_3d_ndhwc_dhwcf", [(1, 4, 4, 4, 2), (2, 2, 2, 2, 3)],
              (1, 3, 3, 3, 3), strides(3)), [(1, 4, 4, 4, 2), (2, 2, 2, 2, 3)],
        lambda x, w: np.einsum("ndhwcijk,ijkcf->ndhwf", windows(x, (2, 2, 2), (1, 2, 3)), w)),
    "depthwise_conv_2d_nchw_chw": (
        named("linalg.depthwise_conv_2d_nchw_chw", [(1, 3, 8, 8), (3, 3, 3)], (1, 3, 6, 6),
              strides(2)), [(1, 3, 8, 8), (3, 3, 3)],
        lambda x, w: np.einsum("nchwij,cij->nchw", windows(x, (3, 3), (2, 3)), w)),
    "depthwise_conv_2d_nhwc_hwcm": (
        named("linalg.depthwise_conv_2d_nhwc_hwcm", [(1, 6, 6, 3), (3, 3, 3, 2)],
              (1, 4, 4, 3, 2), strides(2)), [(1, 6, 6, 3), (3, 3, 3, 2)],
        lambda x, w: np.einsum("nhwcij,ijcm->nhwcm", windows(x, (3, 3), (1, 2)), w)),
    "depthwise_conv_1d_nwc_wc": (
        named("linalg.depthwise_conv_1d_nwc_wc", [(1, 8, 3), (3, 3)], (1, 6, 3), strides(1)),
        [(1, 8, 3), (3, 3)], lambda x, w: np.einsum("nwci,ic->nwc", windows(x, (3,), (1,)), w)),
    "pooling_nhwc_min": (
        pooling("linalg.pooling_nhwc_min", (1, 8, 8, 3), (2, 2), (1, 4, 4, 3), 2),
        [(1, 8, 8, 3)], lambda x: np.minimum(windows(x, (2, 2), (1, 2), 2).min(axis=(4, 5)), 0)),
    "pooling_nchw_max": (
        pooling("linalg.pooling_nchw_max", (1, 3, 8, 8), (2, 2), (1, 3, 4, 4), 2),
        [(1, 3, 8, 8)], lambda x: np.maximum(windows(x, (2, 2), (2, 3), 2).max(axis=(4, 5)), 0)),
    "pooling_nwc_sum": (
        pooling("linalg.pooling_nwc_sum", (1, 8, 3), (2,), (1, 4, 3), 2),
        [(1, 8, 3)], lambda x: windows(x, (2,), (1,), 2).sum(axis=3)),
    "pooling_ndhwc_max": (
        pooling("linalg.pooling_ndhwc_max", (1, 4, 4, 4, 2), (2, 2, 2), (1, 2, 2, 2, 2), 2),
        [(1, 4, 4, 4, 2)],
        lambda x: np.maximum(windows(x, (2, 2, 2), (1, 2, 3), 2).max(axis=(5, 6, 7)), 0)),
    "pack": (function([(4, 6)], (2, 3, 2, 2), "%r = linalg.pack %a0 inner_dims_pos = [0, 1] "
                      "inner_tiles = [2, 2] into %e : tensor<4x6xf32> -> tensor<2x3x2x2xf32>"),
             [(4, 6)], lambda x: x.reshape(2, 2, 3, 2).transpose(0, 2, 1, 3)),
    "pack_padded": (
        function([(5, 6)], (3, 2, 2, 4), "%r = linalg.pack %a0 padding_value(%zero : f32) "
                 "inner_dims_pos = [0, 1] inner_tiles = [2, 4] into %e "
                 ": tensor<5x6xf32> -> tensor<3x2x2x4xf32>"),
        [(5, 6)], lambda x: np.pad(x, [(0, 1), (0, 2)]).reshape(3, 2, 2, 4).transpose(0, 2, 1, 3)),
    "unpack": (function([(2, 3, 2, 2)], (4, 6), "%r = linalg.unpack %a0 inner_dims_pos = [0, 1] "
                        "inner_tiles = [2, 2] into %e : tensor<2x3x2x2xf32> -> tensor<4x6xf32>"),
               [(2, 3, 2, 2)], lambda x: x.transpose(0, 2, 1, 3).reshape(4, 6)),
    "winograd_filter_transform": (
        function([(2, 3, 3, 5)], (6, 6, 5, 2), "%r = linalg.winograd_filter_transform fmr(F_4_3) "
                 "ins(%a0 : tensor<2x3x3x5xf32>) outs(%e : tensor<6x6x5x2xf32>) "
                 "-> tensor<6x6x5x2xf32>"),
        [(2, 3, 3, 5)], lambda w: np.einsum("ai,fijc,bj->abcf", WINOGRAD_G, w, WINOGRAD_G)),
}


@pytest.mark.parametrize("name", sorted(NAMED_OPS))
def test_named_linalg_op_runs_and_matches_numpy(name):
    text, shapes, reference = NAMED_OPS[name]
    rng = np.random.default_rng(0)
    inputs = [uniform(rng, shape) for shape in shapes]
    expected = np.asarray(reference(*[x.astype(np.float64) for x in inputs]))
    check_case(Case(text, inputs, expected, TOLERANCE))


def test_quantized_matmul_runs_in_int32():
    text = """
func.func @main(%a: tensor<4x6xi8>, %b: tensor<6x5xi8>) -> tensor<4x5xi32> {
  %z = arith.constant 0 : i32
  %za = arith.constant 3 : i32
  %zb = arith.constant -2 : i32
  %e = tensor.empty() : tensor<4x5xi32>
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<4x5xi32>) -> tensor<4x5xi32>
  %r = linalg.quantized_matmul ins(%a, %b, %za, %zb : tensor<4x6xi8>, tensor<6x5xi8>, i32, i32)
      outs(%f : tensor<4x5xi32>) -> tensor<4x5xi32>
  return %r : tensor<4x5xi32>
}"""
    rng = np.random.default_rng(1)
    a, b = (rng.integers(-128, 128, shape).astype(np.int8) for shape in [(4, 6), (6, 5)])
    reference = (a.astype(np.int64) - 3) @ (b.astype(np.int64) + 2)
    check_case(Case(text, [a, b], reference, 0))


def test_fill_rng_runs_on_the_fallback_engine():
    text = function([], (4, 6), """%lo = arith.constant -1.0 : f64
  %hi = arith.constant 1.0 : f64
  %seed = arith.constant 7 : i32
  %r = linalg.fill_rng_2d ins(%lo, %hi, %seed : f64, f64, i32) outs(%e : tensor<4x6xf32>)
      -> tensor<4x6xf32>""")
    compiled, diagnostics = compile_text(text)
    output = simulate(compiled).outputs[0]
    assert output.shape == (4, 6) and np.all(np.abs(output) <= 1) and len(np.unique(output)) > 1
    assert any("'linalg.fill_rng_2d' stays on the fallback engine" in d.message
               for d in diagnostics)


# -- refusals are located -------------------------------------------------------------------

SOFTMAX_ON_MEMREFS = """
func.func @main(%x: memref<4x6xf32>, %y: memref<4x6xf32>) {
  linalg.softmax dimension(1) ins(%x : memref<4x6xf32>) outs(%y : memref<4x6xf32>)
  return
}"""


def test_softmax_on_memrefs_is_a_located_compile_error():
    with pytest.raises(DiagnosticError) as failure:
        compile_text(SOFTMAX_ON_MEMREFS)
    (error,) = [d for d in failure.value.diagnostics if d.severity == "error"]
    assert error.format().startswith("-:3:3: error: 'linalg.softmax' is decomposed on tensors")


def test_simulator_refuses_an_op_that_is_not_structured_at_its_location():
    with pytest.raises(DiagnosticError) as failure:
        simulate(SOFTMAX_ON_MEMREFS)
    (error,) = failure.value.diagnostics
    assert error.format().startswith("-:3:3: error: 'linalg.softmax' is not a structured op")


# -- body ops of a generic on the fallback engine --------------------------------------------

def unsigned(x):
    return x.astype(f"u{x.dtype.itemsize}")


I8 = np.array([-128, -7, -1, 0, 1, 5, 100, 127], np.int8)
I32 = np.array([-9, -8, -1, 0, 1, 7, 8, 1000], np.int32)
F32 = np.array([np.nan, -2.5, -1, 0, 0.5, 1, 3, np.inf], np.float32)
# name -> (input, result element type, body computing %y from %x, numpy reference)
BODIES = {
    "uitofp": (I8, "f32", "%y = arith.uitofp %x : i8 to f32", lambda x: unsigned(x)),
    "extui": (I8, "i32", "%y = arith.extui %x : i8 to i32", lambda x: unsigned(x)),
    "divui": (I8, "i8", "%c = arith.constant 3 : i8\n    %y = arith.divui %x, %c : i8",
              lambda x: (unsigned(x) // 3).astype(np.int8)),
    "maxui": (I8, "i8", "%c = arith.constant 100 : i8\n    %y = arith.maxui %x, %c : i8",
              lambda x: np.maximum(unsigned(x), 100).astype(np.int8)),
    "ceildivsi": (I32, "i32", "%c = arith.constant 4 : i32\n    %y = arith.ceildivsi %x, %c : i32",
                  lambda x: -(-x // 4)),
    "cmpi_ult": (I8, "i8", "%c = arith.constant 100 : i8\n    %k = arith.cmpi ult, %x, %c : i8\n"
                 "    %y = arith.extui %k : i1 to i8", lambda x: unsigned(x) < 100),
    "cmpf_une": (F32, "f32", "%k = arith.cmpf une, %x, %x : f32\n"
                 "    %y = arith.uitofp %k : i1 to f32", lambda x: np.isnan(x)),
    "cmpf_one": (F32, "f32", "%c = arith.constant 1.0 : f32\n    %k = arith.cmpf one, %x, %c : f32\n"
                 "    %y = arith.uitofp %k : i1 to f32", lambda x: ~np.isnan(x) & (x != 1)),
    "cmpf_ord": (F32, "f32", "%k = arith.cmpf ord, %x, %x : f32\n"
                 "    %y = arith.uitofp %k : i1 to f32", lambda x: ~np.isnan(x)),
    "fma": (F32, "f32", "%y = math.fma %x, %x, %x : f32", lambda x: x * x + x),
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_generic_body_op_on_the_fallback_engine(name):
    x, element, body, reference = BODIES[name]
    n, source = x.size, {np.dtype(np.int8): "i8", np.dtype(np.int32): "i32",
                         np.dtype(np.float32): "f32"}[x.dtype]
    identity = affine(1, [0])
    text = f"""
func.func @main(%a: tensor<{n}x{source}>) -> tensor<{n}x{element}> {{
  %e = tensor.empty() : tensor<{n}x{element}>
  %r = linalg.generic {{indexing_maps = [{identity}, {identity}], iterator_types = ["parallel"]}}
      ins(%a : tensor<{n}x{source}>) outs(%e : tensor<{n}x{element}>) {{
  ^bb0(%x: {source}, %o: {element}):
    {body}
    linalg.yield %y : {element}
  }} -> tensor<{n}x{element}>
  return %r : tensor<{n}x{element}>
}}"""
    compiled, _ = compile_text(text)
    with np.errstate(invalid="ignore"):
        output = simulate(compiled, [x]).outputs[0]
        expected = np.asarray(reference(x)).astype(output.dtype)
    np.testing.assert_array_equal(output, expected)
