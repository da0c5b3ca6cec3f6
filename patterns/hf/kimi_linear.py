"""Hugging Face reader of ``kimi_linear`` (Kimi Linear): KDA in the linear_attention layers, MLA
without rotary embeddings in the full_attention ones (non-absorbed, as the MLA patterns count it),
a dense MLP on the first layers and MoE with shared experts on the others."""

from flopsreg.patterns._mixer_common import CONV_KERNEL, SCAN_CHUNK
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import mla, silu_gated, weight_flags
from flopsreg.patterns.hf._linear import TORCH_DELTA_CHUNK, refuse_unless, renamed, type_list
from flopsreg.patterns.hf.layer_types import FULL, KDA_LAYER
from flopsreg.patterns.kda import HEAD_DIM, HEADS
from flopsreg.patterns.moe import moe_mlp
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl

NAMES = {"linear_attention": KDA_LAYER.name, "full_attention": FULL}
# KimiLinearConfig.attribute_map {class attribute: name stored}: the reader reads the stored names.
ALIASES = {
    "num_local_experts": "num_experts",
    "num_experts_per_tok": "num_experts_per_token",
    "n_shared_experts": "num_shared_experts",
}


def linear_attn_config(c: Fields) -> Fields | None:
    value = c.data.get("linear_attn_config")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise c.error("linear_attn_config", f" = {value!r}: expected an object")
    return Fields(value, where=c.where, model_type=c.model_type, prefix=f"{c.prefix}linear_attn_config.")


def _one_indexed(inner: Fields, field: str, layers: int) -> list[int]:
    return [i - 1 for i in inner.int_list(field, minimum=1, maximum=layers) or []]


def _types(c: Fields, inner: Fields | None, layers: int) -> Layers[str]:
    """layer_types > linear_attn_config's 1-indexed full_attn_layers / kda_layers > full iff i and i % 4 == 0."""
    types = type_list(c, "layer_types", NAMES, layers)
    if types is not None:
        return Layers.of(types)
    if inner is not None and inner.has("full_attn_layers") and inner.has("kda_layers"):
        kda = set(_one_indexed(inner, "kda_layers", layers))
        named = kda | set(_one_indexed(inner, "full_attn_layers", layers))
        if len(named) < layers:  # the lists name each layer, so they are as long as the model (checked before listing it)
            missing = next(i for i in range(layers) if i not in named)
            raise inner.error("kda_layers", f": layer {missing + 1} is in neither full_attn_layers nor kda_layers")
        return Layers.of("linear_attention" if i in kda else "full_attention" for i in range(layers))
    return Layers.rule(layers, lambda i: "full_attention" if i and i % 4 == 0 else "linear_attention", period=4, start=1)


def kda_params(c: Fields, inner: Fields | None) -> dict[str, int]:
    """linear_attn_config's head_dim, num_heads, short_conv_kernel_size override linear_head_dim,
    linear_num_heads, linear_conv_kernel_dim."""

    def read(nested: str, flat: str) -> int:
        return inner.int(nested) if inner is not None and inner.has(nested) else c.int(flat)

    return {
        HEADS.name: read("num_heads", "linear_num_heads"),
        HEAD_DIM.name: read("head_dim", "linear_head_dim"),
        CONV_KERNEL.name: read("short_conv_kernel_size", "linear_conv_kernel_dim"),
        SCAN_CHUNK.name: TORCH_DELTA_CHUNK,
    }


def _mlps(c: Fields, layers: int) -> Layers[str]:
    """mlp_layer_types > the kwarg first_k_dense_replace (default 1): dense below it, sparse from it."""
    given = type_list(c, "mlp_layer_types", ("dense", "sparse"), layers)
    if given is None:
        first_dense = c.int_or_default("first_k_dense_replace", 1, minimum=0)
        given = Layers.split(layers, "dense", "sparse", first_dense)
    return Layers.of(given).map(lambda t: "moe" if t == "sparse" else "dense")


def kimi_linear(c: Fields) -> Decoder:
    """KimiLinearConfig: KDA / MLA per layer_types, dense / MoE per mlp_layer_types."""
    layers = c.int("num_hidden_layers")
    inner = linear_attn_config(c)
    types = _types(c, inner, layers)
    mlps = _mlps(c, layers)
    if not c.has("q_lora_rank"):
        raise c.missing("q_lora_rank", "null for a direct q_proj")
    attention, mla_flags = mla(c)  # head_dim is set to qk_rope_head_dim by the config class
    params = {**attention, **kda_params(c, inner)}
    refuse_unless(c, "attention_bias", False, False, "the MLA and KDA patterns hold no biases")
    # KimiLinearConfig: tie_word_embeddings false by default; the router's e_score_correction_bias is a buffer.
    flags = silu_gated(c) | weight_flags(c, tied=False) | mla_flags
    kinds = {}
    if "dense" in mlps:
        kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        width = c.int("moe_intermediate_size")
        shared = c.int_or_default("num_shared_experts", 1, minimum=0) * width  # class default n_shared_experts 1
        kinds["moe"] = moe_mlp(c.int("num_experts"), c.int("num_experts_per_token"), width, shared)
    return Decoder(params=params, flags=flags, attention=renamed(types, NAMES), mlps=mlps, mlp_kinds=kinds)


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="kimi_linear", title="Kimi Linear", read=kimi_linear, aliases=ALIASES,
                 summary="KimiLinearConfig: KDA / MLA (NoPE) per layer_types or linear_attn_config, MoE with shared experts per mlp_layer_types"),
    ]
