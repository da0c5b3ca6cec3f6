"""Measure a tiny Qwen2.5-Omni thinker (brief omni25, issue 25) with real images, video frames and
audio under torch's FlopCounterMode, and the parameters of the whole Qwen2.5-Omni models.

Thinker: a tiny Qwen2_5OmniThinkerForConditionalGeneration (odd widths, eager attention; its ViT
with windowed and full blocks, its audio encoder with n_window 5: chunks of 10 mel frames). Images
go through transformers' Qwen2VLImageProcessorPil (Qwen2.5-Omni's image processor, its published
min/max pixels), video frames through Qwen2VLVideoProcessor with Qwen2_5OmniProcessor's video size
bounds, and random waveforms through WhisperFeatureExtractor as Qwen2_5OmniProcessor._process_audio
calls it (padding "max_length", its feature_attention_mask), and the processor's own placeholder
expansion (``replace_audio_token``, ``replace_image_token``); the chat template's wrapper tokens
(``<|audio_bos|>``/``<|audio_eos|>``, ``<|vision_bos|>``/``<|vision_eos|>``) around each. Recorded per
case: the FLOPs of the whole forward, of the audio tower (and each of its modules), of the visual
module, the token counts, mel frames, and the allowed (query, key) pairs of the audio encoder's
windows (cu_seqlens), brute-forced from what the attention really receives; and each video's
placeholder with its own audio interleaved (load_audio_from_video). Parameters: the tiny
thinker, the tiny whole Qwen2_5OmniForConditionalGeneration with and without audio output, and the
class defaults (meta device; saved as tests/data/hf/qwen2-5-omni-defaults.json and
qwen2-5-omni-thinker-defaults.json). forward_omni25.json comes from torch and transformers alone;
tests/hf/test_omni25_forward.py compares flopsreg with it.

Needs torch, transformers, Pillow and torchvision (the video processor imports it), as the other
measuring scripts run them here:
    PYTHONPATH=/tmp/tvonly:/tmp/pilonly /work/tf-venv/bin/python tests/data/hf_forward/measure_omni25.py
"""

from __future__ import annotations

import json
import warnings
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import numpy as np
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig, Qwen2VLImageProcessorPil, WhisperFeatureExtractor
from transformers.models.qwen2_5_omni import modeling_qwen2_5_omni as omni
from transformers.models.qwen2_5_omni.processing_qwen2_5_omni import Qwen2_5OmniProcessor
from transformers.processing_utils import ProcessorMixin

HERE = Path(__file__).parent
TEXT_TOKENS = 9
AUDIO, IMAGE, VIDEO, AUDIO_BOS, AUDIO_EOS, VISION_BOS, VISION_EOS = 90, 91, 92, 93, 94, 95, 96
MROPE = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 2, 1]}
# head_dim 10 (40 / 4); a ViT of 4 blocks, 1 and 3 over whole images, 0 and 2 within windows of
# 56 px (2 merged tokens a side); an audio encoder over 20 mel bins, chunks of 2 x 5 frames.
THINKER = {
    "model_type": "qwen2_5_omni_thinker", "audio_token_index": AUDIO, "image_token_index": IMAGE, "video_token_index": VIDEO,
    "audio_start_token_id": AUDIO_BOS, "audio_end_token_id": AUDIO_EOS, "vision_start_token_id": VISION_BOS,
    "vision_end_token_id": VISION_EOS,
    "text_config": {"hidden_size": 40, "intermediate_size": 58, "num_hidden_layers": 2, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "vocab_size": 97, "max_position_embeddings": 4096, "rope_parameters": MROPE,
                    "tie_word_embeddings": False},
    "vision_config": {"depth": 4, "hidden_size": 36, "intermediate_size": 50, "num_heads": 3, "patch_size": 14,
                      "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 40, "window_size": 56,
                      "fullatt_block_indexes": [1, 3]},
    "audio_config": {"num_mel_bins": 20, "encoder_layers": 2, "encoder_attention_heads": 3, "encoder_ffn_dim": 50,
                     "d_model": 36, "n_window": 5, "output_dim": 40, "max_source_positions": 200},
}
# The whole model: a tiny talker (head_dim 8, embedding_size the thinker's width) and a tiny token2wav (its
# kernel, dilation and rate lists the class defaults, its widths small; enc_channels of one width, as its residuals need).
TALKER = {"vocab_size": 61, "embedding_size": 40, "hidden_size": 32, "intermediate_size": 46, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "rope_parameters": MROPE}
TOKEN2WAV = {
    "dit_config": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "head_dim": 8, "ff_mult": 2,
                   "emb_dim": 24, "num_embeds": 50, "mel_dim": 20, "enc_emb_dim": 16, "enc_dim": 12,
                   "enc_channels": [16, 16, 16, 16, 48], "enc_attention_channels": 8, "enc_se_channels": 8},
    "bigvgan_config": {"mel_dim": 20, "upsample_initial_channel": 64},  # six halvings, as the default rates: 1 channel last
}
WHOLE = {"model_type": "qwen2_5_omni", "thinker_config": THINKER, "talker_config": TALKER, "token2wav_config": TOKEN2WAV}
PIXELS = {"shortest_edge": 3136, "longest_edge": 12845056}  # Qwen/Qwen2.5-Omni-7B preprocessor_config.json min/max_pixels
VIDEO_PIXELS = {"shortest_edge": 128 * 28 * 28, "longest_edge": 768 * 28 * 28}  # Qwen2_5OmniProcessor.videos_kwargs
SAMPLING_RATE = 16_000
CHUNK_SECONDS = 3  # the tiny extractor's chunk_length (published: 300 s): clips are truncated to 3 s
# Clip lengths in samples: 1 s (100 frames: ten whole windows); 1.23 s (123 frames: a last window
# of 3); 0.05 s (5 frames, one window, one token); 3.5 s (truncated to 3 s: 300 frames); 1.001 s
# (16016 samples: the 101st frame starts inside the clip).
CLIPS = {"1s": 16_000, "1.23s": 19_680, "0.05s": 800, "3.5s": 56_000, "1.001s": 16_016}
IMAGES = {"300x500": (300, 500), "64x100": (64, 100)}
VIDEOS = {"4x120x160": (4, 120, 160), "3x90x90": (3, 90, 90)}


