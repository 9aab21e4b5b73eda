"""Hand-written npu programs for the simulator tests (generic op form)."""

from __future__ import annotations

import re

import numpy as np

MLIR_TYPES = {np.dtype(np.float16): "f16", np.dtype(np.float32): "f32",
              np.dtype(np.int8): "i8", np.dtype(np.int32): "i32"}


def memref(shape, dtype, space: int | None = None) -> str:
    dims = "x".join(str(n) for n in shape)
    element = MLIR_TYPES[np.dtype(dtype)]
    return f"memref<{dims}x{element}{', 1' if space else ''}>"


def single_tile(inputs, outputs, body: str) -> str:
    """A program loading every input into SRAM, running `body` and storing
    every output. In `body`, {in0}/{in0_t} (other braces are left alone) name the SRAM tile of input 0 and
    its type, {out0}/{out0_t} those of output 0. DRAM arguments are the inputs
    then the outputs (destination-passing style)."""
    args, lines, names = [], [], {}
    for kind, specs in (("in", inputs), ("out", outputs)):
        for i, (shape, dtype) in enumerate(specs):
            dram, sram = memref(shape, dtype), memref(shape, dtype, 1)
            args.append(f"%{kind}{i}_dram: {dram}")
            names[f"{kind}{i}"], names[f"{kind}{i}_t"] = f"%{kind}{i}", sram
            lines.append(f'  %{kind}{i} = "npu.alloc"() : () -> {sram}')
    for i, (shape, dtype) in enumerate(inputs):
        dram, sram = memref(shape, dtype), memref(shape, dtype, 1)
        lines.append(f'  %tin{i} = "npu.dma_load"(%in{i}_dram, %in{i}) {{channel = 0 : i64}} '
                     f': ({dram}, {sram}) -> !npu.token')
        lines.append(f'  "npu.wait"(%tin{i}) : (!npu.token) -> ()')
    lines.append("  " + re.sub(r"\{((?:in|out)\d+(?:_t)?)\}", lambda m: names[m.group(1)], body))
    lines.append('  "npu.barrier"() : () -> ()')
    for i, (shape, dtype) in enumerate(outputs):
        dram, sram = memref(shape, dtype), memref(shape, dtype, 1)
        lines.append(f'  %tout{i} = "npu.dma_store"(%out{i}, %out{i}_dram) {{channel = 1 : i64}} '
                     f': ({sram}, {dram}) -> !npu.token')
        lines.append(f'  "npu.wait"(%tout{i}) : (!npu.token) -> ()')
    return (f"func.func @main({', '.join(args)}) {{\n" + "\n".join(lines)
            + "\n  return\n}\n")


