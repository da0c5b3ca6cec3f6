"""Measure tiny forward passes of the mixture-of-experts types read this session (brief r-moe:
cohere2_moe, dbrx, afmoe, ...) and the parameters of each type's class-default config, as
measure_fam2026a.py does.

Each case is a tiny config with odd widths (hidden 44, head_dim 12, intermediate 58, vocabulary
97), run on the CPU with eager attention and eager experts under torch's FlopCounterMode at two
lengths; the class-default config is built on the meta device. The result, forward_r5moe.json,
comes from torch and transformers alone: tests/hf/test_r5moe_forward.py compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_r5moe.py [case ...]
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
import measure_families  # noqa: E402
from measure_families import BASE, SEQ_LENS, WINDOWED, class_defaults, measure  # noqa: E402

MOE = {"moe_intermediate_size": 26, "num_experts_per_tok": 2}
# Classes that do not build from their own defaults: what their class-default config needs added
# (no count depends on it). DbrxAttention reads attn_config.rope_theta, which DbrxAttentionConfig
# does not define (a real config.json gives it).
# LongcatFlashConfig defaults to 256 zero-computation experts, whose FLOPs flopsreg refuses to guess:
# its class defaults are recorded with zero_expert_num 0 (the parameters then match what flopsreg reads).
ADDED_TO_DEFAULTS = {"dbrx": {"attn_config": {"rope_theta": 10000.0}}, "longcat_flash": {"zero_expert_num": 0}}

CASES: dict[str, dict] = {
    # 5 layers: 0 and 1 dense (first_k_dense_replace, popped into mlp_layer_types) of
    # prefix_dense_intermediate_size and full (prefix pattern 1); 2-4 sliding MoE with a shared expert.
    "cohere2_moe": {
        "model_type": "cohere2_moe", **WINDOWED, "num_experts": 5, "num_experts_per_tok": 2, "num_shared_experts": 1,
        "first_k_dense_replace": 2, "prefix_dense_intermediate_size": 30, "attention_bias": True,
    },
    # No dense prefix, no shared experts, the given layer_types, sigmoid routing, RMSNorms.
    "cohere2_moe_plain": {
        "model_type": "cohere2_moe", **BASE, "num_experts": 5, "num_experts_per_tok": 2, "rms_norm_eps": 1e-5,
        "expert_selection_fn": "sigmoid", "sliding_window": 7, "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
    },
    # d_model 48: DbrxAttention derives head_dim = d_model / n_heads (12; an odd one breaks RoPE).
    "dbrx": {
        "model_type": "dbrx", "d_model": 48, "n_heads": 4, "n_layers": 3, "max_seq_len": 128, "vocab_size": 97, "pad_token_id": 0,
        "attn_config": {"kv_n_heads": 2, "clip_qkv": 8.0, "rope_theta": 10000.0}, "ffn_config": {"moe_num_experts": 5, "moe_top_k": 2, "ffn_hidden_size": 26},
    },
    # 5 layers: layer 3 full ((i + 1) % 4 == 0), the others sliding; layers 0 and 1 dense.
    "afmoe": {
        "model_type": "afmoe", **WINDOWED, **MOE, "num_experts": 5, "num_shared_experts": 2, "num_dense_layers": 2,
        "attention_bias": True, "mup_enabled": True,
    },
    # num_attention_heads = 2 x 2 (JetMoeConfig derives it; the 7 here is overwritten); kv_channels is head_dim.
    "jetmoe": {
        "model_type": "jetmoe", "hidden_size": 44, "num_attention_heads": 7, "num_key_value_heads": 2, "kv_channels": 12,
        "intermediate_size": 26, "vocab_size": 97, "num_hidden_layers": 3, "max_position_embeddings": 128, "pad_token_id": 0,
        "num_local_experts": 5, "num_experts_per_tok": 2,
    },
    "jetmoe_untied": {
        "model_type": "jetmoe", "hidden_size": 44, "num_key_value_heads": 1, "kv_channels": 12, "intermediate_size": 26,
        "vocab_size": 97, "num_hidden_layers": 2, "max_position_embeddings": 128, "pad_token_id": 0, "num_local_experts": 4,
        "num_experts_per_tok": 3, "tie_word_embeddings": False, "activation_function": "gelu",
    },
    # 2 layers of 2 sublayers each (MLA, dense MLP; the first also the shortcut MoE); no zero-computation experts.
    "longcat_flash": {
        "model_type": "longcat_flash", "hidden_size": 44, "num_attention_heads": 4, "num_layers": 2, "vocab_size": 97,
        "max_position_embeddings": 128, "pad_token_id": 0, "ffn_hidden_size": 58, "expert_ffn_hidden_size": 26,
        "n_routed_experts": 5, "moe_topk": 2, "zero_expert_num": 0, "q_lora_rank": 20, "kv_lora_rank": 16,
        "qk_rope_head_dim": 4, "qk_nope_head_dim": 8, "v_head_dim": 10, "head_dim": 4,  # head_dim: the RoPE width
    },
    # 7 layers: 0 and 5 full ((i + 1) % 6 == 0), the others sliding with 2 key/value heads and sinks; layer 0
    # dense; values of 10 beside queries and keys of 12.
    "mimo_v2_flash": {
        "model_type": "mimo_v2_flash", **BASE, "num_hidden_layers": 7, "num_key_value_heads": 1, "v_head_dim": 10,
        "sliding_window": 7, **MOE, "n_routed_experts": 5, "attention_bias": True,
    },
    # A hub config's sliding_window_size (the class adds 1), the given layer and MLP types.
    "mimo_v2_flash_listed": {
        "model_type": "mimo_v2_flash", **BASE, "v_head_dim": 16, "sliding_window_size": 5, **MOE, "n_routed_experts": 4,
        "layer_types": ["sliding_attention", "full_attention", "sliding_attention"], "mlp_layer_types": ["sparse", "dense", "sparse"],
    },
    # Dynamic mask attention keeps keep_window_size 7 keys per query of 13 and 24 (the rectangle is still computed).
    "doge": {"model_type": "doge", **BASE, "keep_window_size": 7},
    # The cross-domain MoE (30 experts: 5 product keys a half, top 3), biases, a sliding window of 5 inside which the top 7 keep all.
    "doge_moe": {
        "model_type": "doge", **BASE, "keep_window_size": 7, "sliding_window": 5, "is_moe": True, "num_experts": 30,
        "num_experts_per_tok": 3, "attention_bias": True, "mlp_bias": True,
    },
}


# DbrxExperts slices each expert's weights out of a Parameter inside the forward: under no_grad
# those views still require grad but have no grad function, which FlopCounterMode's module tracker
# rejects. Its model is measured with requires_grad off (no count or parameter changes).
FROZEN = {"dbrx"}


def _dynamic_pair_recorder(pairs: list[tuple[int, int]]):
    """measure_families._pair_recorder for Doge: its eager attention gets the dynamic mask (the
    learned importances where a key is kept, the dtype's minimum where it is masked), not 0/-inf."""

    def wrap(function):
        def recorded(module, query, key, value, attention_mask, *args, **kwargs):
            mask = attention_mask[0, 0, :, : key.shape[-2]]
            pairs.append((module.layer_idx, int((mask > torch.finfo(mask.dtype).min).sum())))
            return function(module, query, key, value, attention_mask, *args, **kwargs)

        return recorded

    return wrap


def _measure(name: str, config: dict) -> dict:
    """measure_families.measure, with the model's parameters frozen for the cases of FROZEN and
    Doge's pairs counted from its dynamic mask."""
    if config["model_type"] == "doge":
        recorder = measure_families._pair_recorder
        measure_families._pair_recorder = _dynamic_pair_recorder
        try:
            return measure(config)
        finally:
            measure_families._pair_recorder = recorder
    if name not in FROZEN:
        return measure(config)
    build = transformers.AutoModelForCausalLM.from_config
    transformers.AutoModelForCausalLM.from_config = lambda *args, **kwargs: build(*args, **kwargs).requires_grad_(False)
    try:
        return measure(config)
    finally:
        transformers.AutoModelForCausalLM.from_config = build


def main() -> int:
    warnings.filterwarnings("ignore")
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_lens": list(SEQ_LENS), "models": {}, "defaults": {}}
    only = set(sys.argv[1:])
    path = HERE / "forward_r5moe.json"
    if only and path.exists():  # re-measure some cases, keep the others
        results = json.loads(path.read_text())
    for name, config in CASES.items():
        if only and name not in only:
            continue
        try:
            results["models"][name] = _measure(name, config)
        except Exception as exc:  # record, so the test knows which models were not measured
            results["models"][name] = {"config": config, "error": f"{type(exc).__name__}: {exc}"}
            print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        results["defaults"][config["model_type"]] = class_defaults(config["model_type"], **ADDED_TO_DEFAULTS.get(config["model_type"], {}))
    path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
