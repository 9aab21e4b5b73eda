"""Chains of convolutions run in strips of rows (npu-cascade-rows) end to end
against onnxruntime: MobileNetV2's inverted residual (1x1 expand, 3x3
depthwise, 1x1 project) and a stem (3x3 stride-2 conv, then a 3x3 stride-2
max pool), whose tensors between the ops exceed the SRAM. Each strip copies
the halo rows the strip before made (or computes them again, where they are
a small share of it) and writes its rows of the result in place; the
results are the model's to rounding, and the program moves fewer DRAM bytes
than the same chain run whole (-fusion=1 keeps it whole)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import atvoss_mlir
from e2e_testing import bench_module, compile_and_check, without_pass
from onnx_testing import model

CASCADED = "cascaded"


def weight(rng, *shape):
    return (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)


def inverted_residual(size: int = 56, stride: int = 2, residual: bool = False,
                      channels: int = 16, expanded: int = 96, seed: int = 11):
    """expand 16 -> 96, relu6, depthwise 3x3, relu6, project 96 -> 16 (+ x)."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["e"]),
             helper.make_node("Clip", ["e", "lo", "hi"], ["e6"]),
             helper.make_node("Conv", ["e6", "wd", "bd"], ["d"], group=expanded,
                              pads=[1, 1, 1, 1], strides=[stride, stride]),
             helper.make_node("Clip", ["d", "lo", "hi"], ["d6"]),
             helper.make_node("Conv", ["d6", "w2", "b2"], ["p" if residual else "y"])]
    if residual:
        nodes.append(helper.make_node("Add", ["p", "x"], ["y"]))
    out = size // stride
    return model(nodes, {"x": [1, channels, size, size]}, {"y": [1, channels, out, out]},
                 {"w1": weight(rng, expanded, channels, 1, 1), "b1": weight(rng, expanded),
                  "wd": weight(rng, expanded, 1, 3, 3), "bd": weight(rng, expanded),
                  "w2": weight(rng, channels, expanded, 1, 1), "b2": weight(rng, channels),
                  "lo": np.array(0, np.float32), "hi": np.array(6, np.float32)})


