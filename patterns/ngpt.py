"""nGPT's learned scales (Dory): the hidden states live on the unit sphere, every norm is an L2
normalisation without weights, and the model learns per-channel scales instead. They scale
elementwise (no matmul), so these patterns hold weights only: FLOPs are unchanged."""

from flopsreg.patterns.dense_mlp import FFN_HIDDEN
from flopsreg.patterns.logits import VOCAB
from flopsreg.patterns.quantities import d_qk, d_v
from flopsreg.plugin import Pattern, h, hookimpl, n_h

FLAG = "ngpt_scales"
LOGIT_SCALE_FLAG = "logit_scale"

NGPT_SCALES = Pattern(
    name="ngpt_scales",
    slot="norms",
    flags={FLAG},
    precedence=55,
    params=(FFN_HIDDEN,),
    formula=0,
    weights=2 * h + n_h * d_qk + n_h * d_v + 2 * FFN_HIDDEN.symbol,
    summary="a layer's nGPT scales in place of norm weights: two residual rates of h, the query scale (n_h d_qk), "
    "the output gate's scale (n_h d_v) and the MLP's gate and up scales (F each); no FLOPs counted",
    reference="Loshchilov et al. 2024, 'nGPT' (arXiv:2410.01131); Hugging Face DoryDecoderLayer lambda_1, lambda_2, "
    "DoryAttention sqk, s_gate, DoryMLP suv_gate, suv_up (modeling_dory.py)",
)
LOGIT_SCALE = Pattern(
    name="logit_scale",
    slot="head.scale",
    flags={"lm_head", LOGIT_SCALE_FLAG},
    precedence=10,
    scope="model",
    params=(VOCAB,),
    formula=0,
    weights=VOCAB.symbol,
    summary="a learned scale of V on the logits (the multiply is not counted)",
    reference="Loshchilov et al. 2024, 'nGPT' (arXiv:2410.01131), s_z; Hugging Face DoryLMHead.logit_scale (modeling_dory.py)",
)


@hookimpl
def flopsreg_register_patterns():
    return [NGPT_SCALES, LOGIT_SCALE]
