"""Exact parameter counts (issue 13): ``Registry.parameters`` and ``flopsreg params``.

The oracle is tests/data/hf_params/params.json: tests/data/hf_params/measure.py built every
published config of tests/data/hf at full size on torch's meta device with transformers 5.24
and recorded ``sum(p.numel() for p in model.parameters())`` with a breakdown by parameter name.
Those numbers come from transformers, not from flopsreg. Beside them: the totals the model
publishers give, and breakdowns derived here by hand.
"""

import json
import re
import types
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flopsreg
from flopsreg.cli import main

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_params" / "params.json").read_text())
MODELS = sorted(RECORD["models"])
HF = Path(__file__).parents[1] / "data" / "hf"
EXTRA = Path(__file__).parents[1] / "data" / "hf_params" / "configs"  # recorded for their parameters only
# Class-default configs whose totals are recorded with their family's forward passes instead
# (tests/hf/test_classic_forward.py checks them against forward_classic.json).
CLASSIC = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_classic.json").read_text())["defaults"]
EXAMPLES = [
    "deepseek-v3", "gemma-3-27b", "gemma-3-4b", "gpt-oss-120b", "gpt-oss-20b", "llama-3-8b",
    "llama-3.1-70b", "llama-4-scout", "mistral-7b-v0.1", "mixtral-8x7b", "qwen3-30b-a3b", "qwen3-8b",
]
# The 2026 families' bundled examples that have a published config in tests/data/hf.
EXAMPLES_2026 = [
    "deepseek-v3.2", "gemma-4-26b-a4b", "gemma-4-31b", "glm-5", "kimi-linear-48b-a3b", "nemotron-3-nano-30b-a3b",
    "qwen3-next-80b-a3b", "qwen3.5-35b-a3b", "qwen3.5-9b",
]


def hf(name: str, **kwargs) -> flopsreg.Model:
    path = HF / f"{name}.json"
    return flopsreg.Model.from_hf_config(path if path.exists() else EXTRA / f"{name}.json", **kwargs)


def recorded(name: str, *suffixes: str) -> int:
    """What transformers holds in the parameters whose name ends with one of *suffixes* (0 if none)."""
    return sum(n for key, n in RECORD["models"][name]["by_name"].items() if key.endswith(suffixes))


def test_the_record_names_its_versions_and_the_meta_device():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13") and RECORD["device"] == "meta"
    # class-default configs whose totals a forward record holds instead (tests/data/hf_forward/forward_*.json
    # "defaults", or "built_defaults" for classes that build only with a few keys added)
    elsewhere = {
        f"{model_type.replace('_', '-')}-defaults"
        for path in (HF.parent / "hf_forward").glob("forward_*.json")
        for record in [json.loads(path.read_text())]
        for model_type, entry in {**record.get("defaults", {}), **record.get("built_defaults", {})}.items()
        if "parameters" in entry or "total" in entry
    }
    assert set(MODELS) == {p.stem for p in (*HF.glob("*.json"), *EXTRA.glob("*.json"))} - (elsewhere - set(MODELS))


@pytest.mark.parametrize("name", MODELS)
def test_total_equals_transformers_sum_of_numel(registry, name):
    """The record holds the language model transformers builds: a multimodal wrapper's text model
    alone (its whole model, towers included, is tests/hf/test_towers.py's)."""
    counts = registry.parameters(hf(name))
    assert counts.language_model == RECORD["models"][name]["total"]
    if not counts.towers:
        assert counts.total == RECORD["models"][name]["total"]


@pytest.mark.parametrize("name", MODELS)
def test_embedding_and_head_equal_transformers_embed_tokens_and_lm_head(registry, name):
    counts = registry.parameters(hf(name))
    # Nemotron-H: model.embeddings; Mamba, Falcon-Mamba, Mamba2: backbone.embeddings; RWKV: rwkv.embeddings
    assert counts.embedding == recorded(name, "embed_tokens.weight", "model.embeddings.weight", "backbone.embeddings.weight", "rwkv.embeddings.weight")
    # 0 where tied: transformers has no lm_head parameter; Phi's lm_head has a bias too; RWKV's is named head
    assert counts.head == recorded(name, "lm_head.weight", "lm_head.bias") + RECORD["models"][name]["by_name"].get("head.weight", 0)


