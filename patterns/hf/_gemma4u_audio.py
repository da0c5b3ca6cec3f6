"""Gemma 4 unified's audio rule: a clip in samples through Gemma4UnifiedAudioFeatureExtractor's
framing and Gemma4UnifiedProcessor's placeholder expansion, the soft tokens it becomes and the
wrapper tokens.

The model has no audio encoder: the extractor (16 kHz) cuts a clip into frames of
``audio_samples_per_token`` raw samples (the config's ``audio_embed_dim``, 640 = 40 ms), the last
zero-padded to a whole frame, no truncation; every frame is real (``input_features_mask``) and
one soft token, so a clip of s samples gives ``n = ceil(s / audio_embed_dim)`` soft tokens between
``<boa>`` and ``<eoa>`` (``replace_audio_token``; the processor's ``audio_seq_length`` cap is not
applied in transformers 5.24). embed_audio (a scale-free RMSNorm and one matrix to the text width)
runs on each frame: the closed form over the clip's grid ``(1, frames, samples per frame)`` on
GEMMA4_UNIFIED_AUDIO_EMBEDDER. The zero samples of the last frame ride in a token the language
model reads, so they are counted; the frames of a batch's padding to its longest clip (dropped
after the embedder) are not. The language model attends to the audio tokens causally (its
bidirectional blocks cover image and video tokens only: mm_token_type_ids 1 and 2, audio is 3).
Checked against tests/data/hf_forward/forward_g4uaudio.json.
"""

from __future__ import annotations

from collections.abc import Mapping

from flopsreg.plugin import MediaPlan, MediaRule

__all__ = ["GEMMA4_UNIFIED_AUDIO_CLIPS", "SAMPLING_RATE", "WRAPPER_TOKENS"]

SAMPLING_RATE = 16_000  # Gemma4UnifiedAudioFeatureExtractor's sampling_rate
WRAPPER_TOKENS = 2  # <boa> before the soft tokens, <eoa> after


def _plan(d: Mapping[str, int], samples: int) -> MediaPlan:
    frames = -(-samples // d["out"])  # the last frame zero-padded to audio_embed_dim samples
    return MediaPlan(height=0, width=0, resized=(0, 0), grid=(1, frames, d["out"]), tokens=frames + WRAPPER_TOKENS, samples=samples)


def _from_tokens(d: Mapping[str, int], n: int) -> MediaPlan:
    """A clip of *n* soft tokens is *n* frames: the count fixes the embedder's work."""
    return MediaPlan(height=0, width=0, resized=(0, 0), grid=(1, n, d["out"]), tokens=n + WRAPPER_TOKENS)


GEMMA4_UNIFIED_AUDIO_CLIPS = MediaRule(
    summary="16 kHz clips cut into frames of audio_embed_dim raw samples (the last zero-padded), no truncation; "
    "tokens = ceil(samples / audio_embed_dim) + 2 (<boa>, <eoa>); the language model attends to them causally "
    "(Gemma4UnifiedAudioFeatureExtractor, Gemma4UnifiedProcessor.replace_audio_token)",
    plan=_plan,
    from_tokens=_from_tokens,
    takes="audio",
    sampling_rate=SAMPLING_RATE,
    axes=("grid", "frames", "samples a frame"),
    rules=(
        "grid: (1, rows = frames = ceil(samples / audio_embed_dim), columns = audio_embed_dim raw samples per frame); "
        "no encoder: each frame is one soft token",
        "embedder = 2 x frames x audio_embed_dim x text (embedding_projection; its RMSNorm has no scale and is elementwise)",
        "a batch's padding frames (to its longest clip) run through the embedder and are dropped: not counted",
    ),
)
