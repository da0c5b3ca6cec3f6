"""Every entry point refuses a wrong argument with one FlopsregError line; names print on one line.

Issue 19, point 5 and the command-line parts of points 2 and 4: argument types of the Python API,
unknown conventions in compare, empty names and control characters in names, ``with_param``
returning the model, ``--param`` of an unknown parameter as one line, commands that load no plugin,
and a full disk on stdout as one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import flopsreg
from flopsreg import FlopsregError, LayerKind, Model, ModelError, Plan, PluginError
from flopsreg.cli import main

ROOT = Path(__file__).resolve().parent.parent
DEEPSEEK_V3 = ROOT / "tests" / "data" / "hf" / "deepseek-v3.json"


@pytest.fixture(scope="module")
def llama() -> Model:
    return Model.example("llama-3-8b")


def tiny(name: str) -> Model:
    return Model(name=name, kinds={"a": LayerKind()}, plan=Plan.uniform("a", 2))


# -- argument types of the Python API -----------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: Model.from_toml_string(b"name = 'x'"), ["text = b\"name = 'x'\"", "got bytes", "decode"]),
        (lambda: Model.from_toml_string(None), ["text = None", "a str"]),
        (lambda: Model.from_toml_string("name = 'x'", where=3), ["where = 3", "string"]),
        (lambda: Model.from_toml(None), ["path = None", "model file", "NoneType"]),
        (lambda: Model.from_toml(3), ["path = 3", "int"]),
        (lambda: Model.from_toml(b"examples/llama-3-8b.toml"), ["path = b'examples", "bytes"]),
        (lambda: Model.example(3), ["example 3", "bundled example's name", "int"]),
        (lambda: Model.example(None), ["example None", "NoneType"]),
        (lambda: Model.from_hf_config(DEEPSEEK_V3, registry=3), ["registry = 3", "flopsreg.Registry"]),
        (lambda: Model.from_hf_config(DEEPSEEK_V3, blocks="mtp"), ["blocks = 'mtp'", "list of block names (one name goes in a list too)"]),
        (lambda: Model.from_hf_config(DEEPSEEK_V3, blocks=3), ["blocks = 3", "list of block names (one name goes in a list too)"]),
        (lambda: Model.from_megatron_args(object(), nme="x"), ["nme=", "did you mean 'name'"]),
        (lambda: Model.from_megatron_args(object(), registry="default"), ["registry = 'default'"]),
        (lambda: Plan(layers=2, cycle=["a"], blocks=["mtp"]), ["plan.blocks = ['mtp']", "table"]),
        (lambda: Plan.explicit(3), ["plan.list = 3", "list of layer-kind names"]),
        (lambda: Model.example("llama-3-8b").layers_of(3), ["kind 3", "not a layer kind"]),
        (lambda: Model.example("llama-3-8b").block(3), ["block 3", "block name"]),
        (lambda: Model.example("llama-3-8b").param_places(3), ["param 3", "parameter name"]),
    ],
)
def test_model_entry_points_refuse_wrong_argument_types(call, words):
    with pytest.raises(ModelError) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_the_registry_refuses_one_plugin_alone_and_switches_that_are_not_booleans():
    with pytest.raises(PluginError, match=r"plugin '3': passed alone as plugins \(int\).*Registry\(\[plugin\]\)"):
        flopsreg.Registry(3, load_entry_points=False)
    with pytest.raises(FlopsregError, match=r"builtins = 'no': expected True or False, got str"):
        flopsreg.Registry(builtins="no", load_entry_points=False)
    with pytest.raises(FlopsregError, match=r"load_entry_points = 0: expected True or False"):
        flopsreg.Registry(load_entry_points=0)


CALLS = {
    "evaluate": lambda reg, model, **kw: reg.evaluate(model, seq_len=8, **kw),
    "select": lambda reg, model, **kw: reg.select(model, **kw),
    "plan": lambda reg, model, **kw: reg.select(model, **kw),
    "parameters": lambda reg, model, **kw: reg.parameters(model),
    "generate": lambda reg, model, **kw: reg.generate(model, prompt=8, new_tokens=2, **kw),
    "compare": lambda reg, model, **kw: reg.compare(model, seq_len=8, conventions=[kw["convention"]] if kw else None),
    "sweep": lambda reg, model, **kw: reg.sweep(model, [8, 16], **kw),
}


@pytest.mark.parametrize("method", CALLS)
@pytest.mark.parametrize("model", [None, "llama-3-8b", {"name": "llama"}])
def test_registry_methods_refuse_what_is_not_a_model(registry, method, model):
    with pytest.raises(ModelError, match=r"^model: expected a flopsreg\.Model, got "):
        CALLS[method](registry, model)


@pytest.mark.parametrize("method", [m for m in CALLS if m != "parameters"])
@pytest.mark.parametrize("convention", [3, None, b"megatron"])
def test_registry_methods_refuse_a_convention_that_is_not_a_string(registry, llama, method, convention):
    with pytest.raises(ModelError, match=r"^convention: expected a convention name \(a string\)"):
        CALLS[method](registry, llama, convention=convention)


# -- compare: the conventions asked for --------------------------------------------------------


def test_compare_refuses_an_unknown_convention_with_the_closest_name(registry, llama):
    with pytest.raises(ModelError, match=r"convention: 'megatrn' is not registered; did you mean 'megatron'\? \(known: exact, "):
        registry.compare(llama, seq_len=8, conventions=["megatrn"])
    with pytest.raises(ModelError, match=r"convention: 'nope' is not registered \(known: exact, "):
        registry.compare(llama, seq_len=8, conventions=["slime", "nope"])


@pytest.mark.parametrize(
    ("conventions", "message"),
    [
        ("megatron", r"conventions = 'megatron': expected a list of convention names"),
        (3, r"conventions = 3: expected a list of convention names"),
        ([3], r"convention: expected a convention name \(a string\), got int 3"),
        (["exact"], r"conventions: 'exact' is always compared \(first\)"),
        (["slime", "megatron", "slime"], r"conventions: 'slime' is listed twice"),
    ],
)
def test_compare_refuses_conventions_that_are_not_a_list_of_distinct_names(registry, llama, conventions, message):
    with pytest.raises(ModelError, match=message):
        registry.compare(llama, seq_len=8, conventions=conventions)


def test_compare_of_named_conventions_gives_exactly_those_after_exact(registry, llama):
    comparison = registry.compare(llama, seq_len=8, conventions=["slime", "megatron"])
    assert [total.convention for total in comparison.totals] == ["exact", "slime", "megatron"]


# -- names ----------------------------------------------------------------------------------------

REFUSED = {  # name, and the position (from 1) of its first refused character
    "NUL": ("a\x00b", 2),
    "BEL": ("ab\x07", 3),
    "ESC": ("\x1b[31mred", 1),
    "tab": ("a\tb", 2),
    "newline": ("a\nb", 2),
    "DEL": ("a\x7fb", 2),
    "zero-width space (Cf)": ("a\u200bb", 2),
    "line separator": ("a b\u2028", 4),
    "unassigned": ("a\U000e0080b", 2),
}


@pytest.mark.parametrize(("name", "position"), REFUSED.values(), ids=REFUSED.keys())
def test_a_name_with_a_control_character_is_refused(name, position):
    with pytest.raises(ModelError) as caught:
        tiny(name)
    message = str(caught.value)
    code = f"U+{ord(name[position - 1]):04X}"
    assert message.startswith(f"name = {name!r}: character {position} ({code}) is a control character or line break")
    assert message.isprintable()


@pytest.mark.parametrize("name", ["", " ", "  \u3000 "])
def test_an_empty_name_is_refused(name):
    with pytest.raises(ModelError, match=r"^name = .*: empty; a model needs a name"):
        tiny(name)


@pytest.mark.parametrize("name", ["llama \U0001f999", "no-break\u00a0space", "Qwen–7B (ü)", "a\\b {$&#^_%~}"])
def test_printable_names_are_kept_as_given(name):
    assert tiny(name).name == name


def test_a_model_file_with_a_control_character_in_its_name_is_refused_naming_the_file():
    text = Model.example("llama-3-8b").to_toml().replace('name = "llama-3-8b"', 'name = "llama\\u001b[2J"')
    with pytest.raises(ModelError, match=r"^my\.toml: name = 'llama\\x1b\[2J': character 6 \(U\+001B\)"):
        Model.from_toml_string(text, where="my.toml")
    with pytest.raises(ModelError, match=r"^my\.toml: name = '': empty"):
        Model.from_toml_string(text.replace('"llama\\u001b[2J"', '""'), where="my.toml")


@pytest.mark.parametrize(
    ("name_or_path", "name"),
    [
        ("/home/me/models/my\tmodel\n", "/home/me/models/my\\tmodel"),
        ("\x1b[31mred", "\\x1b[31mred"),
        ("  ", "deepseek_v3"),  # nothing left: the model type, as when _name_or_path is missing
        ("deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-V3"),
    ],
)
def test_a_config_json_name_is_escaped_not_refused(name_or_path, name):
    config = {**json.loads(DEEPSEEK_V3.read_text(encoding="utf-8")), "_name_or_path": name_or_path}
    assert Model.from_hf_config(config).name == name


def test_a_name_given_to_a_reader_is_checked_like_any_other():
    with pytest.raises(ModelError, match=r"^name = 'a\\x1bb': character 2 \(U\+001B\)"):
        Model.from_hf_config(DEEPSEEK_V3, name="a\x1bb")


def test_latex_escapes_every_special_character_of_a_name(registry):
    model = Model.uniform("a\\b{c}$d&e#f^g_h%i~j", layers=1, hidden=8, heads=2, kv_heads=2, head_dim=4)
    document = registry.evaluate(model, seq_len=4).latex(document=True)
    title = (
        r"\section*{a\textbackslash{}b\{c\}\$d\&e\#f\textasciicircum{}g\_h\%i\textasciitilde{}j}"
    )
    assert title in document.splitlines()
    comment = next(line for line in document.splitlines() if line.startswith("% a"))
    assert comment.startswith(r"% a\textbackslash{}b\{c\}\$d\&e\#f\textasciicircum{}g\_h\%i\textasciitilde{}j: forward")


def test_the_cli_prints_an_escaped_config_json_name_on_one_line(tmp_path, capsys):
    config = {**json.loads(DEEPSEEK_V3.read_text(encoding="utf-8")), "_name_or_path": "x\x1b[2J\x07"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    assert main(["eval", str(path), "--seq-len", "4"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("x\\x1b[2J\\x07, batch 1 x 4 tokens\n")
    assert "\x1b" not in out and "\x07" not in out


# -- with_param ------------------------------------------------------------------------------------


def test_with_param_returns_the_model_and_param_places_says_where(registry):
    gemma = Model.example("gemma-3-4b")
    narrowed = gemma.with_param("window", 512)
    assert isinstance(narrowed, Model)
    assert narrowed.kinds["local"].params["window"] == 512 and narrowed.params["window"] == 512
    assert gemma.param_places("window") == ("params", "kinds.local.params")
    assert gemma.param_places("padded_vocab") == ("params",)  # set nowhere: model-wide
    # as the README writes it: the new model goes straight into evaluate
    assert registry.evaluate(gemma.with_param("window", 512), seq_len=2048).forward < registry.evaluate(gemma, seq_len=2048).forward


# -- --param on the command line -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (["nosuch=5"], "--param nosuch=5: unknown parameter 'nosuch' (neither llama-3-8b nor any of its layer kinds sets it"),
        (["hiden=5"], "--param hiden=5: unknown parameter 'hiden'; did you mean 'hidden'?"),
        (["hidden=4096", "nosuch=5"], "--param nosuch=5: unknown parameter 'nosuch'"),  # no note for the first either
    ],
)
def test_an_unknown_parameter_is_one_error_line(capsys, params, message):
    argv = ["eval", "llama-3-8b", "--seq-len", "16"] + [arg for param in params for arg in ("--param", param)]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(f"flopsreg: error: {message}")


def test_a_declared_parameter_the_model_does_not_set_is_set_with_a_note(capsys):
    assert main(["eval", "llama-3-8b", "--seq-len", "16", "--param", "window=512"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "flopsreg: note: --param window=512 set in params"
    assert err[1].startswith("flopsreg: warning: params.window = 512 is set but no selected pattern uses it")


def test_a_parameter_a_layer_kind_sets_is_set_there_with_a_note(capsys):
    assert main(["eval", "gemma-3-4b", "--seq-len", "16", "--param", "window=512"]) == 0
    assert capsys.readouterr().err == "flopsreg: note: --param window=512 set in params, kinds.local.params\n"


# -- commands that need no plugin -----------------------------------------------------------------


@pytest.fixture
def broken_plugin(tmp_path) -> tuple[dict[str, str], Path]:
    """The environment of a process with an installed plugin that, at import, leaves a marker file
    and exits with status 3; and the marker's path."""
    marker = tmp_path / "imported"
    site = tmp_path / "site"
    site.mkdir()
    (site / "broken_flopsreg_plugin.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).touch()\nraise SystemExit(3)\n", encoding="utf-8"
    )
    dist = site / "broken_flopsreg_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-flopsreg-plugin\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[flopsreg]\nbroken = broken_flopsreg_plugin\n", encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "FLOPSREG_DISABLE_PLUGIN_AUTOLOAD"}
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH")])])
    env["FLOPSREG_CACHE_DIR"] = str(tmp_path / "cache")
    return env, marker


