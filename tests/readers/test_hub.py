"""Models named by their Hugging Face Hub id: config.json read through huggingface_hub, from a
Hub cache folder built here (offline), or from a Hub served on the loopback interface that
answers as the Hub does (its error headers), never from the network."""

from __future__ import annotations

import http.server
import json
import sys
import threading
from pathlib import Path

import pytest
from hf_data import config
from huggingface_hub import constants

import flopsreg
from flopsreg.cli import main
from flopsreg.readers.hub import is_hub_id

MAIN = "a" * 40  # commits, as the cache names their snapshots
TAGGED = "b" * 40
TOKEN = "hf_flopsreg_test_token"


def _snapshot(cache: Path, repo_id: str, commit: str, data: dict | None) -> None:
    """*repo_id*'s snapshot *commit* in huggingface_hub's cache layout, holding *data* as its config.json."""
    folder = cache / f"models--{repo_id.replace('/', '--')}" / "snapshots" / commit
    folder.mkdir(parents=True)
    if data is not None:
        (folder / "config.json").write_text(json.dumps(data), encoding="utf-8")


def _ref(cache: Path, repo_id: str, ref: str, commit: str) -> None:
    refs = cache / f"models--{repo_id.replace('/', '--')}" / "refs"
    refs.mkdir(parents=True, exist_ok=True)
    (refs / ref).write_text(commit, encoding="utf-8")


def _use_hub(monkeypatch, cache: Path, *, offline: bool, endpoint: str = "http://127.0.0.1:9") -> None:
    """Point huggingface_hub at *cache* and *endpoint*, through the environment variables a user
    sets and the constants huggingface_hub read from them when it was imported."""
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1" if offline else "0")
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setenv("HF_HOME", str(cache.parent / "hf-home"))  # no login token of the machine's user
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", endpoint + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(cache.parent / "hf-home" / "token"))


@pytest.fixture
def offline_cache(tmp_path, monkeypatch) -> Path:
    """A Hub cache holding meta-llama/Meta-Llama-3-8B at main (32 layers) and at tag v2 (16 layers), offline."""
    cache = tmp_path / "hub"
    repo = "meta-llama/Meta-Llama-3-8B"
    _snapshot(cache, repo, MAIN, config("llama-3-8b"))
    _snapshot(cache, repo, TAGGED, {**config("llama-3-8b"), "num_hidden_layers": 16})
    _ref(cache, repo, "main", MAIN)
    _ref(cache, repo, "v2", TAGGED)
    _snapshot(cache, "org/weights-only", MAIN, None)
    _ref(cache, "org/weights-only", "main", MAIN)
    _use_hub(monkeypatch, cache, offline=True)
    monkeypatch.chdir(tmp_path)
    return cache


def _forward(model: flopsreg.Model) -> int:
    return flopsreg.Registry.default().evaluate(model, seq_len=64).forward


def test_a_hub_id_is_read_from_the_cache_offline(offline_cache):
    model = flopsreg.Model.from_hf("meta-llama/Meta-Llama-3-8B")
    assert model.name == "meta-llama/Meta-Llama-3-8B"
    assert model.plan.layers == 32
    assert _forward(model) == _forward(flopsreg.Model.from_hf_config(config("llama-3-8b")))


@pytest.mark.parametrize(("revision", "layers"), [(None, 32), ("main", 32), ("v2", 16), (TAGGED, 16), (MAIN, 32)])
def test_revision_names_a_branch_tag_or_commit(offline_cache, revision, layers):
    assert flopsreg.Model.from_hf("meta-llama/Meta-Llama-3-8B", revision=revision).plan.layers == layers


def test_a_local_folder_wins_over_the_hub_id_of_the_same_spelling(offline_cache, tmp_path):
    folder = tmp_path / "meta-llama" / "Meta-Llama-3-8B"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({**config("llama-3-8b"), "num_hidden_layers": 4}), encoding="utf-8")
    assert flopsreg.Model.from_hf("meta-llama/Meta-Llama-3-8B").plan.layers == 4
    with pytest.raises(flopsreg.FlopsregError, match="applies to a Hub id only"):
        flopsreg.Model.from_hf("meta-llama/Meta-Llama-3-8B", revision="v2")


def _one_line(error: pytest.ExceptionInfo, *parts: str) -> None:
    text = str(error.value)
    assert "\n" not in text, text
    for part in parts:
        assert part in text, text


