"""Gemma 3n's audio rule: a clip in samples through Gemma3nAudioFeatureExtractor's mel framing and
Gemma3nProcessor's placeholder expansion, the frames the USM encoder runs over and its fixed tokens.

The feature extractor (16 kHz, 32 ms frames of 512 samples every 10 ms, mel bins =
``input_feat_size``) truncates a clip to 480000 samples (30 s, ``max_length``) and pads it to a
multiple of 128 samples; it unfolds windows of 513 samples every 160, so a padded clip of p samples
gives ``floor((p - 513) / 160) + 1`` mel frames, and its mask calls a frame real when the frame
starts inside the clip (every frame, since the padding is shorter than a window). The encoder's
two subsampling convolutions divide the frames by their time strides (rounding up: they pad the
time axis by kernel - 1 after it), the conformer runs over those frames, and the output keeps one
frame in ``conf_reduction_factor``: the closed forms count the work a kept frame depends on only
(docs/multimodal.md), and :func:`_counted` refuses an encoder whose useful frames they do not
describe. Gemma3nProcessor puts a fixed text in place of every clip:
``"\\n\\n<boa>"``, ``audio_soft_tokens_per_image`` (188) audio tokens, ``"<eoa>\\n\\n"`` (4 wrapper
tokens); Gemma3nModel pads the encoder's tokens up to 188 with one embedding. The language model
attends to them causally, like text. Checked against tests/data/hf_forward/forward_g3naudio.json.
"""

from __future__ import annotations

from collections.abc import Mapping

from flopsreg.plugin import MediaPlan, MediaRule

__all__ = ["GEMMA3N_AUDIO_CLIPS", "MAX_SAMPLES", "SAMPLING_RATE", "WRAPPER_TOKENS", "mel_frames", "output_tokens"]

SAMPLING_RATE = 16_000  # Gemma3nAudioFeatureExtractor's sampling_rate
WINDOW, HOP = 513, 160  # its frame_length (32 ms) + 1 samples unfolded every hop_length (10 ms)
MULTIPLE = 128  # its pad_to_multiple_of
MAX_SAMPLES = 480_000  # its max_length with truncation=True: 30 s
WRAPPER_TOKENS = 4  # "\n\n", <boa> before the soft tokens; <eoa>, "\n\n" after (Gemma3nProcessor.full_audio_sequence)


def mel_frames(samples: int) -> int:
    """The extractor's mel frames of a clip of *samples* samples (all real: each starts inside the clip)."""
    padded = -(-samples // MULTIPLE) * MULTIPLE
    return max(0, (padded - WINDOW) // HOP + 1)


def output_tokens(d: Mapping[str, int], frames: int) -> int:
    """The encoder's output tokens over *frames* mel frames: two convolutions of time strides sh0,
    sh1 (each ``ceil(frames / stride)``), then one frame in ``reduction`` (``[::reduction]``)."""
    subsampled = -(-(-(-frames // d["sh0"])) // d["sh1"])
    return -(-subsampled // d["reduction"])


def _counted(d: Mapping[str, int]) -> None:
    """``ValueError`` for an encoder whose useful work the closed forms do not describe: they need the
    last block's depthwise kernel to join the kept frames (kernel >= reduction) and a right context
    that reaches none or all of the frames after the last kept one (0 or >= reduction - 1)."""
    if d["layers"] < 1:
        raise ValueError(f"audio_config.conf_num_hidden_layers = {d['layers']}: expected at least one conformer block")
    if d["kernel"] < d["reduction"]:
        raise ValueError(f"audio_config.conf_conv_kernel_size = {d['kernel']} is less than conf_reduction_factor = {d['reduction']}: "
                         "the last block's useful frames are not one run from frame 0, which flopsreg does not count (expected a kernel >= the reduction)")
    if 0 < d["right"] < d["reduction"] - 1:
        raise ValueError(f"audio_config.conf_attention_context_right = {d['right']} with conf_reduction_factor = {d['reduction']}: "
                         f"each block's useful frames end at a different place, which flopsreg does not count "
                         f"(expected 0 or >= {d['reduction'] - 1})")


def _plan(d: Mapping[str, int], samples: int) -> MediaPlan:
    _counted(d)
    kept = min(samples, MAX_SAMPLES)
    frames = mel_frames(kept)
    if frames < 1:
        raise ValueError(f"a clip of {samples} samples has no mel frame (more than {WINDOW - 1} are needed, "
                         f"padded to a multiple of {MULTIPLE}): the extractor gives the encoder nothing")
    n = output_tokens(d, frames)
    if n > d["tokens"]:
        raise ValueError(f"a clip of {kept} samples (after truncation) gives {n} encoder tokens, more than audio_soft_tokens_per_image = "
                         f"{d['tokens']} (transformers fails: it pads the audio tokens up to that count)")
    return MediaPlan(height=0, width=0, resized=(0, 0), grid=(1, frames, d["mel"]), tokens=d["tokens"] + WRAPPER_TOKENS, samples=kept)


GEMMA3N_AUDIO_CLIPS = MediaRule(
    summary="16 kHz clips, truncated to 30 s; a mel frame every 10 ms; every clip is audio_soft_tokens_per_image (188) "
    "tokens + 4 (\\n\\n, <boa>, <eoa>, \\n\\n) whatever its length; the language model attends to them causally "
    "(Gemma3nAudioFeatureExtractor, Gemma3nProcessor.full_audio_sequence)",
    plan=_plan,
    takes="audio",
    sampling_rate=SAMPLING_RATE,
    shape_note="every clip is 188 tokens whatever its length: the clip's length fixes the encoder's frames",
    rules=(
        "grid: (1, rows = mel frames = floor((ceil(samples / 128) x 128 - 513) / 160) + 1, columns = mel bins = input_feat_size); "
        "the extractor's mask calls every frame real",
        "useful work only: the output keeps frames 0, r, 2r, ... (r = conf_reduction_factor) of the n after the "
        "subsampling; g frames follow the last kept one; u = n - g; e = min(n, u + right): u where no query looks "
        "ahead (the tail is dead in every block), n where one does (a key ahead reaches it)",
        "subsample: two Conv2d without bias (1 -> c0 -> c1 channels, kh x kw taps) over T0 = min(sh1 (e - 1) + kh1, T1) "
        "rows of T1 = ceil(rows / sh0), then e of n = ceil(T1 / sh1) (their cumulative group norms read every row "
        "before), F1, F2 = floor((F + 2 - kw) / sw) + 1 frequencies; input_proj (F2 x c1 -> h) over the e frames",
        "blocks: ffw_layer_start, k, v over e frames; q, post, linear_start (h -> 2h GLU) over the queries' frames (u "
        "in the last block, e in the others); the depthwise kernel, linear_end, ffw_layer_end over the o kept frames "
        "in the last block, e in the others; pos_proj over the R = max(0, left - 1) + right + 1 relative positions",
        "attention: QK^T and AV over the pairs the chunked local mask allows the live queries (left - 1 keys back, "
        "right ahead, the query's own; inside the clip), the relative logits q.r for the R positions per live query",
        "embedder: o = ceil(n / conf_reduction_factor) encoder tokens through embed_audio's one matrix (h -> text "
        "hidden); the one padding embedding Gemma3nModel adds up to 188 tokens is not counted",
        "refused: conf_conv_kernel_size < conf_reduction_factor, or 0 < conf_attention_context_right < "
        "conf_reduction_factor - 1 (the useful frames are then not runs from frame 0 these forms describe)",
        "language model: 188 + 4 tokens per clip, causal and sliding like text",
    ),
)
