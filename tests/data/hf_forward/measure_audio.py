"""Measure tiny Gemma 4 and Phi-4-multimodal forward passes with real audio (brief audio, issue 25):
the audio encoders, their projections and the language model together, under torch's FlopCounterMode.

Random waveforms of several lengths go through transformers' own Gemma4AudioFeatureExtractor (its
mel framing, its padding to a multiple of 128 samples and its frame mask), giving input_features
and input_features_mask; the text is expanded as Gemma4Processor expands each audio placeholder
(its ``replace_audio_token`` over the extractor's mask: ``<boa>``, the soft tokens, ``<eoa>``),
the clip before the text, and Gemma4ForConditionalGeneration runs on it. Recorded per clip: the
FLOPs of the whole forward and of each piece of the audio tower (FlopCounterMode's per-module
counts), the embedder's, the mel frames the extractor gives and how many of them are real, the
token count the processor inserts (and its ``_compute_audio_num_tokens``), the allowed (query,
key) pairs of the conformer's blocked mask over the real frames; and the parameter totals.
Phi-4-multimodal the same way: Phi4MultimodalFeatureExtractor's frames and audio_embed_sizes,
Phi4MultimodalProcessor's ``replace_audio_token`` (the soft tokens alone), Phi4MultimodalForCausalLM
with each encoder module's count, including a clip past the encoder's 500-frame windows.
The result, forward_audio.json, comes from torch and transformers alone:
tests/hf/test_audio_forward.py compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_audio.py
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
from transformers import (
    AutoConfig,
    Gemma4AudioFeatureExtractor,
    Gemma4ForConditionalGeneration,
    Gemma4Processor,
    Phi4MultimodalFeatureExtractor,
    Phi4MultimodalForCausalLM,
    Phi4MultimodalProcessor,
)
from transformers.processing_utils import ProcessorMixin

HERE = Path(__file__).parent
TEXT_TOKENS = 7
BOA, EOA, AUDIO = 90, 91, 92  # <boa>, <eoa>, <audio_soft_token>
PIECES = {"<boa>": BOA, "<eoa>": EOA, "<audio>": AUDIO}
TEXT = {"hidden_size": 44, "intermediate_size": 58, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 12, "vocab_size": 97}
# Odd widths (head_dim 9: the attention's post projection needs hidden_size = heads x head_dim); the published first convolution's
# 128 channels are its 128 mel bins, so the tiny one's 20 channels take 20 mel bins (feature_size).
# A chunk of 4 with 4 keys back (the query's own included) and 1 ahead exercises both sides.
CONFIG = {
    "model_type": "gemma4", "boa_token_id": BOA, "eoa_token_index": EOA, "audio_token_id": AUDIO,
    "image_token_id": 93, "boi_token_id": 94, "eoi_token_id": 95, "video_token_id": 96,
    "text_config": {**TEXT, "model_type": "gemma4_text", "hidden_size_per_layer_input": 0, "vocab_size_per_layer_input": 97,
                    "global_head_dim": 16, "sliding_window": 5, "layer_types": ["sliding_attention", "full_attention"]},
    "audio_config": {"hidden_size": 36, "num_hidden_layers": 2, "num_attention_heads": 4, "conv_kernel_size": 3,
                     "subsampling_conv_channels": [20, 6], "output_proj_dims": 26,
                     "attention_chunk_size": 4, "attention_context_left": 5, "attention_context_right": 2},
}
MEL_BINS = 20
SAMPLING_RATE = 16_000
# Clip lengths in samples: 1 s (a multiple of 128: no padding); 2.49 s (padded to 39936 samples:
# one mel frame more than the real 248, and a 125th row of the first convolution); 2.5 s (padded:
# one mel frame more, the same rows after the first convolution).
CASES = {"1s": 16_000, "2.49s": 39_840, "2.5s": 40_000}


def _processor() -> Gemma4Processor:
    """Gemma4Processor with a stand-in tokenizer that gives the special tokens' text (its base
    class is not needed to expand a placeholder)."""
    stub = SimpleNamespace(image_token_id=93, boi_token="<boi>", eoi_token="<eoi>", image_token="<image>",
                           add_special_tokens=lambda *a, **k: None, convert_tokens_to_ids=lambda *a: 96,
                           audio_token_id=AUDIO, audio_token="<audio>", boa_token="<boa>", eoa_token="<eoa>")
    extractor = Gemma4AudioFeatureExtractor(feature_size=MEL_BINS, sampling_rate=SAMPLING_RATE)
    with mock.patch.object(ProcessorMixin, "__init__", lambda self, **kwargs: None):
        processor = Gemma4Processor(feature_extractor=None, image_processor=None, tokenizer=stub, video_processor=None)
    processor.feature_extractor = extractor
    return processor


def _pieces(sequence: str) -> list[str]:
    out = []
    while sequence:
        piece = next(p for p in PIECES if sequence.startswith(p))
        out.append(piece)
        sequence = sequence[len(piece):]
    return out


def _module_flops(counts: dict, prefix: str) -> int:
    return int(sum(counts.get(prefix, {}).values()))


def _mask_pairs(model, features, mask, real: int) -> dict:
    """The conformer's blocked mask at its first layer: allowed (query, key) entries over the
    real queries, and all entries (blocks x chunk x context)."""
    seen = {}

    def hook(module, args, kwargs):
        m = kwargs["attention_mask"]
        seen["dtype"] = str(m.dtype)
        allowed = ~m if m.dtype == torch.bool else m == 0  # the attention masks where mask != 0
        b, _, blocks, chunk, context = allowed.shape
        rows = allowed.reshape(b, blocks * chunk, context)[:, :real]
        seen["allowed_real_queries"] = int(rows.sum())
        seen["allowed_all"] = int(allowed.sum())
        seen["shape"] = list(m.shape)

    handle = model.model.audio_tower.layers[0].self_attn.register_forward_pre_hook(hook, with_kwargs=True)
    with torch.no_grad():
        model.model.audio_tower(features, mask)
    handle.remove()
    return seen


def measure() -> dict:
    config = {k: v for k, v in CONFIG.items() if k != "model_type"}
    hf_config = AutoConfig.for_model("gemma4", **config)
    torch.manual_seed(0)
    model = Gemma4ForConditionalGeneration(hf_config).eval()
    model.config._attn_implementation = "eager"
    model.model.language_model.config._attn_implementation = "eager"
    processor = _processor()
    generator = np.random.default_rng(1)
    cases = {}
    for case, samples in CASES.items():
        wave = generator.uniform(-0.5, 0.5, samples).astype(np.float32)
        inputs = processor.feature_extractor([wave], return_tensors="pt")
        features, mask = inputs["input_features"], inputs["input_features_mask"]
        expanded = processor.replace_audio_token({"input_features_mask": mask.numpy()}, 0)
        sequence = _pieces(expanded)
        soft = sequence.count("<audio>")
        ids = torch.tensor([PIECES[p] for p in sequence] + torch.randint(0, 80, (TEXT_TOKENS,)).tolist()).unsqueeze(0)
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(input_ids=ids, input_features=features, input_features_mask=mask)
        counts = counter.get_flop_counts()
        root = type(model).__name__
        tower = f"{root}.model.audio_tower"
        pieces = {
            "subsample.layer0": _module_flops(counts, f"{tower}.subsample_conv_projection.layer0"),
            "subsample.layer1": _module_flops(counts, f"{tower}.subsample_conv_projection.layer1"),
            "subsample.input_proj": _module_flops(counts, f"{tower}.subsample_conv_projection.input_proj_linear"),
            "output_proj": _module_flops(counts, f"{tower}.output_proj"),
        }
        layers = []
        for index in range(CONFIG["audio_config"]["num_hidden_layers"]):
            layer = f"{tower}.layers.{index}"
            attn = f"{layer}.self_attn"
            projections = {name: _module_flops(counts, f"{attn}.{name}") for name in ("q_proj", "k_proj", "v_proj", "post", "relative_k_proj")}
            layers.append({
                "feed_forward1": _module_flops(counts, f"{layer}.feed_forward1"),
                "feed_forward2": _module_flops(counts, f"{layer}.feed_forward2"),
                "self_attn": _module_flops(counts, attn),
                **{f"self_attn.{name}": flops for name, flops in projections.items()},
                "lconv1d": _module_flops(counts, f"{layer}.lconv1d"),
                "lconv1d.depthwise_conv1d": _module_flops(counts, f"{layer}.lconv1d.depthwise_conv1d"),
            })
        audio_tower = _module_flops(counts, tower)
        embedder = _module_flops(counts, f"{root}.model.embed_audio")
        cases[case] = {
            "samples": samples,
            "mel_frames": int(features.shape[1]),
            "real_mel_frames": int(mask.sum()),
            "soft_tokens": soft,
            "processor_num_tokens": int(processor._compute_audio_num_tokens(np.zeros(samples), SAMPLING_RATE)),
            "expanded": [sequence[0], f"{soft} x <audio>", sequence[-1]],
            "sequence_length": int(ids.shape[1]),
            "forward": int(counter.get_total_flops()),
            "audio_tower": audio_tower,
            "audio_embedder": embedder,
            "rest": int(counter.get_total_flops()) - audio_tower - embedder,
            "pieces": pieces,
            "layers": layers,
            "mask": _mask_pairs(model, features, mask, soft),
        }
    return {
        "config": CONFIG,
        "class": type(model).__name__,
        "mel_bins": MEL_BINS,
        "sampling_rate": SAMPLING_RATE,
        "text_tokens": TEXT_TOKENS,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "audio_parameters": int(sum(p.numel() for p in model.model.audio_tower.parameters())),
        "cases": cases,
    }


# Phi-4-multimodal: heads of 36 // 5 = 7 (q, k, v 35 wide); the convolution module needs
# ext_pw_out_channel = depthwise_separable_out_channel = hidden_size; 27 mel bins (input_size and
# the extractor's feature_size); downsample_rate 1 (its up projection takes hidden_size x rate).
PHI4 = {
    "model_type": "phi4_multimodal", "hidden_size": 44, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
    "intermediate_size": 58, "vocab_size": 97, "max_position_embeddings": 1024, "pad_token_id": 0, "num_hidden_layers": 2,
    "sliding_window": 7,
    "vision_config": {"hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 1, "num_attention_heads": 3,
                      "image_size": 45, "patch_size": 7, "crop_size": 45, "image_token_id": 93},
    "audio_config": {"hidden_size": 36, "intermediate_size": 50, "num_blocks": 2, "num_attention_heads": 5,
                     "ext_pw_out_channel": 36, "depthwise_separable_out_channel": 36, "depthwise_multiplier": 2,
                     "kernel_size": 3, "input_size": 27, "time_reduction": 8, "nemo_conv_channels": 12,
                     "bias_max_distance": 30, "downsample_rate": 1, "audio_token_id": AUDIO},
}
# 1 s, 2.5 s, and 41 s: 4098 frames, 513 after the subsampling, two of the encoder's 500-frame windows.
PHI4_CASES = {"1s": 16_000, "2.5s": 40_000, "41s": 656_000}


def measure_phi4() -> dict:
    config = {k: v for k, v in PHI4.items() if k != "model_type"}
    hf_config = AutoConfig.for_model("phi4_multimodal", **config)
    torch.manual_seed(0)
    model = Phi4MultimodalForCausalLM(hf_config).eval()
    model.config._attn_implementation = "eager"
    extractor = Phi4MultimodalFeatureExtractor(feature_size=PHI4["audio_config"]["input_size"])
    stub = SimpleNamespace(image_token="<image>", image_token_id=93, audio_token="<audio>", audio_token_id=AUDIO)
    with mock.patch.object(ProcessorMixin, "__init__", lambda self, *args, **kwargs: None):
        processor = Phi4MultimodalProcessor(image_processor=None, audio_processor=None, tokenizer=stub)
    generator = np.random.default_rng(2)
    cases = {}
    for case, samples in PHI4_CASES.items():
        wave = generator.uniform(-0.5, 0.5, samples).astype(np.float32)
        inputs = extractor([wave], sampling_rate=SAMPLING_RATE, return_tensors="pt")
        features, sizes = inputs["audio_input_features"], inputs["audio_embed_sizes"]
        expanded = processor.replace_audio_token({"audio_embed_sizes": sizes.tolist()}, 0)
        soft = expanded.count("<audio>")
        assert expanded == "<audio>" * soft
        ids = torch.tensor([AUDIO] * soft + torch.randint(0, 80, (TEXT_TOKENS,)).tolist()).unsqueeze(0)
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(input_ids=ids, audio_input_features=features, audio_embed_sizes=sizes)
        counts = counter.get_flop_counts()
        root = type(model).__name__
        embed = f"{root}.model.embed_tokens_extend.audio_embed"
        encoder = f"{embed}.encoder"
        convs = {str(i): _module_flops(counts, f"{encoder}.embed.conv.{i}") for i in range(8)}
        layers = []
        for index in range(PHI4["audio_config"]["num_blocks"]):
            layer = f"{encoder}.encoders.{index}"
            attn = f"{layer}.self_attn"
            layers.append({
                "feed_forward_in": _module_flops(counts, f"{layer}.feed_forward_in"),
                "feed_forward_out": _module_flops(counts, f"{layer}.feed_forward_out"),
                "self_attn": _module_flops(counts, attn),
                **{f"self_attn.{n}": _module_flops(counts, f"{attn}.{n}") for n in ("q_proj", "k_proj", "v_proj", "o_proj")},
                "conv": _module_flops(counts, f"{layer}.conv"),
                "conv.glu": _module_flops(counts, f"{layer}.conv.glu"),
                "conv.dw_conv": _module_flops(counts, f"{layer}.conv.dw_sep_conv_1d.dw_conv"),
                "conv.pw_conv": _module_flops(counts, f"{layer}.conv.dw_sep_conv_1d.pw_conv"),
                "conv.ext_pw_conv_1d": _module_flops(counts, f"{layer}.conv.ext_pw_conv_1d"),
            })
        audio = _module_flops(counts, embed)
        cases[case] = {
            "samples": samples,
            "mel_frames": int(features.shape[1]),
            "mel_bins": int(features.shape[2]),
            "audio_embed_sizes": int(sizes[0]),
            "soft_tokens": soft,
            "sequence_length": int(ids.shape[1]),
            "forward": int(counter.get_total_flops()),
            "audio_embed": audio,
            "rest": int(counter.get_total_flops()) - audio,
            "subsample": {**{f"conv.{i}": f for i, f in convs.items() if f}, "out": _module_flops(counts, f"{encoder}.embed.out")},
            "layers": layers,
            "up_proj_for_speech": _module_flops(counts, f"{embed}.up_proj_for_speech"),
            "down_proj_for_speech": _module_flops(counts, f"{embed}.down_proj_for_speech"),
        }
    return {
        "config": PHI4,
        "class": type(model).__name__,
        "sampling_rate": SAMPLING_RATE,
        "text_tokens": TEXT_TOKENS,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "audio_parameters": int(sum(p.numel() for p in model.model.embed_tokens_extend.audio_embed.parameters())),
        "cases": cases,
    }


def main() -> None:
    warnings.filterwarnings("ignore")
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__.split("+")[0],
        "models": {"gemma4": measure(), "phi4_multimodal": measure_phi4()},
    }
    (HERE / "forward_audio.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
