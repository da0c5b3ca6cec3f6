"""Hugging Face reader of ``deepseek_v4`` (DeepSeek-V4-Flash/Pro): every layer a sliding window
over raw tokens, plus compressed entries on CSA (top-k by an indexer) and HCA layers; shared-KV
MQA, a grouped output projection, attention sinks, mHC hyper-connections and MoE everywhere."""

from typing import Any

from flopsreg.patterns.attention_sinks import ATTENTION_SINKS
from flopsreg.patterns.dsa_indexer import INDEX_HEAD_DIM, INDEX_HEADS
from flopsreg.patterns.dsa_topk import INDEX_TOPK
from flopsreg.patterns.gqa_projection import HEAD_DIM
from flopsreg.patterns.grouped_output import GROUPED_OUTPUT, O_GROUPS, O_LORA_RANK
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hyper_connections import HC_MULT, MHC
from flopsreg.patterns.low_rank_query import LOW_RANK_QUERY, Q_LORA_RANK
from flopsreg.patterns.moe import moe_mlp
from flopsreg.patterns.shared_kv_projection import SHARED_KV_PROJECTION
from flopsreg.patterns.sliding_window import SLIDING_WINDOW, WINDOW
from flopsreg.patterns.window_compression import CSA, CSA_RATE, HCA, HCA_RATE
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl

SLIDING, CSA_TYPE, HCA_TYPE = "sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"
# DeepseekV4Config's legacy per-layer compress_ratios (configuration_deepseek_v4.py _COMPRESS_RATIO_TO_LAYER_TYPE).
_RATIO_TYPES = {0: SLIDING, 4: CSA_TYPE, 128: HCA_TYPE}
# The attention kind of each layer type, its flags (the shared ones are model flags) and its parameters.
_KINDS = {SLIDING: ("sliding", SLIDING_WINDOW.flags), CSA_TYPE: ("csa", frozenset({CSA})), HCA_TYPE: ("hca", frozenset({HCA}))}


def layer_types(c: Fields, layers: int) -> list[str]:
    """``layer_types``, else the legacy ``compress_ratios`` (0 / 4 / 128 per layer; entries past
    the decoder describe MTP layers and are dropped, as transformers does); neither is refused:
    DeepseekV4Config would fill in its V4-Pro layout, a default the config does not show."""
    given = c.layer_types(layers, tuple(_KINDS))
    if given is not None:
        return given
    ratios = c.data.get("compress_ratios")
    if ratios is None:
        raise c.missing("layer_types", "or compress_ratios; DeepseekV4Config would use its V4-Pro default layout")
    if not isinstance(ratios, list) or len(ratios) < layers:
        raise c.error("compress_ratios", f" = {ratios!r}: expected a list of at least num_hidden_layers = {layers} integers")
    for i, ratio in enumerate(ratios[:layers]):
        if ratio not in _RATIO_TYPES:
            raise c.error(f"compress_ratios[{i}]", f" = {ratio!r}: transformers maps only 0, 4 and 128 to a layer type (expected one of them)")
    return [_RATIO_TYPES[ratio] for ratio in ratios[:layers]]


def compress_rates(c: Fields) -> dict[str, Any]:
    """The compression rate of CSA and HCA layers as transformers resolves them: ``compress_rates``,
    the legacy ``compress_rate_csa`` / ``compress_rate_hca`` over it, else the class default
    {4, 128} only when per-layer ``compress_ratios`` (4 and 128) said so."""
    rates = c.data.get("compress_rates")
    if rates is not None and not isinstance(rates, dict):
        raise c.error("compress_rates", f" = {rates!r}: expected an object of layer type -> rate")
    rates = dict(rates or {})
    for key, layer_type in (("compress_rate_csa", CSA_TYPE), ("compress_rate_hca", HCA_TYPE)):
        if c.given(key):
            rates[layer_type] = c.int(key)
    if not rates and c.given("compress_ratios") and not c.given("layer_types"):
        return {CSA_TYPE: 4, HCA_TYPE: 128}
    return rates


def _rate(c: Fields, rates: dict[str, Any], layer_type: str) -> int:
    if layer_type not in rates:
        raise c.missing(
            f"compress_rates['{layer_type}']", f"layers are {layer_type}; DeepseekV4Config would default it, a value the config does not show"
        )
    return Fields(rates, where=c.where, model_type=c.model_type, prefix=f"{c.prefix}compress_rates.").int(layer_type)


