"""The cache of compiled models as an attacker, a careless admin and a full disk meet it: nothing
read from disk is executed, a tampered, malformed or odd file is a miss, an unsafe folder is not
used, an edited plugin is a miss, and a failed write leaves nothing behind."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import flopsreg
import flopsreg.engine.cache
import flopsreg.formula.tree
from flopsreg.cli import main
from flopsreg.engine.cache import Cache

MODEL = flopsreg.Model.example("llama-3-8b")
MARKER = "flopsreg_was_here"


def _fill(capsys) -> tuple[Cache, Path, str]:
    """Evaluate llama-3-8b once (filling the cache); the cache, its model entry and the output."""
    assert main(["eval", "llama-3-8b", "--seq-len", "64"]) == 0
    out = capsys.readouterr().out
    cache = Cache.default()
    (path,) = cache.directory.glob("model-*.json")
    return cache, path, out


def _payload(path: Path) -> dict:
    return json.loads(path.read_bytes().split(b"\n", 1)[1])


def _sign(path: Path, cache: Cache, entry: object) -> None:
    """*entry* authenticated with the user's own key: the worst case, a key that leaked."""
    payload = json.dumps(entry).encode()
    path.write_bytes(cache._mac(cache._key(create=True), payload) + b"\n" + payload)


def _poisoned(value: object, code: str) -> object:
    """*value* with every string replaced by *code* and every formula tree by *code* too."""
    if isinstance(value, dict):
        return {key: code if key == "tree" else _poisoned(item, code) for key, item in value.items()}
    if isinstance(value, list):
        return [_poisoned(item, code) for item in value]
    return code if isinstance(value, str) else value


def test_code_in_an_entry_signed_with_a_recomputed_checksum_never_runs(tmp_path, capsys):
    """The attack the issue describes: code in the entry, its checksum recomputed."""
    cache, path, expected = _fill(capsys)
    marker = tmp_path / MARKER
    code = f"__import__('os').system('touch {marker}')"
    payload = json.dumps(_poisoned(_payload(path), code)).encode()
    path.write_bytes(hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
    assert Cache.default().selection(MODEL, "exact") is None
    assert main(["eval", "llama-3-8b", "--seq-len", "64"]) == 0
    assert capsys.readouterr().out == expected and not marker.exists()


@pytest.mark.parametrize("field", ["text", "argnames", "tree", "everything"])
def test_nothing_from_a_signed_entry_reaches_the_compiler(tmp_path, capsys, monkeypatch, field):
    """Even an entry authenticated with the user's key cannot put code into what is compiled:
    every source handed to ``compile`` is checked for the payload."""
    cache, path, expected = _fill(capsys)
    marker = tmp_path / MARKER
    code = f"__import__('os').system('touch {marker}')"
    entry = _payload(path)
    compiled = entry["body"]["compiled"]
    if field == "everything":
        entry = _poisoned(entry, code)
    else:
        compiled[field] = [code] if field == "argnames" else ["add", code, ["arg", 0]] if field == "tree" else code
    _sign(path, cache, entry)
    sources: list[str] = []
    real_compile = compile

    def spy(source, *args, **kwargs):
        sources.append(source)
        return real_compile(source, *args, **kwargs)

    monkeypatch.setattr(flopsreg.formula.tree, "compile", spy, raising=False)
    selection = Cache.default().selection(MODEL, "exact")
    assert not any("__import__" in source or MARKER in source for source in sources)
    assert not marker.exists()
    if field == "text":  # the text is only ever printed in messages: the entry is otherwise whole
        assert selection is not None
        assert selection.forward(64) == flopsreg.Registry(load_entry_points=False).evaluate(MODEL, seq_len=64).forward
    else:
        assert selection is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda body: [body],  # a list where an object goes
        lambda body: {k: v for k, v in body.items() if k != "warnings"},  # a missing field
        lambda body: {**body, "extra": 1},  # an unknown field
        lambda body: {**body, "compiled": {**body["compiled"], "argnames": ["nosuch"]}},  # an unknown argument
        lambda body: {**body, "compiled": {**body["compiled"], "tree": ["arg", 5]}},  # an argument out of range
        lambda body: {**body, "compiled": {**body["compiled"], "tree": ["pow", ["arg", 0], 10**6]}},  # a huge power
        lambda body: {**body, "compiled": {**body["compiled"], "tree": 10**2000}},  # a huge constant
        lambda body: {**body, "compiled": {**body["compiled"], "tree": ["add", 1.5, 2]}},  # a float
        lambda body: {**body, "compiled": {**body["compiled"], "tree": ["exec", 1, 2]}},  # an unknown operation
        lambda body: {**body, "kinds": [{**body["kinds"][0], "count": True}]},  # a bool for an int
        lambda body: {**body, "kinds": [{**body["kinds"][0], "layers": [[0, 32, 0]]}]},  # a zero step
        lambda body: {**body, "kinds": [{**body["kinds"][0], "params": {"hidden": "4096"}}]},  # a str for an int
        lambda body: {**body, "selective": {"mlp": "yes"}},  # a str for a bool
    ],
)
def test_a_signed_entry_of_the_wrong_shape_is_a_miss(capsys, damage):
    cache, path, expected = _fill(capsys)
    entry = _payload(path)
    _sign(path, cache, {**entry, "body": damage(entry["body"])})
    assert Cache.default().selection(MODEL, "exact") is None
    assert main(["eval", "llama-3-8b", "--seq-len", "64"]) == 0
    assert capsys.readouterr().out == expected


