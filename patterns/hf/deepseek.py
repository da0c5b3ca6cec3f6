"""Hugging Face readers of ``deepseek_v2`` and ``deepseek_v3``: MLA attention, MoE with shared
experts after the first dense layers, and the multi-token-prediction layers the config declares."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import mla, silu_gated, weight_flags
from flopsreg.patterns.hf.layer_types import FULL
from flopsreg.patterns.moe import moe_mlp
from flopsreg.patterns.mtp import MTP_BLOCK
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl


def deepseek(c: Fields) -> Decoder:
    """DeepseekV2/V3: MLA attention; layers >= first_k_dense_replace are MoE with shared experts."""
    layers = c.int("num_hidden_layers")
    first_dense = c.int("first_k_dense_replace", minimum=0)
    freq = c.optional_int("moe_layer_freq")
    if freq not in (None, 1):
        # transformers' native DeepSeek classes ignore moe_layer_freq; DeepSeek's own
        # modeling_deepseek.py makes layer i MoE only if i % moe_layer_freq == 0.
        raise c.error(
            "moe_layer_freq",
            f" = {freq}: transformers ignores it but DeepSeek's modeling_deepseek.py does not, so "
            "the MoE layers are ambiguous; only 1 is supported",
        )
    mlps = Layers.split(layers, "dense", "moe", first_dense)
    if not c.has("q_lora_rank"):
        raise c.missing("q_lora_rank", "null for a direct q_proj; the config classes default it to 1536")
    if not c.has("n_shared_experts"):
        raise c.missing("n_shared_experts", "null or 0 for none")
    params, mla_flags = mla(c)
    for key in ("attention_bias", "mlp_bias"):
        # DeepseekV2/V3Config default both to false; the biases they add (q_a_proj, kv_a_proj and
        # o_proj; every MLP) are not modelled, so a true value is refused rather than miscounted.
        if c.bool(key, default=False):
            raise c.error(key, " = true: the biases it adds to DeepSeek's MLA and MLPs are not counted by flopsreg; expected false")
    # tie_word_embeddings false by default. DeepseekV3's e_score_correction_bias is a buffer in
    # transformers, not a parameter: not counted, as sum(p.numel()) does not count it.
    flags = silu_gated(c) | weight_flags(c, tied=False) | mla_flags
    kinds = {}
    if "dense" in mlps:
        kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        width = c.int("moe_intermediate_size")
        shared = (c.optional_int("n_shared_experts", minimum=0) or 0) * width
        kinds["moe"] = moe_mlp(c.int("n_routed_experts"), c.int("num_experts_per_tok"), width, shared)
    # The MTP modules (model.layers.61.* of V3) are not built by the transformers model: a block
    # counted only when asked for.
    depth = c.optional_int("num_nextn_predict_layers", minimum=0) or 0
    return Decoder(
        params=params,
        flags=flags,
        attention=Layers.uniform(FULL, layers),
        mlps=mlps,
        mlp_kinds=kinds,
        blocks={MTP_BLOCK.name: depth},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="deepseek_v2",
            title="DeepSeek-V2",

            read=deepseek,
            summary="DeepseekV2Config (e.g. DeepSeek-V2-Lite, q_lora_rank null): MLA, MoE after first_k_dense_replace",
            aliases={"num_experts": "n_routed_experts"},
        ),
        HFReader(
            name="deepseek_v3",
            title="DeepSeek-V3",

            read=deepseek,
            summary="DeepseekV3Config: MLA, MoE after first_k_dense_replace, MTP layers as the mtp block",
            aliases={"num_local_experts": "n_routed_experts"},
        ),
    ]
