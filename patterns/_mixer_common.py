"""What the non-attention sequence mixers share (private: not a plugin): their convolution
kernel and scan-chunk parameters, the padded length of a chunked scan, and the pattern factory
of a mixer's short causal convolution. (A mixer's layers have no attention slots: its flag
selects the ``mixer`` slot group, :mod:`flopsreg.patterns.token_mixers`.)"""

from __future__ import annotations

import sympy

from flopsreg.plugin import Param, Pattern, s

CONV_KERNEL = Param(
    name="conv_kernel",
    latex=r"d_{\mathrm{conv}}",
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

# Every mixer fills the same mixer.* slots with its own precedence (patterns of two mixers would
# tie where a layer set both flags); its chunked or padded variants add VARIANT.
VARIANT = 100


def short_conv(
    flag: str, mixer: str, channels: sympy.Expr, params: tuple[Param, ...], bias: bool, reference: str, precedence: int,
    slot: str = "mixer.conv",
) -> list[Pattern]:
    """The mixer's depthwise causal convolution over *channels* (a formula in *params*): K multiply-adds per channel and
    output token, over the s outputs a causal kernel needs (*flag*), or over the s + K - 1 that
    torch's ``F.conv1d(padding=K - 1)`` fallback computes before slicing (*flag* + ``padded_conv``).
    *slot* is ``mixer.conv`` for a mixer's own conv, another slot for convs beside attention (Inkling)."""
    weights = channels * (K + 1) if bias else channels * K  # K taps per channel, and a bias
    held = "weights and a bias" if bias else "weights, no bias"
    return [
        Pattern(
            name=f"{flag}_conv",
            slot=slot,
            flags={flag},
            precedence=precedence,
            params=(*params, CONV_KERNEL),
            formula=2 * s * channels * K,
            weights=weights,
            state=channels * (K - 1),  # the last K - 1 inputs of every channel, kept per sequence
            summary=f"{mixer} short causal conv: K taps per channel and token, 2 s C K ({held})",
            reference=reference,
        ),
        Pattern(
            name=f"{flag}_padded_conv",
            slot=slot,
            flags={flag, "padded_conv"},
            precedence=precedence + VARIANT,
            params=(*params, CONV_KERNEL),
            formula=2 * (s + K - 1) * channels * K,
            weights=weights,
            state=channels * (K - 1),  # the last K - 1 inputs of every channel, kept per sequence
            summary=f"{mixer} short conv as torch's conv1d fallback runs it: padded by K - 1 on both sides, s + K - 1 outputs",
            reference=reference + "; torch.nn.functional.conv1d(padding=K - 1) then [..., :s] (the causal_conv1d fallback)",
        ),
    ]
