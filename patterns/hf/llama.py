"""Hugging Face reader of ``llama`` (LlamaConfig): full causal attention, SwiGLU MLP in every layer."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf.layer_types import FULL
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl


def llama(c: Fields) -> Decoder:
    """LlamaConfig: full causal, SwiGLU MLP of intermediate_size in every layer."""
    layers = c.int("num_hidden_layers")
    return Decoder(
        params={**gqa_params(c), "vocab": c.int("vocab_size")},
        # LlamaConfig: tie_word_embeddings, attention_bias and mlp_bias default to false.
        flags=silu_gated(c) | weight_flags(c, tied=False, biases={"attention_bias": False, "mlp_bias": False}),
        attention=Layers.uniform(FULL, layers),
        mlps=Layers.uniform("dense", layers),
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [HFReader(name="llama", title="Llama", read=llama, summary="LlamaConfig: full causal attention, dense SwiGLU MLPs")]
