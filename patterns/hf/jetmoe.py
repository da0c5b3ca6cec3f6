"""Hugging Face reader of ``jetmoe`` (JetMoE): a mixture of attention heads (routed query and
output experts, shared keys and values) and a mixture of experts in every layer.

Read from transformers 5.24 ``models/jetmoe/{configuration,modeling}_jetmoe.py``:
``JetMoeConfig.__post_init__`` sets num_attention_heads = num_key_value_heads x
num_experts_per_tok (whatever a config says); ``JetMoeAttention`` runs ``JetMoeMoA`` (a router of
num_local_experts, k query experts of h -> num_key_value_heads x kv_channels per token, the same k
output experts back, one bias of h) and a shared kv_proj (h -> 2 x num_key_value_heads x
kv_channels, no bias), the keys and values repeated k times; ``JetMoeMoE`` routes each token to k
of num_local_experts gated experts of intermediate_size (input_linear 2 F_e, output_linear) and
adds one bias of h. Two RMSNorms per layer and a final one; tie_word_embeddings true by default.
"""

from flopsreg.patterns.biases import MOE_OUTPUT_BIAS
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf.layer_types import FULL
from flopsreg.patterns.moa import ATTENTION_EXPERTS, FLAG
from flopsreg.patterns.moe import moe_mlp
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl


def jetmoe(c: Fields) -> Decoder:
    """JetMoeConfig: n_h = num_key_value_heads x num_experts_per_tok heads of kv_channels (head_dim)."""
    layers, experts, top_k = c.int("num_hidden_layers"), c.int("num_local_experts"), c.int("num_experts_per_tok")
    if top_k > experts:
        raise c.error("num_experts_per_tok", f" = {top_k}: JetMoeConfig requires at most num_local_experts = {experts}")
    kv_heads = c.int("num_key_value_heads")
    params = {
        "hidden": c.int("hidden_size"), "heads": kv_heads * top_k, "kv_heads": kv_heads, "head_dim": c.int("kv_channels"),
        "vocab": c.int("vocab_size"), ATTENTION_EXPERTS.name: experts,
    }
    flags, moe_params = moe_mlp(experts, top_k, c.int("intermediate_size"))
    return Decoder(
        params=params,
        flags=silu_gated(c, key="activation_function") | weight_flags(c, tied=True) | {FLAG},
        attention=Layers.uniform(FULL, layers),
        mlps=Layers.uniform("moe", layers),
        mlp_kinds={"moe": (flags | MOE_OUTPUT_BIAS.flags, moe_params)},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [HFReader(name="jetmoe", title="JetMoE", read=jetmoe, aliases={"head_dim": "kv_channels"},
                     summary="JetMoeConfig: a mixture of attention heads (routed query/output experts) and MoE in every layer")]
