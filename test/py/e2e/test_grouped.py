"""A grouped conv's activation and residual add run on each group's result.

A grouped conv imports as one conv per group, their results concatenated.
An activation of the concatenation, and at -fusion=2 a residual add, are
applied to each group's result instead (npu-fuse-epilogue), so that they fold
into that group's conv: its epilogue, or its start from the skip tensor."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import atvoss_mlir
from e2e_testing import FP32, SMALL_SRAM_TARGET, compile_and_check, without_pass
from onnx_testing import model, randn, reference

GROUPS = 3


def shufflenet_unit(channels: int, size: int) -> onnx.ModelProto:
    """ShuffleNet v1's unit: grouped 1x1 conv and relu, channel shuffle,
    3x3 depthwise conv, grouped 1x1 conv, residual add, relu."""
    rng = np.random.default_rng(7)
    per_group = channels // GROUPS

    def weights(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)
    return model(
        [helper.make_node("Conv", ["x", "w1", "b1"], ["g"], group=GROUPS),
         helper.make_node("Relu", ["g"], ["r"]),
         helper.make_node("Reshape", ["r", "split"], ["s"]),
         helper.make_node("Transpose", ["s"], ["t"], perm=[0, 2, 1, 3, 4]),
         helper.make_node("Reshape", ["t", "merge"], ["m"]),
         helper.make_node("Conv", ["m", "w2"], ["d"], group=channels, pads=[1] * 4),
         helper.make_node("Conv", ["d", "w3", "b3"], ["e"], group=GROUPS),
         helper.make_node("Add", ["e", "x"], ["a"]),
         helper.make_node("Relu", ["a"], ["y"])],
        {"x": [1, channels, size, size]}, {"y": [1, channels, size, size]},
        {"w1": weights(channels, per_group, 1, 1), "b1": weights(channels),
         "split": np.array([1, GROUPS, per_group, size, size], np.int64),
         "merge": np.array([1, channels, size, size], np.int64),
         "w2": weights(channels, 1, 3, 3),
         "w3": weights(channels, per_group, 1, 1), "b3": weights(channels)})


def messages(compiled, text: str) -> list[str]:
    return [remark.message for remark in compiled.remarks if text in remark.message]


@pytest.fixture
def one_conv_per_group(monkeypatch):
    """Small units' groups of 4 and 8 channels would run several at a time
    (npu-pack-groups): the tests that follow each group's conv compile
    without that pass."""
    without_pass(monkeypatch, "npu-pack-groups")


@pytest.mark.parametrize("target", ["npu -fusion=0", "npu -fusion=1", "npu -fusion=2",
                                    SMALL_SRAM_TARGET])
def test_grouped_conv_epilogues_match_onnxruntime(target, one_conv_per_group):
    compiled, _ = compile_and_check(shufflenet_unit(12, 8), {"x": randn(1, 12, 8, 8, seed=2)},
                                    target, **FP32)
    folded = messages(compiled, "relu folded into its epilogue")
    # Each group's first conv takes its relu from -fusion=1. In the small SRAM
    # the 3 KB skip is over a quarter of it: the residual add folds into the
    # second conv too, with the relu after it.
    expected = 0 if "fusion=0" in target else 2 * GROUPS if target == SMALL_SRAM_TARGET \
        else GROUPS
    assert len(folded) == expected, folded
    assert len(messages(compiled, "residual add folded in")) == \
        (GROUPS if target == SMALL_SRAM_TARGET else 0)


def test_residual_add_folds_into_each_group_conv():
    """Group results larger than a quarter of the SRAM: each group's conv starts
    from its slice of the skip tensor plus its bias and the relu after the add
    is its epilogue, so the sum of the groups is never written to DRAM and read
    back, as it is at -fusion=1 (13.6 MB moved against 17.2 MB)."""
    channels, size = 72, 56
    unit, feeds = shufflenet_unit(channels, size), {"x": randn(1, channels, size, size, seed=3)}
    fused, _ = compile_and_check(unit, feeds, "npu -fusion=2", **FP32)
    epilogues, _ = compile_and_check(unit, feeds, "npu -fusion=1", **FP32)
    assert len(messages(fused, "residual add folded in")) == GROUPS
    assert len(messages(fused, "relu folded into its epilogue")) == 2 * GROUPS

    def moved(compiled):
        return compiled.report["dram_read_bytes"] + compiled.report["dram_write_bytes"]
    assert moved(epilogues) - moved(fused) >= 2 * channels * size * size * 4


def shufflenet_down_unit(channels: int, size: int, shuffle: bool = False) -> onnx.ModelProto:
    """ShuffleNet v1's stride-2 unit: the grouped branch (its second grouped
    conv's results concatenated), concatenated again with a 3x3 average-pooled
    shortcut, then a relu; with `shuffle`, the channel shuffle before the
    depthwise conv."""
    rng = np.random.default_rng(8)
    per_group, branch = channels // GROUPS, 2 * channels

    def weights(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)
    shuffled = [helper.make_node("Reshape", ["r", "split"], ["s"]),
                helper.make_node("Transpose", ["s"], ["t"], perm=[0, 2, 1, 3, 4]),
                helper.make_node("Reshape", ["t", "merge"], ["m"])] if shuffle else []
    return model(
        [helper.make_node("Conv", ["x", "w1", "b1"], ["g"], group=GROUPS),
         helper.make_node("Relu", ["g"], ["r"]), *shuffled,
         # Shuffled, the depthwise conv has a bias to permute too.
         helper.make_node("Conv", ["m", "w2", "b2"] if shuffle else ["r", "w2"], ["d"],
                          group=channels, pads=[1] * 4, strides=[2, 2]),
         helper.make_node("Conv", ["d", "w3", "b3"], ["e"], group=GROUPS),
         helper.make_node("AveragePool", ["x"], ["p"], kernel_shape=[3, 3], strides=[2, 2],
                          pads=[1] * 4),
         helper.make_node("Concat", ["p", "e"], ["c"], axis=1),
         helper.make_node("Relu", ["c"], ["y"])],
        {"x": [1, channels, size, size]}, {"y": [1, channels + branch, size // 2, size // 2]},
        {"w1": weights(channels, per_group, 1, 1), "b1": weights(channels),
         "w2": weights(channels, 1, 3, 3), "b2": weights(channels),
         "w3": weights(branch, per_group, 1, 1), "b3": weights(branch),
         "split": np.array([1, GROUPS, per_group, size, size], np.int64),
         "merge": np.array([1, channels, size, size], np.int64)})


@pytest.mark.parametrize("target", ["npu -fusion=0", "npu -fusion=1", "npu -fusion=2",
                                    SMALL_SRAM_TARGET])
def test_relu_after_a_concatenation_with_the_groups_folds_into_each_group(target, one_conv_per_group):
    """The relu of [shortcut, concatenation of the groups' results] is applied to
    each piece: the groups' pieces fold into their convs' epilogues, so the
    concatenation is not read back for the relu."""
    compiled, _ = compile_and_check(shufflenet_down_unit(12, 8),
                                    {"x": randn(1, 12, 8, 8, seed=4)}, target, **FP32)
    folded = messages(compiled, "relu folded into its epilogue")
    assert len(folded) == (0 if "fusion=0" in target else 2 * GROUPS), folded


@pytest.mark.parametrize("target", ["npu -fusion=0", "npu -fusion=2", "npu -layout-pref=NCHW",
                                    SMALL_SRAM_TARGET])
def test_shuffle_moves_below_the_strided_depthwise_conv(target):
    """The depthwise conv reads the unshuffled tensor with its weights and bias
    permuted, and the shuffle permutes its quarter-size result (in NHWC; at
    NCHW the shuffle is no channel split of the last dim and stays)."""
    channels, size = 12, 8
    compiled, _ = compile_and_check(shufflenet_down_unit(channels, size, shuffle=True),
                                    {"x": randn(1, channels, size, size, seed=7)}, target,
                                    **FP32)
    moved = messages(compiled, "moves below the depthwise conv")
    assert len(moved) == (0 if "NCHW" in target else 1), moved


def test_residual_add_folds_when_the_skip_exceeds_a_quarter_of_the_sram(one_conv_per_group):
    """Each group's 25 KB result is at most a quarter of a 128 KiB or 256 KiB
    SRAM, which leaves the add to the buffer plan; but the 75 KB skip is over a
    quarter of either: the sum is written over the skip, and the add folds into
    each group's conv (ShuffleNet's stages 0 and 1 at 1 MiB). In a 512 KiB
    SRAM the skip is at most a quarter too, and the add stays."""
    unit, feeds = shufflenet_unit(24, 28), {"x": randn(1, 24, 28, 28, seed=5)}
    for sram in (131072, 262144):
        folded, _ = compile_and_check(unit, feeds, f"npu -max-sram-bytes={sram}", **FP32)
        assert len(messages(folded, "residual add folded in")) == GROUPS
    kept, _ = compile_and_check(unit, feeds, "npu -max-sram-bytes=524288", **FP32)
    assert messages(kept, "residual add folded in") == []
    assert len(messages(kept, "and the 75264 B skip too")) == GROUPS


def shuffle_then_grouped_conv(channels: int, size: int) -> onnx.ModelProto:
    """A channel shuffle read straight by a grouped 1x1 conv: each group's conv
    reads its channel slice of the shuffled tensor, a reshape of the
    transpose's buffer."""
    rng = np.random.default_rng(9)
    per_group = channels // GROUPS

    def weights(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)
    return model(
        [helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("Reshape", ["r", "split"], ["s"]),
         helper.make_node("Transpose", ["s"], ["t"], perm=[0, 2, 1, 3, 4]),
         helper.make_node("Reshape", ["t", "merge"], ["m"]),
         helper.make_node("Conv", ["m", "w", "b"], ["y"], group=GROUPS)],
        {"x": [1, channels, size, size]}, {"y": [1, channels, size, size]},
        {"split": np.array([1, GROUPS, per_group, size, size], np.int64),
         "merge": np.array([1, channels, size, size], np.int64),
         "w": weights(channels, per_group, 1, 1), "b": weights(channels)})


