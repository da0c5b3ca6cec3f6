"""Hugging Face reader of ``gpt_neox_japanese`` (GPT-NeoX-Japanese): GPT-NeoX blocks without
projection biases, an MLP of ``intermediate_multiple_size`` x hidden, and one bias of the attention
output in the last layer alone."""

import attrs

from flopsreg.patterns.biases import OUTPUT_BIAS
from flopsreg.patterns.hf._traits import FamilyTraits, Width
from flopsreg.patterns.hf.layer_types import FULL
from flopsreg.patterns.norms import DECODER_LAYERNORMS
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl

# modeling_gpt_neox_japanese.py: embed_in; input_layernorm, post_attention_layernorm and
# final_layer_norm are nn.LayerNorm; query_key_value and dense without bias, dense_bias (a vector
# of hidden_size) only in the last layer (use_bias=layer_number == num_hidden_layers - 1);
# dense_h_to_4h hidden_act dense_4h_to_h without bias, of int(hidden * intermediate_multiple_size);
# partial rotary (no matmul); embed_out tied by default.
GPT_NEOX_JAPANESE = FamilyTraits(
    name="gpt_neox_japanese", title="GPT-NeoX-Japanese",
    summary="GPTNeoXJapaneseConfig: LayerNorms, no projection biases but the last layer's output bias, plain MLP of a multiple of hidden",
    tied=True, gated=False, activation=("hidden_act", "gelu"), norms=DECODER_LAYERNORMS.flags, heads_only=True,
)
LAST = "last"  # the last layer: full attention with the output bias (a short kind name: LaTeX rows stay in a column)


def gpt_neox_japanese(c: Fields) -> Decoder:
    """GPTNeoXJapaneseConfig read by its record; the last layer's attention holds the output bias."""
    multiple = c.int_or_default("intermediate_multiple_size", 4)  # GPTNeoXJapaneseConfig default
    decoder = attrs.evolve(GPT_NEOX_JAPANESE, width=Width(None, multiple))(c)
    layers = len(decoder.attention)
    return attrs.evolve(decoder, attention=Layers.split(layers, FULL, LAST, layers - 1), attention_kinds={LAST: (OUTPUT_BIAS.flags, {})})


@hookimpl
def flopsreg_register_hf_readers():
    return [HFReader(name="gpt_neox_japanese", title=GPT_NEOX_JAPANESE.title, summary=GPT_NEOX_JAPANESE.summary, read=gpt_neox_japanese)]
