"""Measure a tiny Qwen3-Omni-MoE thinker (brief omni3) with real images, video frames and audio clips
under torch's FlopCounterMode.

A tiny Qwen3OmniMoeThinkerForConditionalGeneration (layer 0 dense by mlp_only_layers, layers 1 and 2
sparse; eager attention and eager experts; the audio encoder with the published n_window = 50 and
n_window_infer = 200, windows of 26 tokens): random RGB images through Qwen2VLImageProcessorPil
(the class Qwen3OmniMoeProcessor takes, its default pixel bounds, the tiny ViT's 16-pixel patches),
random frames through Qwen2VLVideoProcessor with Qwen3OmniMoeProcessor's videos_kwargs size, and
synthetic waveforms through WhisperFeatureExtractor (128 mel bins) with the processor's audio_kwargs;
the placeholders expanded as Qwen3OmniMoeProcessor's replace_image_token / replace_video_token /
replace_audio_token do (called on a stand-in holding the token strings: no tokenizer offline), with
the chat template's start/end tokens around each, the media before the text. Recorded per case: the
whole forward, the ViT's and the audio encoder's FLOPs (and the audio encoder's pieces), the token
counts and the audio chunks and windows (cu_seqlens). Parameters of the tiny thinker, of the whole
tiny Qwen3OmniMoeForConditionalGeneration with enable_audio_output false and true (its talker and
code2wav) and with either tie_word_embeddings set, of the thinker's class defaults, of the whole
class defaults with the two keys they lack to build (both saved in tests/data/hf/) and of the published Qwen/Qwen3-Omni-30B-A3B-Instruct thinker on the meta device.
forward_omni3.json comes from torch and transformers alone; tests/hf/test_omni3_forward.py compares
flopsreg with it.

Needs torch, transformers, Pillow and torchvision (the video processor imports it; the PyPI wheel
does not load beside torch+cpu, so this ran with PYTHONPATH=/tmp/pilonly:/tmp/tvonly, see
measure_gemma3nmm.py's docstring):
    pip install torch==2.13.0 transformers==5.24.0 pillow torchvision && python tests/data/hf_forward/measure_omni3.py
"""

from __future__ import annotations

import json
import types
import warnings
from pathlib import Path

import numpy as np
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers import (
    Qwen2VLImageProcessorPil,
    Qwen2VLVideoProcessor,
    Qwen3OmniMoeConfig,
    Qwen3OmniMoeForConditionalGeneration,
    Qwen3OmniMoeProcessor,
    Qwen3OmniMoeThinkerConfig,
    Qwen3OmniMoeThinkerForConditionalGeneration,
    WhisperFeatureExtractor,
)
from transformers.models.qwen3_omni_moe import modeling_qwen3_omni_moe as modeling

HERE = Path(__file__).parent
TEXT_TOKENS = 9
SAMPLING_RATE = 16000
IDS = {"image_token_id": 90, "video_token_id": 91, "audio_token_id": 94, "vision_start_token_id": 92,
       "vision_end_token_id": 93, "audio_start_token_id": 95, "audio_end_token_id": 96}
TEXT = {"model_type": "qwen3_omni_moe_text", "hidden_size": 44, "intermediate_size": 58, "num_hidden_layers": 3,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12, "vocab_size": 97, "max_position_embeddings": 4096,
        "decoder_sparse_step": 1, "moe_intermediate_size": 26, "num_experts": 5, "num_experts_per_tok": 2,
        "mlp_only_layers": [0], "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 2, 2],
                                                    "interleaved": True}}
VISION = {"model_type": "qwen3_omni_moe_vision_encoder", "depth": 3, "hidden_size": 36, "intermediate_size": 50, "num_heads": 3,
          "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 44,
          "num_position_embeddings": 49, "deepstack_visual_indexes": [1]}
AUDIO = {"model_type": "qwen3_omni_moe_audio_encoder", "d_model": 32, "encoder_layers": 2, "encoder_attention_heads": 2,
         "encoder_ffn_dim": 40, "num_mel_bins": 128, "output_dim": 44, "downsample_hidden_size": 8, "n_window": 50,
         "n_window_infer": 200, "max_source_positions": 1500}