def tiled_matmul(m: int, n: int, k: int, tm: int, tn: int, tk: int) -> str:
    """C[m,n] (f32) = A[m,k] (f16) @ B[k,n] (f16), tiled tm x tn x tk with partial
    tiles at the edges; the f32 accumulator tile stays in SRAM across k."""
    a_t, b_t, c_t = (f"memref<?x?xf16, strided<[{k}, 1], offset: ?>>",
                     f"memref<?x?xf16, strided<[{n}, 1], offset: ?>>",
                     f"memref<?x?xf32, strided<[{n}, 1], offset: ?>>")
    sa_t, sb_t, sc_t = (f"memref<?x?xf16, strided<[{tk}, 1]>, 1>",
                        f"memref<?x?xf16, strided<[{tn}, 1]>, 1>",
                        f"memref<?x?xf32, strided<[{tn}, 1]>, 1>")
    return f"""
func.func @main(%A: memref<{m}x{k}xf16>, %B: memref<{k}x{n}xf16>) -> memref<{m}x{n}xf32> {{
  %c0 = arith.constant 0 : index
  %cm = arith.constant {m} : index
  %cn = arith.constant {n} : index
  %ck = arith.constant {k} : index
  %ctm = arith.constant {tm} : index
  %ctn = arith.constant {tn} : index
  %ctk = arith.constant {tk} : index
  %C = memref.alloc() : memref<{m}x{n}xf32>
  %a = "npu.alloc"() : () -> memref<{tm}x{tk}xf16, 1>
  %b = "npu.alloc"() : () -> memref<{tk}x{tn}xf16, 1>
  %c = "npu.alloc"() : () -> memref<{tm}x{tn}xf32, 1>
  scf.for %i = %c0 to %cm step %ctm {{
    %mi = affine.min affine_map<(d0) -> (-d0 + {m}, {tm})>(%i)
    scf.for %j = %c0 to %cn step %ctn {{
      %nj = affine.min affine_map<(d0) -> (-d0 + {n}, {tn})>(%j)
      %tc = memref.subview %c[0, 0] [%mi, %nj] [1, 1] : memref<{tm}x{tn}xf32, 1> to {sc_t}
      "npu.fill"(%tc) {{value = 0.0 : f64}} : ({sc_t}) -> ()
      scf.for %l = %c0 to %ck step %ctk {{
        %kl = affine.min affine_map<(d0) -> (-d0 + {k}, {tk})>(%l)
        %ga = memref.subview %A[%i, %l] [%mi, %kl] [1, 1] : memref<{m}x{k}xf16> to {a_t}
        %gb = memref.subview %B[%l, %j] [%kl, %nj] [1, 1] : memref<{k}x{n}xf16> to {b_t}
        %ta = memref.subview %a[0, 0] [%mi, %kl] [1, 1] : memref<{tm}x{tk}xf16, 1> to {sa_t}
        %tb = memref.subview %b[0, 0] [%kl, %nj] [1, 1] : memref<{tk}x{tn}xf16, 1> to {sb_t}
        // The previous step's matmul still reads the tiles about to be reloaded.
        "npu.barrier"() : () -> ()
        %t0 = "npu.dma_load"(%ga, %ta) {{channel = 0 : i64}} : ({a_t}, {sa_t}) -> !npu.token
        %t1 = "npu.dma_load"(%gb, %tb) {{channel = 1 : i64}} : ({b_t}, {sb_t}) -> !npu.token
        "npu.wait"(%t0, %t1) : (!npu.token, !npu.token) -> ()
        "npu.matmul"(%ta, %tb, %tc) {{accumulate = true, activation = "none"}}
            : ({sa_t}, {sb_t}, {sc_t}) -> ()
      }}
      "npu.barrier"() : () -> ()
      %gc = memref.subview %C[%i, %j] [%mi, %nj] [1, 1] : memref<{m}x{n}xf32> to {c_t}
      %ts = "npu.dma_store"(%tc, %gc) {{channel = 0 : i64}} : ({sc_t}, {c_t}) -> !npu.token
      "npu.wait"(%ts) : (!npu.token) -> ()
    }}
  }}
  return %C : memref<{m}x{n}xf32>
}}
"""