def _flopsreg(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flopsreg", *argv], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["peaks"], "h100-sxm-bf16"),
        (["peaks", "--format", "json"], "h100-sxm-bf16"),
        (["cache", "info"], "cache"),
        (["--version"], "flopsreg "),
        (["--help"], "usage: flopsreg"),
    ],
)
def test_commands_that_need_no_plugin_do_not_load_them(broken_plugin, argv, expected):
    env, marker = broken_plugin
    done = _flopsreg(env, *argv)
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout and done.stderr == ""
    assert not marker.exists()


@pytest.mark.slow
def test_the_broken_plugin_is_loaded_by_a_command_that_needs_plugins(broken_plugin):
    """The control for the test above: the plugin is installed and its import runs."""
    env, marker = broken_plugin
    _flopsreg(env, "patterns")
    assert marker.exists()


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["peaks"], ["cache", "info"]])
def test_commands_that_need_no_plugin_do_not_import_sympy(tmp_path, argv):
    code = (
        "import sys, flopsreg.cli\n"
        f"status = flopsreg.cli.main({argv!r})\n"
        "print(status, 'sympy' in sys.modules, file=sys.stderr)\n"
    )
    env = {**os.environ, "FLOPSREG_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.stderr.splitlines()[-1] == "0 False", done.stderr


# -- a full disk on stdout ------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "llama-3-8b", "--seq-len", "16"],
        ["sweep", "llama-3-8b", "--seq-len", "1:20000"],
        ["peaks"],
        ["--version"],
        ["--help"],
    ],
)
def test_a_full_disk_on_stdout_is_one_error_line(tmp_path, argv):
    env = {**os.environ, "FLOPSREG_CACHE_DIR": str(tmp_path / "cache")}
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "flopsreg", *argv], stdout=full, stderr=subprocess.PIPE, text=True, env=env, timeout=120
        )
    assert done.returncode == 2
    assert done.stderr == "flopsreg: error: cannot write the output: No space left on device\n"


@pytest.mark.slow
def test_output_piped_into_a_reader_that_stops_early_is_still_not_an_error(tmp_path):
    env = {**os.environ, "FLOPSREG_CACHE_DIR": str(tmp_path / "cache")}
    sweep = subprocess.Popen(
        [sys.executable, "-m", "flopsreg", "sweep", "llama-3-8b", "--seq-len", "1:200000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    assert sweep.stdout is not None and sweep.stderr is not None
    sweep.stdout.readline()
    sweep.stdout.close()
    assert sweep.wait(timeout=120) == 0
    assert sweep.stderr.read() == b""