THINKER = {"model_type": "qwen3_omni_moe_thinker", **IDS, "text_config": TEXT, "vision_config": VISION, "audio_config": AUDIO}
# The talker and code2wav of the whole tiny model (enable_audio_output true): Qwen3OmniMoeTalkerTextConfig
# declares no shared_expert_intermediate_size and the talker config no spatial_merge_size, which the
# talker's modules read (the published config gives both).
TALKER = {"thinker_hidden_size": 44, "spatial_merge_size": 2, "num_code_groups": 4,
          "text_config": {"hidden_size": 24, "intermediate_size": 30, "num_hidden_layers": 2, "num_attention_heads": 3,
                          "num_key_value_heads": 1, "head_dim": 12, "vocab_size": 64, "moe_intermediate_size": 10,
                          "num_experts": 3, "num_experts_per_tok": 2, "shared_expert_intermediate_size": 14},
          "code_predictor_config": {"hidden_size": 16, "intermediate_size": 20, "num_hidden_layers": 1, "num_attention_heads": 4,
                                    "num_key_value_heads": 1, "head_dim": 8, "vocab_size": 32, "num_code_groups": 4}}
# Code2Wav with its class-default (published) upsampling rates, the one list flopsreg counts.
CODE2WAV = {"hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
            "codebook_size": 32, "num_quantizers": 4, "decoder_dim": 32}
IMAGE_PIXELS = dict(Qwen2VLImageProcessorPil.size)
VIDEO_PIXELS = dict(Qwen3OmniMoeProcessor.videos_kwargs["size"])
# Clips in samples: a short one (one partial chunk), several chunks and a rest, a whole number of
# chunks, and one over several attention windows (26 tokens each) with a partial last window.
CLIPS = {"0.5s": 8000, "3.3s": 52800, "4s": 64000, "9.05s": 144800}
CASES = {
    "text": {},
    "image": {"images": [(300, 500)]},
    "two_images": {"images": [(64, 100), (450, 260)]},
    "video": {"videos": [(4, 300, 500)]},
    "video_odd": {"videos": [(5, 200, 260)]},
    **{f"audio_{name}": {"audio": [samples]} for name, samples in CLIPS.items()},
    "two_clips": {"audio": [CLIPS["0.5s"], CLIPS["9.05s"]]},
    "image_and_clip": {"images": [(300, 500)], "audio": [CLIPS["3.3s"]]},
}
# Qwen/Qwen3-Omni-30B-A3B-Instruct's thinker_config (huggingface.co/Qwen/Qwen3-Omni-30B-A3B-Instruct
# config.json as transformers 5.7 printed it in a public transcription: the keys that size the model).
PUBLISHED_THINKER = {
    "model_type": "qwen3_omni_moe_thinker", "tie_word_embeddings": False,
    "text_config": {"model_type": "qwen3_omni_moe_text", "decoder_sparse_step": 1, "head_dim": 128, "hidden_size": 2048,
                    "intermediate_size": 768, "mlp_only_layers": [], "moe_intermediate_size": 768, "norm_topk_prob": True,
                    "num_attention_heads": 32, "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48,
                    "num_key_value_heads": 4, "vocab_size": 152064, "attention_bias": False},
    "vision_config": {"model_type": "qwen3_omni_moe_vision_encoder", "deepstack_visual_indexes": [8, 16, 24], "depth": 27,
                      "hidden_size": 1152, "in_channels": 3, "intermediate_size": 4304, "num_heads": 16,
                      "num_position_embeddings": 2304, "out_hidden_size": 2048, "patch_size": 16, "spatial_merge_size": 2,
                      "temporal_patch_size": 2},
    "audio_config": {"model_type": "qwen3_omni_moe_audio_encoder", "d_model": 1280, "downsample_hidden_size": 480,
                     "encoder_attention_heads": 20, "encoder_ffn_dim": 5120, "encoder_layers": 32, "n_window": 50,
                     "n_window_infer": 800, "num_mel_bins": 128, "output_dim": 2048, "max_source_positions": 1500},
}
# ... and its talker_config and code2wav_config (the same transcription), for the whole model.
PUBLISHED_SPEECH = {
    "talker_config": {"thinker_hidden_size": 2048, "num_code_groups": 16, "spatial_merge_size": 2, "tie_word_embeddings": False,
                      "text_config": {"model_type": "qwen3_omni_moe_talker_text", "attention_bias": False, "decoder_sparse_step": 1,
                                      "head_dim": 128, "hidden_size": 1024, "intermediate_size": 2048, "mlp_only_layers": [],
                                      "moe_intermediate_size": 384, "num_attention_heads": 16, "num_experts_per_tok": 6,
                                      "num_hidden_layers": 20, "num_key_value_heads": 2, "num_local_experts": 128,
                                      "shared_expert_intermediate_size": 768, "vocab_size": 3072},
                      "code_predictor_config": {"model_type": "qwen3_omni_moe_talker_code_predictor", "attention_bias": False,
                                                "head_dim": 128, "hidden_size": 1024, "intermediate_size": 3072,
                                                "num_attention_heads": 16, "num_code_groups": 16, "num_hidden_layers": 5,
                                                "num_key_value_heads": 8, "vocab_size": 2048}},
    "code2wav_config": {"attention_bias": False, "codebook_size": 2048, "decoder_dim": 1536, "hidden_size": 1024,
                        "intermediate_size": 3072, "num_attention_heads": 16, "num_hidden_layers": 8, "num_key_value_heads": 16,
                        "num_quantizers": 16, "upsample_rates": [8, 5, 4, 3], "upsampling_ratios": [2, 2]},
}
TOKENS = {"image_token": "<|image_pad|>", "video_token": "<|video_pad|>", "audio_token": "<|audio_pad|>"}
NAMES = {"<|image_pad|>": IDS["image_token_id"], "<|video_pad|>": IDS["video_token_id"], "<|audio_pad|>": IDS["audio_token_id"]}