def test_a_tree_nested_beyond_the_bound_is_a_miss_without_recursion(capsys):
    cache, path, _ = _fill(capsys)
    entry = _payload(path)
    entry["body"]["compiled"]["tree"] = "DEEP"
    deep = '["add",' * 100_000 + '["arg",0]' + ",1]" * 100_000  # json.loads of it raises RecursionError: a miss too
    payload = json.dumps(entry).replace('"DEEP"', deep).encode()
    path.write_bytes(cache._mac(cache._key(create=True), payload) + b"\n" + payload)
    assert Cache.default().selection(MODEL, "exact") is None
    shallow_enough = ["arg", 0]
    for _ in range(flopsreg.formula.tree.MAX_TREE_DEPTH):
        shallow_enough = ["add", shallow_enough, 1]
    with pytest.raises(ValueError, match="deeper than"):
        flopsreg.formula.tree.check_tree(shallow_enough, 1)


def test_the_runtime_checks_the_tree_iteratively():
    """check_tree refuses a 10^5-deep tree with a ValueError, not a RecursionError."""
    deep: object = 1
    for _ in range(100_000):
        deep = ["not", deep]
    with pytest.raises(ValueError, match="deeper than"):
        flopsreg.formula.tree.check_tree(deep, 0)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_a_device_a_link_and_an_oversized_file_are_misses(capsys, tmp_path):
    cache, path, expected = _fill(capsys)
    key = cache.model_key(MODEL, "exact")
    path.unlink()
    os.mkfifo(path)  # opening it for reading would wait for a writer forever
    code = "from flopsreg.cli import main; import sys; sys.exit(main(['eval', 'llama-3-8b', '--seq-len', '64']))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout == expected
    assert cache._read("model", key) is None
    path.unlink()
    path.symlink_to("/dev/zero")  # a read without a cap would fill memory
    assert cache._read("model", key) is None
    path.unlink()
    target = tmp_path / "elsewhere.json"
    target.write_bytes(b"{}")
    path.symlink_to(target)
    assert cache._read("model", key) is None
    path.unlink()
    with open(path, "wb") as file:
        file.truncate(flopsreg.engine.cache.MAX_ENTRY_BYTES + 1)
    assert cache._read("model", key) is None