def _module_flops(counts: dict, prefix: str) -> int:
    return int(sum(counts.get(prefix, {}).values()))


def _config(spec: dict):
    return AutoConfig.for_model(spec["model_type"], **{k: v for k, v in spec.items() if k != "model_type"})


def _thinker():
    torch.manual_seed(0)
    model = omni.Qwen2_5OmniThinkerForConditionalGeneration(_config(THINKER)).eval()
    for config in (model.config, model.config.text_config, model.config.vision_config, model.config.audio_config):
        config._attn_implementation = "eager"
    return model


def _processor() -> Qwen2_5OmniProcessor:
    """Qwen2_5OmniProcessor with a stand-in tokenizer giving its special tokens' text, and the
    feature extractor as the published preprocessor_config.json builds it (but 20 mel bins, 3 s)."""
    tokenizer = SimpleNamespace(image_token="<image>", audio_token="<audio>", video_token="<video>", image_token_id=IMAGE,
                                audio_token_id=AUDIO, video_token_id=VIDEO, vision_bos_token="<vision_bos>",
                                vision_eos_token="<vision_eos>", audio_bos_token="<audio_bos>", audio_eos_token="<audio_eos>")

    def init(self, *args, **kwargs):
        self.tokenizer = tokenizer

    with mock.patch.object(ProcessorMixin, "__init__", init):
        processor = Qwen2_5OmniProcessor(tokenizer=tokenizer)
    processor.feature_extractor = WhisperFeatureExtractor(feature_size=20, sampling_rate=SAMPLING_RATE, hop_length=160,
                                                          chunk_length=CHUNK_SECONDS, n_fft=400, return_attention_mask=True)
    processor.image_processor = Qwen2VLImageProcessorPil(patch_size=14, merge_size=2, temporal_patch_size=2, size=dict(PIXELS))
    return processor


def _window_pairs(model, features, mask) -> dict:
    """The audio encoder's attention at its first layer: the (query, key) pairs of each window it
    is given (cu_seqlens), and the frames it runs over."""
    seen = {}

    def hook(module, args, kwargs):
        cu = kwargs["cu_seqlens"].tolist()
        lengths = [b - a for a, b in zip(cu, cu[1:])]
        seen["windows"] = lengths
        seen["pairs"] = sum(n * n for n in lengths)
        seen["frames"] = int(kwargs["hidden_states"].shape[0])

    handle = model.model.audio_tower.layers[0].self_attn.register_forward_pre_hook(hook, with_kwargs=True)
    with torch.no_grad():
        model.model.get_audio_features(features, feature_attention_mask=mask)
    handle.remove()
    return seen


