"""The generated parts of docs/ must be current, and each script's --check must catch a stale page:
docs/patterns.md (make_patterns_reference.py), the tables of docs/examples.md
(make_examples_table.py), of docs/conventions.md (make_conventions_table.py) and of docs/hf-configs.md
(make_hf_configs_table.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import flopsreg

DOCS = Path(__file__).resolve().parent.parent / "docs"


def load(name: str):
    """A docs script as a fresh module (they import docs/_tables.py and each other by name: docs/ is
    on pytest's pythonpath, pyproject.toml)."""
    spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated():
    return load("_tables")


@pytest.fixture(scope="module")
def examples():
    return load("make_examples_table")


@pytest.fixture(scope="module")
def conventions():
    return load("make_conventions_table")


def test_patterns_reference_is_current():
    module = load("make_patterns_reference")
    expected = module.render(flopsreg.Registry(load_entry_points=False))
    assert module.TARGET.read_text(encoding="utf-8") == expected, "run: python docs/make_patterns_reference.py"


@pytest.mark.parametrize("name", ["make_examples_table", "make_conventions_table", "make_hf_configs_table"])
def test_tables_are_current(name, registry):
    assert load(name).is_current(registry), f"run: python docs/{name}.py"


@pytest.mark.parametrize(
    ("name", "header"),
    [("make_examples_table", "| model |"), ("make_conventions_table", "| model | convention |"), ("make_hf_configs_table", "transformers 5.24.0 maps ")],
)
def test_check_fails_on_a_stale_table_and_the_rewrite_fixes_it(name, header, monkeypatch, tmp_path):
    """--check exits 1 on a stale table; a plain run rewrites only the block between markers."""
    script = load(name)
    stale = tmp_path / "page.md"
    stale.write_text(f"intro\n{script.START}\n| old |\n{script.END}\noutro\n", encoding="utf-8")
    monkeypatch.setattr(script, "TARGET", stale)
    assert script.main(["--check"]) == 1
    assert script.main([]) == 0
    assert script.main(["--check"]) == 0
    text = stale.read_text(encoding="utf-8")
    assert text.startswith(f"intro\n{script.START}\n{header}") and text.endswith(f"{script.END}\noutro\n")


def test_table_has_a_row_per_example_and_length(examples, registry):
    rows = [line for line in examples.render_table(registry).splitlines()[2:]]
    examples = sorted(path.stem for path in examples.EXAMPLES.glob("*.toml"))
    assert len(rows) == 3 * len(examples)
    assert [row.split("`")[1] for row in rows[::3]] == examples


def test_fixed_point_rounds_half_up_exactly(generated):
    """GFLOP/token and shares are rounded in integer arithmetic, never through floats."""
    assert generated.fixed(16_083_320_832, 10**9, 2) == "16.08"
    assert generated.fixed(125, 1000, 2) == "0.13"
    assert generated.fixed(124_999, 1000, 2) == "125.00"
    assert generated.fixed(1, 3, 1) == "0.3"


def test_serving_table_has_a_row_per_example(examples, registry):
    rows = examples.render_serving_table(registry).splitlines()[2:]
    assert [row.split("`")[1] for row in rows] == sorted(path.stem for path in examples.EXAMPLES.glob("*.toml"))


def test_a_row_per_example_and_registered_convention(conventions, registry):
    rows = conventions.render_table(registry).splitlines()[2:]
    examples = sorted(path.stem for path in conventions.EXAMPLES.glob("*.toml"))
    conventions = ["exact", *registry.conventions]
    assert [(row.split("`")[1], row.split(" | ")[1]) for row in rows] == [(e, c) for e in examples for c in conventions]


def test_cells_are_the_counts_and_exact_ratios_or_the_refusal(conventions, registry):
    rows = {tuple(row.split(" | ")[:2]): row.split(" | ")[2:] for row in conventions.render_table(registry).splitlines()[2:]}
    exact, verl = rows[("| `llama-3-8b`", "exact")], rows[("| `llama-3-8b`", "verl")]
    assert exact[:2] == ["197,631,846,383,616", "1.0000"]  # docs: Llama-3-8B worked numbers
    assert verl[:2] == ["210,539,296,849,920", "1.0653"]  # 210,539,296,849,920 / 197,631,846,383,616
    assert rows[("| `mixtral-8x7b`", "verl")][0].startswith("refused: ") and "returns 0" in rows[("| `mixtral-8x7b`", "verl")][0]


def test_a_newly_registered_convention_gets_its_rows(conventions):
    """The generator takes whatever is registered: a plugin convention appears without a change here."""
    import flopsreg

    class Halves:
        @flopsreg.hookimpl
        def flopsreg_register_conventions():
            return [flopsreg.Convention(name="halves", summary="logits counted twice", reference="a test")]

        @flopsreg.hookimpl
        def flopsreg_register_patterns():
            from flopsreg.declarations.symbols import h, s
            from flopsreg.patterns.logits import VOCAB

            return [flopsreg.Pattern(name="halves_logits", slot="head", flags={"halves", "lm_head"}, precedence=100, scope="model",
                                     params=(VOCAB,), formula=4 * s * h * VOCAB.symbol, summary="logits twice", reference="a test")]

    registry = flopsreg.Registry(plugins=[Halves], load_entry_points=False)
    rows = [row for row in conventions.render_table(registry).splitlines()[2:] if " | halves | " in row]
    assert len(rows) == len(list(conventions.EXAMPLES.glob("*.toml")))


def test_per_token_table_by_convention_has_a_dash_where_a_convention_refuses(examples, registry):
    lines = examples.render_conventions_table(registry).splitlines()
    columns = [c.strip() for c in lines[0].strip("|").split("|")]
    assert columns[:3] == ["model", "tokens", "exact"] and set(columns[2:]) == {"exact", *registry.conventions}
    rows = {(cells[0], cells[1]): dict(zip(columns, cells)) for cells in ([c.strip() for c in line.strip("|").split("|")] for line in lines[2:])}
    llama = rows[("`llama-3-8b`", "4k")]
    assert llama["exact"] == "16.08"  # 197,631,846,383,616 training / 3 = 65,877,282,127,872 forward / 4096 tokens / 1e9
    assert rows[("`mixtral-8x7b`", "4k")]["verl"] == "—"  # verl has no Mixtral formula
    assert rows[("`qwen3-next-80b-a3b`", "32k")]["slime"] == "—"  # Gated DeltaNet layers: slime refuses them
    assert len(rows) == 3 * len(list(examples.EXAMPLES.glob("*.toml")))


def test_hf_configs_table_has_a_row_per_causal_lm_type(registry):
    """One row per type of MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, each read with its proof or refused with its reason."""
    table = load("make_hf_configs_table").render_table(registry).splitlines()
    rows = {line.split("`")[1]: line for line in table if line.startswith("| `")}
    assert len(rows) == 196  # transformers 5.24.0's models/auto/modeling_auto.py
    assert rows["llama"] == "| `llama` | `LlamaForCausalLM` | read exactly | `tests/hf/test_forward.py`, `tests/engine/test_parameters.py` |"
    assert rows["gemma3_text"].startswith("| `gemma3_text` | `Gemma3ForCausalLM` | read exactly | `tests/hf/test_forward.py` (its wrapper, `gemma3`)")
    assert rows["bert"] == (
        "| `bert` | `BertLMHeadModel` | left out: an encoder (bidirectional attention, a masked-LM model run as a decoder) |  |"
    )
    assert rows["whisper"].startswith("| `whisper` | `WhisperForCausalLM` | left out: a speech model")
    for line in rows.values():
        status = line.split(" | ")[2]
        assert status in ("read exactly", "read (no recorded forward pass yet)", "refused: not read yet") or status.startswith(
            ("left out: ", "refused: cannot be counted from its config: ")
        )
    assert rows["blt"].startswith("| `blt` | `BltForCausalLM` | refused: cannot be counted from its config: with its default patching_mode 'entropy'")
