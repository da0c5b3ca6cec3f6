"""Measure tiny Mistral Large 4 (Pixtral ViT + patch-merger projector) and Kimi K2.5 (MoonViT +
projector) forward passes with real images (brief pixkimi), under torch's FlopCounterMode.

Mistral Large 4: random RGB images go through transformers' PixtralImageProcessorPil as
PixtralProcessor drives it (``patch_size = patch x spatial_merge_size``, ``longest_edge`` the
tower's image_size, as the published processors set it), and the text is expanded as
PixtralProcessor.replace_image_token expands each placeholder (recorded as it builds it: [IMG]
per merged patch, [IMG_BREAK] per row, [IMG_END] last). The processor pads the images of a
batch to the largest; PixtralVisionModel runs its Conv2d over the padded batch, then keeps the
real patches, and its eager attention runs over all the images' patches at once with a
block-diagonal mask: the record holds the Conv2d's and the attention matmuls' FLOPs apart, so
that the test reconciles them with the useful work.

Kimi K2.5: Kimi_K25ImageProcessor needs torchvision (not installed here), so the images are
planned by its own ``navit_resize`` (the function the processor calls) and the patches are the
processor's layout (patches x 3 x patch x patch) of a random image of that size; the text is
expanded by Kimi_K25Processor.replace_image_token. MoonViT attends within each image (split by
cu_seqlens), so no FLOPs are wasted across images.

Mistral Large 4 with ``vision_feature_layer`` 1, -3 and 4 (a four-layer tower, one image):
the tower still runs every layer, the projector reads the selected hidden states; each layer's
FLOPs are recorded apart, so that the test counts those whose output is thrown away.

Recorded per case: the FLOPs of the whole forward, of the vision tower, the projector and the
rest; the image-token counts; the parameters of the whole model and of its towers; the processors'
resize and token counts for a dozen sizes at the published settings. forward_pixkimi.json comes
from torch and transformers alone: tests/hf/test_pixkimi_forward.py compares flopsreg with it.

Needs torch, transformers and Pillow (not flopsreg dependencies):
    PYTHONPATH=/tmp/pilonly python tests/data/hf_forward/measure_pixkimi.py
"""

from __future__ import annotations

import ast
import json
import math
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import numpy as np
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig, AutoModelForImageTextToText, PixtralImageProcessorPil
from transformers.models.kimi_k25.processing_kimi_k25 import Kimi_K25Processor
from transformers.models.pixtral import image_processing_pil_pixtral, modeling_pixtral
from transformers.processing_utils import ProcessorMixin

# processing_pixtral imports the torchvision image processor's module for one function, which the
# Pil module defines the same way; torchvision is not installed here.
sys.modules.setdefault("transformers.models.pixtral.image_processing_pixtral", image_processing_pil_pixtral)
from transformers.models.pixtral.processing_pixtral import PixtralProcessor  # noqa: E402

HERE = Path(__file__).parent


def _navit_resize():
    """Kimi_K25ImageProcessor's ``navit_resize``, taken from its module's source: the module
    imports torchvision at the top, which is not installed here, and the function needs only math."""
    source = Path(transformers.__file__).parent / "models" / "kimi_k25" / "image_processing_kimi_k25.py"
    (node,) = [n for n in ast.parse(source.read_text()).body if isinstance(n, ast.FunctionDef) and n.name == "navit_resize"]
    namespace = {"math": math}
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(source), "exec"), namespace)
    return namespace["navit_resize"]


navit_resize = _navit_resize()
TEXT_TOKENS = 7
IMG, IMG_BREAK, IMG_END, MEDIA_PAD = 90, 91, 92, 93
# Kimi K2.5's chat template places each image as <|media_begin|>image<|media_content|> <|media_pad|>...
# <|media_end|> (vLLM's KimiK25ForConditionalGeneration.get_placeholder_str); the processor expands
# the one <|media_pad|>. Ids here: media_begin, the word "image", media_content, media_end.
KIMI_BEFORE, KIMI_AFTER = [94, 95, 96], [97]
PIXTRAL_PIECES = {"[IMG]": IMG, "[IMG_BREAK]": IMG_BREAK, "[IMG_END]": IMG_END}

