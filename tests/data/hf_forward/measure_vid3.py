"""Measure videos through Qwen4-Exp and dots.3 note (brief vid3) under torch's FlopCounterMode.

Qwen4-Exp: the tiny Qwen4ExpForConditionalGeneration of measure_qwen4exp.py (the qsa_ple decoder,
a Qwen3.5-style ViT) on random frames through Qwen3VLVideoProcessor (AutoVideoProcessor's class for
qwen4_exp; its default pixel bounds, frames taken as given: do_sample_frames off) and the
placeholder expansion of Qwen3VLProcessor.replace_video_token (AutoProcessor's class for qwen4_exp),
called on a stand-in holding only what it reads (no tokenizer is needed: the string it returns is
split into ids here, each "<t seconds>" timestamp as TIMESTAMP text tokens). Recorded per case: the
grid, the token counts, the vision tower's FLOPs and the whole forward (forward_qwen4exp_video.json).

dots.3 note: the tiny Dots3NoteForConditionalGeneration of measure_dots3mm.py ("per_layer") given
frames through Qwen3VLVideoProcessor (AutoVideoProcessor's class for dots3_note) with its class
defaults, with the tower's patch size and the default temporal_patch_size 2, and with
temporal_patch_size 1, expanded as Dots3NoteProcessor.replace_video_token expands the placeholder
(before the text): the error transformers raises, or the grid, the tokens, the tower's FLOPs and
the whole forward (forward_dots3_video.json).

The tests are tests/hf/test_qwen4exp_forward.py and
tests/hf/test_dots3mm_forward.py. Needs torch, transformers, Pillow and torchvision (the video
processors import it): PYTHONPATH=/tmp/tvonly:/tmp/pilonly /work/tf-venv/bin/python tests/data/hf_forward/measure_vid3.py
"""

from __future__ import annotations

import json
import re
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers.models.qwen3_vl.processing_qwen3_vl import Qwen3VLProcessor
from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import measure_dots3mm  # noqa: E402
import measure_qwen4exp  # noqa: E402
from measure_towers5 import IDS, TEXT_TOKENS  # noqa: E402

TIMESTAMP = 3  # text tokens each "<t seconds>" stands for here (a real tokenizer's count is text, in seq_len)
VIDEOS = {"four": (4, 300, 500), "five": (5, 200, 260)}
DOTS3_VIDEO = (3, 40, 56)
DOTS3_VIDEO_TOKEN = 92  # the tiny dots.3 wrapper's video_token_id (inside its vocabulary of 97)
DOTS3_PIXELS = {"shortest_edge": 64, "longest_edge": 4096 * 3}  # small bounds for the tiny tower (frames x area)


def _frames(frames: int, height: int, width: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (frames, height, width, 3), dtype=np.uint8)


def _placeholder(processor: Qwen3VLVideoProcessor, inputs) -> str:
    """Qwen3VLProcessor.replace_video_token on a stand-in with the attributes it reads."""
    holder = SimpleNamespace(video_processor=processor, vision_start_token="<|vision_start|>",
                             video_token="<|video_pad|>", vision_end_token="<|vision_end|>")
    holder._calculate_timestamps = lambda *a: Qwen3VLProcessor._calculate_timestamps(holder, *a)
    return Qwen3VLProcessor.replace_video_token(holder, inputs, 0)


def _ids(placeholder: str, generator: torch.Generator) -> list[int]:
    """The placeholder string as ids: the three special tokens by id, each timestamp as TIMESTAMP text ids."""
    special = {"<|vision_start|>": IDS["vision_start_token_id"], "<|video_pad|>": IDS["video_token_id"],
               "<|vision_end|>": IDS["vision_end_token_id"]}
    ids: list[int] = []
    for piece in re.findall(r"<\|[a-z_]+\|>|<[0-9.]+ seconds>", placeholder):
        ids += [special[piece]] if piece in special else torch.randint(0, 80, (TIMESTAMP,), generator=generator).tolist()
    assert len("".join(re.findall(r"<\|[a-z_]+\|>|<[0-9.]+ seconds>", placeholder))) == len(placeholder)
    return ids