def _audio_pieces(counts: dict, root: str) -> dict:
    tower = f"{root}.model.audio_tower"
    pieces = {name: _module_flops(counts, f"{tower}.{name}") for name in ("conv1", "conv2", "proj")}
    for index in range(THINKER["audio_config"]["encoder_layers"]):
        layer = f"{tower}.layers.{index}"
        pieces[f"layers.{index}.self_attn"] = _module_flops(counts, f"{layer}.self_attn")
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            pieces[f"layers.{index}.self_attn.{name}"] = _module_flops(counts, f"{layer}.self_attn.{name}")
        pieces[f"layers.{index}.fc1"] = _module_flops(counts, f"{layer}.fc1")
        pieces[f"layers.{index}.fc2"] = _module_flops(counts, f"{layer}.fc2")
    return pieces


def measure_audio(model, processor) -> dict:
    root = type(model).__name__
    generator = np.random.default_rng(1)
    cases = {}
    for case, samples in CLIPS.items():
        wave = generator.uniform(-0.5, 0.5, samples).astype(np.float32)
        inputs, replacements = processor._process_audio([wave], sampling_rate=SAMPLING_RATE, return_attention_mask=True,
                                                        return_tensors="pt")
        features, mask = inputs["input_features"], inputs["feature_attention_mask"]
        tokens = replacements[0].count("<audio>")
        assert replacements[0] == "<audio>" * tokens
        text = torch.randint(0, 80, (TEXT_TOKENS,)).tolist()
        ids = torch.tensor([AUDIO_BOS, *[AUDIO] * tokens, AUDIO_EOS, *text]).unsqueeze(0)
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(input_ids=ids, input_features=features, feature_attention_mask=mask)
        counts = counter.get_flop_counts()
        audio = _module_flops(counts, f"{root}.model.audio_tower")
        text_only = FlopCounterMode(display=False)
        with torch.no_grad(), text_only:
            model(input_ids=ids)  # the same length of tokens, no audio: the language model alone
        cases[case] = {
            "samples": samples,
            "mel_frames": int(features.shape[2]),
            "real_mel_frames": int(mask.sum()),
            "audio_tokens": tokens,
            "num_audio_tokens": int(inputs["num_audio_tokens"][0]),
            "sequence_length": int(ids.shape[1]),
            "forward": int(counter.get_total_flops()),
            "audio_tower": audio,
            "rest": int(counter.get_total_flops()) - audio,
            "text_only_forward": int(text_only.get_total_flops()),
            "pieces": _audio_pieces(counts, root),
            "attention": _window_pairs(model, features, mask),
        }
    return cases


def measure_images(model, processor) -> dict:
    root = type(model).__name__
    generator = np.random.default_rng(2)
    merge = THINKER["vision_config"]["spatial_merge_size"]
    cases = {}
    for case, (height, width) in IMAGES.items():
        image = generator.integers(0, 256, (height, width, 3), dtype=np.uint8)
        inputs = processor.image_processor(images=[image], return_tensors="pt", input_data_format="channels_last")
        grid = inputs["image_grid_thw"]
        replacement = processor.replace_image_token({"image_grid_thw": grid}, 0)
        processor.image_processor.merge_size = merge
        tokens = replacement.count("<image>")
        ids = torch.tensor([VISION_BOS, *[IMAGE] * tokens, VISION_EOS, *torch.randint(0, 80, (TEXT_TOKENS,)).tolist()]).unsqueeze(0)
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(input_ids=ids, pixel_values=inputs["pixel_values"], image_grid_thw=grid)
        visual = _module_flops(counter.get_flop_counts(), f"{root}.model.visual")
        cases[case] = {"image": [height, width], "image_grid_thw": grid.tolist(), "image_tokens": tokens,
                       "sequence_length": int(ids.shape[1]), "forward": int(counter.get_total_flops()), "visual": visual,
                       "rest": int(counter.get_total_flops()) - visual}
    return cases


def measure_videos(model) -> dict:
    from transformers import Qwen2VLVideoProcessor  # imports torchvision: only here

    vision = THINKER["vision_config"]
    processor = Qwen2VLVideoProcessor(patch_size=vision["patch_size"], merge_size=vision["spatial_merge_size"],
                                      temporal_patch_size=vision["temporal_patch_size"], do_sample_frames=False,
                                      size=dict(VIDEO_PIXELS))
    generator = np.random.default_rng(3)
    cases = {}
    for case, (frames, height, width) in VIDEOS.items():
        video = generator.integers(0, 256, (frames, height, width, 3), dtype=np.uint8)
        inputs = processor(videos=[video], return_tensors="pt", input_data_format="channels_last")
        grid = inputs["video_grid_thw"]
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model.model.visual(inputs["pixel_values_videos"], grid_thw=grid)
        t, rows, columns = grid.tolist()[0]
        cases[case] = {"video": [frames, height, width], "video_grid_thw": grid.tolist(),
                       "video_tokens": t * rows * columns // vision["spatial_merge_size"] ** 2,
                       "visual": int(counter.get_total_flops()),
                       "with_its_audio": _interleaved(processor, inputs, frames)}
    return {"processor": type(processor).__name__, "pixels": VIDEO_PIXELS, "cases": cases}


