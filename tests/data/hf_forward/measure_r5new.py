"""Measure tiny forward passes of the 2026 types of brief r5new (issue 21) and the parameters of
each type's class-default config, as measure_fam2026a.py does.

Each case is a tiny config with odd widths (hidden 44, head_dim 12, intermediate 58, vocabulary
97), run on the CPU with eager attention under torch's FlopCounterMode at two lengths; the
class-default config is built on the meta device. Dory's cases also record ``saved``: the config
as ``DoryConfig.to_dict`` writes it to config.json (layer counts doubled, an ``mlp`` entry after
each layer type). The result, forward_r5new.json, comes from torch and transformers alone:
tests/hf/test_r5new_forward.py compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_r5new.py
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import torch
import transformers

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from measure_families import BASE, SEQ_LENS, _jsonable, class_defaults, measure  # noqa: E402

# Dory: 6 layers, 1 input, 3 recurrent (run 3 times), 2 output; layer 3 is full ((i + 1) % 4 == 0),
# the others slide over 7 keys. The unrolled run is 1 + 3 x 3 + 2 = 12 layers.
DORY = {"model_type": "dory", **BASE, "num_hidden_layers": 6, "sliding_window": 7,
        "n_input_layers": 1, "n_output_layers": 2, "n_recurrent_loops": 3}

# HY-V4: MLA with a low-rank query, 6 layers, DSA indexers on layers 0, 1 and 5 (i == 0 or
# (i - 1) % 4 == 0; the others reuse the last top-k), layer 0 dense, then MoE with a shared expert.
HY_V4 = {
    "model_type": "hy_v4", **{k: v for k, v in BASE.items() if k not in ("head_dim", "num_key_value_heads")}, "num_hidden_layers": 6,
    "q_lora_rank": 20, "kv_lora_rank": 16, "qk_rope_head_dim": 4, "qk_nope_head_dim": 8, "v_head_dim": 10,
    "index_n_heads": 3, "index_head_dim": 8, "index_topk": 7, "hc_mult": 3,
    "moe_intermediate_size": 26, "n_routed_experts": 5, "num_experts_per_tok": 2, "n_shared_experts": 1,
}

# A.X K2: MLA whose query and output gate come from one q_gate_proj over [normed latent, latent],
# DSA with an indexer on every layer, gated RMSNorms (low-rank h -> 6 -> h gate); layer 0 dense.
AXK2 = {
    "model_type": "axk2", **{k: v for k, v in BASE.items() if k not in ("head_dim", "num_key_value_heads")}, "num_hidden_layers": 4,
    "num_key_value_heads": 4, "q_lora_rank": 20, "kv_lora_rank": 16, "qk_rope_head_dim": 4, "qk_nope_head_dim": 8, "v_head_dim": 10,
    "index_n_heads": 3, "index_head_dim": 8, "index_topk": 7, "gated_norm_rank": 6,
    "moe_intermediate_size": 26, "n_routed_experts": 5, "num_experts_per_tok": 2, "n_shared_experts": 1,
}

# MiniMax-M3 text: GQA with per-head QK-norm and partial RoPE; layers 0 and 2 block-sparse (an
# indexer of 2 heads scores keys, max-pools them into blocks of 4, keeps the top 2 blocks, the
# query's own block always); layer 0 dense, the others MoE with one shared expert.
MINIMAX_M3 = {
    "model_type": "minimax_m3_vl_text", **BASE, "dense_intermediate_size": 30, "shared_intermediate_size": 22,
    "num_local_experts": 5, "num_experts_per_tok": 2, "rotary_dim": 6,
    "index_n_heads": 2, "index_head_dim": 8, "index_block_size": 4, "index_topk_blocks": 2, "index_local_blocks": 1,
    "layer_types": ["minimax_m3_sparse", "full_attention", "minimax_m3_sparse"], "mlp_layer_types": ["dense", "sparse", "sparse"],
}

CASES: dict[str, dict] = {
    "minimax_m3_vl_text": MINIMAX_M3,
    # Every layer sparse and MoE (the class defaults), blocks of 3, top 3 with 2 local blocks; tied.
    "minimax_m3_vl_text_local": {
        **{k: v for k, v in MINIMAX_M3.items() if k not in ("layer_types", "mlp_layer_types")},
        "layer_types": ["minimax_m3_sparse"] * 3, "index_block_size": 3, "index_topk_blocks": 3, "index_local_blocks": 2,
        "tie_word_embeddings": True,
    },
    "axk2": AXK2,
    # AXK2Config pops first_k_dense_replace 2 and moe_layer_freq 1: layers 2 and 3 MoE; two shared experts, tied.
    "axk2_freq": {**AXK2, "first_k_dense_replace": 2, "n_shared_experts": 2, "tie_word_embeddings": True},
    "hy_v4": HY_V4,
    # Lists given: indexers on layers 0 and 2, layers 0 and 3 dense; two shared experts; tied.
    "hy_v4_lists": {
        **HY_V4, "n_shared_experts": 2, "tie_word_embeddings": True, "hc_mult": 2,
        "indexer_types": ["full", "shared", "full", "shared", "shared", "shared"],
        "mlp_layer_types": ["dense", "sparse", "sparse", "dense", "sparse", "sparse"],
    },
    "dory": DORY,
    # AFMoE's attention_bias (q, k, v and o_proj; not gate_proj) and LlamaMLP's mlp_bias.
    "dory_biases": {**DORY, "attention_bias": True, "mlp_bias": True},
    # layer_types given, recurrent layers given, one loop, tied embeddings.
    "dory_tied_one_loop": {
        **DORY, "n_recurrent_loops": 1, "n_recurrent_layers": 2, "n_output_layers": 3, "tie_word_embeddings": True,
        "layer_types": ["full_attention", "sliding_attention", "full_attention", "sliding_attention", "sliding_attention", "full_attention"],
    },
}


def _saved(config: dict) -> dict:
    """The config as config.json holds it (to_dict), JSON values only."""
    hf_config = transformers.AutoConfig.for_model(config["model_type"], **{k: v for k, v in config.items() if k != "model_type"})
    return {k: v for k, v in hf_config.to_dict().items() if _jsonable(v)}


def main() -> int:
    warnings.filterwarnings("ignore")
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_lens": list(SEQ_LENS), "models": {}, "defaults": {}}
    only = set(sys.argv[1:])
    path = HERE / "forward_r5new.json"
    if only and path.exists():  # re-measure some cases, keep the others
        results = json.loads(path.read_text())
    for name, config in CASES.items():
        if only and name not in only:
            continue
        try:
            results["models"][name] = {**measure(config), "saved": _saved(config)}
        except Exception as exc:  # record, so the test knows which models were not measured
            results["models"][name] = {"config": config, "error": f"{type(exc).__name__}: {exc}"}
            print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        results["defaults"][config["model_type"]] = class_defaults(config["model_type"])
    path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
