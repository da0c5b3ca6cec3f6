"""Measure tiny Gemma 4 and Gemma 4 unified forward passes with real images (brief gemma4img):
the vision tower and its embedder (Gemma 4) or the encoder-free vision embedder (Gemma 4 unified)
and the language model together, under torch's FlopCounterMode, and the masks the language model
builds over image tokens.

Random RGB images of several sizes go through transformers' own image processor
(Gemma4ImageProcessorPil: aspect-preserving resize to the soft-token budget, patches padded to
``max_soft_tokens x pooling^2``), giving pixel_values and image_position_ids; the text is expanded
as Gemma4Processor.replace_image_token expands each placeholder (``<boi>`` + the soft tokens +
``<eoi>``), the images before the text, and the model runs on it with eager attention and the
processor's mm_token_type_ids (1 on the soft tokens). Gemma4UnifiedImageProcessor needs
torchvision, absent here: its pixel_values are built by Gemma4ImageProcessorPil with patches of
``patch x pooling`` pixels and a pooling of 1 (the same resize, since the budget in pixels is the
same; the same merged patches, row by row, and the same merged positions), padded to
max_soft_tokens as the unified processor pads them. Recorded: the FLOPs of the whole forward, of
the vision tower, its embedder and the rest; the boolean masks' allowed (query, key) pairs per
layer type with and without mm_token_type_ids; the parameters; and the processor's soft-token
counts and resized sizes for a dozen image sizes at the published defaults and other budgets.
The result, forward_gemma4img.json, comes from torch and transformers alone:
tests/hf/test_gemma4img_forward.py compares flopsreg with it.

Needs torch, transformers and Pillow (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 pillow && python tests/data/hf_forward/measure_gemma4img.py
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig, Gemma4ForConditionalGeneration, Gemma4ImageProcessorPil, Gemma4Processor
from transformers.models.gemma4_unified.modeling_gemma4_unified import Gemma4UnifiedForConditionalGeneration

HERE = Path(__file__).parent
TEXT_TOKENS = 7
BOI, EOI, IMAGE = 91, 92, 93
IDS = {"boi_token_id": BOI, "eoi_token_id": EOI, "image_token_id": IMAGE, "video_token_id": 94, "audio_token_id": 95,
       "boa_token_id": 96, "eoa_token_index": 97}
PIECES = {"<boi>": BOI, "<eoi>": EOI, "<image>": IMAGE}
# Odd widths; window 5, shorter than an image's soft tokens; sliding and full layers alternate.
TEXT = {"hidden_size": 44, "intermediate_size": 58, "num_hidden_layers": 4, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 12, "global_head_dim": 16, "vocab_size": 100, "sliding_window": 5,
        "layer_types": ["sliding_attention", "full_attention"] * 2, "max_position_embeddings": 4096, "pad_token_id": 0}
BUDGET = 70  # the processor's max_soft_tokens (the smallest it takes): 70 x 3^2 = 630 patches at most
MODELS = {
    "gemma4": {
        "model_type": "gemma4", **IDS, "tie_word_embeddings": True,
        "text_config": {"model_type": "gemma4_text", **TEXT, "hidden_size_per_layer_input": 0,
                        "use_bidirectional_attention": "vision"},
        "vision_config": {"model_type": "gemma4_vision", "hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 2,
                          "num_attention_heads": 3, "num_key_value_heads": 1, "head_dim": 12, "patch_size": 8,
                          "pooling_kernel_size": 3, "position_embedding_size": 64},
    },
    "gemma4_unified": {
        "model_type": "gemma4_unified", **IDS, "tie_word_embeddings": True,
        "text_config": {"model_type": "gemma4_unified_text", **TEXT},
        "vision_config": {"model_type": "gemma4_unified_vision", "patch_size": 8, "pooling_kernel_size": 3,
                          "mm_embed_dim": 30, "mm_posemb_size": 64, "output_proj_dims": 30},
    },
}
# (height, width) of the images of one sequence, per case.
CASES = {"one": [(300, 500)], "two": [(64, 100), (450, 260)], "three": [(1000, 180), (20, 30), (96, 96)]}
# The processor's soft tokens for a dozen sizes at the published defaults (patch 16, pooling 3,
# max_soft_tokens 280) and at the other budgets.
SIZES = [(480, 640), (720, 1280), (1080, 1920), (896, 896), (300, 300), (20, 30), (48, 48), (333, 777),
         (1500, 200), (100, 3000), (3000, 100), (2, 900), (900, 2), (4000, 3000)]
BUDGETS = [70, 140, 560, 1120]


def _images(sizes, seed: int) -> list[np.ndarray]:
    generator = np.random.default_rng(seed)
    return [generator.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in sizes]


def _replacement(soft: int) -> list[str]:
    """Gemma4Processor.replace_image_token for an image of *soft* soft tokens (a stand-in tokenizer
    gives the special tokens' text), cut into its tokens."""
    stub = SimpleNamespace(boi_token="<boi>", image_token="<image>", eoi_token="<eoi>")
    text = Gemma4Processor.replace_image_token(stub, {"num_soft_tokens_per_image": [soft]}, 0)
    out = []
    while text:
        piece = next(p for p in PIECES if text.startswith(p))
        out.append(piece)
        text = text[len(piece):]
    return out


def _pairs(mask: torch.Tensor) -> int:
    allowed = mask if mask.dtype == torch.bool else mask == 0
    return int(allowed.sum())


def _masks(model, ids: torch.Tensor, types: torch.Tensor | None, inputs) -> dict[str, int]:
    """The pairs of each mask the language model receives (captured at its input)."""
    seen = {}

    def hook(module, args, kwargs):
        seen.update({kind: _pairs(mask) for kind, mask in kwargs["attention_mask"].items()})

    handle = model.model.language_model.register_forward_pre_hook(hook, with_kwargs=True)
    with torch.no_grad():
        model.model(input_ids=ids, mm_token_type_ids=types, **inputs)
    handle.remove()
    return seen


def _inputs(name: str, sizes) -> tuple[dict, list[int]]:
    vision = MODELS[name]["vision_config"]
    patch, pooling = vision["patch_size"], vision["pooling_kernel_size"]
    if name == "gemma4":
        processor = Gemma4ImageProcessorPil(patch_size=patch, pooling_kernel_size=pooling, max_soft_tokens=BUDGET)
    else:  # the unified processor's merged patches: patch x pooling pixels a side, no pooling after
        processor = Gemma4ImageProcessorPil(patch_size=patch * pooling, pooling_kernel_size=1, max_soft_tokens=BUDGET)
        reference = Gemma4ImageProcessorPil(patch_size=patch, pooling_kernel_size=pooling, max_soft_tokens=BUDGET)
    out = processor(images=_images(sizes, 1), return_tensors="pt", input_data_format="channels_last")
    soft = [int(n) for n in out["num_soft_tokens_per_image"]]
    if name != "gemma4":
        check = reference(images=_images(sizes, 1), return_tensors="pt", input_data_format="channels_last")
        assert soft == [int(n) for n in check["num_soft_tokens_per_image"]]
    return {"pixel_values": out["pixel_values"], "image_position_ids": out["image_position_ids"]}, soft


def measure(name: str) -> dict:
    config = {k: v for k, v in MODELS[name].items() if k != "model_type"}
    hf_config = AutoConfig.for_model(name, **config)
    torch.manual_seed(0)
    cls = Gemma4ForConditionalGeneration if name == "gemma4" else Gemma4UnifiedForConditionalGeneration
    model = cls(hf_config).eval()
    model.config._attn_implementation = "eager"
    model.model.language_model.config._attn_implementation = "eager"
    tower = "vision_tower" if name == "gemma4" else "embed_vision"
    if name == "gemma4":
        model.model.vision_tower.config._attn_implementation = "eager"
    cases = {}
    for case, sizes in CASES.items():
        inputs, soft = _inputs(name, sizes)
        pieces = [p for n in soft for p in _replacement(n)]
        ids = torch.tensor([PIECES[p] for p in pieces] + torch.randint(1, 80, (TEXT_TOKENS,)).tolist()).unsqueeze(0)
        types = (ids == IMAGE).long()  # Gemma4Processor's mm_token_type_ids: 1 on the image soft tokens
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(input_ids=ids, mm_token_type_ids=types, **inputs)
        counts = counter.get_flop_counts()
        root = type(model).__name__
        parts = {part: int(sum(counts.get(f"{root}.model.{part}", {}).values())) for part in (tower, "embed_vision")}
        # Per module: the tower's pieces (patch embedder, encoder, pooler), for the reconciliation.
        pieces_flops = {
            module[len(f"{root}.model."):]: {str(op): int(n) for op, n in ops.items()}
            for module, ops in counts.items()
            if module.startswith(f"{root}.model.{tower}.") and module.count(".") <= 4
        }
        cases[case] = {
            "images": [list(size) for size in sizes],
            "soft_tokens": soft,
            "pixel_values": list(inputs["pixel_values"].shape),
            "sequence": pieces,
            "sequence_length": int(ids.shape[1]),
            "forward": int(counter.get_total_flops()),
            "tower": parts[tower],
            "embedder": parts["embed_vision"] if name == "gemma4" else 0,
            "tower_modules": pieces_flops,
            "rest": int(counter.get_total_flops()) - parts[tower] - (parts["embed_vision"] if name == "gemma4" else 0),
            "mask_pairs": _masks(model, ids, types, inputs),
            "mask_pairs_text": _masks(model, ids, None, inputs),
        }
    vision = model.model.vision_tower if name == "gemma4" else model.model.embed_vision
    return {
        "config": MODELS[name],
        "class": type(model).__name__,
        "text_tokens": TEXT_TOKENS,
        "max_soft_tokens": BUDGET,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "vision_parameters": int(sum(p.numel() for p in vision.parameters())),
        "embedder_parameters": int(sum(p.numel() for p in model.model.embed_vision.parameters())) if name == "gemma4" else 0,
        "cases": cases,
    }


def _resized(out, index: int, patch: int) -> list[int]:
    positions = out["image_position_ids"][index]
    real = positions[(positions != -1).all(axis=-1)]
    return [int(real[:, 1].max() + 1) * patch, int(real[:, 0].max() + 1) * patch]


def processor_counts() -> dict:
    """The published processor's defaults, and its soft tokens and resized size for each size and budget."""
    default = Gemma4ImageProcessorPil()
    record = {"defaults": {"patch_size": default.patch_size, "pooling_kernel_size": default.pooling_kernel_size,
                           "max_soft_tokens": default.max_soft_tokens},
              "processor_image_seq_length": Gemma4Processor.__init__.__defaults__[1], "sizes": {}}
    for budget in [default.max_soft_tokens, *BUDGETS]:
        processor = Gemma4ImageProcessorPil(max_soft_tokens=budget)
        entries = []
        for size in SIZES:
            try:
                out = processor(images=_images([size], 2), return_tensors="np", input_data_format="channels_last")
            except ValueError as exc:
                entries.append({"size": list(size), "error": str(exc)})
                continue
            entries.append({"size": list(size), "soft_tokens": int(out["num_soft_tokens_per_image"][0]),
                            "resized": _resized(out, 0, default.patch_size), "padded": int(out["pixel_values"].shape[1])})
        record["sizes"][str(budget)] = entries
    for budget in ("30", "300"):
        try:
            Gemma4ImageProcessorPil(max_soft_tokens=int(budget))
        except ValueError as exc:
            record[f"refused_{budget}"] = str(exc)
    return record


def main() -> None:
    warnings.filterwarnings("ignore")
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__.split("+")[0],
        "models": {name: measure(name) for name in MODELS},
        "processor": processor_counts(),
    }
    (HERE / "forward_gemma4img.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
