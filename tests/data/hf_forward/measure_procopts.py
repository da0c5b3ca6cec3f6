"""Record what the Qwen-VL processors do with their own options (min_pixels, max_pixels), as an RL
run sets them (verl's ``max_pixels=1003520``): image_grid_thw of transformers'
Qwen2VLImageProcessorPil built with ``min_pixels=`` / ``max_pixels=`` for a dozen sizes at two
settings and both patch sizes (14: Qwen2-VL, Qwen2.5-VL; 16: Qwen3-VL, Qwen3.5), and
video_grid_thw of the video processors (Qwen2VLVideoProcessor, Qwen3VLVideoProcessor, frames taken
as given, as measure_qwenvid.py takes them) built with the same options; and Llama4ImageProcessor's
canvas and tiles with max_patches 4 and 9 (the published 16: measure_llama4img.py);
PixtralImageProcessorPil with longest_edge 1024 and 512 (the published tower's 1540:
measure_pixkimi.py), its [IMG] / [IMG_BREAK] / [IMG_END] count as PixtralProcessor expands it;
and Kimi_K25ImageProcessor with max_patches 1024 and 4096 (the published 16384), and with size
max_height = max_width 64 and 200 patches a side (the published 512), its grid and its
<|media_pad|> count as Kimi_K25Processor expands it; and Kimi_K25VideoProcessor at those sides, its
chunks' video_grid_thw. The result,
forward_procopts.json, comes from transformers alone: tests/hf/test_procopts.py compares
flopsreg's plans (``processor={...}``) with it.

Needs torch, transformers and Pillow, and torchvision for Kimi_K25ImageProcessor (not flopsreg
dependencies; the PyPI torchvision wheel does not load beside torch+cpu, /tmp/tvonly is one that does):
    PYTHONPATH=/tmp/tvonly:/tmp/pilonly python tests/data/hf_forward/measure_procopts.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import transformers
from measure_pixkimi import _pixtral_processor, _pixtral_tokens, _stub_processor
from transformers import Llama4ImageProcessor, Qwen2VLImageProcessorPil, Qwen2VLVideoProcessor
from transformers.models.kimi_k25.image_processing_kimi_k25 import Kimi_K25ImageProcessor
from transformers.models.kimi_k25.processing_kimi_k25 import Kimi_K25Processor
from transformers.models.kimi_k25.video_processing_kimi_k25 import Kimi_K25VideoProcessor
from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

HERE = Path(__file__).parent
# Sizes around the bounds, odd and half-way multiples, extreme ratios.
SIZES = [(1, 1), (28, 28), (100, 100), (257, 391), (333, 777), (720, 1280), (1080, 1920), (1440, 2560),
         (2000, 40), (3000, 4000), (4096, 4096), (15, 2990), (10, 2500)]
# Two settings: verl's common max_pixels with the family's own min_pixels, and both bounds set
# (256 to 512 merged 28-pixel tokens, as Qwen's model cards suggest bounding them).
SETTINGS = {"max_only": {"max_pixels": 1003520}, "both": {"min_pixels": 200704, "max_pixels": 401408}}
# Each family's image processor patch size and published size (preprocessor_config.json: min, max
# pixels), which the options then override, as AutoProcessor.from_pretrained(..., max_pixels=) does.
FAMILIES = {"qwen2_5_vl": (14, (3136, 12845056)), "qwen3_vl": (16, (65536, 16777216))}
# The video processors' own size (transformers 5.24 class defaults), overridden the same way: the
# Qwen3-VL video processor takes the bounds only as size's shortest_edge and longest_edge.
VIDEO_PIXELS = {"qwen2_vl": (100352, 602112), "qwen3_vl": (131072, 786432)}
VIDEOS = [(4, 720, 1280), (8, 360, 640), (2, 1080, 1920), (6, 100, 3000)]
# Llama 4: the published tile (336 pixels) with other max_patches than the published 16.
LLAMA4_MAX_PATCHES = (4, 9)
LLAMA4_SIZES = [(768, 1024), (336, 336), (337, 336), (100, 2000), (720, 1280), (1080, 1920), (4000, 3000), (500, 500),
                (1344, 336), (50, 60)]
# Pixtral (patch 14, merge 2, as Mistral Large 4's tower) at two longest edges other than the
# published tower's 1540; Kimi K2.5 (patch 14, merge 2) at two patch budgets other than 16384.
PIXTRAL_LONGEST_EDGES = (1024, 512)
KIMI_MAX_PATCHES = (1024, 4096)
# Kimi K2.5 at the default budget with other most patches a side (size max_height = max_width) than 512.
KIMI_MAX_SIDES = (64, 200)
# Kimi K2.5 videos (frames, height, width) at those sides and the video budget (4096 patches).
KIMI_VIDEOS = [(4, 720, 1280), (5, 100, 3000), (2, 1080, 1920), (3, 60, 2000), (6, 300, 300)]
VIDEO_SETTINGS = {"max_only": {"max_pixels": 230400}, "both": {"min_pixels": 50176, "max_pixels": 1605632}}


def _images(sizes, seed: int) -> list[np.ndarray]:
    generator = np.random.default_rng(seed)
    return [generator.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in sizes]


def _size(pixels: tuple[int, int], options: dict) -> dict:
    """The processor's size: its own bounds, *options* (min_pixels, max_pixels) over them."""
    return {"shortest_edge": options.get("min_pixels", pixels[0]), "longest_edge": options.get("max_pixels", pixels[1])}


