"""Measure tiny GIT, Fuyu and Phi-4-multimodal forward passes with real images (brief phi4git): each tower and the
language model together, under torch's FlopCounterMode, with transformers' own image processors.

GIT: random RGB images go through CLIPImageProcessorPil at the tower's image_size (GIT's
processor: shortest edge resized to it, then a centre crop to a square), one image per sequence
(GitModel takes a 4D pixel_values, one image per batch row), and GitForCausalLM runs on it with
eager attention. Recorded: the FLOPs of the whole forward, of the CLIP image encoder, of the visual
projection and the rest; the (query, key) pairs of the 4D mask the text decoder receives, with and
without the image (the image tokens attend to each other bidirectionally).

Fuyu: FuyuProcessor's own image path (``_process_images``: FuyuImageProcessorPil's resize to fit
within 1080 x 1920 and padding, the patches of the unpadded part, and ``replace_image_token``'s
placeholder text: a ``|SPEAKER|`` per patch, a ``|NEWLINE|`` per row of patches, ``<s>`` after),
the text after it, and FuyuForCausalLM on the patches. Recorded: the FLOPs of the whole forward,
of the patch projection and the rest, the expansion's tokens; and for a dozen sizes the patch grid
and token count the processor gives.

Phi-4-multimodal: Phi4MultimodalImageProcessor (its class defaults: 448-pixel crops, dynamic_hd
36; it needs torchvision) crops each image, and Phi4MultimodalForCausalLM runs on its
num_img_tokens image tokens and the text. Recorded: the FLOPs of the whole forward, of every module
of the image embedding (the SigLIP's embedding, each layer, the pooling head, the projections),
the real patches of each crop (the processor's mask) and the token counts; and for 15 sizes the
crops' canvas, each crop's real patches and num_img_tokens.

The tiny models' parameters (and GIT's class defaults') are recorded for each. The result,
forward_phi4git.json, comes from torch and transformers alone: tests/hf/test_phi4git_forward.py
compares flopsreg with it.

Needs torch, transformers, Pillow and torchvision (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 pillow torchvision && python tests/data/hf_forward/measure_phi4git.py
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from unittest import mock

import numpy as np
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers import (
    AutoConfig,
    CLIPImageProcessorPil,
    FuyuForCausalLM,
    FuyuImageProcessorPil,
    FuyuProcessor,
    GitForCausalLM,
    Phi4MultimodalForCausalLM,
    Phi4MultimodalImageProcessor,
)
from transformers.processing_utils import ProcessorMixin

HERE = Path(__file__).parent
TEXT_TOKENS = 7

# Odd widths; GIT's CLIP tower at 42 pixels, patch 14: 3 x 3 patches and the class token.
GIT_CONFIG = {
    "model_type": "git", "hidden_size": 44, "intermediate_size": 58, "num_hidden_layers": 2, "num_attention_heads": 4,
    "vocab_size": 97, "max_position_embeddings": 64, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
    "vision_config": {"hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 3, "num_attention_heads": 3,
                      "image_size": 42, "patch_size": 14},
}
GIT_CASES = {"landscape": [(300, 500)], "portrait": [(450, 260)], "small": [(20, 30)]}

SPEAKER, NEWLINE, BOS, BOA = 71, 72, 1, 3  # |SPEAKER| (the image token), |NEWLINE|, <s>, <0x04>
FUYU_PIECES = {"|SPEAKER|": SPEAKER, "|NEWLINE|": NEWLINE, "<s>": BOS}
# The published patch (30) and target size (1080 x 1920); a tiny Persimmon decoder of odd widths.
FUYU_CONFIG = {
    "model_type": "fuyu", "patch_size": 30, "num_channels": 3, "image_token_id": SPEAKER,
    "text_config": {"model_type": "persimmon", "hidden_size": 60, "intermediate_size": 58, "num_hidden_layers": 2,
                    "num_attention_heads": 5, "vocab_size": 97, "max_position_embeddings": 4096},
}
# One image per sequence, as FuyuProcessor takes them; "two" places two expansions before the text.
FUYU_CASES = {"small": [(300, 500)], "large": [(2000, 3000)], "tall": [(1100, 700)], "two": [(45, 1900), (61, 29)]}
# Sizes whose patch grid and tokens the processor gives (no model run): small, exact multiples,
# one pixel over, larger than the target either way, extreme aspect ratios.
FUYU_SIZES = [(1, 1), (30, 30), (31, 30), (300, 500), (1080, 1920), (1081, 1920), (1080, 1921), (2000, 3000),
              (1100, 700), (45, 1900), (5000, 20), (20, 5000), (719, 1279)]


def _images(sizes, seed: int) -> list[np.ndarray]:
    generator = np.random.default_rng(seed)
    return [generator.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in sizes]


def _pairs(mask: torch.Tensor) -> int:
    allowed = mask if mask.dtype == torch.bool else mask == 0
    return int(allowed.sum())


def _eager(model) -> None:
    for config in (model.config, *(getattr(model.config, name) for name in ("vision_config", "text_config") if hasattr(model.config, name))):
        config._attn_implementation = "eager"


def _flops(counter: FlopCounterMode, module: str) -> int:
    return int(sum(counter.get_flop_counts().get(module, {}).values()))


def measure_git() -> dict:
    config = {k: v for k, v in GIT_CONFIG.items() if k != "model_type"}
    torch.manual_seed(0)
    model = GitForCausalLM(AutoConfig.for_model("git", **config)).eval()
    _eager(model)
    size = GIT_CONFIG["vision_config"]["image_size"]
    processor = CLIPImageProcessorPil(size={"shortest_edge": size}, crop_size={"height": size, "width": size})
    masks = []
    handle = model.git.encoder.register_forward_pre_hook(
        lambda module, args, kwargs: masks.append(_pairs(kwargs["attention_mask"])), with_kwargs=True
    )
    cases = {}
    for case, sizes in GIT_CASES.items():
        inputs = processor(images=_images(sizes, 1), return_tensors="pt", input_data_format="channels_last")
        ids = torch.randint(3, 90, (1, TEXT_TOKENS))
        counter = FlopCounterMode(display=False)
        masks.clear()
        with torch.no_grad(), counter:
            output = model(input_ids=ids, pixel_values=inputs["pixel_values"])
        with torch.no_grad():
            model(input_ids=ids)
        root = type(model).__name__
        encoder, projection = _flops(counter, f"{root}.git.image_encoder"), _flops(counter, f"{root}.git.visual_projection")
        cases[case] = {
            "images": [list(s) for s in sizes],
            "pixel_values": list(inputs["pixel_values"].shape),
            "sequence_length": int(output.logits.shape[1]),
            "forward": int(counter.get_total_flops()),
            "image_encoder": encoder,
            "visual_projection": projection,
            "rest": int(counter.get_total_flops()) - encoder - projection,
            "mask_pairs": masks[0],
            "mask_pairs_text": masks[1],
        }
    handle.remove()
    default = GitForCausalLM(AutoConfig.for_model("git"))
    return {
        "config": GIT_CONFIG, "class": type(model).__name__, "text_tokens": TEXT_TOKENS,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "vision_parameters": int(sum(p.numel() for p in model.git.image_encoder.parameters())),
        "projection_parameters": int(sum(p.numel() for p in model.git.visual_projection.parameters())),
        "default_parameters": int(sum(p.numel() for p in default.parameters())),
        "cases": cases,
    }


class _Vocab:
    """A stand-in tokenizer: FuyuProcessor reads only the ids of its two image tokens from it."""

    def get_vocab(self) -> dict[str, int]:
        return {"|SPEAKER|": SPEAKER, "|NEWLINE|": NEWLINE}


class _FuyuImages(FuyuImageProcessorPil):
    """FuyuImageProcessorPil, its patchify taking the torch tensors FuyuProcessor hands it (its
    numpy patchify, unchanged; the torch image processor needs torchvision)."""

    def patchify_image(self, image, patch_size=None):
        return torch.from_numpy(super().patchify_image(image=np.asarray(image), patch_size=patch_size))


def _fuyu_processor() -> FuyuProcessor:
    """FuyuProcessor's image path without a tokenizer: its own _process_images and replace_image_token."""
    with mock.patch.object(ProcessorMixin, "__init__", lambda self, **kwargs: None):
        processor = FuyuProcessor(image_processor=None, tokenizer=_Vocab())
    processor.image_processor = _FuyuImages()
    processor.image_token, processor.image_newline_token = "|SPEAKER|", "|NEWLINE|"
    return processor