# Mistral Large 4's text model as tests/data/hf_forward/measure_attention2026.py records it (MLA, DSA).
MLA = {
    "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4, "kv_lora_rank": 16,
    "qk_nope_head_dim": 8, "qk_rope_head_dim": 8, "v_head_dim": 8, "vocab_size": 128,
    "intermediate_size": 96, "moe_intermediate_size": 32, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "n_shared_experts": 1, "n_group": 1, "topk_group": 1, "first_k_dense_replace": 1, "max_position_embeddings": 256,
    "hidden_act": "silu", "tie_word_embeddings": False,
}
MISTRAL_LARGE4 = {
    "model_type": "mistral_large4", "image_token_index": IMG, "spatial_merge_size": 2,
    "text_config": {
        "model_type": "mistral_large4_text", **MLA, "index_topk": 6, "index_n_heads": 2, "index_head_dim": 16,
        "num_hidden_layers": 4, "no_rope_layers": [1, 1, 1, 0], "kv_source_layers": [0, 1, 1, 3],
        "indexer_types": ["full", "shared", "full", "full"],
    },
    # head_dim 12: the axial rope splits it in four; odd widths elsewhere.
    "vision_config": {
        "model_type": "pixtral", "hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 2,
        "num_attention_heads": 3, "image_size": 64, "patch_size": 4, "hidden_act": "silu",
    },
}
KIMI_K25 = {
    "model_type": "kimi_k25", "image_token_id": MEDIA_PAD, "projection_hidden_size": 36, "tie_word_embeddings": False,
    "text_config": {"model_type": "deepseek_v3", **MLA, "q_lora_rank": 24, "num_hidden_layers": 2},
    "vision_config": {
        "hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 2, "num_attention_heads": 3,
        "patch_size": 4, "pos_emb_height": 8, "pos_emb_width": 8, "merge_kernel_size": [2, 2],
    },
}
# (height, width) of the images of one sequence, per case; two images exercise the block-diagonal attention.
CASES = {
    "one": [(50, 37)],
    "two": [(100, 30), (23, 64)],
    "three": [(64, 64), (9, 200), (41, 41)],
}
# The dozen sizes the processors' rules are checked on, at the published settings.
SIZES = [(1, 1), (14, 14), (28, 29), (100, 37), (480, 640), (720, 1280), (1080, 1920), (1540, 1540),
         (1541, 10), (3000, 2000), (37, 4000), (999, 1001)]
PUBLISHED_PIXTRAL = {"patch": 14, "merge": 2, "longest_edge": 1540}  # Mistral Small 3.1 / Large 3's processor
PUBLISHED_KIMI = {"patch": 14, "merge": 2, "max_patches": 16384, "max_side": 512}  # Kimi_K25ImageProcessor's defaults


def _stub_processor(cls, **kwargs):
    """*cls* without its tokenizer and image processor: replace_image_token needs neither."""
    tokenizer = SimpleNamespace(convert_tokens_to_ids=lambda token: 0)
    with mock.patch.object(ProcessorMixin, "__init__", lambda self, *a, **k: None):
        return cls(image_processor=None, tokenizer=tokenizer, **kwargs)


def _pixtral_tokens(height: int, width: int, patch: int, merge: int) -> list[str]:
    processor = _stub_processor(PixtralProcessor, patch_size=patch, spatial_merge_size=merge)
    sequence = processor.replace_image_token({"image_sizes": [(height, width)]}, 0)
    out = []
    while sequence:
        piece = next(p for p in PIXTRAL_PIECES if sequence.startswith(p))
        out.append(piece)
        sequence = sequence[len(piece):]
    return out


def _pixtral_processor(patch: int, merge: int, longest_edge: int) -> PixtralImageProcessorPil:
    return PixtralImageProcessorPil(size={"longest_edge": longest_edge}, patch_size={"height": patch * merge, "width": patch * merge})


def _images(sizes, seed: int) -> list[np.ndarray]:
    generator = np.random.default_rng(seed)
    return [generator.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in sizes]


def _build(config: dict):
    hf_config = AutoConfig.for_model(config["model_type"], **{k: v for k, v in config.items() if k != "model_type"})
    torch.manual_seed(0)
    return AutoModelForImageTextToText.from_config(hf_config, attn_implementation="eager", experts_implementation="eager").eval()


def _count(model, **inputs) -> tuple[int, dict]:
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(**inputs)
    return int(counter.get_total_flops()), counter.get_flop_counts()


def _module(counts: dict, root: str, name: str) -> int:
    return int(sum(counts.get(f"{root}.{name}", {}).values()))


def _mask_recorder(masks: list[int]):
    """generate_block_attention_mask, recording the (query, key) pairs each mask it builds allows (0 where allowed)."""
    original = modeling_pixtral.generate_block_attention_mask

    def recording(patch_embeds_list, tensor):
        mask = original(patch_embeds_list, tensor)
        masks.append(int((mask[0, 0] == 0).sum()))
        return mask

    return recording


