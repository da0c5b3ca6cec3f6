"""Measure tiny dots.3 note wrappers (``dots3_note``: the dots3_note_text decoder, the MoE ViT and
the audio encoder) with real processor inputs, under torch's FlopCounterMode (brief dots3mm).

Images: random RGB images through transformers' Qwen2VLImageProcessorPil (the image processor
AutoImageProcessor maps ``dots3_note`` to) with the tiny tower's patch and merge and
``temporal_patch_size`` 1 (Dots3NoteVisionPatchEmbed reshapes pixel_values to channels x patch x
patch: a processor of temporal patch 2 hands it twice the patches its grid says); the text is
expanded as Dots3NoteProcessor.replace_image_token expands each placeholder. Audio: a synthetic
waveform through Dots3NoteFeatureExtractor (chunks of ``chunk_length`` seconds), expanded as
replace_audio_token does (``num_audio_tokens``).

Recorded per case: the whole forward's FLOPs and per module of the towers, the image and audio
token counts, and, per audio conv, the (output, tap) pairs that read a real input rather than the
kernel's zero padding (a ones input through a ones kernel: a brute force of the padding), so that
the test reconciles FlopCounterMode's count of the padding taps. Also the parameters of the whole
model and of each tower, tiny and class defaults (on the meta device), and which class
AutoModelForCausalLM builds for a dots3_note config. forward_dots3mm.json comes from torch and
transformers alone: tests/hf/test_dots3mm_forward.py compares flopsreg with it.

Needs torch, transformers and Pillow (not flopsreg dependencies):
    PYTHONPATH=/tmp/pilonly python tests/data/hf_forward/measure_dots3mm.py
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import numpy as np
import torch
import torch.nn.functional as F
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig, AutoModelForCausalLM, Qwen2VLImageProcessorPil
from transformers.models.dots3_note import modeling_dots3_note
from transformers.models.dots3_note.feature_extraction_dots3_note import Dots3NoteFeatureExtractor
from transformers.models.dots3_note.processing_dots3_note import Dots3NoteProcessor
from transformers.processing_utils import ProcessorMixin

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from measure_dots3 import SWA, TEXT  # noqa: E402

IMAGE, AUDIO = 90, 91  # the tiny wrapper's image_token_id and audio_token_id (inside the vocabulary)
TEXT_TOKENS = 7
PATCH, MERGE = 4, 2
VISION = {
    "hidden_size": 24, "num_attention_heads": 2, "intermediate_size": 34, "moe_intermediate_size": 14,
    "num_hidden_layers": 4, "patch_size": PATCH, "spatial_merge_size": MERGE, "adapter_merge_size": MERGE,
    "adapter_in_dim": 24, "adapter_out_dim": TEXT["hidden_size"], "num_local_experts": 6, "num_experts_per_tok": 2,
}
AUDIO_CONFIG = {
    "hidden_size": 32, "num_attention_heads": 4, "intermediate_size": 40, "num_hidden_layers": 2,
    "feature_size": 20, "downsample_hidden_size": 6, "adapter_input_size": 32, "adapter_out_dim": TEXT["hidden_size"],
}
TEXT_CONFIG = {"model_type": "dots3_note_text", **TEXT, **SWA}
CASES: dict[str, dict] = {
    # mlp_layer_types with per-layer experts: dense, E 4 k 2, E 3 k 1 of width 10, the globals E 6 k 2
    "per_layer": {
        "model_type": "dots3_note", "image_token_id": IMAGE, "audio_token_id": AUDIO, "text_config": TEXT_CONFIG,
        "vision_config": {**VISION, "mlp_layer_types": ["dense", "sparse", "sparse", "sparse"], "per_layer_config": {
            "1": {"num_local_experts": 4}, "2": {"num_local_experts": 3, "num_experts_per_tok": 1, "moe_intermediate_size": 10}}},
        "audio_config": AUDIO_CONFIG,
    },
    # the pyramid the class pops (pyramid_num_routed): dense where <= 0, else E experts and k = min(2, E)
    "pyramid": {
        "model_type": "dots3_note", "image_token_id": IMAGE, "audio_token_id": AUDIO, "text_config": TEXT_CONFIG,
        "vision_config": {**VISION, "num_hidden_layers": 3, "pyramid_num_routed": [-1, 1, 5], "attention_bias": True},
        "audio_config": {**AUDIO_CONFIG, "attention_bias": False, "num_hidden_layers": 1},
        "tie_word_embeddings": True,
    },
}
# (height, width) of the images of one sequence, and the seconds of its audio clip
INPUTS = {"one": ([(50, 37)], 0.7), "two": ([(100, 30), (23, 64)], 0.4)}
MIN_PIXELS, MAX_PIXELS = 64, 4096  # the tiny processor's bounds (a 50x37 image is resized within them)
SIZES = [(1, 1), (14, 14), (28, 29), (100, 37), (480, 640), (720, 1280), (1080, 1920), (3000, 2000), (999, 1001)]


def _build(config: dict):
    hf_config = AutoConfig.for_model(config["model_type"], **{k: v for k, v in config.items() if k != "model_type"})
    torch.manual_seed(0)
    cls = modeling_dots3_note.Dots3NoteForConditionalGeneration
    return cls._from_config(hf_config, attn_implementation="eager", experts_implementation="eager").eval()


def _processor() -> Dots3NoteProcessor:
    """Dots3NoteProcessor without its tokenizer: replace_image_token needs only merge_size."""
    tokenizer = SimpleNamespace(convert_tokens_to_ids=lambda token: 0)
    image_processor = SimpleNamespace(merge_size=MERGE)
    with mock.patch.object(ProcessorMixin, "__init__", lambda self, *a, **k: None):
        processor = Dots3NoteProcessor(image_processor=None, tokenizer=tokenizer)
    processor.image_processor = image_processor
    return processor


def _count(model, **inputs) -> tuple[int, dict]:
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(**inputs)
    return int(counter.get_total_flops()), {k: int(sum(v.values())) for k, v in counter.get_flop_counts().items()}


def _real_taps(conv: torch.nn.Conv2d, shape: tuple[int, int]) -> int:
    """The (output, tap) pairs of *conv* over an input of *shape* that read a real input: a ones
    input through a ones kernel of the same geometry, summed (the zero padding adds nothing)."""
    ones = torch.ones(1, 1, *shape)
    kernel = torch.ones(1, 1, *conv.kernel_size)
    return int(F.conv2d(ones, kernel, stride=conv.stride, padding=conv.padding).sum())


def _audio_stem(model, frames: int, features: int) -> list[dict]:
    """Per conv of the stem: its input shape (mel bins x frames), output positions and real taps."""
    out, shape = [], (features, frames)
    for conv in model.model.audio_tower.conv_stem.convs:
        result = F.conv2d(torch.zeros(1, 1, *shape), torch.zeros(1, 1, *conv.kernel_size), stride=conv.stride, padding=conv.padding)
        out.append({"input": list(shape), "output": list(result.shape[-2:]), "real_taps": _real_taps(conv, shape),
                    "in_channels": conv.in_channels, "out_channels": conv.out_channels})
        shape = tuple(result.shape[-2:])
    return out


def measure(name: str, config: dict) -> dict:
    model = _build(config)
    processor = _processor()
    vision = config["vision_config"]
    images_processor = Qwen2VLImageProcessorPil(patch_size=vision["patch_size"], merge_size=MERGE, temporal_patch_size=1,
                                                min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS)
    extractor = Dots3NoteFeatureExtractor(feature_size=config["audio_config"]["feature_size"], chunk_length=1)
    root = type(model).__name__
    cases = {}
    for case, (sizes, seconds) in INPUTS.items():
        generator = np.random.default_rng(1)
        images = [generator.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in sizes]
        pixels = images_processor(images=images, return_tensors="pt", input_data_format="channels_last")
        grids = pixels["image_grid_thw"]
        image_tokens = [len(processor.replace_image_token({"image_grid_thw": grids}, i)) // len(processor.image_token)
                        for i in range(len(sizes))]
        waveform = np.sin(np.arange(int(seconds * 16000)) * 0.05).astype(np.float32)
        audio = extractor(waveform, sampling_rate=16000)
        audio_tokens = len(processor.replace_audio_token({"num_audio_tokens": audio["num_audio_tokens"]}, 0)) // len(processor.audio_token)
        ids = [IMAGE] * sum(image_tokens) + [AUDIO] * audio_tokens + torch.randint(0, 80, (TEXT_TOKENS,)).tolist()
        total, counts = _count(model, input_ids=torch.tensor([ids]), pixel_values=pixels["pixel_values"], image_grid_thw=grids,
                               input_features=audio["input_features"], chunk_sample_lengths=audio["chunk_sample_lengths"])
        towers = {k.removeprefix(f"{root}.model."): v for k, v in counts.items() if ".vision_tower" in k or ".audio_tower" in k}
        frames = int(audio["input_features"].shape[-1])
        cases[case] = {
            "images": [list(size) for size in sizes], "image_grid_thw": grids.tolist(), "image_tokens": image_tokens,
            "seconds": seconds, "samples": len(waveform), "chunk_sample_lengths": audio["chunk_sample_lengths"].tolist(),
            "audio_tokens": audio_tokens, "mel_frames": frames, "sequence": len(ids), "forward": total, "modules": towers,
            "audio_stem": _audio_stem(model, frames, config["audio_config"]["feature_size"]),
        }
    return {
        "config": config,
        "cases": cases,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "vision_parameters": int(sum(p.numel() for p in model.model.vision_tower.parameters())),
        "audio_parameters": int(sum(p.numel() for p in model.model.audio_tower.parameters())),
        "language_parameters": int(sum(p.numel() for p in model.model.language_model.parameters())) + int(model.lm_head.weight.numel())
        * (not config.get("tie_word_embeddings", False)),
    }


def processor_tokens() -> dict:
    """Qwen2VLImageProcessorPil's grid and Dots3NoteProcessor's tokens for a dozen sizes, at the
    class defaults (patch 14, merge 2, min_pixels 3136, max_pixels 1003520) with temporal patch 1."""
    images_processor = Qwen2VLImageProcessorPil(temporal_patch_size=1)
    processor = _processor()
    processor.image_processor = SimpleNamespace(merge_size=images_processor.merge_size)
    out = {}
    for h, w in SIZES:
        grid = images_processor(images=[np.zeros((h, w, 3), dtype=np.uint8)], return_tensors="pt",
                                input_data_format="channels_last")["image_grid_thw"]
        tokens = len(processor.replace_image_token({"image_grid_thw": grid}, 0)) // len(processor.image_token)
        out[f"{h}x{w}"] = {"grid": grid[0].tolist(), "tokens": tokens}
    return out


def audio_tokens() -> dict:
    """Dots3NoteFeatureExtractor's num_audio_tokens and chunks at its defaults (60 s chunks), per clip length in samples."""
    extractor = Dots3NoteFeatureExtractor()
    out = {}
    for samples in (1, 1279, 1280, 1281, 16000, 40000, 960000, 960001, 2000000):
        features = extractor(np.zeros(samples, dtype=np.float32), sampling_rate=16000)
        out[str(samples)] = {"tokens": int(features["num_audio_tokens"][0]), "chunks": features["chunk_sample_lengths"].tolist(),
                             "mel_frames": int(features["input_features"].shape[-1])}
    return out


