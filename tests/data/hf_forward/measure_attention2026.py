"""Measure the forward FLOPs of tiny 2026-architecture Hugging Face models (DSA, Gemma 4, ...)
with torch's FlopCounterMode, as measure.py does for the older families.

For every case below (a tiny config of a family the issue-10 readers cover), build the
transformers 5.24 model on the CPU with eager attention and eager experts, run one forward pass
of SEQ_LEN tokens, and record: what torch counts in total and per module (inclusive counts of
every module, by name under ``model.``), the (query, key) pairs the mask each attention call
received lets through (for DSA: the causal mask combined with the indexer's top-k), and
``sum(p.numel())`` of the model and of each module's own parameters. The result, forward_attention2026.json, is an oracle
independent of flopsreg: tests/hf/test_attention2026_forward.py compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_attention2026.py
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

HERE = Path(__file__).parent
SEQ_LEN = 24

# MLA + DSA widths shared by the DeepSeek-style cases; index_topk 6 < SEQ_LEN so the top-k bites.
MLA = {
    "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4, "q_lora_rank": 24, "kv_lora_rank": 16,
    "qk_nope_head_dim": 8, "qk_rope_head_dim": 8, "head_dim": 8, "v_head_dim": 8, "vocab_size": 128,
    "intermediate_size": 96, "moe_intermediate_size": 32, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "n_shared_experts": 1, "n_group": 1, "topk_group": 1, "first_k_dense_replace": 1, "max_position_embeddings": 256,
    "hidden_act": "silu", "tie_word_embeddings": False,
}
DSA = {**MLA, "index_topk": 6, "index_n_heads": 2, "index_head_dim": 16}

GEMMA4 = {
    "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 96,
    "vocab_size": 128, "sliding_window": 8, "max_position_embeddings": 256,
}

CASES: dict[str, dict] = {
    "deepseek_v32": {"model_type": "deepseek_v32", **DSA, "num_hidden_layers": 3},
    "glm_moe_dsa": {
        "model_type": "glm_moe_dsa", **DSA, "num_hidden_layers": 4, "indexer_types": ["full", "shared", "full", "shared"],
    },
    # MoE beside the MLP, K = V and 1 global KV head on full layers, the last 4 layers reusing
    # K/V with a double-wide MLP, per-layer embeddings: every Gemma 4 feature at once.
    "gemma4_features": {
        "model_type": "gemma4_text", **GEMMA4, "num_hidden_layers": 12, "global_head_dim": 32,
        "num_global_key_value_heads": 1, "attention_k_eq_v": True, "num_kv_shared_layers": 4, "use_double_wide_mlp": True,
        "hidden_size_per_layer_input": 8, "vocab_size_per_layer_input": 128, "enable_moe_block": True, "num_experts": 4,
        "top_k_experts": 2, "moe_intermediate_size": 32,
    },
    # As transformers saves it: the full layers' head width in per_layer_config, no PLE, no sharing.
    "gemma4_per_layer_config": {
        "model_type": "gemma4_text", **GEMMA4, "num_hidden_layers": 6, "hidden_size_per_layer_input": 0,
        "per_layer_config": {"5": {"head_dim": 32}},
    },
    "glm4_moe": {
        "model_type": "glm4_moe", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "intermediate_size": 96, "moe_intermediate_size": 32, "n_routed_experts": 4, "num_experts_per_tok": 2,
        "n_shared_experts": 1, "first_k_dense_replace": 1, "num_hidden_layers": 3, "vocab_size": 128,
        "attention_bias": True, "partial_rotary_factor": 0.5, "max_position_embeddings": 256,
    },
    "minimax_m2": {
        "model_type": "minimax_m2", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "intermediate_size": 32, "num_local_experts": 4, "num_experts_per_tok": 2, "num_hidden_layers": 2,
        "vocab_size": 128, "max_position_embeddings": 256,
    },
    # Mistral4Config derives head_dim (nope + rope) itself; the DeepSeek-style rope width would break it.
    "mistral4": {
        "model_type": "mistral4", **{k: v for k, v in MLA.items() if k != "head_dim"}, "first_k_dense_replace": 0,
        "num_hidden_layers": 2,
    },
    # NoPE layers 3 and 7; layers 2, 6 and 7 reuse the latent of 1, 5 and 3; shared top-k on 1, 3 and 6.
    "mistral_large4": {
        "model_type": "mistral_large4",
        "text_config": {
            "model_type": "mistral_large4_text", **{k: v for k, v in DSA.items() if k not in ("q_lora_rank", "head_dim")},
            "num_hidden_layers": 8, "no_rope_layers": [1, 1, 1, 0, 1, 1, 1, 0], "kv_source_layers": [0, 1, 1, 3, 4, 5, 5, 3],
            "indexer_types": ["full", "shared", "full", "shared", "full", "full", "shared", "full"],
        },
        "vision_config": {
            "model_type": "pixtral", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
            "num_attention_heads": 2, "head_dim": 8, "image_size": 32, "patch_size": 16,
        },
    },
    "starcoder2": {
        "model_type": "starcoder2", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
        "intermediate_size": 96, "num_hidden_layers": 2, "vocab_size": 128, "sliding_window": 8, "use_bias": True,
        "max_position_embeddings": 256,
    },
}


def _pair_recorder(pairs: list[tuple[int, int]]):
    """Wrap eager_attention_forward: record (layer, pairs its mask lets through) for each call."""

    def wrap(function):
        def recorded(module, query, key, value, attention_mask, *args, **kwargs):
            mask = attention_mask[0, 0, :, : key.shape[-2]]
            allowed = int(mask.sum()) if mask.dtype == torch.bool else int((mask == 0).sum())
            pairs.append((module.layer_idx, allowed))
            return function(module, query, key, value, attention_mask, *args, **kwargs)

        return recorded

    return wrap


def measure(config: dict) -> dict:
    model_type = config["model_type"]
    hf_config = transformers.AutoConfig.for_model(model_type, **{k: v for k, v in config.items() if k != "model_type"})
    text = config.get("text_config", config)
    torch.manual_seed(0)
    # Classes the causal-LM Auto mapping does not list (transformers 5.24); Mistral Large 4 runs
    # text-only through its multimodal class (its tiny vision tower does no work), as GLM-5.3-Flash
    # does (measure_glm5_next.py).
    causal_lm = {
        "mistral4": transformers.Mistral4ForCausalLM, "mistral_large4": transformers.MistralLarge4ForConditionalGeneration,
        "glm5_next": transformers.Glm5NextForConditionalGeneration,
    }.get(model_type, transformers.AutoModelForCausalLM)
    build = causal_lm._from_config if causal_lm is not transformers.AutoModelForCausalLM else causal_lm.from_config
    model = build(hf_config, attn_implementation="eager", experts_implementation="eager").eval()
    modeling = importlib.import_module(type(model).__module__)
    pairs: list[tuple[int, int]] = []
    original = modeling.eager_attention_forward
    modeling.eager_attention_forward = _pair_recorder(pairs)(original)
    ids = torch.randint(0, text["vocab_size"], (1, SEQ_LEN))
    counter = FlopCounterMode(display=False)
    try:
        with torch.no_grad(), counter:
            model(input_ids=ids)
    finally:
        modeling.eager_attention_forward = original
    counts = counter.get_flop_counts()
    root = type(model).__name__
    modules = {
        name.removeprefix(f"{root}."): int(sum(ops.values()))
        for name, ops in counts.items()
        if name.startswith(f"{root}.") and sum(ops.values())
    }
    return {
        "config": config,
        "total": int(counter.get_total_flops()),
        "modules": dict(sorted(modules.items())),
        "pairs": [n for _, n in sorted(pairs)],
        "parameters": int(sum(p.numel() for p in model.parameters())),
        # Each module's own parameters (not its children's), by name under ``model.``.
        "module_parameters": {
            name: int(sum(p.numel() for p in module.parameters(recurse=False)))
            for name, module in model.named_modules()
            if any(True for _ in module.parameters(recurse=False))
        },
    }


def main() -> int:
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_len": SEQ_LEN, "models": {}}
    for name, config in CASES.items():
        try:
            results["models"][name] = measure(config)
        except Exception as exc:  # record, so the test knows which models were not measured
            results["models"][name] = {"config": config, "error": f"{type(exc).__name__}: {exc}"}
            print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
    (HERE / "forward_attention2026.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