def streamed_matmul(m: int, n: int, k: int, tile_m: int, buffers: int) -> str:
    """C[m,n] = A[m,k] @ B[k,n] with B resident and A streamed in tile_m-row tiles,
    with one SRAM buffer per tile (load, wait, compute, store, wait) or two
    (the next tile's load overlaps the current tile's matmul). DMAs do not wait
    for compute: a barrier orders each store after the matmul producing it
    and each reload after the matmul reading the tile."""
    assert buffers in (1, 2) and m % (2 * tile_m) == 0
    a_g = f"memref<{tile_m}x{k}xf16, strided<[{k}, 1], offset: ?>>"
    c_g = f"memref<{tile_m}x{n}xf32, strided<[{n}, 1], offset: ?>>"
    a_s, b_s, c_s = (f"memref<{tile_m}x{k}xf16, 1>", f"memref<{k}x{n}xf16, 1>",
                     f"memref<{tile_m}x{n}xf32, 1>")
    head = f"""
func.func @main(%A: memref<{m}x{k}xf16>, %B: memref<{k}x{n}xf16>, %C: memref<{m}x{n}xf32>) {{
  %c0 = arith.constant 0 : index
  %cm = arith.constant {m} : index
  %ct = arith.constant {tile_m} : index
  %b = "npu.alloc"() : () -> {b_s}
  %a0 = "npu.alloc"() : () -> {a_s}
  %c0b = "npu.alloc"() : () -> {c_s}
  %tb = "npu.dma_load"(%B, %b) {{channel = 1 : i64}} : (memref<{k}x{n}xf16>, {b_s}) -> !npu.token
  "npu.wait"(%tb) : (!npu.token) -> ()
"""
    if buffers == 1:
        body = f"""
  scf.for %i = %c0 to %cm step %ct {{
    %ga = memref.subview %A[%i, 0] [{tile_m}, {k}] [1, 1] : memref<{m}x{k}xf16> to {a_g}
    %gc = memref.subview %C[%i, 0] [{tile_m}, {n}] [1, 1] : memref<{m}x{n}xf32> to {c_g}
    %t = "npu.dma_load"(%ga, %a0) {{channel = 0 : i64}} : ({a_g}, {a_s}) -> !npu.token
    "npu.wait"(%t) : (!npu.token) -> ()
    "npu.matmul"(%a0, %b, %c0b) {{accumulate = false, activation = "none"}} : ({a_s}, {b_s}, {c_s}) -> ()
    "npu.barrier"() : () -> ()
    %s = "npu.dma_store"(%c0b, %gc) {{channel = 1 : i64}} : ({c_s}, {c_g}) -> !npu.token
    "npu.wait"(%s) : (!npu.token) -> ()
  }}
  return
}}
"""
    else:
        body = f"""
  %a1 = "npu.alloc"() : () -> {a_s}
  %c1b = "npu.alloc"() : () -> {c_s}
  %c2t = arith.constant {2 * tile_m} : index
  %last = arith.constant {m - tile_m} : index
  %g0 = memref.subview %A[%c0, 0] [{tile_m}, {k}] [1, 1] : memref<{m}x{k}xf16> to {a_g}
  %first = "npu.dma_load"(%g0, %a0) {{channel = 0 : i64}} : ({a_g}, {a_s}) -> !npu.token
  %last_load = scf.for %i = %c0 to %cm step %c2t iter_args(%ta0 = %first) -> (!npu.token) {{
    %i1 = arith.addi %i, %ct : index
    %g1 = memref.subview %A[%i1, 0] [{tile_m}, {k}] [1, 1] : memref<{m}x{k}xf16> to {a_g}
    %ta1 = "npu.dma_load"(%g1, %a1) {{channel = 1 : i64}} : ({a_g}, {a_s}) -> !npu.token
    "npu.wait"(%ta0) : (!npu.token) -> ()
    "npu.matmul"(%a0, %b, %c0b) {{accumulate = false, activation = "none"}} : ({a_s}, {b_s}, {c_s}) -> ()
    "npu.barrier"() : () -> ()
    %gc0 = memref.subview %C[%i, 0] [{tile_m}, {n}] [1, 1] : memref<{m}x{n}xf32> to {c_g}
    %s0 = "npu.dma_store"(%c0b, %gc0) {{channel = 0 : i64}} : ({c_s}, {c_g}) -> !npu.token
    %i2 = arith.addi %i, %c2t : index
    %inext = arith.minsi %i2, %last : index
    %g2 = memref.subview %A[%inext, 0] [{tile_m}, {k}] [1, 1] : memref<{m}x{k}xf16> to {a_g}
    %ta0n = "npu.dma_load"(%g2, %a0) {{channel = 0 : i64}} : ({a_g}, {a_s}) -> !npu.token
    "npu.wait"(%ta1) : (!npu.token) -> ()
    "npu.matmul"(%a1, %b, %c1b) {{accumulate = false, activation = "none"}} : ({a_s}, {b_s}, {c_s}) -> ()
    "npu.barrier"() : () -> ()
    %gc1 = memref.subview %C[%i1, 0] [{tile_m}, {n}] [1, 1] : memref<{m}x{n}xf32> to {c_g}
    %s1 = "npu.dma_store"(%c1b, %gc1) {{channel = 1 : i64}} : ({c_s}, {c_g}) -> !npu.token
    "npu.wait"(%s0, %s1) : (!npu.token, !npu.token) -> ()
    scf.yield %ta0n : !npu.token
  }}
  "npu.wait"(%last_load) : (!npu.token) -> ()
  return
}}
"""
    return head + body


