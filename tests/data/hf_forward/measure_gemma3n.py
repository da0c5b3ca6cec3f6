"""Measure the forward FLOPs of a tiny Gemma 3n text model (sliding and full layers, KV sharing,
AltUp, LAuReL, per-layer embeddings, per-layer MLP widths, activation sparsity) with torch's
FlopCounterMode, reusing measure_attention2026.py's ``measure``; writes forward_gemma3n.json,
which tests/hf/test_gemma3n_forward.py compares flopsreg with.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_gemma3n.py
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

CASES: dict[str, dict] = {
    # Layer 4 full, the others sliding; layers 5 and 6 reuse layer 3's keys and values; 3 AltUp
    # copies; the Gaussian top-k activation sparsity on the first two MLPs.
    "gemma3n_text": {
        "model_type": "gemma3n_text", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "intermediate_size": [96, 96, 128, 96, 96, 128, 96], "num_hidden_layers": 7, "sliding_window": 8,
        "num_kv_shared_layers": 2, "hidden_size_per_layer_input": 8, "vocab_size_per_layer_input": 96, "vocab_size": 128,
        "altup_num_inputs": 3, "laurel_rank": 4, "activation_sparsity_pattern": [0.95, 0.95, 0.0, 0.0, 0.0, 0.0, 0.0],
        "max_position_embeddings": 256,
    },
}


def main() -> int:
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_len": SEQ_LEN, "models": {}}
    for name, config in CASES.items():
        results["models"][name] = measure(config)
    (HERE / "forward_gemma3n.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
