"""Hugging Face reader of ``bamba`` (Bamba): GQA attention on the layers of ``attn_layer_indices``,
Mamba2 of inner width ``mamba_expand`` x hidden on the others, a gated MLP on every layer."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf._linear import mamba_params, refuse_unless
from flopsreg.patterns.hf.layer_types import FULL, MAMBA2_LAYER
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl


def _attention_layers(c: Fields, layers: int) -> frozenset[int]:
    """attn_layer_indices: absent or null means no attention layer (BambaConfig.layers_block_type)."""
    value = c.data.get("attn_layer_indices")
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        raise c.error("attn_layer_indices", f" = {value!r}: expected a list of layer indices")
    outside = [i for i in value if not 0 <= i < layers]
    if outside:
        raise c.error("attn_layer_indices", f" = {value!r}: {outside[0]} is not a layer index below num_hidden_layers = {layers}")
    return frozenset(value)


def bamba(c: Fields) -> Decoder:
    """BambaConfig: mamba_d_head "auto" is mamba_expand x hidden / mamba_n_heads; attention head_dim
    hidden / heads; the partial rotary factor 0.5 changes no matmul."""
    layers, hidden = c.int("num_hidden_layers"), c.int("hidden_size")
    attention = _attention_layers(c, layers)
    for key in ("attention_bias", "mlp_bias"):
        refuse_unless(c, key, False, False, "the attention and MLP patterns hold no biases")
    params = {"hidden": hidden, "vocab": c.int("vocab_size")}
    if attention:
        params.update(gqa_params(c))  # BambaAttention: getattr(config, "head_dim", hidden // heads)
    if len(attention) < layers:
        params.update(mamba_params(c, c.int("mamba_expand") * hidden))
    return Decoder(
        params=params,
        flags=silu_gated(c) | weight_flags(c, tied=False),
        attention=[FULL if i in attention else MAMBA2_LAYER.name for i in range(layers)],
        mlps=Layers.uniform("dense", layers),
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="bamba", title="Bamba", read=bamba,
                 summary="BambaConfig: GQA on attn_layer_indices, Mamba2 on the other layers, a gated MLP on every layer"),
    ]
