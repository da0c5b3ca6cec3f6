"""Measure tiny forward passes of ``dots3_note_text`` in
transformers 5.24 and the parameters of the class-default config, as measure_fam2026a.py does.

Each case: odd widths, 6 layers (Dots3NoteTextConfig's rule: layers 0, 1, 5 indexed, 2-4 sliding),
the sliding layers' MLA widths from the swa_* keys the config pops into ``per_layer_config``, or
from a canonical ``per_layer_config``; index_topk above both lengths. The result, forward_dots3.json,
comes from torch and transformers alone: tests/hf/test_dots3_forward.py compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_dots3.py
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
from measure_families import SEQ_LENS, measure  # noqa: E402

TEXT = {
    "hidden_size": 44, "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 12, "vocab_size": 97,
    "num_hidden_layers": 6, "max_position_embeddings": 128, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
    "q_lora_rank": 20, "kv_lora_rank": 16, "qk_rope_head_dim": 4, "qk_nope_head_dim": 8, "v_head_dim": 10,
    "intermediate_size": 58, "moe_intermediate_size": 26, "n_routed_experts": 8, "num_experts_per_tok": 2,
    "n_shared_experts": 1, "shared_experts_intermediate_size": 30, "index_n_heads": 3, "index_head_dim": 8, "index_topk": 64,
    "sliding_window": 7,
}
SWA = {
    "swa_num_attention_heads": 2, "swa_num_key_value_heads": 2, "swa_q_lora_rank": 18, "swa_kv_lora_rank": 14,
    "swa_head_dim": 14, "swa_qk_nope_head_dim": 10, "swa_v_head_dim": 6,
}
PER_LAYER = {
    "num_attention_heads": 2, "num_key_value_heads": 2, "q_lora_rank": 18, "kv_lora_rank": 14,
    "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 6,
}

CASES: dict[str, dict] = {
    "dots3_note_text": {"model_type": "dots3_note_text", **TEXT, **SWA},
    # canonical per_layer_config; two shared experts; first two layers dense
    "dots3_note_text_per_layer": {
        "model_type": "dots3_note_text", **TEXT, "n_shared_experts": 2, "first_k_dense_replace": 2,
        "per_layer_config": {str(i): PER_LAYER for i in (2, 3, 4)}, "tie_word_embeddings": True,
    },
    # use_dsa false: the indexed layers are plain full MLA (no indexer); 5 layers, moe_layer_freq 2
    "dots3_note_text_no_dsa": {"model_type": "dots3_note_text", **TEXT, **SWA, "num_hidden_layers": 5, "use_dsa": False, "moe_layer_freq": 2},
    # the released swa_* defaults (64 heads, ...): no swa_* given
    "dots3_note_text_swa_defaults": {"model_type": "dots3_note_text", **TEXT, "hidden_size": 40},
}


def class_defaults(model_type: str) -> dict:
    """The class-default config as a config.json holds it (its per_layer_config too), and the parameters of its model (meta device)."""
    config = transformers.AutoConfig.for_model(model_type)
    # per_layer_config kept (as to_dict writes it: only what differs from the globals), rope_parameters not
    saved = {k: v for k, v in config.to_dict().items() if isinstance(v, (int, float, str, bool, list, type(None))) or k == "per_layer_config"}
    try:
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(config)
        return {"config": saved, "parameters": int(sum(p.numel() for p in model.parameters()))}
    except Exception as exc:  # recorded, not guessed
        return {"config": saved, "error": f"{type(exc).__name__}: {exc}"}


def main() -> int:
    warnings.filterwarnings("ignore")
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_lens": list(SEQ_LENS), "models": {}, "defaults": {}}
    for name, config in CASES.items():
        try:
            results["models"][name] = measure(config)
        except Exception as exc:  # record, so the test knows which models were not measured
            results["models"][name] = {"config": config, "error": f"{type(exc).__name__}: {exc}"}
            print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
    results["defaults"]["dots3_note_text"] = class_defaults("dots3_note_text")
    (HERE / "forward_dots3.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
