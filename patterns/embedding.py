"""The input embedding, and the logits head of a model whose head is tied to it.

A lookup is a gather (0 FLOPs), so the embedding holds weights only. With the flag
``tied_embeddings`` the head computes the same logits through the embedding matrix: the matrix
is held once, by the embedding, and the head holds none.
"""

from flopsreg.patterns.logits import LOGITS, VOCAB
from flopsreg.plugin import Pattern, h, hookimpl

INPUT_EMBEDDING = Pattern(
    name="input_embedding",
    slot="embedding",
    flags={"lm_head"},
    precedence=10,
    scope="model",
    params=(VOCAB,),
    formula=0,
    weights=VOCAB.symbol * h,
    summary="the V x h token embedding a language model reads its input through: a gather, no FLOPs",
    reference="Hugging Face model.embed_tokens (nn.Embedding(vocab_size, hidden_size))",
)
TIED_LOGITS = Pattern(
    name="tied_logits",
    slot="head",
    flags={"lm_head", "tied_embeddings"},
    precedence=20,
    scope="model",
    params=(VOCAB,),
    formula=LOGITS.formula,
    summary="hidden -> V per position through the input embedding's matrix (tie_word_embeddings), held once",
    reference="Press and Wolf 2017, 'Using the Output Embedding to Improve Language Models'; Hugging Face tie_word_embeddings",
    weights=0,  # the matrix is the embedding's, held there once
)


@hookimpl
def flopsreg_register_patterns():
    return [INPUT_EMBEDDING, TIED_LOGITS]
