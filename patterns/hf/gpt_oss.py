"""Hugging Face reader of ``gpt_oss`` (GptOssConfig): even layers slide, every layer is MoE."""

from flopsreg.patterns.attention_sinks import ATTENTION_SINKS
from flopsreg.patterns.biases import EXPERT_BIAS, ROUTER_BIAS
from flopsreg.patterns.hf._common import GATED_LM, alternating, weight_flags
from flopsreg.patterns.moe import MOE, moe_mlp
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, head_dim_of, hookimpl

_ALWAYS = ATTENTION_SINKS.flags | (EXPERT_BIAS.flags | ROUTER_BIAS.flags) - MOE.flags


def gpt_oss(c: Fields) -> Decoder:
    """GptOssConfig: even layers slide (``layer_types`` if given); every layer is MoE."""
    layers = c.int("num_hidden_layers")
    attention = alternating(c, layers)
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    # Gate and up are one fused, interleaved matmul of 2 x intermediate_size: 3 matrices' worth.
    # Its clamped gate is not plain SwiGLU (Megatron-LM runs it with --quick-geglu): no swiglu flag.
    moe = moe_mlp(c.int("num_local_experts"), c.int("num_experts_per_tok"), c.int("intermediate_size"))
    return Decoder(
        # transformers models/gpt_oss/configuration_gpt_oss.py: head_dim defaults to 64.
        params={**gqa_params(c, head_dim=head_dim_of(c, hidden, heads, class_default=64)), "vocab": c.int("vocab_size")},
        # GptOssConfig: attention_bias true, tie_word_embeddings false by default; every expert and
        # the router have biases, every layer a sink per head.
        flags=GATED_LM | weight_flags(c, tied=False, biases={"attention_bias": True}, extra=_ALWAYS),
        attention=attention,
        mlps=Layers.uniform("moe", layers),
        mlp_kinds={"moe": moe},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="gpt_oss",
            title="gpt-oss",

            read=gpt_oss,
            summary="GptOssConfig: even layers slide, MoE in every layer",
            aliases={"num_experts": "num_local_experts"},
        )
    ]