# -- tiled programs with one or more SRAM buffers per streamed operand ----------------------

def _strides(shape) -> list[int]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return strides[::-1]


class Step:
    """One tile of a pipelined program: DMA loads into SRAM buffers, one compute
    op, then DMA stores of results. A buffer is named by (role, version): the
    version picks one of the role's SRAM copies (version % copies)."""

    def __init__(self, loads, compute, writes, stores=()):
        self.loads = loads      # [(role, version, arg, offsets, sizes)]
        self.compute = compute  # fn(view) -> op text; view(role, version, sizes) -> (ssa, type)
        self.writes = writes    # [(role, version)] the compute op writes
        self.stores = stores    # [(role, version, arg, offsets, sizes)] after the compute


def pipelined(args, pools, steps, buffers: int, resident=()) -> str:
    """A straight-line program over `steps` with `buffers` SRAM copies of every
    streamed role (1: load, compute, store in turn; 2: the next step's loads
    overlap the current compute, its stores the next compute).

    args: [(name, shape, dtype)] DRAM arguments (destination-passing style);
    pools: {role: (max tile shape, dtype)}; resident: [(role, arg, offsets,
    sizes)] loaded once before the steps (one copy). DMA engines do not wait
    for compute: a barrier before each step's stores and prefetches orders them
    after the previous compute; a compute op first waits for the stores still
    reading the buffer it writes."""
    assert buffers in (1, 2, 3)
    arg_types = {name: (list(shape), dtype) for name, shape, dtype in args}
    resident_roles = {role for role, *_ in resident}
    lines, counter = [], [0]

    def fresh(prefix):
        counter[0] += 1
        return f"%{prefix}{counter[0]}"

    def copies(role):
        return 1 if role in resident_roles else buffers

    def sram(role, version, sizes):
        shape, dtype = pools[role]
        name = f"%{role}{version % copies(role)}"
        full = memref(shape, dtype, 1)
        if list(sizes) == list(shape):
            return name, full
        dims = "x".join(map(str, sizes))
        view_t = (f"memref<{dims}x{MLIR_TYPES[np.dtype(dtype)]}, "
                  f"strided<[{', '.join(map(str, _strides(shape)))}]>, 1>")
        view = fresh("s")
        zeros = ", ".join("0" for _ in shape)
        ones = ", ".join("1" for _ in shape)
        lines.append(f"  {view} = memref.subview {name}[{zeros}] [{', '.join(map(str, sizes))}] "
                     f"[{ones}] : {full} to {view_t}")
        return view, view_t

    def dram(arg, offsets, sizes):
        shape, dtype = arg_types[arg]
        full = memref(shape, dtype)
        if list(sizes) == shape:
            return f"%{arg}", full
        strides = _strides(shape)
        offset = sum(o * s for o, s in zip(offsets, strides))
        view_t = (f"memref<{'x'.join(map(str, sizes))}x{MLIR_TYPES[np.dtype(dtype)]}, "
                  f"strided<[{', '.join(map(str, strides))}], offset: {offset}>>")
        view = fresh("g")
        lines.append(f"  {view} = memref.subview %{arg}[{', '.join(map(str, offsets))}] "
                     f"[{', '.join(map(str, sizes))}] [{', '.join('1' for _ in shape)}] "
                     f": {full} to {view_t}")
        return view, view_t

    def load(role, version, arg, offsets, sizes, channel=0):
        src, src_t = dram(arg, offsets, sizes)
        dst, dst_t = sram(role, version, sizes)
        token = fresh("t")
        lines.append(f'  {token} = "npu.dma_load"({src}, {dst}) {{channel = {channel} : i64}} '
                     f": ({src_t}, {dst_t}) -> !npu.token")
        return token

    pending_stores = {}  # (role, copy) -> tokens of stores reading it

    def store(role, version, arg, offsets, sizes):
        src, src_t = sram(role, version, sizes)
        dst, dst_t = dram(arg, offsets, sizes)
        token = fresh("t")
        lines.append(f'  {token} = "npu.dma_store"({src}, {dst}) {{channel = 1 : i64}} '
                     f": ({src_t}, {dst_t}) -> !npu.token")
        pending_stores.setdefault((role, version % copies(role)), []).append(token)

    def wait(tokens):
        if tokens:
            lines.append(f'  "npu.wait"({", ".join(tokens)}) : '
                         f'({", ".join("!npu.token" for _ in tokens)}) -> ()')

    for role, (shape, dtype) in pools.items():
        for c in range(copies(role)):
            lines.append(f'  %{role}{c} = "npu.alloc"() : () -> {memref(shape, dtype, 1)}')
    wait([load(role, 0, arg, offsets, sizes, channel=1)
          for role, arg, offsets, sizes in resident])
    loaded = {}
    for t, step in enumerate(steps):
        if t:
            lines.append('  "npu.barrier"() : () -> ()')
            for spec in steps[t - 1].stores:
                store(*spec)
        if buffers == 1 or t == 0:
            loaded[t] = [load(*spec) for spec in step.loads]
        if buffers > 1:
            # Prefetch up to buffers - 1 steps ahead, into copies no running op uses.
            for ahead in range(t + 1, min(t + buffers, len(steps))):
                if ahead not in loaded:
                    loaded[ahead] = [load(*spec) for spec in steps[ahead].loads]
        wait(loaded.pop(t))
        for role, version in step.writes:
            wait(pending_stores.pop((role, version % copies(role)), []))
        lines.append("  " + step.compute(sram))
    lines.append('  "npu.barrier"() : () -> ()')
    for spec in steps[-1].stores:
        store(*spec)
    wait([token for tokens in pending_stores.values() for token in tokens])
    signature = ", ".join(f"%{name}: {memref(shape, dtype)}" for name, shape, dtype in args)
    return f"func.func @main({signature}) {{\n" + "\n".join(lines) + "\n  return\n}\n"


