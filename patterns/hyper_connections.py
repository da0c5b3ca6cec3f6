"""Manifold-constrained hyper-connections (mHC, DeepSeek-V4): the residual stream widened to n
streams of hidden, mixed around each sublayer by weights a linear map of all n h features computes;
and HY-V4's independent hyper-connections (iHC), the same without the stream-mixing comb."""

from flopsreg.plugin import Param, Pattern, h, hookimpl, s

HC_MULT = Param(name="hc_mult", latex=r"n_{\mathrm{hc}}", meaning="residual streams of the hyper-connections (hc_mult)")
n = HC_MULT.symbol
_REFERENCE = (
    "Xie et al. 2026, mHC; DeepSeek-AI 2026, DeepSeek-V4 (section 2.2); transformers "
    "models/deepseek_v4/modeling_deepseek_v4.py DeepseekV4HyperConnection, DeepseekV4HyperHead"
)

MHC = Pattern(
    name="mhc",
    slot="residual_mixer",
    flags={"mhc"},
    precedence=10,
    params=(HC_MULT,),
    # Around attention and around the MLP: fn maps the n h streams to the (2 + n) n mixing
    # weights (pre, post, comb), then comb^T (n x n) mixes the n streams of width h. Collapsing
    # with pre, expanding with post and the Sinkhorn iterations are elementwise.
    formula=2 * (2 * s * n * h * (2 + n) * n + 2 * s * n * n * h),
    # Per sublayer: fn, its base ((2 + n) n) and the 3 scales.
    weights=2 * ((2 + n) * n * n * h + (2 + n) * n + 3),
    summary="two mHC per layer: fn (n h -> (2+n) n weights) and the comb^T n x n mix of the n streams",
    reference=_REFERENCE,
)
IHC = Pattern(
    name="ihc",
    slot="residual_mixer",
    flags={"mhc", "ihc"},
    precedence=15,
    params=(HC_MULT,),
    # Around attention and around the MLP: fn maps the n h streams to the 2n weights (pre, post);
    # collapsing with pre and adding post x output to every stream are elementwise. No comb, no Sinkhorn.
    formula=2 * (2 * s * n * h * 2 * n),
    # Per sublayer: fn (2n x n h), its base (2n) and the 2 scales.
    weights=2 * (2 * n * n * h + 2 * n + 2),
    summary="two iHC per layer: fn (n h -> 2n weights: pre and post), no comb mixing the streams",
    reference="transformers models/hy_v4/modeling_hy_v4.py HYV4HyperConnection (the DeepSeek-V4 form without comb)",
)
MHC_HEAD = Pattern(
    name="mhc_head",
    slot="residual_mixer.head",
    flags={"mhc"},
    precedence=10,
    scope="model",
    params=(HC_MULT,),
    # hc_fn: n h -> n collapse weights once after the last layer; the weighted sum is elementwise.
    formula=2 * s * n * h * n,
    weights=n * n * h + n + 1,
    summary="after the last layer: hc_fn (n h -> n weights) collapsing the n streams to one",
    reference=_REFERENCE,
)
MHC_MEAN_HEAD = Pattern(
    name="mhc_mean_head",
    slot="residual_mixer.head",
    flags={"mhc", "mhc_mean_head"},
    precedence=15,
    scope="model",
    # GLM-5.3-Flash collapses the n streams with an unweighted mean: elementwise, no weights.
    formula=0,
    weights=0,
    summary="after the last layer: the n streams averaged (GLM-5.3-Flash), no matmul and no weights",
    reference="transformers models/glm5_next/modeling_glm5_next.py Glm5NextTextHyperHead",
)


@hookimpl
def flopsreg_register_patterns():
    return [MHC, IHC, MHC_HEAD, MHC_MEAN_HEAD]
