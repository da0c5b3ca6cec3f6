"""A relative position bias computed from the hidden states (Inkling's ``InklingRelativeLogits``):
r_proj maps each token to d_rel states per head, whose product with a learned bank of d_rel
profiles over E backward distances gives one bias per (head, distance), gathered onto the logits.

transformers computes the bias of all E distances for every token, whether or not a key lies at
that distance (the gather and the masking are no matmul): 2 s n_h d_rel E, with E = rel_extent on
full layers and the sliding window on sliding ones."""

from flopsreg.plugin import Param, Pattern, h, hookimpl, n_h, s

REL_DIM = Param(name="rel_dim", latex=r"d_{\mathrm{rel}}", meaning="relative states per head that mix the bias profiles (d_rel)")
REL_EXTENT = Param(
    name="rel_extent", latex=r"E_{\mathrm{rel}}", meaning="backward distances with a learned bias (rel_extent; the window on sliding layers)"
)
r, E = REL_DIM.symbol, REL_EXTENT.symbol

RELATIVE_LOGITS = Pattern(
    name="relative_logits",
    slot="attention.position_bias",
    flags={"relative_logits"},
    precedence=10,
    params=(REL_DIM, REL_EXTENT),
    formula=2 * s * h * n_h * r + 2 * s * n_h * r * E,
    weights=h * n_h * r + r * E,
    summary="r_proj: hidden -> heads x d_rel, then those states times a d_rel x E bank: a bias per head for all E distances",
    reference="transformers 5.24 modeling_inkling.py InklingAttention.r_proj, InklingRelativeLogits (relative_states @ proj)",
)


@hookimpl
def flopsreg_register_patterns():
    return [RELATIVE_LOGITS]
