"""Rules that several conventions share: written once, named per convention.

Not a plugin itself (the leading underscore keeps it out of the built-in plugin list); the
convention modules call these factories with their own flag and source.
"""

from __future__ import annotations

from collections.abc import Iterable

from flopsreg.patterns.moe import EXPERT_HIDDEN, EXPERTS, MOE, TOP_K
from flopsreg.patterns.quantities import f
from flopsreg.plugin import Pattern, h, s

PRECEDENCE = 100  # above every exact pattern of the same slot


def half_square_causal(convention: str, source: str) -> Pattern:
    """s^2/2 pairs on every layer, as "causal" counts usually write it; windows ignored."""
    return Pattern(
        name=f"{convention}_causal",
        slot="attention.mask",
        flags={convention},
        precedence=PRECEDENCE,
        produces="pairs",
        formula=s**2 / 2,
        summary="s^2/2 pairs on every layer: sliding windows and chunks are counted as full causal",
        reference=source,
    )


def routerless_moe(convention: str, source: str) -> Pattern:
    """Top-k routed experts without the router matmul."""
    return Pattern(
        name=f"{convention}_moe",
        slot="mlp",
        flags={convention, "moe"},
        precedence=PRECEDENCE,
        params=(EXPERTS, TOP_K, EXPERT_HIDDEN),
        constraints=MOE.constraints,  # top_k <= experts, as for the exact rule
        formula=2 * s * TOP_K.symbol * h * EXPERT_HIDDEN.symbol * f,
        summary="top-k routed experts; the router matmul hidden -> experts is not counted",
        reference=source,
        # What the rule counts: the experts, not the router (which the model still holds).
        weights=EXPERTS.symbol * f * h * EXPERT_HIDDEN.symbol,
        active_weights=TOP_K.symbol * f * h * EXPERT_HIDDEN.symbol,
    )


def not_counted(
    convention: str, name: str, slot: str, flags: Iterable[str], what: str, source: str, scope: str = "layer"
) -> Pattern:
    """A slot the convention leaves out: zero FLOPs where *flags* are set."""
    return Pattern(
        name=f"{convention}_{name}",
        slot=slot,
        flags={convention, *flags},
        precedence=PRECEDENCE,
        scope=scope,
        formula=0,
        summary=f"{what} is not counted",
        reference=source,
    )


# The mixer layers of the 2026 architectures (Gated DeltaNet, KDA, Mamba, short convolutions, lightning attention,
# Gated Delta Product).
# A convention whose framework counts every layer as softmax attention refuses them, naming it.
MIXER_FLAGS = ("gated_deltanet", "kda", "mamba1", "mamba2", "short_conv", "lightning", "gated_delta_product")
MIXER_REFUSAL_PRECEDENCE = 10_000  # above every mixer pattern of the mixer.projection slot


def refuses_layers(
    convention: str, flags: Iterable[str], why: str, source: str, *, what: str = "{}", precedence: int = MIXER_REFUSAL_PRECEDENCE,
    slot: str = "mixer.projection",
) -> list[Pattern]:
    """One refusal per flag: a layer with it (*what*, e.g. ``"a {} mixer"``) cannot be counted
    *convention*'s way (*why*); precedences from *precedence* up, distinct, so a layer with two is refused once.
    They fill *slot*, which such a layer must have (a mixer's layers have the mixer slots)."""
    return [
        Pattern(
            name=f"{convention}_{flag}_layers",
            slot=slot,
            flags={convention, flag},
            precedence=precedence + i,
            formula=0,
            summary=f"{convention}: {flag} layers are not counted",
            reference=source,
            refusal=f"{why}; this layer has {what.format(flag)}, which it never counts: a refusal, not a guess",
        )
        for i, flag in enumerate(flags)
    ]


def refuses_mixers(convention: str, why: str, source: str) -> list[Pattern]:
    """:func:`refuses_layers` for the linear-attention and SSM mixers."""
    return refuses_layers(convention, MIXER_FLAGS, why, source, what="a {} mixer")
