"""Hugging Face reader of ``bailing_hybrid`` (Ling 3.0): KDA with full-rank forget and output gates
in the linear_attention layers, MLA with a sigmoid gate per head in the full_attention ones, dense
MLPs then MoE (sigmoid group router, shared experts).

Read from transformers 5.24 ``models/bailing_hybrid/{configuration,modeling}_bailing_hybrid.py``."""

from flopsreg.patterns._mixer_common import CONV_KERNEL, SCAN_CHUNK
from flopsreg.patterns.attention_head_gate import ATTENTION_HEAD_GATE
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import mla, silu_gated, weight_flags
from flopsreg.patterns.hf._linear import TORCH_DELTA_CHUNK, refuse_unless, renamed, type_list
from flopsreg.patterns.hf.layer_types import FULL, KDA_LAYER
from flopsreg.patterns.kda import FULL_RANK_GATES, HEAD_DIM, HEADS
from flopsreg.patterns.moe import moe_mlp
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl

NAMES = {"linear_attention": KDA_LAYER.name, "full_attention": FULL}
MLP_TYPES = {"dense": "dense", "sparse": "moe"}
# BailingHybridConfig.attribute_map: {name a config may use: the field it sets}.
ALIASES = {
    "max_position_embeddings": "model_max_length", "norm_topk_prob": "moe_renormalize", "n_group": "num_expert_group",
    "num_local_experts": "num_experts", "num_experts_per_tok": "num_experts_per_token", "n_shared_experts": "num_shared_experts",
    "num_mtp_layers": "num_nextn_predict_layers",
}


def bailing_hybrid(c: Fields) -> Decoder:
    """BailingHybridConfig: layer_types, else full iff (i + 1) % layer_group_size == 0 (6);
    mlp_layer_types, else dense below first_k_dense_replace (2). The KDA heads are
    num_attention_heads of head_dim (the class makes head_dim the KDA width as it reads the config,
    then sets head_dim to qk_rope_head_dim for the attention, which never reads it); the MTP layers
    are not built."""
    layers = c.int("num_hidden_layers")
    given = type_list(c, "layer_types", NAMES, layers)
    if given is None:
        group = c.int_or_default("layer_group_size", 6)
        given = Layers.rule(layers, lambda i: "full_attention" if (i + 1) % group == 0 else "linear_attention", period=group)
    types = Layers.of(given)
    listed = type_list(c, "mlp_layer_types", MLP_TYPES, layers)
    mlps = Layers.of(listed).map(MLP_TYPES.__getitem__) if listed is not None else Layers.split(
        layers, "dense", "moe", c.int_or_default("first_k_dense_replace", 2, minimum=0))
    refuse_unless(c, "attention_bias", False, False, "the biases it adds to q_a_proj, kv_a_proj_with_mqa and o_proj are in no MLA pattern")
    if not c.has("q_lora_rank"):
        raise c.missing("q_lora_rank", "null for a direct q_proj (BailingHybridConfig's default)")
    params, mla_flags = mla(c)
    kv_heads = c.optional_int("num_key_value_heads") or params["heads"]
    if kv_heads != params["heads"]:
        # The attention expands the latent to every head, then repeat_kv groups heads // kv_heads of them.
        raise c.error("num_key_value_heads", f" = {kv_heads}: the MLA expands keys and values to all {params['heads']} heads; expected num_attention_heads")
    if "linear_attention" in types:
        params |= {
            HEADS.name: c.int("num_attention_heads"), HEAD_DIM.name: c.int_or_default("head_dim", 128),
            CONV_KERNEL.name: c.int_or_default("short_conv_kernel_size", 4), SCAN_CHUNK.name: TORCH_DELTA_CHUNK,
        }
    kinds = {}
    if "dense" in mlps:
        kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        # BailingHybridMoE: shared experts of moe_intermediate_size x num_shared_experts; the
        # router's e_score_correction_bias is a buffer.
        width = c.int("moe_intermediate_size")
        kinds["moe"] = moe_mlp(
            c.int("num_experts"), c.int("num_experts_per_token"), width, c.int_or_default("num_shared_experts", 1, minimum=0) * width,
        )
    # Two RMSNorms per layer; the MLA layers' g_proj (hidden -> heads, a sigmoid per head); the KDA
    # layers' full-rank f_proj and g_proj; tie_word_embeddings false by default.
    flags = silu_gated(c) | weight_flags(c, tied=False) | mla_flags | ATTENTION_HEAD_GATE.flags | {FULL_RANK_GATES}
    return Decoder(params=params, flags=flags, attention=renamed(types, NAMES), mlps=mlps, mlp_kinds=kinds)


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="bailing_hybrid", title="Ling 3.0", read=bailing_hybrid, aliases=ALIASES,
                 summary="BailingHybridConfig: KDA with full-rank gates / MLA with a gate per head per layer_types, dense then MoE with shared experts"),
    ]
