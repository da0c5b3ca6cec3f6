"""The vllm convention against vLLM's own FLOPs functions (vllm/v1/metrics/perf.py at
vllm-project/vllm 00cee63e), copied verbatim in tests/vllm_perf_00cee63e.py, on serving steps of
prefill chunks and decodes: to the digit, on Llama (GQA), DeepSeek-V3 (MLA, shared experts, dense
first layers), Qwen3-MoE, Mixtral, GPT-OSS and Gemma 3 / Mistral (sliding windows)."""

import json
import re
from pathlib import Path

import pytest

import flopsreg
from flopsreg.cli import main
from tests.vllm_perf_00cee63e import step_flops

HF = Path(__file__).parents[1] / "data" / "hf"


def hf(name):
    config = json.loads((HF / f"{name}.json").read_text())
    return config.get("text_config", config)


def gemma3(name):
    """Gemma 3's text config as transformers builds it (Gemma3TextConfig): vocab_size 262208 by
    default, and layer_types from sliding_window_pattern 6, which vLLM's SlidingWindowAttentionParser reads."""
    config = {"vocab_size": 262208, **hf(name)}
    config.setdefault("layer_types", ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(config["num_hidden_layers"])])
    return config


def no_window(name, value):
    """A Qwen2 config with use_sliding_window false, as transformers 5.24 builds it: sliding_window
    None (Qwen2Config) or 0 (Qwen2MoeConfig), so vLLM bills no sliding layer."""
    return {**hf(name), "sliding_window": value}


CONFIGS = {
    "llama-3-8b": hf("llama-3-8b"),
    "deepseek-v3": hf("deepseek-v3"),
    "qwen3-30b-a3b": hf("qwen3-30b-a3b"),
    "mixtral-8x7b": hf("mixtral-8x7b"),
    "mistral-7b-v0.1": hf("mistral-7b-v0.1"),
    "gpt-oss-20b": hf("gpt-oss-20b"),
    "gemma-3-27b": gemma3("gemma-3-27b"),
    "qwen2.5-7b": no_window("qwen2.5-7b", None),  # q, k, v biases
    "qwen2-moe": no_window("qwen2-moe", 0),  # shared experts and their gate, no n_shared_experts field
    "llama-4-scout": hf("llama-4-scout"),  # chunked attention, a shared expert without n_shared_experts
    "llama-4-scout text": hf("llama-4-scout"),
    "llama-3-8b with MLP biases": {**hf("llama-3-8b"), "mlp_bias": True},
    "llama-3.1-70b": hf("llama-3.1-70b"),
    "qwen3-8b": hf("qwen3-8b"),
    "gemma-2-9b": hf("gemma-2-9b"),  # Gemma 2: vLLM's parser makes the even layers sliding
    "starcoder2": hf("starcoder2"),  # a plain GELU MLP with biases, billed as 3 matmuls
    "gpt-oss-120b": hf("gpt-oss-120b"),
    "deepseek-v2-lite": hf("deepseek-v2-lite"),  # MLA without a low-rank query
    "deepseek-v3.2": hf("deepseek-v3.2"),  # DSA: the indexer not counted, the full rectangle billed
    "kimi-k2.6": hf("kimi-k2.6"),
    "mistral-small-4": hf("mistral-small-4"),
    "minimax-m2": hf("minimax-m2"),
}
BLOCKS = {"deepseek-v3": ["mtp"]}  # the MTP layer, which vLLM's metrics do not count


def model(name):
    """The model of *name*: read from the whole config.json (a composite one's model_type, e.g. llama4),
    but from its text config alone for a name ending in "text" (llama4_text)."""
    whole = json.loads((HF / f"{name}.json").read_text()) if (HF / f"{name}.json").exists() else CONFIGS[name]
    return flopsreg.Model.from_hf_config(CONFIGS[name] if name.endswith(" text") or "text_config" not in whole else whole, blocks=BLOCKS.get(name, ()))
STEPS = {
    "decode": [(1, 4095)],
    "prefill": [(512, 0)],
    "chunk after a prefix": [(300, 5000)],
    "mixed": [(512, 0), (1, 4096), (1, 100), (2048, 8192), (1, 130)],
}


