"""Hugging Face reader of ``longcat_flash`` (LongCat-Flash): each of ``num_layers`` decoder layers
holds two MLA sublayers, two dense MLPs and one shortcut mixture of experts, and the experts may
include zero-computation (identity) experts.

Read from transformers 5.24 ``models/longcat_flash/{configuration,modeling}_longcat_flash.py``.
``LongcatFlashDecoderLayer`` runs MLA, then the dense ``mlps[0]`` and the MoE on the same normed
input (their outputs added, the MoE's after the second sublayer: no matmul), then MLA and
``mlps[1]``: flopsreg reads it as 2 x num_layers layers, the even ones an MoE whose "shared
expert" is the dense MLP (``ffn_hidden_size``), the odd ones a dense MLP. ``LongcatFlashMLA`` is
DeepSeek-V3's MLA with a low-rank query (the LoRA scales multiply, no matmul). The router
(``classifier``, h -> n_routed_experts + zero_expert_num, no bias) picks moe_topk experts per token;
a routed token that lands on a zero-computation expert is returned unchanged, so with
zero_expert_num > 0 how many expert matmuls run depends on the router's choices: refused by name.
"""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import mla, silu_gated, weight_flags
from flopsreg.patterns.hf.layer_types import FULL
from flopsreg.patterns.moe import moe_mlp
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl

# LongcatFlashConfig.attribute_map.
ALIASES = {
    "num_local_experts": "n_routed_experts", "num_experts_per_tok": "moe_topk",
    "intermediate_size": "ffn_hidden_size", "moe_intermediate_size": "expert_ffn_hidden_size",
}


def longcat_flash(c: Fields) -> Decoder:
    """LongcatFlashConfig without zero-computation experts: MLA with a low-rank query on every sublayer,
    a dense MLP of ffn_hidden_size after each, and n_routed_experts experts of expert_ffn_hidden_size
    (top moe_topk) beside the first dense MLP of each layer."""
    zero = c.optional_int("zero_expert_num", minimum=0) or 0
    if zero:
        raise c.error(
            "zero_expert_num", f" = {zero}: a token the router sends to a zero-computation (identity) expert skips that expert's "
            "matmuls, so the FLOPs depend on the router's choices, not on the config; only 0 (or null) is supported",
        )
    if not c.given("q_lora_rank"):
        raise c.error("q_lora_rank", " = null: LongcatFlashMLA always builds q_a_proj of q_lora_rank (transformers fails without it); expected an integer >= 1")
    if c.bool("attention_bias", default=False):
        raise c.error("attention_bias", " = true: the biases it adds to LongCat-Flash's MLA are not counted by flopsreg; expected false")
    if c.bool("router_bias", default=False):
        raise c.error("router_bias", " = true: the bias of the router's classifier is not counted by flopsreg; expected false")
    params, mla_flags = mla(c)
    qk = params["qk_nope_head_dim"] + params["qk_rope_head_dim"]
    if c.given("qk_head_dim") and c.int("qk_head_dim") != qk:
        raise c.error("qk_head_dim", f" = {c.int('qk_head_dim')}: LongcatFlashMLA splits queries into qk_nope_head_dim + qk_rope_head_dim = {qk}; expected {qk} or null")
    # LongcatFlashConfig.num_hidden_layers is 2 x num_layers (a property whose setter halves it)
    layers = 2 * (c.int("num_layers") if c.has("num_layers") or not c.given("num_hidden_layers") else c.int("num_hidden_layers", minimum=2) // 2)
    dense = c.int("ffn_hidden_size")
    # The router's e_score_correction_bias is a buffer (no parameter); tie_word_embeddings false by default.
    return Decoder(
        params=params,
        flags=silu_gated(c) | weight_flags(c, tied=False) | mla_flags,
        attention=Layers.uniform(FULL, layers),
        mlps=Layers.rule(layers, lambda i: "dense" if i % 2 else "moe", period=2),
        mlp_kinds={
            "moe": moe_mlp(c.int("n_routed_experts"), c.int("moe_topk"), c.int("expert_ffn_hidden_size"), dense),
            "dense": dense_mlp(dense),
        },
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [HFReader(name="longcat_flash", title="LongCat-Flash", read=longcat_flash, aliases=ALIASES,
                     summary="LongcatFlashConfig: two MLA sublayers and dense MLPs per layer with a shortcut MoE (no zero-computation experts)")]
