"""Measure the forward FLOPs of tiny Qwen4-Exp text decoders (Gated DeltaNet, gated attention with
the QSA block indexer, low-rank gated residuals over hc_count streams, n-gram PLE, MoE) with
torch's FlopCounterMode, through measure_attention2026.py's ``measure``; and a tiny
Qwen4ExpForConditionalGeneration on random images through transformers' own image processor
(Qwen2VLImageProcessorPil with Qwen3-VL's bounds, as AutoImageProcessor maps qwen4_exp) and the
processor's placeholder expansion (measure_towers5.py's helpers), recording the vision tower's
FLOPs, the whole forward, the grids and the parameters, and the tower's parameters at the vision
config's class defaults (beside a tiny text decoder, on the meta device). Writes forward_qwen4exp.json.

The pairs recorded per attention call are those its mask lets through: the blocks the QSA indexer
selected plus each query's tail. The test is tests/hf/test_qwen4exp_forward.py.

The class defaults do not build (Qwen4ExpTextConfig() leaves the indexer_* fields null, and
Qwen4ExpTextAttention cannot build its indexer without them): the error is recorded under
"defaults", and under "built_defaults" the defaults with BUILD_WITH's indexer fields added, saved
as tests/data/hf/qwen4-exp-defaults.json, with the parameters of the whole model on the meta device.

Needs torch, transformers and Pillow (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 pillow && python tests/data/hf_forward/measure_qwen4exp.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from measure_attention2026 import SEQ_LEN, measure  # noqa: E402
from measure_towers5 import IDS, QWEN3_PIXELS, TEXT_TOKENS, _expand, _images, _processor  # noqa: E402

# SEQ_LEN (24) tokens: blocks of 4 keys, budget 8 keeps 2 of them, so the selection bites from
# query 11 on; Gated DeltaNet's chunk (64) pads the 24 tokens.
TINY = {
    "model_type": "qwen4_exp_text", "hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 16, "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8,
    "linear_value_head_dim": 8, "linear_conv_kernel_dim": 4, "moe_intermediate_size": 24,
    "shared_expert_intermediate_size": 40, "num_experts": 4, "num_experts_per_tok": 2, "vocab_size": 128,
    "max_position_embeddings": 256, "eos_token_id": 1, "tie_word_embeddings": False,
}
QSA = {"indexer_n_heads": 2, "indexer_kv_heads": 1, "indexer_head_dim": 16, "indexer_budget": 8, "indexer_compress_ratio": 4}
PLE = {"ngram_vocab_size_base": 1000, "make_ngram_vocab_size_divisible_by": 64}

CASES: dict[str, dict] = {
    # The default layout (indexed every 4th layer), QSA, PLE on three linear layers, 3 streams.
    "qsa_ple": {**TINY, **QSA, **PLE, "num_hidden_layers": 5, "hc_count": 3, "hc_lowrank": 8, "ple_layer_ids": [1, 3, 5]},
    # layer_types with "full_attention" (read as indexed_attention), 2 streams, no PLE, a narrower PLE-less model.
    "qsa_no_ple": {
        **TINY, **QSA, "num_hidden_layers": 4, "hc_count": 2, "hc_lowrank": 6, "indexer_budget": 4,
        "layer_types": ["linear_attention", "full_attention", "linear_attention", "indexed_attention"],
    },
    # No indexer fields: only linear_attention layers (an indexed one could not be built); 4-grams, 2
    # heads each. use_cache false: transformers' cache of only linear layers cannot give its length.
    "linear_ple": {
        **TINY, **PLE, "use_cache": False, "num_hidden_layers": 3, "hc_count": 2, "hc_lowrank": 4, "layer_types": ["linear_attention"] * 3,
        "ple_layer_ids": [2], "ngram_size": 4, "heads_per_ngram": 2, "ple_embed_dim": 24, "ple_conv_kernel_size": 3,
    },
}

# The wrapper: the qsa_ple decoder (M-RoPE over the full head width) and a tiny Qwen3.5-style ViT.
VISION = {"depth": 2, "hidden_size": 36, "intermediate_size": 50, "num_heads": 3, "patch_size": 16,
          "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 32, "num_position_embeddings": 49}
WRAPPER = {
    "model_type": "qwen4_exp", **IDS, "tie_word_embeddings": False, "vision_config": VISION,
    "text_config": {**CASES["qsa_ple"], "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                                            "mrope_section": [4, 2, 2], "partial_rotary_factor": 1.0}},
}
IMAGES = {"one": [(300, 500)], "two": [(64, 100), (450, 260)]}


def _build(config: dict, device: str | None = None):
    hf_config = transformers.AutoConfig.for_model(config["model_type"], **{k: v for k, v in config.items() if k != "model_type"})
    torch.manual_seed(0)
    if device == "meta":
        with torch.device("meta"):
            return transformers.Qwen4ExpForConditionalGeneration._from_config(hf_config)
    return transformers.Qwen4ExpForConditionalGeneration._from_config(
        hf_config, attn_implementation="eager", experts_implementation="eager").eval()


def _parameters(module) -> int:
    return int(sum(p.numel() for p in module.parameters()))


def measure_images() -> dict:
    model = _build(WRAPPER)
    processor = _processor(VISION["patch_size"], VISION["spatial_merge_size"], QWEN3_PIXELS)
    root = type(model).__name__
    cases = {}
    for case, sizes in IMAGES.items():
        text = torch.randint(0, 80, (TEXT_TOKENS,))
        inputs = processor(images=_images(sizes, 1), return_tensors="pt", input_data_format="channels_last")
        grid = inputs["image_grid_thw"]
        ids = _expand(grid, VISION["spatial_merge_size"], text)
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(input_ids=ids, pixel_values=inputs["pixel_values"], image_grid_thw=grid,
                  mm_token_type_ids=(ids == IDS["image_token_id"]).long(), use_cache=False)
        visual = int(sum(counter.get_flop_counts().get(f"{root}.model.visual", {}).values()))
        cases[case] = {
            "images": [list(size) for size in sizes], "image_grid_thw": grid.tolist(), "sequence_length": int(ids.shape[1]),
            "forward": int(counter.get_total_flops()), "visual": visual, "rest": int(counter.get_total_flops()) - visual,
        }
    # Whose tie_word_embeddings ties the head: the wrapper's (false by default), not the text config's.
    ties = {name: {**WRAPPER, **change} for name, change in (
        ("wrapper_true", {"tie_word_embeddings": True}),
        ("text_true", {"text_config": {**WRAPPER["text_config"], "tie_word_embeddings": True}}),
    )}
    default_vision = {**WRAPPER, "vision_config": {}}
    meta = _build(default_vision, "meta")
    return {
        "config": WRAPPER, "class": root, "text_tokens": TEXT_TOKENS, "pixels": QWEN3_PIXELS,
        "parameters": _parameters(model), "visual_parameters": _parameters(model.model.visual), "cases": cases,
        "default_vision": {"config": default_vision, "parameters": _parameters(meta), "visual_parameters": _parameters(meta.model.visual)},
        "ties": {name: {"config": config, "parameters": _parameters(_build(config, "meta"))} for name, config in ties.items()},
    }


# The keys Qwen4ExpConfig()'s text_config lacks to build: illustrative QSA values (no config is public).
BUILD_WITH = {"indexer_n_heads": 16, "indexer_kv_heads": 1, "indexer_head_dim": 256, "indexer_budget": 2048, "indexer_compress_ratio": 64}


def class_defaults() -> dict:
    """The class defaults' error, as transformers raises it when building the model on the meta device."""
    config = transformers.AutoConfig.for_model("qwen4_exp")
    saved = config.to_dict()
    try:
        with torch.device("meta"):
            transformers.Qwen4ExpForConditionalGeneration._from_config(config)
    except Exception as exc:  # noqa: BLE001 - the failure is the record
        return {"config": saved, "error": f"{type(exc).__name__}: {exc}"}
    raise AssertionError("Qwen4ExpConfig() built: record its parameters instead")


def built_defaults() -> dict:
    """Write tests/data/hf/qwen4-exp-defaults.json (the defaults with BUILD_WITH) and its meta-device parameters."""
    config = transformers.AutoConfig.for_model("qwen4_exp", text_config=BUILD_WITH)
    saved = config.to_dict()
    for holder in (saved, saved["text_config"], saved["vision_config"]):
        holder.pop("transformers_version", None)
    path = HERE.parent / "hf" / "qwen4-exp-defaults.json"
    path.write_text(json.dumps(saved, indent=2) + "\n")
    with torch.device("meta"):
        model = transformers.Qwen4ExpForConditionalGeneration._from_config(config)
    return {"config": json.loads(path.read_text()), "parameters": _parameters(model), "visual_parameters": _parameters(model.model.visual)}


def main() -> int:
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_len": SEQ_LEN, "models": {}}
    for name, config in CASES.items():
        results["models"][name] = measure(config)
    results["images"] = measure_images()
    results["defaults"] = {"qwen4_exp": class_defaults()}
    results["built_defaults"] = {"qwen4_exp": built_defaults()}
    (HERE / "forward_qwen4exp.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
