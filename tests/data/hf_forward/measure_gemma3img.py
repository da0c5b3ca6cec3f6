"""Measure tiny Gemma 3 forward passes with real images (brief gemma3img): the SigLIP tower, the
projector and the language model together, under torch's FlopCounterMode, and the masks the
language model builds over image tokens.

Random RGB images of several sizes go through transformers' own image processor
(Gemma3ImageProcessorPil at the tower's image_size, no pan-and-scan), giving pixel_values; the
text is expanded as Gemma3Processor expands each placeholder (its ``full_image_sequence``,
recorded as the processor builds it: ``"\\n\\n"``, ``<start_of_image>``, the soft tokens,
``<end_of_image>``, ``"\\n\\n"``; each ``"\\n\\n"`` one id here, as in Gemma 3's tokenizer), the
images before the text, and Gemma3ForConditionalGeneration runs on it with eager attention and
the processor's ``token_type_ids``. Recorded: the FLOPs of the whole forward, of the vision tower,
the projector and the rest; the boolean masks' allowed (query, key) pairs per layer type, with
and without token_type_ids (what the bidirectional image blocks add); the class-default
parameters. The result, forward_gemma3img.json, comes from torch and transformers alone:
tests/hf/test_gemma3img_forward.py compares flopsreg with it.

Needs torch, transformers and Pillow (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 pillow && python tests/data/hf_forward/measure_gemma3img.py
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import numpy as np
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig, Gemma3ForConditionalGeneration, Gemma3ImageProcessorPil, Gemma3Processor
from transformers.processing_utils import ProcessorMixin

HERE = Path(__file__).parent
TEXT_TOKENS = 7
NEWLINES, BOI, EOI, IMAGE = 90, 91, 92, 93  # "\n\n", <start_of_image>, <end_of_image>, <image_soft_token>
PIECES = {"\n\n": NEWLINES, "<start_of_image>": BOI, "<end_of_image>": EOI, "<image_soft_token>": IMAGE}
# Odd widths; the text model's window (3) is shorter than an image's 9 soft tokens, and its
# layers alternate sliding and full (sliding_window_pattern 2).
CONFIG = {
    "model_type": "gemma3", "mm_tokens_per_image": 9, "boi_token_index": BOI, "eoi_token_index": EOI,
    "image_token_index": IMAGE, "tie_word_embeddings": True,
    "text_config": {"model_type": "gemma3_text", "hidden_size": 44, "intermediate_size": 58, "num_hidden_layers": 4,
                    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12, "vocab_size": 97,
                    "sliding_window": 3, "layer_types": ["sliding_attention", "full_attention"] * 2,
                    "max_position_embeddings": 4096},
    "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 3,
                      "num_attention_heads": 3, "image_size": 84, "patch_size": 14, "vision_use_head": False},
}
# (height, width) of the images of one sequence, per case: every image is resized to 84 x 84.
CASES = {"one": [(300, 500)], "two": [(64, 100), (450, 260)], "three": [(1000, 180), (84, 84), (20, 30)]}


def _full_image_sequence(tokens: int) -> str:
    """Gemma3Processor's replacement of one image placeholder, as it builds it (a stand-in tokenizer
    gives the special tokens' text; the processor's base class is not needed to build it)."""
    stub = SimpleNamespace(boi_token="<start_of_image>", boi_token_id=BOI, image_token="<image_soft_token>", eoi_token="<end_of_image>")
    with mock.patch.object(ProcessorMixin, "__init__", lambda self, **kwargs: None):
        processor = Gemma3Processor(image_processor=None, tokenizer=stub, image_seq_length=tokens)
    assert processor.replace_image_token({"num_crops": [0]}, 0) == processor.full_image_sequence  # no pan-and-scan
    return processor.full_image_sequence


def _pieces(sequence: str) -> list[str]:
    """The sequence cut into the pieces it is made of, in order."""
    out = []
    while sequence:
        piece = next(p for p in PIECES if sequence.startswith(p))
        out.append(piece)
        sequence = sequence[len(piece):]
    return out


def _images(sizes, seed: int) -> list[np.ndarray]:
    generator = np.random.default_rng(seed)
    return [generator.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in sizes]


def _pairs(mask: torch.Tensor) -> int:
    """Allowed (query, key) pairs of a 4D mask (boolean, or additive with 0 where allowed)."""
    allowed = mask if mask.dtype == torch.bool else mask == 0
    return int(allowed.sum())


def _masks(model, ids: torch.Tensor, token_type_ids: torch.Tensor | None) -> dict[str, int]:
    """The pairs of each mask the language model receives (captured at its input)."""
    seen = {}

    def hook(module, args, kwargs):
        seen.update({kind: _pairs(mask) for kind, mask in kwargs["attention_mask"].items()})

    handle = model.model.language_model.register_forward_pre_hook(hook, with_kwargs=True)
    with torch.no_grad():
        model.model(input_ids=ids, token_type_ids=token_type_ids)
    handle.remove()
    return seen


def measure() -> dict:
    config = {k: v for k, v in CONFIG.items() if k != "model_type"}
    hf_config = AutoConfig.for_model("gemma3", **config)
    torch.manual_seed(0)
    model = Gemma3ForConditionalGeneration(hf_config).eval()
    model.config._attn_implementation = "eager"
    model.model.language_model.config._attn_implementation = "eager"
    model.model.vision_tower.config._attn_implementation = "eager"
    vision = CONFIG["vision_config"]
    processor = Gemma3ImageProcessorPil(size={"height": vision["image_size"], "width": vision["image_size"]}, do_pan_and_scan=False)
    sequence = _pieces(_full_image_sequence(CONFIG["mm_tokens_per_image"]))
    cases = {}
    for case, sizes in CASES.items():
        inputs = processor(images=_images(sizes, 1), return_tensors="pt", input_data_format="channels_last")
        ids = torch.tensor([PIECES[p] for _ in sizes for p in sequence] + torch.randint(0, 80, (TEXT_TOKENS,)).tolist()).unsqueeze(0)
        token_type_ids = (ids == IMAGE).long()  # the processor's mm_token_type_ids: 1 on the soft tokens
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(input_ids=ids, pixel_values=inputs["pixel_values"], token_type_ids=token_type_ids)
        counts = counter.get_flop_counts()
        root = type(model).__name__
        vision_flops = int(sum(counts.get(f"{root}.model.vision_tower", {}).values()))
        projector = int(sum(counts.get(f"{root}.model.multi_modal_projector", {}).values()))
        cases[case] = {
            "images": [list(size) for size in sizes],
            "pixel_values": list(inputs["pixel_values"].shape),
            "sequence_length": int(ids.shape[1]),
            "forward": int(counter.get_total_flops()),
            "vision_tower": vision_flops,
            "projector": projector,
            "rest": int(counter.get_total_flops()) - vision_flops - projector,
            "mask_pairs": _masks(model, ids, token_type_ids),
            "mask_pairs_text": _masks(model, ids, None),
        }
    return {
        "config": CONFIG,
        "class": type(model).__name__,
        "text_tokens": TEXT_TOKENS,
        "full_image_sequence": sequence,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "vision_parameters": int(sum(p.numel() for p in model.model.vision_tower.parameters())),
        "cases": cases,
    }


def main() -> None:
    warnings.filterwarnings("ignore")
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__.split("+")[0],
        "models": {"gemma3": measure()},
        "published_full_image_sequence": _pieces(_full_image_sequence(256)),
    }
    (HERE / "forward_gemma3img.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
