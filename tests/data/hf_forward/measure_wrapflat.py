"""Measure which tie_word_embeddings ties a multimodal wrapper's head, and flat Qwen-VL configs
(brief wrapflat): transformers' own parameter counts, on the meta device.

For every wrapper type flopsreg reads through a text_config, the class-default config
(``AutoConfig.for_model(type).to_dict()``) is built four times, with the wrapper's own
``tie_word_embeddings`` and its text_config's each false or true, as the ...ForConditionalGeneration
(FuyuForCausalLM for fuyu; for emu3 what AutoModelForCausalLM builds, Emu3ForCausalLM) a user loads; recorded: the parameters of the whole model, whether
its output embedding is its input embedding, and the tie_word_embeddings the built configs hold.
Also tiny flat Qwen2-VL, Qwen2.5-VL and Fuyu configs (no text_config, the decoder's fields at the
top level, as the published configs are), tied at the top level like Qwen2.5-VL-3B, with their
parameters and the FLOPs of one text-only forward (eager attention) under FlopCounterMode; and the
class defaults of glm5_next and qwen2_5_vl flattened, their parameters on the meta device.
The result, forward_wrapflat.json, comes from torch and transformers alone:
tests/hf/test_wrapflat_forward.py compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_wrapflat.py
"""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path

import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.models.auto.modeling_auto import MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES

HERE = Path(__file__).parent
# gemma3n is left out: its vision tower is timm's, which is not installed here.
WRAPPERS = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_5", "qwen3_5_moe", "gemma3", "gemma4", "gemma4_unified",
            "glm5_next", "mistral_large4", "fuyu", "llama4", "mllama", "kimi_k25", "emu3")
# flopsreg counts emu3 as the model AutoModelForCausalLM builds from its config (Emu3ForCausalLM, no VQ-VAE).
CAUSAL_LM = {"emu3"}
TOKENS = 9
IDS = {"image_token_id": 90, "video_token_id": 91, "vision_start_token_id": 92, "vision_end_token_id": 93}
# Flat: the decoder's fields at the top level; Qwen2_5_VLAttention's head_dim is hidden // heads.
FLAT_TEXT = {"hidden_size": 40, "intermediate_size": 58, "num_hidden_layers": 2, "num_attention_heads": 4,
             "num_key_value_heads": 2, "vocab_size": 97, "max_position_embeddings": 4096,
             "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 2, 1]}}
FLAT = {
    "qwen2_vl": {"model_type": "qwen2_vl", **IDS, **FLAT_TEXT, "tie_word_embeddings": True,
                 "vision_config": {"depth": 2, "embed_dim": 36, "hidden_size": 40, "mlp_ratio": 3, "num_heads": 3,
                                   "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}},
    "qwen2_5_vl": {"model_type": "qwen2_5_vl", **IDS, **FLAT_TEXT, "tie_word_embeddings": True,
                   "vision_config": {"depth": 2, "hidden_size": 36, "intermediate_size": 50, "num_heads": 3, "patch_size": 14,
                                     "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 40,
                                     "window_size": 56, "fullatt_block_indexes": [1]}},
    "qwen2_5_vl_untied": {"model_type": "qwen2_5_vl", **IDS, **FLAT_TEXT, "tie_word_embeddings": False,
                          "vision_config": {"depth": 2, "hidden_size": 36, "intermediate_size": 50, "num_heads": 3, "patch_size": 14,
                                            "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 40,
                                            "window_size": 56, "fullatt_block_indexes": [1]}},
    # FuyuConfig takes a few top-level keys (not num_key_value_heads) into its persimmon text_config.
    "fuyu": {"model_type": "fuyu", "num_channels": 3, "patch_size": 5, "hidden_size": 48, "intermediate_size": 58,
             "max_position_embeddings": 128, "num_attention_heads": 4, "num_hidden_layers": 3, "vocab_size": 97,
             "tie_word_embeddings": True},
}


def _build(model_type: str, config: dict, device: str) -> torch.nn.Module:
    hf_config = AutoConfig.for_model(model_type, **{k: v for k, v in config.items() if k != "model_type"})
    with torch.device(device):
        if model_type in CAUSAL_LM:
            return AutoModelForCausalLM.from_config(hf_config, attn_implementation="eager")
        return getattr(transformers, MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES[model_type])._from_config(hf_config, attn_implementation="eager")


def tying(model_type: str) -> dict:
    """The class-default config with each combination of the two tie_word_embeddings."""
    base = AutoConfig.for_model(model_type).to_dict()
    for holder in (base, *(v for v in base.values() if isinstance(v, dict) and "model_type" in v)):
        holder.pop("transformers_version", None)
    cases = {}
    for outer in (False, True):
        for inner in (False, True):
            config = copy.deepcopy(base)
            config["tie_word_embeddings"], config["text_config"]["tie_word_embeddings"] = outer, inner
            model = _build(model_type, config, "meta")
            cases[f"wrapper_{str(outer).lower()}_text_{str(inner).lower()}"] = {
                "wrapper": outer, "text_config": inner,
                "parameters": int(sum(p.numel() for p in model.parameters())),
                "tied": model.get_output_embeddings().weight is model.get_input_embeddings().weight,
                "config_ties": bool(model.config.tie_word_embeddings),
            }
    return {"class": type(model).__name__, "config": base, "cases": cases}


def flat(name: str, config: dict) -> dict:
    """A tiny flat config: its parameters and one text-only forward."""
    torch.manual_seed(0)
    model = _build(config["model_type"], config, "cpu").eval()
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(input_ids=torch.randint(0, 80, (1, TOKENS)))
    return {
        "config": config,
        "class": type(model).__name__,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "tied": model.get_output_embeddings().weight is model.get_input_embeddings().weight,
        "text_config_hidden_size": model.config.text_config.hidden_size,
        "forward": {str(TOKENS): int(counter.get_total_flops())},
    }


def flat_defaults(model_type: str) -> dict:
    """The class-default config flattened (its text_config's fields at the top level, the wrapper's
    tie_word_embeddings true): the parameters of the model built from it, on the meta device."""
    config = AutoConfig.for_model(model_type).to_dict()
    text = config.pop("text_config")
    text.pop("transformers_version", None)
    config.pop("transformers_version", None)
    config = {**{k: v for k, v in text.items() if k != "model_type"}, **config, "tie_word_embeddings": True}
    model = _build(model_type, config, "meta")
    return {
        "config": config,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "tied": model.get_output_embeddings().weight is model.get_input_embeddings().weight,
    }


def main() -> None:
    warnings.filterwarnings("ignore")
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__.split("+")[0],
        "tying": {model_type: tying(model_type) for model_type in WRAPPERS},
        "models": {name: flat(name, config) for name, config in FLAT.items()},
        "flat_defaults": {model_type: flat_defaults(model_type) for model_type in ("glm5_next", "qwen2_5_vl")},
    }
    (HERE / "forward_wrapflat.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
