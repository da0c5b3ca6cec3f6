"""Hugging Face reader of ``lara_mini`` (Lara Mini): Qwen3.5's Gated DeltaNet in the
linear_attention layers, Qwen3 attention (QK-norm, no output gate; the full layers without RoPE)
in the sliding and full ones, and on every layer a MoE block whose shared expert is added
ungated.

Read from transformers 5.24 ``models/lara_mini/{configuration,modeling}_lara_mini.py``."""

from flopsreg.patterns.biases import ATTENTION_BIAS
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf._linear import gdn_params, renamed, type_list
from flopsreg.patterns.hf.layer_types import FULL, GATED_DELTANET_LAYER, SLIDING
from flopsreg.patterns.moe import moe_mlp
from flopsreg.patterns.norms import QK_NORM
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, head_dim_of, hookimpl

NAMES = {"linear_attention": GATED_DELTANET_LAYER.name, "sliding_attention": SLIDING, "full_attention": FULL}
# LaraMiniConfig.__post_init__: layer i takes PATTERN[i % 5] when layer_types is not given.
PATTERN = ("linear_attention", "sliding_attention", "linear_attention", "full_attention", "sliding_attention")


def lara_mini(c: Fields) -> Decoder:
    """LaraMiniConfig: head_dim 128 (a field), tie_word_embeddings true, attention_bias on q/k/v/o_proj."""
    layers = c.int("num_hidden_layers")
    given = type_list(c, "layer_types", NAMES, layers)
    types = Layers.of(given) if given is not None else Layers.rule(layers, lambda i: PATTERN[i % len(PATTERN)], period=len(PATTERN))
    attention = renamed(types, NAMES)
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    params = {"vocab": c.int("vocab_size"), **gdn_params(c), **gqa_params(c, head_dim=head_dim_of(c, hidden, heads, class_default=128))}
    # LaraMiniSparseMoeBlock: a router without bias, experts of moe_intermediate_size, and the shared
    # expert (shared_expert_intermediate_size) always added in full, without a gate.
    moe = moe_mlp(
        c.int("num_experts"), c.int("num_experts_per_tok"), c.int("moe_intermediate_size"),
        c.int("shared_expert_intermediate_size", minimum=0),
    )
    # Two RMSNorms per layer; q_norm/k_norm of head_dim on the attention layers.
    flags = silu_gated(c) | weight_flags(c, tied=True, extra=QK_NORM.flags)
    if c.bool("attention_bias", default=False):
        flags |= ATTENTION_BIAS.flags
    return Decoder(params=params, flags=flags, attention=attention, mlps=Layers.uniform("moe", layers), mlp_kinds={"moe": moe})


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="lara_mini", title="Lara Mini", read=lara_mini,
                 summary="LaraMiniConfig: Gated DeltaNet / sliding / full (NoPE) attention per layer_types, MoE with an ungated shared expert on every layer"),
    ]
