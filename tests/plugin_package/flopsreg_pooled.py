"""Pooled-key attention and the Hugging Face model type ``pooledformer``: a flopsreg plugin.

A pooled-attention layer pools its keys and values in blocks of B consecutive tokens (a learned
linear map of the block's B keys to one key, per key/value head, and likewise for values), and
each query attends to the pooled blocks that end at or before it: query q sees floor((q+1)/B)
of them. The compression branch of block-sparse designs works this way; the model type is made
up, to show every extension point a new architecture needs, with no edit to flopsreg:

- a layer type (``pooled_attention`` in a config's ``layer_types``) and a reader for the
  ``model_type``;
- a parameter (``pool``), a quantity (``pooled_blocks``) and a slot (``attention.pooling``);
- a mask pattern with its own LaTeX, and the pooling pattern that uses the quantity.
"""

import sympy

from flopsreg import Param, Pattern, Quantity, Slot, hookimpl
from flopsreg.declarations.readers import HFLayerType, HFReader
from flopsreg.declarations.symbols import s
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.gqa_projection import HEAD_DIM, KV_HEADS
from flopsreg.readers.decoder import Decoder
from flopsreg.readers.fields import Fields, gqa_params

POOL = Param(name="pool", latex="B", meaning="consecutive tokens pooled into one key/value block")
POOLED_BLOCKS = Quantity(
    name="pooled_blocks",
    latex="m",
    meaning="complete pooled key/value blocks of one sequence: floor(s / B)",
    # after c cached tokens, the new ones complete floor((c + s) / B) - floor(c / B) blocks
    cached="difference",
)
POOLING = Slot(name="attention.pooling", scope="layer", summary="pools each block of B keys and values into one")

B, m = POOL.symbol, POOLED_BLOCKS.symbol

KEY_POOLING = Pattern(
    name="key_pooling",
    slot=POOLING.name,
    flags={"pooled_keys"},
    precedence=10,
    params=(POOL, KV_HEADS, HEAD_DIM),
    # per complete block and kv head: keys (B d_h -> d_h) and values (B d_h -> d_h)
    formula=2 * 2 * m * KV_HEADS.symbol * (B * HEAD_DIM.symbol) * HEAD_DIM.symbol,
    provides={POOLED_BLOCKS.name: sympy.floor(s / B)},
    summary="keys and values of each complete block of B tokens through a (B d_h -> d_h) map per kv head",
    reference="flopsreg's plugin guide (docs/plugins.md, 'Adding an architecture'); made up for it",
)

POOLED_CAUSAL = Pattern(
    name="pooled_causal",
    slot="attention.mask",
    flags={"pooled_keys"},
    # attention.mask's built-in precedences are 10 (full_causal), 20 (sliding_window), 30
    # (chunked) and 100 (conventions): 40 wins over the exact masks on a layer that also carries
    # their flags, and leaves the conventions' own counting alone.
    precedence=40,
    produces="pairs",
    params=(POOL,),
    # sum over queries q of floor((q + 1) / B), with m = floor(s / B) blocks from the pooling slot
    formula=B * m * (m - 1) / 2 + m * (s - m * B + 1),
    latex=r"B \binom{m}{2} + m\,(s - mB + 1)",
    summary="query q sees the floor((q+1)/B) pooled blocks that end at or before it",
    reference="flopsreg's plugin guide (docs/plugins.md, 'Adding an architecture'); made up for it",
)

POOLED_ATTENTION = HFLayerType(
    name="pooled_attention",
    flags={"pooled_keys"},
    params={POOL.name: "pool_size"},
    summary="attention over pooled blocks of pool_size keys",
)


def read_pooledformer(c: Fields) -> Decoder:
    """PooledformerConfig: layer_types of pooled and full attention (absent: all full), gated MLPs."""
    layers = c.int("num_hidden_layers")
    attention = c.layer_types(layers, ("pooled_attention", "full_attention")) or ["full_attention"] * layers
    return Decoder(
        params={**gqa_params(c), "vocab": c.int("vocab_size")},
        flags={"gated", "lm_head"},
        attention=attention,
        mlps=["dense"] * layers,
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


@hookimpl
def flopsreg_register_quantities():
    return [POOLED_BLOCKS]


@hookimpl
def flopsreg_register_slots():
    return [POOLING]


@hookimpl
def flopsreg_register_patterns():
    return [POOLED_CAUSAL, KEY_POOLING]


@hookimpl
def flopsreg_register_hf_layer_types():
    return [POOLED_ATTENTION]


@hookimpl
def flopsreg_register_hf_readers():
    return [HFReader(name="pooledformer", read=read_pooledformer, summary="PooledformerConfig (made up for the plugin guide)")]
