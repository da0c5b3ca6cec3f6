"""Qwen2.5-Omni's audio rule: a clip in samples through WhisperFeatureExtractor as
Qwen2_5OmniProcessor calls it, and the audio tokens the processor expands it to.

The processor (``_process_audio``) calls the extractor with ``padding="max_length"``: every clip is
padded, or truncated, to ``n_samples`` (``chunk_length x sampling_rate``: 300 s x 16 kHz in the
published Qwen/Qwen2.5-Omni-7B preprocessor_config.json), and its attention mask, taken every 160
samples (the hop), marks ``ceil(samples / 160)`` real mel frames. Only those reach the encoder
(``get_audio_features`` keeps the frames the mask marks), which cuts them into windows of
``2 n_window`` frames (the last one shorter), runs its stride-2 convolution within each window
(``ceil(frames / 2)`` positions over all windows: the windows are of even length) and attends
within each window only (cu_seqlens: a block-diagonal mask). An average pool of stride 2 then gives
``floor(ceil(frames / 2) / 2)`` audio tokens, the processor's ``_get_feat_extract_output_lengths``;
the chat template wraps them in ``<|audio_bos|>`` and ``<|audio_eos|>`` (2 more). The language
model attends to them causally, like text. A video's own audio (``use_audio_in_video``) is the same
clip: the processor interleaves its tokens with the video's in chunks of 2 seconds, which changes
where they sit, not how many there are, and a causal language model's FLOPs depend on the length
only. The tower's closed forms over the clip's grid ``(1, real mel frames, mel bins)`` are on
QWEN2_5_OMNI_AUDIO (patterns/hf/_qwen2_5_omni_towers.py); checked against
tests/data/hf_forward/forward_omni25.json.
"""

from __future__ import annotations

from collections.abc import Mapping

from flopsreg.plugin import MediaPlan, MediaRule

__all__ = ["HOP", "MAX_SAMPLES", "QWEN2_5_OMNI_AUDIO_CLIPS", "SAMPLING_RATE", "WRAPPER_TOKENS", "audio_tokens", "real_frames"]

SAMPLING_RATE = 16_000  # WhisperFeatureExtractor's sampling_rate in Qwen/Qwen2.5-Omni-7B's preprocessor_config.json
HOP = 160  # its hop_length: a mel frame every 10 ms
MAX_SAMPLES = 4_800_000  # its n_samples (chunk_length 300 s): clips are truncated to 300 s
WRAPPER_TOKENS = 2  # <|audio_bos|> and <|audio_eos|> around the <|AUDIO|> run (the chat template's)


def real_frames(samples: int) -> int:
    """The mel frames the extractor's attention mask marks real for a clip of *samples* samples
    (after truncation): the mask taken every HOP samples, ``ceil(samples / HOP)``."""
    return -(-min(samples, MAX_SAMPLES) // HOP)


def audio_tokens(frames: int) -> int:
    """Qwen2_5OmniProcessor's ``_get_feat_extract_output_lengths``: the stride-2 convolution, then the
    stride-2 average pool."""
    return ((frames - 1) // 2 + 1 - 2) // 2 + 1


def _plan(d: Mapping[str, int], samples: int) -> MediaPlan:
    kept = min(samples, MAX_SAMPLES)
    frames = real_frames(kept)
    tokens = audio_tokens(frames)
    if tokens < 1:
        raise ValueError(f"a clip of {samples} samples has {frames} mel frames: the processor gives it no audio token "
                         f"(at least 3 frames, {2 * HOP + 1} samples, are needed)")
    return MediaPlan(height=0, width=0, resized=(0, 0), grid=(1, frames, d["mel"]), tokens=tokens + WRAPPER_TOKENS, samples=kept)


QWEN2_5_OMNI_AUDIO_CLIPS = MediaRule(
    summary="16 kHz clips, truncated to 300 s; a mel frame every 10 ms (real: ceil(samples / 160)); "
    "tokens = floor(ceil(frames / 2) / 2) + 2 (<|audio_bos|>, <|audio_eos|>); the language model attends to them causally "
    "(WhisperFeatureExtractor as Qwen2_5OmniProcessor calls it, _get_feat_extract_output_lengths)",
    plan=_plan,
    takes="audio",
    sampling_rate=SAMPLING_RATE,
    shape_note="n tokens come from 4n - 1 to 4n + 2 mel frames, and the encoder's windows depend on which",
    rules=(
        "grid: (1, rows = real mel frames = ceil(samples / 160), columns = mel bins = num_mel_bins); "
        "the extractor's padding to n_samples is dropped before the encoder: not counted",
        "windows: the frames cut into m = floor(rows / 2 n_window) windows of 2 n_window and one of u = rows mod 2 n_window; "
        "the encoder pads them to one length for its convolutions: the padding is not counted",
        "conv1: 3-tap Conv1d (mel bins -> h) over the rows real frames; conv2: 3-tap stride-2 Conv1d (h -> h) "
        "over n = ceil(rows / 2) positions",
        "layers: q, k, v, out_proj (4 h^2) and fc1, fc2 (2 h ffn) per position; attention (QK^T and AV, 4h a pair) "
        "within each window: P = m n_window^2 + ceil(u / 2)^2 pairs",
        "pool (stride-2 average, elementwise) to floor(n / 2) tokens; proj (h -> output_dim) per token",
    ),
)
