"""What the non-attention sequence mixers share (private: not a plugin): their convolution
kernel and scan-chunk parameters, the padded length of a chunked scan, and two pattern
factories, the short causal convolution of a mixer and the zero softmax-attention slots of a
layer whose mixer is not softmax attention."""

from __future__ import annotations

import sympy

from flopsreg import Param, Pattern
from flopsreg.declarations.symbols import s

CONV_KERNEL = Param(
    name="conv_kernel",
    latex="K",
    meaning="short-convolution taps (linear_conv_kernel_dim, conv_kernel, mamba_d_conv)",
)
SCAN_CHUNK = Param(
    name="scan_chunk",
    latex="Q",
    meaning="tokens per scan chunk (64 in transformers' GDN and KDA, chunk_size in Mamba2)",
)
K, Q = CONV_KERNEL.symbol, SCAN_CHUNK.symbol

CHUNKS = sympy.ceiling(s / Q)
"""Chunks of Q tokens a chunked scan runs over: s padded to CHUNKS x Q tokens."""
PADDED_LATEX = r"L = \left\lceil s/Q \right\rceil Q"

# The built-in attention patterns fill attention.* slots at precedences up to 110 (conventions);
# a layer whose mixer is not softmax attention empties them above all of those, at this plus the
# mixer's own precedence. Each mixer has its own precedence (patterns of two mixers would tie
# where a layer set both flags); its chunked or padded variants add VARIANT.
NO_ATTENTION_PRECEDENCE = 1000
VARIANT = 100
# The weight-only attention slots are among them: a model-wide flag (qk_norm, attention_bias) puts
# nothing on a layer without softmax attention.
ATTENTION_SLOTS = (
    "attention.query", "attention.projection", "attention.core", "attention.gate", "attention.output",
    "attention.qk_norm", "attention.bias", "attention.sinks",
)


def without_attention(flag: str, mixer: str, reference: str, precedence: int) -> list[Pattern]:
    """Zero-FLOP patterns for every attention slot that holds weights or does matmuls, under
    *flag*, at NO_ATTENTION_PRECEDENCE + *precedence*: a layer whose mixer is *mixer* runs no
    softmax attention (its mask is then unused)."""
    return [
        Pattern(
            name=f"{flag}_no_{slot.removeprefix('attention.')}",
            slot=slot,
            flags={flag},
            precedence=NO_ATTENTION_PRECEDENCE + precedence,
            formula=0,
            summary=f"no softmax attention in a {mixer} layer: {slot} counts nothing",
            reference=reference,
        )
        for slot in ATTENTION_SLOTS
    ]


def short_conv(
    flag: str, mixer: str, channels: sympy.Expr, params: tuple[Param, ...], bias: bool, reference: str, precedence: int
) -> list[Pattern]:
    """The mixer's depthwise causal convolution over *channels* (a formula in *params*): K multiply-adds per channel and
    output token, over the s outputs a causal kernel needs (*flag*), or over the s + K - 1 that
    torch's ``F.conv1d(padding=K - 1)`` fallback computes before slicing (*flag* + ``padded_conv``)."""
    weights = channels * (K + 1) if bias else channels * K  # K taps per channel, and a bias
    held = "weights and a bias" if bias else "weights, no bias"
    return [
        Pattern(
            name=f"{flag}_conv",
            slot="mixer.conv",
            flags={flag},
            precedence=precedence,
            params=(*params, CONV_KERNEL),
            formula=2 * s * channels * K,
            weights=weights,
            summary=f"{mixer} short causal conv: K taps per channel and token, 2 s C K ({held})",
            reference=reference,
        ),
        Pattern(
            name=f"{flag}_padded_conv",
            slot="mixer.conv",
            flags={flag, "padded_conv"},
            precedence=precedence + VARIANT,
            params=(*params, CONV_KERNEL),
            formula=2 * (s + K - 1) * channels * K,
            weights=weights,
            summary=f"{mixer} short conv as torch's conv1d fallback runs it: padded by K - 1 on both sides, s + K - 1 outputs",
            reference=reference + "; torch.nn.functional.conv1d(padding=K - 1) then [..., :s] (the causal_conv1d fallback)",
        ),
    ]
