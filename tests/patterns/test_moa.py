"""JetMoE's mixture of attention heads (patterns/moa.py) against a literal loop over tokens and
their routed experts, and against the weights JetMoeMoA allocates.

The oracle routes each token to k of E experts (any choice: the count does not depend on which),
and counts 2 FLOPs per multiply-add of every matrix-vector product JetMoeMoA runs: the router's
h x E, each routed query expert's h x (n_kv d), each routed output expert's (n_kv d) x h.
"""

from __future__ import annotations

import random

import pytest

import flopsreg


def _moa_model(hidden: int, kv_heads: int, head_dim: int, experts: int, top_k: int) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config({
        "model_type": "jetmoe", "hidden_size": hidden, "num_key_value_heads": kv_heads, "kv_channels": head_dim,
        "intermediate_size": 8, "vocab_size": 11, "num_hidden_layers": 1, "num_local_experts": experts, "num_experts_per_tok": top_k,
    })


def _oracle(seq_len: int, hidden: int, kv_heads: int, head_dim: int, experts: int, top_k: int) -> tuple[int, int]:
    """(query-side FLOPs, output-side FLOPs), one token and one routed expert at a time."""
    rng = random.Random(seq_len * 1000 + experts)
    query = output = 0
    width = kv_heads * head_dim
    for _token in range(seq_len):
        query += 2 * hidden * experts  # router logits: one dot product of h per expert
        for _expert in rng.sample(range(experts), top_k):
            query += 2 * hidden * width  # input_linear[expert]: h -> n_kv d
            output += 2 * width * hidden  # output_linear[expert]: n_kv d -> h
    return query, output


@pytest.mark.parametrize(("seq_len", "hidden", "kv_heads", "head_dim", "experts", "top_k"), [
    (1, 6, 1, 2, 2, 1), (5, 10, 2, 3, 4, 2), (7, 9, 3, 4, 5, 3), (4, 8, 2, 2, 3, 3),
])
def test_the_projections_equal_a_literal_loop_over_routed_experts(registry, seq_len, hidden, kv_heads, head_dim, experts, top_k):
    model = _moa_model(hidden, kv_heads, head_dim, experts, top_k)
    (unit,) = registry.select(model).kinds
    flops = unit.flops(seq_len)
    assert (flops["attention.query"], flops["attention.output"]) == _oracle(seq_len, hidden, kv_heads, head_dim, experts, top_k)


@pytest.mark.parametrize(("hidden", "kv_heads", "head_dim", "experts", "top_k"), [(6, 1, 2, 2, 1), (10, 2, 3, 4, 2), (9, 3, 4, 5, 3)])
def test_the_weights_are_every_experts(registry, hidden, kv_heads, head_dim, experts, top_k):
    """JetMoeMoA: router.layer (E x h), input_linear (E, n_kv d, h), output_linear (E, h, n_kv d), bias (h)."""
    slots = registry.parameters(_moa_model(hidden, kv_heads, head_dim, experts, top_k)).by_slot()
    width = kv_heads * head_dim
    assert slots["attention.query"] == experts * hidden + experts * width * hidden
    assert slots["attention.output"] == experts * hidden * width + hidden


def test_more_routed_experts_than_experts_is_refused():
    with pytest.raises(flopsreg.ModelError, match="num_experts_per_tok = 3: JetMoeConfig requires at most num_local_experts = 2"):
        _moa_model(6, 1, 2, 2, 3)
