"""Measure tiny Mllama forward passes with real images (brief mllamaimg): the tiled vision
encoder, the projector and the language model with its cross-attention layers, under torch's
FlopCounterMode, and the masks transformers builds for them.

Random RGB images go through transformers' own image processor (MllamaImageProcessorPil: the
tiled canvas, padding to max_image_tiles, aspect_ratio_ids and aspect_ratio_mask); the text is one
``<|image|>`` token per image, the images before the text (as flopsreg places them), and the
cross_attention_mask is built by processing_mllama's own get_cross_attention_token_mask and
convert_sparse_cross_attention_mask_to_dense, as MllamaProcessor builds it. Recorded: the FLOPs
of the whole forward, of the vision encoder's pieces, the projector and each language-model
layer; the allowed (query, key) pairs of the vision attention mask and of the cross-attention
mask, and the rows the latter masks out; the processor's tiling of a dozen sizes at the
published tile size (560, 4 tiles); the class-default parameters. The result,
forward_mllamaimg.json, comes from torch and transformers alone: tests/hf/test_mllamaimg_forward.py
compares flopsreg with it.

Needs torch, transformers and Pillow (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 pillow && python tests/data/hf_forward/measure_mllamaimg.py
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig, MllamaForConditionalGeneration, MllamaImageProcessorPil
from transformers.models.mllama.modeling_mllama import _prepare_aspect_ratio_attention_mask, _prepare_cross_attention_mask
from transformers.models.mllama.processing_mllama import (
    convert_sparse_cross_attention_mask_to_dense,
    get_cross_attention_token_mask,
)

HERE = Path(__file__).parent
TEXT_TOKENS = 7
IMAGE = 97  # <|image|>: a row of embed_tokens past vocab_size, as in the published configs (128256)
# Odd widths; a 56-pixel tile of 14-pixel patches holds 16 patches and the class position: 17,
# padded to 24 (a multiple of 8) by the encoder; up to 4 tiles per image.
CONFIG = {
    "model_type": "mllama", "image_token_index": IMAGE,
    "text_config": {"model_type": "mllama_text_model", "hidden_size": 60, "intermediate_size": 58, "num_hidden_layers": 5,
                    "num_attention_heads": 5, "num_key_value_heads": 1, "vocab_size": 97, "cross_attention_layers": [1, 3], "pad_token_id": 0,
                    "bos_token_id": 1, "eos_token_id": 2,
                    "max_position_embeddings": 512},
    "vision_config": {"model_type": "mllama_vision_model", "hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 3,
                      "num_global_layers": 2, "attention_heads": 3, "image_size": 56, "patch_size": 14, "max_num_tiles": 4,
                      "intermediate_layers_indices": [0, 2], "vision_output_dim": 108},
}
# (height, width) of the images of one sequence, per case.
CASES = {"one": [(50, 60)], "wide": [(60, 200)], "two": [(100, 40), (130, 230)], "three": [(300, 310), (20, 30), (56, 112)]}
# Sizes whose tiling the published processor (tile 560, 4 tiles) is recorded for.
SIZES = [(560, 560), (720, 1280), (1280, 720), (480, 640), (100, 100), (1000, 1000), (560, 1120), (300, 2000),
         (2000, 300), (1121, 560), (333, 777), (1600, 1200), (50, 3000)]


def _images(sizes, seed: int) -> list[np.ndarray]:
    generator = np.random.default_rng(seed)
    return [generator.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in sizes]


def _tiling(processor: MllamaImageProcessorPil, size: tuple[int, int]) -> dict:
    """What the processor makes of one image: the resized size, the tiles and the aspect-ratio id."""
    (image,) = _images([size], 2)
    chw = image.transpose(2, 0, 1)
    resized, (rows, columns) = processor.resize(chw, size=processor.size, max_image_tiles=processor.max_image_tiles)
    out = processor(images=[[image]], return_tensors="np", input_data_format="channels_last")
    return {
        "image": list(size), "resized": [int(n) for n in resized.shape[1:]], "tiles": [int(rows), int(columns)],
        "num_tiles": int(out["num_tiles"][0][0]), "aspect_ratio_id": int(out["aspect_ratio_ids"][0][0]),
        "aspect_ratio_mask": out["aspect_ratio_mask"][0][0].tolist(), "pixel_values": list(out["pixel_values"].shape),
    }


def _module(counts, name: str) -> int:
    return int(sum(counts.get(name, {}).values()))


def measure() -> dict:
    config = {k: v for k, v in CONFIG.items() if k != "model_type"}
    hf_config = AutoConfig.for_model("mllama", **config)
    torch.manual_seed(0)
    model = MllamaForConditionalGeneration(hf_config).eval()
    for sub in (model.config, model.config.text_config, model.config.vision_config):
        sub._attn_implementation = "eager"
    vision = CONFIG["vision_config"]
    processor = MllamaImageProcessorPil(size={"height": vision["image_size"], "width": vision["image_size"]},
                                        max_image_tiles=vision["max_num_tiles"])
    root = type(model).__name__
    cases = {}
    for case, sizes in CASES.items():
        inputs = processor(images=[_images(sizes, 1)], return_tensors="pt", input_data_format="channels_last")
        ids = [IMAGE] * len(sizes) + torch.randint(0, 90, (TEXT_TOKENS,)).tolist()
        token_mask = [get_cross_attention_token_mask(ids, IMAGE)]
        dense = convert_sparse_cross_attention_mask_to_dense(token_mask, inputs["num_tiles"], vision["max_num_tiles"], len(ids))
        cross_mask = torch.tensor(dense)
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(input_ids=torch.tensor([ids]), pixel_values=inputs["pixel_values"], aspect_ratio_ids=inputs["aspect_ratio_ids"],
                  aspect_ratio_mask=inputs["aspect_ratio_mask"], cross_attention_mask=cross_mask)
        counts = counter.get_flop_counts()
        num_patches = model.model.vision_model.num_patches
        target = num_patches + (8 - num_patches % 8) % 8
        vision_mask = _prepare_aspect_ratio_attention_mask(inputs["aspect_ratio_mask"].reshape(len(sizes), -1), num_patches, target, torch.float32)
        masked, row_mask = _prepare_cross_attention_mask(cross_mask, num_patches, torch.float32)
        text_model = f"{root}.model.language_model"
        cases[case] = {
            "images": [list(size) for size in sizes],
            "pixel_values": list(inputs["pixel_values"].shape),
            "num_tiles": [int(n) for n in inputs["num_tiles"][0]],
            "aspect_ratio_ids": inputs["aspect_ratio_ids"][0].tolist(),
            "sequence_length": len(ids),
            "forward": int(counter.get_total_flops()),
            "vision_model": _module(counts, f"{root}.model.vision_model"),
            "patch_embedding": _module(counts, f"{root}.model.vision_model.patch_embedding"),
            "transformer": _module(counts, f"{root}.model.vision_model.transformer"),
            "global_transformer": _module(counts, f"{root}.model.vision_model.global_transformer"),
            "projector": _module(counts, f"{root}.model.multi_modal_projector"),
            "layers": [_module(counts, f"{text_model}.layers.{n}") for n in range(CONFIG["text_config"]["num_hidden_layers"])],
            "lm_head": _module(counts, f"{root}.lm_head"),
            # allowed (query, key) pairs per image of the encoders' mask (0 where allowed), over the padded tiles
            "vision_mask_pairs": [int((vision_mask[n, 0] == 0).sum()) for n in range(len(sizes))],
            "vision_mask_length": int(vision_mask.shape[-1]),
            # allowed (text, vision token) pairs of the cross-attention mask, and the rows it keeps
            "cross_mask_pairs": int((masked[0, 0] == 0).logical_and(row_mask[0, 0].bool()).sum()),
            "cross_mask_rows": int(row_mask.sum()),
            "cross_mask_keys": int(masked.shape[-1]),
        }
    # the language model on the same text without images (cross-attention layers skipped)
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(input_ids=torch.randint(0, 90, (1, TEXT_TOKENS)))
    return {
        "config": CONFIG,
        "class": type(model).__name__,
        "text_tokens": TEXT_TOKENS,
        "text_only_forward": int(counter.get_total_flops()),
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "vision_parameters": int(sum(p.numel() for p in model.model.vision_model.parameters())),
        "cases": cases,
    }


def main() -> None:
    warnings.filterwarnings("ignore")
    published = MllamaImageProcessorPil(size={"height": 560, "width": 560}, max_image_tiles=4)
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__.split("+")[0],
        "models": {"mllama": measure()},
        "tiling": [_tiling(published, size) for size in SIZES],
    }
    (HERE / "forward_mllamaimg.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
