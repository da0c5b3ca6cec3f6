"""Measure a tiny Gemma 4 unified forward pass with real audio (brief g4uaudio, issue 25): the
encoder-free audio embedder and the language model together, under torch's FlopCounterMode.

Random waveforms go through transformers' own Gemma4UnifiedAudioFeatureExtractor (the clip cut
into frames of audio_samples_per_token raw samples, the last zero-padded, a batch padded to its
longest clip with input_features_mask false on the padding); the text is expanded as
Gemma4UnifiedProcessor expands each audio placeholder (its ``replace_audio_token`` over the
extractor's mask: ``<boa>``, the soft tokens, ``<eoa>``), the clips before the text, with the
processor's mm_token_type_ids (3 on the audio soft tokens), and
Gemma4UnifiedForConditionalGeneration runs on it. Recorded per case: the FLOPs of the whole
forward and of the embedder (embed_audio), the frames the extractor gives and how many are real,
the token counts the processor inserts (and its ``_compute_audio_num_tokens``), the allowed
(query, key) pairs of the language model's masks with and without mm_token_type_ids, and the
parameter totals. One more model holds the vision embedder too (measure_gemma4img.py's tiny
unified config and its image inputs): an image, then a clip, then the text, to record that the
image's bidirectional block and the causal audio tokens go together. The result, forward_g4uaudio.json, comes from torch and transformers alone:
tests/hf/test_g4uaudio_forward.py compares flopsreg with it.

Needs torch, transformers and Pillow (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 pillow && python tests/data/hf_forward/measure_g4uaudio.py
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import measure_gemma4img
import numpy as np
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig
from transformers.models.gemma4_unified.feature_extraction_gemma4_unified import Gemma4UnifiedAudioFeatureExtractor
from transformers.models.gemma4_unified.modeling_gemma4_unified import Gemma4UnifiedForConditionalGeneration
from transformers.models.gemma4_unified.processing_gemma4_unified import Gemma4UnifiedProcessor
from transformers.processing_utils import ProcessorMixin

HERE = Path(__file__).parent
TEXT_TOKENS = 7
BOA, EOA, AUDIO = 96, 97, 95  # <boa>, <eoa>, <audio_soft_token>
PIECES = {"<boa>": BOA, "<eoa>": EOA, "<audio>": AUDIO}
IDS = measure_gemma4img.IDS  # the same token ids as the image record
assert (IDS["boa_token_id"], IDS["eoa_token_index"], IDS["audio_token_id"]) == (BOA, EOA, AUDIO)
# Odd widths; window 5, shorter than a clip's soft tokens; sliding and full layers alternate; the
# unified text config's default use_bidirectional_attention ("vision") kept.
TEXT = {"hidden_size": 44, "intermediate_size": 58, "num_hidden_layers": 4, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 12, "global_head_dim": 16, "vocab_size": 100, "sliding_window": 5,
        "layer_types": ["sliding_attention", "full_attention"] * 2, "max_position_embeddings": 4096, "pad_token_id": 0}
# The published 640 samples per token (40 ms at 16 kHz); a second model with 250 (a width of its own).
SAMPLES_PER_TOKEN = {"gemma4_unified": 640, "gemma4_unified_250": 250}
SAMPLING_RATE = 16_000
# The clips (in samples) of one sequence, per case: 1 s (25 whole frames), 2.5 s (62 frames and a
# zero-padded 63rd), 10 ms (one padded frame), and two clips of one request, which the extractor
# pads to the longest (the embedder runs on the padding frames, whose outputs are dropped).
CASES = {"1s": [16_000], "2.5s": [40_000], "10ms": [160], "two": [16_000, 40_000]}


def _config(per_token: int) -> dict:
    return {"model_type": "gemma4_unified", **IDS, "tie_word_embeddings": True,
            "text_config": {"model_type": "gemma4_unified_text", **TEXT},
            "audio_config": {"model_type": "gemma4_unified_audio", "audio_embed_dim": per_token}}


def _processor(per_token: int) -> Gemma4UnifiedProcessor:
    """Gemma4UnifiedProcessor with a stand-in tokenizer that gives the special tokens' text (its base
    class is not needed to expand a placeholder or give mm_token_type_ids)."""
    stub = SimpleNamespace(image_token_id=93, boi_token="<boi>", eoi_token="<eoi>", image_token="<image>",
                           add_special_tokens=lambda *a, **k: None, convert_tokens_to_ids=lambda *a: 94,
                           audio_token_id=AUDIO, audio_token="<audio>", boa_token="<boa>", eoa_token="<eoa>")
    extractor = Gemma4UnifiedAudioFeatureExtractor(feature_size=per_token, audio_samples_per_token=per_token)
    with mock.patch.object(ProcessorMixin, "__init__", lambda self, **kwargs: None):
        processor = Gemma4UnifiedProcessor(feature_extractor=None, image_processor=None, tokenizer=stub, video_processor=None)
    processor.feature_extractor = extractor
    return processor


def _pieces(sequence: str) -> list[str]:
    out = []
    while sequence:
        piece = next(p for p in PIECES if sequence.startswith(p))
        out.append(piece)
        sequence = sequence[len(piece):]
    return out


def measure_with_image() -> dict:
    """measure_gemma4img's tiny unified model with an audio config: a 300 x 500 image (its
    processor's inputs) and a 1 s clip before the text, with the processor's mm_token_type_ids."""
    config = {**measure_gemma4img.MODELS["gemma4_unified"], "audio_config": _config(640)["audio_config"]}
    hf_config = AutoConfig.for_model("gemma4_unified", **{k: v for k, v in config.items() if k != "model_type"})
    torch.manual_seed(0)
    model = Gemma4UnifiedForConditionalGeneration(hf_config).eval()
    model.config._attn_implementation = "eager"
    model.model.language_model.config._attn_implementation = "eager"
    processor = _processor(640)
    image_inputs, soft = measure_gemma4img._inputs("gemma4_unified", [(300, 500)])
    wave = np.random.default_rng(3).uniform(-0.5, 0.5, 16_000).astype(np.float32)
    audio_inputs = processor.feature_extractor([wave], return_tensors="pt")
    image_ids = [measure_gemma4img.PIECES[p] for p in measure_gemma4img._replacement(soft[0])]
    audio_ids = [PIECES[p] for p in _pieces(processor.replace_audio_token({"input_features_mask": audio_inputs["input_features_mask"].numpy()}, 0))]
    ids = torch.tensor(image_ids + audio_ids + torch.randint(1, 80, (TEXT_TOKENS,)).tolist()).unsqueeze(0)
    types = torch.tensor(processor.create_mm_token_type_ids(ids.tolist()))
    inputs = {**image_inputs, "input_features": audio_inputs["input_features"], "input_features_mask": audio_inputs["input_features_mask"]}
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(input_ids=ids, mm_token_type_ids=types, **inputs)
    counts = counter.get_flop_counts()
    root = type(model).__name__
    parts = {part: int(sum(counts.get(f"{root}.model.{part}", {}).values())) for part in ("embed_vision", "embed_audio")}
    seen = {}
    for key, given in (("mask_pairs", types), ("mask_pairs_text", None)):
        def hook(module, args, kwargs):
            seen[key] = {kind: _pairs(m) for kind, m in kwargs["attention_mask"].items()}
        handle = model.model.language_model.register_forward_pre_hook(hook, with_kwargs=True)
        with torch.no_grad():
            model.model(input_ids=ids, mm_token_type_ids=given, **inputs)
        handle.remove()
    return {
        "config": config,
        "max_soft_tokens": measure_gemma4img.BUDGET,
        "text_tokens": TEXT_TOKENS,
        "image": [300, 500],
        "image_soft_tokens": soft[0],
        "samples": 16_000,
        "audio_soft_tokens": int(audio_inputs["input_features_mask"].sum()),
        "token_types": {str(t): int((types == t).sum()) for t in (1, 3)},
        "sequence_length": int(ids.shape[1]),
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "forward": int(counter.get_total_flops()),
        "vision_embedder": parts["embed_vision"],
        "audio_embedder": parts["embed_audio"],
        "rest": int(counter.get_total_flops()) - parts["embed_vision"] - parts["embed_audio"],
        **seen,
    }


def _pairs(mask: torch.Tensor) -> int:
    allowed = mask if mask.dtype == torch.bool else mask == 0
    return int(allowed.sum())


def _masks(model, ids, types, features, mask) -> dict[str, int]:
    """The pairs of each mask the language model receives (captured at its input)."""
    seen = {}

    def hook(module, args, kwargs):
        seen.update({kind: _pairs(m) for kind, m in kwargs["attention_mask"].items()})

    handle = model.model.language_model.register_forward_pre_hook(hook, with_kwargs=True)
    with torch.no_grad():
        model.model(input_ids=ids, mm_token_type_ids=types, input_features=features, input_features_mask=mask)
    handle.remove()
    return seen


def measure(name: str) -> dict:
    per_token = SAMPLES_PER_TOKEN[name]
    config = _config(per_token)
    hf_config = AutoConfig.for_model("gemma4_unified", **{k: v for k, v in config.items() if k != "model_type"})
    torch.manual_seed(0)
    model = Gemma4UnifiedForConditionalGeneration(hf_config).eval()
    model.config._attn_implementation = "eager"
    model.model.language_model.config._attn_implementation = "eager"
    processor = _processor(per_token)
    generator = np.random.default_rng(1)
    cases = {}
    for case, lengths in CASES.items():
        waves = [generator.uniform(-0.5, 0.5, samples).astype(np.float32) for samples in lengths]
        inputs = processor.feature_extractor(waves, return_tensors="pt")
        features, mask = inputs["input_features"], inputs["input_features_mask"]
        sequence = [p for index in range(len(waves))
                    for p in _pieces(processor.replace_audio_token({"input_features_mask": mask.numpy()}, index))]
        ids = torch.tensor([PIECES[p] for p in sequence] + torch.randint(1, 80, (TEXT_TOKENS,)).tolist()).unsqueeze(0)
        types = torch.tensor(processor.create_mm_token_type_ids(ids.tolist()))
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(input_ids=ids, mm_token_type_ids=types, input_features=features, input_features_mask=mask)
        counts = counter.get_flop_counts()
        embedder = int(sum(counts.get(f"{type(model).__name__}.model.embed_audio", {}).values()))
        soft = [int(m.sum()) for m in mask]
        cases[case] = {
            "samples": lengths,
            "features": list(features.shape),
            "real_frames": soft,
            "processor_num_tokens": [int(processor._compute_audio_num_tokens(np.zeros(s), SAMPLING_RATE)) for s in lengths],
            "sequence_soft_tokens": sequence.count("<audio>"),
            "wrappers": [sequence.count("<boa>"), sequence.count("<eoa>")],
            "mm_token_type_ids_audio": int((types == 3).sum()),
            "sequence_length": int(ids.shape[1]),
            "forward": int(counter.get_total_flops()),
            "audio_embedder": embedder,
            "audio_embedder_ops": {str(op): int(n) for op, n in counts.get(f"{type(model).__name__}.model.embed_audio", {}).items()},
            "rest": int(counter.get_total_flops()) - embedder,
            "mask_pairs": _masks(model, ids, types, features, mask),
            "mask_pairs_text": _masks(model, ids, None, features, mask),
        }
    return {
        "config": config,
        "class": type(model).__name__,
        "sampling_rate": SAMPLING_RATE,
        "samples_per_token": per_token,
        "text_tokens": TEXT_TOKENS,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "audio_parameters": int(sum(p.numel() for p in model.model.embed_audio.parameters())),
        "cases": cases,
    }


def main() -> None:
    warnings.filterwarnings("ignore")
    extractor = Gemma4UnifiedAudioFeatureExtractor()
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__.split("+")[0],
        "extractor_defaults": {"sampling_rate": extractor.sampling_rate, "audio_samples_per_token": extractor.audio_samples_per_token,
                               "feature_size": extractor.feature_size},
        "models": {name: measure(name) for name in SAMPLES_PER_TOKEN},
        "with_image": measure_with_image(),
    }
    (HERE / "forward_g4uaudio.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
