"""The output of a reversible residual stack (RevNet; Reformer): two streams of h, concatenated
after the last layer into 2h, which the final LayerNorm and the logits head read.

The layers themselves count as usual (Y1 = X1 + Attention(X2), Y2 = X2 + FFN(Y1): the same
matmuls over h); only the width of what follows the last layer doubles.
"""

from flopsreg.patterns.logits import VOCAB
from flopsreg.plugin import Pattern, h, hookimpl, s

REVERSIBLE_FINAL_LAYERNORM = Pattern(
    name="reversible_final_layernorm",
    slot="final_norm",
    flags={"norms", "norm_bias", "reversible"},
    precedence=25,
    scope="model",
    formula=0,
    weights=2 * (2 * h),
    summary="the LayerNorm (scale and bias) of the two concatenated streams, 2h wide (no FLOPs counted)",
    reference="Hugging Face ReformerEncoder.layer_norm: nn.LayerNorm(2 * hidden_size) (transformers 5.24)",
)
REVERSIBLE_LOGITS = Pattern(
    name="reversible_logits",
    slot="head",
    flags={"lm_head", "reversible"},
    precedence=15,
    scope="model",
    params=(VOCAB,),
    formula=2 * s * (2 * h) * VOCAB.symbol,
    # ReformerOnlyLMHead also holds a bias vector of V that its forward never adds (decoder has its own).
    weights=2 * h * VOCAB.symbol + VOCAB.symbol,
    summary="logits from the two concatenated streams: 2h -> V per position (and a held, unused bias of V)",
    reference="Hugging Face ReformerOnlyLMHead: decoder nn.Linear(2 * hidden_size, vocab_size) and bias (transformers 5.24)",
)


@hookimpl
def flopsreg_register_patterns():
    return [REVERSIBLE_FINAL_LAYERNORM, REVERSIBLE_LOGITS]
