"""Hugging Face reader of ``starcoder2``: GQA with biases, a non-gated GELU MLP (c_fc, c_proj),
every layer sliding when ``sliding_window`` is set."""

from flopsreg.patterns.biases import ATTENTION_BIAS, MLP_BIAS
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import weight_flags
from flopsreg.patterns.hf.layer_types import FULL, SLIDING
from flopsreg.patterns.norms import DECODER_LAYERNORMS
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl


def starcoder2(c: Fields) -> Decoder:
    """Starcoder2Config: plain MLP of intermediate_size; the sliding mask on all layers iff sliding_window."""
    layers = c.int("num_hidden_layers")
    # modeling_starcoder2.py: create_sliding_window_causal_mask iff config.sliding_window is not None.
    attention = Layers.uniform(SLIDING if c.given("sliding_window") else FULL, layers)
    # LayerNorms (scale and bias); use_bias (default true) biases q/k/v/o_proj, c_fc and c_proj;
    # tie_word_embeddings true by default.
    biases = ATTENTION_BIAS.flags | MLP_BIAS.flags if c.bool("use_bias", default=True) else frozenset()
    return Decoder(
        params={**gqa_params(c), "vocab": c.int("vocab_size")},
        # Not gated: c_fc then c_proj, 2 matmuls of hidden x intermediate_size (the "gated" flag off).
        flags=weight_flags(c, tied=True, extra=DECODER_LAYERNORMS.flags | biases | {"lm_head"}),
        attention=attention,
        mlps=Layers.uniform("dense", layers),
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="starcoder2",
            title="StarCoder2",
            read=starcoder2,
            summary="Starcoder2Config: GQA, non-gated GELU MLP, sliding_window on every layer when set",
        ),
    ]
