"""Alternating updates (AltUp, Gemma 3n): the residual stream widened to n copies of hidden, of
which one runs the layer; learned n x n maps, weighted per token by a router, predict all n
before the layer and correct them from its output after it."""

from flopsreg.plugin import Param, Pattern, h, hookimpl, s

ALTUP_INPUTS = Param(name="altup_inputs", latex=r"n_{\mathrm{alt}}", meaning="residual copies AltUp keeps (altup_num_inputs)")
n = ALTUP_INPUTS.symbol
_REFERENCE = (
    "Baykal et al. 2023, 'Alternating Updates for Efficient Transformers' (NeurIPS); transformers "
    "models/gemma3n/modeling_gemma3n.py Gemma3nTextAltUp, Gemma3nTextModel.altup_projections"
)

ALTUP = Pattern(
    name="altup",
    slot="residual_mixer",
    flags={"altup"},
    precedence=20,
    params=(ALTUP_INPUTS,),
    # The router hidden -> n, run before the layer (predict) and after it (correct);
    # prediction_coefs n -> n^2 and each token's n x n mix of its n copies of hidden;
    # correction_coefs n -> n. Scaling the innovation per copy is elementwise.
    formula=2 * (2 * s * h * n) + 2 * s * n * n**2 + 2 * s * h * n * n + 2 * s * n * n,
    # modality_router, prediction_coefs, correction_coefs, router_norm (h) and correct_output_scale (h).
    weights=h * n + n**3 + n**2 + 2 * h,
    summary="per layer: router hidden -> n twice, prediction coefs n -> n^2, the n x n mix of n copies of hidden, correction coefs",
    reference=_REFERENCE,
)
ALTUP_HEAD = Pattern(
    name="altup_head",
    slot="residual_mixer.head",
    flags={"altup"},
    precedence=20,
    scope="model",
    params=(ALTUP_INPUTS,),
    # altup_projections make the n - 1 extra copies from the embedding; altup_unembed_projections
    # bring them back before the final mean: 2 (n - 1) hidden x hidden matmuls per token.
    formula=2 * (n - 1) * 2 * s * h * h,
    weights=2 * (n - 1) * h * h,
    summary="once per token: n - 1 projections hidden -> hidden making the copies, n - 1 bringing them back",
    reference=_REFERENCE,
)


@hookimpl
def flopsreg_register_patterns():
    return [ALTUP, ALTUP_HEAD]
