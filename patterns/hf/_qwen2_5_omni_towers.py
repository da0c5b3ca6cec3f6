"""Qwen2.5-Omni's towers beside its thinker's language model (transformers 5.24
models/qwen2_5_omni/modeling_qwen2_5_omni.py): the Whisper-style audio encoder, counted for the clips
a request carries, and the talker and token2wav that speak, whose FLOPs are not counted (spoken output); each
``sum(p.numel())`` of its module as a formula of the config, checked against transformers' counts in
tests/hf/test_omni25_forward.py. The thinker's ViT is Qwen2.5-VL's (``qwen2_5_vl_vision``): the same
blocks, windows and merger (q, k and v as three matrices rather than one fused: the same weights
and FLOPs).
"""

from __future__ import annotations

import sympy

from flopsreg.patterns.hf._qwen2_5_omni_audio import QWEN2_5_OMNI_AUDIO_CLIPS
from flopsreg.plugin import IMAGE_GRID, Dim, TowerKind, where_symbol

__all__ = ["QWEN2_5_OMNI_AUDIO", "QWEN2_5_OMNI_TALKER", "QWEN2_5_OMNI_TOKEN2WAV", "TOKEN2WAV_FIXED"]

_SOURCE = "transformers 5.24.0 models/qwen2_5_omni/modeling_qwen2_5_omni.py "
(h, layers, ffn, mel, out, window, embedding, i, heads, kv, head_dim, vocab) = sympy.symbols(
    "h layers ffn mel out window embedding i heads kv head_dim vocab", integer=True, nonnegative=True
)
_, _ROWS, _COLUMNS = IMAGE_GRID  # a clip's real mel frames and its mel bins
_N, _WHOLE, _LEFT, _P = (where_symbol(name) for name in ("n", "m", "u", "P"))
# n positions after the stride-2 convolution; m whole windows of 2 n_window frames and u frames
# left (not r: LaTeX writes the grid's rows r); P the (query, key) pairs within the windows
# (n_window positions a whole window).
_AUDIO_WHERE = {
    "n": sympy.ceiling(_ROWS / 2),
    "m": sympy.floor(_ROWS / (2 * window)),
    "u": sympy.Mod(_ROWS, 2 * window),
    "P": _WHOLE * window**2 + sympy.ceiling(_LEFT / 2) ** 2,
}

QWEN2_5_OMNI_AUDIO = TowerKind(
    name="qwen2_5_omni_audio",
    title="Qwen2.5-Omni audio encoder",
    summary="Qwen2_5OmniAudioEncoder: two 3-tap Conv1d (the second stride 2), Whisper encoder layers (k without bias) "
    "attending within windows of 2 n_window frames, stride-2 average pooling, ln_post, proj to output_dim",
    dims=(
        Dim("mel", "{tower}.num_mel_bins", 128, latex=r"n_{\mathrm{mel}}"), Dim("h", "{tower}.d_model", 1280),
        Dim("layers", "{tower}.encoder_layers", 32, latex="L"), Dim("ffn", "{tower}.encoder_ffn_dim", 5120, latex="f"),
        Dim("out", "{tower}.output_dim", 3584, latex=r"d_{\mathrm{out}}"), Dim("window", "{tower}.n_window", 100, latex="w"),
    ),
    parameters=(
        3 * mel * h + h + 3 * h * h + h  # conv1, conv2 (biased); the sinusoidal positions are a buffer
        + 2 * out  # audio_bos_eos_token (nn.Embedding(2, output_dim))
        + layers * (4 * h**2 + 3 * h + 2 * h * ffn + ffn + h + 4 * h)  # q, v, out biased, k not; fc1, fc2; two LayerNorms
        + 2 * h + h * out + out  # ln_post, proj
    ),
    embeddings=2 * out,
    reference=_SOURCE + "Qwen2_5OmniAudioEncoder",
    images=QWEN2_5_OMNI_AUDIO_CLIPS,
    flops={
        "conv1": 2 * _ROWS * _COLUMNS * h * 3,
        "conv2": 2 * _N * h * h * 3,
        "layers.qkvo": layers * 2 * _N * 4 * h**2,
        "layers.attention": layers * 4 * h * _P,
        "layers.mlp": layers * 2 * _N * 2 * h * ffn,
        "proj": 2 * sympy.floor(_N / 2) * h * out,
    },
    flops_where=_AUDIO_WHERE,
)

