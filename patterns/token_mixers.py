"""The token mixers besides softmax attention, as slot groups: the slots of a non-attention
sequence mixer (one per layer fills ``mixer.*``), no token mixer at all, and softmax attention
beside a mixer; and the slots of latent MoE.

(Named to load after ``slots``, so the built-in slots come first wherever slots are listed.)

A layer whose flags select the group ``mixer`` (each mixer's module declares the flag that does)
has no attention slots. ``no_attention``: an MLP-only or MoE-only layer (Nemotron-H ``-`` and
``E`` blocks) has no token mixer at all. ``parallel_attention``: Falcon-H1's layers run GQA
attention in parallel with a Mamba2 mixer on the same input, so the flag selects the attention
group too, which the mixer group may share a layer with.
"""

from flopsreg import Convention, GroupSelector, Slot, SlotGroup, hookimpl
from flopsreg.patterns.slots import ATTENTION

MIXER = SlotGroup(
    name="mixer",
    summary="a linear-attention or state-space mixer (Gated DeltaNet, KDA, Mamba, short convolutions, lightning attention)",
    beside={ATTENTION.name},
)
NO_MIXER = SlotGroup(name="no_mixer", summary="no token mixer: a feed-forward-only layer (its MLP or MoE alone)")
SLOTS = [
    Slot(name="mixer.projection", scope="layer", summary="a linear-attention / SSM mixer's input projections and gates"),
    Slot(name="mixer.conv", scope="layer", summary="the mixer's short causal depthwise convolution"),
    Slot(name="mixer.core", scope="layer", summary="the mixer's recurrence: its recurrent minimum, or a chunked scan"),
    Slot(name="mixer.output", scope="layer", summary="the mixer's output projection"),
    Slot(name="mlp.latent", scope="layer", summary="latent MoE: hidden -> latent before the routed experts, latent -> hidden after"),
]
CHUNKED_SCAN = Convention(
    name="chunked_scan",
    summary="linear-attention and SSM cores as the chunked scans training kernels and transformers' torch reference run (padding to whole chunks, triangular solves), not their recurrent minimum",
    reference="transformers 5.24 torch_chunk_gated_delta_rule, chunk_kimi_delta_attention, Mamba2 torch chunk scan; fla and mamba_ssm chunked kernels",
)
NO_ATTENTION = "no_attention"
PARALLEL_ATTENTION = "parallel_attention"
SELECTORS = [
    GroupSelector(
        group=NO_MIXER.name,
        flags={NO_ATTENTION},
        summary="an MLP-only or MoE-only block has no token mixer (Nemotron-H hybrid_override_pattern '-' and 'E', modeling_nemotron_h.py)",
    ),
    GroupSelector(
        group=ATTENTION.name,
        flags={PARALLEL_ATTENTION},
        summary="GQA attention in parallel with the layer's Mamba2 on the same input (Falcon-H1, modeling_falcon_h1.py FalconH1DecoderLayer)",
    ),
]


def selects_mixer(flags: set[str], summary: str) -> GroupSelector:
    """The rule a mixer's module declares: a layer with all of *flags* (the mixer's flag) has the
    ``mixer`` slots, not attention's, for the reason *summary* says."""
    return GroupSelector(group=MIXER.name, flags=flags, summary=summary)


@hookimpl
def flopsreg_register_conventions():
    return [CHUNKED_SCAN]


@hookimpl
def flopsreg_register_slot_groups():
    return [MIXER, NO_MIXER]


@hookimpl
def flopsreg_register_group_selectors():
    return SELECTORS


@hookimpl
def flopsreg_register_slots():
    return SLOTS