@pytest.mark.parametrize("target", ["npu -fusion=1", "npu -fusion=2", SMALL_SRAM_TARGET])
def test_grouped_conv_reads_its_slice_of_a_shuffle_kept_in_sram(target):
    """At -fusion=2 the shuffled tensor stays in SRAM and each group's conv
    reads its slice in place: at its own channel offset of the reshaped
    buffer, not at the buffer's start."""
    compiled, _ = compile_and_check(shuffle_then_grouped_conv(12, 8),
                                    {"x": randn(1, 12, 8, 8, seed=6)}, target, **FP32)
    if target == "npu -fusion=2":
        assert messages(compiled, "kept 'linalg.transpose' output in SRAM")


def resnext_block(size: int = 16, width: int = 64, groups: int = 16) -> onnx.ModelProto:
    """ResNeXt's bottleneck: 1x1 conv, batch norm, relu, a padded 3x3 conv of
    `groups` groups, batch norm, relu, 1x1 conv, residual add, relu."""
    rng = np.random.default_rng(12)

    def weights(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    def norm(name, channels):
        return {f"{name}.s": weights(channels) + 1, f"{name}.b": weights(channels),
                f"{name}.m": weights(channels), f"{name}.v": np.abs(weights(channels)) + 0.5}
    params = {"w1": weights(width, width, 1, 1), "w2": weights(width, width // groups, 3, 3),
              "w3": weights(width, width, 1, 1)} | norm("n1", width) | norm("n2", width)
    return model(
        [helper.make_node("Conv", ["x", "w1"], ["c1"]),
         helper.make_node("BatchNormalization", ["c1", "n1.s", "n1.b", "n1.m", "n1.v"], ["b1"]),
         helper.make_node("Relu", ["b1"], ["r1"]),
         helper.make_node("Conv", ["r1", "w2"], ["c2"], group=groups, pads=[1] * 4),
         helper.make_node("BatchNormalization", ["c2", "n2.s", "n2.b", "n2.m", "n2.v"], ["b2"]),
         helper.make_node("Relu", ["b2"], ["r2"]),
         helper.make_node("Conv", ["r2", "w3"], ["c3"]),
         helper.make_node("Add", ["c3", "x"], ["a"]),
         helper.make_node("Relu", ["a"], ["y"])],
        {"x": [1, width, size, size]}, {"y": [1, width, size, size]}, params)


@pytest.mark.parametrize("target", ["npu", "npu -fusion=0", "npu -layout-pref=NCHW",
                                    SMALL_SRAM_TARGET])
def test_padded_grouped_conv_stays_in_nhwc(target):
    """The grouped conv's padded input stays in NHWC: the transposes left are
    the model input's and result's (NHWC), none between the relu and the
    groups' convs."""
    compiled, _ = compile_and_check(resnext_block(), {"x": randn(1, 64, 16, 16, seed=13)},
                                    target, **FP32)
    if "NCHW" not in target:
        assert str(compiled.module).count('"npu.transpose"') == 2


def packed_groups(compiled) -> list:
    return messages(compiled, "with block-diagonal weights")


@pytest.mark.parametrize("target", ["npu", "npu -fusion=0", "npu -layout-pref=NCHW",
                                    SMALL_SRAM_TARGET, "npu -precision=fp16",
                                    "npu -array-rows=8 -array-cols=8 -dataflow=os"])
def test_small_groups_run_packed_with_block_diagonal_weights(target, monkeypatch):
    """ResNeXt's 16 groups of 4 channels fill an eighth of the 32-wide array:
    npu-pack-groups runs them several at a time, one conv with block-diagonal
    weights each. It matches onnxruntime and takes fewer cycles than the
    groups one by one. In an 8 KiB SRAM the packed weights would take over a
    quarter of it (packed, the block took 140,506 cycles instead of 104,468):
    the groups stay."""
    block, feeds = resnext_block(), {"x": randn(1, 64, 16, 16, seed=14)}
    tolerance = dict(rtol=2e-2, atol=2e-2) if "fp16" in target else FP32
    packed, _ = compile_and_check(block, feeds, target, **tolerance)
    if target == SMALL_SRAM_TARGET:
        assert not packed_groups(packed)
        return
    assert len(packed_groups(packed)) == 1, [r.message for r in packed.remarks]
    assert_slower_without(monkeypatch, "npu-pack-groups", block, target, packed, packed_groups)


def test_small_int8_groups_run_packed_and_match_onnxruntime():
    """At -precision=int8 the groups' convs are int8 accumulating in i32, the
    input's zero point folded into each filter's bias, which the zeros off
    the diagonal blocks leave as it is: packed, the block matches onnxruntime
    on the QDQ model within one step of the output's scale."""
    from atvoss_mlir.quantization.precision import apply_precision
    from atvoss_mlir.target import parse_target
    x = randn(1, 64, 16, 16, seed=15)
    quantized = apply_precision(resnext_block(), parse_target("npu -precision=int8"), {"x": x})
    compiled = atvoss_mlir.compile(quantized, "npu")
    assert len(packed_groups(compiled)) == 1, [r.message for r in compiled.remarks]
    (ours,) = compiled.run({"x": x}).values()
    (theirs,) = reference(quantized, {"x": x})
    initializers = {i.name: numpy_helper.to_array(i) for i in quantized.graph.initializer}
    producers = {output: n for n in quantized.graph.node for output in n.output}
    node = producers[quantized.graph.output[0].name]
    while node.op_type != "DequantizeLinear":
        node = producers[node.input[0]]
    steps = np.abs(ours.astype(np.float64) - theirs) / float(initializers[node.input[1]])
    assert steps.max() <= 1.0 + 1e-3 and np.mean(steps < 1e-3) >= 0.999, steps.max()


def split_depthwise(compiled) -> list:
    return messages(compiled, "split into 3 slices of channels")


def assert_slower_without(monkeypatch, argument: str, unit, target, taken, remarked) -> None:
    """Compiled without the pass `argument`, `unit` makes no `remarked` remark
    and takes more cycles than `taken` (the program compiled with it)."""
    without_pass(monkeypatch, argument)
    without = atvoss_mlir.compile(unit, target)
    without.run(timing_only=True)
    assert not remarked(without)
    assert taken.report["total_cycles"] < without.report["total_cycles"]


@pytest.mark.parametrize("target", ["npu", "npu -pipeline-stages=1", "npu -layout-pref=auto",
                                    "npu -vector-lanes=32", "npu -precision=fp16"])
def test_depthwise_conv_runs_per_group_beside_the_grouped_conv(target, monkeypatch):
    """The depthwise conv between the unit's grouped convs runs one slice of
    channels per group of the second (npu-split-depthwise), the next slice on
    the vector unit beside this group's conv on the matrix unit: it matches
    onnxruntime and takes fewer cycles than the depthwise conv run whole."""
    unit, feeds = shufflenet_unit(60, 28), {"x": randn(1, 60, 28, 28, seed=8)}
    tolerance = dict(rtol=2e-2, atol=2e-2) if "fp16" in target else FP32
    split, _ = compile_and_check(unit, feeds, target, **tolerance)
    assert len(split_depthwise(split)) == 1, [r.message for r in split.remarks]
    assert_slower_without(monkeypatch, "npu-split-depthwise", unit, target, split,
                          split_depthwise)


def test_depthwise_conv_stays_whole_below_fusion_2():
    compiled, _ = compile_and_check(shufflenet_unit(60, 28), {"x": randn(1, 60, 28, 28, seed=8)},
                                    "npu -fusion=1", **FP32)
    assert not split_depthwise(compiled)


def interleaved(compiled) -> list:
    return messages(compiled, "one loop, a tile of each per iteration")


@pytest.mark.parametrize("target", ["npu", "npu -pipeline-stages=3"])
def test_depthwise_slices_and_grouped_convs_run_as_one_loop(target, monkeypatch):
    """At 120 channels the unit's depthwise slices go through DRAM a block of
    rows at a time: each is a tile loop, as each group of the second conv is.
    Two of the slices' loops run as one loop with the group conv beside them
    (npu-interleave-loops): it matches onnxruntime and takes fewer cycles than
    with the loops one after the other (54,402 against 59,554)."""
    unit, feeds = shufflenet_unit(120, 28), {"x": randn(1, 120, 28, 28, seed=9)}
    fused, _ = compile_and_check(unit, feeds, target, **FP32)
    assert len(interleaved(fused)) == 2, [r.message for r in fused.remarks]
    assert_slower_without(monkeypatch, "npu-interleave-loops", unit, target, fused, interleaved)
