"""Measure tiny Qwen-VL forward passes with real images (brief towers5): the vision tower and the
language model together, under torch's FlopCounterMode.

For each tiny config (odd widths) and each case of image sizes, random RGB images are run through
transformers' own image processor (Qwen2VLImageProcessorPil with the family's patch, merge and pixel
bounds), giving pixel_values and image_grid_thw; the text is expanded as the processor expands it
(``<|vision_start|>``, ``image_grid_thw.prod() // merge**2`` image tokens, ``<|vision_end|>`` per
image, before the text), and the whole ...ForConditionalGeneration runs on it with eager attention.
Also the class-default config of each Qwen-VL type (saved as tests/data/hf/<type>-defaults.json)
and its parameters on the meta device. Recorded: the FLOPs of the whole forward, of the visual module and of the rest, and of text alone
of the same length through the same model; the resized sizes
(image_grid_thw) and the tokens; and, for the processor's resizing rule alone, image_grid_thw of a
dozen sizes per family. The result, forward_towers5.json, comes from torch and transformers alone:
tests/hf/test_towers5_forward.py compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 pillow && python tests/data/hf_forward/measure_towers5.py
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig, AutoModelForImageTextToText, Qwen2VLImageProcessorPil

HERE = Path(__file__).parent
TEXT_TOKENS = 9
IDS = {"image_token_id": 90, "video_token_id": 91, "vision_start_token_id": 92, "vision_end_token_id": 93}
TEXT = {"hidden_size": 44, "intermediate_size": 58, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 12, "vocab_size": 97, "max_position_embeddings": 4096, "tie_word_embeddings": False}
MROPE = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 2, 2]}
# Qwen2_5_VLAttention derives head_dim = hidden // heads (10 here): no head_dim field.
TEXT_2_5 = {**{k: v for k, v in TEXT.items() if k != "head_dim"}, "hidden_size": 40}
MROPE_2_5 = {**MROPE, "mrope_section": [2, 2, 1]}
# The processors of the published checkpoints (preprocessor_config.json): pixel bounds per family.
QWEN2_5_PIXELS = {"shortest_edge": 3136, "longest_edge": 12845056}
QWEN3_PIXELS = {"shortest_edge": 65536, "longest_edge": 16777216}

CONFIGS = {
    # embed_dim 36 x mlp_ratio 3; the merger maps to hidden_size, the language model's width.
    "qwen2_vl": {
        "model_type": "qwen2_vl", **IDS, "tie_word_embeddings": False,
        "text_config": {**TEXT_2_5, "model_type": "qwen2_vl_text", "rope_parameters": MROPE_2_5},
        "vision_config": {"depth": 3, "embed_dim": 36, "hidden_size": 40, "mlp_ratio": 3, "num_heads": 3, "patch_size": 14,
                          "spatial_merge_size": 2, "temporal_patch_size": 2},
        "pixels": QWEN2_5_PIXELS,
    },
    # 4 blocks, block 1 and 3 over whole images, 0 and 2 windowed (window_size 56: 2 merged tokens a side).
    "qwen2_5_vl": {
        "model_type": "qwen2_5_vl", **IDS, "tie_word_embeddings": False,
        "text_config": {**TEXT_2_5, "model_type": "qwen2_5_vl_text", "rope_parameters": MROPE_2_5},
        "vision_config": {"depth": 4, "hidden_size": 36, "intermediate_size": 50, "num_heads": 3, "patch_size": 14,
                          "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 40, "window_size": 56,
                          "fullatt_block_indexes": [1, 3]},
        "pixels": QWEN2_5_PIXELS,
    },
    "qwen3_vl": {
        "model_type": "qwen3_vl", **IDS, "tie_word_embeddings": False,
        "text_config": {**TEXT, "model_type": "qwen3_vl_text", "rope_parameters": MROPE},
        "vision_config": {"depth": 3, "hidden_size": 36, "intermediate_size": 50, "num_heads": 3, "patch_size": 16,
                          "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 44,
                          "num_position_embeddings": 49, "deepstack_visual_indexes": [0, 2]},
        "pixels": QWEN3_PIXELS,
    },
    # Qwen3.5: Qwen3-VL's ViT without deepstack, beside a Gated DeltaNet / attention decoder.
    "qwen3_5": {
        "model_type": "qwen3_5", **IDS, "tie_word_embeddings": False,
        "text_config": {**TEXT, "model_type": "qwen3_5_text", "rope_parameters": {**MROPE, "partial_rotary_factor": 1.0},
                        "layer_types": ["linear_attention", "full_attention"], "linear_num_key_heads": 2, "linear_num_value_heads": 4,
                        "linear_key_head_dim": 6, "linear_value_head_dim": 10},
        "vision_config": {"depth": 2, "hidden_size": 36, "intermediate_size": 50, "num_heads": 3, "patch_size": 16,
                          "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 44, "num_position_embeddings": 49},
        "pixels": QWEN3_PIXELS,
    },
}
# (height, width) of the images of one sequence, per case.
CASES = {"one": [(300, 500)], "two": [(64, 100), (450, 260)], "tall": [(1000, 180)]}
# The resizing rule alone: sizes around the bounds, odd and half-way multiples, extreme ratios.
SIZES = [(1, 1), (28, 28), (56, 56), (100, 100), (257, 391), (333, 777), (720, 1280), (1080, 1920),
         (2000, 40), (3000, 4000), (4096, 4096), (70, 10000), (15, 2990), (10, 2500)]


def _processor(patch: int, merge: int, pixels: dict) -> Qwen2VLImageProcessorPil:
    return Qwen2VLImageProcessorPil(patch_size=patch, merge_size=merge, temporal_patch_size=2, size=dict(pixels))


def _images(sizes, seed: int) -> list[np.ndarray]:
    generator = np.random.default_rng(seed)
    return [generator.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in sizes]


def _expand(grid: torch.Tensor, merge: int, text: torch.Tensor) -> torch.Tensor:
    """The processor's expansion of one placeholder per image, the images before the text."""
    ids: list[int] = []
    for thw in grid.tolist():
        count = thw[0] * thw[1] * thw[2] // merge**2
        ids += [IDS["vision_start_token_id"], *[IDS["image_token_id"]] * count, IDS["vision_end_token_id"]]
    return torch.cat([torch.tensor(ids), text]).unsqueeze(0)


