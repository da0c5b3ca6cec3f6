"""A dense feed-forward network of one width."""

from flopsreg.patterns.quantities import f
from flopsreg.plugin import Param, Pattern, h, hookimpl, s

FFN_HIDDEN = Param(name="ffn_hidden", latex=r"d_{\mathrm{ff}}", meaning="inner width of a dense MLP (intermediate_size, ffn_hidden_size)")

DENSE_MLP = Pattern(
    name="dense_mlp",
    slot="mlp",
    flags={"mlp"},
    precedence=10,
    params=(FFN_HIDDEN,),
    formula=2 * s * h * FFN_HIDDEN.symbol * f,
    summary="f matmuls of hidden x F per token (f = 2 plain, 3 gated)",
    reference="Vaswani et al. 2017, 'Attention Is All You Need', position-wise FFN",
    weights=f * h * FFN_HIDDEN.symbol,
)


def dense_mlp(width: int) -> tuple[frozenset[str], dict[str, int]]:
    """The flags and parameters of a dense MLP of *width*: what a reader gives a layer kind."""
    return DENSE_MLP.flags, {FFN_HIDDEN.name: width}


@hookimpl
def flopsreg_register_patterns():
    return [DENSE_MLP]