def test_a_folder_writable_by_others_is_not_used(capsys):
    directory = Cache.default().directory
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o777)
    assert main(["eval", "llama-3-8b", "--seq-len", "64", "--no-cache"]) == 0
    expected = capsys.readouterr().out
    assert main(["eval", "llama-3-8b", "--seq-len", "64"]) == 0
    out, err = capsys.readouterr()
    assert out == expected
    assert err.count("\n") == 1 and "cache of compiled models is off" in err and "writable by" in err
    assert list(directory.iterdir()) == []  # nothing written, nothing read
    assert main(["cache", "info"]) == 0
    assert "enabled: no (the folder is writable by" in capsys.readouterr().out


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to give a folder to another user")
def test_a_folder_of_another_user_is_not_used(capsys):
    directory = Cache.default().directory
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    os.chown(directory, 65534, 65534)
    assert Cache.default().refused == "owned by user id 65534, not by you"
    assert main(["eval", "llama-3-8b", "--seq-len", "64"]) == 0
    assert "cache of compiled models is off" in capsys.readouterr().err
    assert list(directory.iterdir()) == []


def test_the_key_is_private_and_a_key_others_can_read_is_replaced(capsys):
    cache, path, expected = _fill(capsys)
    key_file = cache.directory / flopsreg.engine.cache.KEY_FILE
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key_file.chmod(0o644)  # another user may have read it: entries signed with it are not trusted
    fresh = Cache.default()
    assert fresh.selection(MODEL, "exact") is None
    assert main(["eval", "llama-3-8b", "--seq-len", "64"]) == 0
    assert capsys.readouterr().out == expected
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert Cache.default().selection(MODEL, "exact") is not None


@pytest.mark.parametrize("failing", ["write", "replace"])
def test_a_failed_write_leaves_nothing_behind(capsys, monkeypatch, failing):
    if failing == "replace":
        def full(*args, **kwargs):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(flopsreg.engine.cache.os, "replace", full)
    else:
        real_fdopen = os.fdopen

        class _Full:
            def __init__(self, file):
                self.file = file

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.file.close()

            def write(self, data):
                if len(data) > 32:  # the key goes through; an entry does not
                    raise OSError(errno.ENOSPC, "No space left on device")
                return self.file.write(data)

        monkeypatch.setattr(flopsreg.engine.cache.os, "fdopen", lambda fd, mode: _Full(real_fdopen(fd, mode)))
    assert main(["eval", "llama-3-8b", "--seq-len", "64"]) == 0
    directory = Cache.default().directory
    assert "FLOPs" in capsys.readouterr().out
    assert list(directory.glob("*.tmp")) == [] and list(directory.glob("*.json")) == []


PLUGIN = '''
import sympy
import flopsreg
from flopsreg.declarations.symbols import s

BUMP = flopsreg.Pattern(
    name="bump_mask", slot="attention.mask", flags={"bump_mask"}, precedence=50, produces="pairs",
    formula=s * (s + 1) / 2 + 1000,
    summary="causal pairs and a constant (a test plugin)", reference="tests/engine/test_cache_tampering.py",
)


@flopsreg.hookimpl
def flopsreg_register_patterns():
    return [BUMP]
'''


@pytest.mark.slow
def test_an_edited_installed_plugin_is_a_miss(tmp_path):
    """An editable plugin edited between two evaluations: same size, same modification time, and
    no install folder changes. The second evaluation counts the new formula."""
    site = tmp_path / "site"
    (site / "flopsreg_bump-1.0.dist-info").mkdir(parents=True)
    (site / "flopsreg_bump-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: flopsreg-bump\nVersion: 1.0\n")
    (site / "flopsreg_bump-1.0.dist-info" / "entry_points.txt").write_text("[flopsreg]\nbump = flopsreg_bump\n")
    plugin = site / "flopsreg_bump.py"
    plugin.write_text(PLUGIN)
    model = flopsreg.Model(
        name="bumped",
        params={"hidden": 8, "heads": 2, "kv_heads": 2, "head_dim": 4},
        kinds={"bumped": flopsreg.LayerKind(flags={"bump_mask"})},
        plan=flopsreg.Plan(layers=1, cycle=["bumped"]),
    )
    (tmp_path / "bumped.toml").write_text(model.to_toml())
    env = {**os.environ, "PYTHONPATH": str(site), "FLOPSREG_DISABLE_PLUGIN_AUTOLOAD": ""}

    def forward(*extra: str) -> int:
        run = subprocess.run(
            [sys.executable, "-m", "flopsreg", "eval", str(tmp_path / "bumped.toml"), "--seq-len", "4", "--format", "json", *extra],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
        )
        assert run.returncode == 0, run.stderr
        return int(json.loads(run.stdout)["forward_flops"])

    # one layer: projections 2*s*(h*(H + 2 H_kv)*d + H*d*h) = 2*4*(8*16 + 32) at s=4, and the core
    # 2 * H * (d + d) * pairs, pairs = s(s+1)/2 + c = 10 + c
    def expected(constant: int) -> int:
        return 2 * 4 * (8 * 4 * 6 + 8 * 8) + 2 * 2 * (4 + 4) * (10 + constant)

    assert forward() == expected(1000)
    assert forward() == expected(1000)  # now from the cache
    stat_before = plugin.stat()
    plugin.write_text(PLUGIN.replace("1000", "2000"))
    os.utime(plugin, ns=(stat_before.st_atime_ns, stat_before.st_mtime_ns))
    os.utime(site, ns=(site.stat().st_atime_ns, site.stat().st_mtime_ns))
    assert forward() == expected(2000) == forward("--no-cache")


