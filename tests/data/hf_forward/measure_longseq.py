"""Measure tiny forward passes of the model types whose layers run over another length than the
input (brief longseq: cpmant's prepended prompt, reformer's
padding to a multiple of its chunk length), and the parameters of each type's class-default
config, as measure_families.py does.

Each case is a tiny config with odd widths, run on the CPU with eager attention under torch's
FlopCounterMode at two lengths; the class-default config is built on the meta device. The result,
forward_longseq.json, comes from torch and transformers alone: tests/hf/test_longseq_forward.py
compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_longseq.py
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
from measure_families import SEQ_LENS, class_defaults, measure  # noqa: E402

# CpmAntConfig: dim_head 12 is not hidden / heads (11); dim_ff the MLP width.
CPMANT = {
    "model_type": "cpmant", "hidden_size": 44, "num_attention_heads": 4, "dim_head": 12, "dim_ff": 58, "vocab_size": 97,
    "num_hidden_layers": 3, "prompt_types": 3, "prompt_length": 5, "segment_types": 4, "position_bias_num_buckets": 16,
    "position_bias_max_distance": 40,
}
# ReformerConfig with local attention only (an lsh layer is refused): chunks of 8, so the shorter
# length (13) is padded to 16 and the longer (24) is not; axial position embeddings of 4 x 8
# positions whose widths add up to hidden.
REFORMER = {
    "model_type": "reformer", "hidden_size": 44, "num_attention_heads": 4, "attention_head_size": 12, "feed_forward_size": 58,
    "vocab_size": 97, "attn_layers": ["local", "local", "local"], "local_attn_chunk_length": 8, "local_num_chunks_before": 1,
    "local_num_chunks_after": 0, "is_decoder": True, "axial_pos_shape": [4, 8], "axial_pos_embds_dim": [20, 24],
    "max_position_embeddings": 32,
}
CASES: dict[str, dict] = {
    "cpmant": CPMANT,
    "cpmant_no_prompt": {**CPMANT, "prompt_length": 0, "num_hidden_layers": 2},
    "reformer": REFORMER,
    # two chunks back, learned positions, GELU
    "reformer_wide": {
        **REFORMER, "attn_layers": ["local", "local"], "local_num_chunks_before": 2,
        "axial_pos_embds": False, "hidden_act": "gelu",
    },
}


# ReformerConfig's defaults have lsh layers and is_decoder false, which ReformerModelWithLMHead
# refuses: the class defaults with these keys changed are built instead ("built_defaults").
BUILD_WITH = {"reformer": {"attn_layers": ["local"] * 6, "is_decoder": True}}


def main() -> int:
    warnings.filterwarnings("ignore")
    results = {
        "torch": torch.__version__, "transformers": transformers.__version__, "seq_lens": list(SEQ_LENS), "models": {}, "defaults": {},
        "built_defaults": {},
    }
    for name, config in CASES.items():
        try:
            results["models"][name] = measure(config)
        except Exception as exc:  # record, so the test knows which models were not measured
            results["models"][name] = {"config": config, "error": f"{type(exc).__name__}: {exc}"}
            print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        results["defaults"][config["model_type"]] = class_defaults(config["model_type"])
    for model_type, keys in BUILD_WITH.items():
        results["built_defaults"][model_type] = class_defaults(model_type, **keys)
    for model_type in results["defaults"]:  # the config each type's class-default parameters are checked on
        entry = results["built_defaults"].get(model_type, results["defaults"][model_type])
        (HERE.parent / "hf" / f"{model_type.replace('_', '-')}-defaults.json").write_text(json.dumps(entry["config"], indent=2, sort_keys=True) + "\n")
    (HERE / "forward_longseq.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
