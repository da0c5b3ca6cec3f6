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
from flopsreg.errors import FlopsregError, PluginWarning
from flopsreg.model.examples_index import example_names
from flopsreg.plugins import make_manifest, manifest
from flopsreg.plugins.loader import _BUILTIN_PACKAGE, PluginLoader, manifest_path
from flopsreg.plugins.manifest import DATA_KINDS, REFRESH

HF_CONFIGS = sorted((Path(__file__).parents[1] / "data" / "hf").glob("*.json"))


@pytest.fixture(scope="module")
def eager() -> Registry:
    """A registry with every built-in imported (its patterns read first)."""
    registry = Registry(load_entry_points=False)
    assert registry.patterns
    return registry


def test_every_built_in_module_is_listed_once():
    """A module listed twice (a merge of two branches' additions) would be registered twice."""
    from flopsreg.patterns import BUILTIN

    assert sorted(name for name in set(BUILTIN) if BUILTIN.count(name) > 1) == []


def test_the_committed_manifest_is_the_one_the_modules_give():
    committed = manifest.written(manifest_path())
    assert committed == manifest.files(make_manifest.build()), f"flopsreg/patterns/manifest.json is stale: run {REFRESH}"


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


def _loaded_with(monkeypatch, tmp_path, change) -> tuple[PluginLoader, list[str]]:
    """A registry of the built-ins reading a copy of the manifest that *change* altered, and the
    PluginWarnings its construction gave."""
    import warnings

    data = manifest.load_whole(manifest_path())
    change(data)
    path = tmp_path / "manifest.json"
    manifest.write(data, str(path))
    monkeypatch.setattr("flopsreg.plugins.builtins.manifest_path", lambda: str(path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry = PluginLoader(load_entry_points=False)
    return registry, [str(w.message) for w in caught if w.category is PluginWarning]


def test_the_committed_manifest_passes_the_load_time_checks(monkeypatch, tmp_path):
    registry, warned = _loaded_with(monkeypatch, tmp_path, lambda data: None)
    assert warned == [] and len(registry._pending) == len(manifest.load(manifest_path())["modules"])


def _second_default(data: dict) -> None:
    default = next(p for m in data["modules"].values() for p in m["patterns"] if not p["flags"])  # a slot's default
    data["modules"]["window_compression"]["patterns"].append({**default, "name": "a_second_default"})


def _second_claim(data: dict) -> None:
    claim = next(r for r in data["modules"]["megatron.mlp"]["declares"]["megatron_readers"])
    data["modules"]["megatron.window"]["declares"]["megatron_readers"][0]["arguments"].append(claim["arguments"][0])
    assert claim["precedence"] == data["modules"]["megatron.window"]["declares"]["megatron_readers"][0]["precedence"]


def _second_default_mixer(data: dict) -> None:
    groups = data["modules"]["slots"]["declares"]["slot_groups"]
    next(g for g in groups if not g["default"])["default"] = True


@pytest.mark.parametrize(("change", "module", "fault"), [
    (_second_default, "window_compression", "pattern 'a_second_default' ties with pattern"),
    (_second_claim, "megatron.window", "Megatron-LM reader 'window' claims args."),
    (_second_default_mixer, "slots", "are both the default token mixer"),
])
def test_a_fault_in_the_manifest_is_named_at_load_with_its_plugin(monkeypatch, tmp_path, change, module, fault):
    """The ties, claims and default checks run on the manifest's data when a registry is made,
    before any built-in is imported: the faulty built-in is skipped, named in one line."""
    imported = set(sys.modules)
    registry, warned = _loaded_with(monkeypatch, tmp_path, change)
    assert len(warned) == 1 and "\n" not in warned[0], warned
    assert warned[0].startswith(f"plugin '{_BUILTIN_PACKAGE}{module}': ") and fault in warned[0]
    assert module not in registry._pending and f"{_BUILTIN_PACKAGE}{module}" not in set(sys.modules) - imported


def test_built_ins_imported_for_another_plugin_pass_the_same_checks(monkeypatch, eager):
    """With a plugin of another package every built-in is imported (trusted: not checked one by
    one); the declaration-only checks still run over them and name a faulty one."""
    import types
    import warnings

    import attrs

    import flopsreg
    from flopsreg.plugins import loader

    default = next(p for p in eager.patterns if not p.flags)
    fake = types.ModuleType(f"{_BUILTIN_PACKAGE}zz_second_default")
    fake.flopsreg_register_patterns = flopsreg.hookimpl(lambda: [attrs.evolve(default, name="a_second_default")])
    real = loader.builtin_plugins
    monkeypatch.setattr(loader, "builtin_plugins", lambda names=None: [*real(names), fake])

    class Nothing:
        """A plugin with no hooks."""

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry = PluginLoader([Nothing()], load_entry_points=False)
    warned = [str(w.message) for w in caught if w.category is PluginWarning]
    assert len(warned) == 1 and warned[0].startswith(f"plugin '{fake.__name__}': pattern 'a_second_default' ties with pattern"), warned
    assert "a_second_default" not in {p.name for p in registry.patterns}


def test_writing_the_manifest_removes_the_file_of_a_module_no_longer_listed(tmp_path):
    data = manifest.load_whole(manifest_path())
    path = str(tmp_path / "manifest.json")
    manifest.write(data, path)
    assert manifest.written(path) == manifest.files(data)
    (tmp_path / manifest.PATTERNS_FOLDER / "gone.json").write_text("[]\n", encoding="utf-8")
    assert manifest.written(path) != manifest.files(data), "an extra module file makes the manifest stale"
    del data["modules"]["altup"]
    manifest.write(data, path)
    assert manifest.written(path) == manifest.files(data)
    assert not (tmp_path / manifest.PATTERNS_FOLDER / "altup.json").exists()
    assert manifest.load_whole(path) == data


def test_a_missing_module_file_imports_every_built_in(monkeypatch, tmp_path):
    """Without a module's patterns the manifest cannot speak for it: the registry imports every built-in."""
    data = manifest.load_whole(manifest_path())
    path = tmp_path / "manifest.json"
    manifest.write(data, str(path))
    (tmp_path / manifest.PATTERNS_FOLDER / "dense_mlp.json").unlink()
    monkeypatch.setattr("flopsreg.plugins.builtins.manifest_path", lambda: str(path))
    registry = PluginLoader(load_entry_points=False)
    assert not registry._pending and f"{_BUILTIN_PACKAGE}dense_mlp" in registry._builtins
