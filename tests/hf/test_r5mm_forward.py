"""The text paths of multimodal wrappers (Gemma 4 unified, Fuyu, GIT, Mllama, Phi-4-multimodal)
against real forward passes and parameter counts, recorded by
tests/data/hf_forward/measure_r5mm.py in forward_r5mm.json: tiny odd-width configs run on
text-only input under torch's FlopCounterMode at two lengths; the whole model's parameters and
each tower's apart; the class-default config's parameters on the meta device (saved as
tests/data/hf/<type>-defaults.json). Those numbers come from torch and transformers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from recorded_forward import forward_at, mlp_per_layer, pairs_per_layer

import flopsreg

DATA = Path(__file__).parents[1] / "data"
RECORD = json.loads((DATA / "hf_forward" / "forward_r5mm.json").read_text())
MODELS = sorted(RECORD["models"])
DEFAULTS = sorted(RECORD["defaults"])
WITH_PARTS = [("models", name) for name in MODELS if "parts" in RECORD["models"][name]] + [
    ("defaults", name) for name in DEFAULTS if "parts" in RECORD["defaults"][name]
]


def _model(name: str) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(RECORD["models"][name]["config"])


def test_every_case_ran_and_every_default_built():
    assert RECORD["transformers"] == "5.24.0" and MODELS
    assert all("totals" in RECORD["models"][name] for name in MODELS)
    assert all("parameters" in RECORD["defaults"][name] for name in DEFAULTS)


@pytest.mark.parametrize("name", MODELS)
def test_the_whole_forward_equals_flop_counter_mode_at_both_lengths(eager_registry, name):
    totals = RECORD["models"][name]["totals"]
    assert forward_at(eager_registry, _model(name), totals) == totals


@pytest.mark.parametrize("name", [name for name in MODELS if RECORD["models"][name]["pairs"]])
def test_pairs_per_layer_equal_what_the_masks_let_through(registry, name):
    assert pairs_per_layer(registry, _model(name), RECORD["seq_lens"][-1]) == RECORD["models"][name]["pairs"]


def _recorded_mlp(name: str, index: int) -> int:
    """Layer *index*'s MLP FLOPs as recorded: its ``mlp`` module wherever the wrapper keeps its
    layers; GIT's BERT-style layer splits it into ``intermediate`` and ``output`` (whose LayerNorm
    FlopCounterMode does not count). Mllama's counted layer *index* is its index-th layer that is
    not a cross-attention layer (those are skipped on text, and recorded as running nothing)."""
    modules, config = RECORD["models"][name]["modules"], RECORD["models"][name]["config"]
    if name == "mllama":
        text = config["text_config"]
        index = [i for i in range(text["num_hidden_layers"]) if i not in text["cross_attention_layers"]][index]
    if name.startswith("git"):
        return modules[f"git.encoder.layer.{index}.intermediate"] + modules[f"git.encoder.layer.{index}.output"]
    (key,) = [key for key in modules if key.endswith(f"layers.{index}.mlp")]
    return modules[key]


@pytest.mark.parametrize("name", MODELS)
def test_every_layers_mlp_equals_its_module(eager_registry, name):
    """Each layer's MLP against the recorded module of that layer."""
    model = _model(name)
    for layer, ours in zip(model.layers, mlp_per_layer(eager_registry, model, RECORD["seq_lens"][-1])):
        assert ours == _recorded_mlp(name, layer.index), (name, layer.index)


def _whole(entry: dict) -> int:
    """The whole model's parameters: of the class AutoModelForCausalLM built, or of the wrapper
    class holding it where that one is the text model alone (Mllama: MllamaForConditionalGeneration)."""
    return entry.get("whole", entry)["parameters"]


@pytest.mark.parametrize("name", MODELS)
def test_parameters_equal_what_transformers_allocates(registry, name):
    assert registry.parameters(_model(name)).total == _whole(RECORD["models"][name])


