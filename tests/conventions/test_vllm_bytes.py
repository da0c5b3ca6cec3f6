"""vLLM's read and write bytes of a step (vllm/v1/metrics/perf.py at vllm-project/vllm 00cee63e,
copied verbatim in tests/vllm_perf_00cee63e.py) against vllm_step_bytes, term by term and to the
digit: Llama (GQA), Mistral and Gemma 3 (sliding windows), DeepSeek-V3 and V2-Lite (MLA), Qwen3-MoE,
Mixtral and Llama 4 (MoE) over a decode, a prefill, a chunk after a prefix and a mixed step."""

import json
from fractions import Fraction

import attrs
import pytest

import flopsreg
from flopsreg.integrations.vllm import vllm_step_bytes
from flopsreg.plugins.loader import step_bytes_function
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


# -- compare: vLLM's bytes beside exact's least traffic --------------------------------------------


@pytest.mark.parametrize("step", ["decode", "mixed"])
@pytest.mark.parametrize("name", ["llama-3-8b", "deepseek-v3", "qwen3-30b-a3b"])
def test_compare_shows_vllms_bytes_as_vllm_computes_them(registry, name, step):
    requests = STEPS[step]
    oracle = [(new, cached, cached == 0) for new, cached in requests]
    read, write = step_bytes(CONFIGS[name], oracle, weight_byte_size=2, cache_byte_size=None)
    comparison = registry.compare(model(name), requests=requests, conventions=["vllm"])
    (got,) = comparison.bytes
    assert (got.convention, got.read, got.written, got.error) == ("vllm", sum(read.values()), sum(write.values()), None)
    assert got.reason.startswith("vLLM: every matmul's input activations read and output written")
    assert got.ratio(comparison.traffic) == Fraction(got.total, comparison.traffic.total)


LLAMA_DECODE_EXACT = (8_030_261_248 - 128_256 * 4096) * 2 + 4096 * 2 + 4096 * 2 * 8 * 128 * 32 * 2  # weights, a row, 4096 tokens' KV


def test_compare_bytes_of_a_llama_decode_by_hand(registry):
    """Exact: every weight but the embedding table once and one embedding row, the 4095 cached
    tokens' KV read and the new token's written, 2 bytes each; vLLM's as docs/conventions.md gives it."""
    comparison = registry.compare(flopsreg.Model.example("llama-3-8b"), requests=[(1, 4095)], conventions=["vllm", "megatron"])
    assert comparison.traffic.total == LLAMA_DECODE_EXACT == 15_546_728_448
    assert [b.convention for b in comparison.bytes] == ["vllm"]  # megatron declares no byte estimate
    assert comparison.bytes[0].total == 15_554_054_656
    text = comparison.to_text()
    assert "bytes of the step, 2 bytes per element" in text and "15,554,054,656" in text and "1.0005x" in text
    assert "- vllm: vLLM: every matmul's input activations" in text
    data = comparison.to_dict()["bytes"]
    assert data["exact"]["total_bytes"] == str(LLAMA_DECODE_EXACT)
    assert data["conventions"] == [{
        "convention": "vllm", "reason": comparison.bytes[0].reason, "read_bytes": str(comparison.bytes[0].read),
        "written_bytes": str(comparison.bytes[0].written), "total_bytes": "15554054656",
        "ratio_to_exact": 15_554_054_656 / LLAMA_DECODE_EXACT,
    }]


def test_a_training_forward_has_no_bytes_to_compare(registry):
    comparison = registry.compare(flopsreg.Model.example("llama-3-8b"), seq_len=128, conventions=["vllm"])
    assert comparison.bytes == () and comparison.traffic is None and comparison.to_dict()["bytes"] is None
    assert "bytes of the step" not in comparison.to_text()
    with pytest.raises(flopsreg.ModelError, match=r"^all_experts: the bytes of a step are compared for a serving step only"):
        registry.compare(flopsreg.Model.example("llama-3-8b"), seq_len=128, all_experts=True)


def test_a_byte_estimate_that_cannot_be_imported_is_one_line(registry):
    broken = attrs.evolve(registry.conventions["vllm"], step_bytes="flopsreg.integrations.vllm:no_such_function")
    with pytest.raises(flopsreg.PluginError, match="step_bytes 'flopsreg.integrations.vllm:no_such_function': cannot be imported"):
        step_bytes_function(broken)
    with pytest.raises(flopsreg.PatternError, match="step_bytes_summary"):
        attrs.evolve(registry.conventions["vllm"], step_bytes_summary=None)  # an estimate says what it assumes


# qwen3-30b-a3b: 48 MoE layers of 128 experts, each 3 matrices of 2048 x 768, in bf16
QWEN3_MOE_EXPERTS = 48 * 128 * 3 * 2048 * 768 * 2


def test_all_experts_on_the_command_line(capsys):
    from flopsreg.cli import main

    base = ["qwen3-30b-a3b", "--request", "1:100", "--format", "json"]
    assert main(["compare", *base, "--all-experts"]) == 0
    assert json.loads(capsys.readouterr().out)["bytes"]["exact"]["experts_read_bytes"] == str(QWEN3_MOE_EXPERTS)
    assert main(["compare", *base]) == 0  # one token reaches its top 8 of 128 experts
    assert json.loads(capsys.readouterr().out)["bytes"]["exact"]["experts_read_bytes"] == str(QWEN3_MOE_EXPERTS * 8 // 128)
    mfu = ["mfu", *base, "--step-time", "0.05", "--devices", "1", "--peak", "h100-sxm-bf16", "--all-experts"]
    assert main(mfu) == 0
    traffic = json.loads(capsys.readouterr().out)["traffic"]
    assert (traffic["experts_read_bytes"], traffic["all_experts"]) == (str(QWEN3_MOE_EXPERTS), True)
    gen = ["generate", "qwen3-30b-a3b", "--prompt", "100", "--new-tokens", "3", "--peak", "h100-sxm-bf16", "--format", "json"]
    assert main([*gen, "--all-experts"]) == 0
    bounds = json.loads(capsys.readouterr().out)
    assert bounds["prefill_bounds"]["traffic"]["experts_read_bytes"] == str(QWEN3_MOE_EXPERTS)
    assert bounds["decode_bounds"]["traffic"]["experts_read_bytes"] == str(2 * QWEN3_MOE_EXPERTS)  # two decode steps
    assert main(["generate", "qwen3-30b-a3b", "--prompt", "100", "--new-tokens", "3", "--all-experts"]) != 0
    assert "--peak: the bytes and roofline bound of a generation need" in capsys.readouterr().err
