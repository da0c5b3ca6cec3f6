"""The torchtitan convention and the get_nparams_and_flops drop-in, against torchtitan's published formula.

torchtitan (pytorch/torchtitan torchtitan/models/utils.py at b5bcd76c): num_flops_per_token =
6 N + 6 L n_h head_dims seq_len, N = every parameter with the routed experts at top_k //
num_experts, less the input embedding unless tied; head_dims = 2 (dim // n_heads) for llama3,
2 head_dim for qwen3 and gpt_oss, qk_nope + qk_rope + v for deepseek_v3; no causal discount,
no windows. Training FLOPs of one sequence = num_flops_per_token x seq_len. The expected
numbers below follow that formula by hand, with N written out from the config or split, as
torchtitan's get_moe_model_nparams_and_flops splits it by parameter name, from the recorded
transformers parameter counts (tests/data/hf_params), never from the convention itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

import flopsreg
from flopsreg.cli import main
from flopsreg.integrations.torchtitan import get_nparams_and_flops, hf_config

DATA = Path(__file__).parents[1] / "data"
RECORD = json.loads((DATA / "hf_params" / "params.json").read_text())["models"]


def hf(name):
    return json.loads((DATA / "hf" / f"{name}.json").read_text())


def torchtitan_training(n: int, layers: int, heads: int, head_dims: int, seq_len: int) -> int:
    """torchtitan's num_flops_per_token x seq_len: one training sequence."""
    return (6 * n + 6 * layers * heads * head_dims * seq_len) * seq_len


def recorded_n(name: str, top_k: int = 1, experts: int = 1, tied: bool = False) -> int:
    """N as get_moe_model_nparams_and_flops splits the recorded transformers parameters by name:
    embedding out (unless tied), routed experts at top_k // num_experts, everything else whole."""
    embedding = routed = rest = 0
    for name_, count in RECORD[name]["by_name"].items():
        if "embed_tokens" in name_:
            embedding += count
        elif ".mlp.experts." in name_:
            routed += count
        else:  # norms, attention, dense FFNs, routers, shared experts, sinks, biases, lm_head
            rest += count
    return rest + (embedding if tied else 0) + routed * top_k // experts


# -- the convention, model by model --------------------------------------------------------------