@pytest.mark.parametrize("name", EXAMPLES + EXAMPLES_2026)
def test_bundled_examples_count_as_their_hugging_face_configs(registry, name):
    """A bundled example is the text decoder: a multimodal wrapper's text_config read alone."""
    config = json.loads((HF / f"{name}.json").read_text())
    if "text_config" in config:
        config = {**config["text_config"], "model_type": config["text_config"].get("model_type", f"{config['model_type']}_text")}
    ours, theirs = registry.parameters(flopsreg.Model.example(name)), registry.parameters(flopsreg.Model.from_hf_config(config))
    assert (ours.total, ours.active, ours.embedding, ours.head) == (theirs.total, theirs.active, theirs.embedding, theirs.head)


def billions(n: int, digits: int) -> float:
    return round(n / 1e9, digits)


def truncated(n: int, digits: int) -> float:
    """Billions cut after *digits* decimals, as some publishers print them."""
    return (n // 10 ** (9 - digits)) / 10**digits


def test_llama_3_8b_is_its_published_8_030_261_248(registry):
    """Meta's Llama 3 8B: 8,030,261,248 parameters (the safetensors total on its model page)."""
    counts = registry.parameters(flopsreg.Model.example("llama-3-8b"))
    assert counts.total == counts.active == 8_030_261_248


def test_published_totals_of_the_moe_examples(registry):
    """Rounded as their publishers print them (sources in docs/parameters.md)."""
    p = {name: registry.parameters(flopsreg.Model.example(name)) for name in EXAMPLES}
    # gpt-oss model card, table 1: total 116.83B / 20.91B; active 5.13B / 3.61B per token, a
    # count without the input embedding (a gather), with the unembedding.
    assert billions(p["gpt-oss-120b"].total, 2) == 116.83 and billions(p["gpt-oss-20b"].total, 2) == 20.91
    assert billions(p["gpt-oss-120b"].active - p["gpt-oss-120b"].embedding, 2) == 5.13
    assert billions(p["gpt-oss-20b"].active - p["gpt-oss-20b"].embedding, 2) == 3.61
    # Mixtral of experts (arXiv:2401.04088): 47B parameters, 13B active.
    assert (billions(p["mixtral-8x7b"].total, 0), billions(p["mixtral-8x7b"].active, 0)) == (47, 13)
    # DeepSeek-V3 technical report (arXiv:2412.19437): 671B total, 37B activated per token
    # (37.55B here: the report's figure is cut, not rounded, or leaves the 0.93B embedding out).
    assert (billions(p["deepseek-v3"].total, 0), truncated(p["deepseek-v3"].active, 0)) == (671, 37)
    # Qwen3 model cards: 30.5B total, 3.3B activated (3.35B here, cut), 29.9B non-embedding;
    # Qwen3-8B 8.2B, 6.95B non-embedding.
    moe = p["qwen3-30b-a3b"]
    assert (billions(moe.total, 1), truncated(moe.active, 1), billions(moe.total - moe.embedding - moe.head, 1)) == (30.5, 3.3, 29.9)
    dense = p["qwen3-8b"]
    assert (billions(dense.total, 1), billions(dense.total - dense.embedding - dense.head, 2)) == (8.2, 6.95)
    # Gemma 3 technical report, table 1: non-embedding parameters 3,209M (4B) and 25,600M (27B).
    for name, millions in (("gemma-3-4b", 3_209), ("gemma-3-27b", 25_600)):
        assert round((p[name].total - p[name].embedding) / 1e6) == millions
    # Llama 4 Scout: 17B active parameters (its 109B total includes the vision encoder, not counted here).
    assert billions(p["llama-4-scout"].active, 0) == 17


def test_published_totals_of_the_2026_examples(registry):
    """Rounded (or cut) as their publishers print them (sources in docs/parameters.md); the
    multimodal ones are counted as their text decoder, as the publishers' text-model figures are."""
    p = {name: registry.parameters(flopsreg.Model.example(name)) for name in EXAMPLES_2026}
    # Gemma 4 model card: 31B dense 30.7B (beside a ~550M vision encoder); 26B A4B 25.2B total, 3.8B active.
    assert billions(p["gemma-4-31b"].total, 1) == 30.7
    assert (billions(p["gemma-4-26b-a4b"].total, 1), billions(p["gemma-4-26b-a4b"].active, 1)) == (25.2, 3.8)
    # Nemotron 3 Nano 30B-A3B model card: 31.6B total, 3.6B active with the embeddings, 3.2B without.
    nano = p["nemotron-3-nano-30b-a3b"]
    assert (billions(nano.total, 1), billions(nano.active, 1), billions(nano.active - nano.embedding, 1)) == (31.6, 3.6, 3.2)
    # Qwen3-Next-80B-A3B model card: 80B total, 3B activated (3.87B here, cut as DeepSeek-V3's 37B).
    assert (billions(p["qwen3-next-80b-a3b"].total, 0), truncated(p["qwen3-next-80b-a3b"].active, 0)) == (80, 3)
    # Kimi Linear 48B-A3B (arXiv:2510.26692): 48B total is the count without the embedding and the
    # head (49.12B with them); 3B activated.
    kimi = p["kimi-linear-48b-a3b"]
    assert (billions(kimi.total - kimi.embedding - kimi.head, 0), billions(kimi.active, 0)) == (48, 3)
    # DeepSeek-V3.2: 671B total, 37B activated as for V3; the indexer adds 0.85B (671.88B, cut) and
    # the 37B leave the embedding out (37.48B; 38.40B with it).
    v32 = p["deepseek-v3.2"]
    assert (truncated(v32.total, 0), billions(v32.active - v32.embedding, 0)) == (671, 37)
    # GLM-5 technical report (arXiv:2602.15763), table 1: 744B total, 40B activated (40.83B without
    # the embedding, cut; 41.78B with it).
    glm = p["glm-5"]
    assert (billions(glm.total, 0), truncated(glm.active - glm.embedding, 0)) == (744, 40)


def test_2026_norms_by_hand(registry):
    """The weight-only patterns the 2026 readers add, from each config's widths, against the record's names."""
    # Nemotron 3 Nano: one RMSNorm per block (52 blocks of width 2688) and norm_f.
    nano = registry.parameters(hf("nemotron-3-nano-30b-a3b")).by_slot()
    assert nano["norms"] == 52 * 2688 == recorded("nemotron-3-nano-30b-a3b", "layers.*.norm.weight")
    assert nano["final_norm"] == 2688 == recorded("nemotron-3-nano-30b-a3b", "norm_f.weight")
    # OLMo-Hybrid: q_norm over all 30 heads x 128 and k_norm over all 30 key heads x 128, on the 8 attention layers only.
    olmo = registry.parameters(hf("olmo-hybrid-7b-defaults")).by_slot()
    assert olmo["attention.qk_norm"] == 8 * (30 * 128 + 30 * 128) == recorded("olmo-hybrid-7b-defaults", "q_norm.weight", "k_norm.weight")
    # MiniMax-M2: the same over 48 query and 8 key heads of 128, on 62 layers.
    assert registry.parameters(hf("minimax-m2")).by_slot()["attention.qk_norm"] == 62 * (48 + 8) * 128
    # Gemma 4 26B-A4B: seven norms of 2816 per layer (the sandwich four and three around the experts).
    gemma = registry.parameters(hf("gemma-4-26b-a4b")).by_slot()
    assert gemma["norms"] == 30 * 7 * 2816 == recorded("gemma-4-26b-a4b", "layernorm.weight", "layernorm_1.weight", "layernorm_2.weight")
    # Mistral Large 4: a scale and a bias per head (64) on every layer's queries; alpha per RoPE frequency (64 / 2).
    large = registry.parameters(hf("mistral-large-4")).by_slot()
    assert large["attention.softmax_scaling"] == 72 * 2 * 64 == recorded("mistral-large-4", "self_attn.softmax_scaling.scale", "self_attn.softmax_scaling.bias")
    assert large["rope_scaling"] == 64 // 2 == recorded("mistral-large-4", "rotary_emb.alpha")
    # StarCoder2: LayerNorms (scale and bias) of 3072 and biases on q/k/v/o and c_fc/c_proj.
    star = registry.parameters(hf("starcoder2")).by_slot()
    assert star["norms"] == 30 * 4 * 3072 and star["final_norm"] == 2 * 3072
    assert star["mlp.bias"] == 30 * (12288 + 3072) == recorded("starcoder2", "c_fc.bias", "c_proj.bias")


def test_gemma_4_per_layer_embeddings_by_hand(registry):
    """Gemma4TextConfig defaults: 30 layers of width 2304, per-layer inputs of 256 from a 262144-token table."""
    h, layers, ple, vocab = 2304, 30, 256, 262144
    counts = registry.parameters(hf("gemma-4-ple-defaults")).by_slot()
    # per_layer_input_gate h -> 256, per_layer_projection 256 -> h, post_per_layer_input_norm h.
    assert counts["per_layer_input"] == layers * (2 * h * ple + h) == recorded(
        "gemma-4-ple-defaults", "per_layer_input_gate.weight", "per_layer_projection.weight", "post_per_layer_input_norm.weight"
    )
    # embed_tokens_per_layer (V x L 256), per_layer_model_projection h -> L 256, per_layer_projection_norm 256.
    assert counts["per_layer_embedding"] == vocab * layers * ple + h * layers * ple + ple == recorded(
        "gemma-4-ple-defaults", "embed_tokens_per_layer.weight", "per_layer_model_projection.weight", "per_layer_projection_norm.weight"
    )


def test_dense_breakdown_by_hand_llama_3_8b(registry):
    h, layers, heads, kv, d, ffn, vocab = 4096, 32, 32, 8, 128, 14336, 128256
    per_layer = {
        "attention.query": h * heads * d,  # 16,777,216
        "attention.projection": 2 * h * kv * d,  # k and v: 8,388,608
        "attention.output": heads * d * h,
        "mlp": 3 * h * ffn,  # gate, up, down: 176,160,768
        "norms": 2 * h,  # input_layernorm, post_attention_layernorm
    }
    counts = registry.parameters(flopsreg.Model.example("llama-3-8b"))
    assert {s.slot: s.weights for s in counts.shares if s.where == "dense"} == per_layer
    assert counts.by_slot() == {
        **{slot: layers * w for slot, w in per_layer.items()},
        "embedding": vocab * h, "final_norm": h, "head": vocab * h,
    }
    assert counts.total == layers * 218_112_000 + 2 * vocab * h + h == 8_030_261_248


def test_moe_breakdown_by_hand_mixtral(registry):
    h, layers, heads, kv, d, experts, k, width, vocab = 4096, 32, 32, 8, 128, 8, 2, 14336, 32000
    attention = 2 * h * heads * d + 2 * h * kv * d  # 41,943,040
    router = h * experts
    counts = registry.parameters(flopsreg.Model.example("mixtral-8x7b"))
    (mlp,) = [s for s in counts.shares if s.slot == "mlp"]
    assert (mlp.weights, mlp.active) == (router + experts * 3 * h * width, router + k * 3 * h * width)
    assert counts.total == layers * (attention + router + experts * 3 * h * width + 2 * h) + 2 * vocab * h + h
    assert counts.active == layers * (attention + router + k * 3 * h * width + 2 * h) + 2 * vocab * h + h
    assert counts.total == RECORD["models"]["mixtral-8x7b"]["total"]
    # transformers holds the experts as one gate_up (E, 2F, h) and one down (E, h, F) tensor per layer.
    assert layers * experts * 3 * h * width == recorded("mixtral-8x7b", "experts.gate_up_proj") + recorded("mixtral-8x7b", "experts.down_proj")


def test_mla_breakdown_by_hand_deepseek_v2_lite(registry):
    """DeepSeek-V2-Lite: no q_lora_rank (a direct q_proj); 1 dense layer, then 26 MoE layers."""
    h, heads, rank, nope, rope, v, vocab = 2048, 16, 512, 128, 64, 128, 102400
    q = h * heads * (nope + rope)  # q_proj: 6,291,456
    kv = h * (rank + rope) + rank + rank * heads * (nope + v)  # kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj
    o = heads * v * h
    dense = 3 * h * 10944
    moe = h * 64 + 64 * 3 * h * 1408 + 3 * h * 2 * 1408  # router, 64 experts, 2 shared experts
    total = 27 * (q + kv + o + 2 * h) + dense + 26 * moe + 2 * vocab * h + h
    counts = registry.parameters(hf("deepseek-v2-lite"))
    assert counts.total == total == RECORD["models"]["deepseek-v2-lite"]["total"]
    (projection,) = {s.weights for s in counts.shares if s.slot == "attention.projection"}
    assert projection == kv
    assert 27 * rank == recorded("deepseek-v2-lite", "kv_a_layernorm.weight")
    assert counts.active == total - 26 * (64 - 6) * 3 * h * 1408


def test_deepseek_v3_mtp_block_is_counted_apart(registry):
    """transformers does not build the MTP module (model.layers.61): the total leaves it out."""
    h, heads, r_q, r_kv, nope, rope, v = 7168, 128, 1536, 512, 128, 64, 128
    attention = (h * r_q + r_q + r_q * heads * (nope + rope)) + (h * (r_kv + rope) + r_kv + r_kv * heads * (nope + v)) + heads * v * h
    moe_layer = attention + 2 * h + h * 256 + 256 * 3 * h * 2048 + 3 * h * 2048
    without, with_mtp = registry.parameters(hf("deepseek-v3")), registry.parameters(hf("deepseek-v3", blocks=["mtp"]))
    assert with_mtp.total == without.total == RECORD["models"]["deepseek-v3"]["total"]
    assert without.blocks == {}
    assert with_mtp.blocks == {"mtp": moe_layer + 2 * h * h + 3 * h}  # its layer, eh_proj, enorm/hnorm/head norm


def test_gpt_oss_holds_sinks_and_biases(registry):
    counts = registry.parameters(hf("gpt-oss-20b"))
    per_layer = {s.slot: s for s in counts.shares if s.where == "sliding"}
    assert per_layer["attention.sinks"].weights * 24 == recorded("gpt-oss-20b", "self_attn.sinks")
    bias = per_layer["attention.bias"].weights * 24
    assert bias == sum(recorded("gpt-oss-20b", f"{p}_proj.bias") for p in "qkvo")
    assert per_layer["mlp.bias"].weights * 24 == recorded("gpt-oss-20b", "gate_up_proj_bias") + recorded("gpt-oss-20b", "down_proj_bias")
    assert per_layer["mlp.bias"].active == 4 * (2 * 2880 + 2880)  # top-4 experts' biases
    assert per_layer["mlp.router_bias"].weights * 24 == recorded("gpt-oss-20b", "router.bias")


# -- invariants over random small models ---------------------------------------------------------

DIMS = st.fixed_dictionaries(
    {
        "layers": st.integers(1, 6), "hidden": st.integers(1, 64), "heads": st.sampled_from([1, 2, 4, 8]),
        "head_dim": st.integers(1, 32), "vocab": st.integers(1, 1000), "ffn_hidden": st.integers(1, 128),
        "kv_groups": st.sampled_from([1, 2]), "flags": st.sets(st.sampled_from(["norms", "qkv_bias", "sinks", "mlp_bias", "qk_norm"])),
    }
)


def uniform(d: dict, extra: frozenset = frozenset()) -> flopsreg.Model:
    return flopsreg.Model.uniform(
        "toy", layers=d["layers"], flags={"lm_head", "gated", "mlp", *d["flags"], *extra},
        hidden=d["hidden"], heads=d["heads"], kv_heads=d["heads"] // d["kv_groups"] or 1,
        head_dim=d["head_dim"], vocab=d["vocab"], ffn_hidden=d["ffn_hidden"],
    )


@settings(max_examples=40, deadline=None)
@given(DIMS)
def test_invariants(d):
    registry = flopsreg.Registry(load_entry_points=False)
    model, tied = uniform(d), uniform(d, frozenset({"tied_embeddings"}))
    counts = registry.parameters(model)
    assert 0 < counts.active <= counts.total == sum(s.total for s in counts.shares)
    assert registry.parameters(tied).total == counts.total - d["vocab"] * d["hidden"]  # tying holds V x h once
    assert registry.parameters(tied).embedding == counts.embedding == d["vocab"] * d["hidden"]
    bare = uniform({**d, "flags": set()})
    extra = counts.total - registry.parameters(bare).total
    h, layers, n_h, n_kv, dh = d["hidden"], d["layers"], d["heads"], d["heads"] // d["kv_groups"] or 1, d["head_dim"]
    expected = 0
    expected += (2 * layers + 1) * h if "norms" in d["flags"] else 0
    expected += layers * (n_h + 2 * n_kv) * dh if "qkv_bias" in d["flags"] else 0
    expected += layers * n_h if "sinks" in d["flags"] else 0
    expected += layers * (2 * d["ffn_hidden"] + h) if "mlp_bias" in d["flags"] else 0
    expected += layers * 2 * dh if "qk_norm" in d["flags"] else 0
    assert extra == expected
    # weights without matmuls never change FLOPs
    for length in (1, 17):
        assert registry.evaluate(model, seq_len=length).forward == registry.evaluate(bare, seq_len=length).forward


def test_weight_only_patterns_are_not_flops_terms(registry):
    plan = registry.select(flopsreg.Model.example("gpt-oss-20b"))
    slots = {slot for unit in plan.units for slot in unit.patterns}
    assert not slots & {"norms", "attention.bias", "attention.sinks", "mlp.bias", "mlp.router_bias", "embedding", "final_norm"}


# -- errors --------------------------------------------------------------------------------------


def test_a_bias_the_family_reader_does_not_model_is_refused_naming_the_key(registry):
    config = json.loads((HF / "deepseek-v3.json").read_text()) | {"attention_bias": True}
    with pytest.raises(flopsreg.ModelError, match=r"attention_bias = true: .*expected false"):
        flopsreg.Model.from_hf_config(config)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("falcon-h1-defaults", "attention_bias"), ("falcon-h1-defaults", "mlp_bias"), ("falcon-h1-defaults", "projectors_bias"),
        ("granite-4.0-h-defaults", "attention_bias"), ("kimi-linear-48b-a3b", "attention_bias"),
        ("olmo-hybrid-7b-defaults", "attention_bias"), ("qwen3-next-80b-a3b", "attention_bias"),
        ("nemotron-3-nano-30b-a3b", "attention_bias"), ("nemotron-3-nano-30b-a3b", "mlp_bias"),
    ],
)
def test_2026_readers_refuse_the_biases_they_do_not_model(name, key):
    config = json.loads((HF / f"{name}.json").read_text()) | {key: True}
    with pytest.raises(flopsreg.ModelError, match=rf"{key} = true: .*only false is supported"):
        flopsreg.Model.from_hf_config(config)


