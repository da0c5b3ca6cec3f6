"""Gemma 3n's towers beside its language model (Gemma3nModel of transformers 5.24): timm's
MobileNetV5 vision encoder, the USM conformer audio encoder, and the two multimodal embedders
that map their soft tokens to the text width; each ``sum(p.numel())`` of its module as a formula
of the config, checked against transformers' counts in tests/hf/test_gemma3nmm_forward.py, and the
forward FLOPs of an image and of an audio clip as closed forms (tests/hf/test_g3naudio_forward.py
for the audio encoder).
"""

from __future__ import annotations

import sympy

from flopsreg.patterns.hf._gemma3n_audio import GEMMA3N_AUDIO_CLIPS
from flopsreg.patterns.hf._gemma3n_vit import GEMMA3N_IMAGES
from flopsreg.plugin import IMAGE_GRID, Dim, TowerKind, where_symbol

_SOURCE = "transformers 5.24.0 models/gemma3n/modeling_gemma3n.py "
# The one vision architecture counted: Gemma3nVisionConfig's default, what every Gemma 3n
# checkpoint names. transformers builds it with timm.create_model(architecture, num_classes=0,
# **model_args): nothing else in the config changes it.
MOBILENETV5 = "mobilenetv5_300m_enc"
# sum(p.numel()) of timm 1.0.31's mobilenetv5_300m_enc without its classifier (num_classes=0),
# recorded by tests/data/hf_forward/measure_gemma3nmm.py.
MOBILENETV5_PARAMETERS = 294_126_912

(h, text, tokens, vocab, layers, heads, kernel, mel, conv0, conv1, kh0, kw0, kh1, kw1, sw0, sw1) = sympy.symbols(
    "h text tokens vocab layers heads kernel mel conv0 conv1 kh0 kw0 kh1 kw1 sw0 sw1", integer=True, nonnegative=True
)

_, rows, columns = IMAGE_GRID  # the image's grid at the last stage's resolution: 1/32 of its pixels
# A piece's FLOPs as integer coefficients of its monomials in (rows, columns): {(i, j): n} is
# n rows^i columns^j, summed as plain integers and written as one polynomial at the end (short in
# explain and LaTeX; sympy is not asked to collect hundreds of products).
Poly = dict[tuple[int, int], int]


def _sum(*polys: Poly) -> Poly:
    total: Poly = {}
    for poly in polys:
        for power, n in poly.items():
            total[power] = total.get(power, 0) + n
    return total


def _times(n: int, poly: Poly) -> Poly:
    return {power: n * value for power, value in poly.items()}


def _form(poly: Poly) -> sympy.Expr:
    return sum((n * rows**i * columns**j for (i, j), n in sorted(poly.items(), reverse=True) if n), sympy.Integer(0))


def _taps(scale: int, kernel: int, stride: int) -> tuple[int, int]:
    """``(a, b)``: the (output, tap) pairs along one axis of ``scale x side`` inputs that read a
    real input, not the padding, are ``a side + b``. MobileNetV5's convolutions pad "same" (timm's
    Conv2dSame where the stride is 2), a total of ``(n / stride - 1) stride + kernel - n``, its
    smaller half first: each of the ``n / stride`` outputs reads *kernel* inputs less those past
    either border, a count the borders alone fix (enumerated here on an even side long enough to
    hold both borders apart)."""
    probe = 8 * kernel
    outputs = probe // stride
    before = ((outputs - 1) * stride + kernel - probe) // 2
    real = sum(0 <= o * stride - before + j < probe for o in range(outputs) for j in range(kernel))
    assert scale * kernel % stride == 0
    return scale * kernel // stride, real - outputs * kernel


def _conv(c_in: int, c_out: int, kernel: int, stride: int, scale: int, depthwise: bool = False) -> Poly:
    """A Conv2d's FLOPs over the real taps of an input of ``scale rows x scale columns``
    (multiply-adds x 2; a depthwise one reads one channel per output channel)."""
    per_tap = 2 * c_out * (1 if depthwise else c_in)
    a, b = _taps(scale, kernel, stride)  # the same along both axes
    return {(1, 1): per_tap * a * a, (1, 0): per_tap * a * b, (0, 1): per_tap * a * b, (0, 0): per_tap * b * b}


