"""Doge's dynamic mask attention and product-key experts (patterns/dynamic_mask.py,
patterns/product_key_experts.py) against literal loops: the mask built as
DogeAttention.prepare_dynamic_mask builds it from random importances, and every multiply-add
DogeCDMoE runs, token by token."""

from __future__ import annotations

import math
import random

import pytest

import flopsreg
from flopsreg.formula.exact import compile_exact

MIN = -math.inf  # the dtype's minimum: what a masked entry holds


def _model(**changes) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config({
        "model_type": "doge", "hidden_size": 10, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
        "intermediate_size": 6, "vocab_size": 11, "num_hidden_layers": 1, **changes,
    })


def _kept_pairs(seq_len: int, keep: int, window: int | None, rng: random.Random) -> int:
    """prepare_dynamic_mask, literally: importances on the allowed keys, MIN elsewhere; when the
    row is longer than keep, every entry outside its top keep is masked; count what is left."""
    importance = [rng.uniform(0.0, 3.0) for _ in range(seq_len)]  # one per key, shared by the queries
    kept = 0
    for query in range(seq_len):
        row = [importance[key] if key <= query and (window is None or query - key < window) else MIN for key in range(seq_len)]
        if seq_len > keep:
            top = sorted(range(seq_len), key=lambda key: row[key], reverse=True)[:keep]
            row = [row[key] if key in top else MIN for key in range(seq_len)]
        kept += sum(value > MIN for value in row)
    return kept


@pytest.mark.parametrize("seq_len", [1, 3, 7, 8, 15])
@pytest.mark.parametrize(("keep", "window"), [(1, None), (4, None), (7, None), (20, None), (4, 2), (4, 6), (3, 3)])
def test_the_pairs_equal_what_a_literal_dynamic_mask_keeps(registry, seq_len, keep, window):
    changes = {"keep_window_size": keep, **({"sliding_window": window} if window else {})}
    (unit,) = registry.select(_model(**changes)).kinds
    pairs = compile_exact(unit.quantities["pairs"])({**unit.params, "seq_len": seq_len})
    assert pairs == _kept_pairs(seq_len, keep, window, random.Random(seq_len * 100 + keep))


def _cdmoe_oracle(seq_len: int, hidden: int, experts: int, top_k: int) -> int:
    """DogeCDMoE's experts, one token at a time (the dense MLP beside them is the mlp slot's)."""
    keys = math.floor(math.sqrt(experts))
    flops = 0
    for _token in range(seq_len):
        flops += 2 * hidden * 2 * keys  # router_gate: h -> 2 n_keys logits
        for _expert in range(top_k):
            flops += 2 * hidden  # down_embed[expert] . x
            flops += 2 * hidden  # weight x up_embed[expert], summed into the output
    return flops


@pytest.mark.parametrize(("seq_len", "experts", "top_k"), [(1, 4, 1), (5, 30, 3), (7, 16, 16), (3, 50, 2)])
def test_the_product_key_experts_equal_a_literal_loop(registry, seq_len, experts, top_k):
    model = _model(is_moe=True, num_experts=experts, num_experts_per_tok=top_k)
    (unit,) = registry.select(model).kinds
    assert unit.flops(seq_len)["mlp.parallel_experts"] == _cdmoe_oracle(seq_len, 10, experts, top_k)
    weights = registry.parameters(model).by_slot()
    assert weights["mlp.parallel_experts"] == 10 * 2 * math.floor(math.sqrt(experts)) + 2 * experts * 10  # router_gate, down/up_embed


def test_more_routed_experts_than_product_key_candidates_is_refused():
    with pytest.raises(flopsreg.ModelError, match=r"num_experts_per_tok = 17: DogeCDMoE picks the top k of floor\(sqrt\(num_experts\)\)\^2 = 16"):
        _model(is_moe=True, num_experts=20, num_experts_per_tok=17)


def test_dt_proj_and_its_bias(registry):
    """dt_proj: values (1 x 4) -> 1 importance, plus A (1); attention_bias adds dt_proj's bias (1)."""
    plain, biased = (registry.parameters(_model(attention_bias=flag)).by_slot()["attention.topk_indexer"] for flag in (False, True))
    assert (plain, biased) == (1 * 4 * 1 + 1, 1 * 4 * 1 + 2)
