"""compare(): totals per convention and every difference traced to a slot, with its reason."""

import json

import attrs
import pytest

import flopsreg
import flopsreg.engine.compare
from flopsreg.cli import main

S = 4096


@pytest.fixture(scope="module")
def gemma(registry):
    model = flopsreg.Model.example("gemma-3-4b")
    return attrs.evolve(model, params={**model.params, "padded_vocab": 262272})


def test_totals_and_ratios(registry, gemma):
    comparison = registry.compare(gemma, seq_len=S)
    names = [t.convention for t in comparison.totals]
    assert names == ["exact", *registry.conventions]
    exact = comparison.totals[0]
    assert exact.result.training == 98_999_344_300_032  # anchors 10.3
    for total in comparison.totals:
        if total.result is None:  # a convention that refuses this model (verl: no gemma3 estimator)
            assert total.error
            continue
        assert total.ratio(exact.result) == flopsreg.engine.compare.Fraction(total.result.forward, exact.result.forward)


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
    assert slot == "attention.core" and ratio == flopsreg.engine.compare.Fraction(S * S, 2 * exact_pairs)
    assert "sliding windows and chunks are counted as full causal" in str(local_mask)


def test_geglu_counted_with_two_matmuls_by_megatron(registry, gemma):
    comparison = registry.compare(gemma, seq_len=S)
    ffn = [d for d in comparison.differences if d.convention == "megatron" and d.slot == "mlp.activation"]
    assert {d.effects for d in ffn} == {(("mlp", flopsreg.engine.compare.Fraction(2, 3)),)}


def test_rules_that_change_no_number_are_not_reported(registry, gemma):
    """slime's '3 FFN matmuls always' equals exact on a gated model: no difference to explain."""
    comparison = registry.compare(gemma, seq_len=S)
    assert not [d for d in comparison.differences if d.convention == "slime" and d.slot == "mlp.activation"]


def test_a_convention_that_cannot_count_the_model_says_why(registry):
    model = flopsreg.Model.example("gemma-3-4b")
    comparison = registry.compare(model, seq_len=S)
    verl = next(t for t in comparison.totals if t.convention == "verl")
    assert verl.result is None and "no FLOPs estimator for model_type 'gemma3'" in verl.error
    megatron = next(t for t in comparison.totals if t.convention == "megatron")  # pads the vocabulary itself
    assert megatron.error is None and megatron.result.training == registry.evaluate(gemma_given_padding(), seq_len=S, convention="megatron").training


def gemma_given_padding():
    """Gemma-3-4B with Megatron-LM's padded vocabulary given, as a Megatron-LM reader would give it."""
    model = flopsreg.Model.example("gemma-3-4b").with_param("padded_vocab", 262272)
    return attrs.evolve(model, flags=model.flags | {"padded_vocab_given"})


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


# -- block layers (MTP) ------------------------------------------------------------------------


def _mtp_model(*kinds: str) -> flopsreg.Model:
    """DeepSeek-V3 with its MTP block listing *kinds*; kind 'local' is its MoE layer with a window of W keys."""
    from hf_data import path

    model = flopsreg.Model.from_hf_config(path("deepseek-v3"), blocks=("mtp",))
    moe = model.kinds["moe"]
    local = flopsreg.LayerKind(flags=moe.flags | {"sliding_window"}, params={**moe.params, "window": W})
    extra = {"local": local} if "local" in kinds else {}
    return attrs.evolve(model, kinds={**model.kinds, **extra}, plan=attrs.evolve(model.plan, blocks={"mtp": kinds}))


W = 1024
N_H, D_QK, D_V = 128, 128 + 64, 128  # DeepSeek-V3: heads, qk_nope + qk_rope, v_head_dim


