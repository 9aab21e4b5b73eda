"""The deployable artifact: `atvoss compile -o model.mlirbc` (bytecode, weights as
dense_resource blobs), `CompiledModel.save` / `atvoss_mlir.load` with the model's
input and output names and target, every tool reading text or bytecode, corrupt,
truncated and wrong-target files refused with a located error, and output files
that a failed compile never leaves behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from mlir import ir
from onnx import helper

import atvoss_mlir
from atvoss_mlir import artifact
from atvoss_mlir.context import make_context
from atvoss_mlir.diagnostics import DiagnosticError
from onnx_testing import model, randn

TARGET = "npu -max-sram-bytes=65536"


def conv_model() -> onnx.ModelProto:
    """Two named inputs, two named outputs, 3.5 KiB of weights."""
    nodes = [helper.make_node("Conv", ["image", "weight", "bias"], ["conv"], name="conv",
                              pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["conv", "offset"], ["sum"], name="add"),
             helper.make_node("Relu", ["sum"], ["features"], name="relu"),
             helper.make_node("ReduceMean", ["features"], ["pooled"], name="pool",
                              axes=[2, 3], keepdims=0)]
    return model(nodes, {"image": [1, 3, 8, 8], "offset": [1, 8, 8, 8]},
                 {"features": [1, 8, 8, 8], "pooled": [1, 8]},
                 {"weight": randn(8, 3, 3, 3, seed=1), "bias": randn(8, seed=2)}, opset=13)


FEEDS = {"image": randn(1, 3, 8, 8, seed=3), "offset": randn(1, 8, 8, 8, seed=4)}


def tool(name: str, *args, cwd=None) -> subprocess.CompletedProcess:
    script = os.path.join(os.path.dirname(sys.executable), name)
    environment = {key: value for key, value in os.environ.items() if key != "ATVOSS_DEBUG"}
    return subprocess.run([script, *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env=environment, timeout=300)


def assert_located_failure(result: subprocess.CompletedProcess, path, pattern: str):
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert re.search(rf"^{re.escape(str(path))}:\d+:\d+: error: {pattern}", result.stderr,
                     re.MULTILINE), result.stderr


@pytest.fixture(scope="module")
def compiled():
    return atvoss_mlir.compile(conv_model(), TARGET)


@pytest.fixture(scope="module")
def expected(compiled):
    return compiled.run(FEEDS)


@pytest.fixture(scope="module")
def saved(compiled, tmp_path_factory):
    """The compiled model saved as bytecode and as text."""
    directory = tmp_path_factory.mktemp("artifact")
    paths = {"bytecode": directory / "conv.mlirbc", "text": directory / "conv.mlir"}
    for path in paths.values():
        compiled.save(str(path))
    return paths


# -- formats -----------------------------------------------------------------------------------

def test_bytecode_holds_weights_as_resources_and_the_model_record(saved):
    data = saved["bytecode"].read_bytes()
    assert data.startswith(artifact.BYTECODE_MAGIC)
    stored = ir.Module.parse(data, make_context())  # as the file holds it
    text = stored.operation.get_asm(large_resource_limit=None)
    assert "dense_resource<" in text and not re.search(r'dense<"0x[0-9A-F]{128}', text)
    assert artifact.CHECKSUM_ATTR in stored.operation.attributes
    module = artifact.parse_program(data, make_context(), str(saved["bytecode"]))
    assert artifact.CHECKSUM_ATTR not in module.operation.attributes
    metadata = artifact.read_metadata(module)
    assert metadata.target == atvoss_mlir.compiler.parse_target(TARGET)
    assert metadata.input_names == ["image", "offset"]
    assert metadata.output_names == ["features", "pooled"]


def test_loaded_weights_are_dense_again(saved, compiled):
    # Read from the file's blobs: the loaded module is the one compile() built,
    # so the simulator and the text form need no hex round trip.
    loaded = atvoss_mlir.load(str(saved["bytecode"]))
    assert "dense_resource<" not in loaded.program
    assert loaded.program.count("dense<") == compiled.program.count("dense<")


def test_blobs_are_read_from_the_bytecode_layout(saved):
    from atvoss_mlir.bytecode import resource_blobs
    data = saved["bytecode"].read_bytes()
    blobs = resource_blobs(data)
    weight = onnx.numpy_helper.to_array(
        next(i for i in conv_model().graph.initializer if i.name == "weight"))
    # The conv weight, in the HWCF layout the compiler chose.
    assert any(bytes(blob) == weight.transpose(2, 3, 1, 0).tobytes() for blob in blobs.values())
    assert resource_blobs(data[:len(data) // 2]) == {}
    assert resource_blobs(b"ML\xefR" + bytes(100)) == {}


def test_text_is_text_and_emit_overrides_the_suffix(tmp_path):
    path = tmp_path / "conv.onnx"
    onnx.save(conv_model(), path)
    as_text, as_bytecode = tmp_path / "text.mlirbc", tmp_path / "bytecode.mlir"
    assert tool("atvoss", "compile", path, "-q", "--emit=text", "-o", as_text).returncode == 0
    assert tool("atvoss", "compile", path, "-q", "--emit=bytecode", "-o",
                as_bytecode).returncode == 0
    text = as_text.read_text()
    assert 'npu.input_names = ["image", "offset"]' in text and "func.func @main" in text
    assert as_bytecode.read_bytes().startswith(artifact.BYTECODE_MAGIC)


def test_bytecode_is_about_the_size_of_the_weights(tmp_path):
    weight = randn(512, 256, seed=5)  # 512 KiB of fp32
    gemm = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], {"x": [4, 512]},
                 {"y": [4, 256]}, {"w": weight})
    compiled = atvoss_mlir.compile(gemm)
    compiled.save(str(tmp_path / "mm.mlirbc"))
    compiled.save(str(tmp_path / "mm.mlir"))
    bytecode_size = (tmp_path / "mm.mlirbc").stat().st_size
    assert weight.nbytes < bytecode_size < weight.nbytes * 1.05 + 32768
    assert (tmp_path / "mm.mlir").stat().st_size > 2 * weight.nbytes  # hex digits


# -- save and load -----------------------------------------------------------------------------

LOAD_AND_RUN = """
import sys
import numpy as np
import atvoss_mlir
loaded = atvoss_mlir.load(sys.argv[1])
with np.load(sys.argv[2]) as feeds:
    outputs = loaded.run({name: feeds[name] for name in feeds.files})