def measure(name: str, spec: dict) -> dict:
    config = {k: v for k, v in spec.items() if k != "pixels"}
    hf_config = AutoConfig.for_model(config["model_type"], **{k: v for k, v in config.items() if k != "model_type"})
    torch.manual_seed(0)
    model = AutoModelForImageTextToText.from_config(hf_config, attn_implementation="eager").eval()
    vision = config["vision_config"]
    processor = _processor(vision["patch_size"], vision["spatial_merge_size"], spec["pixels"])
    cases = {}
    for case, sizes in CASES.items():
        inputs = processor(images=_images(sizes, 1), return_tensors="pt", input_data_format="channels_last")
        grid = inputs["image_grid_thw"]
        ids = _expand(grid, vision["spatial_merge_size"], torch.randint(0, 80, (TEXT_TOKENS,)))
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(input_ids=ids, pixel_values=inputs["pixel_values"], image_grid_thw=grid,
                  mm_token_type_ids=(ids == IDS["image_token_id"]).long())  # as the processor marks image tokens
        counts = counter.get_flop_counts()
        root = type(model).__name__
        alone = FlopCounterMode(display=False)  # the same length of text alone: what the images add beside the tower
        with torch.no_grad(), alone:
            model(input_ids=torch.randint(0, 80, ids.shape))
        visual = int(sum(counts.get(f"{root}.model.visual", {}).values()))
        cases[case] = {
            "images": [list(size) for size in sizes],
            "image_grid_thw": grid.tolist(),
            "sequence_length": int(ids.shape[1]),
            "forward": int(counter.get_total_flops()),
            "visual": visual,
            "rest": int(counter.get_total_flops()) - visual,
            "text_alone": int(alone.get_total_flops()),
            "operators": {str(op): int(n) for op, n in counts.get(root, {}).items()},
        }
    return {
        "config": config,
        "class": type(model).__name__,
        "text_tokens": TEXT_TOKENS,
        "pixels": spec["pixels"],
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "visual_parameters": int(sum(p.numel() for p in model.model.visual.parameters())),
        "cases": cases,
    }


def resizing(patch: int, merge: int, pixels: dict) -> list[dict]:
    """image_grid_thw of transformers' image processor for each of SIZES (images it refuses omitted)."""
    processor = _processor(patch, merge, pixels)
    rows = []
    for (h, w), image in zip(SIZES, _images(SIZES, 2)):
        try:
            grid = processor(images=[image], return_tensors="pt", input_data_format="channels_last")["image_grid_thw"][0].tolist()
        except ValueError as exc:
            rows.append({"size": [h, w], "refused": str(exc)})
            continue
        rows.append({"size": [h, w], "grid": grid})
    return rows


def class_defaults(model_type: str) -> dict:
    """The class-default config as a config.json holds it (tests/data/hf/<type>-defaults.json) and
    the parameters of its whole model and of its vision tower, on the meta device."""
    config = AutoConfig.for_model(model_type)
    saved = config.to_dict()
    for holder in (saved, saved["text_config"], saved["vision_config"]):
        holder.pop("transformers_version", None)
    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(config)
    return {
        "config": saved,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "visual_parameters": int(sum(p.numel() for p in model.model.visual.parameters())),
    }


def main() -> None:
    warnings.filterwarnings("ignore")
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__.split("+")[0],
        "models": {name: measure(name, spec) for name, spec in CONFIGS.items()},
        "defaults": {model_type: class_defaults(model_type) for model_type in ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")},
        "resizing": {
            "qwen2_5_vl": resizing(14, 2, QWEN2_5_PIXELS),
            "qwen3_vl": resizing(16, 2, QWEN3_PIXELS),
        },
    }
    (HERE / "forward_towers5.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
