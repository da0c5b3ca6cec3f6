"""The bundled example files: each loads cleanly, is named by its file stem, cites its config,
round-trips through to_toml, and runs through the command line by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import flopsreg
from flopsreg.cli import main
from flopsreg.model.examples_index import example_names

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NAMES = sorted(path.stem for path in EXAMPLES.glob("*.toml"))
EXPECTED = {
    "deepseek-v3",
    "deepseek-v3.2",
    "deepseek-v4-flash",
    "gemma-3-27b",
    "gemma-3-4b",
    "gemma-3n-e4b",
    "gemma-4-26b-a4b",
    "gemma-4-31b",
    "glm-5",
    "gpt-oss-120b",
    "gpt-oss-20b",
    "kimi-linear-48b-a3b",
    "llama-3-8b",
    "llama-3.1-70b",
    "llama-4-scout",
    "mistral-7b-v0.1",
    "mixtral-8x7b",
    "nemotron-3-nano-30b-a3b",
    "qwen3-30b-a3b",
    "qwen3-8b",
    "qwen3-next-80b-a3b",
    "qwen3.5-35b-a3b",
    "qwen3.5-9b",
}


def test_the_bundled_examples_are_the_expected_set():
    """Every example the docs promise is bundled, and the CLI index finds exactly these."""
    assert set(NAMES) == EXPECTED
    assert set(example_names()) == EXPECTED


@pytest.mark.parametrize("name", NAMES)
def test_example_loads_with_its_stem_as_name_and_a_config_source(name):
    """`name` must equal the file stem (what users type); `source` is the published config."""
    model = flopsreg.Model.from_toml(EXAMPLES / f"{name}.toml")
    assert model.name == name
    assert model.source.startswith("https://huggingface.co/")
    assert model.source.endswith("/config.json")


@pytest.mark.parametrize("name", NAMES)
def test_example_plans_without_warnings(registry, name):
    """No parameter of an example is set without a selected pattern using it."""
    plan = registry.select(flopsreg.Model.from_toml(EXAMPLES / f"{name}.toml"))
    assert plan.warnings == ()


@pytest.mark.parametrize("name", NAMES)
def test_example_round_trips_through_to_toml(name):
    model = flopsreg.Model.from_toml(EXAMPLES / f"{name}.toml")
    assert flopsreg.Model.from_toml_string(model.to_toml()) == model


@pytest.mark.parametrize("name", NAMES)
def test_cli_eval_by_example_name_at_32k(monkeypatch, capsys, name, registry):
    """`flopsreg eval NAME --seq-len 32768` exits 0, warns nothing, and prints the exact total."""
    monkeypatch.setenv("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert main(["eval", name, "--seq-len", "32768"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    expected = registry.evaluate(flopsreg.Model.from_toml(EXAMPLES / f"{name}.toml"), seq_len=32768)
    assert out.startswith(f"{name}, batch 1 x 32768 tokens")
    assert f"forward   {expected.forward:,} FLOPs" in out


@pytest.mark.parametrize("name", NAMES)
def test_cli_eval_json_by_example_name(monkeypatch, capsys, name):
    monkeypatch.setenv("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert main(["eval", name, "--seq-len", "32768", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["model"] == name
    assert int(data["training_flops"]) == 3 * int(data["forward_flops"])
    kinds = data["kinds"]
    assert sum(int(kind["flops"]) for kind in kinds) + int(data["model_level"]["flops"]) == int(data["forward_flops"])
    for kind in kinds:
        assert int(kind["flops"]) == kind["count"] * int(kind["flops_per_layer"])
        assert kind["count"] == sum(len(range(r["first"], r["last"] + 1, r["step"])) for r in kind["layers"])
    indices = sorted(i for kind in kinds for r in kind["layers"] for i in range(r["first"], r["last"] + 1, r["step"]))
    assert indices == list(range(len(indices)))  # every decoder layer in exactly one kind
    assert main(["eval", name, "--seq-len", "32768", "--format", "json", "--per-layer"]) == 0
    per_layer = json.loads(capsys.readouterr().out)
    assert [layer["index"] for layer in per_layer["layers"]] == indices
    by_kind = {kind["kind"]: kind["flops_per_layer"] for kind in kinds}
    assert all(layer["flops"] == by_kind[layer["kind"]] for layer in per_layer["layers"])
