"""Qwen3-Omni-MoE's thinker towers (transformers 5.24 models/qwen3_omni_moe): the vision encoder,
Qwen3-VL's ViT computed the same way under its own processor rules, and the Whisper-style audio
encoder (three stride-2 Conv2d per chunk, attention within windows, an output projection); each
``sum(p.numel())`` of its module as a formula of the config and the forward FLOPs of one image or
clip as closed forms (derived in docs/multimodal.md "Qwen3-Omni", checked against
tests/data/hf_forward/forward_omni3.json by tests/hf/test_omni3_forward.py).
"""

from __future__ import annotations

import attrs
import sympy

from flopsreg.patterns.hf._qwen3_omni_audio import QWEN3_OMNI_AUDIO_CLIPS
from flopsreg.patterns.hf._qwen3_omni_vit import QWEN3_OMNI_IMAGES, QWEN3_OMNI_VIDEOS
from flopsreg.patterns.hf._towers import QWEN3_VL_VISION, VIT_BLOCK
from flopsreg.plugin import IMAGE_GRID, Dim, TowerKind, where_symbol

__all__ = ["QWEN3_OMNI_AUDIO", "QWEN3_OMNI_VISION"]

_SOURCE = "transformers 5.24.0 models/qwen3_omni_moe/modeling_qwen3_omni_moe.py "

# Qwen3OmniMoeVisionEncoder is Qwen3VLMoeVisionModel (modular_qwen3_omni_moe.py), its merger the same
# LayerNorm and two biased matrices under other names (ln_q, mlp.0, mlp.2), its config class defaults
# Qwen3-VL's: the same dims, parameters and closed forms; only the processor differs.
QWEN3_OMNI_VISION = attrs.evolve(
    QWEN3_VL_VISION,
    name="qwen3_omni_vision",
    title="Qwen3-Omni ViT",
    summary="Qwen3OmniMoeVisionEncoder: Qwen3-VL's deepstack ViT (qwen3_vl_vision's closed forms), images and videos "
    "through Qwen3OmniMoeProcessor's Qwen2-VL image and video processors",
    reference=_SOURCE + "Qwen3OmniMoeVisionEncoder",
    images=QWEN3_OMNI_IMAGES,
    videos=QWEN3_OMNI_VIDEOS,
)

(d, ffn, layers, heads, mel, conv, out, window, infer) = sympy.symbols(
    "d ffn layers heads mel conv out window infer", integer=True, nonnegative=True
)
h, i = sympy.symbols("h i", integer=True, nonnegative=True)
_, _ROWS, _COLUMNS = IMAGE_GRID  # a clip's grid: (1, mel frames, mel bins)
_FULL, _REST, _T1, _T2, _N, _WINDOW = (where_symbol(name) for name in ("full", "rest", "T1", "T2", "n", "W"))
_F3 = sympy.ceiling(mel / 8)  # the bins after three stride-2 convolutions (conv_out's input is conv x F3)

# Per clip: full chunks of 2 window frames and the rest; each convolution's output frames over the
# chunks' real frames (a chunk of l frames: ceil(l/2), ceil(l/4), ceil(l/8)); n tokens; the
# attention window in tokens (cu_seqlens: a full chunk's tokens x n_window_infer // (2 n_window)).
_WHERE = {
    "full": sympy.floor(_ROWS / (2 * window)), "rest": _ROWS - 2 * window * _FULL,
    "T1": _FULL * window + sympy.ceiling(_REST / 2),
    "T2": _FULL * sympy.ceiling(window / 2) + sympy.ceiling(_REST / 4),
    "n": _FULL * sympy.ceiling(window / 4) + sympy.ceiling(_REST / 8),
    "W": sympy.ceiling(window / 4) * sympy.floor(infer / (2 * window)),
}
_PAIRS = _WINDOW**2 * sympy.floor(_N / _WINDOW) + sympy.Mod(_N, _WINDOW) ** 2


def _audio_flops() -> dict[str, sympy.Expr]:
    """Qwen3OmniMoeAudioEncoder over one clip (multiply-adds x 2; derived in docs/multimodal.md):
    the convolutions over each chunk's real frames, conv_out, the blocks, the pairs within windows,
    proj1 and proj2 (LayerNorms, GELUs and the sinusoidal positions are elementwise)."""
    return {
        "conv.conv2d1": 2 * _T1 * sympy.ceiling(_COLUMNS / 2) * conv * 9,
        "conv.conv2d2": 2 * _T2 * sympy.ceiling(_COLUMNS / 4) * conv * 9 * conv,
        "conv.conv2d3": 2 * _N * sympy.ceiling(_COLUMNS / 8) * conv * 9 * conv,
        "conv.conv_out": 2 * _N * conv * sympy.ceiling(_COLUMNS / 8) * d,
        "blocks.qkv_proj": layers * 2 * _N * 4 * d**2,
        "blocks.attention": layers * 4 * d * _PAIRS,
        "blocks.mlp": layers * 2 * _N * 2 * d * ffn,
        "proj": 2 * _N * (d**2 + d * out),
    }


QWEN3_OMNI_AUDIO = TowerKind(
    name="qwen3_omni_audio",
    title="Qwen3-Omni audio encoder",
    summary="Qwen3OmniMoeAudioEncoder: three 3x3 stride-2 Conv2d per chunk of 2 n_window mel frames, conv_out, "
    "pre-norm blocks with biases attending within windows (cu_seqlens), ln_post, proj1 and proj2 to output_dim",
    dims=(
        Dim("d", "{tower}.d_model", 1280), Dim("ffn", "{tower}.encoder_ffn_dim", 5120),
        Dim("layers", "{tower}.encoder_layers", 32, latex="L"), Dim("heads", "{tower}.encoder_attention_heads", 20),
        Dim("mel", "{tower}.num_mel_bins", 128), Dim("conv", "{tower}.downsample_hidden_size", 480, latex="c"),
        Dim("out", "{tower}.output_dim", 3584, latex=r"d_{\mathrm{out}}"),
        Dim("window", "{tower}.n_window", 50, latex=r"n_{\mathrm{w}}"),
        Dim("infer", "{tower}.n_window_infer", 800, latex=r"n_{\mathrm{inf}}"),
    ),
    parameters=(
        9 * conv + conv + 2 * (9 * conv**2 + conv)  # conv2d1, conv2d2, conv2d3 (biased)
        + conv * _F3 * d  # conv_out (no bias)
        + layers * VIT_BLOCK.subs({h: d, i: ffn})  # biased q, k, v, out_proj, fc1, fc2 and two LayerNorms
        + 2 * d + d**2 + d + d * out + out  # ln_post, proj1, proj2
    ),
    reference=_SOURCE + "Qwen3OmniMoeAudioEncoder",
    images=QWEN3_OMNI_AUDIO_CLIPS,
    flops=_audio_flops(),
    flops_where=_WHERE,
)
