"""The command line, run in-process: output formats, exact numbers, errors and warnings.

Expected FLOPs are written out by hand from the Gemma 3 4B example's published dimensions,
matmul by matmul; JSON totals must be decimal strings so no consumer rounds them. Errors are
one line on stderr starting "flopsreg: error:" with exit status 2; warnings go to stderr with
exit status 0.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction

import pytest

from flopsreg.cli import main


@pytest.fixture(autouse=True)
def _no_installed_plugins(monkeypatch):
    """Installed third-party plugins must not change the numbers these tests check."""
    monkeypatch.setenv("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD", "1")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def run_json(capsys, *argv: str):
    status, out, err = run(capsys, *argv, "--format", "json")
    assert status == 0, err
    return json.loads(out)


# Gemma 3 4B as in examples/gemma-3-4b.toml: 34 layers, layer i global iff (i + 1) % 6 == 0,
# sliding window 1024 keys (query included) elsewhere; GQA 8 heads / 4 kv heads of 256; gated
# (GeGLU) MLP of width 10240 on every layer; one tied logits head over 262208 tokens.
H, N_H, N_KV, D, F, V, W = 2560, 8, 4, 256, 10240, 262208, 1024
GLOBAL = {5, 11, 17, 23, 29}


def gemma_layer(s: int, *, sliding: bool) -> int:
    """Forward FLOPs of one Gemma 3 4B decoder layer for one sequence of s tokens."""
    attended = sum(min(q + 1, W) if sliding else q + 1 for q in range(s))  # keys seen by query q
    q_proj = 2 * s * H * (N_H * D)
    k_proj = 2 * s * H * (N_KV * D)
    v_proj = 2 * s * H * (N_KV * D)
    scores = 2 * N_H * D * attended  # QK^T
    weighted = 2 * N_H * D * attended  # PV
    o_proj = 2 * s * (N_H * D) * H
    mlp = 3 * (2 * s * H * F)  # gate, up, down
    return q_proj + k_proj + v_proj + scores + weighted + o_proj + mlp


def gemma_forward(s: int) -> int:
    layers = sum(gemma_layer(s, sliding=i not in GLOBAL) for i in range(34))
    logits = 2 * s * H * V
    return layers + logits


# -- patterns ------------------------------------------------------------------------------------


def test_patterns_json_lists_builtins_with_slot_flags_precedence(capsys):
    rows = {row["name"]: row for row in run_json(capsys, "patterns")}
    expected = {
        "full_causal": ("attention.mask", [], 10),
        "sliding_window": ("attention.mask", ["sliding_window"], 20),
        "chunked": ("attention.mask", ["chunked"], 30),
        "gqa_projection": ("attention.projection", [], 10),
        "mla_projection": ("attention.projection", ["mla"], 20),
    }
    for name, (slot, flags, precedence) in expected.items():
        assert (rows[name]["slot"], rows[name]["flags"], rows[name]["precedence"]) == (slot, flags, precedence)
        assert rows[name]["plugin"] == f"flopsreg.patterns.{name}"
    assert rows["sliding_window"]["params"] == ["window"]


def test_patterns_text_is_a_table(capsys):
    status, out, err = run(capsys, "patterns")
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["slot", "pattern", "flags", "precedence"]
    assert any(line.split()[:4] == ["attention.mask", "sliding_window", "sliding_window", "20"] for line in lines)


def test_patterns_text_from_the_manifest_is_the_registrys_table_byte_for_byte(capsys, monkeypatch, registry):
    """With the built-ins alone, the table is listed from the manifest (no module imported: see
    the test below); it must be the text the loaded registry gives, order and summaries included."""
    from flopsreg import render
    from flopsreg.plugins import builtins

    listed = builtins.listed_patterns()
    assert listed is not None and len(listed) == len(registry.patterns)
    status, out, err = run(capsys, "patterns")
    assert status == 0 and err == ""
    assert out == render.patterns_text(registry) + "\n"
    monkeypatch.setattr(builtins, "builtins_alone", lambda: False)  # another plugin may be installed: the registry lists
    assert builtins.listed_patterns() is None
    assert run(capsys, "patterns") == (0, out, "")


def test_patterns_from_a_manifest_without_summaries_are_listed_by_the_registry(monkeypatch):
    from flopsreg.plugins import builtins

    planned = builtins.planned_patterns
    monkeypatch.setattr(builtins, "planned_patterns", lambda module: [{k: v for k, v in p.items() if k != "summary"} for p in planned(module)])
    assert builtins.listed_patterns() is None


@pytest.mark.slow
def test_patterns_text_imports_no_built_in_module_nor_sympy():
    code = (
        "import sys\nfrom flopsreg.cli import main\nmain(['patterns'])\n"
        "print([m for m in sys.modules if m == 'sympy' or m.startswith('flopsreg.patterns.')])"
    )
    env = {**os.environ, "FLOPSREG_DISABLE_PLUGIN_AUTOLOAD": "1", "FLOPSREG_NO_CACHE": "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "sliding_window" in done.stdout and done.stdout.strip().splitlines()[-1] == "[]"


# -- eval ----------------------------------------------------------------------------------------


def test_eval_gemma_json_totals_are_exact_decimal_strings_matching_hand_arithmetic(capsys):
    data = run_json(capsys, "eval", "gemma-3-4b", "--seq-len", "4096")
    forward = gemma_forward(4096)
    assert data["forward_flops"] == str(forward)
    assert data["training_flops"] == str(3 * forward)
    assert isinstance(data["forward_flops"], str) and isinstance(data["training_flops"], str)
    assert data["warnings"] == []
    assert "layers" not in data  # per layer only on request: the size follows the kinds
    local, global_ = data["kinds"]
    assert (local["kind"], local["count"], global_["kind"], global_["count"]) == ("local", 29, "global", 5)
    assert global_["layers"] == [{"first": 5, "last": 29, "step": 6}]  # one progression: 5, 11, ..., 29
    assert local["layers"] == [{"first": a, "last": b, "step": 1} for a, b in ((0, 4), (6, 10), (12, 16), (18, 22), (24, 28), (30, 33))]
    assert local["patterns"]["attention.mask"] == "sliding_window"
    assert global_["patterns"]["attention.mask"] == "full_causal"
    assert local["flops_per_layer"] == str(gemma_layer(4096, sliding=True))
    assert local["flops"] == str(29 * gemma_layer(4096, sliding=True))
    assert global_["flops"] == str(5 * gemma_layer(4096, sliding=False))
    # Gemma's head is tied to its embedding: the same logits FLOPs, the matrix held once.
    assert data["model_level"] == {"patterns": {"head": "tied_logits"}, "flops": str(2 * 4096 * H * V)}
    assert int(local["flops"]) + int(global_["flops"]) + 2 * 4096 * H * V == forward


def test_eval_per_layer_json_lists_every_layer(capsys):
    data = run_json(capsys, "eval", "gemma-3-4b", "--seq-len", "4096", "--per-layer")
    layers = data["layers"]
    assert [layer["index"] for layer in layers] == list(range(34))
    for layer in layers:
        sliding = layer["index"] not in GLOBAL
        assert layer["patterns"]["attention.mask"] == ("sliding_window" if sliding else "full_causal")
        assert layer["flops"] == str(gemma_layer(4096, sliding=sliding))
    assert sum(int(layer["flops"]) for layer in layers) + 2 * 4096 * H * V == int(data["forward_flops"])


def test_per_layer_needs_json(capsys):
    status, out, err = run(capsys, "eval", "gemma-3-4b", "--seq-len", "8", "--per-layer")
    assert_one_error_line(status, out, err, "--per-layer", "--format json")


def test_eval_batch_multiplies(capsys):
    data = run_json(capsys, "eval", "gemma-3-4b", "--seq-len", "64", "--batch", "3")
    assert data["forward_flops"] == str(3 * gemma_forward(64))


def test_eval_seqlens_is_the_sum_of_separate_sequences(capsys):
    """A packed row costs f(100) + f(200): attention does not cross sequences."""
    packed = run_json(capsys, "eval", "gemma-3-4b", "--seqlens", "100,200")
    one = run_json(capsys, "eval", "gemma-3-4b", "--seq-len", "100")
    two = run_json(capsys, "eval", "gemma-3-4b", "--seq-len", "200")
    assert int(packed["forward_flops"]) == int(one["forward_flops"]) + int(two["forward_flops"])
    assert packed["forward_flops"] == str(gemma_forward(100) + gemma_forward(200))
    assert packed["seqlens"] == [100, 200]


def test_eval_text_shows_grouped_totals(capsys):
    status, out, err = run(capsys, "eval", "gemma-3-4b", "--seq-len", "4096")
    assert status == 0 and err == ""
    forward = gemma_forward(4096)
    assert f"{forward:,}" in out and f"{3 * forward:,}" in out
    assert "sliding_window" in out and "full_causal" in out


def test_eval_latex_is_an_align_environment_with_the_total(capsys):
    status, out, err = run(capsys, "eval", "gemma-3-4b", "--seq-len", "4096", "--format", "latex")
    assert status == 0 and err == ""
    assert "\\begin{align}" in out and "\\end{align}" in out
    assert f"{gemma_forward(4096):,}".replace(",", "{,}") in out


# -- explain and formula -------------------------------------------------------------------------


def test_explain_gemma(capsys):
    status, out, err = run(capsys, "explain", "gemma-3-4b")
    assert status == 0 and err == ""
    assert "layers 5, 11, 17, 23, 29 (kind 'global')" in out
    assert "attention.mask: sliding_window (flag sliding_window set; sliding_window 20 > full_causal 10)" in out
    assert "attention.mask: full_causal (slot default, no flag needed)" in out


def test_formula_latex_has_align_and_a_legend_for_the_window(capsys):
    status, out, err = run(capsys, "formula", "gemma-3-4b", "--format", "latex")
    assert status == 0 and err == ""
    assert "\\begin{align}" in out and "\\end{align}" in out
    legend = out.split("\\end{align}")[1]
    assert "$W = 1{,}024$: keys a query sees in a sliding window, itself included;" in legend


def test_formula_text_names_the_patterns(capsys):
    status, out, err = run(capsys, "formula", "gemma-3-4b")
    assert status == 0
    assert "[sliding_window]" in out and "F(seq_len) =" in out


def test_eval_a_toml_file_path(capsys, tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(
        'name = "tiny"\n[params]\nhidden = 8\nheads = 2\nkv_heads = 2\nhead_dim = 4\n'
        '[plan]\nlayers = 1\nuniform = "l"\n[kinds.l]\n',
        encoding="utf-8",
    )
    data = run_json(capsys, "eval", str(path), "--seq-len", "4")
    s, h, n, d = 4, 8, 2, 4
    expected = 2 * s * h * n * d * 4 + 2 * n * (d + d) * (s * (s + 1) // 2)  # q, k, v, o + core
    assert data["forward_flops"] == str(expected)


# -- errors and warnings ---------------------------------------------------------------------------


def assert_one_error_line(status: int, out: str, err: str, *parts: str) -> None:
    assert status == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("flopsreg: error: ")
    for part in parts:
        assert part in lines[0], lines[0]


def test_unknown_model_name(capsys):
    status, out, err = run(capsys, "eval", "gemma-3-4bb", "--seq-len", "8")
    assert_one_error_line(status, out, err, "'gemma-3-4bb'", "gemma-3-4b")


def test_missing_toml_file(capsys, tmp_path):
    missing = tmp_path / "missing.toml"
    status, out, err = run(capsys, "explain", str(missing))
    assert_one_error_line(status, out, err, "missing.toml")


def test_missing_config_json(capsys, tmp_path):
    status, out, err = run(capsys, "eval", str(tmp_path / "config.json"), "--seq-len", "8")
    assert_one_error_line(status, out, err, "config.json")


def test_bad_toml_file(capsys, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\nparams = = 1\n', encoding="utf-8")
    status, out, err = run(capsys, "eval", str(path), "--seq-len", "8")
    assert_one_error_line(status, out, err, "bad.toml", "not valid TOML")


def test_typo_in_toml_file_names_key_and_suggestion(capsys, tmp_path):
    path = tmp_path / "typo.toml"
    path.write_text('name = "x"\n[param]\nhidden = 8\n[plan]\nlayers = 1\nuniform = "l"\n[kinds.l]\n', encoding="utf-8")
    status, out, err = run(capsys, "explain", str(path))
    assert_one_error_line(status, out, err, "param: unknown key", "did you mean 'params'")


@pytest.mark.parametrize(
    ("argv", "parts"),
    [
        (["--seq-len", "0"], ["seq_len", "0"]),
        (["--seq-len", "-3"], ["seq_len", "-3"]),
        (["--seqlens", "100,0"], ["seqlens", "0"]),
        (["--seq-len", "8", "--batch", "0"], ["batch", "0"]),
    ],
)
def test_bad_lengths_are_one_line_errors(capsys, argv, parts):
    status, out, err = run(capsys, "eval", "gemma-3-4b", *argv)
    assert_one_error_line(status, out, err, *parts)


def test_unused_param_warning_goes_to_stderr_with_exit_zero(capsys, tmp_path):
    path = tmp_path / "noflag.toml"
    path.write_text(
        'name = "noflag"\n[params]\nhidden = 8\nheads = 2\nkv_heads = 2\nhead_dim = 4\nwindow = 3\n'
        '[plan]\nlayers = 2\nuniform = "l"\n[kinds.l]\n',
        encoding="utf-8",
    )
    status, out, err = run(capsys, "eval", str(path), "--seq-len", "10", "--format", "json")
    assert status == 0
    assert err.startswith("flopsreg: warning: params.window = 3 is set but no selected pattern uses it")
    data = json.loads(out)
    assert len(data["warnings"]) == 1 and "params.window = 3" in data["warnings"][0]
    s, h, n, d = 10, 8, 2, 4
    per_layer = 2 * s * h * n * d * 4 + 2 * n * (d + d) * (s * (s + 1) // 2)  # full causal, not the window
    assert data["forward_flops"] == str(2 * per_layer)


def test_usage_errors_exit_with_status_2(capsys):
    """argparse usage errors (bad --seqlens syntax, no length) are one error line and status 2 too."""
    for argv in (["eval", "gemma-3-4b", "--seqlens", "100,abc"], ["eval", "gemma-3-4b"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("flopsreg: error: eval: "), err


def test_usage_errors_name_the_program_once(capsys):
    assert main(["lates", "gemma-3-4b"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("flopsreg: error: argument COMMAND: invalid choice: 'lates'"), err
    assert err.count("flopsreg:") == 1 and "'latex'" in err


def test_latex_command_prints_the_paper_fragment(capsys):
    for extra in ([], ["--document"], ["--convention", "nanogpt"]):
        assert main(["latex", "llama-3-8b", *extra]) == 0
        latex = capsys.readouterr().out
        assert main(["formula", "llama-3-8b", "--format", "latex", *extra]) == 0
        assert capsys.readouterr().out == latex
    assert main(["latex", "llama-3-8b", "--document"]) == 0
    assert capsys.readouterr().out.startswith("\\documentclass")


# -- the module entry point ---------------------------------------------------------------------


@pytest.mark.slow
def test_python_dash_m_flopsreg_patterns():
    env = {**os.environ, "FLOPSREG_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "flopsreg", "patterns"], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "full_causal" in done.stdout and "sliding_window" in done.stdout
    assert done.stderr == ""


@pytest.mark.slow
def test_python_dash_m_flopsreg_error_status():
    env = {**os.environ, "FLOPSREG_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "flopsreg", "eval", "no-such-model", "--seq-len", "8"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("flopsreg: error: ") and done.stdout == ""


# -- no silent no-ops, no tracebacks --------------------------------------------------------------


def test_version_is_the_installed_distributions(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"flopsreg {version('flopsreg')}\n"


def test_param_changes_the_window_where_the_layer_kind_sets_it(capsys):
    """--param window=512 on Gemma 3: the local kind sets the window, so that is where it applies (and
    model-wide, where the example gives it too, for conventions that count every layer with it)."""
    status, out, err = run(capsys, "eval", "gemma-3-4b", "--seq-len", "4096", "--param", "window=512", "--format", "json")
    assert status == 0
    assert err == "flopsreg: note: --param window=512 set in params, kinds.local.params\n"
    narrowed = sum(min(q + 1, 512) for q in range(4096))  # keys seen by each query of a 512-key window
    wide = sum(min(q + 1, W) for q in range(4096))
    core = 2 * N_H * (D + D)  # QK^T and PV per attended pair
    assert int(json.loads(out)["forward_flops"]) == gemma_forward(4096) - 29 * core * (wide - narrowed)


def test_param_not_set_anywhere_is_set_model_wide_and_said(capsys):
    status, out, err = run(capsys, "explain", "gemma-3-4b", "--param", "window=512", "--param", "padded_vocab=262272")
    assert status == 0
    assert "set in params, kinds.local.params" in err and "--param padded_vocab=262272 set in params" in err


@pytest.mark.parametrize(("argv", "parts"), [(["eval", "", "--seq-len", "8"], ["MODEL ''", "empty"]), (["explain", "gemma-3-4b", "--param", "=5"], ["--param", "NAME=INTEGER", "'=5'"])])
def test_empty_model_or_parameter_name_is_an_error(capsys, argv, parts):
    assert_one_error_line(*run(capsys, *argv), *parts)


def test_mtp_on_a_model_without_mtp_modules_is_an_error(capsys):
    status, out, err = run(capsys, "eval", "gemma-3-4b", "--seq-len", "8", "--mtp")
    assert_one_error_line(status, out, err, "--mtp", "gemma-3-4b", "has no mtp layers to count")


@pytest.mark.parametrize("seq_len", ["4096:1024", "0:10", "5:5:0", "0,4"])
def test_empty_or_invalid_sweep_range_is_an_error(capsys, seq_len):
    status, out, err = run(capsys, "sweep", "gemma-3-4b", "--seq-len", seq_len)
    assert_one_error_line(status, out, err, f"--seq-len {seq_len!r}", "START <= STOP")


def test_a_path_that_does_not_exist_is_never_a_bundled_example(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, out, err = run(capsys, "eval", "llama-3.1-70b.toml", "--seq-len", "8")
    assert_one_error_line(status, out, err, "'llama-3.1-70b.toml'", "no such file", "bundled example is called 'llama-3.1-70b'")
    # (models/llama-3-8b, one slash, would be a Hub id: tests/readers/test_hub.py)
    status, out, err = run(capsys, "eval", "./models/llama-3-8b", "--seq-len", "8")
    assert_one_error_line(status, out, err, "'./models/llama-3-8b'", "no such file")


def test_a_folder_with_a_config_json_is_read(capsys, tmp_path):
    from hf_data import config

    (tmp_path / "config.json").write_text(json.dumps(config("llama-3-8b")), encoding="utf-8")
    status, out, err = run(capsys, "eval", str(tmp_path), "--seq-len", "64", "--format", "json")
    assert status == 0, err
    assert run(capsys, "eval", str(tmp_path / "config.json"), "--seq-len", "64", "--format", "json")[1] == out
    status, out, err = run(capsys, "eval", str(tmp_path.parent), "--seq-len", "64")
    assert_one_error_line(status, out, err, "a folder without a config.json")


@pytest.mark.parametrize(
    ("content", "parts"),
    [(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", ["model.toml", "not a UTF-8 text file"]), ("name = 'caf\u00e9'\n".encode("latin-1"), ["model.toml", "byte 11"])],
)
def test_binary_or_non_utf8_model_file_is_one_line(capsys, tmp_path, content, parts):
    path = tmp_path / "model.toml"
    path.write_bytes(content)
    status, out, err = run(capsys, "eval", str(path), "--seq-len", "8")
    assert_one_error_line(status, out, err, *parts)


def test_convert_to_an_unwritable_path_is_one_line(capsys, tmp_path):
    from hf_data import path

    status, out, err = run(capsys, "convert", str(path("llama-3-8b")), "-o", str(tmp_path / "no" / "such" / "dir.toml"))
    assert_one_error_line(status, out, err, "-o", "dir.toml", "cannot write")


def test_a_hundred_million_layer_model_in_json_stays_small(capsys, tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text(
        'name = "deep"\n[params]\nhidden = 8\nheads = 2\nkv_heads = 2\nhead_dim = 4\n'
        '[plan]\nlayers = 100000000\ncycle = ["a", "b"]\n[kinds.a]\n[kinds.b]\n',
        encoding="utf-8",
    )
    status, out, err = run(capsys, "eval", str(path), "--seq-len", "5", "--format", "json")
    assert status == 0, err
    s, h, n, d = 5, 8, 2, 4
    layer = 4 * (2 * s * h * n * d) + 2 * n * (d + d) * (s * (s + 1) // 2)
    data = json.loads(out)
    assert data["forward_flops"] == str(10**8 * layer)
    assert [k["layers"] for k in data["kinds"]] == [
        [{"first": 0, "last": 10**8 - 2, "step": 2}],
        [{"first": 1, "last": 10**8 - 1, "step": 2}],
    ]
    assert len(out) < 3000


@pytest.mark.slow
def test_sweep_streams_into_head_and_exits_at_once():
    """`flopsreg sweep ... | head -3` over a billion lengths: three rows, no error, flat memory."""
    env = {**os.environ, "FLOPSREG_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run(
        f"'{sys.executable}' -m flopsreg sweep llama-3-8b --seq-len 1:1000000000 | head -3",
        shell=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "seq_len,forward_flops,training_flops,forward_per_token,training_per_token"
    assert [line.split(",")[0] for line in lines[1:]] == ["1", "2"]


def test_sweep_json_lines(capsys):
    assert main(["sweep", "gemma-3-4b", "--seq-len", "8:10", "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [{key: row[key] for key in ("seq_len", "forward_flops", "training_flops")} for row in rows] == [
        {"seq_len": s, "forward_flops": str(gemma_forward(s)), "training_flops": str(3 * gemma_forward(s))} for s in (8, 9, 10)
    ]
    assert [row["forward_per_token"] for row in rows] == [str(Fraction(gemma_forward(s), s)) for s in (8, 9, 10)]
