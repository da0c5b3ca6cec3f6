"""Hugging Face reader of ``deepseek_v32`` (DeepSeek-V3.2): DeepSeek-V3's MLA and MoE, every
layer with DeepSeek sparse attention and its own lightning indexer."""

from collections.abc import Iterable

import attrs

from flopsreg.patterns.dsa_indexer import INDEX_HEAD_DIM, INDEX_HEADS
from flopsreg.patterns.hf.deepseek import deepseek
from flopsreg.patterns.hf.layer_types import INDEXED, INDEXED_SHARED
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl

# transformers' base config renames the legacy string on load (configuration_utils.py).
_INDEXED_NAMES = (INDEXED, "deepseek_sparse_attention")


def indexed_layers(c: Fields, layers: int) -> None:
    """Refuse a ``layer_types`` other than DSA everywhere: the DSA modeling builds every layer so."""
    given = c.layer_types(layers, _INDEXED_NAMES + ("full_attention", "sliding_attention"))
    for i, entry in enumerate(given or ()):
        if entry not in _INDEXED_NAMES:
            raise c.error(
                f"layer_types[{i}]",
                f" = {entry!r}: model_type {c.model_type} runs DeepSeek sparse attention on every layer "
                f"(expected {INDEXED!r})",
            )


def mlp_layer_types(c: Fields, decoder: Decoder) -> None:
    """Refuse an ``mlp_layer_types`` that differs from the first_k_dense_replace plan the reader counts."""
    given = c.data.get("mlp_layer_types")
    if given is None:
        return
    planned = decoder.mlps.map(lambda mlp: "sparse" if mlp == "moe" else "dense")
    if not isinstance(given, list) or Layers.of(given) != planned:
        first_dense = c.int("first_k_dense_replace", minimum=0)
        expected = list(planned) if len(planned) <= 256 else f"{first_dense} 'dense' then 'sparse'"
        raise c.error(
            "mlp_layer_types",
            f" = {given!r:.200}: differs from first_k_dense_replace = {first_dense} (expected {expected!r}); only that plan is supported",
        )


def dsa(c: Fields, indexers: Iterable[bool]) -> Decoder:
    """DeepSeek-V3's MLA + MoE decoder with DSA on every layer; *indexers[i]*: layer i runs its own indexer."""
    decoder = deepseek(c)
    if "q_lora" not in decoder.flags:
        raise c.error("q_lora_rank", " = null: DSA's indexer reads the query latent, so it needs a q_lora_rank")
    layers = len(decoder.mlps)
    indexed_layers(c, layers)
    mlp_layer_types(c, decoder)
    params = {**decoder.params, INDEX_HEADS.name: c.int("index_n_heads"), INDEX_HEAD_DIM.name: c.int("index_head_dim")}
    attention = Layers.of(indexers).map(lambda own: INDEXED if own else INDEXED_SHARED)
    return attrs.evolve(decoder, params=params, attention=attention)


def deepseek_v32(c: Fields) -> Decoder:
    """DeepseekV32Config: every layer DSA with its own indexer (its modeling has no indexer_types)."""
    if c.given("indexer_types"):
        raise c.error("indexer_types", ": not read by model_type deepseek_v32, which runs an indexer on every layer; remove it")
    return dsa(c, Layers.uniform(True, c.int("num_hidden_layers")))


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="deepseek_v32",
            title="DeepSeek-V3.2",
            read=deepseek_v32,
            summary="DeepseekV32Config: MLA with DSA (top-k keys, lightning indexer) on every layer, MoE after first_k_dense_replace",
            aliases={"num_local_experts": "n_routed_experts"},
        ),
    ]
