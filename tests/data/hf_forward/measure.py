"""Measure the forward FLOPs of tiny Hugging Face models with torch's FlopCounterMode.

For every published config in tests/data/hf, build a tiny model of the same structure (same
model_type and layer pattern, small widths), run one real forward pass of the transformers
implementation on the CPU with eager attention, and record what torch counts, per matmul
kind, and how many (query, key) pairs the attention mask transformers builds for each layer
lets through. The result, forward.json, is an oracle independent of flopsreg: tests/hf/test_forward.py
compares flopsreg's count of the same tiny configs with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch transformers && python tests/data/hf_forward/measure.py
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

HERE = Path(__file__).parent
CONFIGS = HERE.parent / "hf"
SEQ_LEN = 24

# Small widths; the structure fields (layer_types, sliding_window_pattern, ...) stay as published.
TINY = {
    "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "intermediate_size": 96, "intermediate_size_mlp": 80, "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 48, "vocab_size": 128, "num_local_experts": 4,
    "num_experts": 4, "n_routed_experts": 4, "num_experts_per_tok": 2, "sliding_window": 8,
    "attention_chunk_size": 8, "q_lora_rank": 24, "kv_lora_rank": 16, "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 8, "v_head_dim": 8, "max_position_embeddings": 256,
}
LAYERS = {"gemma3": 6, "gemma3_text": 6, "llama4": 4, "llama4_text": 4, "deepseek_v3": 5, "deepseek_v2": 3}


def tiny(config: dict) -> dict:
    """The same config with small widths and a few layers, keeping its layer pattern."""
    config = copy.deepcopy(config)
    text = config.get("text_config", config)
    model_type = text.get("model_type", config["model_type"])
    layers = LAYERS.get(model_type, 4)
    for key, value in TINY.items():
        if key in text and text[key] is not None:
            text[key] = value
    for key in ("hidden_size", "num_attention_heads", "num_key_value_heads", "vocab_size"):
        text[key] = TINY[key]  # Gemma 3's published text_config leaves these to class defaults
    if "qk_rope_head_dim" in text:  # DeepSeek's head_dim is its rope width; MLA has no kv groups
        text["head_dim"] = text["qk_rope_head_dim"]
        text["num_key_value_heads"] = text["num_attention_heads"]
    elif model_type.startswith("gemma3"):
        text["head_dim"] = TINY["head_dim"]
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        text.pop(key, None)
        config.pop(key, None)
    if "n_group" in text:  # group-limited routing picks groups of experts (no matmul); 4 experts, 1 group
        text["n_group"], text["topk_group"] = 1, 1
    if isinstance(text.get("attn_temperature_tuning"), int):  # published as 4; transformers wants a bool
        text["attn_temperature_tuning"] = bool(text["attn_temperature_tuning"])
    if text.get("q_lora_rank") is None and "q_lora_rank" in text:
        pass  # keep the direct query path (DeepSeek-V2-Lite)
    text["num_hidden_layers"] = layers
    for key in ("layer_types", "no_rope_layers"):
        if isinstance(text.get(key), list):
            text[key] = text[key][:layers]
    if isinstance(text.get("moe_layers"), list):
        text["moe_layers"] = [i for i in text["moe_layers"] if i < layers]
    if "first_k_dense_replace" in text:
        text["first_k_dense_replace"] = min(text["first_k_dense_replace"], 2)
    if "max_window_layers" in text:
        text["max_window_layers"] = min(text["max_window_layers"], layers)
    text.pop("rope_scaling", None)
    text.pop("quantization_config", None)
    config.pop("quantization_config", None)
    return config


def measure(config: dict) -> dict[str, int]:
    text = config.get("text_config", config)
    model_type = text.get("model_type", config["model_type"])
    hf_config = transformers.AutoConfig.for_model(model_type, **{k: v for k, v in text.items() if k != "model_type"})
    hf_config._attn_implementation = "eager"
    torch.manual_seed(0)
    # Eager experts loop over the experts tokens are routed to; the grouped kernels (the default)
    # are not counted by FlopCounterMode at all.
    model = transformers.AutoModelForCausalLM.from_config(
        hf_config, attn_implementation="eager", experts_implementation="eager"
    ).eval()
    ids = torch.randint(0, text["vocab_size"], (1, SEQ_LEN))
    pairs: dict[int, int] = {}
    for index, layer in enumerate(model.model.layers):
        layer.self_attn.register_forward_pre_hook(_mask_counter(index, pairs), with_kwargs=True)
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(input_ids=ids)
    by_op = {str(op): int(n) for op, n in counter.get_flop_counts()["Global"].items()}
    return {"total": int(counter.get_total_flops()), **by_op}, [pairs[i] for i in sorted(pairs)]


def _mask_counter(index: int, pairs: dict[int, int]):
    """A hook that counts the (query, key) pairs the mask given to layer *index* lets through."""

    def hook(module, args, kwargs):
        mask = kwargs.get("attention_mask")
        if mask is None:  # no mask tensor: every pair of the causal triangle? record as unknown
            pairs[index] = -1
        elif mask.dtype == torch.bool:
            pairs[index] = int(mask[0, 0].sum())
        else:  # additive mask: 0 where attention is allowed, a large negative number elsewhere
            pairs[index] = int((mask[0, 0] == 0).sum())

    return hook


def main() -> int:
    results = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "seq_len": SEQ_LEN,
        "models": {},
    }
    for path in sorted(CONFIGS.glob("*.json")):
        config = tiny(json.loads(path.read_text()))
        try:
            flops, pairs = measure(config)
            results["models"][path.stem] = {"config": config, "flops": flops, "pairs": pairs}
        except Exception as exc:  # record, so the test knows which models were not measured
            results["models"][path.stem] = {"config": config, "error": f"{type(exc).__name__}: {exc}"}
            print(f"{path.stem}: {type(exc).__name__}: {exc}", file=sys.stderr)
    (HERE / "forward.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
