"""Multimodal wrappers as Hub configs are: flat Qwen2-VL / Qwen2.5-VL / Fuyu / GLM-5 Next configs
(no text_config), and whose tie_word_embeddings ties the head, against transformers' own counts
recorded by tests/data/hf_forward/measure_wrapflat.py in forward_wrapflat.json (parameters on the
meta device for the class defaults with each combination of the wrapper's and the text_config's
tie_word_embeddings; tiny flat configs with a text-only forward under FlopCounterMode).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from recorded_forward import forward_at

import flopsreg
from flopsreg.declarations.readers import HFReader

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_wrapflat.json").read_text())
CASES = [(model_type, case) for model_type, entry in sorted(RECORD["tying"].items()) for case in sorted(entry["cases"])]
# Glm5NextForConditionalGeneration's vision tower is not declared (docs/hf-configs.md): its total is
# the language model's, which the tying changes as much as the whole model's.
NO_TOWERS = {"glm5_next"}
# MllamaTextConfig's tie_word_embeddings true is refused by name (embed_tokens has 8 rows more than
# lm_head): the text path transformers runs for it is no tied model.
REFUSED = {("mllama", "wrapper_false_text_true"), ("mllama", "wrapper_true_text_true")}


def _config(model_type: str, case: str) -> dict:
    entry = RECORD["tying"][model_type]
    config = copy.deepcopy(entry["config"])
    config["tie_word_embeddings"] = entry["cases"][case]["wrapper"]
    config["text_config"]["tie_word_embeddings"] = entry["cases"][case]["text_config"]
    return config


def test_the_record_names_its_versions_and_every_wrapper_was_built():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert all(len(entry["cases"]) == 4 for entry in RECORD["tying"].values())
    assert {"qwen2_vl", "qwen2_5_vl", "qwen3_vl", "gemma3", "llama4", "fuyu"} <= set(RECORD["tying"])


@pytest.mark.parametrize(("model_type", "case"), [c for c in CASES if c not in REFUSED])
def test_the_head_is_tied_by_the_tie_word_embeddings_transformers_reads(registry, model_type, case):
    measured = RECORD["tying"][model_type]["cases"][case]
    model = flopsreg.Model.from_hf_config(_config(model_type, case))
    assert ("tied_embeddings" in model.flags) == measured["tied"]
    if model_type not in NO_TOWERS:
        assert registry.parameters(model).total == measured["parameters"]


@pytest.mark.parametrize("model_type", sorted(NO_TOWERS))
def test_a_wrapper_without_its_towers_declared_ties_as_much_as_transformers(registry, model_type):
    totals = {case: registry.parameters(flopsreg.Model.from_hf_config(_config(model_type, case))).total for case in RECORD["tying"][model_type]["cases"]}
    measured = {case: entry["parameters"] for case, entry in RECORD["tying"][model_type]["cases"].items()}
    assert {case: totals[case] - totals["wrapper_false_text_false"] for case in totals} == {
        case: measured[case] - measured["wrapper_false_text_false"] for case in measured
    }


@pytest.mark.parametrize(("model_type", "case"), sorted(REFUSED))
def test_mllama_refuses_a_tied_text_config_by_name(model_type, case):
    with pytest.raises(flopsreg.ModelError, match=r"text_config\.tie_word_embeddings = true: embed_tokens has 8 rows more"):
        flopsreg.Model.from_hf_config(_config(model_type, case))


@pytest.mark.parametrize("name", sorted(RECORD["models"]))
def test_a_flat_config_holds_transformers_parameters_and_forward_flops(registry, eager_registry, name):
    measured = RECORD["models"][name]
    assert "text_config" not in measured["config"]
    model = flopsreg.Model.from_hf_config(measured["config"])
    assert ("tied_embeddings" in model.flags) == measured["tied"]
    assert registry.parameters(model).total == measured["parameters"]
    assert forward_at(eager_registry, model, measured["forward"]) == measured["forward"]


@pytest.mark.parametrize("model_type", sorted(RECORD["flat_defaults"]))
def test_flattened_class_defaults_read_as_transformers_builds_them(registry, model_type):
    measured = RECORD["flat_defaults"][model_type]
    nested = flopsreg.Model.from_hf_config(_config(model_type, "wrapper_true_text_false"))
    flat = flopsreg.Model.from_hf_config(measured["config"])
    assert measured["tied"] and "tied_embeddings" in flat.flags
    assert measured["parameters"] == RECORD["tying"][model_type]["cases"]["wrapper_true_text_false"]["parameters"]
    assert registry.parameters(flat).total == registry.parameters(nested).total
    assert registry.evaluate(flat, seq_len=33).forward == registry.evaluate(nested, seq_len=33).forward


def test_a_wrapper_without_a_flat_form_still_refuses_a_missing_text_config():
    with pytest.raises(flopsreg.ModelError, match=r"text_config: missing \(model_type qwen3_vl keeps its decoder there\)"):
        flopsreg.Model.from_hf_config({"model_type": "qwen3_vl", "hidden_size": 64})


def test_flat_keys_and_tying_belong_to_a_wrapper():
    with pytest.raises(ValueError, match="describe a wrapper"):
        HFReader(name="x", summary="x", read=lambda c: None, tied_by="wrapper")
    with pytest.raises(ValueError, match="tied_by"):
        HFReader(name="x", summary="x", text_config="y", tied_by="outer")
