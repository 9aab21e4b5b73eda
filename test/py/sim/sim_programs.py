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