def test_plugin_modules_are_in_the_key_of_a_registry_that_loaded_them():
    class Plugin:  # a plugin object of this test module: its module's file is covered
        pass

    registry = flopsreg.Registry(plugins=[Plugin()], load_entry_points=False)
    files = [path for path, _ in flopsreg.engine.cache.plugin_files(registry)]
    assert files == [__file__] or files == [str(Path(__file__))]
    assert flopsreg.engine.cache.plugin_files(flopsreg.Registry(load_entry_points=False)) == []


def test_a_plugin_file_changed_since_the_registry_entry_reloads_the_registry(tmp_path):
    cache = Cache.default()
    module = tmp_path / "mod.py"
    module.write_text("x = 1\n")
    cache._write("registry", cache.registry_key(), {
        "blocks": {}, "warnings": [], "plugin_files": [[str(module), hashlib.sha256(b"x = 1\n").hexdigest()]],
    })
    assert Cache.default().registry_info() == {"blocks": {}, "warnings": []}
    module.write_text("x = 2\n")
    assert Cache.default().registry_info() is None


def test_formula_code_is_written_from_the_tree_alone():
    """Argument names never reach the code: ``lambda``, ``min`` and ``_exdiv`` are fine names."""
    formula = flopsreg.formula.tree.Formula.from_tree(
        "lambda + min(min, _exdiv)", ("lambda", "min", "_exdiv"),
        ["add", ["arg", 0], ["min", ["arg", 1], ["arg", 2]], ["div", ["arg", 0], 2]],
    )
    assert formula({"lambda": 4, "min": 7, "_exdiv": 3}) == 4 + 3 + 2
    assert formula.sweep("min", [1, 5], {"lambda": 6, "_exdiv": 3}) == [6 + 1 + 3, 6 + 3 + 3]
    assert "lambda" not in formula.source and "min(a1, a2)" in formula.source
    assert textwrap.dedent(formula.source).startswith("def _formula(a0, a1, a2):")


@pytest.mark.parametrize("operation", ["ceildiv", "floordiv", "mod", "div", "if"])
def test_a_tree_at_the_depth_bound_compiles_and_evaluates(operation):
    """The deepest tree check_tree accepts, of the operation that writes the most parentheses,
    is within what Python compiles, and computes what the same loop in Python computes."""
    tree: object = ["arg", 0]
    for _ in range(flopsreg.formula.tree.MAX_TREE_DEPTH - 1):
        tree = ["if", ["true"], tree, 0] if operation == "if" else [operation, tree, 3 if operation != "div" else 1]
    value, expected = 10**60 + 7, 10**60 + 7
    for _ in range(flopsreg.formula.tree.MAX_TREE_DEPTH - 1):
        expected = {"ceildiv": -(-expected // 3), "floordiv": expected // 3, "mod": expected % 3}.get(operation, expected)
    assert flopsreg.formula.tree.Formula.from_tree("deep", ("x",), tree)({"x": value}) == expected