def _thinker(config: dict, device: str | None = None):
    hf = Qwen3OmniMoeThinkerConfig(**{k: v for k, v in config.items() if k != "model_type"})
    torch.manual_seed(0)
    if device == "meta":
        with torch.device("meta"):
            return Qwen3OmniMoeThinkerForConditionalGeneration(hf)
    return Qwen3OmniMoeThinkerForConditionalGeneration._from_config(hf, attn_implementation="eager",
                                                                    experts_implementation="eager").eval()


def _parameters(model) -> int:
    return int(sum(p.numel() for p in model.parameters()))


def _stand_in(image_processor, video_processor, feature_extractor):
    """Qwen3OmniMoeProcessor's own methods on an object holding its sub-processors and token strings."""
    holder = types.SimpleNamespace(image_processor=image_processor, video_processor=video_processor,
                                   feature_extractor=feature_extractor, n_window=Qwen3OmniMoeProcessor.n_window, **TOKENS)
    for name in ("replace_image_token", "replace_video_token", "replace_audio_token", "_process_audio", "_get_num_audio_tokens"):
        setattr(holder, name, types.MethodType(getattr(Qwen3OmniMoeProcessor, name), holder))
    return holder


def _ids(run: str) -> list[int]:
    ids, position = [], 0
    while position < len(run):
        token = next(name for name in NAMES if run.startswith(name, position))
        ids.append(NAMES[token])
        position += len(token)
    return ids