def _edge(c_in: int, c_out: int, stride: int, scale: int) -> Poly:
    """EdgeResidual (er_k3_e4): a full 3x3 convolution to 4 c_in, then a 1x1 projection."""
    return _sum(_conv(c_in, 4 * c_in, 3, stride, scale), _conv(4 * c_in, c_out, 1, 1, scale // stride))


def _inverted(c_in: int, c_out: int, expand: int, start: int = 0, mid: int = 0, scale: int = 1) -> Poly:
    """UniversalInvertedResidual: an optional depthwise *start* x *start* convolution, a 1x1
    expansion to ``expand c_in``, an optional depthwise *mid* x *mid* one of stride 2 (the stage's
    downsampling), a 1x1 projection."""
    wide = expand * c_in
    parts = [_conv(c_in, c_in, start, 1, scale, depthwise=True)] if start else []
    parts.append(_conv(c_in, wide, 1, 1, scale))
    if mid:
        parts.append(_conv(wide, wide, mid, 2, scale, depthwise=True))
        scale //= 2
    return _sum(*parts, _conv(wide, c_out, 1, 1, scale))


def _mqa_projections(c: int, heads: int, head: int, kv_stride: int, scale: int) -> Poly:
    """MultiQueryAttention2d's 1x1 projections: queries to heads x head, one shared key and one
    value head, each after a depthwise 3x3 of stride *kv_stride* where it is 2, the output back to c."""
    downsample = [_times(2, _conv(c, c, 3, 2, scale, depthwise=True))] if kv_stride > 1 else []
    return _sum(_conv(c, heads * head, 1, 1, scale), *downsample, _times(2, _conv(c, head, 1, 1, scale // kv_stride)),
                _conv(heads * head, c, 1, 1, scale))


def _mqa_pairs(heads: int, head: int, kv_stride: int, scale: int) -> Poly:
    """QK^T and AV of one MQA block: every query of the image attends to every key (no mask)."""
    queries, keys = scale**2, (scale // kv_stride) ** 2  # per rows x columns
    return {(2, 2): 2 * 2 * heads * head * queries * keys}


# timm 1.0.31 models/mobilenetv5.py, _gen_mobilenet_v5's 300m arch_def (stem 64 channels, 3x3 stride 2):
# stage 0 at 1/4: er_k3_s2_e4_c128, 2 x er_k3_s1_e4_c128; stage 1 at 1/8: uir_a3_k5_s2_e6_c256,
# uir a5/a3/a5/a3 e4; stage 2 at 1/16: uir_a5_k5_s2_e6_c640, 7 x uir_a5_e4, uir_e1, 14 x (mqa_h12_v2_d64,
# uir_e2); stage 3 at 1/32: uir_a5_k5_s2_e6_c1280, 19 x (mqa_h16_d96, uir_e2). The fusion adapter
# (msfa) joins stages 2 and 3 at 1/16 (1280 upsampled by nearest copies), a 1x1 expansion of the 1920
# channels to 3840 and a projection to 2048, then average-pools to 16 x 16 (elementwise).
_STAGE2_MQA, _STAGE3_MQA = 14, 19
MOBILENETV5_FLOPS = {piece: _form(poly) for piece, poly in {
    "stem": _conv(3, 64, 3, 2, 32),
    "stage0": _sum(_edge(64, 128, 2, 16), _times(2, _edge(128, 128, 1, 8))),
    "stage1": _sum(_inverted(128, 256, 6, start=3, mid=5, scale=8), *(_inverted(256, 256, 4, start=k, scale=4) for k in (5, 3, 5, 3))),
    "stage2": _sum(
        _inverted(256, 640, 6, start=5, mid=5, scale=4), _times(7, _inverted(640, 640, 4, start=5, scale=2)),
        _inverted(640, 640, 1, scale=2), _times(_STAGE2_MQA, _sum(_mqa_projections(640, 12, 64, 2, 2), _inverted(640, 640, 2, scale=2))),
    ),
    "stage3": _sum(
        _inverted(640, 1280, 6, start=5, mid=5, scale=2),
        _times(_STAGE3_MQA, _sum(_mqa_projections(1280, 16, 96, 1, 1), _inverted(1280, 1280, 2, scale=1))),
    ),
    "attention": _sum(_times(_STAGE2_MQA, _mqa_pairs(12, 64, 2, 2)), _times(_STAGE3_MQA, _mqa_pairs(16, 96, 1, 1))),
    "msfa": _inverted(1920, 2048, 2, scale=2),
}.items()}

GEMMA3N_VISION = TowerKind(
    name="gemma3n_vision",
    title="MobileNetV5-300M",
    summary=f"TimmWrapperModel of timm's {MOBILENETV5} (no classifier): the architecture fixes every width, "
    "so its parameters are one number; any other vision_config.architecture is refused by name",
    dims=(
        Dim("h", "{tower}.hidden_size", 2048), Dim("text", "text_config.hidden_size", 2048),
        Dim("tokens", "vision_soft_tokens_per_image", 256),
    ),
    parameters=MOBILENETV5_PARAMETERS,
    images=GEMMA3N_IMAGES,
    # One image resized to 32 rows x 32 columns of pixels per grid cell; the embedder's one matrix
    # maps its soft tokens to the text width (Gemma3nMultimodalEmbedder; the norms are elementwise).
    flops={**MOBILENETV5_FLOPS, "embedder": 2 * tokens * h * text},
    reference="transformers 5.24.0 models/timm_wrapper/modeling_timm_wrapper.py TimmWrapperModel; timm 1.0.31 "
    "models/mobilenetv5.py mobilenetv5_300m_enc",
)


def _freq(bins: sympy.Expr, kernel: sympy.Expr, stride: sympy.Expr) -> sympy.Expr:
    """The frequencies after a subsampling convolution: it pads the axis by one on each side
    (Gemma3nAudioSubSampleConvProjection)."""
    return sympy.floor((bins + 2 - kernel) / stride) + 1


_FREQ0 = _freq(mel, kw0, sw0)
_FREQ1 = _freq(_FREQ0, kw1, sw1)
_HEAD = sympy.floor(h / heads)  # Gemma3nAudioAttention's head_dim: hidden_size // heads

# The encoder over one clip's spectrogram (t = 1, rows mel frames, columns = mel bins): T1 and n
# frames after each subsampling convolution (time strides sh0, sh1; each pads the time axis by
# kernel - 1 after it), F1 and F2 frequencies; w = heads x head_dim; L = max(0, left - 1) keys back
# and A = right ahead of a query, its own included, inside the clip; R relative positions (L + A +
# 1); o output tokens (frames 0, reduction, 2 reduction, ...: the output keeps one frame in
# conf_reduction_factor), each through the embedder. Only work a kept frame depends on is counted
# (docs/multimodal.md derives it; tests/hf/test_g3naudio_forward.py walks the dependency graph):
# g frames follow the last kept one; the last block's attention queries and light convolution
# input run over the u = n - g frames up to it (the depthwise kernel, at least the reduction,
# joins the kept frames), its light convolution output and closing feed-forward over the o kept
# frames only; every earlier block and the subsampling over e = min(n, u + A) frames: u where no
# query looks ahead (A = 0: the tail is dead everywhere), all n where one does (a key ahead reaches
# the tail; A >= reduction - 1 reaches all of it, a smaller A > 0 is refused in the audio rule); the first
# convolution's T0 rows are those the second's e rows read, and all before them (its cumulative
# group norm). Over all blocks: Q = u + (layers - 1) e query frames, C = o + (layers - 1) e frames
# of the closing pieces (the depthwise kernel, linear_end, ffw_layer_end), P = P_u + (layers - 1) P_e pairs. P_u and P_e: the pairs the mask allows the queries 0..u-1 and 0..e-1.
(sh0, sh1, left, right, reduction) = sympy.symbols("sh0 sh1 left right reduction", integer=True, nonnegative=True)
(_N, _T1, _F1, _F2, _WIDTH, _POSITIONS, _BACK, _AHEAD, _OUT, _TAIL, _UPTO, _EACH, _NEAR_UPTO, _NEAR_EACH, _SHORT, _PAST_UPTO, _PAST_EACH,
 _PAIRS_UPTO, _PAIRS_EACH, _T0, _QUERIES, _CLOSING, _PAIRS) = (
    where_symbol(name) for name in ("n", "T1", "F1", "F2", "w", "R", "L", "A", "o", "g", "u", "e", "M_u", "M_e", "D_0", "D_u", "D_e",
                                    "P_u", "P_e", "T0", "Q", "C", "P")
)


def _pairs(queries: sympy.Expr, near: sympy.Expr, past: sympy.Expr) -> sympy.Expr:
    """The (query, key) pairs the chunked local mask allows to the first *queries* of n frames: each
    sees L + A + 1 keys, less those before frame 0 (the *near* = min(L, queries) first lose L, L - 1,
    ...) and after frame n - 1 (the *past* = max(0, queries + A - n) last lose 1, 2, ..., less the
    D0 = max(0, A - n) that no query of the clip loses: the clip is shorter than A)."""
    return queries * (_BACK + _AHEAD + 1) - near * _BACK + near * (near - 1) / 2 - past * (past + 1) / 2 + _SHORT * (_SHORT + 1) / 2


_GEMMA3N_AUDIO_WHERE = {
    "T1": sympy.ceiling(rows / sh0), "n": sympy.ceiling(_T1 / sh1), "F1": _freq(columns, kw0, sw0),
    "F2": _freq(_F1, kw1, sw1), "w": heads * _HEAD,
    "L": sympy.Max(left - 1, 0), "A": right, "R": _BACK + _AHEAD + 1,
    "o": sympy.ceiling(_N / reduction), "g": _N - 1 - reduction * (_OUT - 1), "u": _N - _TAIL, "e": sympy.Min(_N, _UPTO + _AHEAD),
    "M_u": sympy.Min(_BACK, _UPTO), "M_e": sympy.Min(_BACK, _EACH), "D_0": sympy.Max(0, _AHEAD - _N),
    "D_u": sympy.Max(0, _UPTO + _AHEAD - _N), "D_e": sympy.Max(0, _EACH + _AHEAD - _N),
    "P_u": _pairs(_UPTO, _NEAR_UPTO, _PAST_UPTO), "P_e": _pairs(_EACH, _NEAR_EACH, _PAST_EACH),
    "T0": sympy.Min(sh1 * (_EACH - 1) + kh1, _T1),
    "Q": _UPTO + (layers - 1) * _EACH, "C": _OUT + (layers - 1) * _EACH, "P": _PAIRS_UPTO + (layers - 1) * _PAIRS_EACH,
}
_GEMMA3N_AUDIO_FLOPS = {  # multiply-adds x 2 (derived in docs/multimodal.md)
    "subsample.conv0": 2 * _T0 * _F1 * conv0 * kh0 * kw0,
    "subsample.conv1": 2 * _EACH * _F2 * conv1 * kh1 * kw1 * conv0,
    "subsample.input_proj": 2 * _EACH * _F2 * conv1 * h,
    # ffw_layer_start (h -> 4h -> h) over e frames in every block; ffw_layer_end over the C closing frames
    "blocks.feed_forward": 2 * 2 * 4 * h * h * (layers * _EACH + _CLOSING),
    # q_proj and post over the Q query frames, k_proj and v_proj over e frames in every block
    "blocks.qkv_post": 2 * (h * _WIDTH + h * h) * _QUERIES + 2 * 2 * h * _WIDTH * layers * _EACH,
    "blocks.pos_proj": layers * 2 * _POSITIONS * h * _WIDTH,
    "blocks.attention": 2 * 2 * _WIDTH * _PAIRS + 2 * _WIDTH * _POSITIONS * _QUERIES,
    # linear_start (h -> 2h, GLU) over the Q query frames; the depthwise kernel and linear_end over the C closing frames
    "blocks.light_conv": 2 * 2 * h * h * _QUERIES + 2 * (h * kernel + h * h) * _CLOSING,
    "embedder": 2 * _OUT * h * text,
}

GEMMA3N_AUDIO = TowerKind(
    name="gemma3n_audio",
    title="Gemma 3n USM audio encoder",
    summary="Gemma3nAudioEncoder: two subsampling Conv2d without bias, each with a group norm's scale, an input projection "
    "over channels x the subsampled frequencies, conformer blocks (two 4h feed-forwards, attention with a relative "
    "position projection and a per-dimension scale, a light depthwise convolution, RMSNorms)",
    dims=(
        Dim("h", "{tower}.hidden_size", 1536), Dim("layers", "{tower}.conf_num_hidden_layers", 12),
        Dim("heads", "{tower}.conf_num_attention_heads", 8), Dim("kernel", "{tower}.conf_conv_kernel_size", 5),
        Dim("mel", "{tower}.input_feat_size", 128),
        Dim("conv0", "{tower}.sscp_conv_channel_size[0]", [128, 32]), Dim("conv1", "{tower}.sscp_conv_channel_size[1]", [128, 32]),
        Dim("kh0", "{tower}.sscp_conv_kernel_size[0][0]", [[3, 3], [3, 3]]), Dim("kw0", "{tower}.sscp_conv_kernel_size[0][1]", [[3, 3], [3, 3]]),
        Dim("kh1", "{tower}.sscp_conv_kernel_size[1][0]", [[3, 3], [3, 3]]), Dim("kw1", "{tower}.sscp_conv_kernel_size[1][1]", [[3, 3], [3, 3]]),
        Dim("sw0", "{tower}.sscp_conv_stride_size[0][1]", [[2, 2], [2, 2]]), Dim("sw1", "{tower}.sscp_conv_stride_size[1][1]", [[2, 2], [2, 2]]),
        Dim("sh0", "{tower}.sscp_conv_stride_size[0][0]", [[2, 2], [2, 2]]), Dim("sh1", "{tower}.sscp_conv_stride_size[1][0]", [[2, 2], [2, 2]]),
        Dim("left", "{tower}.conf_attention_context_left", 13),
        Dim("right", "{tower}.conf_attention_context_right", 0), Dim("reduction", "{tower}.conf_reduction_factor", 4),
        Dim("tokens", "audio_soft_tokens_per_image", 188), Dim("text", "text_config.hidden_size", 2048),
    ),
    parameters=(
        kh0 * kw0 * conv0 + conv0 + kh1 * kw1 * conv0 * conv1 + conv1  # conv_0, conv_1 and their norms' scales
        + conv1 * _FREQ1 * h  # input_proj_linear
        + layers * (
            2 * (8 * h**2 + 2 * h)  # ffw_layer_start, ffw_layer_end: h -> 4h -> h, pre and post RMSNorms
            + 4 * h * heads * _HEAD + _HEAD + h**2 + 2 * h  # attention: q, k, v, pos_proj; per_dim_scale; post; two RMSNorms
            + 3 * h**2 + h * kernel + 2 * h  # lconv1d: linear_start (2h), depthwise_conv1d, linear_end; its two RMSNorms
            + h  # the block's norm
        )
    ),
    reference=_SOURCE + "Gemma3nAudioEncoder",
    images=GEMMA3N_AUDIO_CLIPS,
    flops=_GEMMA3N_AUDIO_FLOPS,
    flops_where=_GEMMA3N_AUDIO_WHERE,
)


def _embedder(part: str, width: int) -> TowerKind:
    """Gemma3nMultimodalEmbedder of the *part* tower (``vision``, ``audio``): its own embedding
    table of ``vocab_size`` hard tokens, two RMSNorms of the tower's width (hard, soft), one matrix
    to the text width (the norm after it has no scale); *width* is the class default hidden_size."""
    return TowerKind(
        name=f"gemma3n_{part}_embedder",
        title=f"Gemma 3n {part} embedder",
        summary=f"Gemma3nMultimodalEmbedder (embed_{part}): a vocab_size x hidden_size nn.Embedding, two RMSNorms, "
        "one matrix from the tower's width to the text width",
        dims=(Dim("vocab", "{tower}.vocab_size", 128), Dim("h", "{tower}.hidden_size", width), Dim("text", "text_config.hidden_size", 2048)),
        parameters=vocab * h + 2 * h + h * text,
        embeddings=vocab * h,
        reference=_SOURCE + "Gemma3nMultimodalEmbedder",
    )


GEMMA3N_VISION_EMBEDDER = _embedder("vision", 2048)
GEMMA3N_AUDIO_EMBEDDER = _embedder("audio", 1536)
