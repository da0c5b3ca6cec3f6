"""Gemma 4's audio rule: a clip in samples through Gemma4AudioFeatureExtractor's mel framing and
Gemma4Processor's placeholder expansion, the soft tokens it becomes and the wrapper tokens.

The feature extractor (16 kHz, 20 ms frames every 10 ms, 128 mel bins) truncates a clip to
480000 samples (30 s, ``max_length``), pads it to a multiple of 128 samples and gives a mel frame
every 160 samples; a frame is real (``input_features_mask``) when it ends inside the clip, so a
clip of s samples has ``ceil((s - 160) / 160)`` real frames. The encoder's two stride-2
convolutions halve the frames twice; Gemma4Processor's ``replace_audio_token`` runs the same
halvings over the mask: ``n = ceil(real frames / 4)`` soft tokens between ``<boa>`` and ``<eoa>``
(2 wrapper tokens). The frames of the padding (at most one) are zeroed before each convolution and
their outputs dropped: flopsreg counts the real ones (the tower's closed forms over the clip's
grid ``(1, real mel frames, mel bins)``, on GEMMA4_AUDIO). The language model attends to the audio
tokens causally, like text (its bidirectional blocks cover image and video tokens only).
Checked against tests/data/hf_forward/forward_audio.json.
"""

from __future__ import annotations

from collections.abc import Mapping

from flopsreg.plugin import MediaPlan, MediaRule

__all__ = ["GEMMA4_AUDIO_CLIPS", "HOP", "MAX_SAMPLES", "SAMPLING_RATE", "WRAPPER_TOKENS", "real_frames"]

SAMPLING_RATE = 16_000  # Gemma4AudioFeatureExtractor's sampling_rate
FRAME, HOP = 320, 160  # its frame_length (20 ms) and hop_length (10 ms) in samples
MAX_SAMPLES = 480_000  # its max_length with truncation=True: 30 s
WRAPPER_TOKENS = 2  # <boa> before the soft tokens, <eoa> after


def real_frames(samples: int) -> int:
    """The extractor's real mel frames of a clip of *samples* samples: frame f (starting at
    ``f x HOP - FRAME // 2``, the clip padded left by half a frame) is real when it ends inside the clip."""
    reach = samples - (FRAME - FRAME // 2)
    return max(0, -(-reach // HOP))


def _plan(d: Mapping[str, int], samples: int) -> MediaPlan:
    kept = min(samples, MAX_SAMPLES)
    frames = real_frames(kept)
    if frames < 1:
        raise ValueError(f"a clip of {samples} samples has no real mel frame (more than {FRAME - FRAME // 2} are needed): "
                         "the processor gives it no audio token")
    tokens = -(-frames // 4)  # two stride-2 convolutions over the frames: ceil(ceil(frames / 2) / 2)
    return MediaPlan(height=0, width=0, resized=(0, 0), grid=(1, frames, d["conv0"]), tokens=tokens + WRAPPER_TOKENS, samples=kept)


GEMMA4_AUDIO_CLIPS = MediaRule(
    summary="16 kHz clips, truncated to 30 s; a mel frame every 10 ms (real when it ends inside the clip); "
    "tokens = ceil(real frames / 4) + 2 (<boa>, <eoa>); the language model attends to them causally "
    "(Gemma4AudioFeatureExtractor, Gemma4Processor.replace_audio_token)",
    plan=_plan,
    takes="audio",
    sampling_rate=SAMPLING_RATE,
    shape_note="n tokens come from 4n - 3 to 4n real mel frames, and the first convolution's rows (2n - 1 or 2n) depend on which",
    rules=(
        "grid: (1, rows = real mel frames = ceil((samples - 160) / 160), columns = mel bins = subsampling_conv_channels[0]); "
        "the frames of the extractor's padding (to a multiple of 128 samples) are zeroed and dropped: not counted",
        "subsample: two 3x3 stride-2 Conv2d (1 -> c0 -> c1 channels) over ceil(rows/2) then n = ceil(rows/4) frames, "
        "input_proj (freq/4 x c1 -> h) over the n frames",
        "blocks: two feed-forwards (h -> 4h -> h), q, k, v, post, a light conv (h -> 2h GLU, depthwise kernel, h -> h) per frame; "
        "relative_k_proj over the floor(context/2) + 1 relative positions",
        "attention: QK^T and AV over the pairs the chunked local mask allows (attention_context_left - 1 keys back, "
        "the query's own included; attention_context_right - 1 ahead; real frames only), "
        "the relative logits q.r for the floor(context/2) + 1 positions per real query",
        "output_proj (h -> output_proj_dims) and the embedder (output_proj_dims -> text hidden) per soft token",
    ),
)