def measure_mistral_large4() -> dict:
    model = _build(MISTRAL_LARGE4)
    masks: list[int] = []
    modeling_pixtral.generate_block_attention_mask = _mask_recorder(masks)
    vision = MISTRAL_LARGE4["vision_config"]
    patch, merge = vision["patch_size"], MISTRAL_LARGE4["spatial_merge_size"]
    processor = _pixtral_processor(patch, merge, vision["image_size"])
    root = type(model).__name__
    tower = model.model.vision_tower
    cases = {}
    for case, sizes in CASES.items():
        inputs = processor(images=_images(sizes, 1), return_tensors="pt", input_data_format="channels_last")
        image_sizes = [tuple(map(int, s)) for s in inputs["image_sizes"].tolist()]
        pieces = [p for h, w in image_sizes for p in _pixtral_tokens(h, w, patch, merge)]
        ids = torch.tensor([PIXTRAL_PIECES[p] for p in pieces] + torch.randint(0, 80, (TEXT_TOKENS,)).tolist()).unsqueeze(0)
        masks.clear()
        total, counts = _count(model, input_ids=ids, pixel_values=inputs["pixel_values"], image_sizes=inputs["image_sizes"])
        vision_flops = _module(counts, root, "model.vision_tower")
        projector = _module(counts, root, "model.multi_modal_projector")
        attention_matmuls = sum(
            int(n) for module, ops in counts.items() if module.endswith(".attention") and "vision_tower" in module
            for op, n in ops.items() if "bmm" in str(op)
        )
        cases[case] = {
            "images": [list(size) for size in sizes],
            "image_sizes": [list(s) for s in image_sizes],
            "pixel_values": list(inputs["pixel_values"].shape),
            "image_tokens": [len(_pixtral_tokens(h, w, patch, merge)) for h, w in image_sizes],
            "sequence_length": int(ids.shape[1]),
            "forward": total,
            "vision_tower": vision_flops,
            "patch_conv": _module(counts, root, "model.vision_tower.patch_conv"),
            "attention_scores": attention_matmuls,
            "mask_pairs": list(masks),
            "projector": projector,
            "rest": total - vision_flops - projector,
        }
    return {
        "config": MISTRAL_LARGE4,
        "class": type(model).__name__,
        "text_tokens": TEXT_TOKENS,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "vision_parameters": int(sum(p.numel() for p in tower.parameters())),
        "projector_parameters": int(sum(p.numel() for p in model.model.multi_modal_projector.parameters())),
        "cases": cases,
    }


# Mistral Large 4 with vision_feature_layer other than -1: a four-layer tower, one image; the
# projector reads the selected hidden state (hidden_states[0] the patch embeddings), the tower
# still runs every layer. Recorded per layer, so that the test counts the ones thrown away.
FEATURE_LAYERS = {"one": 1, "minus_three": -3, "four": 4}
FEATURE_IMAGE = (50, 37)


def measure_feature_layers() -> dict:
    vision = {**MISTRAL_LARGE4["vision_config"], "num_hidden_layers": 4}
    patch, merge = vision["patch_size"], MISTRAL_LARGE4["spatial_merge_size"]
    processor = _pixtral_processor(patch, merge, vision["image_size"])
    inputs = processor(images=_images([FEATURE_IMAGE], 1), return_tensors="pt", input_data_format="channels_last")
    (height, width), = [tuple(map(int, s)) for s in inputs["image_sizes"].tolist()]
    pieces = _pixtral_tokens(height, width, patch, merge)
    ids = torch.tensor([PIXTRAL_PIECES[p] for p in pieces] + torch.randint(0, 80, (TEXT_TOKENS,)).tolist()).unsqueeze(0)
    cases = {}
    for case, layer in FEATURE_LAYERS.items():
        config = {**MISTRAL_LARGE4, "vision_config": vision, "vision_feature_layer": layer}
        model = _build(config)
        root = type(model).__name__
        total, counts = _count(model, input_ids=ids, pixel_values=inputs["pixel_values"], image_sizes=inputs["image_sizes"])
        vision_flops = _module(counts, root, "model.vision_tower")
        projector = _module(counts, root, "model.multi_modal_projector")
        cases[case] = {
            "config": config,
            "image_sizes": [[height, width]],
            "forward": total,
            "vision_tower": vision_flops,
            "patch_conv": _module(counts, root, "model.vision_tower.patch_conv"),
            "layers": [_module(counts, root, f"model.vision_tower.transformer.layers.{k}") for k in range(vision["num_hidden_layers"])],
            "projector": projector,
            "rest": total - vision_flops - projector,
            "parameters": int(sum(p.numel() for p in model.parameters())),
        }
    return {"image": list(FEATURE_IMAGE), "cases": cases}


