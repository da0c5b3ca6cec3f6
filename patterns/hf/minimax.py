"""Hugging Face reader of ``minimax`` (MiniMax-Text-01 / MiniMax-M1): lightning attention in the
linear_attention layers, GQA (sliding when ``sliding_window`` is set) in the full_attention ones,
a Mixtral-style MoE (softmax router, top-k of num_local_experts) on every layer."""

from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf._linear import renamed, type_list
from flopsreg.patterns.hf.layer_types import FULL, LIGHTNING_LAYER, SLIDING
from flopsreg.patterns.lightning import BLOCK
from flopsreg.patterns.moe import moe_mlp
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl

BLOCK_SIZE = 256  # MiniMaxConfig.block_size's default


def _types(c: Fields, layers: int) -> list[str]:
    """layer_types, which must be given: MiniMaxConfig's default alternates 1:1 starting with full
    attention, while the checkpoints run 7 lightning : 1 full; the remote code's attn_type_list is not read by transformers."""
    allowed = ("linear_attention", "full_attention")
    types = type_list(c, "layer_types", allowed, layers)
    if types is None:
        raise c.missing(
            "layer_types",
            "MiniMaxConfig's default alternates full and linear attention 1:1, the checkpoints run 7 lightning : 1 full; "
            "give the list (transformers does not read the remote code's attn_type_list)",
        )
    # MiniMaxModel masks every full_attention layer with a sliding window when sliding_window is set.
    names = {"linear_attention": LIGHTNING_LAYER.name, "full_attention": SLIDING if c.given("sliding_window") else FULL}
    return renamed(types, names)


def minimax(c: Fields) -> Decoder:
    """MiniMaxConfig: lightning / GQA per layer_types, Mixtral-style MoE on every layer."""
    layers = c.int("num_hidden_layers")
    attention = _types(c, layers)
    if c.optional_int("shared_intermediate_size", minimum=0):
        raise c.error("shared_intermediate_size", ": transformers' MiniMax has no shared expert (only the remote code adds one); use 0")
    # head_dim: `getattr(config, "head_dim", None) or hidden_size // num_attention_heads` in both attentions.
    params = {**gqa_params(c), "vocab": c.int("vocab_size"), BLOCK.name: c.int_or_default("block_size", BLOCK_SIZE)}
    # num_local_experts is required (its class default 8 is Mixtral's); num_experts_per_tok defaults to 2, MiniMax's top-2.
    experts = moe_mlp(c.int("num_local_experts"), c.int_or_default("num_experts_per_tok", 2), c.int("intermediate_size"))
    return Decoder(
        params=params,
        # MiniMaxConfig: tie_word_embeddings defaults to false; no projection has a bias.
        flags=silu_gated(c) | weight_flags(c, tied=False),
        attention=attention,
        mlps=Layers.uniform("moe", layers),
        mlp_kinds={"moe": experts},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="minimax",
            title="MiniMax-Text-01",
            read=minimax,
            aliases={"num_experts": "num_local_experts"},
            summary="MiniMaxConfig: lightning attention / GQA per explicit layer_types, Mixtral-style MoE on every layer",
        ),
    ]
