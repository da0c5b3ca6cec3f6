"""Measure tiny forward passes of 2026 model types of transformers 5.24 (brief fam2026a) and the
parameters of each type's class-default config, as measure_families.py does for the older families.

Each case is a tiny config with odd widths (hidden 44, head_dim 12, intermediate 58, vocabulary
97), run on the CPU with eager attention and eager experts under torch's FlopCounterMode at two
lengths; the class-default config is built on the meta device. The result, forward_fam2026a.json,
comes from torch and transformers alone: tests/hf/test_fam2026a_forward.py compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_fam2026a.py
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
from measure_families import BASE, SEQ_LENS, WINDOWED, _jsonable, measure  # noqa: E402

MOE = {"moe_intermediate_size": 26, "num_experts_per_tok": 2}
ROPE = {"rope_type": "default", "rope_theta": 10000.0}
# Classes that do not build from their own defaults: what their class-default config needs added
# (no count depends on it). CohereCompassTextConfig keeps RoPE per layer type and has none by default.
ADDED_TO_DEFAULTS = {"cohere_compass_text": {"rope_parameters": {"full_attention": ROPE}}}

CASES: dict[str, dict] = {
    "hyperclovax": {"model_type": "hyperclovax", **BASE, "attention_bias": True, "mlp_bias": True},
    "hyperclovax_no_post_norm": {"model_type": "hyperclovax", **BASE, "use_post_norm": False},
    "jais2": {"model_type": "jais2", **BASE},
    "jais2_no_bias": {"model_type": "jais2", **BASE, "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": True},
    # Kolibri1Config has no intermediate_size (every layer routes to experts).
    "kolibri1": {
        "model_type": "kolibri1", **{k: v for k, v in WINDOWED.items() if k != "intermediate_size"}, **MOE,
        "num_experts": 5, "shared_expert_intermediate_size": 30,
    },
    # 6 layers: 0, 1, 5 (i < 2 or i % 4 == 1 or last) full; 0 and 1 dense (mlp_only_layers).
    "flint": {
        "model_type": "flint", **WINDOWED, "num_hidden_layers": 6, **MOE, "num_experts": 5,
        "shared_expert_intermediate_size": 30, "attention_bias": True,
    },
    "hy_v3": {"model_type": "hy_v3", **BASE, **MOE, "num_experts": 5, "num_shared_experts": 2, "attention_bias": True},
    # 7 layers: 5 and 6 full ((i + 1) % 6 == 0, and the last), the others sliding; 0-2 dense.
    # Group-limited routing: n_group divides the 8 experts.
    "beam": {
        "model_type": "beam", **WINDOWED, "num_hidden_layers": 7, **MOE, "num_experts": 8, "n_group": 2, "topk_group": 1,
        "attention_bias": True,
    },
    # Cohere 2's parallel block; layer_types default all full (here given: the middle layer slides).
    "cohere_compass_text": {"model_type": "cohere_compass_text", **BASE, "rope_parameters": {"full_attention": ROPE}},
    "cohere_compass_text_sliding": {
        "model_type": "cohere_compass_text", **BASE, "sliding_window": 7, "rope_parameters": {"full_attention": ROPE, "sliding_attention": None},
        "layer_types": ["full_attention", "sliding_attention", "full_attention"],
    },
    # MLA (always a low-rank query), an RMSNorm after each MoE block; AXK1Config pops
    # first_k_dense_replace and moe_layer_freq into mlp_layer_types: layers 1-3 MoE, then with
    # moe_layer_freq 2 layer 2 alone (i >= 1 and i % 2 == 0).
    "axk1": {
        "model_type": "axk1", **{k: v for k, v in BASE.items() if k != "head_dim"}, "num_hidden_layers": 4, "num_key_value_heads": 4,
        "q_lora_rank": 20, "kv_lora_rank": 16, "qk_rope_head_dim": 4, "qk_nope_head_dim": 8, "v_head_dim": 10,
        **MOE, "n_routed_experts": 8, "n_shared_experts": 1, "n_group": 2, "topk_group": 1, "first_k_dense_replace": 1,
    },
    "axk1_freq": {
        "model_type": "axk1", **{k: v for k, v in BASE.items() if k != "head_dim"}, "num_hidden_layers": 4, "num_key_value_heads": 4,
        "q_lora_rank": 20, "kv_lora_rank": 16, "qk_rope_head_dim": 4, "qk_nope_head_dim": 8, "v_head_dim": 10,
        **MOE, "n_routed_experts": 8, "n_shared_experts": 2, "n_group": 2, "topk_group": 1, "first_k_dense_replace": 1,
        "moe_layer_freq": 2, "tie_word_embeddings": True,
    },
}


def class_defaults(model_type: str) -> dict:
    """The class-default config (plus ADDED_TO_DEFAULTS) as a config.json holds it, and the parameters of its model (meta device)."""
    config = transformers.AutoConfig.for_model(model_type, **ADDED_TO_DEFAULTS.get(model_type, {}))
    saved = {k: v for k, v in config.to_dict().items() if _jsonable(v)}
    try:
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(config)
        return {"config": saved, "parameters": int(sum(p.numel() for p in model.parameters()))}
    except Exception as exc:  # recorded, not guessed
        return {"config": saved, "error": f"{type(exc).__name__}: {exc}"}


def main() -> int:
    warnings.filterwarnings("ignore")
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_lens": list(SEQ_LENS), "models": {}, "defaults": {}}
    only = set(sys.argv[1:])
    path = HERE / "forward_fam2026a.json"
    if only and path.exists():  # re-measure some cases, keep the others
        results = json.loads(path.read_text())
    for name, config in CASES.items():
        if only and name not in only:
            continue
        try:
            results["models"][name] = measure(config)
        except Exception as exc:  # record, so the test knows which models were not measured
            results["models"][name] = {"config": config, "error": f"{type(exc).__name__}: {exc}"}
            print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        results["defaults"][config["model_type"]] = class_defaults(config["model_type"])
    path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
