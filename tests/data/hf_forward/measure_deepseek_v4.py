"""Measure the forward FLOPs of tiny DeepSeek-V4 models (sliding, CSA and HCA layers, mHC, hash
and top-k MoE) with torch's FlopCounterMode, as measure_attention2026.py does for the other 2026
families, whose ``measure`` it reuses; writes forward_deepseek_v4.json.

The pairs recorded per attention call are those its mask lets through over the raw keys and
the compressed entries transformers concatenates after them (the CSA mask carrying the indexer's
top-k). The test is tests/hf/test_deepseek_v4_forward.py.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_deepseek_v4.py
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

# SEQ_LEN (24) tokens: 6 CSA entries of 4 tokens of which index_topk 3 are kept, 3 HCA entries
# of 8 tokens, a window of 8 raw keys.
TINY = {
    "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 16, "q_lora_rank": 24,
    "o_groups": 2, "o_lora_rank": 8, "sliding_window": 8, "index_topk": 3, "index_n_heads": 2, "index_head_dim": 8,
    "hc_mult": 3, "hc_sinkhorn_iters": 3, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
    "vocab_size": 128, "max_position_embeddings": 256, "tie_word_embeddings": False,
}

CASES: dict[str, dict] = {
    "deepseek_v4": {
        "model_type": "deepseek_v4", **TINY, "num_hidden_layers": 4,
        "layer_types": ["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention", "compressed_sparse_attention"],
        "compress_rates": {"compressed_sparse_attention": 4, "heavily_compressed_attention": 8},
        "mlp_layer_types": ["hash_moe", "moe", "moe", "moe"],
    },
    # Without head_dim: DeepseekV4Config's default 512 (the rotary part kept 2 wide, as 1/8 of 16 is
    # above: the default 1/8 of 512 outgrows the indexer's 8).
    "deepseek_v4_head_dim_default": {
        "model_type": "deepseek_v4", **{k: v for k, v in TINY.items() if k != "head_dim"}, "num_hidden_layers": 4,
        "partial_rotary_factor": 2 / 512,
        "layer_types": ["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention", "compressed_sparse_attention"],
        "compress_rates": {"compressed_sparse_attention": 4, "heavily_compressed_attention": 8},
        "mlp_layer_types": ["hash_moe", "moe", "moe", "moe"],
    },
    # As DeepSeek ships it: per-layer compress_ratios (one extra entry for the MTP layer), the
    # class-default rates 4 and 128 (no HCA entry closes in 24 tokens).
    "deepseek_v4_compress_ratios": {
        "model_type": "deepseek_v4", **TINY, "num_hidden_layers": 4, "compress_ratios": [0, 4, 128, 4, 0],
    },
}


def main() -> int:
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_len": SEQ_LEN, "models": {}}
    for name, config in CASES.items():
        results["models"][name] = measure(config)
    (HERE / "forward_deepseek_v4.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
