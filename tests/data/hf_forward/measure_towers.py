"""Measure the parameters of multimodal wrappers' towers (vision encoders, projectors) beside
their language model, for flopsreg's tower kinds (patterns/hf/_towers.py).

For every wrapper type below, build the whole ...ForConditionalGeneration of transformers 5.24 on
the meta device (no memory, no weights) from (1) the class-default config
(``AutoConfig.for_model(type)``), (2) every published config of tests/data/hf of that type, and
(3) a tiny config with odd tower widths, and record ``sum(p.numel())`` of the whole model, of each
tower's module and of the ``nn.Embedding`` weights inside it. The result, towers.json, is an
oracle independent of flopsreg: tests/hf/test_towers.py compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_towers.py
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import torch
import transformers
from transformers import AutoConfig
from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

HERE = Path(__file__).parent
HF = HERE.parent / "hf"

# Each wrapper type: its towers, part -> the module holding it (a prefix of parameter names).
PARTS = {
    "gemma3": {"vision": "model.vision_tower.", "projector": "model.multi_modal_projector."},
    "qwen3_5": {"vision": "model.visual."},
    "qwen3_5_moe": {"vision": "model.visual."},
    "llama4": {"vision": "vision_model.", "projector": "multi_modal_projector."},
    "mistral_large4": {"vision": "model.vision_tower.", "projector": "model.multi_modal_projector."},
    "kimi_k25": {"vision": "model.vision_tower.", "projector": "model.mm_projector."},
    "gemma4": {"vision": "model.vision_tower.", "vision_embedder": "model.embed_vision.",
               "audio": "model.audio_tower.", "audio_embedder": "model.embed_audio."},
}
# Gemma 4 builds its towers only when the config sets them: its class defaults with both set too.
DEFAULTS = {"gemma4-with-towers": ("gemma4", {"vision_config": {}, "audio_config": {}})}

# Tiny configs: odd tower widths, an image size no multiple of the patch, a small text decoder.
TEXT = {"hidden_size": 44, "intermediate_size": 58, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 12, "vocab_size": 97}
TINY = {
    "gemma3": {"text_config": {**TEXT, "model_type": "gemma3_text"},
               "vision_config": {"hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 2, "num_attention_heads": 3,
                                 "image_size": 45, "patch_size": 7, "vision_use_head": True}},
    "gemma3-no-head": {"model_type": "gemma3", "text_config": {**TEXT, "model_type": "gemma3_text"},
                       "vision_config": {"hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 2, "num_attention_heads": 3,
                                         "image_size": 45, "patch_size": 7, "vision_use_head": False}},
    "qwen3_5": {"text_config": {**TEXT, "model_type": "qwen3_5_text", "layer_types": ["linear_attention", "full_attention"],
                                "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 6, "linear_value_head_dim": 10},
                "vision_config": {"depth": 2, "hidden_size": 36, "intermediate_size": 50, "num_heads": 3, "patch_size": 5,
                                  "temporal_patch_size": 3, "spatial_merge_size": 3, "out_hidden_size": 44, "num_position_embeddings": 49}},
    "llama4": {"text_config": {**TEXT, "model_type": "llama4_text", "num_local_experts": 3, "intermediate_size_mlp": 62},
               "vision_config": {"hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 2, "num_attention_heads": 3,
                                 "image_size": 45, "patch_size": 7, "projector_input_dim": 40, "projector_output_dim": 40,
                                 "vision_output_dim": 40, "pixel_shuffle_ratio": 0.5}},
    "mistral_large4": {"spatial_merge_size": 3, "multimodal_projector_bias": True, "vision_feature_layer": [-1, -2],
                       "text_config": {**TEXT, "model_type": "mistral_large4_text", "n_routed_experts": 4, "num_experts_per_tok": 2,
                                       "moe_intermediate_size": 26, "first_k_dense_replace": 1, "kv_lora_rank": 16,
                                       "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 10, "index_topk": 8,
                                       "index_head_dim": 8, "index_n_heads": 2},
                       "vision_config": {"model_type": "pixtral", "hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 2,
                                         "num_attention_heads": 3, "head_dim": 12, "patch_size": 5, "image_size": 45}},
    "kimi_k25": {"projection_hidden_size": 36,
                 "text_config": {**TEXT, "model_type": "deepseek_v3", "n_routed_experts": 4, "num_experts_per_tok": 2,
                                 "moe_intermediate_size": 26, "first_k_dense_replace": 1, "kv_lora_rank": 16, "q_lora_rank": 20,
                                 "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 10, "n_group": 1, "topk_group": 1},
                 "vision_config": {"hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 2, "num_attention_heads": 3,
                                   "patch_size": 5, "pos_emb_height": 7, "pos_emb_width": 9, "merge_kernel_size": [2, 3]}},
    "gemma4": {"text_config": {**TEXT, "model_type": "gemma4_text", "hidden_size_per_layer_input": 0, "vocab_size_per_layer_input": 97},
               "vision_config": {"hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 2, "num_attention_heads": 3,
                                 "num_key_value_heads": 1, "head_dim": 10, "patch_size": 5, "position_embedding_size": 41},
               "audio_config": {"hidden_size": 36, "num_hidden_layers": 2, "num_attention_heads": 5, "conv_kernel_size": 3,
                                "subsampling_conv_channels": [20, 6], "output_proj_dims": 26}},
    "gemma4-vision-only": {"model_type": "gemma4", "text_config": {**TEXT, "model_type": "gemma4_text", "hidden_size_per_layer_input": 0},
                           "vision_config": {"hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 1, "num_attention_heads": 3,
                                             "num_key_value_heads": 3, "head_dim": 12, "patch_size": 3, "position_embedding_size": 17}},
}


def build(config):
    """The whole model of *config* on the meta device."""
    arch = MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES[config.model_type]
    with torch.device("meta"):
        return getattr(transformers, arch)(config)


def measure(config, parts):
    model = build(config)
    embeddings = {name + ".weight" for name, module in model.named_modules() if isinstance(module, torch.nn.Embedding)}
    record = {"class": type(model).__name__, "total": sum(p.numel() for p in model.parameters()), "parts": {}}
    seen = {}
    for name, p in model.named_parameters():  # each parameter once, a tied one under its first name
        seen[name] = p
    for part, prefix in parts.items():
        mine = {n: p for n, p in seen.items() if n.startswith(prefix)}
        if not mine:  # an optional tower the config does not build
            continue
        record["parts"][part] = {
            "parameters": sum(p.numel() for p in mine.values()),
            "embeddings": sum(p.numel() for n, p in mine.items() if n in embeddings),
        }
    record["language_model"] = record["total"] - sum(p["parameters"] for p in record["parts"].values())
    return record


def main() -> int:
    warnings.filterwarnings("ignore")
    out = {"torch": torch.__version__, "transformers": transformers.__version__, "device": "meta",
           "defaults": {}, "published": {}, "tiny": {}}
    for model_type, parts in PARTS.items():
        config = AutoConfig.for_model(model_type)
        out["defaults"][model_type] = {"config": config.to_dict(), **measure(config, parts)}
        print(model_type, out["defaults"][model_type]["total"], file=sys.stderr)
    for name, (model_type, given) in DEFAULTS.items():
        config = AutoConfig.for_model(model_type, **given)
        out["defaults"][name] = {"config": config.to_dict(), **measure(config, PARTS[model_type])}
        print(name, out["defaults"][name]["total"], file=sys.stderr)
    for path in sorted(HF.glob("*.json")):
        data = json.loads(path.read_text())
        if data.get("model_type") in PARTS:
            text = data.get("text_config", {})
            if isinstance(text.get("attn_temperature_tuning"), int):  # published as 4; transformers wants a bool
                text["attn_temperature_tuning"] = bool(text["attn_temperature_tuning"])
            config = AutoConfig.for_model(data["model_type"], **{k: v for k, v in data.items() if k != "model_type"})
            out["published"][path.stem] = measure(config, PARTS[data["model_type"]])
            print(path.stem, out["published"][path.stem]["total"], file=sys.stderr)
    for name, data in TINY.items():
        model_type = data.get("model_type", name)
        config = AutoConfig.for_model(model_type, **{k: v for k, v in data.items() if k != "model_type"})
        out["tiny"][name] = {"config": config.to_dict(), **measure(config, PARTS[model_type])}  # as transformers resolved it
        print(name, out["tiny"][name]["total"], file=sys.stderr)
    (HERE / "towers.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
