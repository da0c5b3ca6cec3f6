"""Gemma 3n's towers beside its language model (Gemma3nModel of transformers 5.24): timm's
MobileNetV5 vision encoder, the USM conformer audio encoder, and the two multimodal embedders
that map their soft tokens to the text width; each ``sum(p.numel())`` of its module as a formula
of the config, checked against transformers' counts in tests/hf/test_gemma3nmm_forward.py.
"""

from __future__ import annotations

import sympy

from flopsreg.plugin import Dim, TowerKind

_SOURCE = "transformers 5.24.0 models/gemma3n/modeling_gemma3n.py "
# The one vision architecture counted: Gemma3nVisionConfig's default, what every Gemma 3n
# checkpoint names. transformers builds it with timm.create_model(architecture, num_classes=0,
# **model_args): nothing else in the config changes it.
MOBILENETV5 = "mobilenetv5_300m_enc"
# sum(p.numel()) of timm 1.0.31's mobilenetv5_300m_enc without its classifier (num_classes=0),
# recorded by tests/data/hf_forward/measure_gemma3nmm.py.
MOBILENETV5_PARAMETERS = 294_126_912

(h, text, vocab, layers, heads, kernel, mel, conv0, conv1, kh0, kw0, kh1, kw1, sw0, sw1) = sympy.symbols(
    "h text vocab layers heads kernel mel conv0 conv1 kh0 kw0 kh1 kw1 sw0 sw1", integer=True, nonnegative=True
)

GEMMA3N_VISION = TowerKind(
    name="gemma3n_vision",
    title="MobileNetV5-300M",
    summary=f"TimmWrapperModel of timm's {MOBILENETV5} (no classifier): the architecture fixes every width, "
    "so its parameters are one number; any other vision_config.architecture is refused by name",
    dims=(),
    parameters=MOBILENETV5_PARAMETERS,
    reference="transformers 5.24.0 models/timm_wrapper/modeling_timm_wrapper.py TimmWrapperModel; timm 1.0.31 "
    "models/mobilenetv5.py mobilenetv5_300m_enc",
)

# The subsampling convolutions pad the frequency axis by one on each side (Gemma3nAudioSubSampleConvProjection).
_FREQ0 = sympy.floor((mel + 2 - kw0) / sw0) + 1
_FREQ1 = sympy.floor((_FREQ0 + 2 - kw1) / sw1) + 1
_HEAD = sympy.floor(h / heads)  # Gemma3nAudioAttention's head_dim: hidden_size // heads

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
