"""Cross-check of the matrix unit's cycle model against SCALE-Sim.

    python bench/sim_scalesim.py [--closed-form] [--venv build/scalesim-venv] [--jobs 2]

For each layer below and each dataflow (WS, OS) on a 32x32 array:
  ours:      a one-op npu program (the whole layer as one tile, in an SRAM made
             large enough), simulated timing-only; the figure is the matrix
             engine's busy cycles from the report;
  SCALE-Sim: SCALE-Sim 3 itself (pip package `scalesim`, in its own virtualenv
             because it needs numpy < 2.4) on the same layer, through its
             Python API with save_disk_space=True; the figure is its compute
             cycles (Total Cycles minus Stall Cycles of COMPUTE_REPORT.csv).
The script prints both and their ratio; it fails (exit 1) if any ratio is
outside [0.9, 1.1].

If SCALE-Sim cannot be installed or run (or with --closed-form), the
reference is SCALE-Sim's compute cycles in closed form, and the output says
so: a layer is a GEMM, M = output pixels, N = filters, K = R*S*C; on an R x C
array WS has ceil(K/R) * ceil(N/C) folds of 2R + C + M - 2 cycles, OS
ceil(M/R) * ceil(N/C) folds of R + C + K - 2 (partial folds cost as much as
full ones), minus one (Total Cycles is the index of the last cycle). This
form reproduces SCALE-Sim 3.0's figures for these layers exactly.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
ARRAY = 32

# name, kind, params. conv: (H, W, C, F, kernel, stride, pad) on a 1xHxWxC NHWC input.
LAYERS = [
    ("gemm_256", "gemm", (256, 256, 256)),                  # M, N, K
    ("conv3x3_56x56x64_64", "conv", (56, 56, 64, 64, 3, 1, 1)),
    ("conv7x7s2_224x224x3_64", "conv", (224, 224, 3, 64, 7, 2, 3)),
    ("conv1x1_28x28x256_512", "conv", (28, 28, 256, 512, 1, 1, 0)),
]
DATAFLOWS = ("ws", "os")


def conv_geometry(params):
    h, w, c, f, kernel, stride, pad = params
    hp, wp = h + 2 * pad, w + 2 * pad
    oh, ow = (hp - kernel) // stride + 1, (wp - kernel) // stride + 1
    return hp, wp, oh, ow


def gemm_of(kind, params):
    """The layer as a GEMM (M, N, K)."""
    if kind == "gemm":
        return params
    h, w, c, f, kernel, stride, pad = params
    _, _, oh, ow = conv_geometry(params)
    return oh * ow, f, kernel * kernel * c


# -- our simulator ---------------------------------------------------------------------

def npu_program(kind, params) -> str:
    """One matrix op on SRAM tiles holding the whole layer (padding already applied)."""
    if kind == "gemm":
        m, n, k = params
        a, b, c = (f"memref<{m}x{k}xf16, 1>", f"memref<{k}x{n}xf16, 1>",
                   f"memref<{m}x{n}xf32, 1>")
        op = (f'"npu.matmul"(%a, %b, %c) {{accumulate = false, activation = "none"}} '
              f': ({a}, {b}, {c}) -> ()')
    else:
        h, w, ch, f, kernel, stride, pad = params
        hp, wp, oh, ow = conv_geometry(params)
        a, b, c = (f"memref<1x{hp}x{wp}x{ch}xf16, 1>", f"memref<{kernel}x{kernel}x{ch}x{f}xf16, 1>",
                   f"memref<1x{oh}x{ow}x{f}xf32, 1>")
        op = (f'"npu.conv2d"(%a, %b, %c) {{accumulate = false, activation = "none", '
              f'strides = array<i64: {stride}, {stride}>, dilations = array<i64: 1, 1>}} '
              f': ({a}, {b}, {c}) -> ()')
    return f"""func.func @main() {{
  %a = "npu.alloc"() : () -> {a}
  %b = "npu.alloc"() : () -> {b}
  %c = "npu.alloc"() : () -> {c}
  {op}
  return
}}
"""


def our_cycles(kind, params, dataflow) -> int:
    from atvoss_mlir.sim import simulate
    target = (f"npu -array-rows={ARRAY} -array-cols={ARRAY} -dataflow={dataflow} "
              f"-max-sram-bytes={1 << 26}")
    report = simulate(npu_program(kind, params), target=target, timing_only=True).report
    return report["engines"]["matrix"]["busy_cycles"]


# -- SCALE-Sim -----------------------------------------------------------------------------

CONFIG = """[general]
run_name = {run_name}

