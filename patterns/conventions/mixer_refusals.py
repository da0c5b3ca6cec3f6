"""Megatron-LM, Megatron-Bridge and slime refuse DeepSeek-V4's and Gemma 3n's layers: none of
their formulas has a branch for compressed KV entries (their compressors and indexer),
hyper-connections, AltUp or LAuReL, so counting such a layer their way would be a guess."""

from flopsreg.patterns.altup import ALTUP
from flopsreg.patterns.conventions._rules import MIXER_REFUSAL_PRECEDENCE, refuses_layers
from flopsreg.patterns.conventions.megatron import SOURCE as MEGATRON_SOURCE
from flopsreg.patterns.conventions.megatron_bridge import NAME as MEGATRON_BRIDGE
from flopsreg.patterns.conventions.megatron_bridge import SOURCE as BRIDGE_SOURCE
from flopsreg.patterns.conventions.slime import SOURCE as SLIME_SOURCE
from flopsreg.patterns.hyper_connections import MHC
from flopsreg.patterns.laurel import LAUREL
from flopsreg.patterns.window_compression import CSA, HCA
from flopsreg.plugin import hookimpl

FLAGS = (CSA, HCA, *MHC.flags, *ALTUP.flags, *LAUREL.flags)  # what such a layer has that the formulas never count
_WHY = "has no branch for compressed attention, hyper-connections, AltUp or LAuReL (DeepSeek-V4, GLM-5.3-Flash, Gemma 3n)"

REFUSALS = [
    pattern
    for j, (convention, label, source) in enumerate(
        (
            ("slime", "slime's calculate_fwd_flops", SLIME_SOURCE),
            (MEGATRON_BRIDGE, "Megatron-Bridge's FLOPs formula", BRIDGE_SOURCE),
            ("megatron", "Megatron-LM's num_floating_point_operations", MEGATRON_SOURCE),
        )
    )
    # In a slot every layer has (these are attention layers: they have no mixer slots), distinct from each other.
    for pattern in refuses_layers(
        convention, FLAGS, f"{label} {_WHY}", source, precedence=MIXER_REFUSAL_PRECEDENCE + 10 + len(FLAGS) * j, slot="residual_mixer"
    )
]


@hookimpl
def flopsreg_register_patterns():
    return REFUSALS
