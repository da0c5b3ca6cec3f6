"""Hugging Face reader of ``minimax_m2`` (MiniMax-M2/M2.x): full GQA attention and a MoE on every
layer, whose experts have width ``intermediate_size``; no shared expert, no dense layer."""

from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf.layer_types import FULL
from flopsreg.patterns.moe import moe_mlp
from flopsreg.patterns.norms import FULL_WIDTH_QK_NORM
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl


def minimax_m2(c: Fields) -> Decoder:
    """MiniMaxM2Config: every layer MoE (MiniMaxM2SparseMoeBlock); intermediate_size is the expert width."""
    layers = c.int("num_hidden_layers")
    if c.given("sliding_window"):
        raise c.error("sliding_window", ": MiniMaxM2's modeling applies no window; remove it or use null")
    experts = moe_mlp(c.int("num_local_experts"), c.int("num_experts_per_tok"), c.int("intermediate_size"))
    return Decoder(
        # MiniMaxM2Config declares head_dim (default 128); absent means that default.
        params={**gqa_params(c, head_dim=c.int_or_default("head_dim", 128)), "vocab": c.int("vocab_size")},
        # MiniMaxM2Attention: q_norm and k_norm over all heads at once, always; no biases; the
        # router's e_score_correction_bias is a buffer; tie_word_embeddings false by default.
        flags=silu_gated(c) | weight_flags(c, tied=False, extra=FULL_WIDTH_QK_NORM.flags),
        attention=Layers.uniform(FULL, layers),
        mlps=Layers.uniform("moe", layers),
        mlp_kinds={"moe": experts},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="minimax_m2",
            title="MiniMax-M2",
            read=minimax_m2,
            summary="MiniMaxM2Config: GQA and MoE (experts of intermediate_size, no shared expert) on every layer",
            aliases={"num_experts": "num_local_experts"},
        ),
    ]
