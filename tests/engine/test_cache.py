"""The cache of compiled models: a hit answers as the registry would, and no other key's entry,
no damaged file and no stale environment is ever served."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import flopsreg
import flopsreg.engine.cache
from flopsreg.cli import main
from flopsreg.engine.cache import Cache


def _eval(capsys, *args: str) -> str:
    assert main(["eval", *args]) == 0
    return capsys.readouterr().out


def _sign(path: Path, cache: Cache, entry: object) -> None:
    """Write *entry* at *path* authenticated with the user's own key: what only the user (or
    someone who has read the key) can do."""
    payload = json.dumps(entry).encode()
    path.write_bytes(cache._mac(cache._key(create=True), payload) + b"\n" + payload)


def _entries(kind: str) -> list[Path]:
    return sorted(Cache.default().directory.glob(f"{kind}-*.json"))


def test_a_hit_answers_like_the_registry_for_every_recompute_and_format(capsys):
    reg = flopsreg.Registry(load_entry_points=False)
    model = flopsreg.Model.example("gemma-3-27b")
    for recompute in ("none", "selective", "full"):
        first = _eval(capsys, "gemma-3-27b", "--seq-len", "5000", "--recompute", recompute, "--format", "json")
        again = _eval(capsys, "gemma-3-27b", "--seq-len", "5000", "--recompute", recompute, "--format", "json")
        assert first == again
        expected = reg.evaluate(model, seq_len=5000, recompute=recompute)
        assert json.loads(again)["training_flops"] == str(expected.training)
    assert len(_entries("model")) == 1  # recompute is not part of the formula: one entry serves all three
    cached = Cache.default().selection(model, "exact")
    assert cached is not None and cached.forward(5000) == expected.forward


HEAVY = (
    "sympy", "numpy", "flopsreg.plugins.loader", "flopsreg.readers.hf", "flopsreg.readers.megatron", "flopsreg.engine.compose",
    "flopsreg.engine.cold", "flopsreg.engine.memory",  # memory: read only for a `flopsreg memory` entry
)


@pytest.mark.slow
def test_a_hit_imports_neither_sympy_nor_numpy_nor_the_plugins_nor_other_readers():
    code = (
        "import sys; from flopsreg.cli import main; main(['eval', 'llama-3-8b', '--seq-len', '64', '--format', 'json']);"
        "main(['sweep', 'llama-3-8b', '--seq-len', '1:3']); print(*sorted(set(sys.modules) & set(%r)), file=sys.stderr)"
        % (HEAVY,)
    )
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True) for _ in range(2)]
    assert runs[0].stdout == runs[1].stdout
    assert runs[0].stderr.split() == ["flopsreg.engine.cold"]  # the first run composes, from the manifest
    assert runs[1].stderr.split() == []


def test_a_changed_model_file_is_a_miss(tmp_path, capsys):
    path = tmp_path / "tiny.toml"
    reg = flopsreg.Registry(load_entry_points=False)
    forwards = []
    for layers in (1, 2):
        model = flopsreg.Model.uniform("tiny", layers=layers, hidden=8, heads=2, kv_heads=2, head_dim=4)
        path.write_text(model.to_toml())
        out = json.loads(_eval(capsys, str(path), "--seq-len", "4", "--format", "json"))
        forwards.append(int(out["forward_flops"]))
        assert forwards[-1] == reg.evaluate(model, seq_len=4).forward
    # one layer of 2368 FLOPs at s=4 (the package doctest) and its logits-free double
    assert forwards[0] == 2368 and forwards[1] == 2 * 2368
    assert len(_entries("model")) == 2


def test_a_plugin_upgrade_is_a_miss(tmp_path, monkeypatch, capsys):
    """pip upgrades a plugin by replacing its ``*.dist-info`` folder in a folder on sys.path."""
    site = tmp_path / "site"
    (site / "someplugin-1.0.dist-info").mkdir(parents=True)
    os.utime(site, ns=(10**18, 10**18))
    monkeypatch.setenv("PYTHONPATH", str(site))  # e.g. pip install --target site
    _eval(capsys, "llama-3-8b", "--seq-len", "64")
    before = Cache.default()
    (site / "someplugin-1.0.dist-info").rename(site / "someplugin-2.0.dist-info")
    os.utime(site, ns=(2 * 10**18, 2 * 10**18))  # what the rename does, whatever the clock's resolution
    after = Cache.default()
    assert after.environment != before.environment
    model = flopsreg.Model.example("llama-3-8b")
    assert before.selection(model, "exact") is not None and after.selection(model, "exact") is None


def test_an_edited_flopsreg_source_or_plugin_autoload_setting_is_a_miss(monkeypatch):
    before = Cache.default().environment
    monkeypatch.setenv("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD", "")
    assert Cache.default().environment != before
    monkeypatch.setenv("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD", "1")
    sources = flopsreg.engine.cache._sources()
    monkeypatch.setattr(flopsreg.engine.cache, "_sources", lambda: [*sources[:-1], [sources[-1][0], "0" * 64]])  # its content
    assert Cache.default().environment != before


def test_the_key_covers_every_module_and_manifest_file_of_flopsreg_and_its_built_ins():
    import flopsreg.patterns

    listed = {os.path.realpath(path) for path, _size, _mtime in flopsreg.engine.cache._sources()}
    for package in (flopsreg, flopsreg.patterns):
        for folder in package.__path__:
            for path in Path(folder).rglob("*"):
                if path.suffix in (".py", ".json") and "__pycache__" not in path.parts:
                    assert os.path.realpath(path) in listed, path
    assert os.path.realpath(flopsreg.model.__file__) in listed  # not only the cache's own folder


def test_an_edited_built_in_is_a_miss(tmp_path, monkeypatch):
    """A built-in edited in place (an editable install's checkout) is a new key: its size or its
    modification time changes, and no file is read to see it. The copy of a real built-in stands in
    for the checkout, which a test must not edit."""
    import flopsreg.patterns.dense_mlp as built_in

    module = tmp_path / "patterns" / "dense_mlp.py"
    module.parent.mkdir()
    module.write_bytes(Path(built_in.__file__).read_bytes())
    monkeypatch.setattr(flopsreg.engine.cache, "_source_roots", lambda: [str(module.parent)])
    before = Cache.default().environment
    assert Cache.default().environment == before  # the same checkout: the same key
    text = module.read_text()
    module.write_text(text.replace("dense", "Dense", 1))  # the same size, another content
    os.utime(module, ns=(module.stat().st_atime_ns, module.stat().st_mtime_ns + 10**9))
    edited = Cache.default().environment
    assert edited != before
    module.write_text(text + "# one more line\n")
    os.utime(module, ns=(module.stat().st_atime_ns, module.stat().st_mtime_ns - 10**9))  # an older time, another size
    assert Cache.default().environment not in (before, edited)


def test_a_damaged_or_foreign_entry_is_a_miss(capsys):
    model = flopsreg.Model.example("llama-3-8b")
    expected = _eval(capsys, "llama-3-8b", "--seq-len", "64")
    cache = Cache.default()
    (path,) = _entries("model")
    mac, payload = path.read_bytes().split(b"\n", 1)
    entry = json.loads(payload)
    changed = json.dumps(entry).replace('"add"', '"mul"', 1).encode()
    path.write_bytes(mac + b"\n" + changed)  # body changed, authentication not: refused
    assert cache.selection(model, "exact") is None
    path.write_bytes(hashlib.sha256(changed).hexdigest().encode() + b"\n" + changed)  # a checksum is no key
    assert cache.selection(model, "exact") is None
    _sign(path, cache, {**entry, "key": cache.model_key(model, "megatron")})  # another key's entry under this name
    assert cache.selection(model, "exact") is None
    path.write_text("{ truncated")
    assert cache.selection(model, "exact") is None
    assert _eval(capsys, "llama-3-8b", "--seq-len", "64") == expected  # recomputed and rewritten
    assert cache.selection(model, "exact") is not None


def test_no_cache_option_and_environment_write_nothing(monkeypatch, capsys):
    _eval(capsys, "llama-3-8b", "--seq-len", "64", "--no-cache")
    monkeypatch.setenv("FLOPSREG_NO_CACHE", "1")
    _eval(capsys, "llama-3-8b", "--seq-len", "64")
    assert _entries("model") == [] and _entries("registry") == []


def test_cache_info_and_clear(capsys):
    _eval(capsys, "llama-3-8b", "--seq-len", "64")
    assert main(["cache", "info"]) == 0
    assert "1 compiled models" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert "removed 2 entries" in capsys.readouterr().out
    assert _entries("model") == []


@pytest.mark.slow
def test_concurrent_processes_leave_whole_entries(tmp_path):
    code = "from flopsreg.cli import main; main(['eval', 'deepseek-v3', '--seq-len', '128'])"
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(4)]
    outputs = {p.communicate()[0] for p in procs}
    assert len(outputs) == 1
    assert Cache.default().selection(flopsreg.Model.example("deepseek-v3"), "exact") is not None
    assert list(Cache.default().directory.glob("*.tmp")) == []


@pytest.mark.parametrize("fmt", ["text", "latex"])
def test_latex_builds_symbolically_and_text_from_the_cache(capsys, fmt):
    first = _eval(capsys, "llama-3-8b", "--seq-len", "64", "--format", fmt)
    assert _eval(capsys, "llama-3-8b", "--seq-len", "64", "--format", fmt) == first


def test_serving_steps_are_composed_with_the_registry_even_when_the_cache_has_the_model(capsys):
    """--cached and --logits last are never answered from the cache of fresh forwards."""
    reg = flopsreg.Registry(load_entry_points=False)
    model = flopsreg.Model.example("llama-3-8b")
    _eval(capsys, "llama-3-8b", "--seq-len", "64")  # a fresh forward: now in the cache
    step = json.loads(_eval(capsys, "llama-3-8b", "--seq-len", "1", "--cached", "4095", "--logits", "last", "--format", "json"))
    expected = reg.evaluate(model, seq_len=1, cached=4095, logits="last")
    assert step["forward_flops"] == str(expected.forward)
    # one decode step after 4095 cached tokens: a fresh forward of 4096 tokens less one of 4095
    # (the difference holds the logits of exactly one position, the last)
    whole = reg.evaluate(model, seq_len=4096).forward - reg.evaluate(model, seq_len=4095).forward
    assert expected.forward == whole
