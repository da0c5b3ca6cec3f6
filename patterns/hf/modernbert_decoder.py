"""Hugging Face reader of ``modernbert-decoder`` (ModernBERT-decoder): a :class:`FamilyTraits` record
with ModernBERT's parts: a norm on the embedding, no norm before the first layer's attention,
global and local layers, and the prediction head (dense, activation, norm) before the logits."""

import attrs

from flopsreg.patterns.biases import ATTENTION_BIAS, HEAD_BIAS, MLP_BIAS
from flopsreg.patterns.head_transform import HEAD_TRANSFORM, HEAD_TRANSFORM_BIAS
from flopsreg.patterns.hf._traits import FamilyTraits, Switch
from flopsreg.patterns.hf.layer_types import FULL, SLIDING
from flopsreg.patterns.norms import DECODER_NORMS, EMBEDDING_NORM, SINGLE_NORM
from flopsreg.patterns.sliding_window import SLIDING_WINDOW, WINDOW
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl

# modeling_modernbert_decoder.py: tok_embeddings then embeddings.norm; attn_norm (nn.Identity in
# layer 0) and mlp_norm per layer, final_norm, lm_head.norm: nn.LayerNorm with a bias iff
# norm_bias (default false); q/k/v_proj and Wo biased iff attention_bias; Wi (hidden -> 2 x
# intermediate_size: input and gate) and Wo, biased iff mlp_bias: a gated MLP of hidden_activation;
# head_dim = hidden // heads; lm_head = ModernBertDecoderPredictionHead (dense hidden -> hidden,
# biased iff classifier_bias, act, norm), then decoder (hidden -> vocab, biased iff decoder_bias,
# default true), tied to tok_embeddings by default; rotary (no matmul).
MODERNBERT_DECODER = FamilyTraits(
    name="modernbert-decoder", title="ModernBERT-decoder",
    summary="ModernBertDecoderConfig: embedding norm, global and local layers, gated MLP, dense head before the logits",
    tied=True, activation=("hidden_activation", "gelu"), norms=DECODER_NORMS.flags, flags=EMBEDDING_NORM.flags | HEAD_TRANSFORM.flags,
    switches=(
        Switch("norm_bias", False, {"norm_bias"}), Switch("attention_bias", False, ATTENTION_BIAS.flags), Switch("mlp_bias", False, MLP_BIAS.flags),
        Switch("classifier_bias", False, HEAD_TRANSFORM_BIAS.flags), Switch("decoder_bias", True, HEAD_BIAS.flags),
    ),
    heads_only=True,
)
LOCAL = "local"
FIRST = "first_"  # layer 0's kind: its own attention without the attn_norm


def _layer_types(c: Fields, layers: int) -> Layers[str]:
    """``layer_types``, else ModernBertDecoderConfig.__post_init__'s rule: layer i is full iff
    ``i % global_attn_every_n_layers == 0`` (absent: 3)."""
    given = c.layer_types(layers, (SLIDING, FULL))
    if given is not None:
        return Layers.of(given)
    every = c.int_or_default("global_attn_every_n_layers", 3)
    return Layers.rule(layers, lambda i: SLIDING if i % every else FULL, period=every)


def modernbert_decoder(c: Fields) -> Decoder:
    """ModernBertDecoderConfig read by its record: local layers slide over ``local_attention // 2``
    keys (``__post_init__`` sets ``sliding_window`` so, whatever the config says)."""
    decoder = MODERNBERT_DECODER(c)
    layers = len(decoder.attention)
    types = _layer_types(c, layers)
    kinds = {FULL: (frozenset(), {})}
    if SLIDING in types:
        local = c.optional_int("local_attention", minimum=0) or 0
        if local < 2:
            given = "null" if c.data.get("local_attention") is None else local
            raise c.error("local_attention", f" = {given}: sliding_attention layers then have sliding_window {local // 2 if local else -1}, no window "
                          "of keys to count; expected an integer >= 2 (or only full_attention layers)")
        kinds[LOCAL] = (SLIDING_WINDOW.flags, {WINDOW.name: local // 2})
    named = types.map(lambda kind: LOCAL if kind == SLIDING else FULL)
    first = named[0]
    kinds[FIRST + first] = (kinds[first][0] | SINGLE_NORM.flags, kinds[first][1])
    attention = named.replaced(0, FIRST + first)
    return attrs.evolve(decoder, attention=attention, attention_kinds={k: kinds[k] for k in attention.distinct()})


@hookimpl
def flopsreg_register_hf_readers():
    return [HFReader(name="modernbert-decoder", title=MODERNBERT_DECODER.title, summary=MODERNBERT_DECODER.summary, read=modernbert_decoder)]
