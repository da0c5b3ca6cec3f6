"""Qwen3-Omni-MoE's towers (transformers 5.24 models/qwen3_omni_moe): the thinker's vision encoder,
Qwen3-VL's ViT computed the same way under its own processor rules, and its Whisper-style audio
encoder (three stride-2 Conv2d per chunk, attention within windows, an output projection), each
``sum(p.numel())`` of its module as a formula of the config and the forward FLOPs of one image or
clip as closed forms; and the talker and code2wav that speak the answer, parameters only (spoken
output is not counted). Derived in docs/multimodal.md "Qwen3-Omni", checked against
tests/data/hf_forward/forward_omni3.json by tests/hf/test_omni3_forward.py.
"""

from __future__ import annotations

import attrs
import sympy

from flopsreg.patterns.hf._qwen3_omni_audio import QWEN3_OMNI_AUDIO_CLIPS
from flopsreg.patterns.hf._qwen3_omni_vit import QWEN3_OMNI_IMAGES, QWEN3_OMNI_VIDEOS
from flopsreg.patterns.hf._towers import QWEN3_VL_VISION, VIT_BLOCK
from flopsreg.plugin import IMAGE_GRID, Dim, TowerKind, where_symbol

__all__ = ["CODE2WAV_RATES", "QWEN3_OMNI_AUDIO", "QWEN3_OMNI_CODE2WAV", "QWEN3_OMNI_TALKER", "QWEN3_OMNI_VISION"]

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

