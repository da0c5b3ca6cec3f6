"""Which flags select which token mixer: layers without softmax attention, and softmax attention
beside a non-attention mixer (the slots and their groups are declared in :mod:`flopsreg.patterns.slots`).

A layer whose flags select the group ``mixer`` (each mixer's module declares the flag that does)
has no attention slots. ``no_attention``: an MLP-only or MoE-only layer (Nemotron-H ``-`` and
``E`` blocks) has no token mixer at all. ``parallel_attention``: Falcon-H1's layers run GQA
attention in parallel with a Mamba2 mixer on the same input, so the flag selects the attention
group too, which the mixer group may share a layer with.
"""

from flopsreg.patterns.slots import ATTENTION, MIXER, NO_MIXER
from flopsreg.plugin import Convention, GroupSelector, hookimpl

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
def flopsreg_register_group_selectors():
    return SELECTORS

