"""A prompt of learned tokens prepended inside the model (CPM-Ant): every layer runs over
s + prompt_length positions, the head over the s input tokens.

The prompt's embeddings are rows of the input embedding, one set of prompt_length rows per
prompt type after the V token rows: one matrix, weights, no FLOPs (a gather).
"""

from flopsreg.patterns.logits import VOCAB
from flopsreg.plugin import Param, Pattern, h, hookimpl, s

PROMPT_LENGTH = Param(
    name="prompt_length", latex=r"s_{\mathrm{p}}", meaning="learned prompt tokens a model prepends to its input (prompt_length)", minimum=0
)
PROMPT_TYPES = Param(
    name="prompt_types", latex=r"n_{\mathrm{p}}", meaning="prompt types whose prompt_length embedding rows a model holds (prompt_types)", minimum=0
)

PROMPT_PREFIX = Pattern(
    name="prompt_prefix",
    slot="layer_positions",
    flags={"prompt_prefix"},
    precedence=10,
    params=(PROMPT_LENGTH,),
    produces="layer_positions",
    formula=s + PROMPT_LENGTH.symbol,
    summary="the layer runs over the s input tokens after prompt_length prepended prompt tokens",
    reference="Hugging Face CpmAntModel.forward (transformers 5.24): prompt ids concatenated ahead of input_ids, dropped after the encoder",
)
PROMPT_EMBEDDINGS = Pattern(
    name="prompt_embeddings",
    slot="embedding",
    flags={"lm_head", "prompt_embeddings"},
    precedence=20,
    scope="model",
    params=(VOCAB, PROMPT_LENGTH, PROMPT_TYPES),
    formula=0,
    weights=(VOCAB.symbol + PROMPT_TYPES.symbol * PROMPT_LENGTH.symbol) * h,
    summary="the input embedding with prompt rows: (V + prompt_types x prompt_length) x h, a gather, no FLOPs",
    reference="Hugging Face CpmAntModel.input_embedding: nn.Embedding(vocab_size + prompt_types * prompt_length, hidden_size)",
)


@hookimpl
def flopsreg_register_patterns():
    return [PROMPT_PREFIX, PROMPT_EMBEDDINGS]