def stem(size: int = 128):
    """3x3 stride-2 conv 3 -> 64 (padded below and right), relu, 3x3 stride-2 max pool."""
    rng = np.random.default_rng(12)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[0, 0, 1, 1],
                              strides=[2, 2]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1])]
    return model(nodes, {"x": [1, 3, size, size]}, {"y": [1, 64, size // 4, size // 4]},
                 {"w": weight(rng, 64, 3, 3, 3), "b": weight(rng, 64)})


def feeds(channels: int, size: int) -> dict:
    return {"x": np.random.default_rng(13).standard_normal((1, channels, size, size))
            .astype(np.float32)}


def cascades(compiled) -> list:
    return [r.message for r in compiled.remarks if r.message.startswith(CASCADED)]


def dram_bytes(compiled) -> int:
    compiled.run(timing_only=True)
    return compiled.report["dram_read_bytes"] + compiled.report["dram_write_bytes"]


@pytest.mark.parametrize("target", ["npu", "npu -pipeline-stages=1", "npu -pipeline-stages=3",
                                    "npu -layout-pref=auto", "npu -dram-bytes-per-cycle=32"])
def test_inverted_residual_in_strips_matches_onnxruntime(target):
    compiled, _ = compile_and_check(inverted_residual(), feeds(16, 56), target,
                                    rtol=1e-5, atol=1e-5)
    assert cascades(compiled), [r.message for r in compiled.remarks]
    if target == "npu":
        # Pipelined at both ends (the project conv a strip behind), more
        # strips pay: 7 of 4 rows (4 of 7, one after another, before).
        assert "in 7 strips of 4 rows" in cascades(compiled)[0]


def test_cascade_moves_fewer_dram_bytes_than_the_chain_whole():
    cascaded, _ = compile_and_check(inverted_residual(), feeds(16, 56), "npu",
                                    rtol=1e-5, atol=1e-5)
    whole, _ = compile_and_check(inverted_residual(), feeds(16, 56), "npu -fusion=1",
                                 rtol=1e-5, atol=1e-5)
    assert cascades(cascaded) and not cascades(whole)
    # The 1.2 MB expanded tensor is neither written nor read back.
    assert dram_bytes(cascaded) < dram_bytes(whole) - 2 * 56 * 56 * 96 * 4


def test_chain_left_whole_says_why():
    """With the output-stationary dataflow forced and four times the DRAM
    bandwidth, the estimate finds no strip height saving 10%, plain or
    pipelined: the chain stays whole, with a remark giving its cycles."""
    compiled, _ = compile_and_check(inverted_residual(), feeds(16, 56),
                                    "npu -dataflow=os -dram-bytes-per-cycle=256",
                                    rtol=1e-5, atol=1e-5)
    assert not cascades(compiled)
    assert any(" not cascaded: the 1204224 B between them go through DRAM" in r.message
               for r in compiled.remarks), [r.message for r in compiled.remarks]


def test_pipelined_strips_when_no_plain_cascade_pays(monkeypatch):
    """With the output-stationary dataflow forced, no strip height saves 10%
    with the strips one after another, but pipelined (the expand conv of the
    next strip beside the depthwise conv of this one) the chain does, and
    really runs faster than whole."""
    target = "npu -dataflow=os"
    cascaded, _ = compile_and_check(inverted_residual(), feeds(16, 56), target,
                                    rtol=1e-5, atol=1e-5)
    assert cascades(cascaded) and "pipelined" in cascades(cascaded)[0]
    without_pass(monkeypatch, "npu-cascade-rows")
    whole = atvoss_mlir.compile(inverted_residual(), target)
    whole.run(timing_only=True)
    assert cascaded.report["total_cycles"] < 0.8 * whole.report["total_cycles"], \
        (cascaded.report["total_cycles"], whole.report["total_cycles"])


def test_halo_rows_are_copied_not_computed_again():
    """MobileNetV2's block1.0 at 112x112 in strips of 2 output rows: each
    strip's expand conv makes 4 new rows of the 5 its depthwise conv reads and
    copies the fifth from the strip before, so the program multiplies as many
    times as the model (computing it again: a quarter more of the expand
    conv's MACs)."""
    compiled, _ = compile_and_check(inverted_residual(112), feeds(16, 112), "npu",
                                    rtol=1e-5, atol=1e-5)
    assert cascades(compiled) and "of 2 rows" in cascades(compiled)[0], cascades(compiled)
    expand = 112 * 112 * 16 * 96
    depthwise = 56 * 56 * 9 * 96
    project = 56 * 56 * 96 * 16
    assert compiled.report["macs"] == expand + depthwise + project


def test_cascade_writes_its_rows_into_a_concatenation():
    """ShuffleNet's stride-2 unit: the branch's result is concatenated after an
    average-pooled shortcut; each strip of the branch writes its rows at the
    branch's channel offset of the concatenation, in place."""
    branch = inverted_residual()
    graph = branch.graph
    graph.node.append(helper.make_node("AveragePool", ["x"], ["s"], kernel_shape=[3, 3],
                                       strides=[2, 2], pads=[1, 1, 1, 1]))
    graph.node[4].output[0] = "b"
    graph.node.append(helper.make_node("Concat", ["s", "b"], ["y"], axis=1))
    graph.output[0].type.tensor_type.shape.dim[1].dim_value = 32
    compiled, _ = compile_and_check(branch, feeds(16, 56), rtol=1e-5, atol=1e-5)
    assert cascades(compiled), [r.message for r in compiled.remarks]


def test_stem_strips_write_into_the_dense_block():
    """DenseNet's stem (bench/zoo.py, two blocks of two layers): its max pool's
    strips write their rows into the first dense block's concatenation, which
    is itself a slice of the next one's; each strip's pool starts from -inf in
    that slice (the fill folded into the op), so none runs on the fallback
    engine, and the network matches onnxruntime."""
    densenet = bench_module("zoo").densenet121(blocks=(2, 2), image=224, classes=10)
    feed = {"input": np.random.default_rng(4).standard_normal((1, 3, 224, 224))
            .astype(np.float32)}
    compiled, _ = compile_and_check(densenet, feed, "npu", rtol=1e-4, atol=1e-4)
    assert any("'conv0', 'pool0'" in message for message in cascades(compiled)), \
        cascades(compiled)
    assert not compiled.fallback_ops, compiled.fallback_ops


def test_residual_block_cascades_up_to_the_add():
    """The project conv starts from the skip (the residual add folded into it):
    the chain ends at the depthwise conv, and the result is still the model's."""
    compiled, _ = compile_and_check(inverted_residual(stride=1, residual=True),
                                    feeds(16, 56), rtol=1e-5, atol=1e-5)
    assert all("project" not in message for message in cascades(compiled))


def bottleneck(size: int = 56, channels: int = 32):
    """1x1 conv 32 -> 256, relu, 1x1 conv 256 -> 32, + x: DRAM-bound whole (the
    3.2 MB tensor between the convs is written and read back); the 401,408 B
    result is large enough for the add to fold into the last conv."""
    rng = np.random.default_rng(14)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["e"]),
             helper.make_node("Relu", ["e"], ["r"]),
             helper.make_node("Conv", ["r", "w2", "b2"], ["p"]),
             helper.make_node("Add", ["p", "x"], ["y"])]
    return model(nodes, {"x": [1, channels, size, size]}, {"y": [1, channels, size, size]},
                 {"w1": weight(rng, 256, channels, 1, 1), "b1": weight(rng, 256),
                  "w2": weight(rng, channels, 256, 1, 1), "b2": weight(rng, channels)})


