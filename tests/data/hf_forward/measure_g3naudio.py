"""Measure Gemma 3n's audio tower with real audio (brief g3naudio, issue 25): Gemma3nAudioEncoder
and the audio Gemma3nMultimodalEmbedder (embed_audio) under torch's FlopCounterMode.

Random waveforms of several lengths go through transformers' own Gemma3nAudioFeatureExtractor (its
32 ms frames every 10 ms, its padding to a multiple of 128 samples, its truncation to 30 s and its
frame mask); the encoder runs on input_features with the inverted mask as Gemma3nModel.get_audio_features
does, and embed_audio on its output. Recorded per clip: the FLOPs of each piece of the encoder
(FlopCounterMode's per-module counts), the embedder's, the mel frames and how many the mask calls
real, the frames after the subsampling, the encoder's output tokens, the (query, key) pairs the
conformer's chunked local mask allows over the real frames, and the text Gemma3nProcessor puts in
place of one audio placeholder (with a stand-in tokenizer naming its special tokens). The class
default's shapes on a meta device (no weights) for a 1 s clip. For the tiny encoders (one with
keys ahead, one causal), which frames of each matrix's output the encoder's output depends on
(backpropagation from the kept frames: the liveness flopsreg's count follows). The result, forward_g3naudio.json,
comes from torch and transformers alone: tests/hf/test_g3naudio_forward.py compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_g3naudio.py
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
from transformers import Gemma3nAudioConfig, Gemma3nAudioFeatureExtractor, Gemma3nProcessor, Gemma3nTextConfig
from transformers.models.gemma3n.modeling_gemma3n import Gemma3nAudioEncoder, Gemma3nMultimodalEmbedder
from transformers.processing_utils import ProcessorMixin

HERE = Path(__file__).parent
SAMPLING_RATE = 16_000
# Odd widths: heads of 36 // 4 = 9, 20 mel bins (input_feat_size and the extractor's feature_size),
# subsampling channels 6 and 5; a chunk of 4 with 4 keys back (the query's own excluded: left - 1)
# and 2 ahead exercises both sides of the mask; the reduction keeps every 3rd frame.
AUDIO = {"hidden_size": 36, "conf_num_hidden_layers": 2, "conf_num_attention_heads": 4, "conf_conv_kernel_size": 3,
         "input_feat_size": 20, "sscp_conv_channel_size": [6, 5], "conf_attention_chunk_size": 4,
         "conf_attention_context_left": 5, "conf_attention_context_right": 2, "conf_reduction_factor": 3, "vocab_size": 11}
TEXT = {"hidden_size": 44, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12}
# The tiny one with no key ahead (every block's work after the last kept frame is dead) and a
# light convolution kernel wider than the reduction.
CAUSAL = {**AUDIO, "conf_attention_context_right": 0, "conf_conv_kernel_size": 4}
# 1 s (a multiple of 128 samples); 2.49 s (padded to 39936 samples); 0.1 s; 31 s (truncated to 30 s).
CASES = {"0.1s": 1_600, "1s": 16_000, "2.49s": 39_840, "31s": 496_000}


def _module_flops(counts: dict, prefix: str) -> int:
    return int(sum(counts.get(prefix, {}).values()))


def _processor_text() -> str:
    stub = SimpleNamespace(audio_token_id=5, boa_token="<boa>", audio_token="<audio>", eoa_token="<eoa>",
                           image_token_id=6, boi_token="<boi>", image_token="<image>", eoi_token="<eoi>")
    with mock.patch.object(ProcessorMixin, "__init__", lambda self, **kwargs: None):
        processor = Gemma3nProcessor(feature_extractor=None, image_processor=None, tokenizer=stub)
    return processor.replace_audio_token({}, 0)


def _mask_pairs(encoder, features, mask, frames: int) -> dict:
    """The allowed (query, key) entries at the first block's attention over the real queries."""
    seen = {}
    attn = encoder.conformer[0].attention.attn

    def hook(module, args):
        hidden, pad = args
        valid = ~pad[0]
        local = module.local_causal_valid_mask  # [chunk, context]: key c of block u is frame u*chunk - L + c
        chunk, context = local.shape
        L = module.max_past_horizon
        t = valid.shape[0]
        allowed = 0
        for q in range(min(frames, t)):
            u, w = divmod(q, chunk)
            for c in range(context):
                k = u * chunk - L + c
                allowed += bool(local[w, c]) and 0 <= k < t and bool(valid[k])
        seen["allowed_real_queries"] = allowed
        seen["queries"] = t
        seen["real_queries"] = int(valid.sum())

    handle = attn.register_forward_pre_hook(hook)
    with torch.no_grad():
        encoder(features, mask)
    handle.remove()
    return seen


# The modules whose output rows (frames) the liveness record reads, and the axis of their time.
_LIVE = {"ffw_start": ("ffw_layer_start.ffw_layer_1", 1), "q": ("attention.attn.q_proj", 1), "k": ("attention.attn.k_proj", 1),
         "v": ("attention.attn.v_proj", 1),
         "post": ("attention.post", 1), "linear_start": ("lconv1d.linear_start", 1), "conv": ("lconv1d.depthwise_conv1d", 2),
         "linear_end": ("lconv1d.linear_end", 1), "ffw_end": ("ffw_layer_end.ffw_layer_1", 1)}


