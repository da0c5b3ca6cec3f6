"""Measure tiny Llama 4 forward passes with real tiled images (brief llama4img): the vision
encoder, the projector and the language model together, under torch's FlopCounterMode, and what
transformers' image processor and Llama4Processor make of images of many sizes.

Random RGB images go through transformers' own Llama4ImageProcessor (tiles of the tower's
image_size, max_patches 16, resize_to_max_canvas off, as the published preprocessor_config.json):
recorded are its tiles per image (the global thumbnail tile included), its aspect_ratios and the
resized size before padding (the extent of the pixels that are not the pad value; the images hold
no black pixel). The text is expanded as Llama4Processor.replace_image_token expands each
``<|image|>`` placeholder (``<|image_start|>``, per tile the pixel-shuffled ``<|patch|>`` tokens
with ``<|tile_x_separator|>`` / ``<|tile_y_separator|>``, ``<|image|>`` and the global tile's
tokens, ``<|image_end|>``), one id per special token as in Llama 4's tokenizer, the images before
the text; Llama4ForConditionalGeneration runs on it with eager attention. Recorded: the FLOPs of
the whole forward, of the vision model, the projector and the rest, the allowed (query, key)
pairs of the masks the language model receives (chunked and full), the whole model's parameters.
The result, forward_llama4img.json, comes from torch and transformers alone:
tests/hf/test_llama4img_forward.py compares flopsreg with it.

Needs torch, transformers, torchvision (Llama4ImageProcessor has only a torchvision backend) and
Pillow (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 torchvision pillow && python tests/data/hf_forward/measure_llama4img.py
(Recorded with torch 2.13.0+cpu and the torchvision 0.28.0 wheel without its compiled ops, which
the processor does not use: it resizes and pads with torch.)
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig, Llama4ForConditionalGeneration, Llama4ImageProcessor, Llama4Processor

HERE = Path(__file__).parent
TEXT_TOKENS = 7
PIECES = {"<|image_start|>": 90, "<|image_end|>": 91, "<|image|>": 92, "<|patch|>": 93,
          "<|tile_x_separator|>": 94, "<|tile_y_separator|>": 95}
# Odd widths; the text model's chunk (8) is shorter than an image's tokens; RoPE (chunked) and
# NoPE (full) layers; two MoE layers whose router picks every expert (transformers' Llama4TextMoe
# runs every expert on every token, scaled by the router: with top-k = experts the useful work and
# the computed work agree, so the record tests the count, not a reconciliation of routing).
CONFIG = {
    "model_type": "llama4", "boi_token_index": 90, "eoi_token_index": 91, "image_token_index": PIECES["<|patch|>"],
    "tie_word_embeddings": False,
    "text_config": {"model_type": "llama4_text", "hidden_size": 44, "intermediate_size": 30, "intermediate_size_mlp": 58,
                    "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
                    "vocab_size": 97, "num_local_experts": 2, "num_experts_per_tok": 2, "moe_layers": [1, 3],
                    "no_rope_layers": [1, 1, 0, 1], "attention_chunk_size": 8, "max_position_embeddings": 4096},
    "vision_config": {"hidden_size": 36, "intermediate_size": 144, "num_hidden_layers": 3, "num_attention_heads": 3,
                      "image_size": 84, "patch_size": 14, "pixel_shuffle_ratio": 0.5, "projector_input_dim": 40,
                      "projector_output_dim": 40, "vision_output_dim": 40, "rope_theta": 10000},
}
# (height, width) of the images of one sequence, per case; tiles of 84 pixels, at most 16.
CASES = {"tiled": [(200, 300)], "single": [(60, 70)], "two": [(500, 130), (84, 84)]}
# The published processor (tiles of 336 pixels, max_patches 16) on images of many shapes and sizes.
SIZES = [(768, 1024), (1024, 768), (336, 336), (337, 336), (100, 2000), (2000, 100), (720, 1280), (1080, 1920),
         (300, 200), (50, 50), (3000, 4000), (672, 1008), (500, 500), (1, 1), (5000, 300), (400, 1400)]


def _processor(tile: int) -> Llama4ImageProcessor:
    return Llama4ImageProcessor(size={"height": tile, "width": tile}, max_patches=16, resize_to_max_canvas=False)


def _expansion(aspect_ratio: list[int], tile: int, patch: int, ratio: float) -> list[str]:
    """Llama4Processor.replace_image_token for one image, as the processor builds it (a processor
    without tokenizer: the expansion reads only its patch size and shuffle ratio), cut into tokens."""
    processor = Llama4Processor.__new__(Llama4Processor)
    processor.patch_size = patch
    processor.downsample_ratio = int(round(1.0 / (ratio**2)))
    inputs = {"pixel_values": [torch.zeros(3, tile, tile)], "aspect_ratios": [aspect_ratio]}
    text = processor.replace_image_token(inputs, 0)
    out = []
    while text:
        piece = next(p for p in PIECES if text.startswith(p))
        out.append(piece)
        text = text[len(piece):]
    return out


def _images(sizes, seed: int) -> list[np.ndarray]:
    generator = np.random.default_rng(seed)
    return [generator.integers(1, 256, (h, w, 3), dtype=np.uint8) for h, w in sizes]


def _resized(tiles: torch.Tensor, ratio: list[int]) -> list[int]:
    """The resized image's (height, width) inside the padded canvas: rows and columns holding a
    pixel that is not the pad value (0 normalised to -1)."""
    rows, columns = ratio
    tile = tiles.shape[-1]
    canvas = tiles[: rows * columns].reshape(rows, columns, 3, tile, tile).permute(2, 0, 3, 1, 4).reshape(3, rows * tile, columns * tile)
    real = (canvas != -1).any(dim=0)
    return [int(real.any(dim=1).sum()), int(real.any(dim=0).sum())]


def tiling(tile: int, sizes) -> list[dict]:
    processor = _processor(tile)
    vision = CONFIG["vision_config"]
    out = []
    for size, image in zip(sizes, _images(sizes, 2), strict=True):
        inputs = processor(images=[image], return_tensors="pt", input_data_format="channels_last")
        ratio = [int(v) for v in inputs["aspect_ratios"][0]]
        expansion = _expansion(ratio, tile, vision["patch_size"], vision["pixel_shuffle_ratio"])
        out.append({
            "image": list(size), "tiles": int(inputs["pixel_values"].shape[0]), "aspect_ratio": ratio,
            "resized": _resized(inputs["pixel_values"].float(), ratio), "tokens": len(expansion),
            "patch_tokens": expansion.count("<|patch|>"),
        })
    return out


def _run(model, **inputs) -> None:
    """The model's forward. transformers 5.24's Llama4ForConditionalGeneration.forward fails on its
    last line, building its output from the language model's (``outputs.image_outputs``), after all
    its work is done: that one error is let through, any other raised."""
    try:
        model(**inputs)
    except AttributeError as exc:
        if "image_outputs" not in str(exc):
            raise


def _pairs(mask: torch.Tensor) -> int:
    allowed = mask if mask.dtype == torch.bool else mask == 0
    return int(allowed.sum())


def _masks(model, ids: torch.Tensor) -> list[int]:
    """The pairs of the mask each decoder layer receives, in layer order (captured at its input)."""
    seen = {}

    def hook(index):
        def record(module, args, kwargs):
            seen[index] = _pairs(kwargs["attention_mask"])
        return record

    text = model.language_model.model
    handles = [layer.register_forward_pre_hook(hook(index), with_kwargs=True) for index, layer in enumerate(text.layers)]
    with torch.no_grad():
        _run(model, input_ids=ids)
    for handle in handles:
        handle.remove()
    return [seen[index] for index in range(len(text.layers))]


def measure() -> dict:
    config = {k: v for k, v in CONFIG.items() if k != "model_type"}
    hf_config = AutoConfig.for_model("llama4", **config)
    torch.manual_seed(0)
    model = Llama4ForConditionalGeneration(hf_config).eval()
    for sub in (model.config, model.config.text_config, model.config.vision_config):
        sub._attn_implementation = "eager"
    vision = CONFIG["vision_config"]
    tile = vision["image_size"]
    processor = _processor(tile)
    cases = {}
    for case, sizes in CASES.items():
        inputs = processor(images=_images(sizes, 1), return_tensors="pt", input_data_format="channels_last")
        expansions = [_expansion([int(v) for v in ratio], tile, vision["patch_size"], vision["pixel_shuffle_ratio"])
                      for ratio in inputs["aspect_ratios"]]
        ids = torch.tensor([PIECES[p] for expansion in expansions for p in expansion]
                           + torch.randint(0, 80, (TEXT_TOKENS,)).tolist()).unsqueeze(0)
        pixels = inputs["pixel_values"].float()
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            _run(model, input_ids=ids, pixel_values=pixels)
        counts = counter.get_flop_counts()
        root = type(model).__name__
        vision_flops = int(sum(counts.get(f"{root}.vision_model", {}).values()))
        adapter = int(sum(counts.get(f"{root}.vision_model.vision_adapter", {}).values()))
        embed = int(sum(counts.get(f"{root}.vision_model.patch_embedding", {}).values()))
        projector = int(sum(counts.get(f"{root}.multi_modal_projector", {}).values()))
        total = int(counter.get_total_flops())
        cases[case] = {
            "images": [list(size) for size in sizes],
            "aspect_ratios": [[int(v) for v in ratio] for ratio in inputs["aspect_ratios"]],
            "pixel_values": list(pixels.shape),
            "tokens": [len(expansion) for expansion in expansions],
            "sequence_length": int(ids.shape[1]),
            "forward": total,
            "vision_model": vision_flops,
            "patch_embedding": embed,
            "vision_adapter": adapter,
            "projector": projector,
            "rest": total - vision_flops - projector,
            "mask_pairs": _masks(model, ids),
        }
    return {
        "config": CONFIG,
        "class": type(model).__name__,
        "text_tokens": TEXT_TOKENS,
        "layer_types": list(model.config.text_config.layer_types),
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "vision_parameters": int(sum(p.numel() for p in model.vision_model.parameters())),
        "projector_parameters": int(sum(p.numel() for p in model.multi_modal_projector.parameters())),
        "expansion_tiled": _expansion([2, 3], tile, vision["patch_size"], vision["pixel_shuffle_ratio"]),
        "tiling": tiling(tile, SIZES[:8]),
        "cases": cases,
    }


def main() -> None:
    warnings.filterwarnings("ignore")
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__.split("+")[0],
        "models": {"llama4": measure()},
        "published_tiling": tiling(336, SIZES),
    }
    (HERE / "forward_llama4img.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