def _interleaved(video_processor, inputs, frames: int) -> dict:
    """Qwen2_5OmniProcessor's placeholder of a video with its own audio (load_audio_from_video): the
    video's frames at the processor's default 2 fps, its audio as long, through replace_video_token."""
    processor = _processor()
    processor.video_processor = video_processor
    seconds = Fraction(frames, 2)
    samples = int(seconds * SAMPLING_RATE)
    audio, _ = processor._process_audio([np.zeros(samples, dtype=np.float32)], sampling_rate=SAMPLING_RATE,
                                        return_attention_mask=True, return_tensors="pt")
    videos = {"video_grid_thw": inputs["video_grid_thw"], "video_second_per_grid": [video_processor.temporal_patch_size / 2.0]}
    text = processor.replace_video_token(videos, 0, processed_audio=audio, video_to_audio_indices=[0], load_audio_from_video=True,
                                         position_id_per_seconds=25, seconds_per_chunk=2.0)
    pieces = {name: text.count(name) for name in ("<video>", "<audio>", "<audio_bos>", "<audio_eos>")}
    assert sum(len(name) * n for name, n in pieces.items()) == len(text)
    return {"seconds": str(seconds), "samples": samples, "pieces": pieces}


def _parameters(module) -> int:
    return int(sum(p.numel() for p in module.parameters()))


def _whole(spec: dict, device: str | None = None) -> dict:
    config = _config(spec)
    if device == "meta":
        with torch.device("meta"):
            model = omni.Qwen2_5OmniForConditionalGeneration(config)
    else:
        torch.manual_seed(0)
        model = omni.Qwen2_5OmniForConditionalGeneration(config)
    parts = {"thinker": model.thinker, "audio_tower": model.thinker.model.audio_tower, "visual": model.thinker.model.visual}
    if model.has_talker:
        parts.update(talker=model.talker, token2wav=model.token2wav)
    return {"parameters": _parameters(model), "parts": {name: _parameters(part) for name, part in parts.items()}}


def _saved(config) -> dict:
    """A config's dict as transformers saves it, without its version stamps."""
    saved = config.to_dict()

    def strip(holder):
        if isinstance(holder, dict):
            holder.pop("transformers_version", None)
            for value in holder.values():
                strip(value)

    strip(saved)
    return saved


def class_defaults() -> dict:
    config = AutoConfig.for_model("qwen2_5_omni")
    with torch.device("meta"):
        model = omni.Qwen2_5OmniForConditionalGeneration(config)
        thinker = omni.Qwen2_5OmniThinkerForConditionalGeneration(config.thinker_config)
    parts = {"thinker": model.thinker, "audio_tower": model.thinker.model.audio_tower, "visual": model.thinker.model.visual,
             "talker": model.talker, "token2wav": model.token2wav}
    record = {"qwen2_5_omni": {"config": _saved(config), "parameters": _parameters(model),
                               "parts": {name: _parameters(part) for name, part in parts.items()}},
              "qwen2_5_omni_thinker": {"config": _saved(config.thinker_config), "parameters": _parameters(thinker)}}
    for model_type, entry in record.items():  # the class-default configs beside the other types' (tests/data/hf)
        name = model_type.replace("_", "-") + "-defaults.json"
        (HERE.parent / "hf" / name).write_text(json.dumps(entry["config"], indent=2, sort_keys=True) + "\n")
    return record


def main() -> None:
    warnings.filterwarnings("ignore")
    model = _thinker()
    processor = _processor()
    thinker = {
        "config": THINKER,
        "class": type(model).__name__,
        "text_tokens": TEXT_TOKENS,
        "sampling_rate": SAMPLING_RATE,
        "n_samples": processor.feature_extractor.n_samples,
        "parameters": _parameters(model),
        "audio_parameters": _parameters(model.model.audio_tower),
        "visual_parameters": _parameters(model.model.visual),
        "audio": measure_audio(model, processor),
        "images": measure_images(model, processor),
        "videos": measure_videos(model),
    }
    silent = {**WHOLE, "enable_audio_output": False}
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__.split("+")[0],
        "models": {
            "qwen2_5_omni_thinker": thinker,
            "qwen2_5_omni": {"config": WHOLE, **_whole(WHOLE)},
            "qwen2_5_omni_without_audio_output": {"config": silent, **_whole(silent)},
        },
        "defaults": class_defaults(),
    }
    (HERE / "forward_omni25.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