np.savez(sys.argv[3], **outputs)
print(loaded.target)
print(",".join(loaded.input_names), ",".join(loaded.output_names))
"""


@pytest.mark.parametrize("kind", ["bytecode", "text"])
def test_save_then_load_in_a_new_process_gives_the_same_outputs(saved, expected, compiled,
                                                                 kind, tmp_path):
    np.savez(tmp_path / "feeds.npz", **FEEDS)
    result = subprocess.run([sys.executable, "-c", LOAD_AND_RUN, str(saved[kind]),
                             str(tmp_path / "feeds.npz"), str(tmp_path / "out.npz")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    target, names = result.stdout.splitlines()
    assert target == str(compiled.target)
    assert names == "image,offset features,pooled"
    with np.load(tmp_path / "out.npz") as outputs:
        assert list(outputs.files) == ["features", "pooled"]
        for name, value in expected.items():
            np.testing.assert_array_equal(outputs[name], value)


def test_load_keeps_the_report_and_program(saved, compiled, expected):
    loaded = atvoss_mlir.load(str(saved["bytecode"]), target=TARGET)
    outputs = loaded.run(FEEDS)
    assert loaded.report["total_cycles"] == compiled.report["total_cycles"]
    assert "func.func @main" in loaded.program
    for name, value in expected.items():
        np.testing.assert_array_equal(outputs[name], value)


def test_compile_reads_bytecode_input(tmp_path, expected):
    path = tmp_path / "conv.onnx"
    onnx.save(conv_model(), path)
    linalg = tmp_path / "conv-linalg.mlirbc"
    assert tool("atvoss", "import", path, "-o", linalg).returncode == 0
    assert linalg.read_bytes().startswith(artifact.BYTECODE_MAGIC)
    outputs = atvoss_mlir.compile(str(linalg), TARGET).run(list(FEEDS.values()))
    for got, want in zip(outputs.values(), expected.values()):
        np.testing.assert_array_equal(got, want)


# -- the tools ---------------------------------------------------------------------------------

def test_atvoss_sim_runs_bytecode_with_input_names(saved, expected, tmp_path):
    np.savez(tmp_path / "feeds.npz", **FEEDS)
    result = tool("atvoss-sim", saved["bytecode"], "--inputs", tmp_path / "feeds.npz",
                  "--outputs", tmp_path / "out.npz", "--report=json")
    assert result.returncode == 0, result.stderr
    assert '"-max-sram-bytes=65536' in result.stdout or "-max-sram-bytes=65536" in result.stdout
    with np.load(tmp_path / "out.npz") as outputs:
        np.testing.assert_array_equal(outputs["result0"], expected["features"])
        np.testing.assert_array_equal(outputs["result1"], expected["pooled"])


def test_atvoss_opt_reads_and_writes_bytecode(saved, tmp_path):
    copy = tmp_path / "copy.mlirbc"
    result = tool("atvoss-opt", saved["bytecode"], "--npu-verify", "-o", copy)
    assert result.returncode == 0, result.stderr
    assert copy.read_bytes().startswith(artifact.BYTECODE_MAGIC)
    first = tool("atvoss-opt", saved["bytecode"])
    second = tool("atvoss-opt", copy)
    assert first.returncode == second.returncode == 0
    assert first.stdout == second.stdout and "npu.output_names" in first.stdout
    split = tool("atvoss-opt", saved["bytecode"], "--split-input-file")
    assert_located_failure(split, saved["bytecode"], "--split-input-file needs MLIR text")


# -- refusals ----------------------------------------------------------------------------------

def corrupted(saved, tmp_path, name: str, edit) -> str:
    data = bytearray(saved["bytecode"].read_bytes())
    path = tmp_path / name
    path.write_bytes(bytes(edit(data)))
    return str(path)


def flip(offset_fraction: float):
    def edit(data: bytearray) -> bytearray:
        data[int(offset_fraction * (len(data) - 1))] ^= 0x10
        return data
    return edit


EDITS = {
    "truncated-to-magic": lambda data: data[:4],
    "truncated-header": lambda data: data[:11],
    "truncated-quarter": lambda data: data[:len(data) // 4],
    "truncated-half": lambda data: data[:len(data) // 2],
    "truncated-last-byte": lambda data: data[:-1],
    "flip-start": flip(0.01),
    "flip-quarter": flip(0.25),
    "flip-middle": flip(0.5),
    "flip-end": flip(0.999),
    "flip-digest": lambda data: data.replace(b"sha256:", b"sha257:"),
    "empty-after-magic": lambda data: data[:4] + bytes(64),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_corrupt_bytecode_is_a_located_error(saved, tmp_path, edit):
    path = corrupted(saved, tmp_path, f"{edit}.mlirbc", EDITS[edit])
    for command in (("atvoss-sim", path, "--timing-only"), ("atvoss-opt", path)):
        assert_located_failure(tool(*command), path, "corrupt")
    with pytest.raises(DiagnosticError) as caught:
        atvoss_mlir.load(path)
    (diagnostic,) = caught.value.diagnostics
    assert str(diagnostic.resolved_position()) == f"{path}:1:1"
    assert "corrupt" in diagnostic.message


def test_bytecode_without_checksum_that_aborts_the_reader_is_an_error(tmp_path):
    # Bytecode written by another tool has no checksum. This bit of this
    # module's type table makes the MLIR 22 reader abort on an assertion.
    data = _damaged_plain_bytecode(ABORTING_OFFSET, ABORTING_XOR)
    path = tmp_path / "foreign.mlirbc"
    path.write_bytes(data)
    assert_located_failure(tool("atvoss-opt", path), path, "corrupt MLIR bytecode")
    with pytest.raises(DiagnosticError, match="corrupt MLIR bytecode"):
        artifact.parse_program(data, make_context(), str(path))


def test_bytecode_without_checksum_that_hangs_the_reader_is_an_error(monkeypatch):
    # This bit sends the reader into a loop that does not end in minutes.
    monkeypatch.setattr(artifact, "READER_SECONDS", 2.0)
    with pytest.raises(DiagnosticError, match="the MLIR reader does not finish on it"):
        artifact.parse_program(_damaged_plain_bytecode(LOOPING_OFFSET, LOOPING_XOR),
                               make_context(), "foreign.mlirbc")


def _damaged_plain_bytecode(offset: int, xor: int) -> bytes:
    module = artifact.parse_program(ABORTING_SOURCE, make_context())
    data = bytearray(_plain_bytecode(module))
    data[offset] ^= xor
    return bytes(data)


def _plain_bytecode(module) -> bytes:
    import io
    stream = io.BytesIO()
    module.operation.write_bytecode(stream)
    return stream.getvalue()


ABORTING_SOURCE = """
func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %s = arith.addf %a, %c : tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}
"""
ABORTING_OFFSET, ABORTING_XOR = 39, 0x01
LOOPING_OFFSET, LOOPING_XOR = 46, 0x04


def test_another_target_is_refused(saved, tmp_path):
    other = "npu -max-sram-bytes=262144 -dataflow=os"
    for path in saved.values():
        result = tool("atvoss-sim", path, f"--target={other}", "--timing-only")
        assert_located_failure(result, path, "the program was compiled for another target: "
                               r"-dataflow=auto \(requested os\), -max-sram-bytes=65536 "
                               r"\(requested 262144\)")
        with pytest.raises(DiagnosticError, match="compiled for another target"):
            atvoss_mlir.load(str(path), target=other)
    assert tool("atvoss-sim", saved["bytecode"], f"--target={TARGET}",
                "--timing-only").returncode == 0


def test_a_malformed_record_is_a_located_error(tmp_path, saved):
    text = saved["text"].read_text().replace('npu.target = "npu ', 'npu.target = "gpu ', 1)
    path = tmp_path / "edited.mlir"
    path.write_text(text)
    result = tool("atvoss-sim", path, "--timing-only")
    assert_located_failure(result, path, "the recorded target 'gpu .*' is not valid here")
    names = saved["text"].read_text().replace('npu.input_names = ["image", "offset"]',
                                               'npu.input_names = ["image", 2]', 1)
    path.write_text(names)
    with pytest.raises(DiagnosticError, match="'npu.input_names' must be an array of strings"):
        atvoss_mlir.load(str(path))


# -- failed compiles leave no file -------------------------------------------------------------

def test_a_failed_compile_writes_no_output_file(tmp_path):
    bad = tmp_path / "bad.onnx"
    onnx.save(model([helper.make_node("RandomNormalLike", ["x"], ["y"], name="noise")],
                    {"x": [3, 5]}, {"y": [3, 5]}), bad)
    for output in ("new.mlirbc", "new.mlir"):
        result = tool("atvoss", "compile", bad, "-q", "-o", tmp_path / output)
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert not (tmp_path / output).exists()
    kept = tmp_path / "kept.mlir"
    kept.write_text("// an earlier result\n")
    assert tool("atvoss", "compile", bad, "-q", "-o", kept).returncode == 1
    assert kept.read_text() == "// an earlier result\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.onnx", "kept.mlir"]


def test_a_failed_atvoss_opt_writes_no_output_file(tmp_path):
    source = tmp_path / "too-big.mlir"
    source.write_text("""
func.func @main(%a: tensor<512x512xf32>, %b: tensor<512x512xf32>) -> tensor<512x512xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<512x512xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<512x512xf32>) -> tensor<512x512xf32>
  %c = linalg.matmul ins(%a, %b : tensor<512x512xf32>, tensor<512x512xf32>)
                     outs(%init : tensor<512x512xf32>) -> tensor<512x512xf32>
  return %c : tensor<512x512xf32>
}
""")
    for output in ("out.mlir", "out.mlirbc"):
        result = tool("atvoss-opt", source, "--npu-pipeline",
                      "--target=npu -max-sram-bytes=16 -tile-min=1", "-o", tmp_path / output)
        assert result.returncode == 1 and "error:" in result.stderr
        assert "Traceback" not in result.stderr
        assert not (tmp_path / output).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["too-big.mlir"]