def measure_thinker() -> dict:
    model = _thinker(THINKER)
    root = type(model).__name__
    images = Qwen2VLImageProcessorPil(patch_size=16, merge_size=2, temporal_patch_size=2)
    videos = Qwen2VLVideoProcessor(patch_size=16, merge_size=2, temporal_patch_size=2, do_sample_frames=False)
    extractor = WhisperFeatureExtractor(feature_size=AUDIO["num_mel_bins"], sampling_rate=SAMPLING_RATE)
    processor = _stand_in(images, videos, extractor)
    generator = np.random.default_rng(5)
    cases = {}
    for case, media in CASES.items():
        text = torch.randint(0, 80, (TEXT_TOKENS,)).tolist()
        ids, kwargs, record = [], {}, {"media": {k: [list(v) if isinstance(v, tuple) else v for v in vs] for k, vs in media.items()}}
        if media.get("images"):
            frames = [generator.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in media["images"]]
            inputs = images(images=frames, return_tensors="pt", input_data_format="channels_last")
            kwargs.update(pixel_values=inputs["pixel_values"], image_grid_thw=inputs["image_grid_thw"])
            record["image_grid_thw"] = inputs["image_grid_thw"].tolist()
            record["image_tokens"] = []
            for index in range(len(frames)):
                run = _ids(processor.replace_image_token(inputs, index))
                record["image_tokens"].append(len(run))
                ids += [IDS["vision_start_token_id"], *run, IDS["vision_end_token_id"]]
        if media.get("videos"):
            clips = [generator.integers(0, 256, (f, h, w, 3), dtype=np.uint8) for f, h, w in media["videos"]]
            inputs = videos(videos=clips, return_tensors="pt", input_data_format="channels_last", size=VIDEO_PIXELS)
            # Qwen3OmniMoeProcessor._process_videos: temporal_patch_size / fps seconds a grid (fps 1.0 when not given)
            kwargs.update(pixel_values_videos=inputs["pixel_values_videos"], video_grid_thw=inputs["video_grid_thw"],
                          video_second_per_grid=torch.tensor([videos.temporal_patch_size / 1.0] * len(clips)))
            record["video_grid_thw"] = inputs["video_grid_thw"].tolist()
            record["video_tokens"] = []
            for index in range(len(clips)):
                run = _ids(processor.replace_video_token(inputs, index, load_audio_from_video=False))
                record["video_tokens"].append(len(run))
                ids += [IDS["vision_start_token_id"], *run, IDS["vision_end_token_id"]]
        if media.get("audio"):
            waves = [generator.standard_normal(samples).astype(np.float32) for samples in media["audio"]]
            inputs, runs = processor._process_audio(waves, sampling_rate=SAMPLING_RATE, padding=True, truncation=False,
                                                    return_attention_mask=True, return_tensors="pt")
            mask = inputs["feature_attention_mask"]
            kwargs.update(input_features=inputs["input_features"], feature_attention_mask=mask)
            lens = mask.sum(-1)
            chunks, _ = modeling.chunk_and_pad_features(inputs["input_features"].permute(0, 2, 1)[mask.bool()].permute(1, 0), lens,
                                                        AUDIO["n_window"])
            _, lengths = modeling.chunk_and_pad_features(torch.zeros(AUDIO["num_mel_bins"], int(lens.sum())), lens, AUDIO["n_window"])
            record.update(
                samples=media["audio"], mel_frames=[int(n) for n in lens], padded_frames=int(inputs["input_features"].shape[-1]),
                chunk_lengths=lengths.tolist(), padded_chunks=list(chunks.shape),
                cu_seqlens=modeling.get_audio_cu_seqlens(lengths, lens, AUDIO["n_window_infer"], AUDIO["n_window"]).tolist(),
                audio_tokens=[len(_ids(run)) for run in runs],
                processor_num_tokens=[int(n) for n in inputs["num_audio_tokens"]],
                processor_count_from_samples=[processor._get_num_audio_tokens(samples) for samples in media["audio"]],
            )
            for run in runs:
                ids += [IDS["audio_start_token_id"], *_ids(run), IDS["audio_end_token_id"]]
        input_ids = torch.tensor(ids + text).unsqueeze(0)
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), **kwargs)
        counts = counter.get_flop_counts()
        total = int(counter.get_total_flops())
        visual = int(sum(counts.get(f"{root}.model.visual", {}).values()))
        audio = int(sum(counts.get(f"{root}.model.audio_tower", {}).values()))
        prefix = f"{root}.model.audio_tower."
        pieces = {name[len(prefix):]: int(sum(ops.values())) for name, ops in counts.items() if name.startswith(prefix)}
        record.update(sequence_length=int(input_ids.shape[1]), forward=total, visual=visual, audio_tower=audio,
                      rest=total - visual - audio, audio_pieces=pieces)
        cases[case] = record
    whole, saved = {}, {}
    for enabled in (False, True):
        config = Qwen3OmniMoeConfig(thinker_config={k: v for k, v in THINKER.items() if k != "model_type"}, talker_config=TALKER,
                                    code2wav_config=CODE2WAV, enable_audio_output=enabled)
        with torch.device("meta"):
            built = Qwen3OmniMoeForConditionalGeneration(config)
        whole[str(enabled).lower()] = _parameters(built)
        if enabled:
            saved = json.loads(config.to_json_string(use_diff=False))  # the config.json transformers writes
            parts = {"talker": _parameters(built.talker), "code2wav": _parameters(built.code2wav)}
    ties = []  # whose tie_word_embeddings ties the thinker's head: the thinker config's, the wrapper's
    for thinker_tie, wrapper_tie in ((True, None), (False, True), (True, False)):
        config = Qwen3OmniMoeConfig(thinker_config={**{k: v for k, v in THINKER.items() if k != "model_type"},
                                                    "tie_word_embeddings": thinker_tie},
                                    enable_audio_output=False, **({} if wrapper_tie is None else {"tie_word_embeddings": wrapper_tie}))
        with torch.device("meta"):
            ties.append({"thinker": thinker_tie, "wrapper": wrapper_tie,
                         "parameters": _parameters(Qwen3OmniMoeForConditionalGeneration(config))})
    return {
        "config": THINKER, "class": root, "ties": ties, "text_tokens": TEXT_TOKENS, "image_pixels": IMAGE_PIXELS, "video_pixels": VIDEO_PIXELS,
        "parameters": _parameters(model), "visual_parameters": _parameters(model.model.visual),
        "audio_parameters": _parameters(model.model.audio_tower),
        "whole": {"talker_config": TALKER, "code2wav_config": CODE2WAV, "parameters_by_enable_audio_output": whole,
                  "saved_config": saved, "parts": parts},
        "cases": cases,
    }


