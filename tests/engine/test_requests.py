"""A serving step of mixed requests: ``evaluate(model, requests=[(new_tokens, cached), ...])``
and ``flopsreg eval --request N:P``, exact per request."""

import json
import re

import pytest

import flopsreg
from flopsreg.cli import main

STEP = [(512, 0), (1, 4096), (1, 4096), (64, 1000)]


@pytest.fixture(scope="module")
def registry():
    return flopsreg.Registry.default()


@pytest.fixture(scope="module")
def llama():
    return flopsreg.Model.example("llama-3-8b")


def test_each_request_is_its_own_serving_step(registry, llama):
    step = registry.evaluate(llama, requests=STEP)
    alone = [registry.evaluate(llama, seq_len=n, cached=c, logits="last").forward for n, c in STEP]
    assert step.per_request == tuple(alone) and step.forward == sum(alone)
    assert step.requests == tuple(STEP) and step.logits == "last" and step.tokens == 578


def test_a_decode_request_by_hand(registry, llama):
    """Llama-3-8B, one new token after 4096 cached: every projection and MLP once, attention over
    4097 keys in 32 layers, logits once."""
    h, n_h, n_kv, d, ffn, V, L = 4096, 32, 8, 128, 14336, 128256, 32
    per_layer = 2 * h * n_h * d + 2 * 2 * h * n_kv * d + 2 * n_h * d * h + 3 * 2 * h * ffn + 2 * n_h * (d + d) * 4097
    assert registry.evaluate(llama, requests=[(1, 4096)]).forward == L * per_layer + 2 * h * V


def test_batch_multiplies_every_request(registry, llama):
    one, three = registry.evaluate(llama, requests=STEP), registry.evaluate(llama, requests=STEP, batch=3)
    assert three.per_request == tuple(3 * f for f in one.per_request)


@pytest.mark.parametrize(
    ("requests", "message"),
    [
        ("512:0", "requests = '512:0': expected a list of (new_tokens, cached) pairs"),
        ([(1,)], "requests[0] = (1,): expected a (new_tokens, cached) pair"),
        ([(1, 2), (0, 5)], "requests[1] new_tokens: 0 is not a count of new tokens"),
        ([(1, -1)], "requests[0] cached: -1 is not a count of cached tokens"),
        ([], "requests: empty"),
    ],
)
def test_bad_requests_are_one_line(registry, llama, requests, message):
    with pytest.raises(flopsreg.ModelError, match=re.escape(message)):
        registry.evaluate(llama, requests=requests)


def test_requests_stand_alone(registry, llama):
    with pytest.raises(flopsreg.ModelError, match="without seq_len, seqlens or cached"):
        registry.evaluate(llama, requests=STEP, seq_len=4)


def test_cli_request_equals_the_api(registry, llama, capsys):
    args = [item for n, c in STEP for item in ("--request", f"{n}:{c}")]
    assert main(["eval", "llama-3-8b", *args, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == registry.evaluate(llama, requests=STEP).to_dict()
    assert data["cached"] == [0, 4096, 4096, 1000] and data["logits"] == "last"
    assert data["per_request_flops"] == [str(f) for f in registry.evaluate(llama, requests=STEP).per_request]


def test_text_lists_each_request(capsys):
    assert main(["eval", "llama-3-8b", "--request", "1:4096", "--request", "64:1000"]) == 0
    assert "per request (new:cached): 1:4096 17,157,324,800; 64:1000 " in capsys.readouterr().out


def test_cli_request_without_cache_and_a_bad_one(registry, llama, capsys):
    assert main(["eval", "llama-3-8b", "--request", "512", "--format", "json"]) == 0  # N alone: nothing cached
    assert json.loads(capsys.readouterr().out)["forward_flops"] == str(registry.evaluate(llama, requests=[(512, 0)]).forward)
    assert main(["eval", "llama-3-8b", "--request", "1:x"]) == 2
    assert "expected NEW:CACHED" in capsys.readouterr().err