def image_grids(patch: int, pixels: tuple[int, int], options: dict) -> list[dict]:
    """image_grid_thw of the image processor built with *options*, per size (refusals kept)."""
    processor = Qwen2VLImageProcessorPil(patch_size=patch, merge_size=2, temporal_patch_size=2, size=dict(zip(
        ("shortest_edge", "longest_edge"), pixels)), **options)
    assert dict(processor.size) == _size(pixels, options), processor.size
    rows = []
    for (h, w), image in zip(SIZES, _images(SIZES, 5)):
        try:
            grid = processor(images=[image], return_tensors="pt", input_data_format="channels_last")["image_grid_thw"][0].tolist()
        except ValueError as exc:
            rows.append({"size": [h, w], "refused": str(exc)})
            continue
        rows.append({"size": [h, w], "grid": grid})
    return rows


def video_grids(family: str, options: dict) -> list[dict]:
    """video_grid_thw of the family's video processor built with *options*, per video."""
    qwen3 = family == "qwen3_vl"
    cls = Qwen3VLVideoProcessor if qwen3 else Qwen2VLVideoProcessor
    processor = cls(patch_size=16 if qwen3 else 14, merge_size=2, temporal_patch_size=2, do_sample_frames=False,
                    cap_pixels_per_frame=False, size=_size(VIDEO_PIXELS[family], options))
    generator = np.random.default_rng(6)
    rows = []
    for frames, h, w in VIDEOS:
        video = generator.integers(0, 256, (frames, h, w, 3), dtype=np.uint8)
        grid = processor(videos=[video], return_tensors="pt", input_data_format="channels_last")["video_grid_thw"][0].tolist()
        rows.append({"video": [frames, h, w], "grid": grid})
    return rows


def llama4_tiling(max_patches: int) -> list[dict]:
    """aspect_ratios (the canvas) and tiles (with the global one) of Llama4ImageProcessor at *max_patches*."""
    processor = Llama4ImageProcessor(size={"height": 336, "width": 336}, max_patches=max_patches, resize_to_max_canvas=False)
    rows = []
    for (h, w), image in zip(LLAMA4_SIZES, _images(LLAMA4_SIZES, 7)):
        inputs = processor(images=[image], return_tensors="pt", input_data_format="channels_last")
        rows.append({"size": [h, w], "aspect_ratio": [int(v) for v in inputs["aspect_ratios"][0]],
                     "tiles": int(inputs["pixel_values"].shape[0])})
    return rows