def published() -> dict:
    model = _thinker(PUBLISHED_THINKER, "meta")
    config = Qwen3OmniMoeConfig(thinker_config={k: v for k, v in PUBLISHED_THINKER.items() if k != "model_type"}, **PUBLISHED_SPEECH)
    with torch.device("meta"):
        whole = Qwen3OmniMoeForConditionalGeneration(config)
    return {"thinker_config": PUBLISHED_THINKER, "parameters": _parameters(model), "visual_parameters": _parameters(model.model.visual),
            "audio_parameters": _parameters(model.model.audio_tower), **PUBLISHED_SPEECH, "whole_parameters": _parameters(whole),
            "talker_parameters": _parameters(whole.talker), "code2wav_parameters": _parameters(whole.code2wav)}


# Qwen3OmniMoeConfig's class defaults do not build: its talker reads keys its config classes do not
# declare. Built with these added (the published values), as "built_defaults".
BUILD_WITH = {"talker_config": {"spatial_merge_size": 2, "text_config": {"shared_expert_intermediate_size": 768}}}


def _saved(config, name: str) -> dict:
    """*config* as to_dict saves it (transformers_version dropped), written to tests/data/hf/<name>.json."""
    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if k != "transformers_version"}
        return value
    saved = clean(config.to_dict())
    (HERE.parent / "hf" / f"{name}.json").write_text(json.dumps(saved, indent=2) + "\n")
    return saved


def thinker_defaults() -> dict:
    """Qwen3OmniMoeThinkerConfig's class defaults, built on the meta device (saved as
    tests/data/hf/qwen3-omni-moe-thinker-defaults.json)."""
    config = Qwen3OmniMoeThinkerConfig()
    saved = _saved(config, "qwen3-omni-moe-thinker-defaults")
    with torch.device("meta"):
        model = Qwen3OmniMoeThinkerForConditionalGeneration(config)
    return {"config": saved, "parameters": _parameters(model), "visual_parameters": _parameters(model.model.visual),
            "audio_parameters": _parameters(model.model.audio_tower)}


def whole_defaults() -> dict:
    """Qwen3OmniMoeConfig's class defaults with BUILD_WITH's keys (tests/data/hf/qwen3-omni-moe-defaults.json),
    and the error the plain defaults raise."""
    try:
        with torch.device("meta"):
            Qwen3OmniMoeForConditionalGeneration(Qwen3OmniMoeConfig())
        error = ""
    except AttributeError as exc:
        error = str(exc)
    config = Qwen3OmniMoeConfig(**BUILD_WITH)
    saved = _saved(config, "qwen3-omni-moe-defaults")
    with torch.device("meta"):
        model = Qwen3OmniMoeForConditionalGeneration(config)
    return {"config": saved, "built_with": BUILD_WITH, "plain_defaults_error": error, "parameters": _parameters(model),
            "talker_parameters": _parameters(model.talker), "code2wav_parameters": _parameters(model.code2wav)}


def main() -> None:
    warnings.filterwarnings("ignore")
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__.split("+")[0],
        "models": {"qwen3_omni_moe_thinker": measure_thinker()},
        "defaults": {"qwen3_omni_moe_thinker": thinker_defaults()},
        "built_defaults": {"qwen3_omni_moe": whole_defaults()},
        "published": {"qwen3-omni-30b-a3b-instruct": published()},
    }
    (HERE / "forward_omni3.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
