"""flopsreg against real Hugging Face forward passes, recorded in tests/data/hf_forward.

tests/data/hf_forward/measure.py built a tiny model of every published config in tests/data/hf
(same model_type and layer pattern, small widths), ran one forward pass of the transformers
implementation, and recorded what torch's FlopCounterMode counted and how many (query, key)
pairs the attention mask transformers built for each layer let through. Those numbers come
from torch and transformers, not from flopsreg.
"""

import json
from pathlib import Path

import pytest
from linear_reference import LINEAR_FAMILY_CONFIGS

import flopsreg
from flopsreg.formula.exact import compile_exact

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward.json").read_text())
SEQ_LEN = RECORD["seq_len"]
MODELS = sorted(RECORD["models"])


def test_the_record_covers_every_published_config():
    # the linear-attention / SSM hybrids are recorded as tiny configs of their own (forward_linear.json)
    published = sorted(p.stem for p in (Path(__file__).parents[1] / "data" / "hf").glob("*.json") if p.stem not in LINEAR_FAMILY_CONFIGS)
    # The 2026 families (DSA, Gemma 4, ...) are recorded by model type in forward_attention2026.json
    # (tests/hf/test_attention2026_forward.py); Kimi-K2.x's decoder is DeepSeek-V3's, recorded here.
    newer = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_attention2026.json").read_text())
    newer_types = {entry["config"].get("text_config", entry["config"])["model_type"] for entry in newer["models"].values()} | {"deepseek_v3"}
    # DeepSeek-V4, Gemma 3n and GLM-5.3-Flash are recorded in forward_deepseek_v4.json, forward_gemma3n.json
    # and forward_glm5_next.json (tests/hf/test_deepseek_v4_forward.py, _gemma3n.py, _glm5_next.py).
    newer_types |= {"deepseek_v4", "gemma3n_text", "glm5_next_text"}
    # The Llama-like families read from traits are recorded as tiny configs in forward_families.json
    # (tests/hf/test_families_forward.py); their class-default configs are in tests/data/hf.
    families = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_families.json").read_text())
    newer_types |= {entry["config"]["model_type"] for entry in families["models"].values()}
    # The recurrent and state-space models are recorded as tiny configs in forward_recurrent.json
    # (tests/hf/test_recurrent_forward.py, with their class defaults' parameter totals).
    recurrent = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_recurrent.json").read_text())
    newer_types |= {entry["config"]["model_type"] for entry in recurrent["models"].values()}
    # The 2026 types of brief fam2026a: tests/hf/test_fam2026a_forward.py, forward_fam2026a.json.
    newer_types |= set(json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_fam2026a.json").read_text())["defaults"])
    # The GPT-2 era families are recorded as tiny configs in forward_classic.json (tests/hf/test_classic_forward.py).
    classic = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_classic.json").read_text())
    newer_types |= {entry["config"]["model_type"] for entry in classic["models"].values()}
    # The last GPT-2 era families (OpenAI GPT, GPT-Neo, BLOOM, MPT, Falcon, ...): forward_r5classic.json (tests/hf/test_r5classic_forward.py).
    newer_types |= set(json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_r5classic.json").read_text())["defaults"])
    # The modern dense, MoE and MLA families of helper fam1: forward_fam1.json (tests/hf/test_fam1_forward.py).
    fam1 = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_fam1.json").read_text())
    newer_types |= {entry["config"]["model_type"] for entry in fam1["models"].values()}
    fam2026b = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_fam2026b.json").read_text())
    newer_types |= {entry["config"]["model_type"] for entry in fam2026b["models"].values()}
    # The shared-block models (Zamba) are recorded in forward_ssm2.json (tests/hf/test_ssm2_forward.py).
    ssm2 = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_ssm2.json").read_text())
    newer_types |= {entry["config"]["model_type"] for entry in ssm2["models"].values()}
    # The recurrent and hybrid types of helper r5rec (Zamba2, RecurrentGemma, xLSTM): forward_r5rec.json (tests/hf/test_r5rec_forward.py).
    newer_types |= set(json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_r5rec.json").read_text())["defaults"])
    # qwen4_exp_text (helper qwen4exp): forward_qwen4exp.json (tests/hf/test_qwen4exp_forward.py).
    newer_types |= {"qwen4_exp_text"}
    # dots3_note_text (helper dots3): forward_dots3.json (tests/hf/test_dots3_forward.py).
    newer_types |= set(json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_dots3.json").read_text())["defaults"])
    # The text models of multimodal wrappers (h-mm) are recorded as tiny configs in forward_mm.json (tests/hf/test_mm_forward.py).
    mm = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_mm.json").read_text())["models"].values()
    newer_types |= {entry["config"].get("text_config", entry["config"]).get("model_type", entry["config"]["model_type"]) for entry in mm}
    # The multimodal wrappers' text paths of h-r5mm: forward_r5mm.json (tests/hf/test_r5mm_forward.py).
    r5mm = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_r5mm.json").read_text())["models"].values()
    newer_types |= {entry["config"].get("text_config", entry["config"])["model_type"] for entry in r5mm}
    # The Qwen-VL wrappers with images (towers5): forward_towers5.json (tests/hf/test_towers5_forward.py).
    towers5 = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_towers5.json").read_text())["models"].values()
    newer_types |= {entry["config"]["text_config"]["model_type"] for entry in towers5}
    # The MoE types of helper r5moe: forward_r5moe.json (tests/hf/test_r5moe_forward.py).
    newer_types |= set(json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_r5moe.json").read_text())["defaults"])
    # The 2026 types of brief r5new (Dory, ...): tests/hf/test_r5new_forward.py, forward_r5new.json.
    newer_types |= set(json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_r5new.json").read_text())["defaults"])
    # Inkling's text decoder (helper inkling): forward_inkling.json (tests/hf/test_inkling_forward.py).
    newer_types |= set(json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_inkling.json").read_text())["defaults"])
    # The types whose layers run over another length than the input (cpmant): forward_longseq.json (tests/hf/test_longseq_forward.py).
    newer_types |= set(json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_longseq.json").read_text())["defaults"])
    # Qwen3-VL-MoE with images (helper qwenvid): forward_qwenvid.json (tests/hf/test_qwenvid_forward.py).
    qwenvid = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_qwenvid.json").read_text())["models"].values()
    newer_types |= {entry["config"]["text_config"]["model_type"] for entry in qwenvid}
    # Qwen2.5-Omni (helper omni25): forward_omni25.json (tests/hf/test_omni25_forward.py), its class defaults' decoders.
    omni25 = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_omni25.json").read_text())["defaults"].values()
    newer_types |= {entry["config"].get("text_config", entry["config"])["model_type"] for entry in omni25}
    # Qwen3-Omni's thinker (helper omni3): forward_omni3.json (tests/hf/test_omni3_forward.py); the whole
    # qwen3_omni_moe keeps its text_config inside thinker_config.
    omni3 = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_omni3.json").read_text())
    newer_types |= {entry["config"]["text_config"]["model_type"] for entry in omni3["models"].values()} | set(omni3["built_defaults"])
    data = {name: json.loads((Path(__file__).parents[1] / "data" / "hf" / f"{name}.json").read_text()) for name in published}
    decoder_type = {name: cfg.get("text_config", {}).get("model_type", cfg["model_type"]) for name, cfg in data.items()}
    later = [name for name in published if name not in MODELS]
    assert set(MODELS) <= set(published)
    assert {name: decoder_type[name] for name in later if decoder_type[name].replace("kimi_k2", "deepseek_v3") not in newer_types} == {}
    assert all("flops" in RECORD["models"][name] for name in MODELS), "a model failed to run when recorded"


@pytest.mark.parametrize("name", MODELS)
def test_pairs_per_layer_equal_the_masks_transformers_builds(registry, name):
    """Which layers slide or are chunked, and the window/chunk off-by-ones, against HF's masks."""
    entry = RECORD["models"][name]
    plan = registry.select(flopsreg.Model.from_hf_config(entry["config"]))
    by_kind = {unit.name: unit for unit in plan.kinds}
    ours = [
        compile_exact(by_kind[layer.kind].quantities["pairs"])({**layer.params, "seq_len": SEQ_LEN})
        for layer in plan.model.layers
    ]
    assert ours == entry["pairs"]


def _all_experts_executed(config: dict) -> int:
    """Llama 4's transformers MoE runs every expert on every token (a dense bmm): the routed
    experts beyond top-k are implementation FLOPs, not model FLOPs. Written out for the test."""
    text = config.get("text_config", config)
    experts, top_k = text["num_local_experts"], text["num_experts_per_tok"]
    moe_layers = len(text["moe_layers"])
    per_expert = 3 * 2 * SEQ_LEN * text["hidden_size"] * text["intermediate_size"]  # gate, up, down
    return moe_layers * (experts - top_k) * per_expert


IMPLEMENTATION_EXTRA = {"llama-4-scout": _all_experts_executed}


@pytest.mark.parametrize("name", MODELS)
def test_every_matmul_equals_what_torch_counted(eager_registry, name):
    """Projections, MLPs, routers, routed and shared experts, MLA, logits: all of them."""
    entry = RECORD["models"][name]
    model = flopsreg.Model.from_hf_config(entry["config"])
    ours = eager_registry.evaluate(model, seq_len=SEQ_LEN, convention="eager").forward
    extra = IMPLEMENTATION_EXTRA.get(name, lambda config: 0)(entry["config"])
    assert ours + extra == entry["flops"]["total"]


def test_exact_counts_fewer_pairs_than_eager_attention_computes(registry, eager_registry):
    """The difference between eager and exact is only the masked-out half of the scores."""
    entry = RECORD["models"]["llama-3-8b"]
    model = flopsreg.Model.from_hf_config(entry["config"])
    exact = registry.evaluate(model, seq_len=SEQ_LEN).forward
    eager = eager_registry.evaluate(model, seq_len=SEQ_LEN, convention="eager").forward
    text = entry["config"]
    layers, heads = text["num_hidden_layers"], text["num_attention_heads"]
    head_dim = text["hidden_size"] // heads  # LlamaConfig: no head_dim given
    masked_out = SEQ_LEN**2 - SEQ_LEN * (SEQ_LEN + 1) // 2
    assert eager - exact == layers * 2 * heads * (head_dim + head_dim) * masked_out
