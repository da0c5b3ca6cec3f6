"""Measure tiny forward passes of the text paths of multimodal wrappers (h-r5mm's types: Gemma 4
unified, Fuyu, GIT, Mllama, Phi-4-multimodal), and their class-default parameters.

The same measurement as measure_families.py (imported from it: eager attention, FlopCounterMode
at two lengths on text-only input, the pairs each mask lets through, each module's FLOPs and own
parameters, the class-default config's parameters on the meta device), plus, for a wrapper, the
parameters of the whole model where it is another class (WHOLE) and of each tower apart
(``sum(p.numel())`` of the modules under each prefix of PARTS, and of the nn.Embedding weights
in them). The result, forward_r5mm.json, is an oracle independent of
flopsreg: tests/hf/test_r5mm_forward.py compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_r5mm.py
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

# Odd widths as in measure_families (hidden 44, head_dim 12, intermediate 58, vocabulary 97).
TEXT = {"hidden_size": 44, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12, "intermediate_size": 58,
        "vocab_size": 97, "max_position_embeddings": 128, "pad_token_id": 0}
# Gemma 4 unified: 8 layers (5 sliding, 1 full, 1 sliding, 1 full), the last 2 reusing keys and
# values with a double-wide MLP, full layers 20 wide with K = V and 1 key/value head.
GEMMA4_UNIFIED = {**TEXT, "num_hidden_layers": 8, "sliding_window": 7,
                  "layer_types": ["sliding_attention"] * 5 + ["full_attention", "sliding_attention", "full_attention"]}

CASES: dict[str, dict] = {
    "gemma4_unified_text": {
        "model_type": "gemma4_unified_text", **GEMMA4_UNIFIED, "global_head_dim": 20, "attention_k_eq_v": True,
        "num_global_key_value_heads": 1, "num_kv_shared_layers": 2, "use_double_wide_mlp": True,
    },
    # Text-only input through the wrapper, with both embedders built (their weights counted apart).
    "gemma4_unified": {
        "model_type": "gemma4_unified",
        "text_config": {"model_type": "gemma4_unified_text", **GEMMA4_UNIFIED, "global_head_dim": 20},
        "vision_config": {"patch_size": 3, "pooling_kernel_size": 2, "mm_embed_dim": 30, "mm_posemb_size": 17, "output_proj_dims": 30},
        "audio_config": {"audio_embed_dim": 26},
    },
    # Fuyu: Persimmon behind a linear patch projection of 5 x 5 x 3 values. PersimmonConfig has no
    # head_dim or num_key_value_heads (heads of hidden / heads = 12, as many keys as queries).
    "fuyu": {
        "model_type": "fuyu", "patch_size": 5, "num_channels": 3,
        "text_config": {"model_type": "persimmon", **{k: v for k, v in TEXT.items() if k not in ("head_dim", "num_key_value_heads")},
                        "hidden_size": 48, "num_hidden_layers": 3, "partial_rotary_factor": 0.5},
    },
    # The same with num_key_value_heads 2, which PersimmonConfig does not have and the modeling does
    # not read (its attention is multi-head; a head_dim unlike hidden / heads breaks its rotary).
    "fuyu_kv_heads_ignored": {
        "model_type": "fuyu", "patch_size": 5, "num_channels": 3,
        "text_config": {"model_type": "persimmon", **{k: v for k, v in TEXT.items() if k != "head_dim"},
                        "hidden_size": 48, "num_hidden_layers": 3, "partial_rotary_factor": 0.5},
    },
    # Phi-4-multimodal: Phi-3's decoder at the top level; odd tower widths (audio heads of 36 // 5 = 7,
    # a mel axis of 27 halved three times to 4, a depthwise multiplier of 2, an asymmetric bias table).
    "phi4_multimodal": {
        "model_type": "phi4_multimodal", **TEXT, "num_hidden_layers": 3, "sliding_window": 7,
        "vision_config": {"hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 2, "num_attention_heads": 3,
                          "image_size": 45, "patch_size": 7, "crop_size": 45},
        "audio_config": {"hidden_size": 36, "intermediate_size": 50, "num_blocks": 2, "num_attention_heads": 5,
                         "ext_pw_out_channel": 20, "depthwise_separable_out_channel": 22, "depthwise_multiplier": 2,
                         "kernel_size": 3, "input_size": 27, "time_reduction": 8, "nemo_conv_channels": 12,
                         "bias_max_distance": 30, "downsample_rate": 2},
    },
    # GIT: hidden 44 over 4 heads of 11 (GitSelfAttention: hidden / heads), MLP 58, a CLIP tower
    # of 45-pixel images in patches of 7, three frames with a temporal embedding each.
    "git": {
        "model_type": "git", **{k: v for k, v in TEXT.items() if k not in ("head_dim", "num_key_value_heads")},
        "num_hidden_layers": 3, "num_image_with_embedding": 3,
        "vision_config": {"hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 2, "num_attention_heads": 3,
                          "image_size": 45, "patch_size": 7},
    },
    # The same with num_key_value_heads 2 and head_dim 12 (hidden / heads is 11), which GitConfig does not have
    # and the modeling does not read.
    "git_kv_heads_ignored": {
        "model_type": "git", **TEXT, "num_hidden_layers": 3, "num_image_with_embedding": 3,
        "vision_config": {"hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 2, "num_attention_heads": 3,
                          "image_size": 45, "patch_size": 7},
    },
    # Mllama: 5 layers, cross-attention at 1 and 3 (skipped on text); heads of hidden / heads, 48 / 4
    # (rotary needs an even width) with 2 key/value heads; a vision model of odd widths (3 tiles,
    # 3 aspect ratios, 45-pixel tiles in patches of 7, heads of 36 / 3).
    "mllama": {
        "model_type": "mllama",
        "text_config": {"model_type": "mllama_text_model", **{k: v for k, v in TEXT.items() if k != "head_dim"},
                        "hidden_size": 48, "num_hidden_layers": 5, "cross_attention_layers": [1, 3]},
        "vision_config": {"hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 2, "num_global_layers": 1,
                          "attention_heads": 3, "image_size": 45, "patch_size": 7, "max_num_tiles": 3,
                          "supported_aspect_ratios": [[1, 1], [1, 2], [2, 1]], "vision_output_dim": 40,
                          "intermediate_layers_indices": [0, 1]},
    },
}

# Each wrapper type: its towers, part -> the modules holding it (a prefix of parameter names, or several).
PARTS = {
    "gemma4_unified": {"vision_embedder": "model.embed_vision.", "audio_embedder": "model.embed_audio."},
    "fuyu": {"projector": "model.vision_embed_tokens."},
    "git": {"vision": "git.image_encoder.", "projector": ("git.visual_projection.", "git.img_temporal_embedding.")},
    # Mllama's cross-attention layers sit among its decoder layers: their prefixes come from the config.
    "mllama": {"cross_attention": lambda text: tuple(f"model.language_model.layers.{i}." for i in text.cross_attention_layers),
               "vision": "model.vision_model.", "projector": "model.multi_modal_projector."},
    "phi4_multimodal": {"vision": "model.embed_tokens_extend.image_embed.", "audio": "model.embed_tokens_extend.audio_embed."},
}
# A weight whose rows past the text config's vocab_size belong to a part (as nn.Embedding rows):
# MllamaTextModel's embed_tokens holds vocab_size + 8 rows (the image token's among them).
EXTRA_ROWS = {"mllama": ("cross_attention", "model.language_model.embed_tokens.weight")}
# The whole model of a type whose AutoModelForCausalLM class builds part of it: Mllama's causal LM is
# MllamaForCausalLM, its text model alone (the path text runs); the whole model has the vision model too.
WHOLE = {"mllama": "MllamaForConditionalGeneration"}
# Class defaults recorded beyond each case's type: name -> (model_type, config keys set).
DEFAULTS = {"gemma4_unified-with-towers": ("gemma4_unified", {"vision_config": {}, "audio_config": {}})}


def whole(config: transformers.PretrainedConfig) -> torch.nn.Module:
    """The whole model of *config* on the meta device: AutoModelForCausalLM's class, or WHOLE's."""
    with torch.device("meta"):
        if config.model_type in WHOLE:
            return getattr(transformers, WHOLE[config.model_type])(config)
        return transformers.AutoModelForCausalLM.from_config(config)


def parts(config: transformers.PretrainedConfig, prefixes: dict) -> dict:
    """The parameters of each tower of the whole model of *config* (meta device), and of the
    nn.Embedding weights in it; the towers the config does not build are absent. A prefix may be
    a function of the text config (for parts among the decoder layers)."""
    model = whole(config)
    embeddings = {name + ".weight" for name, module in model.named_modules() if isinstance(module, torch.nn.Embedding)}
    named = dict(model.named_parameters())  # each parameter once, a tied one under its first name
    text = config.get_text_config()
    found = {}
    for part, prefix in prefixes.items():
        prefix = prefix(text) if callable(prefix) else prefix
        mine = {n: p for n, p in named.items() if n.startswith(prefix)}
        if mine:
            found[part] = {"parameters": sum(p.numel() for p in mine.values()),
                           "embeddings": sum(p.numel() for n, p in mine.items() if n in embeddings)}
    if config.model_type in EXTRA_ROWS:
        part, weight = EXTRA_ROWS[config.model_type]
        rows, width = named[weight].shape
        extra = (rows - text.vocab_size) * width
        found[part] = {"parameters": found[part]["parameters"] + extra, "embeddings": found[part]["embeddings"] + extra}
    return found


def split(config: transformers.PretrainedConfig) -> dict:
    """What a record adds for a wrapper: its towers' parameters ("parts") and, where the whole
    model is another class than AutoModelForCausalLM's, that class and its parameters ("whole")."""
    added = {"parts": parts(config, PARTS[config.model_type])} if config.model_type in PARTS else {}
    if config.model_type in WHOLE:
        added["whole"] = {"class": WHOLE[config.model_type], "parameters": int(sum(p.numel() for p in whole(config).parameters()))}
    return added


def main() -> int:
    warnings.filterwarnings("ignore")
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_lens": list(SEQ_LENS), "models": {}, "defaults": {}}
    for name, config in CASES.items():
        results["models"][name] = measure(config)
        hf = transformers.AutoConfig.for_model(config["model_type"], **{k: v for k, v in config.items() if k != "model_type"})
        results["models"][name] |= split(hf)
        print(name, results["models"][name]["totals"], file=sys.stderr)
    defaults = {config["model_type"]: (config["model_type"], {}) for config in CASES.values()} | DEFAULTS
    for name, (model_type, extra) in sorted(defaults.items()):
        results["defaults"][name] = class_defaults(model_type, **extra) | split(transformers.AutoConfig.for_model(model_type, **extra))
    (HERE / "forward_r5mm.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    for name in {config["model_type"] for config in CASES.values()}:  # each type's class defaults, as a tests/data/hf file
        path = HERE.parent / "hf" / f"{name.replace('_', '-')}-defaults.json"
        path.write_text(json.dumps(results["defaults"][name]["config"], indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
