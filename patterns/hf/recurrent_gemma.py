"""Hugging Face reader of ``recurrent_gemma`` (RecurrentGemma, Griffin): residual blocks whose
temporal block is, by ``block_types`` repeated over the layers, a Griffin recurrent block (RG-LRU)
or local attention (a sliding window of ``attention_window_size`` keys), each followed by a gated
MLP of width intermediate_size / 2 with biases."""

from flopsreg.patterns._mixer_common import CONV_KERNEL
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import GATED_LM, weight_flags
from flopsreg.patterns.rglru import BLOCK_WIDTH, BLOCKS, FLAG
from flopsreg.patterns.sliding_window import SLIDING_WINDOW, WINDOW
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl

RECURRENT, ATTENTION = "recurrent", "attention"
DEFAULT_BLOCKS = (RECURRENT, RECURRENT, ATTENTION)  # RecurrentGemmaConfig.block_types


def _block_types(c: Fields, layers: int) -> list[str]:
    """block_types repeated to num_hidden_layers (RecurrentGemmaConfig.layers_block_type)."""
    value = c.data.get("block_types")
    given = list(DEFAULT_BLOCKS) if value is None else value
    if not isinstance(given, list | tuple) or not given:
        raise c.error("block_types", f" = {value!r}: expected a non-empty list of 'recurrent' and 'attention'")
    bad = next((t for t in given if t not in (RECURRENT, ATTENTION)), None)
    if bad is not None:
        raise c.error("block_types", f": {bad!r} is not a RecurrentGemma block type; expected 'recurrent' or 'attention'")
    return [given[i % len(given)] for i in range(layers)]


def recurrent_gemma(c: Fields) -> Decoder:
    """RecurrentGemmaConfig: lru_width null is hidden_size, head_dim hidden / heads, kv heads
    default to heads; o_proj always has a bias, q, k and v with attention_bias; tied head."""
    layers, hidden = c.int("num_hidden_layers"), c.int("hidden_size")
    heads = c.int("num_attention_heads")
    width = c.optional_int("lru_width") or hidden
    if width % heads:
        raise c.error("lru_width", f" = {width}: the RG-LRU gates are num_attention_heads = {heads} blocks, so it must be a multiple of {heads}")
    types = _block_types(c, layers)
    params = {"hidden": hidden, "vocab": c.int("vocab_size")}
    if ATTENTION in types:
        params.update(gqa_params(c, head_dim=hidden // heads))
    if RECURRENT in types:
        params.update({BLOCKS.name: heads, BLOCK_WIDTH.name: width // heads, CONV_KERNEL.name: c.int("conv1d_width")})
    bias = "attention_bias" if c.bool("attention_bias", default=False) else "output_bias"
    kinds = {
        RECURRENT: (frozenset({FLAG}), {}),
        ATTENTION: (SLIDING_WINDOW.flags | {bias}, {WINDOW.name: c.int("attention_window_size")}),
    }
    mlp_flags, mlp_params = dense_mlp(c.int("intermediate_size") // 2)
    return Decoder(
        params=params,
        flags=weight_flags(c, tied=True, extra=GATED_LM),
        attention=Layers.of(types),
        attention_kinds={kind: kinds[kind] for kind in set(types)},
        mlps=Layers.uniform("dense", layers),
        mlp_kinds={"dense": (mlp_flags | {"mlp_bias"}, mlp_params)},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="recurrent_gemma", title="RecurrentGemma", read=recurrent_gemma,
                 summary="RecurrentGemmaConfig (Griffin): RG-LRU recurrent blocks and local attention by block_types, a gated MLP with biases"),
    ]