@pytest.fixture(scope="module")
def registry():
    return flopsreg.Registry.default()


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("name", CONFIGS)
def test_vllm_step_to_the_digit(registry, name, step):
    config = CONFIGS[name]
    requests = STEPS[step]
    expected = step_flops(config, [(new, cached, cached == 0) for new, cached in requests])
    assert registry.evaluate(model(name), requests=requests, convention="vllm").forward == expected


def test_decode_is_exact_and_a_prefill_bills_the_rectangle(registry):
    """A decode step (one new token) is counted exactly; a fresh prefill of n tokens bills n^2
    pairs per head where the causal mask allows n(n+1)/2: by hand for Llama-3-8B."""
    llama = flopsreg.Model.from_hf_config(CONFIGS["llama-3-8b"])
    decode = [(1, 8191)]
    assert registry.evaluate(llama, requests=decode, convention="vllm").forward == registry.evaluate(llama, requests=decode).forward
    n, layers, heads, d = 4096, 32, 32, 128
    vllm = registry.evaluate(llama, requests=[(n, 0)], convention="vllm")
    exact = registry.evaluate(llama, requests=[(n, 0)])
    assert vllm.forward - exact.forward == layers * 2 * heads * (d + d) * (n * n - n * (n + 1) // 2)


def test_router_and_shared_gate_not_counted(registry):
    """Qwen3-MoE: vLLM counts the k experts of a token and no router (h x E per token)."""
    model = flopsreg.Model.from_hf_config(CONFIGS["qwen3-30b-a3b"])
    vllm = registry.evaluate(model, requests=[(1, 99)], convention="vllm").slot_flops["mlp"]
    exact = registry.evaluate(model, requests=[(1, 99)]).slot_flops["mlp"]
    assert exact - vllm == 48 * 2 * 2048 * 128  # layers x 2 x hidden x experts


REFUSED = {
    "qwen3-next-80b-a3b": "vLLM's perf.py bills every one of num_hidden_layers as softmax attention; this layer has a gated_deltanet mixer",
    "nemotron-3-nano-30b-a3b": "this layer has a mamba2 mixer",
    "deepseek-v4-defaults": "vLLM's perf.py has no term for this layer feature",
    "gemma-3n-e4b-defaults": "this layer has a per_layer_input feature",
    "gemma-4-31b": "this layer has a k_eq_v feature",
    "gemma-4-26b-a4b": "vLLM's FfnMetrics has no term for this MLP (it bills a plain or routed SwiGLU FFN); this layer has a parallel_moe MLP",
    "glm-4.5-air": "vLLM's FfnMetrics bills every layer of a glm4_moe model as MoE (its config has no moe_layer_freq",
    "glm-5": "every layer of a glm_moe_dsa model as MoE",
    "mistral-large-4": "every layer of a mistral_large4 model as MoE",
}


@pytest.mark.parametrize("name", REFUSED)
def test_what_vllm_cannot_be_reproduced_for_is_refused(registry, name):
    model = flopsreg.Model.from_hf_config(HF / f"{name}.json")
    with pytest.raises(flopsreg.FlopsregError, match=re.escape(REFUSED[name])):
        registry.evaluate(model, requests=[(1, 10)], convention="vllm")


def test_compare_on_a_serving_step(capsys):
    assert main(["compare", "llama-3-8b", "--request", "512:0", "--request", "1:4096", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["seqlens"], data["cached"], data["logits"]) == ([512, 1], [0, 4096], "last")
    vllm = next(t for t in data["conventions"] if t["convention"] == "vllm")
    expected = step_flops(CONFIGS["llama-3-8b"], [(512, 0, True), (1, 4096, False)])
    assert vllm["forward_flops"] == str(expected)


def test_every_vllm_pattern_is_checked_here(registry):
    """The configs above select every pattern of the convention (its refusals are tested apart)."""
    used = set()
    for name in CONFIGS:
        selection = registry.select(model(name), convention="vllm")
        used |= {pattern for unit in selection.units for pattern in unit.patterns.values()}
    assert {p.name for p in registry.patterns if "vllm" in p.flags and not p.refusal} - used == set()
