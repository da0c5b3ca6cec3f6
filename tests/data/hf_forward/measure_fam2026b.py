"""Measure tiny forward passes of the 2026 families of brief fam2026b (laguna, ...), and the
parameters of every type's class-default config: forward_fam2026b.json.

Each case is a tiny config with odd widths (hidden 44, head_dim 12, vocabulary 97), run through
transformers 5.24 on the CPU with eager attention and eager experts under torch's
FlopCounterMode at two lengths, with the same recording as measure_families.py (totals, FLOPs per
module, the pairs each attention mask let through, parameters of the model and of each module),
whose functions this script reuses. The class-default config of each type is recorded with the
parameters of its model built on the meta device, and saved as tests/data/hf/<type>-defaults.json. tests/hf/test_fam2026b_forward.py compares
flopsreg with the record.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_fam2026b.py
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import torch
import transformers
from measure_families import SEQ_LENS, class_defaults, measure

HERE = Path(__file__).parent

BASE = {
    "hidden_size": 44, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
    "intermediate_size": 58, "vocab_size": 97, "num_hidden_layers": 3, "max_position_embeddings": 128, "pad_token_id": 0,
}
MOE = {"moe_intermediate_size": 26, "num_experts_per_tok": 2}

CASES: dict[str, dict] = {
    # Heads per layer 4, 6, 4 (the kinds differ by head count), a sliding layer, a per-head gate,
    # dense layer 0 then MoE with a shared expert.
    "laguna": {
        "model_type": "laguna", **BASE, **MOE, "num_experts": 5, "shared_expert_intermediate_size": 30, "sliding_window": 7,
        "num_attention_heads_per_layer": [4, 6, 4], "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
    },
    # A per-channel gate, attention biases, MoE on layers 0 and 2 only.
    "laguna_per_element": {
        "model_type": "laguna", **BASE, **MOE, "num_experts": 5, "shared_expert_intermediate_size": 30,
        "gating": "per-element", "attention_bias": True, "mlp_layer_types": ["sparse", "dense", "sparse"],
    },
    # Gated DeltaNet (2 key heads of 10, 4 value heads of 14: Hv = 2 Hk) on layers 0 and 2,
    # sliding on 1 and 4, full (NoPE) on 3; MoE with an ungated shared expert on every layer.
    "lara_mini": {
        "model_type": "lara_mini", **BASE, **MOE, "num_hidden_layers": 5, "num_experts": 5, "shared_expert_intermediate_size": 30,
        "sliding_window": 7, "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 10,
        "linear_value_head_dim": 14, "linear_conv_kernel_dim": 3, "tie_word_embeddings": False,
    },
    # hidden 48 / 4 heads = head_dim 12 (Lfm2MoeConfig has no head_dim field); conv and attention
    # alternating, layer 0 dense, layers 1-3 routed.
    "lfm2_moe": {
        "model_type": "lfm2_moe", **{k: v for k, v in BASE.items() if k != "head_dim"}, **MOE, "hidden_size": 48, "num_hidden_layers": 4,
        "layer_types": ["conv", "full_attention", "conv", "full_attention"], "num_dense_layers": 1, "num_experts": 5, "conv_L_cache": 3,
    },
    # Conv (kernel 5), sliding, full, conv: the gate per head and sandwich norms (the defaults).
    "lfm3": {
        "model_type": "lfm3", **BASE, "num_hidden_layers": 4, "sliding_window": 7, "conv_L_cache": 5,
        "layer_types": ["conv", "sliding_attention", "full_attention", "conv"], "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
    },
    # The class's default layer rule (layer 0 conv, 2 full, 4 sliding), no gate, no sandwich norms.
    "lfm3_plain": {
        "model_type": "lfm3", **BASE, "num_hidden_layers": 5, "sliding_window": 7, "use_attention_gate": False,
        "use_sandwich_norm": False, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
    },
    # MLA with a low-rank query (q_lora_rank 18), odd latent widths; and with a direct q_proj.
    "youtu": {
        "model_type": "youtu", **{k: v for k, v in BASE.items() if k not in ("head_dim", "num_key_value_heads")}, "num_key_value_heads": 4,
        "kv_lora_rank": 14, "q_lora_rank": 18, "qk_rope_head_dim": 6, "qk_nope_head_dim": 10, "v_head_dim": 12,
    },
    "youtu_q_proj": {
        "model_type": "youtu", **{k: v for k, v in BASE.items() if k not in ("head_dim", "num_key_value_heads")}, "num_key_value_heads": 4,
        "kv_lora_rank": 14, "q_lora_rank": None, "qk_rope_head_dim": 6, "qk_nope_head_dim": 10, "v_head_dim": 12, "tie_word_embeddings": False,
    },
    # KDA (4 heads of head_dim 12, kernel 3) on layers 0, 1, 3, MLA with a gate per head on 2; layer
    # 0 dense, 1-3 routed to 8 experts in 2 groups with a shared expert.
    "bailing_hybrid": {
        "model_type": "bailing_hybrid", **BASE, **MOE, "num_key_value_heads": 4, "num_hidden_layers": 4,
        "layer_types": ["linear_attention", "linear_attention", "full_attention", "linear_attention"], "first_k_dense_replace": 1,
        "num_experts": 8, "n_group": 2, "topk_group": 1, "n_shared_experts": 1, "kv_lora_rank": 14, "q_lora_rank": 18,
        "qk_rope_head_dim": 6, "qk_nope_head_dim": 10, "v_head_dim": 12, "short_conv_kernel_size": 3, "pad_token_id": 0, "eos_token_id": 2,
    },
}

# Keys a class-default config needs to build at all, added to the defaults (named in tests/data/hf/SOURCES.md).
# Lfm2MoeConfig leaves layer_types None: a layout chosen here (attention on every fourth layer from
# layer 2, short convs elsewhere), not a published one.
DEFAULTS_ADDED = {"lfm2_moe": {"layer_types": ["full_attention" if i % 4 == 2 else "conv" for i in range(32)]}}

# Keys whose saved value is not the one the class built the model from, written as the class read them.
# BailingHybridConfig.__post_init__ takes head_dim (128) as the KDA head width, then sets head_dim to
# qk_rope_head_dim (64), which to_dict saves; loading that file again would make the KDA heads 64 wide.
SAVED_AS = {"bailing_hybrid": {"head_dim": 128}}


def main() -> int:
    warnings.filterwarnings("ignore")
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_lens": list(SEQ_LENS), "models": {}, "defaults": {}}
    for name, config in CASES.items():
        try:
            results["models"][name] = measure(config)
        except Exception as exc:  # record, so the test knows which models were not measured
            results["models"][name] = {"config": config, "error": f"{type(exc).__name__}: {exc}"}
            print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        if config["model_type"] not in results["defaults"]:
            results["defaults"][config["model_type"]] = class_defaults(config["model_type"], **DEFAULTS_ADDED.get(config["model_type"], {}))
            results["defaults"][config["model_type"]]["config"].update(SAVED_AS.get(config["model_type"], {}))
    (HERE / "forward_fam2026b.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    for model_type, entry in results["defaults"].items():  # the class-default configs, as tests/data/hf files
        path = HERE.parent / "hf" / f"{model_type.replace('_', '-')}-defaults.json"
        path.write_text(json.dumps(entry["config"], indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
