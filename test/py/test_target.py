"""The target string parser: one NpuTarget, clear errors for bad options."""

import dataclasses

import pytest

from atvoss_mlir.target import DEFAULT_TARGET, NpuTarget, TargetError, parse_target


def test_defaults_are_the_edge_npu():
    target = parse_target(None)
    assert (target.array_rows, target.array_cols, target.dataflow) == (32, 32, "auto")
    assert target.max_sram_bytes == 1 << 20
    assert (target.dram_bytes_per_cycle, target.dma_channels, target.dma_setup_cycles,
            target.dma_burst_bytes) == (64, 2, 100, 32)
    assert target.pipeline_stages == 2
    assert target.peak_macs_per_cycle == 1024


def test_options_override_fields():
    target = parse_target("npu -max-sram-bytes=262144 -pipeline-stages=3 -layout-pref=NCHW "
                          "-fusion=1 -tile-min=16 -tile-max=128 -dataflow=os")
    assert target.max_sram_bytes == 262144
    assert target.pipeline_stages == 3
    assert target.layout_pref == "NCHW"
    assert (target.fusion, target.tile_min, target.tile_max) == (1, 16, 128)
    assert target.dataflow == "os"


def test_round_trip_through_string():
    target = parse_target("npu -array-rows=16 -clock-ghz=0.8")
    assert parse_target(str(target)) == target


def test_every_field_has_an_option_and_a_default():
    for field in dataclasses.fields(NpuTarget):
        assert field.metadata["option"]
        assert getattr(DEFAULT_TARGET, field.name) is not None


@pytest.mark.parametrize("text, message", [
    ("npu -max-sram-bytes=abc", "option '-max-sram-bytes' expects an integer, got 'abc'"),
    ("npu -pipeline-stages=4", "option '-pipeline-stages' must be in [1, 3], got '4'"),
    ("npu -dma-burst-bytes=2147483647",
     "option '-dma-burst-bytes' must be in [1, 4096], got '2147483647'"),
    ("npu -dataflow=is", "option '-dataflow' expects one of ws, os, auto, got 'is'"),
    ("npu -sram=1", "unknown target option '-sram'"),
    ("npu max-sram-bytes=1", "malformed target option 'max-sram-bytes=1'"),
    ("npu -fusion", "malformed target option '-fusion'"),
    ("tpu", "unknown target 'tpu'"),
    ("npu -tile-min=4096", "-tile-min=4096 exceeds -tile-max=2048"),
    ("npu -sram-alignment=48", "not a power of two"),
    ("npu -clock-ghz=fast", "expects a number"),
])
def test_bad_options_are_clear_errors(text, message):
    with pytest.raises(TargetError) as error:
        parse_target(text)
    assert message in str(error.value)
