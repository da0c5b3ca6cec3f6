"""Measure the forward FLOPs of tiny GLM-5.3-Flash models (KDA, NoPE MLA with the k-pool DSA
indexer, shared top-k, mHC, dense and MoE MLPs) with torch's FlopCounterMode, as
measure_attention2026.py does for the other 2026 families, whose ``measure`` it reuses; writes
forward_glm5_next.json.

The pairs recorded per attention call are those its mask lets through: the indexer's selected
pools (plus the tail) of each query. The test is tests/hf/test_glm5_next_forward.py.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_glm5_next.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import transformers

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from measure_attention2026 import SEQ_LEN, measure  # noqa: E402

# SEQ_LEN (24) tokens: 6 pools of 4 keys, index_topk 8 keeps 2 of them, so the top-k bites from
# query 11 on; KDA's chunk (64) pads the 24 tokens.
TINY = {
    "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4, "q_lora_rank": 24, "kv_lora_rank": 16,
    "qk_nope_head_dim": 8, "qk_rope_head_dim": 0, "v_head_dim": 8, "index_topk": 8, "index_kpool": 4,
    "index_n_heads": 2, "index_head_dim": 16, "linear_num_heads": 2, "linear_head_dim": 16, "linear_conv_kernel_dim": 4,
    "hc_mult": 3, "hc_sinkhorn_iters": 3, "intermediate_size": 96, "moe_intermediate_size": 32, "n_routed_experts": 4,
    "num_experts_per_tok": 2, "n_shared_experts": 1, "vocab_size": 128, "max_position_embeddings": 256,
    "pad_token_id": 0,
}
VISION = {
    "model_type": "glm5_next_vision", "depth": 1, "hidden_size": 16, "num_heads": 2, "intermediate_size": 32,
    "out_hidden_size": 64, "projection_intermediate_size": 32, "image_size": 28, "patch_size": 14,
}

CASES: dict[str, dict] = {
    # KDA and indexed layers mixed, a shared top-k after a full indexer layer, dense then MoE.
    "glm5_next": {
        "model_type": "glm5_next", "tie_word_embeddings": False, "vision_config": VISION,
        "text_config": {
            "model_type": "glm5_next_text", **TINY, "num_hidden_layers": 6,
            "layer_types": ["linear_attention", "full_attention", "indexed_attention", "linear_attention", "indexed_attention", "linear_attention"],
            "indexer_types": ["full", "full", "shared", "full", "full", "full"],
            "mlp_layer_types": ["dense", "sparse", "sparse", "dense", "sparse", "sparse"],
        },
    },
    # The class defaults of the layout (KDA iff i % 4 != 3, 3 dense layers), no tail.
    "glm5_next_default_layout": {
        "model_type": "glm5_next", "tie_word_embeddings": False, "vision_config": VISION,
        "text_config": {"model_type": "glm5_next_text", **TINY, "num_hidden_layers": 4, "index_kpool_always_select_tail": False},
    },
}


def main() -> int:
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_len": SEQ_LEN, "models": {}}
    for name, config in CASES.items():
        results["models"][name] = measure(config)
    (HERE / "forward_glm5_next.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
