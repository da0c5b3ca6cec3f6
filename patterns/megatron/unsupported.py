"""Megatron-LM's branches flopsreg has no patterns for yet, refused by name.

The refusals claim their arguments at precedence 0, so a plugin that reads one of them at any
higher precedence takes it over, and the others stay refused. Gated DeltaNet, hybrid stacks and
latent MoE are read by ``megatron_gdn``, ``megatron_hybrid`` and ``megatron_latent_moe``, which
refuse the variants they cannot count (``gdn2``, ``dsa``, ``+`` and ``D`` layers) themselves.
Left here: the deprecated ``mtp_hybrid_override_pattern``, which Megatron-LM's ``validate_args``
folds into ``hybrid_layer_pattern`` (arguments read before that are refused, not guessed).
"""

from flopsreg.plugin import MegatronReader, ModelError, hookimpl

# Each refused argument and what it switches on.
UNSUPPORTED = {
    "mtp_hybrid_override_pattern": "the legacy MTP pattern of hybrid models (validate_args folds it into "
    "hybrid_layer_pattern after a '/'; pass the arguments after validate_args)",
}


def read(args, decoder):
    """Refuse the run if it sets any of the arguments this reader won."""
    for argument, what in UNSUPPORTED.items():
        value = args.get(argument)
        if value:
            raise ModelError(f"args.{argument} = {value!r}: {what} is not supported; this run is refused")
    return decoder


REFUSALS = MegatronReader(
    name="unsupported",
    arguments=tuple(UNSUPPORTED),
    read=read,
    precedence=0,
    summary="refuses the legacy mtp_hybrid_override_pattern (folded into hybrid_layer_pattern by validate_args)",
)


@hookimpl
def flopsreg_register_megatron_readers():
    return [REFUSALS]