QWEN2_5_OMNI_TALKER = TowerKind(
    name="qwen2_5_omni_talker",
    title="Qwen2.5-Omni talker",
    summary="Qwen2_5OmniTalkerForConditionalGeneration: thinker_to_talker_proj, a Qwen2 decoder over codec tokens "
    "(embed_tokens of embedding_size, q/k/v biases), codec_head (FLOPs not counted: spoken output)",
    dims=(
        Dim("embedding", "{tower}.embedding_size", 3584), Dim("h", "{tower}.hidden_size", 3584),
        Dim("i", "{tower}.intermediate_size", 18944), Dim("layers", "{tower}.num_hidden_layers", 28),
        Dim("heads", "{tower}.num_attention_heads", 28), Dim("kv", "{tower}.num_key_value_heads", 4),
        Dim("head_dim", "{tower}.head_dim", 128), Dim("vocab", "{tower}.vocab_size", 8448),
    ),
    parameters=(
        embedding * h + h  # thinker_to_talker_proj
        + vocab * embedding  # embed_tokens
        + layers * (2 * h * heads * head_dim + heads * head_dim + 2 * (h * kv * head_dim + kv * head_dim) + 3 * h * i + 2 * h)
        + h  # norm
        + h * vocab  # codec_head
    ),
    embeddings=vocab * embedding,
    reference=_SOURCE + "Qwen2_5OmniTalkerForConditionalGeneration",
)

# Token2wav: the DiT (its ECAPA-TDNN speaker encoder included) and BigVGAN. The lists that shape its
# modules (kernel sizes, dilations, upsampling rates) are counted at their class defaults, which the
# published config keeps (HFTower.fixed refuses others by name); the widths are read.
(dit_h, dit_layers, dit_heads, dit_head_dim, ff_mult, emb, embeds, dit_mel, enc_emb, enc_dim, c0, c1, c2, c3, c4,
 attention_channels, scale, se, vgan_mel, vgan_c) = sympy.symbols(
    "dit_h dit_layers dit_heads dit_head_dim ff_mult emb embeds dit_mel enc_emb enc_dim c0 c1 c2 c3 c4 attention_channels "
    "scale se vgan_mel vgan_c", integer=True, nonnegative=True
)
TOKEN2WAV_FIXED = {
    "dit_config.enc_kernel_sizes": [5, 3, 3, 3, 1], "dit_config.enc_dilations": [1, 2, 3, 4, 1],
    "bigvgan_config.upsample_rates": [5, 3, 2, 2, 2, 2], "bigvgan_config.upsample_kernel_sizes": [11, 7, 4, 4, 4, 4],
    "bigvgan_config.resblock_kernel_sizes": [3, 7, 11], "bigvgan_config.resblock_dilation_sizes": [[1, 3, 5], [1, 3, 5], [1, 3, 5]],
}
_FREQUENCIES = 256  # DiTTimestepEmbedding's freq_embed_dim


def _seres2net(before: sympy.Expr, channels: sympy.Expr, kernel: int) -> sympy.Expr:
    """SqueezeExcitationRes2NetBlock: tdnn1, scale - 1 Res2Net convolutions of channels/scale, tdnn2, squeeze-excitation."""
    part = sympy.floor(channels / scale)
    return (before * channels + channels + (scale - 1) * (part * part * kernel + part) + channels * channels + channels
            + 2 * channels * se + se + channels)


