"""Measure tiny forward passes of the modern dense, MoE and MLA families of helper fam1 (issue 21),
and the parameters of each model type's class-default config.

The same measurement as measure_families.py (whose ``measure`` and ``class_defaults`` this script
runs): each tiny config below (odd widths: hidden 44, head_dim 12, intermediate 58, vocabulary 97)
is built with transformers 5.24 on the CPU (eager attention, eager experts) and run at each of
SEQ_LENS under torch's FlopCounterMode; the totals, the FLOPs of every module, the (query, key)
pairs each attention call's mask lets through and ``sum(p.numel())`` are recorded, and for every
model type the class-default config and its parameters on the meta device (or the error when the
class does not build from its own defaults; then, under "built_defaults", the defaults with the
keys of BUILD_WITH added and their parameters). Each type's tests/data/hf/<type>-defaults.json is
written too. The result, forward_fam1.json, is an oracle
independent of flopsreg: tests/hf/test_fam1_forward.py compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_fam1.py
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import torch
import transformers

sys.path.insert(0, str(Path(__file__).parent))
from measure_families import BASE, DERIVED, MOE, SEQ_LENS, class_defaults, measure  # noqa: E402

HERE = Path(__file__).parent

CASES: dict[str, dict] = {
    # layers 0 dense, 1-3 MoE with a shared expert; layers 2 and 3 slide (max_window_layers 2).
    "dots1": {
        "model_type": "dots1", **BASE, **MOE, "num_hidden_layers": 4, "n_routed_experts": 5, "n_shared_experts": 1,
        "first_k_dense_replace": 1, "sliding_window": 7, "max_window_layers": 2, "attention_bias": True,
    },
    "hunyuan_v1_moe": {"model_type": "hunyuan_v1_moe", **BASE, "num_experts": 5, "moe_topk": 2},
    # MLA with odd ranks (key/value heads = heads; head_dim = the rope width, which the rotary
    # embedding of glm4_moe_lite reads); layers 0 and 2 dense, 1 and 3 sparse (mlp_layer_types).
    "glm4_moe_lite": {
        "model_type": "glm4_moe_lite", **BASE, **MOE, "num_hidden_layers": 4, "n_routed_experts": 5, "n_shared_experts": 1,
        "num_key_value_heads": 4, "head_dim": 6, "kv_lora_rank": 18, "q_lora_rank": 22, "qk_rope_head_dim": 6, "qk_nope_head_dim": 10, "v_head_dim": 14,
        "mlp_layer_types": ["dense", "sparse", "dense", "sparse"], "n_group": 1, "topk_group": 1,
    },
    "minicpm3": {
        "model_type": "minicpm3", **BASE, "num_key_value_heads": 4, "head_dim": 6, "kv_lora_rank": 18, "q_lora_rank": 22, "qk_rope_head_dim": 6, "qk_nope_head_dim": 10,
        "v_head_dim": None, "mlp_bias": True,
    },
    "apertus1p5_text": {"model_type": "apertus1p5_text", **BASE},
    # attn_sub_norm is sized hidden_size and normalises the heads' output: hidden 48 = 4 heads x 12.
    "bitnet": {"model_type": "bitnet", **DERIVED, "attention_bias": True},
    # run as DeepseekV3ForCausalLM: a direct q_proj (q_lora_rank null, the class default); layer 0 dense.
    "sarvam_mla": {
        "model_type": "sarvam_mla", **BASE, **MOE, "num_key_value_heads": 4, "head_dim": 6, "kv_lora_rank": 18, "q_lora_rank": None,
        "qk_rope_head_dim": 6, "qk_nope_head_dim": 10, "v_head_dim": 14, "n_routed_experts": 5, "n_shared_experts": 1,
        "first_k_dense_replace": 1, "n_group": 1, "topk_group": 1,
    },
    # run as Glm4MoeForCausalLM, with QK-norm (the class default) and q/k/v biases (use_qkv_bias).
    "sarvam_moe": {
        "model_type": "sarvam_moe", **BASE, **MOE, "n_routed_experts": 5, "n_shared_experts": 1, "first_k_dense_replace": 1,
        "n_group": 1, "topk_group": 1, "use_qkv_bias": True,
    },
    "minicpm3-direct-q": {
        "model_type": "minicpm3", **BASE, "num_key_value_heads": 4, "head_dim": 6, "kv_lora_rank": 18, "q_lora_rank": None, "qk_rope_head_dim": 6, "qk_nope_head_dim": 10,
        "v_head_dim": 14, "tie_word_embeddings": False,
    },
}

# Classes that do not build from their own defaults: the keys they lack, added to the defaults for
# tests/data/hf/<type>-defaults.json (sources in tests/data/hf/SOURCES.md). Hunyuan's head_dim and
# RoPE theta change no count; dots1's expert counts are dots.llm1's.
BUILD_WITH: dict[str, dict] = {
    "dots1": {"n_routed_experts": 128, "n_shared_experts": 2, "num_experts_per_tok": 6},
    "hunyuan_v1_moe": {"head_dim": 128, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}},
}


def defaults_file(model_type: str) -> dict:
    """Write tests/data/hf/<type>-defaults.json (the class defaults as to_dict saves them, with
    BUILD_WITH's keys) and return its config with the parameters of its model on the meta device."""
    config = transformers.AutoConfig.for_model(model_type, **BUILD_WITH.get(model_type, {}))
    saved = config.to_dict()
    path = HERE.parent / "hf" / f"{model_type.replace('_', '-')}-defaults.json"
    path.write_text(json.dumps(saved, indent=2) + "\n")
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    return {"config": json.loads(path.read_text()), "parameters": int(sum(p.numel() for p in model.parameters()))}


def main() -> int:
    warnings.filterwarnings("ignore")
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_lens": list(SEQ_LENS), "models": {}, "defaults": {}, "built_defaults": {}}
    for name, config in CASES.items():
        try:
            results["models"][name] = measure(config)
        except Exception as exc:  # record, so the test knows which models were not measured
            results["models"][name] = {"config": config, "error": f"{type(exc).__name__}: {exc}"}
            print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
    for model_type in sorted({config["model_type"] for config in CASES.values()}):
        results["defaults"][model_type] = class_defaults(model_type)
        if model_type in BUILD_WITH:
            results["built_defaults"][model_type] = defaults_file(model_type)
        else:
            defaults_file(model_type)
    (HERE / "forward_fam1.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
