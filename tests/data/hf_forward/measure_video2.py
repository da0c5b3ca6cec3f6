"""Measure tiny Gemma 4, Gemma 4 unified and GIT forward passes with real video frames (brief video2),
under torch's FlopCounterMode.

Gemma 4 and Gemma 4 unified (the tiny configs of measure_gemma4img.py): random RGB frames go through
each family's own video processor (Gemma4VideoProcessor, Gemma4UnifiedVideoProcessor: each frame
resized to the budget, patches padded to ``max_soft_tokens x pooling^2``; frames taken as given, and
one case sampled with ``do_sample_frames``), and the text is expanded as the processor's
``replace_video_token`` expands the placeholder (per frame ``"mm:ss <boi>" + soft tokens + "<eoi>"``,
with ``video_metadata``); each frame's timestamp and space stand as TIMESTAMP_TOKENS random text
tokens (the tokenizer decides their count: the caller counts them in seq_len), the video before the
text. The model runs with eager attention and mm_token_type_ids 2 on the video's soft tokens.
Recorded: the FLOPs of the whole forward, of the vision tower (Gemma 4), its embedder and the rest;
the boolean masks' allowed (query, key) pairs per layer type; the expansion's token counts.

GIT (the tiny config of measure_phi4git.py with ``num_image_with_embedding``): GIT has no video
processor; each frame goes through CLIPImageProcessorPil at the tower's image_size, the frames
stacked into a 5D pixel_values (one video per batch row), and GitForCausalLM runs on it. Recorded:
the FLOPs of the whole forward, of the image encoder, the projection and the rest, and the pairs of
the text decoder's mask; and that a video with more frames than temporal embeddings, or a config
without them, fails in transformers.

The result, forward_video2.json, comes from torch and transformers alone: tests/hf/test_video2_forward.py
compares flopsreg with it. The video processors import torchvision, whose PyPI wheel does not load
beside torch+cpu here: /tmp/tvonly holds a torchvision 0.28 that does (see measure_gemma3nmm.py):
    PYTHONPATH=/tmp/pilonly:/tmp/tvonly /work/tf-venv/bin/python tests/data/hf_forward/measure_video2.py
Needs torch 2.13, transformers 5.24, Pillow and torchvision (not flopsreg dependencies).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import transformers
from measure_gemma4img import MODELS as GEMMA4_MODELS
from measure_gemma4img import _masks
from measure_phi4git import GIT_CONFIG, _eager, _flops, _pairs
from measure_pixkimi import KIMI_AFTER, KIMI_BEFORE, KIMI_K25, _build, _stub_processor
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig, CLIPImageProcessorPil, Gemma4ForConditionalGeneration, Gemma4Processor, GitForCausalLM
from transformers.models.gemma4.video_processing_gemma4 import Gemma4VideoProcessor
from transformers.models.gemma4_unified.modeling_gemma4_unified import Gemma4UnifiedForConditionalGeneration
from transformers.models.gemma4_unified.video_processing_gemma4_unified import Gemma4UnifiedVideoProcessor
from transformers.models.kimi_k25.processing_kimi_k25 import Kimi_K25Processor
from transformers.models.kimi_k25.video_processing_kimi_k25 import Kimi_K25VideoProcessor
from transformers.video_utils import VideoMetadata

HERE = Path(__file__).parent
TEXT_TOKENS = 7
TIMESTAMP_TOKENS = 2  # stand-in text tokens for each frame's "mm:ss " (the tokenizer decides the real count)
BUDGET = 70  # the video processors' default max_soft_tokens
BOI, EOI, VIDEO = 91, 92, 94
PIECES = {"<boi>": BOI, "<eoi>": EOI, "<|video|>": VIDEO}
# (frames, height, width) per case; "sampled" runs with do_sample_frames (num_frames of them kept).
GEMMA4_CASES = {"three": (3, 300, 500), "one": (1, 64, 100), "tall": (2, 1000, 180)}
SAMPLED = {"video": (6, 200, 260), "num_frames": 4}
GIT_FRAMES = 4  # num_image_with_embedding of the tiny GIT
GIT_CASES = {"four": (4, 300, 500), "two": (2, 450, 260), "one": (1, 20, 30)}
KIMI_VIDEO = 98  # the tiny Kimi K2.5's video_token_id (<|kimi_k25_video_placeholder|>'s pads)
KIMI = {**KIMI_K25, "video_token_id": KIMI_VIDEO}
# (frames, height, width) and processor options per case: chunks of 4 and a shorter last one, a
# single frame, and a video past a small max_patches budget.
KIMI_CASES = {"six": ((6, 50, 37), {}), "four": ((4, 30, 64), {}), "one": ((1, 23, 23), {}),
              "budget": ((5, 120, 90), {"max_patches": 100}), "chunks_of_two": ((5, 40, 40), {"temporal_patch_size": 2})}


def _frames(shape: tuple[int, int, int], seed: int) -> np.ndarray:
    frames, height, width = shape
    return np.random.default_rng(seed).integers(0, 256, (frames, height, width, 3), dtype=np.uint8)


def _expansion(soft: int, frames: int) -> list[str]:
    """Gemma4Processor.replace_video_token for a video of *frames* frames of *soft* soft tokens
    (a stand-in tokenizer gives the special tokens' text), cut into its tokens: the timestamps and
    spaces between them as "text"."""
    stub = SimpleNamespace(boi_token="<boi>", video_token="<|video|>", eoi_token="<eoi>")
    metadata = VideoMetadata(total_num_frames=frames, fps=24, frames_indices=list(range(frames)))
    text = Gemma4Processor.replace_video_token(stub, {"num_soft_tokens_per_video": [soft], "video_metadata": [metadata]}, 0)
    out = []
    while text:
        piece = next((p for p in PIECES if text.startswith(p)), None)
        out.append(piece or "text")
        text = text[len(piece):] if piece else text[1:]
    return out


def _gemma4_model(name: str):
    config = {k: v for k, v in GEMMA4_MODELS[name].items() if k != "model_type"}
    torch.manual_seed(0)
    cls = Gemma4ForConditionalGeneration if name == "gemma4" else Gemma4UnifiedForConditionalGeneration
    model = cls(AutoConfig.for_model(name, **config)).eval()
    model.config._attn_implementation = "eager"
    model.model.language_model.config._attn_implementation = "eager"
    if name == "gemma4":
        model.model.vision_tower.config._attn_implementation = "eager"
    return model


def _gemma4_case(name: str, model, shape: tuple[int, int, int], **options) -> dict:
    vision = GEMMA4_MODELS[name]["vision_config"]
    cls = Gemma4VideoProcessor if name == "gemma4" else Gemma4UnifiedVideoProcessor
    processor = cls(patch_size=vision["patch_size"], pooling_kernel_size=vision["pooling_kernel_size"], max_soft_tokens=BUDGET,
                    do_sample_frames=bool(options), **options)
    out = processor(videos=[_frames(shape, 1)], return_tensors="pt", input_data_format="channels_last")
    frames, soft = int(out["num_frames_per_video"][0]), int(out["num_soft_tokens_per_video"][0])
    pieces = _expansion(soft, frames)
    # Each frame's "mm:ss " timestamp (and the space before the next) as TIMESTAMP_TOKENS text tokens.
    ids, frame = [], 0
    for piece in pieces:
        if piece == "<boi>":
            ids += torch.randint(3, 80, (TIMESTAMP_TOKENS,)).tolist()
            frame += 1
        if piece != "text":
            ids.append(PIECES[piece])
    ids = torch.tensor(ids + torch.randint(3, 80, (TEXT_TOKENS,)).tolist()).unsqueeze(0)
    types = (ids == VIDEO).long() * 2  # the processor's mm_token_type_ids: 2 on video tokens
    inputs = {"pixel_values_videos": out["pixel_values_videos"], "video_position_ids": out["video_position_ids"],
              "num_frames_per_video": out["num_frames_per_video"]}
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(input_ids=ids, mm_token_type_ids=types, **inputs)
    root = type(model).__name__
    tower = _flops(counter, f"{root}.model.vision_tower") if name == "gemma4" else 0
    embedder = _flops(counter, f"{root}.model.embed_vision")
    return {
        "video": list(shape), "options": options, "frames": frames, "soft_tokens_per_frame": soft,
        "pixel_values_videos": list(out["pixel_values_videos"].shape),
        "video_tokens": sum(piece != "text" for piece in pieces), "timestamps": frames,
        "sequence_length": int(ids.shape[1]),
        "forward": int(counter.get_total_flops()), "tower": tower, "embedder": embedder,
        "rest": int(counter.get_total_flops()) - tower - embedder,
        "mask_pairs": _masks(model, ids, types, inputs), "mask_pairs_text": _masks(model, ids, None, inputs),
    }


def measure_gemma4(name: str) -> dict:
    model = _gemma4_model(name)
    cases = {case: _gemma4_case(name, model, shape) for case, shape in GEMMA4_CASES.items()}
    cases["sampled"] = _gemma4_case(name, model, SAMPLED["video"], num_frames=SAMPLED["num_frames"])
    cls = Gemma4VideoProcessor if name == "gemma4" else Gemma4UnifiedVideoProcessor
    default = cls()
    return {
        "config": GEMMA4_MODELS[name], "class": type(model).__name__, "text_tokens": TEXT_TOKENS, "timestamp_tokens": TIMESTAMP_TOKENS,
        "max_soft_tokens": BUDGET, "processor": cls.__name__,
        "processor_defaults": {"max_soft_tokens": default.max_soft_tokens, "num_frames": default.num_frames,
                               "do_sample_frames": default.do_sample_frames, "patch_size": default.patch_size,
                               "pooling_kernel_size": default.pooling_kernel_size},
        "cases": cases,
    }


def _git_model(frames: int | None):
    config = {k: v for k, v in GIT_CONFIG.items() if k != "model_type"}
    torch.manual_seed(0)
    model = GitForCausalLM(AutoConfig.for_model("git", **config, num_image_with_embedding=frames)).eval()
    _eager(model)
    return model


def measure_git() -> dict:
    model = _git_model(GIT_FRAMES)
    size = GIT_CONFIG["vision_config"]["image_size"]
    processor = CLIPImageProcessorPil(size={"shortest_edge": size}, crop_size={"height": size, "width": size})
    masks = []
    model.git.encoder.register_forward_pre_hook(lambda module, args, kwargs: masks.append(_pairs(kwargs["attention_mask"])),
                                                with_kwargs=True)
    root = type(model).__name__
    cases = {}
    for case, shape in GIT_CASES.items():
        frames = processor(images=list(_frames(shape, 2)), return_tensors="pt", input_data_format="channels_last")["pixel_values"]
        pixel_values = frames.unsqueeze(0)  # (1, frames, channels, size, size): one video
        ids = torch.randint(3, 90, (1, TEXT_TOKENS))
        counter = FlopCounterMode(display=False)
        masks.clear()
        with torch.no_grad(), counter:
            output = model(input_ids=ids, pixel_values=pixel_values)
        encoder, projection = _flops(counter, f"{root}.git.image_encoder"), _flops(counter, f"{root}.git.visual_projection")
        cases[case] = {
            "video": list(shape), "pixel_values": list(pixel_values.shape), "sequence_length": int(output.logits.shape[1]),
            "forward": int(counter.get_total_flops()), "image_encoder": encoder, "visual_projection": projection,
            "rest": int(counter.get_total_flops()) - encoder - projection, "mask_pairs": masks[0],
        }
    failures = {}
    for case, (frames, built) in {"more_frames": (GIT_FRAMES + 1, GIT_FRAMES), "no_embeddings": (2, None)}.items():
        pixel_values = torch.zeros(1, frames, 3, size, size)
        try:
            _git_model(built)(input_ids=torch.randint(3, 90, (1, TEXT_TOKENS)), pixel_values=pixel_values)
        except Exception as exc:  # noqa: BLE001 - what transformers raises is the record
            failures[case] = {"frames": frames, "num_image_with_embedding": built, "error": f"{type(exc).__name__}: {exc}"}
    return {
        "config": {**GIT_CONFIG, "num_image_with_embedding": GIT_FRAMES}, "class": root, "text_tokens": TEXT_TOKENS,
        "parameters": int(sum(p.numel() for p in model.parameters())), "cases": cases, "failures": failures,
    }


def _kimi_expansion(grids: list[list[int]], chunk: int) -> list[str]:
    """Kimi_K25Processor.replace_video_token for a video of these chunk grids (a stand-in
    processor holds the video processor's merge and chunk sizes), cut into its tokens: the
    timestamps as "text", the special tokens and "video" by name, each pad as "<pad>"."""
    processor = _stub_processor(Kimi_K25Processor)
    processor.video_processor = SimpleNamespace(merge_size=2, temporal_patch_size=chunk)
    processor.video_token = "<pad>"
    frames = sum(grid[0] for grid in grids)
    metadata = VideoMetadata(total_num_frames=frames, fps=24, frames_indices=list(range(frames)))
    text = processor.replace_video_token({"num_chunks_per_video": [len(grids)], "video_grid_thw": torch.tensor(grids),
                                          "video_metadata": [metadata]}, 0)
    names = ("<|media_begin|>", "video", "<|media_content|>", "<pad>", "<|media_end|>")
    out = []
    while text:
        piece = next((name for name in names if text.startswith(name)), None)
        out.append(piece or "text")
        text = text[len(piece):] if piece else text[1:]
    return out


def measure_kimi() -> dict:
    model = _build(KIMI)
    vision = KIMI["vision_config"]
    root = type(model).__name__
    ids_of = dict(zip(("<|media_begin|>", "video", "<|media_content|>", "<|media_end|>"), (*KIMI_BEFORE, *KIMI_AFTER)))
    cases = {}
    for case, (shape, options) in KIMI_CASES.items():
        processor = Kimi_K25VideoProcessor(patch_size=vision["patch_size"], merge_size=vision["merge_kernel_size"][0],
                                           do_sample_frames=False, **options)
        out = processor(videos=[_frames(shape, 3)], return_tensors="pt", input_data_format="channels_last")
        grids = out["video_grid_thw"].tolist()
        pieces = _kimi_expansion(grids, processor.temporal_patch_size)
        ids = []
        for piece in pieces:
            if piece == "<|media_begin|>":
                ids += torch.randint(3, 80, (TIMESTAMP_TOKENS,)).tolist()  # the chunk's timestamp, as text
            if piece != "text":
                ids.append(KIMI_VIDEO if piece == "<pad>" else ids_of[piece])
        ids = torch.tensor(ids + torch.randint(3, 80, (TEXT_TOKENS,)).tolist()).unsqueeze(0)
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(input_ids=ids, pixel_values_videos=out["pixel_values_videos"], video_grid_thw=out["video_grid_thw"])
        tower, projector = _flops(counter, f"{root}.model.vision_tower"), _flops(counter, f"{root}.model.mm_projector")
        cases[case] = {
            "video": list(shape), "options": options, "video_grid_thw": grids, "chunks": int(out["num_chunks_per_video"][0]),
            "video_tokens": sum(piece != "text" for piece in pieces), "pads": pieces.count("<pad>"),
            "sequence_length": int(ids.shape[1]), "forward": int(counter.get_total_flops()), "vision_tower": tower,
            "projector": projector, "rest": int(counter.get_total_flops()) - tower - projector,
        }
    default = Kimi_K25VideoProcessor()
    return {
        "config": KIMI, "class": root, "text_tokens": TEXT_TOKENS, "timestamp_tokens": TIMESTAMP_TOKENS, "cases": cases,
        "processor_defaults": {"max_patches": default.max_patches, "temporal_patch_size": default.temporal_patch_size,
                               "do_sample_frames": default.do_sample_frames, "fps": default.fps, "size": dict(default.size),
                               "patch_size": default.patch_size, "merge_size": default.merge_size},
    }


def main() -> None:
    warnings.filterwarnings("ignore")
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__.split("+")[0],
        "models": {"gemma4": measure_gemma4("gemma4"), "gemma4_unified": measure_gemma4("gemma4_unified"), "git": measure_git(),
                   "kimi_k25": measure_kimi()},
    }
    (HERE / "forward_video2.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
