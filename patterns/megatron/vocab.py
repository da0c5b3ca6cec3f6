"""Megatron-LM's vocabulary arguments: the rows of the output layer, and the sizes conventions read.

Megatron-LM pads the vocabulary to a multiple of ``make_vocab_size_divisible_by`` x TP and its
output layer computes every padded row, so ``vocab`` (what ``exact`` counts) is
``padded_vocab_size`` when given, as Megatron-LM counts it (``padded_vocab``). slime counts
``args.vocab_size`` (``unpadded_vocab``, flag ``vocab_padding``). A given ``padded_vocab_size``
sets flag ``padded_vocab_given``, so ``megatron`` counts it rather than padding ``vocab`` itself.
"""

import attrs

from flopsreg.plugin import MegatronReader, ModelError, hookimpl

GIVEN = "padded_vocab_given"  # the model states padded_vocab: the megatron convention counts that, not its own padding


def _vocabularies(args) -> tuple[dict[str, int], set[str]]:
    vocab = args.optional_int("vocab_size")
    padded = args.optional_int("padded_vocab_size")
    if padded is None:
        if vocab is None:
            raise ModelError("args.vocab_size: missing (and no padded_vocab_size); the logits need a vocabulary")
        return {"vocab": vocab}, set()
    if vocab == padded:
        return {"vocab": padded, "padded_vocab": padded}, {GIVEN}
    if vocab is not None and padded < vocab:
        raise ModelError(f"args.padded_vocab_size = {padded}: smaller than args.vocab_size = {vocab}")
    unpadded = {} if vocab is None else {"unpadded_vocab": vocab}
    return {"vocab": padded, "padded_vocab": padded, **unpadded}, {"vocab_padding", GIVEN}


def read(args, decoder):
    """The output layer (flag ``lm_head``) and its vocabularies."""
    params, flags = _vocabularies(args)
    return attrs.evolve(decoder, params={**decoder.params, **params}, flags=decoder.flags | flags | {"lm_head"})


VOCABULARY = MegatronReader(
    name="vocabulary",
    arguments=("vocab_size", "padded_vocab_size"),
    read=read,
    precedence=10,
    summary="the logits over padded_vocab_size (else vocab_size); vocab_size kept for slime when they differ",
)


@hookimpl
def flopsreg_register_megatron_readers():
    return [VOCABULARY]
