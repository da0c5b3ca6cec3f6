"""Hugging Face reader of ``glm4_moe`` (GLM-4.5/4.6/4.7): full GQA attention on every layer,
MoE with shared experts from ``first_k_dense_replace`` on, MTP layers as the mtp block."""

from flopsreg.patterns.biases import QKV_BIAS
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf.layer_types import FULL
from flopsreg.patterns.moe import moe_mlp
from flopsreg.patterns.mtp import MTP_BLOCK
from flopsreg.patterns.norms import QK_NORM
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, head_dim_of, hookimpl


def glm4_moe(c: Fields) -> Decoder:
    """Glm4MoeConfig: layer i is MoE iff i >= first_k_dense_replace (default 1); head_dim not a field."""
    layers = c.int("num_hidden_layers")
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    # modeling_glm4_moe.py: getattr(config, "head_dim", hidden // heads); the published configs give
    # 128, the fallback would be 42 for GLM-4.5-Air's 4096 / 96.
    head_dim = head_dim_of(c, hidden, heads)
    first_dense = c.int_or_default("first_k_dense_replace", 1, minimum=0)  # Glm4MoeConfig default
    mlps = Layers.split(layers, "dense", "moe", first_dense)
    kinds = {}
    if "dense" in mlps:
        kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        width = c.int("moe_intermediate_size")
        # Glm4MoeMoE: one shared MLP of moe_intermediate_size * n_shared_experts (default 1).
        shared = c.int_or_default("n_shared_experts", 1, minimum=0) * width
        kinds["moe"] = moe_mlp(c.int("n_routed_experts"), c.int("num_experts_per_tok"), width, shared)
    # Glm4MoeAttention: attention_bias (default false) biases q/k/v_proj only (o_proj bias=False);
    # use_qk_norm (default false) adds q/k RMSNorms of head_dim; tie_word_embeddings false by default.
    extra = (QKV_BIAS.flags if c.bool("attention_bias", default=False) else frozenset()) | (
        QK_NORM.flags if c.bool("use_qk_norm", default=False) else frozenset()
    )
    depth = c.optional_int("num_nextn_predict_layers", minimum=0) or 0  # never run by the forward pass
    return Decoder(
        params={**gqa_params(c, head_dim=head_dim), "vocab": c.int("vocab_size")},
        flags=silu_gated(c) | weight_flags(c, tied=False, extra=extra),
        attention=Layers.uniform(FULL, layers),
        mlps=mlps,
        mlp_kinds=kinds,
        blocks={MTP_BLOCK.name: depth},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="glm4_moe",
            title="GLM-4.5",
            read=glm4_moe,
            summary="Glm4MoeConfig (GLM-4.5/4.6/4.7): GQA, MoE with a shared expert after first_k_dense_replace",
            aliases={"num_local_experts": "n_routed_experts", "num_mtp_layers": "num_nextn_predict_layers"},
        ),
    ]
