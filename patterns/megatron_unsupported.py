"""Megatron-LM's branches flopsreg has no patterns for yet, refused by name.

The refusals claim their arguments at precedence 0, so a plugin that reads one of them (a
Gated DeltaNet reader for ``experimental_attention_variant``, say) at any higher precedence
takes it over, and the others stay refused.
"""

from flopsreg import ModelError, hookimpl
from flopsreg.declare import MegatronReader

# Each refused argument and what it switches on.
UNSUPPORTED = {
    "experimental_attention_variant": "linear attention (Gated DeltaNet)",
    "linear_attention_freq": "linear attention (Gated DeltaNet)",
    "hybrid_layer_pattern": "hybrid Mamba/attention stacks",
    "hybrid_override_pattern": "hybrid Mamba/attention stacks",
    "moe_latent_size": "latent MoE",
}


def read(args, decoder):
    """Refuse the run if it sets any of the arguments this reader won."""
    for argument, what in UNSUPPORTED.items():
        value = args.get(argument)
        if value:
            raise ModelError(
                f"args.{argument} = {value!r}: {what} is not supported yet; it comes with the 2026 "
                "architectures (Gated DeltaNet, Mamba hybrids, latent MoE), until then this run is refused"
            )
    return decoder


REFUSALS = MegatronReader(
    name="unsupported",
    arguments=tuple(UNSUPPORTED),
    read=read,
    precedence=0,
    summary="refuses Gated DeltaNet, hybrid Mamba stacks and latent MoE until their patterns exist",
)


@hookimpl
def flopsreg_register_megatron_readers():
    return [REFUSALS]
