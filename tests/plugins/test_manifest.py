"""The manifest of the built-ins (flopsreg/patterns/manifest.json) and the lazy loading it allows.

A registry of the built-ins alone imports a built-in only when a question needs it: every answer
(declarations, flags, selections, counts, warnings) must be the one a registry with every
built-in imported gives.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flopsreg import Model, Registry
from flopsreg.errors import FlopsregError, PluginError
from flopsreg.model.examples_index import example_names
from flopsreg.plugins import make_manifest, manifest
from flopsreg.plugins.checks import check_ties
from flopsreg.plugins.loader import _BUILTIN_PACKAGE, PluginLoader, manifest_path
from flopsreg.plugins.manifest import DATA_KINDS, REFRESH

HF_CONFIGS = sorted((Path(__file__).parents[1] / "data" / "hf").glob("*.json"))


@pytest.fixture(scope="module")
def eager() -> Registry:
    """A registry with every built-in imported (its patterns read first)."""
    registry = Registry(load_entry_points=False)
    assert registry.patterns
    return registry


def test_the_committed_manifest_is_the_one_the_modules_give():
    with open(manifest_path(), encoding="utf-8") as file:
        committed = file.read()
    assert committed == make_manifest.text(make_manifest.build()), f"flopsreg/patterns/manifest.json is stale: run {REFRESH}"


def test_every_declaration_rebuilds_equal_from_its_data(eager):
    contributions = eager.contributions()
    checked = 0
    for contribution in contributions.values():
        for kind in DATA_KINDS:
            for item in contribution.declared[kind]:
                assert manifest.rebuilt(kind, json.loads(json.dumps(manifest.declaration(item)))) == item
                checked += 1
    assert checked > 50


def test_a_fresh_registry_imports_no_built_in_and_answers_every_declaration_as_a_loaded_one(eager):
    lazy = Registry(load_entry_points=False)
    assert not lazy._builtins, "a registry of the built-ins alone imports none at construction"
    for query in ("params", "conventions", "quantities", "slots", "slot_groups", "group_selectors", "blocks", "hf_layer_types",
                  "flags", "layer_flags", "slot_group_of"):
        assert getattr(lazy, query) == getattr(eager, query), query
    assert list(lazy.slots) == list(eager.slots)  # the forward order
    assert dict(lazy.symbols.items()) == dict(eager.symbols.items())
    assert list(lazy.hf_readers) == list(eager.hf_readers)
    assert list(lazy.megatron_readers) == list(eager.megatron_readers)
    assert all(lazy.plugin_of(p.name) == eager.plugin_of(p) for p in eager.patterns)
    assert not lazy._builtins
    assert lazy.hf_readers["llama"] == eager.hf_readers["llama"]  # read: its module imported
    assert lazy._builtins == {f"{_BUILTIN_PACKAGE}hf.llama"}
    assert lazy.patterns == eager.patterns
    assert list(lazy.loaded_plugins()) == list(eager.loaded_plugins())


def _outcome(registry: Registry, model: Model, convention: str) -> object:
    """Everything an evaluation shows: the selections with their reasons, the warnings, the counts (or the error)."""
    try:
        selection = registry.select(model, convention=convention)
        result = registry.evaluate(model, seq_len=4096, convention=convention)
    except FlopsregError as error:
        return f"{type(error).__name__}: {error}"
    units = [*selection.kinds, selection.head, *(u for units in selection.blocks.values() for u in units)]
    chosen = [(unit.name, [(s.slot, s.pattern, s.applicable, s.reason) for s in unit.selections], str(unit.expression)) for unit in units]
    return chosen, selection.warnings, result.forward, result.training


def _models(registry: Registry) -> list[Model]:
    models = [Model.example(name) for name in example_names()]
    for path in HF_CONFIGS:
        try:
            models.append(Model.from_hf_config(str(path), registry=registry))
        except FlopsregError:
            continue
    return models


def test_every_model_and_convention_selects_and_counts_as_with_every_built_in_imported(eager):
    conventions = ["exact", *eager.conventions]
    models = _models(eager)
    assert len(models) > 40
    for model in models:
        for convention in conventions:
            lazy = Registry(load_entry_points=False)  # a fresh one: only what this question needs is imported
            assert _outcome(lazy, model, convention) == _outcome(eager, model, convention), (model.name, convention)


def test_a_config_imports_the_module_of_its_model_type_reader():
    lazy = Registry(load_entry_points=False)
    Model.from_hf_config(str(next(p for p in HF_CONFIGS if p.name.startswith("llama-3"))), registry=lazy)
    assert f"{_BUILTIN_PACKAGE}hf.llama" in lazy._builtins
    assert not any(name.startswith(f"{_BUILTIN_PACKAGE}hf.deepseek") for name in lazy._builtins)


def test_a_plugin_of_another_package_loads_every_built_in_and_is_checked_against_them():
    class Nothing:
        """A plugin with no hooks."""

    registry = PluginLoader([Nothing()], load_entry_points=False)
    assert not registry._pending


@pytest.mark.slow
def test_a_llama_evaluation_imports_few_built_in_modules(tmp_path):
    """The issue's target: at most 25 modules of flopsreg.patterns, none of another family, where the
    registry composes (the LaTeX output: a plain eval composes from the manifest and imports none)."""
    script = (
        "import sys\n"
        "from flopsreg.cli import main\n"
        "main(['eval', 'llama-3-8b', '--seq-len', '4096', '--no-cache', '--format', 'latex'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('flopsreg.patterns.')))\n"
    )
    env = {**os.environ, "FLOPSREG_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, check=True)
    modules = eval(done.stdout.strip().splitlines()[-1])  # noqa: S307 - our own print of a list of names
    assert 5 < len(modules) <= 25, modules
    assert not [m for m in modules if m.startswith(("flopsreg.patterns.hf.deepseek", "flopsreg.patterns.mla", "flopsreg.patterns.conventions."))]


def _manifest_ties(data: dict) -> None:
    """The tie check of the loader (flopsreg.plugins.checks.check_ties), run on the manifest's patterns, module by module."""
    conventions = {c["name"] for m in data["modules"].values() for c in m["declares"].get("conventions", ())}
    seen: list = []
    owner: dict[str, str] = {}
    for module in data["modules"]:
        patterns = manifest.patterns_of(data, module)
        check_ties(module, patterns, seen, conventions, owner)
        seen += patterns
        owner |= {p.name: module for p in patterns}


def test_the_tie_and_claim_checks_run_on_the_manifest():
    data = manifest.load(manifest_path())
    _manifest_ties(data)  # the built-ins have no tie
    claims = [(r, m) for m, entry in data["modules"].items() for r in entry["declares"].get("megatron_readers", ())]
    for i, (a, _) in enumerate(claims):
        for b, _ in claims[i + 1 :]:
            assert a["precedence"] != b["precedence"] or not set(a["arguments"]) & set(b["arguments"]), (a["name"], b["name"])
    broken = json.loads(json.dumps(data))
    default = next(p for m in broken["modules"].values() for p in m["patterns"] if not p["flags"])  # a slot's default
    broken["modules"]["window_compression"]["patterns"].append({**default, "name": "a_second_default"})
    with pytest.raises(PluginError, match="'a_second_default' ties with pattern"):
        _manifest_ties(broken)