LONG_SECONDS = 75  # one clip over a 60 s chunk: chunks of 60 s and 15 s, run as a batch padded to the longest


def long_clip() -> dict:
    """The per_layer wrapper on one 75 s clip through Dots3NoteFeatureExtractor at its 60 s chunks: the
    chunks' samples, the padded features, the whole forward (audio tokens then text) and the audio
    tower per module; the stem's real taps over the batch's frames and over each chunk's own 8n frames."""
    config = CASES["per_layer"]
    model = _build(config)
    processor = _processor()
    mel = config["audio_config"]["feature_size"]
    extractor = Dots3NoteFeatureExtractor(feature_size=mel)
    waveform = np.sin(np.arange(LONG_SECONDS * 16000) * 0.05).astype(np.float32)
    audio = extractor(waveform, sampling_rate=16000)
    tokens = len(processor.replace_audio_token({"num_audio_tokens": audio["num_audio_tokens"]}, 0)) // len(processor.audio_token)
    ids = [AUDIO] * tokens + torch.randint(0, 80, (TEXT_TOKENS,)).tolist()
    total, counts = _count(model, input_ids=torch.tensor([ids]), input_features=audio["input_features"],
                           chunk_sample_lengths=audio["chunk_sample_lengths"])
    root = type(model).__name__
    frames = int(audio["input_features"].shape[-1])
    chunk_tokens = [-(-samples // 1280) for samples in audio["chunk_sample_lengths"].tolist()]
    return {
        "model": "per_layer", "seconds": LONG_SECONDS, "samples": len(waveform),
        "chunk_sample_lengths": audio["chunk_sample_lengths"].tolist(), "features_shape": list(audio["input_features"].shape),
        "audio_tokens": tokens, "mel_frames": frames, "sequence": len(ids), "forward": total,
        "modules": {k.removeprefix(f"{root}.model."): v for k, v in counts.items() if ".audio_tower" in k},
        "audio_stem": _audio_stem(model, frames, mel),
        "chunk_stems": [_audio_stem(model, 8 * n, mel) for n in chunk_tokens],
    }


def _plain(config: dict) -> dict:
    """A saved sub-config without what JSON cannot hold or flopsreg does not read (rope_parameters, dtype)."""
    return {k: v for k, v in config.items() if isinstance(v, (int, float, str, bool, list, dict, type(None))) and k not in ("dtype", "rope_parameters")}


def class_defaults() -> dict:
    """The class defaults' parameters (meta device): the whole model, each tower; and what AutoModelForCausalLM builds.
    The towers' sub-configs are recorded as to_dict writes them (the text config is measure_dots3.py's)."""
    config = AutoConfig.for_model("dots3_note")
    with torch.device("meta"):
        model = modeling_dots3_note.Dots3NoteForConditionalGeneration(config)
    saved = config.to_dict()  # the towers as a config.json holds them (the vision schedule as per_layer_config)
    out = {
        "config": {"model_type": "dots3_note", **{key: _plain(saved[key]) for key in ("vision_config", "audio_config")}},
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "vision_parameters": int(sum(p.numel() for p in model.model.vision_tower.parameters())),
        "audio_parameters": int(sum(p.numel() for p in model.model.audio_tower.parameters())),
    }
    try:
        with torch.device("meta"):
            causal = AutoModelForCausalLM.from_config(config)
        out["causal_lm"] = {"class": type(causal).__name__, "parameters": int(sum(p.numel() for p in causal.parameters()))}
    except Exception as exc:  # recorded, not guessed
        out["causal_lm"] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    return out


def main() -> int:
    warnings.filterwarnings("ignore")
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "models": {}, "defaults": {}}
    for name, config in CASES.items():
        results["models"][name] = measure(name, config)
    results["defaults"]["dots3_note"] = class_defaults()
    results["processor"] = processor_tokens()
    results["audio_tokens"] = audio_tokens()
    results["long_clip"] = long_clip()
    (HERE / "forward_dots3mm.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
