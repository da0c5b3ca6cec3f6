"""Measure a tiny Qwen3-VL-MoE (brief qwenvid) with real images, and the Qwen-VL vision towers
over real video frames, under torch's FlopCounterMode.

Qwen3-VL-MoE: a tiny config (odd widths, one layer forced dense by mlp_only_layers, the others
sparse; eager attention and eager experts), random RGB images through transformers' own image processor (Qwen2VLImageProcessorPil
with Qwen3-VL's patch, merge and pixel bounds) and the processor's placeholder expansion
(``<|vision_start|>``, ``image_grid_thw.prod() // merge**2`` image tokens, ``<|vision_end|>`` per
image, before the text), the whole Qwen3VLMoeForConditionalGeneration with eager attention; the
same length of text alone; parameters of the tiny model, of its tie variants and of the class
default (meta device; saved as tests/data/hf/qwen3-vl-moe-defaults.json).

Video: random frames through each family's video processor (Qwen2VLVideoProcessor for Qwen2-VL and
Qwen2.5-VL, Qwen3VLVideoProcessor for Qwen3-VL, Qwen3-VL-MoE and Qwen3.5; frames taken as given,
do_sample_frames off), giving pixel_values_videos and video_grid_thw; the vision tower of each
tiny model of measure_towers5.py (and the Qwen3-VL-MoE one) runs on them. Recorded: the grid and
the tower's FLOPs per case. forward_qwenvid.json comes from torch and transformers alone;
tests/hf/test_qwenvid_forward.py compares flopsreg with it.

Needs torch, transformers, Pillow and torchvision (the video processors import it):
    pip install torch==2.13.0 transformers==5.24.0 pillow torchvision && python tests/data/hf_forward/measure_qwenvid.py
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import torch
import transformers
from measure_towers5 import CONFIGS, IDS, MROPE, QWEN3_PIXELS, TEXT, TEXT_TOKENS, _expand, _images, _processor
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig, AutoModelForImageTextToText, Qwen2VLVideoProcessor
from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

HERE = Path(__file__).parent
# Layer 0 dense (mlp_only_layers), layers 1 and 2 sparse: 5 experts of width 26, 2 per token.
MOE = {
    "model_type": "qwen3_vl_moe", **IDS, "tie_word_embeddings": False,
    "text_config": {**TEXT, "model_type": "qwen3_vl_moe_text", "rope_parameters": MROPE, "num_hidden_layers": 3,
                    "decoder_sparse_step": 1, "moe_intermediate_size": 26, "num_experts": 5, "num_experts_per_tok": 2, "mlp_only_layers": [0]},
    "vision_config": {"depth": 3, "hidden_size": 36, "intermediate_size": 50, "num_heads": 3, "patch_size": 16,
                      "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 44,
                      "num_position_embeddings": 49, "deepstack_visual_indexes": [1]},
}
# Qwen/Qwen3-VL-30B-A3B-Instruct's config.json (huggingface.co/Qwen/Qwen3-VL-30B-A3B-Instruct, commit
# 1fc78ad), the keys a public transcription of it gives (dtype, transformers_version and the like left
# out); its model card gives 31.07B parameters. Built whole on the meta device for its parameters.
PUBLISHED = {"qwen3-vl-30b-a3b": {'architectures': ['Qwen3VLMoeForConditionalGeneration'],
     'image_token_id': 151655,
     'model_type': 'qwen3_vl_moe',
     'text_config': {'attention_bias': False,
                     'decoder_sparse_step': 1,
                     'head_dim': 128,
                     'hidden_size': 2048,
                     'intermediate_size': 6144,
                     'max_position_embeddings': 262144,
                     'mlp_only_layers': [],
                     'model_type': 'qwen3_vl_moe_text',
                     'moe_intermediate_size': 768,
                     'norm_topk_prob': True,
                     'num_attention_heads': 32,
                     'num_experts': 128,
                     'num_experts_per_tok': 8,
                     'num_hidden_layers': 48,
                     'num_key_value_heads': 4,
                     'rms_norm_eps': 1e-06,
                     'rope_scaling': {'mrope_interleaved': True,
                                      'mrope_section': [24, 20, 20],
                                      'rope_type': 'default'},
                     'rope_theta': 5000000,
                     'vocab_size': 151936},
     'tie_word_embeddings': False,
     'video_token_id': 151656,
     'vision_config': {'deepstack_visual_indexes': [8, 16, 24],
                       'depth': 27,
                       'hidden_act': 'gelu_pytorch_tanh',
                       'hidden_size': 1152,
                       'in_channels': 3,
                       'intermediate_size': 4304,
                       'model_type': 'qwen3_vl_moe',
                       'num_heads': 16,
                       'num_position_embeddings': 2304,
                       'out_hidden_size': 2048,
                       'patch_size': 16,
                       'spatial_merge_size': 2,
                       'temporal_patch_size': 2},
     'vision_end_token_id': 151653,
     'vision_start_token_id': 151652}}
CASES = {"text": [], "one": [(300, 500)], "two": [(64, 100), (450, 260)]}
# Whose tie_word_embeddings ties the head: the wrapper's (false by default) or the text config's (true by default).
TIES = {"wrapper_true": {"tie_word_embeddings": True}, "text_true": {"text_config": {"tie_word_embeddings": True}},
        "both_absent": {"tie_word_embeddings": None, "text_config": {"tie_word_embeddings": None}}}
# Videos (frames, height, width): an odd frame count (the processor repeats the last frame), one frame,
# and one whose frames x area passes Qwen3-VL's max_pixels (its smart_resize bounds the whole video).
VIDEOS = {"four": (4, 300, 500), "five": (5, 200, 260), "one_frame": (1, 100, 140), "long": (8, 720, 1280)}


def _merged(base: dict, change: dict) -> dict:
    out = dict(base)
    for key, value in change.items():
        if isinstance(value, dict):
            out[key] = _merged(base.get(key, {}), value)
        elif value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def _build(config: dict, device: str | None = None):
    hf_config = AutoConfig.for_model(config["model_type"], **{k: v for k, v in config.items() if k != "model_type"})
    torch.manual_seed(0)
    if device == "meta":
        with torch.device("meta"):
            return AutoModelForImageTextToText.from_config(hf_config)
    return AutoModelForImageTextToText.from_config(hf_config, attn_implementation="eager", experts_implementation="eager").eval()


def _parameters(model) -> int:
    return int(sum(p.numel() for p in model.parameters()))


def measure_moe() -> dict:
    model = _build(MOE)
    vision = MOE["vision_config"]
    processor = _processor(vision["patch_size"], vision["spatial_merge_size"], QWEN3_PIXELS)
    root = type(model).__name__
    cases = {}
    for case, sizes in CASES.items():
        text = torch.randint(0, 80, (TEXT_TOKENS,))
        counter = FlopCounterMode(display=False)
        if sizes:
            inputs = processor(images=_images(sizes, 1), return_tensors="pt", input_data_format="channels_last")
            grid = inputs["image_grid_thw"]
            ids = _expand(grid, vision["spatial_merge_size"], text)
            with torch.no_grad(), counter:
                model(input_ids=ids, pixel_values=inputs["pixel_values"], image_grid_thw=grid,
                      mm_token_type_ids=(ids == IDS["image_token_id"]).long())
        else:
            ids, grid = text.unsqueeze(0), torch.zeros((0, 3), dtype=torch.long)
            with torch.no_grad(), counter:
                model(input_ids=ids)
        counts = counter.get_flop_counts()
        visual = int(sum(counts.get(f"{root}.model.visual", {}).values()))
        cases[case] = {
            "images": [list(size) for size in sizes],
            "image_grid_thw": grid.tolist(),
            "sequence_length": int(ids.shape[1]),
            "forward": int(counter.get_total_flops()),
            "visual": visual,
            "rest": int(counter.get_total_flops()) - visual,
            "operators": {str(op): int(n) for op, n in counts.get(root, {}).items()},
        }
    return {
        "config": MOE,
        "class": root,
        "text_tokens": TEXT_TOKENS,
        "pixels": QWEN3_PIXELS,
        "parameters": _parameters(model),
        "visual_parameters": _parameters(model.model.visual),
        "ties": {name: {"config": _merged(MOE, change), "parameters": _parameters(_build(_merged(MOE, change), "meta"))}
                 for name, change in TIES.items()},
        "cases": cases,
    }


def class_defaults(model_type: str) -> dict:
    config = AutoConfig.for_model(model_type)
    saved = config.to_dict()
    for holder in (saved, saved["text_config"], saved["vision_config"]):
        holder.pop("transformers_version", None)
    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(config)
    return {"config": saved, "parameters": _parameters(model), "visual_parameters": _parameters(model.model.visual)}


def published(config: dict) -> dict:
    with torch.device("meta"):
        model = _build(config, "meta")
    return {"config": config, "parameters": _parameters(model), "visual_parameters": _parameters(model.model.visual)}


def _video_processor(name: str, vision: dict):
    cls = Qwen3VLVideoProcessor if name.startswith("qwen3") else Qwen2VLVideoProcessor
    return cls(patch_size=vision["patch_size"], merge_size=vision["spatial_merge_size"],
               temporal_patch_size=vision["temporal_patch_size"], do_sample_frames=False, cap_pixels_per_frame=False)


def measure_videos(name: str, config: dict) -> dict:
    model = _build(config)
    vision = config["vision_config"]
    processor = _video_processor(name, vision)
    generator = np.random.default_rng(3)
    cases = {}
    for case, (frames, height, width) in VIDEOS.items():
        video = generator.integers(0, 256, (frames, height, width, 3), dtype=np.uint8)
        try:
            inputs = processor(videos=[video], return_tensors="pt", input_data_format="channels_last")
        except ValueError as exc:  # Qwen3-VL's smart_resize refuses fewer frames than temporal_patch_size
            cases[case] = {"video": [frames, height, width], "refused": str(exc)}
            continue
        grid = inputs["video_grid_thw"]
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model.model.visual(inputs["pixel_values_videos"], grid_thw=grid)
        cases[case] = {"video": [frames, height, width], "video_grid_thw": grid.tolist(), "visual": int(counter.get_total_flops())}
    size = processor.size
    return {"config": config, "processor": type(processor).__name__,
            "pixels": {"shortest_edge": size.shortest_edge, "longest_edge": size.longest_edge}, "cases": cases}


def main() -> None:
    warnings.filterwarnings("ignore")
    towers = {name: {k: v for k, v in CONFIGS[name].items() if k != "pixels"} for name in ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_5")}
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__.split("+")[0],
        "models": {"qwen3_vl_moe": measure_moe()},
        "defaults": {"qwen3_vl_moe": class_defaults("qwen3_vl_moe")},
        "published": {name: published(config) for name, config in PUBLISHED.items()},
        "videos": {name: measure_videos(name, config) for name, config in {**towers, "qwen3_vl_moe": MOE}.items()},
    }
    (HERE / "forward_qwenvid.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