def qwen4_exp_videos() -> dict:
    model = measure_qwen4exp._build(measure_qwen4exp.WRAPPER)
    vision = measure_qwen4exp.VISION
    processor = Qwen3VLVideoProcessor(patch_size=vision["patch_size"], merge_size=vision["spatial_merge_size"],
                                      temporal_patch_size=vision["temporal_patch_size"], do_sample_frames=False,
                                      cap_pixels_per_frame=False)
    root = type(model).__name__
    generator = torch.Generator().manual_seed(5)
    cases = {}
    for case, shape in VIDEOS.items():
        inputs = processor(videos=[_frames(*shape, seed=len(cases))], return_tensors="pt",
                           input_data_format="channels_last", return_metadata=True)
        grid = inputs["video_grid_thw"]
        placeholder = _placeholder(processor, inputs)
        text = torch.randint(0, 80, (TEXT_TOKENS,), generator=generator).tolist()
        ids = torch.tensor([_ids(placeholder, generator) + text])
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(input_ids=ids, pixel_values_videos=inputs["pixel_values_videos"], video_grid_thw=grid,
                  mm_token_type_ids=2 * (ids == IDS["video_token_id"]).long(), use_cache=False)
        visual = int(sum(counter.get_flop_counts().get(f"{root}.model.visual", {}).values()))
        total = int(counter.get_total_flops())
        cases[case] = {
            "video": list(shape), "video_grid_thw": grid.tolist(), "sequence_length": int(ids.shape[1]),
            "video_pad_tokens": int((ids == IDS["video_token_id"]).sum()),
            "wrapper_tokens": int(((ids == IDS["vision_start_token_id"]) | (ids == IDS["vision_end_token_id"])).sum()),
            "timestamp_tokens": TIMESTAMP * placeholder.count(" seconds>"),
            "forward": total, "visual": visual, "rest": total - visual,
        }
    size = processor.size
    return {"config": measure_qwen4exp.WRAPPER, "class": root, "processor": type(processor).__name__,
            "pixels": {"shortest_edge": size.shortest_edge, "longest_edge": size.longest_edge},
            "text_tokens": TEXT_TOKENS, "timestamp": TIMESTAMP, "cases": cases}


def dots3_note_videos() -> dict:
    config = {**measure_dots3mm.CASES["per_layer"], "video_token_id": DOTS3_VIDEO_TOKEN}
    model = measure_dots3mm._build(config)
    root = type(model).__name__
    patch, merge = measure_dots3mm.PATCH, measure_dots3mm.MERGE
    expander = measure_dots3mm._processor()
    processors = {
        "class_defaults": {},
        "tower_patch": {"patch_size": patch, "merge_size": merge, "size": DOTS3_PIXELS},
        "temporal_1": {"patch_size": patch, "merge_size": merge, "size": DOTS3_PIXELS, "temporal_patch_size": 1},
    }
    runs = {}
    for name, kwargs in processors.items():
        processor = Qwen3VLVideoProcessor(do_sample_frames=False, cap_pixels_per_frame=False, **kwargs)
        inputs = processor(videos=[_frames(*DOTS3_VIDEO, seed=7)], return_tensors="pt", input_data_format="channels_last")
        grid = inputs["video_grid_thw"]
        run = {"processor": {"patch_size": processor.patch_size, "temporal_patch_size": processor.temporal_patch_size,
                             "merge_size": processor.merge_size},
               "video_grid_thw": grid.tolist(), "pixel_values_videos": list(inputs["pixel_values_videos"].shape)}
        expander.video_processor = processor  # Dots3NoteProcessor.replace_video_token reads its merge_size
        tokens = len(expander.replace_video_token({"video_grid_thw": grid}, 0)) // len(expander.video_token)
        ids = torch.tensor([[DOTS3_VIDEO_TOKEN] * tokens + torch.randint(0, 80, (measure_dots3mm.TEXT_TOKENS,)).tolist()])
        counter = FlopCounterMode(display=False)
        try:
            with torch.no_grad(), counter:
                model(input_ids=ids, pixel_values_videos=inputs["pixel_values_videos"], video_grid_thw=grid)
        except Exception as exc:  # noqa: BLE001 - the failure is the record
            run["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0]
        else:
            counts = counter.get_flop_counts()
            run.update(video_tokens=tokens, sequence=int(ids.shape[1]), forward=int(counter.get_total_flops()),
                       visual=int(sum(counts[f"{root}.model.vision_tower"].values())))
        runs[name] = run
    return {"config": config, "text_tokens": measure_dots3mm.TEXT_TOKENS, "video": list(DOTS3_VIDEO), "runs": runs}


def main() -> int:
    warnings.filterwarnings("ignore")
    versions = {"torch": torch.__version__.split("+")[0], "transformers": transformers.__version__}
    for name, measured in (("qwen4exp_video", {"qwen4_exp": qwen4_exp_videos()}), ("dots3_video", {"dots3_note": dots3_note_videos()})):
        (HERE / f"forward_{name}.json").write_text(json.dumps({**versions, "models": measured}, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