def test_a_replacement_inside_mtp_layers_is_traced_to_the_block_and_depths(registry):
    """slime counts windows as full causal: in the MTP layers of kind 'local' (depths 1 and 3) only."""
    comparison = registry.compare(_mtp_model("local", "moe", "local"), seq_len=S, conventions=["slime"])
    (mask,) = [d for d in comparison.differences if d.exact_pattern == "sliding_window"]
    assert (mask.block, mask.depths, mask.slot, mask.pattern) == ("mtp", (1, 3), "attention.mask", "slime_causal")
    assert mask.where == "2 layers of block 'mtp' at depths 1, 3 (kind 'local': 61, 63)"
    assert mask.reason == "s^2/2 pairs on every layer: sliding windows and chunks are counted as full causal"
    # core = 2 n_h (d_qk + d_v) pairs: the ratio is slime's s^2/2 pairs over the window's pairs
    window_pairs = W * (W + 1) // 2 + (S - W) * W
    assert mask.effects == (("attention.core", flopsreg.engine.compare.Fraction(S * S, 2 * window_pairs)),)
    assert "slime: 2 layers of block 'mtp' at depths 1, 3" in comparison.to_text()
    (entry,) = [d for d in comparison.to_dict()["differences"] if d["exact_pattern"] == "sliding_window"]
    assert entry["block"] == "mtp" and entry["depths"] == [1, 3] and entry["where"] == mask.where
    # The MoE MTP layer at depth 2 differs as the decoder's MoE layers do: full causal s(s+1)/2 -> s^2/2
    (causal,) = [d for d in comparison.differences if d.block == "mtp" and d.depths == (2,) and d.slot == "attention.mask"]
    assert causal.effects == (("attention.core", flopsreg.engine.compare.Fraction(S * S, S * (S + 1))),)


def test_block_layers_of_one_kind_are_planned_once_and_counted_per_layer(registry):
    """Two 'local' MTP layers are one unit counted twice: the total is that of three MoE MTP layers
    less twice the pairs a window hides, through the core's 2 n_h (d_qk + d_v) FLOPs per pair."""
    mixed, moe = registry.select(_mtp_model("local", "moe", "local")), registry.select(_mtp_model("moe", "moe", "moe"))
    assert [(unit.name, unit.count) for unit in mixed.blocks["mtp"]] == [("local", 2), ("moe", 1)]
    assert [(unit.name, unit.count) for unit in moe.blocks["mtp"]] == [("moe", 3)]
    hidden = S * (S + 1) // 2 - (W * (W + 1) // 2 + (S - W) * W)
    assert moe.forward(S) - mixed.forward(S) == 2 * (2 * N_H * (D_QK + D_V) * hidden)


def test_megatron_counts_qwen3_next_mtp_layer_as_gdn_and_compare_says_where(registry):
    """Megatron-LM runs the MTP layer as the last (softmax) decoder layer but counts it as Gated
    DeltaNet: only the block layer differs in its attention and mixer slots."""
    from test_mixers_2026 import qwen3_next_args

    model = flopsreg.Model.from_megatron_args(qwen3_next_args())
    comparison = registry.compare(model, seq_len=S, conventions=["megatron"])
    block = {d.slot: d for d in comparison.differences if d.block == "mtp"}
    core = block["attention.core"]
    assert core.where == "1 layer of block 'mtp' at depth 1 (kind 'full_as_gdn': 48)" and core.depths == (1,)
    assert (core.exact_pattern, core.pattern) == ("attention_core", "(none)")  # no attention slot there: no *_no_* pattern
    assert core.effects == (("attention.core", 0),)  # Megatron-LM counts no softmax attention there
    assert "Megatron-LM classifies as Gated DeltaNet" in core.reason
    gdn = block["mixer.core"]
    assert gdn.exact_pattern == "(none)" and gdn.effects == (("mixer.core", None),)  # exact runs no GDN there
    assert "Megatron-LM classifies as Gated DeltaNet" in gdn.reason
    # the decoder's softmax layers keep their attention under megatron
    assert not [d for d in comparison.differences if d.block is None and d.slot == "attention.core"]


def test_models_without_blocks_compare_as_before(registry, gemma):
    comparison = registry.compare(gemma, seq_len=S)
    assert comparison.exact.selection.blocks == {}
    assert all(d.block is None and d.depths == () for d in comparison.differences)
    assert {d.where for d in comparison.differences} <= {
        "29 layers (kind 'local': 0-4, 6-10, 12-16, 18-22, 24-28, 30-33)", "5 layers (kind 'global': 5, 11, 17, 23, 29)", "model-level",
    }
    for entry in comparison.to_dict()["differences"]:
        assert entry["block"] is None and entry["depths"] == []
