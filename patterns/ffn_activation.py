"""How many hidden-width matmuls a feed-forward network has: 2 plain, 3 gated (SwiGLU, GeGLU).

Gating is independent of dense versus mixture-of-experts, so it is a quantity of its own that
every MLP pattern multiplies by, chosen by the explicit ``gated`` flag.
"""

from flopsreg.plugin import Pattern, hookimpl

PLAIN_FFN = Pattern(
    name="plain_ffn",
    slot="mlp.activation",
    precedence=10,
    produces="ffn_matrices",
    formula=2,
    summary="up and down projections: 2 matmuls of hidden x ffn width (GELU/ReLU MLP)",
    reference="Vaswani et al. 2017, 'Attention Is All You Need', position-wise FFN",
)

GATED_FFN = Pattern(
    name="gated_ffn",
    slot="mlp.activation",
    flags={"gated"},
    precedence=20,
    produces="ffn_matrices",
    formula=3,
    summary="gate, up and down projections: 3 matmuls of hidden x ffn width (SwiGLU, GeGLU)",
    reference="Shazeer 2020, 'GLU Variants Improve Transformer' (arXiv:2002.05202)",
)


@hookimpl
def flopsreg_register_patterns():
    return [PLAIN_FFN, GATED_FFN]
