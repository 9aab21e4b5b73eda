"""A model compiled at -precision=fp16|int8|mixed is the rewritten graph, not
the file's: its remarks still point at the file, each at the line of the node
it comes from there (a QuantizeLinear the quantiser inserted at its
neighbour's)."""

from __future__ import annotations

import os
import re

import numpy as np
import onnx
import pytest

import atvoss_mlir

SMALL_CNN = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, os.pardir,
                         "examples", "small_cnn.onnx")
POSITION = re.compile(r"^(.*):(\d+):(\d+): remark: .*\[node '([^']+)'\]$")


def remark_positions(compiled) -> list[tuple[str, int, str]]:
    """(file, line, node) of each remark naming a node."""
    found = []
    for remark in compiled.remarks:
        match = POSITION.match(remark.format().splitlines()[0])
        if match:
            found.append((match.group(1), int(match.group(2)), match.group(4)))
    return found


@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_remarks_after_a_precision_rewrite_keep_the_files_lines(precision, tmp_path):
    original = onnx.load(SMALL_CNN)
    lines = {node.name: index + 1 for index, node in enumerate(original.graph.node)}
    name = original.graph.input[0].name
    np.savez(tmp_path / "calibration.npz",
             **{name: np.random.default_rng(0).random((4, 3, 32, 32), dtype=np.float32)})
    compiled = atvoss_mlir.compile(SMALL_CNN, f"npu -precision={precision}",
                                   calibration=str(tmp_path / "calibration.npz"))
    positions = remark_positions(compiled)
    assert positions
    assert {path for path, _, _ in positions} == {SMALL_CNN}
    own = [(line, node) for _, line, node in positions if node in lines]
    # Every convolution's decisions are remarked, each at its own line.
    assert {node for _, node in own} >= {n.name for n in original.graph.node
                                         if n.op_type == "Conv"}
    assert all(line == lines[node] for line, node in own)
    # Inserted nodes sit at a line of the file.
    assert all(1 <= line <= len(lines) for _, line, _ in positions)
    if precision == "int8":
        inserted = {node: line for _, line, node in positions if node not in lines}
        assert inserted.get("input_QuantizeLinear") == lines["stem"]