# The heads split d (head_dim = d // heads, checked by the module): no formula reads them.
(d, ffn, layers, mel, conv, out, window, infer) = sympy.symbols(
    "d ffn layers mel conv out window infer", integer=True, nonnegative=True
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
        Dim("layers", "{tower}.encoder_layers", 32, latex="L"),
        Dim("mel", "{tower}.num_mel_bins", 128), Dim("conv", "{tower}.downsample_hidden_size", 480, latex="C"),
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


# The talker (Qwen3OmniMoeTalkerForConditionalGeneration) and code2wav read head_dim with getattr's
# default hidden // heads where their config classes declare none: a Dim of default 0 stands for absent.
def _head_dim(given: sympy.Symbol, width: sympy.Symbol, heads_: sympy.Symbol) -> sympy.Expr:
    return sympy.Piecewise((sympy.floor(width / heads_), sympy.Eq(given, 0)), (given, True))


def _attention(width: sympy.Expr, heads_: sympy.Expr, kv: sympy.Expr, head: sympy.Expr, bias: sympy.Expr) -> sympy.Expr:
    """q, k, v, o of a grouped-query attention, their biases when *bias* is 1."""
    return 2 * width * head * (heads_ + kv) + bias * (head * (heads_ + 2 * kv) + width)


(th, ti, tl, ta, tk, thd, tv, tmi, tsi, te_saved, te, tied, tbias, thinker_h, ph, pi, pl, pa, pk, phd, pv, groups, pbias) = sympy.symbols(
    "th ti tl ta tk thd tv tmi tsi te_saved te tied tbias thinker_h ph pi pl pa pk phd pv groups pbias", integer=True, nonnegative=True
)
_TALKER_HEAD = _head_dim(thd, th, ta)
_EXPERTS = sympy.Piecewise((te, sympy.Eq(te_saved, 0)), (te_saved, True))  # attribute_map: num_experts -> num_local_experts
_TEXT = "{tower}.text_config."
_PREDICTOR = "{tower}.code_predictor_config."

QWEN3_OMNI_TALKER = TowerKind(
    name="qwen3_omni_talker",
    title="Qwen3-Omni talker",
    summary="Qwen3OmniMoeTalkerForConditionalGeneration: a MoE decoder (every layer sparse, a gated shared expert) over codec "
    "tokens, two projections from the thinker, the codec head, and the code predictor (a dense decoder with one embedding "
    "and one head per further code group); parameters only: spoken output is not counted",
    dims=(
        Dim("th", _TEXT + "hidden_size", 1024), Dim("ti", _TEXT + "intermediate_size", 2048),
        Dim("tl", _TEXT + "num_hidden_layers", 20), Dim("ta", _TEXT + "num_attention_heads", 16),
        Dim("tk", _TEXT + "num_key_value_heads", 2), Dim("thd", _TEXT + "head_dim", 0),
        Dim("tv", _TEXT + "vocab_size", 3072), Dim("tmi", _TEXT + "moe_intermediate_size", 384),
        Dim("tsi", _TEXT + "shared_expert_intermediate_size", 0), Dim("te_saved", _TEXT + "num_local_experts", 0),
        Dim("te", _TEXT + "num_experts", 128), Dim("tbias", _TEXT + "attention_bias", False, read="bool"),
        Dim("tied", "{tower}.tie_word_embeddings", False, read="bool"), Dim("thinker_h", "{tower}.thinker_hidden_size", 2048),
        Dim("ph", _PREDICTOR + "hidden_size", 1024), Dim("pi", _PREDICTOR + "intermediate_size", 3072),
        Dim("pl", _PREDICTOR + "num_hidden_layers", 5), Dim("pa", _PREDICTOR + "num_attention_heads", 16),
        Dim("pk", _PREDICTOR + "num_key_value_heads", 8), Dim("phd", _PREDICTOR + "head_dim", 128),
        Dim("pv", _PREDICTOR + "vocab_size", 2048), Dim("groups", _PREDICTOR + "num_code_groups", 32),
        Dim("pbias", _PREDICTOR + "attention_bias", False, read="bool"),
    ),
    parameters=(
        tl * (  # Qwen3OmniMoeTalkerDecoderLayer: its mlp is always the shared-expert MoE block
            _attention(th, ta, tk, _TALKER_HEAD, tbias) + 2 * _TALKER_HEAD  # q_norm, k_norm
            + _EXPERTS * th + 3 * _EXPERTS * th * tmi + 3 * th * tsi + th  # router, experts, shared expert and its gate
            + 2 * th
        )
        + th + tv * th  # norm, codec_embedding
        + 2 * (thinker_h * ti + ti + ti * th + th)  # text_projection, hidden_projection
        + (1 - tied) * th * tv  # codec_head
        + pl * (_attention(ph, pa, pk, phd, pbias) + 2 * phd + 3 * ph * pi + 2 * ph) + ph  # the code predictor's decoder
        + 2 * (groups - 1) * pv * ph  # its codec_embedding and lm_head per further group
    ),
    embeddings=tv * th + (groups - 1) * pv * ph,
    reference=_SOURCE + "Qwen3OmniMoeTalkerForConditionalGeneration",
)

# Code2Wav's upsampling: the one list of rates counted (Qwen3OmniMoeCode2WavConfig's default, the
# published one): a decoder block per entry of upsample_rates, a stage per entry of upsampling_ratios.
CODE2WAV_RATES = {"upsample_rates": [8, 5, 4, 3], "upsampling_ratios": [2, 2]}
(ch, ci, cl, ca, ck, chd, cbias, codebook, quantizers, dec) = sympy.symbols(
    "ch ci cl ca ck chd cbias codebook quantizers dec", integer=True, nonnegative=True
)
_CODE2WAV_HEAD = _head_dim(chd, ch, ca)


def _decoder_block(index: int, rate: int) -> sympy.Expr:
    """Code2Wav decoder block *index*: SnakeBeta, a transposed Conv1d of kernel 2 x rate halving the
    channels, three residual units (SnakeBeta, a kernel-7 Conv1d, SnakeBeta, a kernel-1 Conv1d)."""
    wide, narrow = sympy.floor(dec / 2**index), sympy.floor(dec / 2 ** (index + 1))
    return 2 * wide + 2 * rate * wide * narrow + narrow + 3 * (2 * narrow + 7 * narrow**2 + narrow + 2 * narrow + narrow**2 + narrow)


_OUT_CHANNELS = sympy.floor(dec / 2 ** len(CODE2WAV_RATES["upsample_rates"]))
_CONVNEXT = 7 * ch + ch + 2 * ch + 4 * ch**2 + 4 * ch + 4 * ch**2 + ch + ch  # depthwise conv, LayerNorm, two matrices, gamma

QWEN3_OMNI_CODE2WAV = TowerKind(
    name="qwen3_omni_code2wav",
    title="Qwen3-Omni code2wav",
    summary="Qwen3OmniMoeCode2Wav: the codebook embedding, a sliding-window decoder with layer scales, transposed-conv "
    "upsampling with ConvNeXt blocks, and a SnakeBeta convolutional vocoder; parameters only: spoken output is not counted",
    dims=(
        Dim("ch", "{tower}.hidden_size", 1024), Dim("ci", "{tower}.intermediate_size", 3072),
        Dim("cl", "{tower}.num_hidden_layers", 8), Dim("ca", "{tower}.num_attention_heads", 16),
        Dim("ck", "{tower}.num_key_value_heads", 16), Dim("chd", "{tower}.head_dim", 0),
        Dim("cbias", "{tower}.attention_bias", False, read="bool"), Dim("codebook", "{tower}.codebook_size", 2048),
        Dim("quantizers", "{tower}.num_quantizers", 16), Dim("dec", "{tower}.decoder_dim", 1536),
    ),
    parameters=(
        cl * (_attention(ch, ca, ck, _CODE2WAV_HEAD, cbias) + 3 * ch * ci + 4 * ch) + ch  # pre_transformer (norms, layer scales)
        + codebook * quantizers * ch  # code_embedding
        + sum(factor * ch**2 + ch + _CONVNEXT for factor in CODE2WAV_RATES["upsampling_ratios"])  # upsample
        + 7 * ch * dec + dec  # the decoder's first Conv1d
        + sum(_decoder_block(index, rate) for index, rate in enumerate(CODE2WAV_RATES["upsample_rates"]))
        + 2 * _OUT_CHANNELS + 7 * _OUT_CHANNELS + 1  # SnakeBeta, the last Conv1d to one channel
    ),
    embeddings=codebook * quantizers * ch,
    reference=_SOURCE + "Qwen3OmniMoeCode2Wav",
)
