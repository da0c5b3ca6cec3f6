"""Layers without softmax attention, and softmax attention beside a non-attention mixer (the
``mixer.*`` slots and latent MoE's ``mlp.latent`` are declared in :mod:`flopsreg.patterns.slots`).

``no_attention``: an MLP-only or MoE-only layer (Nemotron-H ``-`` and ``E`` blocks) has no
attention at all. ``parallel_attention``: Falcon-H1's layers run GQA attention in parallel with a
Mamba2 mixer on the same input, so the attention slots the mixer's flag empties are filled again
by the default attention patterns, above the mixer's zeros.
"""

import attrs

from flopsreg import Convention, hookimpl
from flopsreg.patterns._mixer_common import NO_ATTENTION_PRECEDENCE, without_attention
from flopsreg.patterns.attention_core import ATTENTION_CORE
from flopsreg.patterns.gqa_projection import GQA_PROJECTION
from flopsreg.patterns.output_projection import OUTPUT_PROJECTION
from flopsreg.patterns.query_projection import QUERY_PROJECTION

CHUNKED_SCAN = Convention(
    name="chunked_scan",
    summary="linear-attention and SSM cores as the chunked scans training kernels and transformers' torch reference run (padding to whole chunks, triangular solves), not their recurrent minimum",
    reference="transformers 5.24 torch_chunk_gated_delta_rule, chunk_kimi_delta_attention, Mamba2 torch chunk scan; fla and mamba_ssm chunked kernels",
)
NO_ATTENTION = "no_attention"
PARALLEL_ATTENTION = "parallel_attention"

# Below the mixers' own zeros (NO_ATTENTION_PRECEDENCE + theirs), so a layer may set both.
ABSENT = without_attention(
    NO_ATTENTION, "feed-forward-only", "Nemotron-H hybrid_override_pattern '-' and 'E' blocks (modeling_nemotron_h.py)",
    precedence=0,
)
BESIDE = [
    attrs.evolve(
        pattern,
        name=f"parallel_{pattern.name}",
        flags={PARALLEL_ATTENTION},
        precedence=NO_ATTENTION_PRECEDENCE + 100,
        summary=f"attention beside the layer's mixer: {pattern.summary}",
        reference=f"{pattern.reference}; Falcon-H1 runs it in parallel with Mamba2 (modeling_falcon_h1.py FalconH1DecoderLayer)",
    )
    for pattern in (QUERY_PROJECTION, GQA_PROJECTION, ATTENTION_CORE, OUTPUT_PROJECTION)
]


@hookimpl
def flopsreg_register_conventions():
    return [CHUNKED_SCAN]



@hookimpl
def flopsreg_register_patterns():
    return [*ABSENT, *BESIDE]
