"""docs/conventions.md's table is generated from the bundled examples and registered conventions and must be current."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "docs" / "make_conventions_table.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("make_conventions_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_conventions_table_is_current(script, registry):
    assert script.is_current(registry), "run: python docs/make_conventions_table.py"


def test_check_fails_on_a_stale_table_and_the_rewrite_fixes_it(script, monkeypatch, tmp_path):
    """--check exits 1 on a stale table; a plain run rewrites only the block between markers."""
    stale = tmp_path / "conventions.md"
    stale.write_text(f"intro\n{script.START}\n| old |\n{script.END}\noutro\n", encoding="utf-8")
    monkeypatch.setattr(script, "TARGET", stale)
    assert script.main(["--check"]) == 1
    assert script.main([]) == 0
    assert script.main(["--check"]) == 0
    text = stale.read_text(encoding="utf-8")
    assert text.startswith(f"intro\n{script.START}\n| model | convention |") and text.endswith(f"{script.END}\noutro\n")


def test_a_row_per_example_and_registered_convention(script, registry):
    rows = script.render_table(registry).splitlines()[2:]
    examples = sorted(path.stem for path in script.EXAMPLES.glob("*.toml"))
    conventions = ["exact", *registry.conventions]
    assert [(row.split("`")[1], row.split(" | ")[1]) for row in rows] == [(e, c) for e in examples for c in conventions]


def test_cells_are_the_counts_and_exact_ratios_or_the_refusal(script, registry):
    rows = {tuple(row.split(" | ")[:2]): row.split(" | ")[2:] for row in script.render_table(registry).splitlines()[2:]}
    exact, verl = rows[("| `llama-3-8b`", "exact")], rows[("| `llama-3-8b`", "verl")]
    assert exact[:2] == ["197,631,846,383,616", "1.0000"]  # docs: Llama-3-8B worked numbers
    assert verl[:2] == ["210,539,296,849,920", "1.0653"]  # 210,539,296,849,920 / 197,631,846,383,616
    assert rows[("| `mixtral-8x7b`", "verl")][0].startswith("refused: ") and "returns 0" in rows[("| `mixtral-8x7b`", "verl")][0]


def test_a_newly_registered_convention_gets_its_rows(script):
    """The generator takes whatever is registered: a plugin convention appears without a change here."""
    import flopsreg

    class Halves:
        @flopsreg.hookimpl
        def flopsreg_register_conventions():
            return [flopsreg.Convention(name="halves", summary="logits counted twice", reference="a test")]

        @flopsreg.hookimpl
        def flopsreg_register_patterns():
            from flopsreg.patterns.logits import VOCAB
            from flopsreg.symbols import h, s

            return [flopsreg.Pattern(name="halves_logits", slot="head", flags={"halves", "lm_head"}, precedence=100, scope="model",
                                     params=(VOCAB,), formula=4 * s * h * VOCAB.symbol, summary="logits twice", reference="a test")]

    registry = flopsreg.Registry(plugins=[Halves], load_entry_points=False)
    rows = [row for row in script.render_table(registry).splitlines()[2:] if " | halves | " in row]
    assert len(rows) == len(list(script.EXAMPLES.glob("*.toml")))