@pytest.mark.parametrize("name", ["mistral-large-4", "gemma-4-31b", "qwen3.5-9b"])
def test_2026_multimodal_readers_refuse_a_text_config_attention_bias(name):
    config = json.loads((HF / f"{name}.json").read_text())
    config["text_config"] = config["text_config"] | {"attention_bias": True}
    with pytest.raises(flopsreg.ModelError, match=r"text_config\.attention_bias = true"):
        flopsreg.Model.from_hf_config(config)


def test_lfm2_reads_tie_embedding_as_tie_word_embeddings(registry):
    config = json.loads((HF / "lfm2-defaults.json").read_text())
    untied = {k: v for k, v in config.items() if k != "tie_word_embeddings"} | {"tie_embedding": False}
    assert registry.parameters(flopsreg.Model.from_hf_config(untied)).head == 65536 * 2560  # vocab x hidden
    with pytest.raises(flopsreg.ModelError, match="tie_embedding"):
        flopsreg.Model.from_hf_config(config | {"tie_embedding": False})


def test_weights_needing_an_unset_parameter_name_it(registry):
    model = flopsreg.Model.example("deepseek-v3")
    with pytest.raises(flopsreg.ModelError, match=r"qkv_bias.*'kv_heads'"):
        registry.parameters(attrs.evolve(model, flags=model.flags | {"qkv_bias"}))


