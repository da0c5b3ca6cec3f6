"""``dots3_note_text`` (patterns/hf/dots3_note.py) against real forward passes and parameter
counts recorded in tests/data/hf_forward/forward_dots3.json.

tests/data/hf_forward/measure_dots3.py ran tiny configs (odd widths: hidden 44, 6 layers, indexed
layers 0, 1, 5 and sliding layers 2-4 with MLA widths of their own: from swa_* keys, from a
per_layer_config, or the class's swa_* defaults) through transformers 5.24 on the CPU (eager
attention, eager experts) under torch's FlopCounterMode at two lengths, and built the
class-default config on the meta device. Those numbers come from torch and transformers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eager import DSA_INDEXER_RECTANGLE
from eager import eager_registry as make_eager_registry
from recorded_forward import forward_at, mlp_per_layer, pairs_per_layer

import flopsreg
from flopsreg.errors import ModelError

DATA = Path(__file__).parents[1] / "data"
RECORD = json.loads((DATA / "hf_forward" / "forward_dots3.json").read_text())
MODELS = sorted(RECORD["models"])


@pytest.fixture(scope="module")
def eager_registry():
    """The eager convention with the indexer scoring every (query, key) pair, as Dots3NoteTextIndexer does."""
    return make_eager_registry(DSA_INDEXER_RECTANGLE)


def _model(name: str, **changes) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config({**RECORD["models"][name]["config"], **changes})


def test_every_case_ran_and_the_defaults_built():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert all("totals" in entry for entry in RECORD["models"].values())
    assert "parameters" in RECORD["defaults"]["dots3_note_text"]


@pytest.mark.parametrize("name", MODELS)
def test_the_whole_forward_equals_flop_counter_mode_at_both_lengths(eager_registry, name):
    totals = RECORD["models"][name]["totals"]
    assert forward_at(eager_registry, _model(name), totals) == totals


@pytest.mark.parametrize("name", MODELS)
def test_pairs_per_layer_equal_what_the_masks_let_through(registry, name):
    """Layers 2-4 slide (window 7), the others are causal under DSA (index_topk above the length)."""
    assert pairs_per_layer(registry, _model(name), RECORD["seq_lens"][-1]) == RECORD["models"][name]["pairs"]


@pytest.mark.parametrize("name", MODELS)
def test_every_layers_mlp_equals_its_module(eager_registry, name):
    modules, length = RECORD["models"][name]["modules"], RECORD["seq_lens"][-1]
    model = _model(name)
    for layer, ours in zip(model.layers, mlp_per_layer(eager_registry, model, length)):
        assert ours == modules[f"model.layers.{layer.index}.mlp"], (name, layer.index)


@pytest.mark.parametrize("name", MODELS)
def test_parameters_equal_what_transformers_allocates(registry, name):
    assert registry.parameters(_model(name)).total == RECORD["models"][name]["parameters"]


def test_class_default_parameters_equal_the_meta_device_model(registry):
    """As to_dict saves it (with the per_layer_config of the sliding layers' swa_* widths), and as
    tests/data/hf/dots3-note-text-defaults.json holds it (without: the class's swa_* defaults apply)."""
    entry = RECORD["defaults"]["dots3_note_text"]
    saved = json.loads((DATA / "hf" / "dots3-note-text-defaults.json").read_text())
    assert "per_layer_config" in entry["config"]
    assert saved == {key: value for key, value in entry["config"].items() if key != "per_layer_config"}
    for config in (entry["config"], saved):
        assert registry.parameters(flopsreg.Model.from_hf_config(config)).total == entry["parameters"]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"q_lora_rank": None}, "q_lora_rank"),
        ({"attention_bias": True}, "attention_bias"),
        ({"num_key_value_heads": 2}, "num_key_value_heads"),
        ({"swa_num_key_value_heads": 3}, "swa_num_key_value_heads"),
        ({"swa_head_dim": 15, "swa_qk_rope_head_dim": 4}, "swa_head_dim"),
        ({"per_layer_config": {"2": {"num_attention_heads": 2, "num_key_value_heads": 3}}}, r"per_layer_config\['2'\]\.num_key_value_heads"),
        ({"per_layer_config": {"2": {"head_dim": 14}}}, r"per_layer_config\['2'\]\.head_dim: not read per layer"),
    ],
)
def test_what_transformers_refuses_is_refused_by_name(changes, message):
    with pytest.raises(ModelError, match=message):
        _model("dots3_note_text", **changes)