@pytest.mark.parametrize("target", ["npu", "npu -pipeline-stages=1", "npu -layout-pref=auto",
                                    "npu -max-sram-bytes=262144"])
def test_chain_ending_at_a_residual_add_in_strips_matches_onnxruntime(target):
    """The last conv accumulates onto the skip (the add folded into it): each
    strip starts from its rows of the skip plus the bias, in its rows of the
    result, so the chain runs in strips up to the add."""
    compiled, _ = compile_and_check(bottleneck(), feeds(32, 56), target, rtol=1e-5, atol=1e-5)
    if target == "npu":
        assert any("residual add folded in" in r.message for r in compiled.remarks)
        assert cascades(compiled), [r.message for r in compiled.remarks]
        whole, _ = compile_and_check(bottleneck(), feeds(32, 56), "npu -fusion=1",
                                     rtol=1e-5, atol=1e-5)
        assert dram_bytes(compiled) < dram_bytes(whole) - 2 * 56 * 56 * 256 * 4


@pytest.mark.parametrize("target", ["npu", "npu -pipeline-stages=1", "npu -layout-pref=NCHW"])
def test_stem_conv_and_pool_in_strips_matches_onnxruntime(target):
    compiled, _ = compile_and_check(stem(), feeds(3, 128), target, rtol=1e-5, atol=1e-5)
    if target == "npu":
        assert cascades(compiled), [r.message for r in compiled.remarks]


def stem_read_padded(size: int = 128):
    """The stem above, its pooled result read by a padded 3x3 stride-2 average
    pool and by a 1x1 conv (ShuffleNet's stem and its first unit's shortcut)."""
    graph = stem(size)
    rng = np.random.default_rng(15)
    graph.graph.node[2].output[0] = "p"
    graph.graph.node.extend([
        helper.make_node("AveragePool", ["p"], ["s"], kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["p", "w1", "b1"], ["q"], strides=[2, 2]),
        helper.make_node("Concat", ["s", "q"], ["y"], axis=1)])
    graph.graph.initializer.extend([helper.make_tensor("w1", 1, [16, 64, 1, 1],
                                                       weight(rng, 16, 64, 1, 1).ravel()),
                                    helper.make_tensor("b1", 1, [16], weight(rng, 16))])
    shape = graph.graph.output[0].type.tensor_type.shape
    shape.dim[1].dim_value, shape.dim[2].dim_value, shape.dim[3].dim_value = \
        80, size // 8, size // 8
    return graph