def _pieces(text: str) -> list[str]:
    out = []
    while text:
        piece = next(p for p in FUYU_PIECES if text.startswith(p))
        out.append(piece)
        text = text[len(piece):]
    return out


def _fuyu_image(processor: FuyuProcessor, image: np.ndarray) -> tuple[torch.Tensor, list[str], list[int]]:
    """The patches of one image, its placeholder expansion and its (rows, columns) of patches."""
    processed, (replacement,) = processor._process_images(
        [image], return_legacy_image_output=False, return_tensors="pt", input_data_format="channels_last"
    )
    pieces = _pieces(replacement)
    rows = pieces.count("|NEWLINE|")
    return processed["pixel_values"], pieces, [rows, pieces.count("|SPEAKER|") // rows]


def measure_fuyu() -> dict:
    config = {k: v for k, v in FUYU_CONFIG.items() if k != "model_type"}
    torch.manual_seed(0)
    model = FuyuForCausalLM(AutoConfig.for_model("fuyu", **config)).eval()
    _eager(model)
    processor = _fuyu_processor()
    cases = {}
    for case, sizes in FUYU_CASES.items():
        patches, ids, grids = [], [], []
        for image in _images(sizes, 1):
            pixels, pieces, grid = _fuyu_image(processor, image)
            patches.append(pixels)
            ids += [FUYU_PIECES[p] for p in pieces]
            grids.append(grid)
        ids = torch.tensor(ids + torch.randint(5, 70, (TEXT_TOKENS - 1,)).tolist() + [BOA]).unsqueeze(0)
        pixel_values = torch.cat(patches, dim=0).unsqueeze(0)
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(input_ids=ids, pixel_values=pixel_values)
        projection = _flops(counter, f"{type(model).__name__}.model.vision_embed_tokens")
        cases[case] = {
            "images": [list(s) for s in sizes], "grids": grids, "pixel_values": list(pixel_values.shape),
            "sequence_length": int(ids.shape[1]), "forward": int(counter.get_total_flops()),
            "patch_projection": projection, "rest": int(counter.get_total_flops()) - projection,
        }
    sizes = {}
    for (height, width), image in zip(FUYU_SIZES, _images(FUYU_SIZES, 2), strict=True):
        processed = processor.image_processor(images=[image], return_tensors="pt", input_data_format="channels_last")
        _, pieces, grid = _fuyu_image(processor, image)
        sizes[f"{height}x{width}"] = {
            "resized": [int(processed["image_unpadded_heights"][0][0]), int(processed["image_unpadded_widths"][0][0])],
            "padded": list(processed["images"].shape[-2:]), "grid": grid, "tokens": len(pieces),
        }
    return {
        "config": FUYU_CONFIG, "class": type(model).__name__, "text_tokens": TEXT_TOKENS,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "projection_parameters": int(sum(p.numel() for p in model.model.vision_embed_tokens.parameters())),
        "target": dict(processor.image_processor.size), "processor_patch": dict(processor.image_processor.patch_size),
        "cases": cases, "sizes": sizes,
    }


PHI4_IMAGE = 90  # the vision config's image_token_id (200010 in the published vocabulary)
# The published crop (448 pixels, patch 14: 32 x 32 patches a crop, as the processor's 256 + 16
# global tokens require); a tiny SigLIP and Phi-3 decoder of odd widths, a one-block audio tower.
PHI4_CONFIG = {
    "model_type": "phi4_multimodal", "hidden_size": 48, "intermediate_size": 58, "num_hidden_layers": 2,
    "num_attention_heads": 3, "num_key_value_heads": 1, "vocab_size": 97, "max_position_embeddings": 8192,
    "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
    "vision_config": {"hidden_size": 26, "intermediate_size": 34, "num_hidden_layers": 3, "num_attention_heads": 2,
                      "image_size": 448, "patch_size": 14, "crop_size": 448, "image_token_id": PHI4_IMAGE, "feature_layer": -2},
    "audio_config": {"hidden_size": 16, "intermediate_size": 18, "num_blocks": 1, "num_attention_heads": 2,
                     "ext_pw_out_channel": 16, "depthwise_separable_out_channel": 16, "nemo_conv_channels": 16,
                     "audio_token_id": 91},
}
# The images of one sequence, per case: crops of their own (padded by the processor), and two
# images whose crop counts differ (the processor pads the shorter to the longer's with blank crops).
PHI4_CASES = {"wide": [(720, 1280)], "square": [(448, 448)], "strip": [(100, 3000)], "two": [(300, 500), (900, 500)]}
# Sizes whose crops, masks and tokens the processor gives (no model run): exact crops, one pixel
# over, more than dynamic_hd crops (the closest aspect ratio), extreme strips, tiny.
PHI4_SIZES = [(448, 448), (449, 448), (448, 449), (720, 1280), (1080, 1920), (300, 500), (900, 500), (100, 3000),
              (3000, 100), (4000, 4000), (2000, 6000), (10, 10), (37, 2500), (1344, 896), (5000, 900)]


def _phi4_masks(output) -> list[list[int]]:
    """Real patches of each crop (global first) per image: the processor's image_attention_mask."""
    return output["image_attention_mask"].sum((-1, -2)).long().tolist()


def measure_phi4() -> dict:
    config = {k: v for k, v in PHI4_CONFIG.items() if k != "model_type"}
    torch.manual_seed(0)
    model = Phi4MultimodalForCausalLM(AutoConfig.for_model("phi4_multimodal", **config)).eval()
    _eager(model)
    model.model.embed_tokens_extend.image_embed.img_processor.config._attn_implementation = "eager"
    processor = Phi4MultimodalImageProcessor()
    root = type(model).__name__
    cases = {}
    for case, sizes in PHI4_CASES.items():
        inputs = processor(images=_images(sizes, 1), return_tensors="pt", input_data_format="channels_last")
        tokens = [int(n) for n in inputs["num_img_tokens"]]
        ids = [PHI4_IMAGE] * sum(tokens) + torch.randint(3, 89, (TEXT_TOKENS,)).tolist()
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(input_ids=torch.tensor([ids]), image_pixel_values=inputs["image_pixel_values"],
                  image_sizes=inputs["image_sizes"], image_attention_mask=inputs["image_attention_mask"])
        prefix = f"{root}.model.embed_tokens_extend.image_embed"
        modules = {name[len(prefix) + 1:]: int(sum(c.values())) for name, c in counter.get_flop_counts().items()
                   if name.startswith(prefix + ".")}
        image = _flops(counter, prefix)
        cases[case] = {
            "images": [list(s) for s in sizes], "pixel_values": list(inputs["image_pixel_values"].shape),
            "image_sizes": inputs["image_sizes"].tolist(), "real_patches": _phi4_masks(inputs), "tokens": tokens,
            "sequence_length": len(ids), "forward": int(counter.get_total_flops()), "image_embed": image,
            "modules": modules, "rest": int(counter.get_total_flops()) - image,
        }
    sizes = {}
    for (height, width), image in zip(PHI4_SIZES, _images(PHI4_SIZES, 2), strict=True):
        try:
            output = processor(images=[image], return_tensors="pt", input_data_format="channels_last")
        except ValueError as exc:
            sizes[f"{height}x{width}"] = {"error": str(exc)}
            continue
        sizes[f"{height}x{width}"] = {
            "image_size": output["image_sizes"][0].tolist(), "crops": int(output["image_pixel_values"].shape[1]) - 1,
            "real_patches": _phi4_masks(output)[0], "tokens": int(output["num_img_tokens"][0]),
        }
    image_embed = model.model.embed_tokens_extend.image_embed
    return {
        "config": PHI4_CONFIG, "class": root, "text_tokens": TEXT_TOKENS,
        "processor": {"size": dict(processor.size), "patch_size": processor.patch_size, "dynamic_hd": processor.dynamic_hd},
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "vision_parameters": int(sum(p.numel() for p in image_embed.parameters())),
        "cases": cases, "sizes": sizes,
    }


def main() -> None:
    warnings.filterwarnings("ignore")
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__.split("+")[0],
        "models": {"git": measure_git(), "fuyu": measure_fuyu(), "phi4_multimodal": measure_phi4()},
    }
    (HERE / "forward_phi4git.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
