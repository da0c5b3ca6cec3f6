"""Shared blocks: a layer kind's ``weight_copies`` says how many times the model holds its weights,
however many layers run it; FLOPs still count every layer."""

import pytest

import flopsreg

BASE = {"hidden": 64, "heads": 4, "kv_heads": 4, "head_dim": 16, "ffn_hidden": 96, "vocab": 100}


def _model(copies: int | None, layers: int = 6) -> flopsreg.Model:
    return flopsreg.Model(
        name="shared",
        flags={"mlp", "gated", "lm_head"},
        params=BASE,
        kinds={"block": flopsreg.LayerKind(weight_copies=copies)},
        plan=flopsreg.Plan.uniform("block", layers),
    )


def test_a_shared_block_holds_its_weights_per_copy_and_runs_per_layer(registry):
    per_layer, shared = registry.parameters(_model(None)), registry.parameters(_model(2))
    one_layer = (per_layer.total - per_layer.embedding - per_layer.head) // 6
    # attention 4 h^2 and a gated MLP 3 h F per layer, by hand
    assert one_layer == 4 * 64 * 64 + 3 * 64 * 96
    assert shared.total == per_layer.embedding + per_layer.head + 2 * one_layer
    assert registry.evaluate(_model(2), seq_len=128).forward == registry.evaluate(_model(None), seq_len=128).forward


def test_more_copies_than_layers_is_one_clear_line():
    with pytest.raises(flopsreg.ModelError, match=r"kinds.block.weight_copies = 7: more copies of its weights than the 6 layers"):
        _model(7)
    with pytest.raises(flopsreg.ModelError, match="weight_copies"):
        _model(0)


def test_weight_copies_round_trip_through_a_model_file():
    model = _model(1)
    text = model.to_toml()
    assert "weight_copies = 1" in text
    assert flopsreg.Model.from_toml_string(text) == model
    assert "weight_copies" not in _model(None).to_toml()
