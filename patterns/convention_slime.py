"""The ``slime`` convention: slime's ``calculate_fwd_flops(seqlens, args)`` as formulas.

Reproduces ``slime/utils/flops_utils.py`` (2026, after PR #1980): forward only, per sequence,
a causal core of s^2/2 pairs on every layer, the output projection as 2 s h^2 whatever the
head count, 3 FFN matmuls always, no router, no MTP, no attention output gate; logits over the
unpadded vocabulary and MLA only with ``multi_latent_attention``, as in the exact patterns.
"""

from flopsreg import Convention, Pattern, hookimpl
from flopsreg.patterns._convention_rules import PRECEDENCE, half_square_causal, not_counted, routerless_moe
from flopsreg.symbols import h, s

SOURCE = "slime slime/utils/flops_utils.py, calculate_fwd_flops (2026, after PR #1980)"

SLIME = Convention(
    name="slime",
    summary="slime's RL-training count: causal s^2/2, o-proj 2sh^2, always 3 FFN matmuls, no router, no MTP",
    reference=SOURCE,
)


PATTERNS = [
    half_square_causal("slime", SOURCE),
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
    routerless_moe("slime", SOURCE),
    not_counted("slime", "shared_expert_gate", "mlp.shared_gate", {"shared_expert_gate"}, "the shared-expert gate", SOURCE),
    not_counted("slime", "output_gate", "attention.gate", {"output_gate"}, "the attention output gate", SOURCE),
    not_counted("slime", "mtp", "mtp", {"mtp"}, "multi-token prediction", SOURCE, scope="model"),
]


@hookimpl
def flopsreg_register_conventions():
    return [SLIME]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