def _tiles(total: int, tile: int):
    return [(start, min(tile, total - start)) for start in range(0, total, tile)]


def pipelined_matmul(m, n, k, tm, tn, tk, buffers, dtype=np.float16, acc=np.float32):
    """C[m,n] (acc) = A[m,k] @ B[k,n] in tm x tn x tk tiles (partial at the edges),
    accumulating over k in an SRAM tile of C."""
    args = [("A", (m, k), dtype), ("B", (k, n), dtype), ("C", (m, n), acc)]
    pools = {"a": ((tm, tk), dtype), "b": ((tk, tn), dtype), "c": ((tm, tn), acc)}
    steps = []
    for out, ((i, mi), (j, nj)) in enumerate((r, c) for r in _tiles(m, tm) for c in _tiles(n, tn)):
        ks = _tiles(k, tk)
        for index, (l, kl) in enumerate(ks):
            t = len(steps)

            def compute(view, t=t, out=out, mi=mi, nj=nj, kl=kl, first=index == 0):
                (a, a_t), (b, b_t) = view("a", t, (mi, kl)), view("b", t, (kl, nj))
                c, c_t = view("c", out, (mi, nj))
                return (f'"npu.matmul"({a}, {b}, {c}) {{accumulate = {str(not first).lower()}, '
                        f'activation = "none"}} : ({a_t}, {b_t}, {c_t}) -> ()')
            last = index == len(ks) - 1
            steps.append(Step(loads=[("a", t, "A", (i, l), (mi, kl)), ("b", t, "B", (l, j), (kl, nj))],
                              compute=compute, writes=[("c", out)],
                              stores=[("c", out, "C", (i, j), (mi, nj))] if last else []))
    return pipelined(args, pools, steps, buffers)


