"""Grouped-query attention with value heads of their own width (patterns/value_head_dim.py, read
from MiMo-V2-Flash) against a literal loop: every multiply-add of the key and value projections
and of the core, token by token, head by head, over the causal pairs."""

from __future__ import annotations

import pytest

import flopsreg


def _model(hidden: int, heads: int, kv_heads: int, head_dim: int, value_dim: int) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config({
        "model_type": "mimo_v2_flash", "hidden_size": hidden, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
        "head_dim": head_dim, "v_head_dim": value_dim, "intermediate_size": 8, "vocab_size": 11, "num_hidden_layers": 1,
        "layer_types": ["full_attention"], "mlp_layer_types": ["dense"],
    })


def _oracle(seq_len: int, hidden: int, heads: int, kv_heads: int, head_dim: int, value_dim: int) -> dict[str, int]:
    """FLOPs (2 per multiply-add) of each step, one output element at a time."""
    flops = {"attention.query": 0, "attention.projection": 0, "attention.core": 0, "attention.output": 0}
    for query in range(seq_len):
        flops["attention.query"] += sum(2 * hidden for _ in range(heads * head_dim))
        flops["attention.projection"] += sum(2 * hidden for _ in range(kv_heads * head_dim))  # this token's key
        flops["attention.projection"] += sum(2 * hidden for _ in range(kv_heads * value_dim))  # and value
        for _head in range(heads):
            for _key in range(query + 1):  # causal: keys 0 .. query
                flops["attention.core"] += 2 * head_dim  # q . k
                flops["attention.core"] += 2 * value_dim  # p * v, summed into the head's output
        flops["attention.output"] += sum(2 * heads * value_dim for _ in range(hidden))
    return flops


@pytest.mark.parametrize(("seq_len", "hidden", "heads", "kv_heads", "head_dim", "value_dim"), [
    (1, 6, 2, 1, 4, 2), (5, 10, 4, 2, 3, 5), (7, 9, 6, 3, 4, 4), (6, 8, 4, 4, 6, 1),
])
def test_projections_and_core_equal_a_literal_loop(registry, seq_len, hidden, heads, kv_heads, head_dim, value_dim):
    (unit,) = registry.select(_model(hidden, heads, kv_heads, head_dim, value_dim)).kinds
    flops = unit.flops(seq_len)
    assert {slot: flops[slot] for slot in ("attention.query", "attention.projection", "attention.core", "attention.output")} == _oracle(
        seq_len, hidden, heads, kv_heads, head_dim, value_dim
    )


def test_the_weights_hold_keys_and_values_of_their_own_widths(registry):
    """k_proj 10 -> 2 x 3, v_proj 10 -> 2 x 5; o_proj reads 4 x 5."""
    slots = registry.parameters(_model(10, 4, 2, 3, 5)).by_slot()
    assert (slots["attention.projection"], slots["attention.output"], slots["attention.query"]) == (10 * 2 * 3 + 10 * 2 * 5, 4 * 5 * 10, 10 * 4 * 3)