[architecture_presets]
ArrayHeight = {array}
ArrayWidth = {array}
IfmapSramSzkB = 8192
FilterSramSzkB = 8192
OfmapSramSzkB = 8192
IfmapOffset = 0
FilterOffset = 10000000
OfmapOffset = 20000000
Bandwidth = 64
Dataflow = {dataflow}
ReadRequestBuffer = 32
WriteRequestBuffer = 32

[layout]
IfmapCustomLayout = False
FilterCustomLayout = False
IfmapSRAMBankBandwidth = 10
IfmapSRAMBankNum = 10
IfmapSRAMBankPort = 2
FilterSRAMBankBandwidth = 10
FilterSRAMBankNum = 10
FilterSRAMBankPort = 2

[sparsity]
SparsitySupport = false
SparseRep = ellpack_block
OptimizedMapping = false
BlockSize = 8
RandomNumberGeneratorSeed = 40

[run_presets]
InterfaceBandwidth = USER
UseRamulatorTrace = False
"""

# Custom layouts are off; SCALE-Sim still reads one layout row per layer.
LAYOUT_HEADER = ("Layer name, IFMAP Height Intraline Factor, IFMAP Width Intraline Factor, "
                 "Filter Height Intraline Factor, Filter Width Intraline Factor, "
                 "Channel Intraline Factor, Num Filter Intraline Factor, "
                 "IFMAP Height Intraline Order, IFMAP Width Intraline Order, "
                 "Channel Intraline Order, IFMAP Height Interline Order, "
                 "IFMAP Width Interline Order, Channel Interline Order, "
                 "Num Filter Intraline Order, Channel Intraline Order, "
                 "Filter Height Intraline Order, Filter Width Intraline Order, "
                 "Num Filter Interline Order, Channel Interline Order, "
                 "Filter Height Interline Order, Filter Width Interline Order,\n")
LAYOUT_ROW = " 1, 1, 1, 1, 1, 1, 0, 1, 2, 0, 1, 2, 0, 1, 2, 3, 0, 1, 2, 3,\n"

RUNNER = """
import sys
from scalesim.scale_sim import scalesim
config, topology, layout, gemm, top = sys.argv[1:]
sim = scalesim(save_disk_space=True, verbose=False, config=config, topology=topology,
               layout=layout, input_type_gemm=gemm == "1")
sim.run_scale(top_path=top)
"""


def ensure_scalesim(venv: pathlib.Path) -> pathlib.Path:
    """The virtualenv's python with scalesim importable (created on first use)."""
    python = venv / "bin" / "python"
    if python.exists() and subprocess.run([str(python), "-c", "import scalesim.scale_sim"],
                                          capture_output=True).returncode == 0:
        return python
    print(f"installing scalesim into {venv} ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "scalesim", "numpy<2.4"],
                   check=True, capture_output=True)
    subprocess.run([str(python), "-c", "import scalesim.scale_sim"], check=True)
    return python


def write_inputs(work: pathlib.Path, group: str, layers, dataflow: str):
    """Config, topology and layout files of one SCALE-Sim run (layers of one kind)."""
    run_name = f"{group}_{dataflow}"
    config = work / f"{run_name}.cfg"
    config.write_text(CONFIG.format(run_name=run_name, array=ARRAY, dataflow=dataflow))
    topology = work / f"{group}.csv"
    layout = work / f"{group}_layout.csv"
    if group == "gemm":
        rows = ["Layer, M, N, K,\n"] + [f"{name}, {m}, {n}, {k},\n"
                                        for name, _, (m, n, k) in layers]
    else:
        rows = ["Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, "
                "Channels, Num Filter, Strides,\n"]
        for name, _, params in layers:
            h, w, c, f, kernel, stride, pad = params
            _, _, oh, ow = conv_geometry(params)
            # No padding field: feed the padded input, cut to the rows and columns the
            # windows read. SCALE-Sim takes OH = ceil((H - R + stride) / stride), one row
            # too many when a stride-2 window would hang over the padded edge (230 -> 113
            # for the 7x7 stride-2 conv on 224 + 2*3; 229 gives PyTorch's 112).
            hs, ws = (oh - 1) * stride + kernel, (ow - 1) * stride + kernel
            rows.append(f"{name}, {hs}, {ws}, {kernel}, {kernel}, {c}, {f}, {stride},\n")
    topology.write_text("".join(rows))
    layout.write_text(LAYOUT_HEADER + "".join(f"{name},{LAYOUT_ROW}" for name, _, _ in layers))
    return run_name, config, topology, layout


