"""Hugging Face reader of ``rwkv`` (RWKV-4): every block a time mix (token mixer) and a channel mix
(its MLP), LayerNorms with biases, an extra pre_ln on the first block's input, the final ln_out."""

from flopsreg.patterns.dense_mlp import FFN_HIDDEN
from flopsreg.patterns.hf._common import weight_flags
from flopsreg.patterns.norms import DECODER_LAYERNORMS
from flopsreg.patterns.rwkv import CHANNEL_MIX, FLAG, PRE_LN, WIDTH
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl


def rwkv(c: Fields) -> Decoder:
    """RwkvConfig: attention_hidden_size null is hidden_size, intermediate_size null is 4 x hidden_size
    (__post_init__); tie_word_embeddings false by default."""
    layers, hidden = c.int("num_hidden_layers"), c.int("hidden_size")
    params = {
        "hidden": hidden,
        "vocab": c.int("vocab_size"),
        WIDTH.name: c.optional_int("attention_hidden_size") or hidden,
        FFN_HIDDEN.name: c.optional_int("intermediate_size") or 4 * hidden,
    }
    return Decoder(
        params=params,
        flags=weight_flags(c, tied=False, extra=DECODER_LAYERNORMS.flags | {"lm_head"}),
        attention=Layers.of(["first", *["rest"] * (layers - 1)]),
        attention_kinds={"first": (frozenset({FLAG, PRE_LN}), {}), "rest": (frozenset({FLAG}), {})},
        mlps=Layers.uniform("channel_mix", layers),
        mlp_kinds={"channel_mix": (frozenset({"mlp", CHANNEL_MIX}), {})},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="rwkv", title="RWKV-4", read=rwkv,
                 summary="RwkvConfig (RWKV-4): time mix and channel mix per block, LayerNorms, pre_ln on the first block"),
    ]