def _kimi_patches(grid: tuple[int, int, int], patch: int, image: np.ndarray) -> torch.Tensor:
    """Kimi_K25ImageProcessor.patchify's layout (patches, 3, patch, patch) of an image of the padded size."""
    _, rows, columns = grid
    pixels = torch.tensor(image[: rows * patch, : columns * patch], dtype=torch.float32).permute(2, 0, 1) / 255
    return pixels.reshape(3, rows, patch, columns, patch).permute(1, 3, 0, 2, 4).reshape(rows * columns, 3, patch, patch)


def kimi_plan(height: int, width: int, patch: int, merge: int, max_patches: int, max_side: int) -> dict:
    (resized_h, resized_w), (pad_h, pad_w) = navit_resize(height, width, patch, merge, max_patches, max_side)
    grid = [1, pad_h // patch, pad_w // patch]
    processor = _stub_processor(Kimi_K25Processor)
    processor.image_processor = SimpleNamespace(merge_size=merge)
    tokens = processor.replace_image_token({"image_grid_thw": torch.tensor([grid])}, 0)
    return {"resized": [resized_h, resized_w], "padded": [pad_h, pad_w], "grid": grid,
            "tokens": len(tokens) // len(processor.image_token)}


def measure_kimi_k25() -> dict:
    model = _build(KIMI_K25)
    vision = KIMI_K25["vision_config"]
    patch, merge = vision["patch_size"], vision["merge_kernel_size"][0]
    root = type(model).__name__
    cases = {}
    for case, sizes in CASES.items():
        plans = [kimi_plan(h, w, patch, merge, PUBLISHED_KIMI["max_patches"], PUBLISHED_KIMI["max_side"]) for h, w in sizes]
        images = _images([plan["padded"] for plan in plans], 1)
        pixel_values = torch.cat([_kimi_patches(plan["grid"], patch, image) for plan, image in zip(plans, images)])
        grid = torch.tensor([plan["grid"] for plan in plans])
        placed = [i for plan in plans for i in (*KIMI_BEFORE, *[MEDIA_PAD] * plan["tokens"], *KIMI_AFTER)]
        ids = torch.tensor(placed + torch.randint(0, 80, (TEXT_TOKENS,)).tolist()).unsqueeze(0)
        total, counts = _count(model, input_ids=ids, pixel_values=pixel_values, image_grid_thw=grid)
        vision_flops = _module(counts, root, "model.vision_tower")
        projector = _module(counts, root, "model.mm_projector")
        cases[case] = {
            "images": [list(size) for size in sizes],
            "plans": plans,
            "pixel_values": list(pixel_values.shape),
            "sequence_length": int(ids.shape[1]),
            "forward": total,
            "vision_tower": vision_flops,
            "projector": projector,
            "rest": total - vision_flops - projector,
        }
    return {
        "config": KIMI_K25,
        "class": type(model).__name__,
        "text_tokens": TEXT_TOKENS,
        "wrapper_tokens": len(KIMI_BEFORE) + len(KIMI_AFTER),
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "vision_parameters": int(sum(p.numel() for p in model.model.vision_tower.parameters())),
        "projector_parameters": int(sum(p.numel() for p in model.model.mm_projector.parameters())),
        "cases": cases,
    }


def pixtral_resizing() -> list[dict]:
    """What PixtralImageProcessorPil and PixtralProcessor make of each of SIZES at the published settings."""
    p = PUBLISHED_PIXTRAL
    processor = _pixtral_processor(p["patch"], p["merge"], p["longest_edge"])
    rows = []
    for (h, w), image in zip(SIZES, _images(SIZES, 2)):
        size = [int(v) for v in processor(images=[image], return_tensors="np", input_data_format="channels_last")["image_sizes"][0]]
        rows.append({"size": [h, w], "resized": size, "tokens": len(_pixtral_tokens(*size, p["patch"], p["merge"]))})
    return rows


def kimi_resizing() -> list[dict]:
    p = PUBLISHED_KIMI
    return [{"size": [h, w], **kimi_plan(h, w, p["patch"], p["merge"], p["max_patches"], p["max_side"])} for h, w in SIZES]


def main() -> None:
    warnings.filterwarnings("ignore")
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__.split("+")[0],
        "models": {"mistral_large4": measure_mistral_large4(), "kimi_k25": measure_kimi_k25()},
        "feature_layers": measure_feature_layers(),
        "resizing": {"pixtral": {"settings": PUBLISHED_PIXTRAL, "sizes": pixtral_resizing()},
                     "kimi_k25": {"settings": PUBLISHED_KIMI, "sizes": kimi_resizing()}},
    }
    (HERE / "forward_pixkimi.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
