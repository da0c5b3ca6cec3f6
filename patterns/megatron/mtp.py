"""Megatron-LM's ``mtp_num_layers``: the depth of the multi-token-prediction block.

Each depth repeats the kind of the last decoder layer, as Megatron-LM's MTP layers take its MLP.
"""

import attrs

from flopsreg.patterns.mtp import MTP_BLOCK
from flopsreg.plugin import MegatronReader, ModelError, hookimpl


def read(args, decoder):
    """``{"mtp": depth}`` when ``mtp_num_layers`` is set and not 0."""
    depth = args.optional_int("mtp_num_layers")
    if not depth:
        return decoder
    if depth < 0:
        raise ModelError(f"args.mtp_num_layers = {depth}: expected an integer >= 0")
    return attrs.evolve(decoder, blocks={**decoder.blocks, MTP_BLOCK.name: depth})


MTP = MegatronReader(
    name="mtp",
    arguments=("mtp_num_layers",),
    read=read,
    precedence=10,
    summary="mtp_num_layers: that many MTP depths, each a copy of the last decoder layer's kind",
)


@hookimpl
def flopsreg_register_megatron_readers():
    return [MTP]
