"""compare(): totals per convention and every difference traced to a slot, with its reason."""

import json

import attrs
import pytest

import flopsreg
import flopsreg.compare
from flopsreg.cli import main

S = 4096


@pytest.fixture(scope="module")
def gemma(registry):
    model = flopsreg.Model.example("gemma-3-4b")
    return attrs.evolve(model, params={**model.params, "padded_vocab": 262272})


def test_totals_and_ratios(registry, gemma):
    comparison = registry.compare(gemma, seq_len=S)
    names = [t.convention for t in comparison.totals]
    assert names == ["exact", "chunked_scan", "megatron", "slime"]
    exact = comparison.totals[0]
    assert exact.result.training == 98_999_344_300_032  # anchors 10.3
    for total in comparison.totals:
        assert total.ratio(exact.result) == flopsreg.compare.Fraction(total.result.forward, exact.result.forward)


def test_sliding_layers_counted_as_full_causal_are_explained(registry, gemma):
    comparison = registry.compare(gemma, seq_len=S)
    (local_mask,) = [
        d for d in comparison.differences
        if d.convention == "megatron" and d.slot == "attention.mask" and "'local'" in d.where
    ]
    assert local_mask.exact_pattern == "sliding_window" and local_mask.pattern == "megatron_causal"
    assert local_mask.where.startswith("29 layers")
    # core of a local layer: s^2/2 pairs against the exact sliding-window pairs
    exact_pairs = 1024 * 1025 // 2 + (S - 1024) * 1024
    ((slot, ratio),) = local_mask.effects
    assert slot == "attention.core" and ratio == flopsreg.compare.Fraction(S * S, 2 * exact_pairs)
    assert "sliding windows and chunks are counted as full causal" in str(local_mask)


def test_geglu_counted_with_two_matmuls_by_megatron(registry, gemma):
    comparison = registry.compare(gemma, seq_len=S)
    ffn = [d for d in comparison.differences if d.convention == "megatron" and d.slot == "mlp.activation"]
    assert {d.effects for d in ffn} == {(("mlp", flopsreg.compare.Fraction(2, 3)),)}


def test_rules_that_change_no_number_are_not_reported(registry, gemma):
    """slime's '3 FFN matmuls always' equals exact on a gated model: no difference to explain."""
    comparison = registry.compare(gemma, seq_len=S)
    assert not [d for d in comparison.differences if d.convention == "slime" and d.slot == "mlp.activation"]


def test_a_convention_that_cannot_count_the_model_says_why(registry):
    model = flopsreg.Model.example("gemma-3-4b")  # no padded_vocab
    comparison = registry.compare(model, seq_len=S)
    megatron = next(t for t in comparison.totals if t.convention == "megatron")
    assert megatron.result is None and "padded_vocab" in megatron.error


def test_cli_compare_text_and_json(capsys):
    assert main(["compare", "gemma-3-4b", "--seq-len", "4096", "--param", "padded_vocab=262272"]) == 0
    out = capsys.readouterr().out
    assert "megatron_causal instead of sliding_window" in out and "98,999,344,300,032" in out
    assert main(["compare", "gemma-3-4b", "--seq-len", "4096", "--param", "padded_vocab=262272", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["conventions"][0] == {
        "convention": "exact",
        "forward_flops": str(98_999_344_300_032 // 3),
        "training_flops": "98999344300032",
        "forward_flops_per_token": str(98_999_344_300_032 // 3 // 4096),  # divisible: 8,056,587,264
        "training_flops_per_token": str(98_999_344_300_032 // 4096),
        "ratio_to_exact": 1.0,
    }
    assert 98_999_344_300_032 % (3 * 4096) == 0
    assert any(d["slot"] == "attention.mask" for d in data["differences"])


def test_cli_eval_with_a_convention(capsys):
    assert main(["eval", "deepseek-v3", "--seq-len", "4096", "--convention", "slime", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["convention"] == "slime" and data["training_flops"] == "924193747107840"  # anchors 10.2