def _row_tiled_window_op(h, w, c, out_c, kernel, stride, tile_rows, buffers, dtype, out_dtype,
                         op_text, weights):
    """A windowed NHWC op (conv2d or pool2d, no padding) tiled over output rows:
    each step loads the input rows its windows read (the halo included)."""
    oh, ow = (h - kernel) // stride + 1, (w - kernel) // stride + 1
    args = [("X", (1, h, w, c), dtype)]
    pools = {"x": ((1, (tile_rows - 1) * stride + kernel, w, c), dtype),
             "y": ((1, tile_rows, ow, out_c), out_dtype)}
    resident = []
    if weights:
        args.append(("W", (kernel, kernel, c, out_c), dtype))
        pools["w"] = ((kernel, kernel, c, out_c), dtype)
        resident = [("w", "W", (0, 0, 0, 0), (kernel, kernel, c, out_c))]
    args.append(("Y", (1, oh, ow, out_c), out_dtype))
    steps = []
    for t, (r, rows) in enumerate(_tiles(oh, tile_rows)):
        in_rows = (rows - 1) * stride + kernel

        def compute(view, t=t, rows=rows, in_rows=in_rows):
            x, x_t = view("x", t, (1, in_rows, w, c))
            y, y_t = view("y", t, (1, rows, ow, out_c))
            return op_text(x, x_t, y, y_t, view)
        steps.append(Step(loads=[("x", t, "X", (0, r * stride, 0, 0), (1, in_rows, w, c))],
                          compute=compute, writes=[("y", t)],
                          stores=[("y", t, "Y", (0, r, 0, 0), (1, rows, ow, out_c))]))
    return pipelined(args, pools, steps, buffers, resident)


def pipelined_conv2d(h, w, c, f, kernel, stride, tile_rows, buffers, dtype=np.float16,
                     acc=np.float32):
    """Y = conv2d(X[1,h,w,c], W[k,k,c,f]) (valid, strided), W resident, output rows tiled."""
    def op_text(x, x_t, y, y_t, view):
        wt, w_t = view("w", 0, (kernel, kernel, c, f))
        return (f'"npu.conv2d"({x}, {wt}, {y}) {{accumulate = false, activation = "none", '
                f"strides = array<i64: {stride}, {stride}>, dilations = array<i64: 1, 1>}} "
                f": ({x_t}, {w_t}, {y_t}) -> ()")
    return _row_tiled_window_op(h, w, c, f, kernel, stride, tile_rows, buffers, dtype, acc,
                                op_text, weights=True)


def pipelined_pool2d(kind, h, w, c, window, stride, tile_rows, buffers, dtype=np.float16):
    """Y = pool2d(X[1,h,w,c]) (kind max or avg, valid), output rows tiled."""
    def op_text(x, x_t, y, y_t, view):
        return (f'"npu.pool2d"({x}, {y}) {{kind = "{kind}", window = array<i64: {window}, '
                f"{window}>, strides = array<i64: {stride}, {stride}>}} : ({x_t}, {y_t}) -> ()")
    return _row_tiled_window_op(h, w, c, c, window, stride, tile_rows, buffers, dtype, dtype,
                                op_text, weights=False)


def pipelined_elementwise(kind, rows, cols, tr, tc, buffers, dtype=np.float16):
    """Y[rows,cols] = X (kind) bias[cols] (broadcast over rows), in tr x tc tiles."""
    args = [("X", (rows, cols), dtype), ("Bias", (cols,), dtype), ("Y", (rows, cols), dtype)]
    pools = {"x": ((tr, tc), dtype), "v": ((tc,), dtype), "y": ((tr, tc), dtype)}
    steps = []
    for t, ((i, ri), (j, cj)) in enumerate((r, c) for r in _tiles(rows, tr)
                                           for c in _tiles(cols, tc)):
        def compute(view, t=t, ri=ri, cj=cj):
            (x, x_t), (v, v_t), (y, y_t) = (view("x", t, (ri, cj)), view("v", t, (cj,)),
                                            view("y", t, (ri, cj)))
            return (f'"npu.elementwise"({x}, {v}, {y}) {{kind = "{kind}"}} '
                    f": ({x_t}, {v_t}, {y_t}) -> ()")
        steps.append(Step(loads=[("x", t, "X", (i, j), (ri, cj)), ("v", t, "Bias", (j,), (cj,))],
                          compute=compute, writes=[("y", t)],
                          stores=[("y", t, "Y", (i, j), (ri, cj))]))
    return pipelined(args, pools, steps, buffers)
