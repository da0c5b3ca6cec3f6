"""The cold path: composition from the manifest's formula trees (flopsreg.engine.cold) gives what
the sympy composition gives, for every bundled example under every convention, and a cold
``eval`` imports no sympy; where the manifest cannot answer, the registry does."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from plugins_for_tests import sink_window

import flopsreg
from flopsreg import render
from flopsreg.cli import main
from flopsreg.engine import cold
from flopsreg.engine.cache import CachedSelection
from flopsreg.engine.evaluate import RECOMPUTE, evaluate
from flopsreg.errors import FlopsregError, ModelError
from flopsreg.model import Model
from flopsreg.model.examples_index import example_names
from flopsreg.plugins import builtins
from flopsreg.plugins.make_manifest import build
from flopsreg.plugins.manifest import files, split, written

REGISTRY = flopsreg.Registry(load_entry_points=False)
CONVENTIONS = ("exact", *REGISTRY.conventions)
LENGTHS = (1, 7, 4096, 131_072)


@pytest.fixture(autouse=True)
def _builtins_alone(monkeypatch):
    monkeypatch.setenv("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD", "1")


HF_CONFIGS = sorted(str(path) for path in (Path(__file__).parents[1] / "data" / "hf").glob("*.json"))


def _model(name: str) -> Model:
    """A bundled example, or a model read from one of tests/data/hf's config.json files."""
    if not name.endswith(".json"):
        return Model.example(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what a reader warns of is its own tests' business
        return Model.from_hf_config(name)


def _pairs(name: str):
    """(convention, sympy plan or None where it is refused, cold plan) of model *name*."""
    model = _model(name)
    for convention in CONVENTIONS:
        try:
            plan = REGISTRY.select(model, convention=convention)
        except FlopsregError:
            plan = None
        yield convention, plan, cold.cold_selection(model, convention)


@pytest.mark.parametrize("name", [*example_names(), *HF_CONFIGS])
def test_every_example_under_every_convention_composes_as_sympy_does(name):
    answered = 0
    for convention, plan, tree in _pairs(name):
        if plan is None:  # refused: the registry says why, the cold path never answers
            assert tree is None, convention
            continue
        assert isinstance(tree, CachedSelection), convention  # no bundled example falls back
        answered += 1
        assert tree.warnings == tuple(plan.warnings), convention
        assert {n: s.selective_recompute for n, s in tree.slots.items()} == {n: s.selective_recompute for n, s in plan.slots.items()}
        assert len(tree.units) == len(plan.units)
        for mine, theirs in zip(tree.units, plan.units):
            assert (mine.name, mine.scope, mine.count, mine.patterns, dict(mine.params)) == (
                theirs.name, theirs.scope, theirs.count, theirs.patterns, dict(theirs.params)
            ), convention
            assert tuple(getattr(theirs, "layers", ())) == mine.layers
            for length in LENGTHS:
                assert mine.flops(length) == theirs.flops(length), (convention, mine.name, length)
                assert mine.total(length) == theirs.total(length)
        for length in LENGTHS:
            assert tree.forward(length) == plan.forward(length), (convention, length)
    assert answered  # the exact count at least


@pytest.mark.parametrize("name", ["llama-3-8b", "deepseek-v4-flash", "qwen3.5-9b", "gemma-3-27b", "deepseek-v3"])
def test_eval_text_and_json_are_the_same_both_ways(name):
    model = Model.example(name)
    for convention in CONVENTIONS:
        try:
            plan = REGISTRY.select(model, convention=convention)
        except FlopsregError:
            continue
        tree = cold.cold_selection(model, convention)
        for seq_len, seqlens, batch in ((4096, None, 1), (None, [1, 300, 8191], 3), (131_072, None, 8)):
            for recompute in RECOMPUTE:
                mine, theirs = (evaluate(p, seq_len, seqlens, batch, recompute) for p in (tree, plan))
                assert render.result_text(mine) == render.result_text(theirs)
                assert render.result_json(mine) == render.result_json(theirs)
                assert list(render.layers_json(mine)) == list(render.layers_json(theirs))


def test_a_cached_prefix_is_never_counted_from_the_trees(capsys):
    """Serving forms are composed symbolically: the cold plan refuses them, and the command line
    (which asks the registry for them) answers as before."""
    tree = cold.cold_selection(Model.example("llama-3-8b"))
    with pytest.raises(ModelError, match="fresh forwards only"):
        tree.units[0].flops(4096, cached=100)
    assert main(["eval", "llama-3-8b", "--seq-len", "4096", "--cached", "100", "--no-cache", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    expected = REGISTRY.evaluate(Model.example("llama-3-8b"), seq_len=4096, cached=100)
    assert int(shown["forward_flops"]) == expected.forward


def test_what_the_manifest_cannot_compose_goes_to_the_registry():
    model = Model.example("llama-3-8b")
    assert cold.cold_selection(model, "no_such_convention") is None
    assert cold.cold_selection(model.with_param("heads", 31)) is None  # a failed constraint: the registry's error
    with pytest.raises(ModelError, match="kv_heads"):
        REGISTRY.select(model.with_param("heads", 31))


def test_an_installed_plugin_turns_the_cold_path_off(tmp_path, monkeypatch, capsys):
    """With a third-party plugin the registry composes: its pattern wins where its flags are set."""
    monkeypatch.delenv("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD")
    monkeypatch.setattr(builtins, "may_declare_entry_points", lambda group: True)
    monkeypatch.setattr("flopsreg.plugins.loader.may_declare_entry_points", lambda group: True)

    class EntryPoint:
        name, value, dist = "sinks", "plugins_for_tests.sink_window", None

        def load(self):
            return importlib.import_module(self.value)

    monkeypatch.setattr("importlib.metadata.entry_points", lambda group: [EntryPoint()])
    base = Model.example("gemma-3-27b")
    assert cold.cold_selection(base) is None
    path = tmp_path / "sinks.toml"
    text_ = base.to_toml().replace("flags = [", 'flags = ["sinks", ', 1).replace("[params]\n", "[params]\nsinks = 4\n", 1)
    path.write_text(text_)
    assert main(["eval", str(path), "--seq-len", "4096", "--no-cache", "--format", "json"]) == 0
    output = capsys.readouterr().out
    with_plugin = flopsreg.Registry(plugins=[sink_window], load_entry_points=False)
    expected = with_plugin.evaluate(Model.from_toml(path), seq_len=4096)
    assert int(json.loads(output)["forward_flops"]) == expected.forward
    assert "sink_window" in output  # the plugin's pattern counted the mask


def test_a_hand_edited_manifest_formula_changes_the_answer_and_is_stale():
    """The cold path trusts the manifest's trees; the freshness test (test_manifest.py) is what
    catches one that differs from the modules."""
    data = build()
    module = next(m for m in data["modules"].values() if any(p["name"] == "dense_mlp" for p in m["patterns"]))
    entry = next(p for p in module["patterns"] if p["name"] == "dense_mlp")
    entry["trees"] = json.dumps({**json.loads(entry["trees"]), "formula": 0})
    index, patterns = split(data)
    edited = cold._compose(cold.Manifest(index, patterns.get), Model.example("llama-3-8b"), "exact")
    assert edited.forward(4096) < REGISTRY.select(Model.example("llama-3-8b")).forward(4096)
    assert written(builtins.manifest_path()) != files(data)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["llama-3-8b", "deepseek-v4-flash"])
def test_a_cold_eval_imports_no_sympy(name, tmp_path):
    script = (
        "import sys\n"
        "from flopsreg.cli import main\n"
        f"main(['eval', {name!r}, '--seq-len', '4096', '--no-cache'])\n"
        "print([m for m in sys.modules if m == 'sympy' or m.startswith('sympy.')][:3])\n"
    )
    env = {**os.environ, "FLOPSREG_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True, env=env)
    *output, imported = done.stdout.strip().splitlines()
    assert imported == "[]"
    expected = render.result_text(REGISTRY.evaluate(Model.example(name), seq_len=4096))
    assert "\n".join(output) == expected


def test_a_cold_llama_reads_the_patterns_of_the_modules_its_flags_can_select_only():
    """The manifest is read by part: a family the model does not use costs its index entry, never
    its patterns' file (what keeps start-up independent of the number of families)."""
    index = builtins.planned_manifest()
    read: list[str] = []

    def patterns_of(module: str):
        read.append(module)
        return builtins.planned_patterns(module)

    manifest = cold.Manifest(index, patterns_of)
    model = Model.example("llama-3-8b")
    composed = cold._compose(manifest, model, "exact")
    assert composed.forward(4096) == REGISTRY.select(model).forward(4096)
    assert len(read) == len(set(read)), "each module's file is read once"
    assert "dense_mlp" in read and "norms" in read
    assert not [m for m in read if m.startswith(("hf.deepseek", "mla", "conventions."))], read
    assert len(read) < len(index["modules"]) // 4, read


def test_a_module_file_that_cannot_be_read_sends_the_model_to_the_registry(monkeypatch):
    index = builtins.planned_manifest()
    manifest = cold.Manifest(index, lambda module: None if module == "dense_mlp" else builtins.planned_patterns(module))
    with pytest.raises(cold._Unanswered):
        cold._compose(manifest, Model.example("llama-3-8b"), "exact")
