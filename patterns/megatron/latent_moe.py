"""Megatron-LM's ``moe_latent_size``: routed experts on a latent width (Nemotron 3's latent MoE).

Every MoE layer (``moe_layer_freq``, or a hybrid pattern's ``E``) projects hidden -> latent,
routes through its top-k experts of ``moe_ffn_hidden_size`` on the latent width, and projects
back; shared experts and the router stay on the hidden width. Megatron-LM requires
``num_experts`` with it.
"""

import attrs

from flopsreg.patterns.latent_moe import FLAG, LATENT
from flopsreg.plugin import MegatronReader, ModelError, hookimpl


def read(args, decoder):
    """The MoE kind on the latent width, when ``moe_latent_size`` is set."""
    latent = args.optional_int("moe_latent_size")
    if latent is None:
        return decoder
    if latent < 1:
        raise ModelError(f"args.moe_latent_size = {latent}: expected an integer >= 1")
    if "moe" not in decoder.mlp_kinds:
        raise ModelError(f"args.moe_latent_size = {latent}: latent MoE needs args.num_experts (Megatron-LM requires it)")
    flags, params = decoder.mlp_kinds["moe"]
    moe = (frozenset(flags) | {FLAG}, {**params, LATENT.name: latent})
    return attrs.evolve(decoder, mlp_kinds={**decoder.mlp_kinds, "moe": moe})


LATENT_MOE = MegatronReader(
    name="latent_moe",
    arguments=("moe_latent_size",),
    read=read,
    precedence=20,  # after the MLP reader (10), whose MoE kind it puts on the latent width
    summary="moe_latent_size: the routed experts of every MoE layer on that latent width, with its two projections",
)


@hookimpl
def flopsreg_register_megatron_readers():
    return [LATENT_MOE]