@pytest.mark.parametrize("target", ["npu", "npu -pipeline-stages=1", "npu -layout-pref=NCHW"])
def test_stem_read_padded_by_a_pool_in_strips_matches_onnxruntime(target):
    """The average pool folds the padding into its loads: the stem runs in
    strips, and the pad reads the rows they make."""
    compiled, _ = compile_and_check(stem_read_padded(), feeds(3, 128), target,
                                    rtol=1e-5, atol=1e-5)
    if target == "npu":
        assert cascades(compiled) == [
            "cascaded 'Conv_0', 'MaxPool_2' in 5 strips of 7 rows, pipelined: 'Conv_0' of the "
            "next strip runs beside the rest of each strip: the 1048576 B between them stay in "
            "SRAM a strip at a time (estimated 33916 -> 16792 cycles)"], \
            [r.message for r in compiled.remarks]


def random_chain(seed: int):
    """2 to 4 convs, depthwise convs and pools with random kernels (1, 3, 5),
    strides, dilations and asymmetric pads, batch 1 or 2."""
    rng = np.random.default_rng(seed)
    batch, size, channels = int(rng.choice([1, 2])), int(rng.choice([40, 48, 56, 64])), 16
    nodes, initializers, source, height, width = [], {}, "x", size, size
    for i in range(int(rng.integers(2, 5))):
        kind = str(rng.choice(["conv", "dw", "max", "avg"]))
        kernel, stride = int(rng.choice([1, 3, 5])), int(rng.choice([1, 1, 2]))
        dilation = int(rng.choice([1, 1, 2])) if kernel > 1 and kind in ("conv", "dw") else 1
        if kind in ("max", "avg") and kernel == 1:
            kernel = 3
        pads = [int(rng.integers(0, kernel)) for _ in range(4)]
        extent = (kernel - 1) * dilation + 1
        if min(height + pads[0] + pads[2], width + pads[1] + pads[3]) < extent:
            continue
        name = f"t{i}"
        if kind in ("conv", "dw"):
            filters = int(rng.choice([16, 32, 64])) if kind == "conv" else channels
            group = channels if kind == "dw" else 1
            initializers[f"w{i}"] = weight(rng, filters, channels // group, kernel, kernel)
            initializers[f"b{i}"] = weight(rng, filters)
            nodes += [helper.make_node("Conv", [source, f"w{i}", f"b{i}"], [name + "c"],
                                       group=group, kernel_shape=[kernel, kernel],
                                       strides=[stride, stride], dilations=[dilation] * 2,
                                       pads=pads),
                      helper.make_node("Relu", [name + "c"], [name])]
            channels = filters
        else:
            extra = {"count_include_pad": 1} if kind == "avg" else {}
            nodes.append(helper.make_node("MaxPool" if kind == "max" else "AveragePool",
                                          [source], [name], kernel_shape=[kernel, kernel],
                                          strides=[stride, stride], pads=pads, **extra))
        height = (height + pads[0] + pads[2] - extent) // stride + 1
        width = (width + pads[1] + pads[3] - extent) // stride + 1
        source = name
    nodes.append(helper.make_node("Identity", [source], ["y"]))
    return (model(nodes, {"x": [batch, 16, size, size]}, {"y": [batch, channels, height, width]},
                  initializers),
            {"x": np.random.default_rng(seed + 100).standard_normal((batch, 16, size, size))
             .astype(np.float32)})


@pytest.mark.parametrize("target", ["npu -max-sram-bytes=262144 -dram-bytes-per-cycle=16",
                                    "npu -max-sram-bytes=524288 -dram-bytes-per-cycle=8"])
def test_random_chains_match_onnxruntime(target):
    """Twelve random chains on DRAM-bound targets; those cascaded (4 and 3 of
    them) cut their rows wherever a kernel, stride, dilation or pad puts them,
    and must still compute the model."""
    taken = []
    for seed in range(12):
        onnx_model, inputs = random_chain(seed)
        compiled, _ = compile_and_check(onnx_model, inputs, target, rtol=1e-4, atol=1e-4)
        if cascades(compiled):
            taken.append(seed)
    assert len(taken) >= 2, taken   # the chains exercise the pass


@pytest.mark.parametrize("seed", [29, 59])
def test_prologue_constants_are_freed_with_their_op(seed):
    """A pool folded into the conv after it as a prologue scales each input tile
    by a constant held in a one-element SRAM buffer. It is freed with the conv's
    tiles: freed after the ops that follow (the first deallocation found when
    the conv's own were not made yet), it sat where the buffer plan keeps a
    later tensor ('npu.alloc' op at offset 123264 overlaps a live buffer, on
    seed 59) or split the SRAM the later tiles were sized by (seed 29)."""
    onnx_model, inputs = random_chain(seed)
    compiled, _ = compile_and_check(onnx_model, inputs,
                                    "npu -max-sram-bytes=262144 -dram-bytes-per-cycle=16",
                                    rtol=1e-4, atol=1e-4)
    assert any("as a prologue" in r.message for r in compiled.remarks), \
        [r.message for r in compiled.remarks]


def swish_block(size: int = 56, channels: int = 16, expanded: int = 96):
    """EfficientNet's MBConv without its squeeze-excitation: expand 1x1, batch
    norm and swish (x * sigmoid(x)), depthwise 3x3, batch norm and swish,
    project 1x1. The swish is not an epilogue the matrix unit applies."""
    rng = np.random.default_rng(15)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["e"]),
             helper.make_node("BatchNormalization", ["e", "g1", "b1", "m1", "v1"], ["n"]),
             helper.make_node("Sigmoid", ["n"], ["ns"]),
             helper.make_node("Mul", ["n", "ns"], ["a"]),
             helper.make_node("Conv", ["a", "wd"], ["d"], group=expanded, pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["d"], ["ds"]),
             helper.make_node("Mul", ["d", "ds"], ["da"]),
             helper.make_node("Conv", ["da", "w2"], ["y"])]
    return model(nodes, {"x": [1, channels, size, size]}, {"y": [1, channels, size, size]},
                 {"w1": weight(rng, expanded, channels, 1, 1),
                  "g1": 1 + 0.1 * weight(rng, expanded), "b1": weight(rng, expanded),
                  "m1": 0.1 * weight(rng, expanded),
                  "v1": (1 + rng.random(expanded)).astype(np.float32),
                  "wd": weight(rng, expanded, 1, 3, 3),
                  "w2": weight(rng, channels, expanded, 1, 1)})


