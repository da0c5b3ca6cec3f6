"""docs/examples.md's table is generated from the bundled examples and must be current."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "docs" / "make_examples_table.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("make_examples_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_examples_table_is_current(script, registry):
    assert script.is_current(registry), "run: python docs/make_examples_table.py"


def test_check_fails_on_a_stale_table_and_the_rewrite_fixes_it(script, monkeypatch, tmp_path):
    """--check exits 1 on a stale table; a plain run rewrites only the block between markers."""
    stale = tmp_path / "examples.md"
    stale.write_text(f"intro\n{script.START}\n| old |\n{script.END}\noutro\n", encoding="utf-8")
    monkeypatch.setattr(script, "TARGET", stale)
    assert script.main(["--check"]) == 1
    assert script.main([]) == 0
    assert script.main(["--check"]) == 0
    text = stale.read_text(encoding="utf-8")
    assert text.startswith(f"intro\n{script.START}\n| model |") and text.endswith(f"{script.END}\noutro\n")


def test_table_has_a_row_per_example_and_length(script, registry):
    rows = [line for line in script.render_table(registry).splitlines()[2:]]
    examples = sorted(path.stem for path in script.EXAMPLES.glob("*.toml"))
    assert len(rows) == 3 * len(examples)
    assert [row.split("`")[1] for row in rows[::3]] == examples


def test_fixed_point_rounds_half_up_exactly(script):
    """GFLOP/token and shares are rounded in integer arithmetic, never through floats."""
    assert script._fixed(16_083_320_832, 10**9, 2) == "16.08"
    assert script._fixed(125, 1000, 2) == "0.13"
    assert script._fixed(124_999, 1000, 2) == "125.00"
    assert script._fixed(1, 3, 1) == "0.3"


def test_serving_table_has_a_row_per_example(script, registry):
    rows = script.render_serving_table(registry).splitlines()[2:]
    assert [row.split("`")[1] for row in rows] == sorted(path.stem for path in script.EXAMPLES.glob("*.toml"))
