"""Hugging Face reader of ``cpmant`` (CPM-Ant): a prompt of ``prompt_length`` learned tokens is
prepended inside the model, so every layer runs over s + prompt_length positions with
bidirectional attention, and the head reads the s input positions alone."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.full_bidirectional import FULL_BIDIRECTIONAL
from flopsreg.patterns.hf._common import GATED_LM
from flopsreg.patterns.hf.layer_types import FULL
from flopsreg.patterns.norms import DECODER_NORMS
from flopsreg.patterns.prompt_prefix import PROMPT_EMBEDDINGS, PROMPT_LENGTH, PROMPT_PREFIX, PROMPT_TYPES
from flopsreg.patterns.segment_position_bias import POSITION_BUCKETS, SEGMENT_POSITION_BIAS, SEGMENT_TYPES
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl


def cpmant(c: Fields) -> Decoder:
    """CpmAntConfig (modeling_cpmant.py, transformers 5.24): input ids after prompt_length prompt
    ids, every pair attended (context all ones); CpmAntLayerNorm is an RMSNorm with a weight
    (before attention, before the FFN, after the last layer); project_q/k/v and attention_out
    without bias, heads of dim_head; w_0, w_1 (GELU-gated) and w_out of dim_ff without bias;
    lm_head a separate vocab x hidden matrix (_tied_weights_keys is empty, whatever
    tie_word_embeddings says); the segment embedding and position bias table hold weights only."""
    heads = c.int("num_attention_heads")
    params = {
        **gqa_params(c, kv_heads=heads, head_dim=c.int("dim_head")),
        "vocab": c.int("vocab_size"),
        PROMPT_LENGTH.name: c.int("prompt_length", minimum=0),
        PROMPT_TYPES.name: c.int("prompt_types", minimum=0),
        SEGMENT_TYPES.name: c.int("segment_types"),
        POSITION_BUCKETS.name: c.int("position_bias_num_buckets"),
    }
    layers = c.int("num_hidden_layers")
    return Decoder(
        params=params,
        flags=GATED_LM | DECODER_NORMS.flags | PROMPT_PREFIX.flags | PROMPT_EMBEDDINGS.flags | FULL_BIDIRECTIONAL.flags | SEGMENT_POSITION_BIAS.flags,
        attention=Layers.uniform(FULL, layers),
        mlps=Layers.uniform("dense", layers),
        mlp_kinds={"dense": dense_mlp(c.int("dim_ff"))},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="cpmant", title="CPM-Ant", read=cpmant,
                 summary="CpmAntConfig: prompt_length prompt tokens prepended, so every layer runs over s + prompt_length with bidirectional attention"),
    ]
