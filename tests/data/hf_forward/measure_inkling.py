"""Measure tiny forward passes of inkling_text (Inkling's text decoder), and the parameters of its
class-default config: forward_inkling.json.

Each case is a tiny config with odd widths (hidden 44, head_dim 12, sliding head_dim 10, vocabulary
97), run through transformers 5.24 on the CPU with eager attention and eager experts under torch's
FlopCounterMode at two lengths, recorded as measure_families.py records (whose functions this script
reuses). The class-default config is recorded with the parameters of its model built on the meta
device, and saved as tests/data/hf/inkling-text-defaults.json. tests/hf/test_inkling_forward.py
compares flopsreg with the record.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_inkling.py
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
    "model_type": "inkling_text", "hidden_size": 44, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
    "swa_num_attention_heads": 6, "swa_num_key_value_heads": 3, "swa_head_dim": 10, "sliding_window_size": 7,
    "d_rel": 5, "rel_extent": 9, "conv_kernel_size": 3, "intermediate_size": 58, "moe_intermediate_size": 26,
    "n_routed_experts": 5, "num_experts_per_tok": 2, "n_shared_experts": 2, "vocab_size": 97, "num_hidden_layers": 3,
    "max_position_embeddings": 128, "pad_token_id": 0,
}

CASES: dict[str, dict] = {
    # Full, sliding, full attention; a dense MLP on layer 0, MoE with two shared experts after.
    "inkling_text": {**BASE, "layer_types": ["hybrid", "hybrid_sliding", "hybrid"], "mlp_layer_types": ["dense", "sparse", "sparse"]},
    # The class's default layer rule (every sixth layer full: layers 0-4 sliding, 5 full, 6 sliding),
    # every layer MoE (mlp_layer_types default), one shared expert, logarithmic logit scaling.
    "inkling_text_rule": {
        **BASE, "num_hidden_layers": 7, "n_shared_experts": 1, "log_scaling_n_floor": 4,
        "num_mtp_layers": 1, "unpadded_vocab_size": 90,
    },
}


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
            results["defaults"][config["model_type"]] = class_defaults(config["model_type"])
    (HERE / "forward_inkling.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    for model_type, entry in results["defaults"].items():  # the class-default configs, as tests/data/hf files
        path = HERE.parent / "hf" / f"{model_type.replace('_', '-')}-defaults.json"
        path.write_text(json.dumps(entry["config"], indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