def _bigvgan() -> sympy.Expr:
    """Qwen2_5OmniToken2WavBigVGANModel at the default rates and kernels: conv_pre, six transposed
    convolutions halving the channels, three AMP blocks a stage (two sets of three convolutions and six
    SnakeBeta activations each), activation_post and conv_post (no bias)."""
    total = vgan_mel * vgan_c * 7 + vgan_c
    for stage, kernel in enumerate(TOKEN2WAV_FIXED["bigvgan_config.upsample_kernel_sizes"]):
        wide, narrow = sympy.floor(vgan_c / 2**stage), sympy.floor(vgan_c / 2 ** (stage + 1))
        total += wide * narrow * kernel + narrow
        for taps in TOKEN2WAV_FIXED["bigvgan_config.resblock_kernel_sizes"]:
            total += 6 * (narrow * narrow * taps + narrow) + 12 * narrow
    last = sympy.floor(vgan_c / 2**6)
    return total + 2 * last + 7 * last


QWEN2_5_OMNI_TOKEN2WAV = TowerKind(
    name="qwen2_5_omni_token2wav",
    title="Qwen2.5-Omni token2wav",
    summary="Qwen2_5OmniToken2WavModel: the DiT (timestep MLP, codec embedding, ECAPA-TDNN speaker encoder, AdaLN-Zero blocks) "
    "and BigVGAN (FLOPs not counted: spoken output)",
    dims=(
        Dim("dit_h", "{tower}.dit_config.hidden_size", 1024), Dim("dit_layers", "{tower}.dit_config.num_hidden_layers", 22),
        Dim("dit_heads", "{tower}.dit_config.num_attention_heads", 16), Dim("dit_head_dim", "{tower}.dit_config.head_dim", 64),
        Dim("ff_mult", "{tower}.dit_config.ff_mult", 2), Dim("emb", "{tower}.dit_config.emb_dim", 512),
        Dim("embeds", "{tower}.dit_config.num_embeds", 8193), Dim("dit_mel", "{tower}.dit_config.mel_dim", 80),
        Dim("enc_emb", "{tower}.dit_config.enc_emb_dim", 192), Dim("enc_dim", "{tower}.dit_config.enc_dim", 128),
        *(Dim(f"c{k}", f"{{tower}}.dit_config.enc_channels[{k}]", [256, 256, 256, 256, 768]) for k in range(5)),
        Dim("attention_channels", "{tower}.dit_config.enc_attention_channels", 64),
        Dim("scale", "{tower}.dit_config.enc_res2net_scale", 2), Dim("se", "{tower}.dit_config.enc_se_channels", 64),
        Dim("vgan_mel", "{tower}.bigvgan_config.mel_dim", 80), Dim("vgan_c", "{tower}.bigvgan_config.upsample_initial_channel", 1536),
    ),
    parameters=(
        _FREQUENCIES * dit_h + dit_h + dit_h * dit_h + dit_h  # time_embed
        + (embeds + 1) * emb  # text_embed.codec_embed
        + (dit_mel + enc_dim + enc_emb + emb) * dit_h + dit_h  # input_embed.proj
        + dit_mel * c0 * 5 + c0 + _seres2net(c0, c1, 3) + _seres2net(c1, c2, 3) + _seres2net(c2, c3, 3)  # spk_encoder blocks
        + c4 * c4 + c4 + 3 * c4 * attention_channels + attention_channels + attention_channels * c4 + c4  # mfa, asp
        + 2 * c4 * enc_dim + enc_dim  # fc
        + dit_layers * (
            6 * dit_h * dit_h + 6 * dit_h  # attn_norm (AdaLN-Zero)
            + 3 * (dit_h * dit_heads * dit_head_dim + dit_heads * dit_head_dim) + dit_heads * dit_head_dim * dit_h + dit_h  # q, k, v, out
            + 2 * dit_h * ff_mult * dit_h + ff_mult * dit_h + dit_h  # ff
        )
        + 2 * dit_h * dit_h + 2 * dit_h  # norm_out
        + dit_h * dit_mel + dit_mel  # proj_out
        + _bigvgan()
    ),
    embeddings=(embeds + 1) * emb,
    reference=_SOURCE + "Qwen2_5OmniToken2WavModel",
)
