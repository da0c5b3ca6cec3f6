"""The logits head: hidden -> vocabulary for every position, tied embeddings or not."""

from flopsreg.plugin import Param, Pattern, h, hookimpl, s

VOCAB = Param(name="vocab", latex="V", meaning="vocabulary size the logits are computed over (vocab_size)")

LOGITS = Pattern(
    name="logits",
    slot="head",
    flags={"lm_head"},
    precedence=10,
    scope="model",
    params=(VOCAB,),
    # The input embedding is a gather (0 FLOPs); tying it to the head does not add a matmul.
    formula=2 * s * h * VOCAB.symbol,
    summary="hidden -> V per position; the embedding lookup is a gather and costs 0",
    reference="Radford et al. 2019 (GPT-2, tied embeddings); Narayanan et al. 2021, appendix (2 B s h V)",
    # The output matrix; the input embedding is its own weight-only pattern (tied: held once).
    weights=h * VOCAB.symbol,
)


@hookimpl
def flopsreg_register_patterns():
    return [LOGITS]