def _plugin(weights, active=None) -> types.ModuleType:
    from flopsreg.declarations.symbols import h

    pattern = flopsreg.Pattern(
        name="odd_norm", slot="norms", flags={"odd_norm"}, precedence=50, formula=0,
        weights=weights(h), active_weights=None if active is None else active(h),
        summary="a test norm", reference="tests",
    )

    @flopsreg.hookimpl
    def flopsreg_register_patterns():
        return [pattern]

    module = types.ModuleType("odd")
    module.flopsreg_register_patterns = flopsreg_register_patterns
    return module


@pytest.mark.parametrize(
    ("weights", "active", "message"),
    [
        (lambda h: h / 2, None, r"weights is not a whole number >= 0 at hidden=1: 1/2"),
        (lambda h: -h, None, r"weights is not a whole number >= 0 at hidden=1: -1"),
        (lambda h: h, lambda h: 2 * h, r"active_weights \(2\) exceed weights \(1\)"),
    ],
)
def test_a_plugin_with_fractional_negative_or_excess_weights_is_skipped(weights, active, message):
    with pytest.warns(flopsreg.PluginWarning):
        reg = flopsreg.Registry(plugins=[_plugin(weights, active)], load_entry_points=False)
    (error,) = reg.errors
    assert error.plugin == "odd"
    assert re.search(message, str(error)), str(error)