@pytest.mark.parametrize("seq_len", [1, 4096, 32768])
def test_llama_3_8b_dense(registry, seq_len):
    h, layers, heads, kv, ffn, v = 4096, 32, 32, 8, 14336, 128256
    per_layer = 2 * h * h + 2 * h * (kv * h // heads) + 3 * h * ffn + 2 * h  # q, o, k, v, SwiGLU, 2 RMSNorms
    n = layers * per_layer + h + v * h  # final norm, lm_head (the embedding left out)
    assert n == recorded_n("llama-3-8b") == 8_030_261_248 - v * h
    got = registry.evaluate(flopsreg.Model.example("llama-3-8b"), seq_len=seq_len, convention="torchtitan")
    assert got.training == torchtitan_training(n, layers, heads, 2 * (h // heads), seq_len)


def test_llama3_head_dims_come_from_dim_not_head_dim(registry):
    """llama3 passes head_dims = 2 (dim // n_heads): a head_dim of 64 on dim 4096, 32 heads, counts 128."""
    config = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32,
              "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 1024, "vocab_size": 1000}
    model = flopsreg.Model.from_hf_config(config)
    s = 4096
    n = 2 * (2 * 4096 * 32 * 64 + 2 * 4096 * 8 * 64 + 3 * 4096 * 1024 + 2 * 4096) + 4096 + 1000 * 4096
    assert registry.evaluate(model, seq_len=s, convention="torchtitan").training == torchtitan_training(n, 2, 32, 2 * 128, s)


@pytest.mark.parametrize("seq_len", [4096, 131072])
def test_qwen3_30b_a3b_moe_counts_routed_experts_at_top_k(registry, seq_len):
    h, layers, heads, kv, d, experts, k, fe, v = 2048, 48, 32, 4, 128, 128, 8, 768, 151936
    attention = 2 * h * heads * d + 2 * h * kv * d + 2 * d  # q, o, k, v, q_norm and k_norm
    per_layer = attention + 2 * h + h * experts + 3 * h * fe * experts * k // experts  # norms, router, experts at k/E
    n = layers * per_layer + h + v * h
    assert n == recorded_n("qwen3-30b-a3b", top_k=k, experts=experts)
    model = flopsreg.Model.example("qwen3-30b-a3b")
    assert registry.evaluate(model, seq_len=seq_len, convention="torchtitan").training == torchtitan_training(n, layers, heads, 2 * d, seq_len)


def test_qwen3_8b_dense(registry):
    h, layers, heads, kv, d, ffn, v, s = 4096, 36, 32, 8, 128, 12288, 151936, 8192
    n = layers * (2 * h * heads * d + 2 * h * kv * d + 2 * d + 3 * h * ffn + 2 * h) + h + v * h
    assert n == recorded_n("qwen3-8b")
    got = registry.evaluate(flopsreg.Model.example("qwen3-8b"), seq_len=s, convention="torchtitan").training
    assert got == torchtitan_training(n, layers, heads, 2 * d, s)


def test_a_tied_embedding_is_counted_once(registry):
    """Qwen3-0.6B-like: enable_weight_tying keeps the shared matrix in N, once."""
    config = {"model_type": "qwen3", "hidden_size": 1024, "num_hidden_layers": 28, "num_attention_heads": 16,
              "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072, "vocab_size": 151936,
              "tie_word_embeddings": True}
    h, layers, heads, kv, d, ffn, v, s = 1024, 28, 16, 8, 128, 3072, 151936, 4096
    n = layers * (2 * h * heads * d + 2 * h * kv * d + 2 * d + 3 * h * ffn + 2 * h) + h + v * h
    model = flopsreg.Model.from_hf_config(config)
    assert registry.parameters(model).total == n
    assert registry.evaluate(model, seq_len=s, convention="torchtitan").training == torchtitan_training(n, layers, heads, 2 * d, s)


@pytest.mark.parametrize("seq_len", [4096, 32768])
def test_gpt_oss_120b_ignores_its_sliding_windows(registry, seq_len):
    h, layers, heads, kv, d, experts, k, v = 2880, 36, 64, 8, 64, 128, 4, 201088
    attention = (h + 1) * heads * d + 2 * (h + 1) * kv * d + (heads * d + 1) * h + heads  # q, k, v, o with biases; sinks
    routed = experts * (h * 2 * h + 2 * h + h * h + h)  # gate_up and down, with their biases
    per_layer = attention + 2 * h + (h + 1) * experts + routed * k // experts  # norms, router with bias
    n = layers * per_layer + h + v * h
    assert n == recorded_n("gpt-oss-120b", top_k=k, experts=experts)
    model = flopsreg.Model.example("gpt-oss-120b")
    got = registry.evaluate(model, seq_len=seq_len, convention="torchtitan").training
    assert got == torchtitan_training(n, layers, heads, 2 * d, seq_len)  # all 36 layers over s x s
    if seq_len == 32768:  # the 1.96x Megatron-Bridge, which counts the 128-key windows
        bridge = registry.evaluate(model, seq_len=seq_len, convention="megatron_bridge").training
        assert round(got / bridge, 2) == 1.96


def deepseek_v3_n(mtp: int = 0) -> int:
    """DeepSeek-V3's N by hand: MLA, 3 dense layers, 58 MoE layers, and *mtp* MTP depths of a MoE layer."""
    h, layers, dense, heads, v = 7168, 61, 3, 128, 129280
    q_lora, kv_lora, nope, rope, vd, ffn, experts, k, fe = 1536, 512, 128, 64, 128, 18432, 256, 8, 2048
    attention = (h * q_lora + q_lora + q_lora * heads * (nope + rope) + h * (kv_lora + rope) + kv_lora
                 + kv_lora * heads * (nope + vd) + heads * vd * h)
    moe = h * experts + 3 * h * fe + 3 * h * fe * experts * k // experts  # router, shared expert, routed at k/E
    eh_proj_and_norms = 2 * h * h + 3 * h  # eh_proj, enorm, hnorm, mtp_norm
    return (layers * (attention + 2 * h) + dense * 3 * h * ffn + (layers - dense) * moe + h + v * h
            + mtp * (attention + 2 * h + moe + eh_proj_and_norms))


def test_deepseek_v3_mla_moe(registry):
    n = deepseek_v3_n()
    assert n == recorded_n("deepseek-v3", top_k=8, experts=256)
    got = registry.evaluate(flopsreg.Model.example("deepseek-v3"), seq_len=4096, convention="torchtitan").training
    assert got == torchtitan_training(n, 61, 128, 128 + 64 + 128, 4096)


def test_mtp_layers_count_their_weights_but_no_attention_and_no_second_logits(registry):
    """MTPDecoder: the MTP layer's parameters are in N; only model_config.layers get the s^2 term."""
    model = flopsreg.Model.from_hf_config(hf("deepseek-v3"), blocks=("mtp",))
    got = registry.evaluate(model, seq_len=4096, convention="torchtitan").training
    assert got == torchtitan_training(deepseek_v3_n(mtp=1), 61, 128, 320, 4096)


def test_deepseek_v2_lite_is_torchtitans_deepseek_v3_16b(registry):
    n = recorded_n("deepseek-v2-lite", top_k=6, experts=64)
    got = registry.evaluate(flopsreg.Model.from_hf_config(hf("deepseek-v2-lite")), seq_len=4096, convention="torchtitan")
    assert got.training == torchtitan_training(n, 27, 16, 128 + 64 + 128, 4096)


# -- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("example", "message"), [
    ("mixtral-8x7b", "torchtitan has no model for model_type 'mixtral' at commit b5bcd76c: it cannot build or train"),
    ("gemma-3-4b", "torchtitan has no model for model_type 'gemma3'"),
    ("mistral-7b-v0.1", "torchtitan has no model for model_type 'mistral'.*reports no MFU for it"),
    ("llama-4-scout", r"torchtitan removed its llama4 model \(PR #3573\) before commit b5bcd76c"),
])
def test_model_types_torchtitan_has_no_model_for_are_refused(registry, example, message):
    with pytest.raises(flopsreg.ModelError, match=message):
        registry.evaluate(flopsreg.Model.example(example), seq_len=4096, convention="torchtitan")


def test_a_model_without_a_family_flag_is_refused(registry):
    model = flopsreg.Model.uniform("plain", layers=2, flags={"lm_head", "mlp"}, hidden=64, heads=4, kv_heads=4,
                                   head_dim=16, ffn_hidden=128, vocab=100)
    with pytest.raises(flopsreg.ModelError, match="torchtitan has no such model, so it reports no MFU for it"):
        registry.evaluate(model, seq_len=16, convention="torchtitan")
    (total,) = [t for t in registry.compare(model, seq_len=16).totals if t.convention == "torchtitan"]
    assert total.result is None and "none of this model's flags is the family flag of one" in total.error


def test_compare_traces_torchtitans_differences(registry):
    comparison = registry.compare(flopsreg.Model.example("gpt-oss-20b"), seq_len=4096, conventions=["torchtitan"])
    reasons = {(d.slot, d.pattern): d.reason for d in comparison.differences}
    assert reasons[("attention.mask", "torchtitan_square")].startswith("torchtitan: s^2 pairs on every layer")
    assert reasons[("embedding", "torchtitan_embedding")].startswith("torchtitan: the input embedding is left out")
    assert ("mlp", "torchtitan_moe") not in reasons  # 2 FLOPs per active weight: what the exact MoE counts
    assert ("mlp.bias", "torchtitan_expert_bias") in reasons  # biases, norms and sinks cost 6 per weight


def test_the_command_line_takes_the_convention(capsys):
    assert main(["eval", "llama-3-8b", "--seq-len", "4096", "--convention", "torchtitan", "--format", "json"]) == 0
    n = 8_030_261_248 - 128256 * 4096
    assert json.loads(capsys.readouterr().out)["training_flops"] == str(torchtitan_training(n, 32, 32, 256, 4096))


# -- the drop-in: torchtitan's model config dataclasses, as duck-typed stand-ins ----------------


def linear(i, o, bias=False):
    return NS(in_features=i, out_features=o, bias=bias)


def ffn(dim, hidden):
    return NS(w1=linear(dim, hidden), w2=linear(hidden, dim), w3=linear(dim, hidden))


def moe(dim, experts, top_k, hidden, shared=0, bias=False):
    return NS(num_experts=experts, router=NS(top_k=top_k, gate=linear(dim, experts, bias)),
              routed_experts=NS(inner_experts=NS(dim=dim, hidden_dim=hidden, num_experts=experts)),
              shared_experts=ffn(dim, shared) if shared else None)


def gqa(dim, heads, kv, head_dim=None, qk_norm=False, bias=False, window=None):
    d = head_dim or dim // heads
    return NS(n_heads=heads, n_kv_heads=kv, head_dim=head_dim, dim=dim, wo=linear(heads * d, dim, bias),
              qkv_linear=NS(head_dim=d, wq=linear(dim, heads * d, bias), wkv=linear(dim, kv * d, bias)),
              qk_norm=NS(normalized_shape=d) if qk_norm else None, sliding_window_size=window)


def mla(dim, heads, q_lora, kv_lora, nope, rope, v):
    return NS(n_heads=heads, dim=dim, q_lora_rank=q_lora, kv_lora_rank=kv_lora, qk_nope_head_dim=nope,
              qk_rope_head_dim=rope, v_head_dim=v)


def block(attention, feed_forward=None, moe=None):
    return NS(attention=attention, feed_forward=feed_forward, moe=moe)


@dataclass
class _Decoder:
    dim: int
    vocab_size: int
    layers: list
    enable_weight_tying: bool = False


class Llama3Model:  # the outer classes name the model, as torchtitan's Llama3Model.Config does
    Config = type("Config", (_Decoder,), {"__qualname__": "Llama3Model.Config"})


class Qwen3Model:
    Config = type("Config", (_Decoder,), {"__qualname__": "Qwen3Model.Config"})


class GptOssModel:
    Config = type("Config", (_Decoder,), {"__qualname__": "GptOssModel.Config"})


class DeepSeekV3Model:
    @dataclass
    class Config(_Decoder):
        mtp_layers: list | None = None


def llama3_8b():
    return Llama3Model.Config(dim=4096, vocab_size=128256, layers=[block(gqa(4096, 32, 8), ffn(4096, 14336)) for _ in range(32)])


def test_drop_in_llama3_8b_in_torchtitans_units():
    nparams, per_token = get_nparams_and_flops(llama3_8b(), 8192, convention="torchtitan")
    n = 8_030_261_248 - 128256 * 4096
    assert (nparams, per_token) == (8_030_261_248, 6 * n + 6 * 32 * 32 * 2 * 128 * 8192)
    assert type(nparams) is int and type(per_token) is int


def test_drop_in_is_exact_by_default():
    s, h, layers, heads, kv, ffn_, v = 8192, 4096, 32, 32, 8, 14336, 128256
    matmuls = layers * (2 * h * h + 2 * h * kv * 128 + 3 * h * ffn_) + h * v  # weights that multiply, head included
    core = layers * 2 * heads * 256 * (s * (s + 1) // 2)  # QK^T and PV over the causal pairs, one sequence
    assert get_nparams_and_flops(llama3_8b(), s) == (8_030_261_248, 3 * (2 * s * matmuls + core) // s)


def test_drop_in_qwen3_moe_and_gpt_oss_match_the_convention(registry):
    qwen = Qwen3Model.Config(dim=2048, vocab_size=151936,
                             layers=[block(gqa(2048, 32, 4, 128, qk_norm=True), moe=moe(2048, 128, 8, 768)) for _ in range(48)])
    n = recorded_n("qwen3-30b-a3b", top_k=8, experts=128)
    assert get_nparams_and_flops(qwen, 4096, convention="torchtitan") == (30_532_122_624, 6 * n + 6 * 48 * 32 * 256 * 4096)
    oss = GptOssModel.Config(dim=2880, vocab_size=201088, layers=[
        block(gqa(2880, 64, 8, 64, bias=True, window=128 if i % 2 == 0 else None), moe=moe(2880, 128, 4, 2880, bias=True))
        for i in range(36)])
    n = recorded_n("gpt-oss-120b", top_k=4, experts=128)
    assert get_nparams_and_flops(oss, 4096, convention="torchtitan") == (116_829_156_672, 6 * n + 6 * 36 * 64 * 128 * 4096)
    exact = registry.evaluate(flopsreg.Model.example("gpt-oss-120b"), seq_len=100).training
    assert get_nparams_and_flops(oss, 100)[1] == Fraction(exact, 100)  # the windows' pairs over 100 tokens


def test_drop_in_deepseek_v3_reads_mla_dense_layers_and_shared_experts():
    layers = [block(mla(7168, 128, 1536, 512, 128, 64, 128), ffn(7168, 18432) if i < 3 else None,
                    None if i < 3 else moe(7168, 256, 8, 2048, shared=2048)) for i in range(61)]
    config = DeepSeekV3Model.Config(dim=7168, vocab_size=129280, layers=layers)
    assert hf_config(config)["first_k_dense_replace"] == 3 and hf_config(config)["n_shared_experts"] == 1
    n = recorded_n("deepseek-v3", top_k=8, experts=256)
    assert get_nparams_and_flops(config, 4096, convention="torchtitan") == (671_026_404_352, 6 * n + 6 * 61 * 128 * 320 * 4096)


@pytest.mark.parametrize(("config", "message"), [
    (NS(dim=64), r"model_config: a SimpleNamespace is not read \(flopsreg reads Llama3Model.Config"),
    (Llama3Model.Config(dim=64, vocab_size=100, layers=[]), r"model_config.layers = \[\]: expected a non-empty list"),
    (Llama3Model.Config(dim=64, vocab_size=100, layers=[block(gqa(64, 4, 4), NS())]),
     r"model_config.layers\[0\].feed_forward.w1: missing"),
    (Llama3Model.Config(dim=64, vocab_size=100, layers=[block(gqa(64, 4, 4), ffn(64, 128)), block(gqa(64, 8, 8), ffn(64, 128))]),
     r"model_config.layers\[1\].attention: .* differs from layers\[0\]"),
    (Llama3Model.Config(dim=64, vocab_size=100, layers=[block(gqa(64, 4, 4, qk_norm=True), ffn(64, 128))]),
     "Llama 3 has no q/k norms"),
    (Qwen3Model.Config(dim=64, vocab_size=100, layers=[block(gqa(64, 4, 4, 16, qk_norm=True), moe=moe(64, 4, 2, 32, shared=32))]),
     "Qwen3 MoE layers with shared_experts are not read"),
    (GptOssModel.Config(dim=64, vocab_size=100, layers=[block(gqa(64, 4, 4, 16, bias=True), ffn(64, 128))]),
     "every GPT-OSS layer has a moe config"),
    (GptOssModel.Config(dim=64, vocab_size=100, layers=[block(gqa(64, 4, 4, 16, bias=True), moe=moe(64, 4, 2, 32))]),
     r"model_config.layers\[0\].moe.router.gate.bias = False: this model's router has a bias"),
    (DeepSeekV3Model.Config(dim=64, vocab_size=100, layers=[block(mla(64, 4, 0, 32, 16, 8, 16), moe=moe(64, 4, 2, 32)),
                                                            block(mla(64, 4, 0, 32, 16, 8, 16), ffn(64, 128))]),
     r"dense layers \[1\] are not the first ones"),
    (DeepSeekV3Model.Config(dim=64, vocab_size=100, layers=[block(mla(64, 4, 0, 32, 16, 8, 16), moe=moe(64, 4, 2, 32, shared=48))]),
     "shared_experts width 48 is not a multiple of the experts' 32"),
    (Llama3Model.Config(dim=64, vocab_size=100, layers=[block(NS(n_heads=4, qkv_linear=NS(), wo=linear(64, 64)), ffn(64, 128))]),
     r"model_config.layers\[0\].attention.qkv_linear: expected a QKVLinear"),
])
def test_drop_in_names_the_field_it_cannot_read(config, message):
    with pytest.raises(flopsreg.ModelError, match=message):
        get_nparams_and_flops(config, 16)


def test_drop_in_reads_a_fused_qkv_projection_as_the_separate_one():
    fused = gqa(4096, 32, 8)
    fused.qkv_linear = NS(head_dim=128, n_heads=32, n_kv_heads=8, wqkv=linear(4096, (32 + 2 * 8) * 128))
    config = Llama3Model.Config(dim=4096, vocab_size=128256, layers=[block(fused, ffn(4096, 14336))] * 32)
    assert get_nparams_and_flops(config, 4096) == get_nparams_and_flops(llama3_8b(), 4096)


def test_drop_in_refuses_a_bad_seq_len():
    with pytest.raises(flopsreg.ModelError, match=r"seq_len = 0: expected an integer >= 1"):
        get_nparams_and_flops(llama3_8b(), 0)


def test_drop_in_counts_the_debug_flavors_mtp_layer():
    """deepseek_v3_debugmodel_mtp: 6 layers (1 dense), 8 experts top 3, 2 shared, one MTP layer copying the last."""
    layers = [block(mla(256, 16, 0, 512, 128, 64, 128), ffn(256, 1024) if i < 1 else None,
                    None if i < 1 else moe(256, 8, 3, 256, shared=512)) for i in range(6)]
    config = DeepSeekV3Model.Config(dim=256, vocab_size=2048, layers=layers, mtp_layers=[layers[-1]])
    attention = 256 * 16 * 192 + 256 * (512 + 64) + 512 + 512 * 16 * 256 + 16 * 128 * 256  # wq, wkv_a, kv_norm, wkv_b, wo
    moe_all, moe_active = 256 * 8 + 3 * 256 * 512 + 8 * 3 * 256 * 256, 256 * 8 + 3 * 256 * 512 + 3 * 3 * 256 * 256
    mtp_extra = 2 * 256 * 256 + 3 * 256  # eh_proj, enorm, hnorm, mtp_norm
    nparams = 6 * (attention + 2 * 256) + (3 * 256 * 1024) + 5 * moe_all + 256 + 2 * 2048 * 256 + attention + 2 * 256 + moe_all + mtp_extra
    n = 6 * (attention + 2 * 256) + 3 * 256 * 1024 + 5 * moe_active + 256 + 2048 * 256 + attention + 2 * 256 + moe_active + mtp_extra
    assert get_nparams_and_flops(config, 2048, convention="torchtitan") == (nparams, 6 * n + 6 * 6 * 16 * 320 * 2048)
    assert get_nparams_and_flops(config, 2048)[0] == nparams