def pixtral_resizing(longest_edge: int) -> list[dict]:
    """image_sizes of PixtralImageProcessorPil at *longest_edge* (patch 14 x merge 2), and PixtralProcessor's tokens."""
    processor = _pixtral_processor(14, 2, longest_edge)
    rows = []
    for (h, w), image in zip(SIZES, _images(SIZES, 8)):
        size = [int(v) for v in processor(images=[image], return_tensors="np", input_data_format="channels_last")["image_sizes"][0]]
        rows.append({"size": [h, w], "resized": size, "tokens": len(_pixtral_tokens(*size, 14, 2))})
    return rows


def kimi_resizing(max_patches: int = 16384, max_side: int = 512) -> list[dict]:
    """image_grid_thw of Kimi_K25ImageProcessor(max_patches=..., size={"max_height": s, "max_width": s})
    (patch 14, merge 2), and Kimi_K25Processor's pads."""
    processor = Kimi_K25ImageProcessor(max_patches=max_patches, size={"max_height": max_side, "max_width": max_side}, patch_size=14, merge_size=2)
    expander = _stub_processor(Kimi_K25Processor)
    expander.image_processor = processor
    rows = []
    for (h, w), image in zip(SIZES, _images(SIZES, 9)):
        grid = processor(images=[image], return_tensors="pt", input_data_format="channels_last")["image_grid_thw"]
        pads = expander.replace_image_token({"image_grid_thw": grid}, 0)
        rows.append({"size": [h, w], "grid": grid[0].tolist(), "tokens": len(pads) // len(expander.image_token)})
    return rows


def kimi_video_resizing(max_side: int) -> list[dict]:
    """video_grid_thw (a row per chunk) of Kimi_K25VideoProcessor(size={"max_height": s, "max_width": s})
    (patch 14, merge 2, the frames as given) at its default budget, per video."""
    processor = Kimi_K25VideoProcessor(size={"max_height": max_side, "max_width": max_side}, patch_size=14, merge_size=2,
                                       do_sample_frames=False)
    generator = np.random.default_rng(10)
    rows = []
    for frames, h, w in KIMI_VIDEOS:
        video = generator.integers(0, 256, (frames, h, w, 3), dtype=np.uint8)
        out = processor(videos=[video], return_tensors="pt", input_data_format="channels_last")
        rows.append({"video": [frames, h, w], "video_grid_thw": out["video_grid_thw"].tolist(),
                     "chunks": int(out["num_chunks_per_video"][0])})
    return rows


def main() -> None:
    record = {
        "transformers": transformers.__version__,
        "models": {},  # no model runs here: the processors alone (the records' common layout)
        "images": {family: {name: {"options": options, "rows": image_grids(*FAMILIES[family], options)} for name, options in SETTINGS.items()}
                   for family in FAMILIES},
        "videos": {family: {name: {"options": options, "rows": video_grids(family, options)}
                            for name, options in VIDEO_SETTINGS.items()} for family in ("qwen2_vl", "qwen3_vl")},
        "llama4": {str(max_patches): llama4_tiling(max_patches) for max_patches in LLAMA4_MAX_PATCHES},
        "pixtral": {str(edge): pixtral_resizing(edge) for edge in PIXTRAL_LONGEST_EDGES},
        "kimi_k25": {str(max_patches): kimi_resizing(max_patches) for max_patches in KIMI_MAX_PATCHES},
        "kimi_k25_side": {str(side): kimi_resizing(max_side=side) for side in KIMI_MAX_SIDES},
        "kimi_k25_video_side": {str(side): kimi_video_resizing(side) for side in KIMI_MAX_SIDES},
    }
    (HERE / "forward_procopts.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