def mlp_layer_types(c: Fields, layers: int) -> None:
    """Refuse an ``mlp_layer_types`` transformers rejects: hash_moe and moe layers differ only in
    how experts are picked (a token-id table or the router's top-k), not in what they compute."""
    given = c.data.get("mlp_layer_types")
    if given is None:
        return
    if not isinstance(given, list) or len(given) != layers or any(entry not in ("hash_moe", "moe") for entry in given):
        raise c.error("mlp_layer_types", f" = {given!r}: expected {layers} entries, each 'hash_moe' or 'moe'")


def _one(c: Fields, key: str, why: str) -> None:
    """Refuse *key* unless absent, null or 1: transformers ignores it (*why*), DeepSeek's own code may not."""
    value = c.optional_int(key, minimum=0)
    if value not in (None, 1):
        raise c.error(key, f" = {value}: transformers' DeepseekV4 ignores it ({why}); only 1 is unambiguous")


def deepseek_v4(c: Fields) -> Decoder:
    """DeepseekV4Config: per-layer attention kinds (sliding, CSA, HCA) and MoE on every layer."""
    layers = c.int("num_hidden_layers")
    types = layer_types(c, layers)
    mlp_layer_types(c, layers)
    _one(c, "num_key_value_heads", "one shared key/value head always")
    _one(c, "n_shared_experts", "one shared expert of moe_intermediate_size always")
    if c.bool("mlp_bias", default=False):  # DeepseekV4Config default false; the shared expert's biases are not modelled
        raise c.error("mlp_bias", " = true: the shared expert's biases are not counted by flopsreg; expected false")
    rates = compress_rates(c)
    params = {
        "hidden": c.int("hidden_size"),
        "heads": c.int("num_attention_heads"),
        HEAD_DIM.name: c.int_or_default("head_dim", 512),  # DeepseekV4Config.head_dim default
        Q_LORA_RANK.name: c.int("q_lora_rank"),
        O_GROUPS.name: c.int("o_groups"),
        O_LORA_RANK.name: c.int("o_lora_rank"),
        HC_MULT.name: c.int("hc_mult"),
        WINDOW.name: c.int("sliding_window"),
        "vocab": c.int("vocab_size"),
    }
    if (params["heads"] * params[HEAD_DIM.name]) % params[O_GROUPS.name]:
        raise c.error("o_groups", f" = {params[O_GROUPS.name]}: must divide num_attention_heads x head_dim")
    if CSA_TYPE in types:
        params |= {
            CSA_RATE.name: _rate(c, rates, CSA_TYPE),
            INDEX_TOPK.name: c.int("index_topk", why="some layers are compressed_sparse_attention"),
            INDEX_HEADS.name: c.int("index_n_heads", why="some layers are compressed_sparse_attention"),
            INDEX_HEAD_DIM.name: c.int("index_head_dim", why="some layers are compressed_sparse_attention"),
        }
    if HCA_TYPE in types:
        params[HCA_RATE.name] = _rate(c, rates, HCA_TYPE)
    width = c.int("moe_intermediate_size")
    flags = silu_gated(c) | weight_flags(c, tied=False, extra=ATTENTION_SINKS.flags)
    flags |= LOW_RANK_QUERY.flags | SHARED_KV_PROJECTION.flags | GROUPED_OUTPUT.flags | MHC.flags
    return Decoder(
        params=params,
        flags=flags,
        attention=[_KINDS[t][0] for t in types],
        attention_kinds={name: (kind_flags, {}) for name, kind_flags in _KINDS.values()},
        mlps=Layers.uniform("moe", layers),
        # Every layer: the router (hash layers still run it for the weights), the top-k routed
        # experts and one shared expert of the same width.
        mlp_kinds={"moe": moe_mlp(c.int("n_routed_experts"), c.int("num_experts_per_tok"), width, width)},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="deepseek_v4",
            title="DeepSeek-V4",
            read=deepseek_v4,
            summary="DeepseekV4Config: sliding, CSA and HCA layers, shared-KV MQA, grouped output, sinks, mHC, MoE on every layer",
            aliases={"num_local_experts": "n_routed_experts", "intermediate_size": "moe_intermediate_size"},
        ),
    ]