# -- presentation and the command line -----------------------------------------------------------


def test_repr_text_markdown_and_json(registry):
    counts = registry.parameters(flopsreg.Model.example("gemma-3-4b"))
    assert repr(counts) == f"Parameters(model='gemma-3-4b', total={counts.total}, active={counts.active}, embedding={counts.embedding}, head=0)"
    assert "tied: held once, in the embedding" in counts.text()
    assert counts._repr_markdown_().startswith("**gemma-3-4b**: 3,880,263,168 parameters")
    data = counts.to_dict()
    assert data["total"] == "3880263168" and data["head"] == "0" and data["blocks"] == {}
    assert {share["slot"] for share in data["shares"]} >= {"norms", "attention.qk_norm", "embedding", "final_norm"}


def test_cli_params_text_and_json(capsys):
    assert main(["params", "llama-3-8b", "--no-cache"]) == 0
    assert capsys.readouterr().out.startswith("llama-3-8b: 8,030,261,248 parameters, 8,030,261,248 active per token")
    assert main(["params", str(HF / "deepseek-v3.json"), "--mtp", "--format", "json", "--no-cache"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total"] == str(RECORD["models"]["deepseek-v3"]["total"]) and set(data["blocks"]) == {"mtp"}


def test_cli_params_bad_input_is_one_line_and_exit_2(capsys):
    assert main(["params", "llama-3-9b", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean 'llama-3-8b'" in err


def test_the_docs_show_what_flopsreg_params_prints(capsys):
    text = (Path(__file__).parents[2] / "docs" / "parameters.md").read_text(encoding="utf-8")
    shown = text.split("$ flopsreg params llama-3-8b\n", 1)[1].split("```", 1)[0]
    assert main(["params", "llama-3-8b", "--no-cache"]) == 0
    assert capsys.readouterr().out == shown


# -- Megatron-LM arguments -----------------------------------------------------------------------


def megatron(**overrides) -> flopsreg.Model:
    """Llama-3-8B as a Megatron-LM run's namespace (RoPE, RMSNorm, no biases, untied) holds it."""
    base = dict(
        hidden_size=4096, num_layers=32, num_attention_heads=32, group_query_attention=True, num_query_groups=8,
        kv_channels=128, ffn_hidden_size=14336, swiglu=True, vocab_size=128256, padded_vocab_size=128256,
        multi_latent_attention=False, num_experts=None, normalization="RMSNorm", qk_layernorm=False,
        add_bias_linear=False, add_qkv_bias=False, untie_embeddings_and_output_weights=True, position_embedding_type="rope",
    )
    return flopsreg.Model.from_megatron_args(types.SimpleNamespace(**{**base, **overrides}))


def test_a_megatron_run_of_llama_3_8b_counts_as_transformers(registry):
    assert registry.parameters(megatron()).total == RECORD["models"]["llama-3-8b"]["total"]


def test_megatron_defaults_layernorm_biases_tied_learned_positions_by_hand(registry):
    """Megatron-LM's argparse defaults: LayerNorm, add_bias_linear, tied embeddings, learned positions."""
    h, layers, heads, kv, d, ffn, vocab, positions = 4096, 32, 32, 8, 128, 14336, 128256, 8192
    model = megatron(
        normalization="LayerNorm", add_bias_linear=True, untie_embeddings_and_output_weights=False,
        position_embedding_type="learned_absolute", max_position_embeddings=positions,
    )
    per_layer = (
        2 * h * heads * d + 2 * h * kv * d + 3 * h * ffn  # matrices, as Llama
        + (heads + 2 * kv) * d + h  # linear_qkv and linear_proj biases
        + 2 * ffn + h  # linear_fc1 (gate and up, 2F) and linear_fc2 biases
        + 2 * 2 * h  # two LayerNorms, scale and bias
    )
    counts = registry.parameters(model)
    assert counts.total == layers * per_layer + vocab * h + 2 * h + positions * h  # tied: V x h once; final LayerNorm
    assert (counts.embedding, counts.head) == (vocab * h, 0)
    for length in (1, 4096):  # weights only: FLOPs as without them
        assert registry.evaluate(model, seq_len=length).forward == registry.evaluate(megatron(), seq_len=length).forward


def test_megatron_qkv_bias_and_qk_layernorm(registry):
    counts = registry.parameters(megatron(add_qkv_bias=True, qk_layernorm=True, normalization="LayerNorm"))
    # per layer: q, k, v biases; q and k LayerNorms of the head width (scale, bias); the bias the two
    # LayerNorms add to the RMSNorms' scales. Then the final LayerNorm's bias.
    assert counts.total - registry.parameters(megatron()).total == 32 * ((32 + 2 * 8) * 128 + 2 * 2 * 128 + 2 * 4096) + 4096


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (dict(normalization="rmsnorm"), r"args.normalization = 'rmsnorm': expected one of 'RMSNorm', 'LayerNorm'"),
        (dict(position_embedding_type="learned_absolute"), r"args.max_position_embeddings: missing"),
        (dict(position_embedding_type="alibi"), r"args.position_embedding_type = 'alibi'"),
        (dict(add_bias_linear=1), r"args.add_bias_linear = 1: expected True or False"),
        (
            dict(add_bias_linear=True, multi_latent_attention=True, group_query_attention=False, kv_lora_rank=32,
                 qk_head_dim=128, qk_pos_emb_head_dim=64, v_head_dim=128, q_lora_rank=None),
            r"args.add_bias_linear = True: the biases of MLA's projections are not counted",
        ),
        (
            dict(add_bias_linear=True, num_experts=8, moe_router_topk=2, moe_shared_expert_intermediate_size=1024),
            r"args.add_bias_linear = True: the biases of shared experts are not counted",
        ),
    ],
)
def test_megatron_weight_arguments_are_read_strictly(overrides, message):
    with pytest.raises(flopsreg.ModelError, match=message):
        megatron(**overrides)


def test_megatron_moe_with_biases_holds_expert_biases(registry):
    counts = registry.parameters(megatron(add_bias_linear=True, num_experts=8, moe_router_topk=2))
    (bias,) = [s for s in counts.shares if s.slot == "mlp.bias"]
    assert (bias.pattern, bias.weights, bias.active) == ("expert_bias", 8 * (2 * 14336 + 4096), 2 * (2 * 14336 + 4096))
