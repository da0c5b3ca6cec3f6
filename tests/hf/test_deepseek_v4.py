"""DeepSeek-V4's patterns against brute force over the masks, hand-counted multiply-adds, and
its reader's refusals of the keys a config cannot resolve."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

import flopsreg
from flopsreg.errors import ModelError
from flopsreg.formula.exact import compile_exact
from flopsreg.patterns.hyper_connections import MHC, MHC_HEAD
from flopsreg.patterns.window_compression import CSA_INDEX_MASK, CSA_MASK, HCA_MASK


def _brute_pairs(s: int, window: int, rate: int, topk: int | None) -> int:
    """Literal loops over queries, raw keys and compressed entries of one sequence."""
    total = 0
    for t in range(s):
        total += sum(1 for k in range(s) if 0 <= t - k < window)
        closed = sum(1 for w in range(s // rate) if (w + 1) * rate <= t + 1)  # entry w pools tokens w m .. (w+1) m - 1
        total += closed if topk is None else min(topk, closed)
    return total


@pytest.mark.parametrize("window, rate, topk", list(itertools.product((1, 3, 8), (1, 2, 4, 5), (1, 2, 3, 7))))
def test_the_csa_mask_counts_the_window_and_the_kept_entries(window, rate, topk):
    pairs = compile_exact(CSA_MASK.formula)
    for s in range(1, 60):
        assert pairs({"seq_len": s, "window": window, "csa_rate": rate, "index_topk": topk}) == _brute_pairs(s, window, rate, topk)


@pytest.mark.parametrize("window, rate", list(itertools.product((1, 3, 8), (1, 2, 4, 5, 128))))
def test_the_hca_mask_counts_the_window_and_every_closed_entry(window, rate):
    pairs = compile_exact(HCA_MASK.formula)
    for s in range(1, 300, 7):
        assert pairs({"seq_len": s, "window": window, "hca_rate": rate}) == _brute_pairs(s, window, rate, None)


def test_the_indexer_scores_every_closed_entry():
    seen = compile_exact(CSA_INDEX_MASK.formula)
    for s, rate in itertools.product(range(1, 40), (1, 3, 4)):
        pairs = sum(1 for t in range(s) for w in range(s // rate) if (w + 1) * rate <= t + 1)
        assert seen({"seq_len": s, "csa_rate": rate}) == pairs


def test_mhc_by_hand():
    # n = 4 streams of h = 4096 (DeepSeek-V4-Flash), one token. Per sublayer: fn reads n h = 16384
    # features into (2 + n) n = 24 weights, 16384 x 24 = 393,216 multiply-adds; comb^T (4 x 4)
    # mixes 4 streams of 4096: 4 x 4 x 4096 = 65,536. Two sublayers, 2 FLOPs each:
    # 2 x 2 x (393,216 + 65,536) = 1,835,008. The head: 16384 x 4 = 65,536 MACs = 131,072 FLOPs.
    at = {"seq_len": 1, "hidden": 4096, "hc_mult": 4}
    assert compile_exact(MHC.formula)(at) == 1_835_008
    assert compile_exact(MHC_HEAD.formula)(at) == 131_072
    # Weights: per sublayer fn 24 x 16384 = 393,216, base 24, scale 3; the head 4 x 16384 + 4 + 1.
    assert compile_exact(MHC.weights)(at) == 2 * (393_216 + 24 + 3)
    assert compile_exact(MHC_HEAD.weights)(at) == 65_536 + 5


RECORD = Path(__file__).parents[1] / "data" / "hf_forward" / "forward_deepseek_v4.json"
BASE = json.loads(RECORD.read_text())["models"]["deepseek_v4"]["config"]


def _read(**changes):
    config = {k: v for k, v in {**BASE, **changes}.items() if v is not None}
    return flopsreg.Model.from_hf_config(config)


@pytest.mark.parametrize(
    "changes, key",
    [
        ({"layer_types": None}, "layer_types: missing"),
        ({"layer_types": None, "compress_ratios": [0, 4, 2, 4]}, "compress_ratios[2] = 2"),
        ({"compress_rates": None}, "compress_rates['compressed_sparse_attention']: missing"),
        ({"compress_rates": {"compressed_sparse_attention": 4}}, "compress_rates['heavily_compressed_attention']: missing"),
        ({"n_shared_experts": 2}, "n_shared_experts = 2"),
        ({"num_key_value_heads": 8}, "num_key_value_heads = 8"),
        ({"mlp_layer_types": ["dense", "moe", "moe", "moe"]}, "mlp_layer_types"),
        ({"intermediate_size": 64}, "intermediate_size"),
        ({"mlp_bias": True}, "mlp_bias = true"),
        ({"o_groups": 3}, "o_groups = 3"),
        ({"index_topk": None}, "index_topk: missing"),
    ],
)
def test_the_reader_names_the_key_it_cannot_resolve(changes, key):
    with pytest.raises(ModelError, match=key.replace("[", r"\[").replace("]", r"\]")):
        _read(**changes)


def test_legacy_compress_ratios_give_the_layer_types_and_the_class_rates():
    legacy = _read(layer_types=None, compress_rates=None, compress_ratios=[0, 4, 128, 4, 0])
    assert [layer.kind for layer in legacy.layers] == ["sliding", "csa", "hca", "csa"]
    assert (legacy.params["csa_rate"], legacy.params["hca_rate"]) == (4, 128)
    # The legacy scalar folds into compress_rates, as DeepseekV4Config.__post_init__ does.
    assert _read(compress_rate_csa=2).params["csa_rate"] == 2


def test_hash_and_topk_moe_layers_count_the_same():
    assert _read(mlp_layer_types=["moe"] * 4).plan == _read().plan


@pytest.mark.parametrize("convention", ["slime", "megatron_bridge", "megatron"])
def test_frameworks_without_a_compressed_attention_branch_refuse(registry, convention):
    with pytest.raises(flopsreg.FlopsregError, match="a refusal, not a guess"):
        registry.evaluate(flopsreg.Model.example("deepseek-v4-flash"), seq_len=4096, convention=convention)


def test_the_example_counts_as_its_hugging_face_config(registry):
    example = flopsreg.Model.example("deepseek-v4-flash")
    config = flopsreg.Model.from_hf_config(Path(__file__).parents[1] / "data" / "hf" / "deepseek-v4-defaults.json")
    for s in (1, 4096, 131072):
        assert registry.evaluate(example, seq_len=s).forward == registry.evaluate(config, seq_len=s).forward
    assert registry.parameters(example).total == registry.parameters(config).total == 284_325_869_015