@pytest.mark.parametrize(("group", "name"), WITH_PARTS)
def test_every_tower_and_the_language_model_equal_transformers(registry, group, name):
    """``params`` reports each tower apart: their parameters (and nn.Embedding weights) as
    transformers holds them under each tower's module, the language model the rest."""
    entry = RECORD[group][name]
    counts = registry.parameters(flopsreg.Model.from_hf_config(entry["config"]))
    assert {part: (t.parameters, t.embeddings) for part, t in counts.towers.items()} == {
        part: (p["parameters"], p["embeddings"]) for part, p in entry["parts"].items()
    }
    assert counts.language_model == _whole(entry) - sum(p["parameters"] for p in entry["parts"].values())


@pytest.mark.parametrize("name", DEFAULTS)
def test_class_default_parameters_equal_the_meta_device_model(registry, name):
    entry = RECORD["defaults"][name]
    assert registry.parameters(flopsreg.Model.from_hf_config(entry["config"])).total == _whole(entry)


@pytest.mark.parametrize("model_type", [name for name in DEFAULTS if "-" not in name])
def test_the_saved_class_defaults_are_the_recorded_ones(model_type):
    path = DATA / "hf" / f"{model_type.replace('_', '-')}-defaults.json"
    assert json.loads(path.read_text()) == RECORD["defaults"][model_type]["config"]


@pytest.mark.parametrize("model_type", ["gemma4_assistant", "gemma4_unified_assistant"])
def test_the_assistants_are_refused_by_name_with_the_reason(model_type):
    with pytest.raises(flopsreg.ModelError) as caught:
        flopsreg.Model.from_hf_config({"model_type": model_type})
    message = str(caught.value)
    assert "cannot be counted from its config" in message and "shared_kv_states" in message and "did you mean" not in message


def test_mllamas_cross_attention_layers_run_nothing_on_text():
    """FlopCounterMode saw no FLOPs in layers 1 and 3 (cross-attention, skipped): flopsreg counts the other 3."""
    entry = RECORD["models"]["mllama"]
    assert not [key for key in entry["modules"] if key.startswith(("model.layers.1", "model.layers.3"))]
    assert len(_model("mllama").layers) == 3


def test_a_bare_mllama_text_config_is_the_model_transformers_built_from_it(eager_registry):
    """AutoModelForCausalLM built MllamaForCausalLM from the wrapper's text_config alone, so the
    text_config read by itself (model_type mllama_text_model) is that model: same FLOPs,
    parameters and cross-attention part, no vision model."""
    entry = RECORD["models"]["mllama"]
    bare = flopsreg.Model.from_hf_config(entry["config"]["text_config"])
    assert forward_at(eager_registry, bare, entry["totals"]) == entry["totals"]
    counts = eager_registry.parameters(bare)
    assert counts.total == entry["parameters"]
    assert set(counts.towers) == {"cross_attention"}
    assert counts.towers["cross_attention"].parameters == entry["parts"]["cross_attention"]["parameters"]


@pytest.mark.parametrize(("cross", "message"), [
    ([1, 5], r"text_config.cross_attention_layers = \[1, 5\]: expected distinct layer indices below num_hidden_layers = 5"),
    ([1, 1], r"text_config.cross_attention_layers = \[1, 1\]: expected distinct layer indices"),
])
def test_a_cross_attention_layer_list_that_builds_other_layers_is_refused(cross, message):
    config = RECORD["models"]["mllama"]["config"]
    with pytest.raises(flopsreg.ModelError, match=message):
        flopsreg.Model.from_hf_config({**config, "text_config": {**config["text_config"], "cross_attention_layers": cross}})


def test_mllamas_tied_head_is_refused_by_name():
    config = RECORD["models"]["mllama"]["config"]
    with pytest.raises(flopsreg.ModelError, match=r"tie_word_embeddings = true: embed_tokens has 8 rows more than lm_head"):
        flopsreg.Model.from_hf_config({**config, "text_config": {**config["text_config"], "tie_word_embeddings": True}})


def test_the_unified_towers_add_no_flops(registry):
    """The embedders' weights are counted, their FLOPs are not: the text-only forward is the text_config's."""
    config = RECORD["models"]["gemma4_unified"]["config"]
    whole, alone = (flopsreg.Model.from_hf_config(c) for c in (config, config["text_config"]))
    assert set(whole.towers) == {"vision_embedder", "audio_embedder"} and not alone.towers
    assert registry.evaluate(whole, seq_len=24).forward == registry.evaluate(alone, seq_len=24).forward
