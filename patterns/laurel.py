"""LAuReL (Gemma 3n): a learned low-rank residual branch beside the attention, hidden -> rank ->
hidden on the normed input."""

from flopsreg.plugin import Param, Pattern, h, hookimpl, s

LAUREL_RANK = Param(name="laurel_rank", latex=r"r_{\mathrm{L}}", meaning="rank of the LAuReL branch (laurel_rank)")
r = LAUREL_RANK.symbol

LAUREL = Pattern(
    name="laurel",
    slot="residual_branch",
    flags={"laurel"},
    precedence=10,
    params=(LAUREL_RANK,),
    formula=2 * s * h * r + 2 * s * r * h,
    # linear_left, linear_right and post_laurel_norm (h).
    weights=2 * h * r + h,
    summary="linear_left hidden -> rank, linear_right rank -> hidden, added to the attention's residual",
    reference=(
        "Menghani et al. 2025, 'LAuReL: Learned Augmented Residual Layer' (ICML); transformers "
        "models/gemma3n/modeling_gemma3n.py Gemma3nTextLaurelBlock"
    ),
)


@hookimpl
def flopsreg_register_patterns():
    return [LAUREL]
