"""Measure the forward FLOPs of tiny Qwen4-Exp text decoders (Gated DeltaNet, gated attention with
the QSA block indexer, low-rank gated residuals over hc_count streams, n-gram PLE, MoE) with
torch's FlopCounterMode, through measure_attention2026.py's ``measure``; writes forward_qwen4exp.json.

The pairs recorded per attention call are those its mask lets through: the blocks the QSA indexer
selected plus each query's tail. The test is tests/hf/test_qwen4exp_forward.py.

The class defaults do not build (Qwen4ExpTextConfig() leaves the indexer_* fields null, and
Qwen4ExpTextAttention cannot build its indexer without them), so only tiny configs are recorded.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_qwen4exp.py
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

# SEQ_LEN (24) tokens: blocks of 4 keys, budget 8 keeps 2 of them, so the selection bites from
# query 11 on; Gated DeltaNet's chunk (64) pads the 24 tokens.
TINY = {
    "model_type": "qwen4_exp_text", "hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 16, "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8,
    "linear_value_head_dim": 8, "linear_conv_kernel_dim": 4, "moe_intermediate_size": 24,
    "shared_expert_intermediate_size": 40, "num_experts": 4, "num_experts_per_tok": 2, "vocab_size": 128,
    "max_position_embeddings": 256, "eos_token_id": 1, "tie_word_embeddings": False,
}
QSA = {"indexer_n_heads": 2, "indexer_kv_heads": 1, "indexer_head_dim": 16, "indexer_budget": 8, "indexer_compress_ratio": 4}
PLE = {"ngram_vocab_size_base": 1000, "make_ngram_vocab_size_divisible_by": 64}

CASES: dict[str, dict] = {
    # The default layout (indexed every 4th layer), QSA, PLE on three linear layers, 3 streams.
    "qsa_ple": {**TINY, **QSA, **PLE, "num_hidden_layers": 5, "hc_count": 3, "hc_lowrank": 8, "ple_layer_ids": [1, 3, 5]},
    # layer_types with "full_attention" (read as indexed_attention), 2 streams, no PLE, a narrower PLE-less model.
    "qsa_no_ple": {
        **TINY, **QSA, "num_hidden_layers": 4, "hc_count": 2, "hc_lowrank": 6, "indexer_budget": 4,
        "layer_types": ["linear_attention", "full_attention", "linear_attention", "indexed_attention"],
    },
    # No indexer fields: only linear_attention layers (an indexed one could not be built); 4-grams, 2
    # heads each. use_cache false: transformers' cache of only linear layers cannot give its length.
    "linear_ple": {
        **TINY, **PLE, "use_cache": False, "num_hidden_layers": 3, "hc_count": 2, "hc_lowrank": 4, "layer_types": ["linear_attention"] * 3,
        "ple_layer_ids": [2], "ngram_size": 4, "heads_per_ngram": 2, "ple_embed_dim": 24, "ple_conv_kernel_size": 3,
    },
}


def main() -> int:
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_len": SEQ_LEN, "models": {}}
    for name, config in CASES.items():
        results["models"][name] = measure(config)
    (HERE / "forward_qwen4exp.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