@pytest.mark.parametrize("target", ["npu", "npu -pipeline-stages=1", "npu -layout-pref=auto"])
def test_elementwise_ops_between_convs_run_in_the_strips(target):
    """The swish after the expand conv (batch norm, sigmoid and multiply, one
    elementwise op 'Mul_3') is a member of a chain with it: each strip computes
    it on its rows in SRAM, the results are the model's, and the 1.2 MB tensor
    the expand conv makes never goes to DRAM."""
    compiled, _ = compile_and_check(swish_block(), feeds(16, 56), target, rtol=1e-5, atol=1e-5)
    assert any("'Conv_0', 'Mul_3'" in message for message in cascades(compiled)), \
        [r.message for r in compiled.remarks]
    if target == "npu":
        whole, _ = compile_and_check(swish_block(), feeds(16, 56), "npu -fusion=1",
                                     rtol=1e-5, atol=1e-5)
        assert dram_bytes(compiled) < dram_bytes(whole) - 2 * 56 * 56 * 96 * 4


@pytest.mark.parametrize("stride", [1, 2])
def test_project_conv_lags_a_strip_behind(stride, monkeypatch):
    """An inverted residual whose strips are pipelined at both ends: the
    expand conv of the next strip before the depthwise conv of this one, the
    project conv of this strip after the depthwise conv of the next, so both
    matrix-unit convs run beside a depthwise conv. It matches onnxruntime and
    runs faster than with the project conv in its own strip."""
    compiled, _ = compile_and_check(inverted_residual(stride=stride), feeds(16, 56), "npu",
                                    rtol=1e-5, atol=1e-5)
    assert cascades(compiled) and "of each strip after the next strip's middle" in \
        cascades(compiled)[0], cascades(compiled)
    compiled.run(timing_only=True)
    monkeypatch.setattr("atvoss_mlir.passes.cascade_estimate.pipeline_lag",
                        lambda members, lead: 0)
    unlagged = atvoss_mlir.compile(inverted_residual(stride=stride), "npu")
    unlagged.run(timing_only=True)
    assert "after the next strip's middle" not in " ".join(cascades(unlagged))
    assert compiled.report["total_cycles"] < unlagged.report["total_cycles"], \
        (compiled.report["total_cycles"], unlagged.report["total_cycles"])