def run_scalesim(python, work, group, layers, dataflow) -> dict:
    """{layer name: (compute cycles, total cycles, stall cycles)} from one SCALE-Sim run."""
    run_name, config, topology, layout = write_inputs(work, group, layers, dataflow)
    top = work / "out"
    top.mkdir(exist_ok=True)
    run = subprocess.run([str(python), "-c", RUNNER, str(config), str(topology), str(layout),
                          "1" if group == "gemm" else "0", str(top)],
                         capture_output=True, text=True, cwd=work)
    if run.returncode != 0:
        raise RuntimeError(f"SCALE-Sim failed ({group}, {dataflow}):\n{run.stderr[-2000:]}")
    figures = {}
    with open(top / run_name / "COMPUTE_REPORT.csv") as stream:
        rows = list(csv.reader(stream, skipinitialspace=True))
    header = [h.strip() for h in rows[0]]
    for (name, _, _), row in zip(layers, rows[1:]):
        values = dict(zip(header, row))
        total, stall = int(values["Total Cycles"]), int(values["Stall Cycles"])
        figures[name] = (total - stall, total, stall)
    return figures


def closed_form(kind, params, dataflow) -> int:
    """SCALE-Sim's compute cycles in closed form: whole-array folds, minus one."""
    m, n, k = gemm_of(kind, params)
    rows, cols, streamed, weight = (k, n, m, 2) if dataflow == "ws" else (m, n, k, 1)
    folds = -(-rows // ARRAY) * -(-cols // ARRAY)
    return folds * (weight * ARRAY + ARRAY + streamed - 2) - 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", default=str(ROOT / "build" / "scalesim-venv"))
    parser.add_argument("--work", default=str(ROOT / "build" / "scalesim-run"))
    parser.add_argument("--jobs", type=int, default=2, help="SCALE-Sim runs in parallel")
    parser.add_argument("--closed-form", action="store_true",
                        help="skip SCALE-Sim: compare with its closed-form cycles")
    args = parser.parse_args()

    ours = {(name, df): our_cycles(kind, params, df)
            for name, kind, params in LAYERS for df in DATAFLOWS}

    reference, source, stalls = {}, None, {}
    if not args.closed_form:
        try:
            python = ensure_scalesim(pathlib.Path(args.venv))
            work = pathlib.Path(args.work)
            work.mkdir(parents=True, exist_ok=True)
            groups = {"gemm": [l for l in LAYERS if l[1] == "gemm"],
                      "conv": [l for l in LAYERS if l[1] == "conv"]}
            start = time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
                futures = {pool.submit(run_scalesim, python, work, group, layers, df): df
                           for df in DATAFLOWS for group, layers in groups.items()}
                for future in concurrent.futures.as_completed(futures):
                    df = futures[future]
                    for name, (compute, total, stall) in future.result().items():
                        reference[(name, df)] = compute
                        stalls[(name, df)] = stall
            source = (f"SCALE-Sim {_scalesim_version(python)} run on this machine "
                      f"({time.perf_counter() - start:.0f} s)")
        except (OSError, RuntimeError, subprocess.CalledProcessError) as failure:
            print(f"SCALE-Sim could not be run ({failure}); falling back to its closed form")
            reference = {}
    if not reference:
        reference = {(name, df): closed_form(kind, params, df)
                     for name, kind, params in LAYERS for df in DATAFLOWS}
        source = "SCALE-Sim's compute cycles in closed form; SCALE-Sim itself was NOT run"

    print(f"Matrix-unit compute cycles on a {ARRAY}x{ARRAY} array; reference: {source}")
    print(f"{'layer':<26} {'GEMM M x N x K':>18} {'df':>3} {'ours':>10} {'SCALE-Sim':>10} "
          f"{'ratio':>8} {'roofline':>9}")
    worst = 0.0
    for name, kind, params in LAYERS:
        m, n, k = gemm_of(kind, params)
        for df in DATAFLOWS:
            ratio = ours[(name, df)] / reference[(name, df)]
            worst = max(worst, abs(ratio - 1))
            stall = stalls.get((name, df))
            note = f"  (SCALE-Sim stalls {stall:,})" if stall else ""
            print(f"{name:<26} {f'{m}x{n}x{k}':>18} {df:>3} {ours[(name, df)]:>10,} "
                  f"{reference[(name, df)]:>10,} {ratio:>8.5f} "
                  f"{-(-m * n * k // ARRAY ** 2):>9,}{note}")
    ok = worst <= 0.10
    print(f"largest deviation {worst:.2%}: {'all within 10%' if ok else 'OUTSIDE 10%'}")
    return 0 if ok else 1


def _scalesim_version(python) -> str:
    run = subprocess.run([str(python), "-c", "import importlib.metadata as m; "
                          "print(m.version('scalesim'))"], capture_output=True, text=True)
    return run.stdout.strip() or "?"


if __name__ == "__main__":
    sys.exit(main())
