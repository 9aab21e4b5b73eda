"""The committed files generated from dialects/npu.td are up to date."""

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("generate_npu", ROOT / "utils" / "generate_npu.py")
generate_npu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate_npu)


@pytest.fixture(scope="module")
def generated():
    return generate_npu.generate_all()


@pytest.mark.parametrize("kind", sorted(generate_npu.OUTPUTS))
def test_committed_copy_matches_generator(generated, kind):
    path = generate_npu.OUTPUTS[kind]
    assert path.read_text() == generated[kind], (
        f"{path.relative_to(ROOT)} is stale: run `python utils/generate_npu.py`")


def test_changed_td_is_detected(tmp_path):
    """An edit of an op in npu.td changes every generated file."""
    td = tmp_path / "npu.td"
    shutil.copy(generate_npu.TD_FILE, td)
    text = td.read_text()
    edited = text.replace('(ins Variadic<Npu_TokenType>:$tokens)',
                          '(ins Variadic<Npu_TokenType>:$tokens, I64Attr:$timeout)')
    assert edited != text
    td.write_text(edited)
    changed = generate_npu.generate_all(td_file=td)
    stale = generate_npu.stale_outputs(changed)
    assert sorted(path.name for path in stale) == sorted(
        path.name for path in generate_npu.OUTPUTS.values())


def test_irdl_gives_each_operand_its_own_constraint(generated):
    """Shared constraint values would force operands to one type (see the
    generator's docstring); every operand list names distinct values."""
    for line in generated["irdl"].splitlines():
        if "irdl.operands(" in line:
            values = [part.split(":")[1].split()[-1] for part in
                      line.split("(", 1)[1].rstrip(")").split(", ")]
            assert len(values) == len(set(values)), line
