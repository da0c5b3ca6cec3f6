"""vLLM's read and write bytes of a step (vllm/v1/metrics/perf.py at vllm-project/vllm 00cee63e,
copied verbatim in tests/vllm_perf_00cee63e.py) against vllm_step_bytes, term by term and to the
digit: Llama (GQA), Mistral and Gemma 3 (sliding windows), DeepSeek-V3 and V2-Lite (MLA), Qwen3-MoE,
Mixtral and Llama 4 (MoE) over a decode, a prefill, a chunk after a prefix and a mixed step."""

from fractions import Fraction

import pytest

import flopsreg
from flopsreg.integrations.vllm import vllm_step_bytes
from tests.conventions.test_vllm import CONFIGS, STEPS, model
from tests.vllm_perf_00cee63e import step_bytes, step_flops

NAMES = ["llama-3-8b", "mistral-7b-v0.1", "gemma-3-27b", "deepseek-v3", "deepseek-v2-lite", "qwen3-30b-a3b",
         "mixtral-8x7b", "llama-4-scout", "gpt-oss-20b"]
SIZES = {"bf16": {}, "fp8 kv cache": {"cache_bytes": 1}, "4-bit weights": {"weight_bytes": Fraction(1, 2)}}


@pytest.fixture(scope="module")
def registry():
    return flopsreg.Registry.default()


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("name", NAMES)
def test_vllm_bytes_to_the_digit(registry, name, step, sizes):
    requests = STEPS[step]
    kw = SIZES[sizes]
    oracle = [(new, cached, cached == 0) for new, cached in requests]
    read, write = step_bytes(CONFIGS[name], oracle, weight_byte_size=kw.get("weight_bytes", 2), cache_byte_size=kw.get("cache_bytes"))
    got = vllm_step_bytes(registry, model(name), requests, **kw)
    assert (got.read, got.written) == (read, write)
    assert got.flops == step_flops(CONFIGS[name], oracle)


def test_decode_weights_by_hand(registry):
    """Llama-3-8B decode at batch 1 in bf16: vLLM reads every weight once (no input embedding),
    2 bytes each, and the KV of the 4096-token context: by hand from the config."""
    got = vllm_step_bytes(registry, flopsreg.Model.example("llama-3-8b"), [(1, 4095)])
    h, layers, ffn, vocab, kv = 4096, 32, 14336, 128256, 8 * 128
    weights = 2 * (layers * (h * (h + 2 * kv) + h * h + 3 * h * ffn) + h * vocab)
    assert sum(v for k, v in got.read.items() if k.endswith(("weight", "weights"))) == weights
    assert got.written["attn.kv_cache"] == 2 * layers * 2 * kv  # one token's K and V
    assert got.read["attn.attn_input"] == layers * (2 * 32 * 128 + 2 * 2 * 4096 * kv)


def test_mbu_over_vllms_bytes(registry):
    got = vllm_step_bytes(registry, flopsreg.Model.example("llama-3-8b"), [(1, 4095)])
    assert got.mbu(step_time=Fraction(1, 100), bandwidth=got.total * 200).fraction == Fraction(1, 2)


def test_refused_like_the_flops(registry):
    qwen_next = flopsreg.Model.example("qwen3-next-80b-a3b")
    with pytest.raises(flopsreg.FlopsregError, match="softmax attention"):
        vllm_step_bytes(registry, qwen_next, [(1, 10)])
    with pytest.raises(flopsreg.FlopsregError, match="weight_bytes: 0"):
        vllm_step_bytes(registry, flopsreg.Model.example("llama-3-8b"), [(1, 10)], weight_bytes=0)


def test_a_parameter_the_estimate_reads_and_the_model_lacks_is_one_line():
    """vLLM's byte formulas read parameters a model may not set for vLLM's FLOPs: named, never a KeyError."""
    from flopsreg.integrations.vllm import _Needed

    with pytest.raises(flopsreg.ModelError, match=r"^layer 3: parameter 'window': missing; vLLM's byte estimate reads it"):
        _Needed({"hidden": 8}, "layer 3")["window"]