def test_offline_without_a_cached_copy_is_one_line(offline_cache):
    with pytest.raises(flopsreg.FlopsregError) as error:
        flopsreg.Model.from_hf("Qwen/Qwen3-8B")
    _one_line(error, "Hub id 'Qwen/Qwen3-8B'", "not in the Hugging Face cache", str(offline_cache), "HF_HUB_OFFLINE is set")
    with pytest.raises(flopsreg.FlopsregError) as error:
        flopsreg.Model.from_hf("meta-llama/Meta-Llama-3-8B", revision="v3")
    _one_line(error, "at revision 'v3'", "not in the Hugging Face cache")
    with pytest.raises(flopsreg.FlopsregError) as error:
        flopsreg.Model.from_hf("org/weights-only")
    _one_line(error, "'org/weights-only'", "not in the Hugging Face cache")


def test_without_huggingface_hub_the_line_names_the_extra(offline_cache, monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import raises ImportError
    with pytest.raises(flopsreg.FlopsregError) as error:
        flopsreg.Model.from_hf("meta-llama/Meta-Llama-3-8B")
    _one_line(error, "needs huggingface_hub", "pip install 'flopsreg[hub]'")


@pytest.mark.parametrize(
    ("spec", "hub"),
    [
        ("Qwen/Qwen3-8B", True),
        ("Qwen/Qwen2.5-7B-Instruct", True),
        ("google/gemma-3-4b-it", True),
        ("qwen3-8b", False),  # no owner: a bundled example's spelling
        ("a/b/c", False),
        ("./models/x", False),
        ("/abs/path", False),
        ("org/config.json", False),
        ("org/model.toml", False),
        ("org/a--b", False),
        ("org/a..b", False),
        ("org/", False),
    ],
)
def test_what_reads_as_a_hub_id(spec, hub):
    assert is_hub_id(spec) is hub


# -- the command line ---------------------------------------------------------------------------


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_reads_a_hub_id_and_its_revision(offline_cache, capsys):
    status, out, err = _run(capsys, "params", "meta-llama/Meta-Llama-3-8B", "--no-cache", "--format", "json")
    assert status == 0, err
    local = Path("config.json")
    local.write_text(json.dumps(config("llama-3-8b")), encoding="utf-8")
    local_counts = json.loads(_run(capsys, "params", str(local), "--no-cache", "--format", "json")[1])
    assert json.loads(out) == {**local_counts, "model": "meta-llama/Meta-Llama-3-8B"}
    status, out, err = _run(capsys, "eval", "meta-llama/Meta-Llama-3-8B", "--revision", "v2", "--seq-len", "64", "--no-cache", "--format", "json")
    assert status == 0, err
    expected = flopsreg.Registry.default().evaluate(
        flopsreg.Model.from_hf_config({**config("llama-3-8b"), "num_hidden_layers": 16}), seq_len=64
    )
    assert json.loads(out)["forward_flops"] == str(expected.forward)


@pytest.mark.parametrize(
    ("argv", "parts"),
    [
        (["eval", "Qwen/Qwen3-8B", "--seq-len", "8"], ["Hub id 'Qwen/Qwen3-8B'", "HF_HUB_OFFLINE is set"]),
        (["eval", "llama-3-8b", "--revision", "v2", "--seq-len", "8"], ["--revision v2", "Hub id only", "'llama-3-8b'"]),
        (["eval", "./models/x", "--revision", "v2", "--seq-len", "8"], ["--revision v2", "Hub id only"]),
        (["eval", "./models/x", "--seq-len", "8"], ["'./models/x'", "no such file"]),
    ],
)
def test_cli_hub_errors_are_one_line(offline_cache, capsys, argv, parts):
    status, out, err = _run(capsys, *argv)
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("flopsreg: error: "), err
    for part in parts:
        assert part in err, err



def test_huggingface_hubs_retry_warnings_do_not_print_beside_the_line(offline_cache, capsys, monkeypatch):
    """Online with the Hub out of reach, huggingface_hub logs a warning per retry before it gives up;
    the user sees flopsreg's one line (and huggingface_hub's logger is as it was afterwards)."""
    import logging

    import huggingface_hub
    from huggingface_hub import errors

    def unreachable(*args, **kwargs):
        logging.getLogger("huggingface_hub.utils._http").warning("'[Errno -2] Name or service not known' thrown while requesting HEAD")
        raise errors.LocalEntryNotFoundError("cannot reach the Hub")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", unreachable)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    before = logging.getLogger("huggingface_hub").level
    status, out, err = _run(capsys, "params", "Qwen/Qwen3-8B")
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and "the Hub cannot be reached" in err, err
    assert logging.getLogger("huggingface_hub").level == before

# -- a Hub on the loopback interface: the answers the real one gives --------------------------------

# (status, X-Error-Code) the Hub answers for config.json of each repository; huggingface_hub turns
# them into its exceptions (utils/_http.py hf_raise_for_status)
ANSWERS = {
    "org/missing": (401, "RepoNotFound"),
    "org/gated": (403, "GatedRepo"),
    "org/no-config": (404, "EntryNotFound"),
}


class _Hub(http.server.BaseHTTPRequestHandler):
    """Answers HEAD and GET of /{owner}/{name}/resolve/{revision}/config.json."""

    def _answer(self, body: bool) -> None:
        owner, name, _, revision, _ = self.path.lstrip("/").split("/", 4)
        repo_id = f"{owner}/{name}"
        if repo_id == "org/private" and self.headers.get("Authorization") == f"Bearer {TOKEN}":
            data = json.dumps(config("llama-3-8b")).encode()
            self.send_response(200)
            self.send_header("X-Repo-Commit", MAIN)
            self.send_header("ETag", '"c0ffee"')
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if body:
                self.wfile.write(data)
            return
        status, code = ANSWERS.get(repo_id, (401, "RepoNotFound"))
        if revision != "main":
            status, code = 404, "RevisionNotFound"
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's spelling
        self._answer(body=False)

    def do_GET(self) -> None:  # noqa: N802
        self._answer(body=True)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def loopback_hub(tmp_path, monkeypatch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _use_hub(monkeypatch, tmp_path / "hub", offline=False, endpoint=f"http://127.0.0.1:{server.server_address[1]}")
    yield
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("repo_id", "revision", "parts"),
    [
        ("org/missing", None, ["Hub id 'org/missing'", "no such model repository", "HF_TOKEN"]),
        ("org/private", None, ["Hub id 'org/private'", "no such model repository", "HF_TOKEN"]),  # no token given
        ("org/gated", None, ["Hub id 'org/gated'", "gated repository", "https://huggingface.co/org/gated", "HF_TOKEN"]),
        ("org/no-config", None, ["Hub id 'org/no-config'", "has no config.json"]),
        ("org/gated", "v9", ["Hub id 'org/gated' at revision 'v9'", "not a branch, tag or commit of org/gated"]),
    ],
)
def test_each_hub_answer_is_one_line(loopback_hub, repo_id, revision, parts):
    with pytest.raises(flopsreg.FlopsregError) as error:
        flopsreg.Model.from_hf(repo_id, revision=revision)
    _one_line(error, *parts)


def test_a_token_opens_a_private_repository_and_its_config_is_cached(loopback_hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    model = flopsreg.Model.from_hf("org/private")
    assert model.name == "org/private" and model.plan.layers == 32
    assert (tmp_path / "hub" / "models--org--private" / "snapshots" / MAIN / "config.json").is_file()


@pytest.mark.slow
def test_the_command_line_honours_the_environment(tmp_path):
    """A fresh process, configured only as a user would: HF_HUB_CACHE and HF_HUB_OFFLINE=1."""
    import subprocess

    cache = tmp_path / "hub"
    _snapshot(cache, "meta-llama/Meta-Llama-3-8B", MAIN, config("llama-3-8b"))
    _ref(cache, "meta-llama/Meta-Llama-3-8B", "main", MAIN)
    env = {
        "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_CACHE": str(cache),
        "HF_HUB_OFFLINE": "1", "FLOPSREG_CACHE_DIR": str(tmp_path / "flopsreg-cache"), "FLOPSREG_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    command = [sys.executable, "-c", "from flopsreg.cli import main; raise SystemExit(main())"]
    expected = flopsreg.Registry.default().evaluate(flopsreg.Model.from_hf_config(config("llama-3-8b")), seq_len=128).forward
    for _ in range(2):  # the second answers from the cache of compiled models
        done = subprocess.run([*command, "eval", "meta-llama/Meta-Llama-3-8B", "--seq-len", "128", "--format", "json"],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["forward_flops"] == str(expected)
    done = subprocess.run([*command, "params", "Qwen/Qwen3-8B"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("flopsreg: error: Hub id 'Qwen/Qwen3-8B': config.json is not in the Hugging Face cache")
    assert f"({cache})" in done.stderr and "HF_HUB_OFFLINE is set" in done.stderr and len(done.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "kwargs", "parts"),
    [
        ((42,), {}, ["source = 42", "expected a Hub id or a path"]),
        (("meta-llama/Meta-Llama-3-8B",), {"revision": 2}, ["revision = 2", "branch, tag or commit"]),
        (("nothing here",), {}, ["'nothing here'", "no such file or folder, nor a Hugging Face Hub id"]),
        (("./meta-llama",), {}, ["'./meta-llama'", "no such file or folder"]),
    ],
)
def test_from_hf_refuses_what_is_neither_a_path_nor_a_hub_id(offline_cache, args, kwargs, parts):
    with pytest.raises(flopsreg.FlopsregError) as error:
        flopsreg.Model.from_hf(*args, **kwargs)
    _one_line(error, *parts)