def _liveness(encoder, features, mask) -> dict:
    """The frames of each matrix's output that the encoder's output depends on: the output (one frame
    in conf_reduction_factor) times random weights, backpropagated; a frame is live where any element
    of its output row has a nonzero gradient. Per block (first first) and for the subsampling."""
    outputs = {}

    def keep(name):
        def hook(module, args, output):
            output.retain_grad()
            outputs[name] = output
        return hook

    modules = {"conv0": ("subsample_conv_projection.conv_0.conv", 2), "conv1": ("subsample_conv_projection.conv_1.conv", 2),
               "input_proj": ("subsample_conv_projection.input_proj_linear", 1)}
    for index in range(len(encoder.conformer)):
        modules |= {f"{index}.{piece}": (f"conformer.{index}.{path}", axis) for piece, (path, axis) in _LIVE.items()}
    handles = [encoder.get_submodule(path).register_forward_hook(keep(name)) for name, (path, _) in modules.items()]
    out = encoder(features, mask).last_hidden_state
    (out * torch.randn_like(out)).sum().backward()
    for handle in handles:
        handle.remove()

    def live(name):
        grad, axis = outputs[name].grad, modules[name][1]
        return int((grad.movedim(axis, 0).reshape(grad.shape[axis], -1) != 0).any(dim=1).sum())

    return {"subsample": {name: live(name) for name in ("conv0", "conv1", "input_proj")},
            "layers": [{piece: live(f"{index}.{piece}") for piece in _LIVE} for index in range(len(encoder.conformer))]}


def _pieces(counts: dict, root: str, layers: int) -> dict:
    sub = f"{root}.subsample_conv_projection"
    pieces = {name: _module_flops(counts, f"{sub}.{name}") for name in ("conv_0", "conv_1", "input_proj_linear")}
    out = []
    for index in range(layers):
        block = f"{root}.conformer.{index}"
        attn = f"{block}.attention"
        out.append({
            "ffw_layer_start": _module_flops(counts, f"{block}.ffw_layer_start"),
            "ffw_layer_end": _module_flops(counts, f"{block}.ffw_layer_end"),
            "attention": _module_flops(counts, attn),
            **{f"attention.{n}": _module_flops(counts, f"{attn}.attn.{n}") for n in ("q_proj", "k_proj", "v_proj")},
            "attention.post": _module_flops(counts, f"{attn}.post"),
            "attention.pos_proj": _module_flops(counts, f"{attn}.attn.relative_position_embedding.pos_proj"),
            "lconv1d": _module_flops(counts, f"{block}.lconv1d"),
            "lconv1d.depthwise_conv1d": _module_flops(counts, f"{block}.lconv1d.depthwise_conv1d"),
        })
    return {"subsample": pieces, "layers": out}


def measure(audio: dict, cases: dict, meta: bool = False) -> dict:
    config = Gemma3nAudioConfig(**audio)
    text = Gemma3nTextConfig(**TEXT) if TEXT and not meta else Gemma3nTextConfig()
    torch.manual_seed(0)
    device = torch.device("meta" if meta else "cpu")
    with device:
        encoder = Gemma3nAudioEncoder(config).eval()
        embedder = Gemma3nMultimodalEmbedder(config, text).eval()
    extractor = Gemma3nAudioFeatureExtractor(feature_size=config.input_feat_size, sampling_rate=SAMPLING_RATE)
    generator = np.random.default_rng(1)
    out = {}
    for case, samples in cases.items():
        wave = generator.uniform(-0.5, 0.5, samples).astype(np.float32)
        inputs = extractor([wave], return_tensors="pt")
        features, mask = inputs["input_features"], inputs["input_features_mask"]
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            encoded = encoder(features.to(device), (~mask).to(device))
            embedder(inputs_embeds=encoded.last_hidden_state)
        counts = counter.get_flop_counts()
        root, emb = type(encoder).__name__, type(embedder).__name__
        record = {
            "samples": samples,
            "mel_frames": int(features.shape[1]),
            "real_mel_frames": int(mask.sum()),
            "output_tokens": int(encoded.last_hidden_state.shape[1]),
            "real_output_tokens": None if meta else int((~encoded.audio_mel_mask).sum()),
            "audio_encoder": _module_flops(counts, root),
            "audio_embedder": _module_flops(counts, emb),
            **_pieces(counts, root, config.conf_num_hidden_layers),
        }
        if not meta:
            record["mask"] = _mask_pairs(encoder, features, ~mask, 10**9)
            record["live"] = _liveness(encoder, features, ~mask)
        out[case] = record
    return {
        # the gemma3n config these towers belong to (the language model's widths but the text width do not matter here)
        "config": {"model_type": "gemma3n", "text_config": TEXT if not meta else {"hidden_size": text.hidden_size}, "audio_config": audio},
        "classes": [type(encoder).__name__, type(embedder).__name__],
        "audio_parameters": int(sum(p.numel() for p in encoder.parameters())),
        "embedder_parameters": int(sum(p.numel() for p in embedder.parameters())),
        "cases": out,
    }


def main() -> None:
    warnings.filterwarnings("ignore")
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__.split("+")[0],
        "sampling_rate": SAMPLING_RATE,
        "processor_text": _processor_text(),
        "models": {"tiny": measure(AUDIO, CASES), "default": measure({}, {"1s": 16_000}, meta=True),
                   "causal": measure(CAUSAL, {case: CASES[case] for case in ("0.1s", "1s", "2.49s")})},
    }
    (HERE / "forward_g3naudio.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