def excited_block(size: int = 112, channels: int = 32, squeezed: int = 8,
                  projected: int = 16, expanded: int = 96):
    """EfficientNet's squeeze-excitation ending a block, then the next block's
    expand: a gate per channel (global average pool, 1x1 convs, sigmoid)
    scales the 1.6 MB result of a conv, a 1x1 conv projects it to 16
    channels, and the next 1x1 conv expands them to 96 (a 4.8 MB tensor)."""
    rng = np.random.default_rng(15)
    nodes = [helper.make_node("Conv", ["input", "wd", "bd"], ["x"], group=channels,
                              pads=[1, 1, 1, 1]),
             helper.make_node("GlobalAveragePool", ["x"], ["g"]),
             helper.make_node("Conv", ["g", "ws1", "bs1"], ["s1"]),
             helper.make_node("Relu", ["s1"], ["r1"]),
             helper.make_node("Conv", ["r1", "ws2", "bs2"], ["s2"]),
             helper.make_node("Sigmoid", ["s2"], ["gate"]),
             helper.make_node("Mul", ["x", "gate"], ["scaled"], name="scaled"),
             helper.make_node("Conv", ["scaled", "wp", "bp"], ["p"]),
             helper.make_node("Conv", ["p", "we", "be"], ["e"]),
             helper.make_node("Relu", ["e"], ["y"])]
    return model(nodes, {"input": [1, channels, size, size]},
                 {"y": [1, expanded, size, size]},
                 {"wd": weight(rng, channels, 1, 3, 3), "bd": weight(rng, channels),
                  "ws1": weight(rng, squeezed, channels, 1, 1), "bs1": weight(rng, squeezed),
                  "ws2": weight(rng, channels, squeezed, 1, 1), "bs2": weight(rng, channels),
                  "wp": weight(rng, projected, channels, 1, 1), "bp": weight(rng, projected),
                  "we": weight(rng, expanded, projected, 1, 1), "be": weight(rng, expanded)})


@pytest.mark.parametrize("target", ["npu", "npu -pipeline-stages=1", "npu -layout-pref=auto"])
def test_gated_input_runs_in_the_strips_of_its_reader(target):
    """The gate's product is only the project conv's input, which folds it into
    its loads (a prologue). Cascading the convs alone would read rows of the
    product, made whole first and written to DRAM; the chain starts at the
    product instead, each strip's conv folding its rows of it: the product is
    never written to DRAM (453,876 -> 410,157 cycles at the default target),
    and the result is the model's."""
    compiled, _ = compile_and_check(excited_block(), {"input": feeds(32, 112)["x"]}, target,
                                    rtol=1e-5, atol=1e-5)
    assert any(message.startswith("cascaded 'scaled'") for message in cascades(compiled)), \
        cascades(compiled)
    assert any("'scaled' folded into this op as a prologue" in r.message
               for r in compiled.remarks)
    # Written: the depthwise conv's result (the product's size, read by the
    # pool and the product) and the result, in NHWC and transposed to NCHW;
    # not the product.
    compiled.run(timing_only=True)
    result, product = 96 * 112 * 112 * 4, 32 * 112 * 112 * 4
    assert compiled.report["dram_write_bytes"] < 2 * result + 2 * product, \
        compiled.report["dram_write_bytes"]
