"""Qwen3-Omni-MoE's audio rule: a clip in samples through WhisperFeatureExtractor's mel framing and
Qwen3OmniMoeProcessor's audio token count, the tokens it becomes and the wrapper tokens.

The feature extractor (16 kHz, a mel frame every 160 samples, ``num_mel_bins`` bins) runs with
``padding=True`` and ``truncation=False`` (Qwen3OmniMoeProcessor.audio_kwargs): no clip is cut,
and a clip of s samples has ``s // 160`` frames, every one real (``feature_attention_mask``; the
thinker keeps the real frames of a batch's clips only). The encoder cuts them into chunks of
``2 n_window`` frames (the last one shorter), runs three 3x3 stride-2 Conv2d over each chunk, so
that a chunk of l frames gives ``ceil(l / 8)`` tokens, and attends within windows of
``ceil(2 n_window / 8) x (n_window_infer // (2 n_window))`` tokens of each clip (``cu_seqlens``).
The processor's count (``_get_feat_extract_output_lengths``) writes a full chunk's tokens as 13,
which is ``ceil(2 n_window / 8)`` for the published ``n_window = 50``; a config whose chunks give
another count is refused (transformers' count would disagree with its own encoder). The chat
template wraps the audio tokens in ``<|audio_start|>`` and ``<|audio_end|>``: 2 more tokens.
The language model attends to them causally, like text. Checked against
tests/data/hf_forward/forward_omni3.json.
"""

from __future__ import annotations

from collections.abc import Mapping

from flopsreg.plugin import MediaPlan, MediaRule

__all__ = ["HOP", "QWEN3_OMNI_AUDIO_CLIPS", "SAMPLING_RATE", "WRAPPER_TOKENS", "audio_tokens"]

SAMPLING_RATE = 16_000  # WhisperFeatureExtractor's sampling_rate (Qwen3OmniMoeProcessor.audio_kwargs)
HOP = 160  # its hop_length: one mel frame every 10 ms
WRAPPER_TOKENS = 2  # <|audio_start|> before the audio tokens, <|audio_end|> after (the chat template)
PROCESSOR_CHUNK_TOKENS = 13  # the tokens of a full chunk as _get_feat_extract_output_lengths writes them


def audio_tokens(frames: int, window: int) -> int:
    """The encoder's output tokens for *frames* mel frames in chunks of ``2 window`` frames: each
    chunk of l frames through three stride-2 convolutions gives ceil(l / 8)."""
    chunk = 2 * window
    return frames // chunk * -(-chunk // 8) + -(-(frames % chunk) // 8)


def _plan(d: Mapping[str, int], samples: int) -> MediaPlan:
    frames = samples // HOP
    if frames < 1:
        raise ValueError(f"a clip of {samples} samples has no mel frame (at least {HOP} are needed): "
                         "the processor gives it no audio token")
    window, infer = d["window"], d["infer"]
    if infer < 2 * window:
        raise ValueError(f"n_window_infer = {infer} < 2 x n_window = {2 * window}: the encoder's attention windows "
                         "would hold no chunk (transformers divides by zero)")
    if -(-2 * window // 8) != PROCESSOR_CHUNK_TOKENS:
        raise ValueError(f"n_window = {window}: a full chunk gives {-(-2 * window // 8)} tokens, but the processor "
                         f"counts {PROCESSOR_CHUNK_TOKENS} (it holds for n_window 49 to 52, the published 50)")
    return MediaPlan(height=0, width=0, resized=(0, 0), grid=(1, frames, d["mel"]),
                     tokens=audio_tokens(frames, window) + WRAPPER_TOKENS, samples=samples)


QWEN3_OMNI_AUDIO_CLIPS = MediaRule(
    summary="16 kHz clips, not truncated; a mel frame every 10 ms (samples // 160, all real); tokens = "
    "13 per full chunk of 2 n_window frames + ceil(rest / 8), + 2 (<|audio_start|>, <|audio_end|>); "
    "the language model attends to them causally (WhisperFeatureExtractor, Qwen3OmniMoeProcessor)",
    plan=_plan,
    takes="audio",
    sampling_rate=SAMPLING_RATE,
    shape_note="n tokens come from several frame counts, and the convolutions' rows depend on which",
    rules=(
        "grid: (1, rows = mel frames = samples // 160, columns = num_mel_bins); chunks of 2 n_window frames, "
        "the last one shorter: the convolutions over its padding to a full chunk are not counted",
        "conv: three 3x3 stride-2 Conv2d (1 -> c -> c -> c channels) over each chunk's ceil(l/2), ceil(l/4), ceil(l/8) "
        "frames and ceil(bins/2), ceil(bins/4), ceil(bins/8) bins; conv_out (c ceil(bins/8) -> d) per token",
        "blocks: q, k, v, out_proj (4 d^2) and fc1, fc2 (2 d ffn) per token",
        "attention: QK^T and AV within windows of W = ceil(2 n_window / 8) x (n_window_infer // (2 n_window)) tokens "
        "of each clip (cu_seqlens): W^2 floor(n / W) + (n mod W)^2 pairs",
        "proj1 (d -> d) and proj2 (d -> output_dim) per token",
    ),
)
