"""The ``slime`` convention: slime's ``calculate_fwd_flops(seqlens, args)`` as formulas.

Reproduces ``slime/utils/flops_utils.py`` (2026, after PR #1980): forward only, per sequence,
a causal core of s^2/2 pairs on every layer, the output projection as 2 s h^2 whatever the
head count, 3 FFN matmuls always, no router, no MTP, no attention output gate; logits over the
unpadded vocabulary and MLA only with ``multi_latent_attention``, as in the exact patterns.
"""

from flopsreg import Convention, Pattern, hookimpl
from flopsreg.patterns.moe import EXPERT_HIDDEN, TOP_K
from flopsreg.symbols import f, h, s

SOURCE = "slime slime/utils/flops_utils.py, calculate_fwd_flops (2026, after PR #1980)"
PRECEDENCE = 100

SLIME = Convention(
    name="slime",
    summary="slime's RL-training count: causal s^2/2, o-proj 2sh^2, always 3 FFN matmuls, no router, no MTP",
    reference=SOURCE,
)


def _zero(name: str, slot: str, flag: str, what: str, scope: str = "layer") -> Pattern:
    return Pattern(
        name=name,
        slot=slot,
        flags={"slime", flag},
        precedence=PRECEDENCE,
        scope=scope,
        formula=0,
        summary=f"{what} is not counted",
        reference=SOURCE,
    )


PATTERNS = [
    Pattern(
        name="slime_causal",
        slot="attention.mask",
        flags={"slime"},
        precedence=PRECEDENCE,
        produces="pairs",
        formula=s**2 / 2,
        summary="s^2/2 pairs on every layer: sliding windows and chunks are counted as full causal",
        reference=SOURCE,
    ),
    Pattern(
        name="slime_output_projection",
        slot="attention.output",
        flags={"slime"},
        precedence=PRECEDENCE,
        formula=2 * s * h * h,
        summary="output projection as 2 s h^2, as if heads x v width were always hidden",
        reference=SOURCE,
    ),
    Pattern(
        name="slime_ffn",
        slot="mlp.activation",
        flags={"slime"},
        precedence=PRECEDENCE,
        produces="ffn_matrices",
        formula=3,
        summary="3 FFN matmuls whether the MLP is gated or not",
        reference=SOURCE,
    ),
    Pattern(
        name="slime_moe",
        slot="mlp",
        flags={"slime", "moe"},
        precedence=PRECEDENCE,
        params=(TOP_K, EXPERT_HIDDEN),
        formula=2 * s * TOP_K.symbol * h * EXPERT_HIDDEN.symbol * f,
        summary="top-k routed experts; the router matmul is not counted",
        reference=SOURCE,
    ),
    _zero("slime_shared_expert_gate", "mlp.shared_gate", "shared_expert_gate", "the shared-expert gate"),
    _zero("slime_output_gate", "attention.gate", "output_gate", "the attention output gate"),
    _zero("slime_mtp", "mtp", "mtp", "multi-token prediction", scope="model"),
]


@hookimpl
def flopsreg_register_conventions():
    return [SLIME]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
