"""Qwen3-VL-MoE (``qwen3_vl_moe``) against real forward passes, and the Qwen-VL towers over video:
tests/data/hf_forward/measure_qwenvid.py ran a tiny Qwen3VLMoeForConditionalGeneration on text and
on random images through transformers' own image processor and the processor's placeholder
expansion, the Qwen-VL vision towers on random frames through each family's video processor, all
under FlopCounterMode, and built the class default and the published Qwen3-VL-30B-A3B on the meta
device (forward_qwenvid.json). Each number below is compared with what was recorded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eager import eager_registry as make_eager_registry

import flopsreg

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_qwenvid.json").read_text())
HF = Path(__file__).parents[1] / "data" / "hf"
MOE = RECORD["models"]["qwen3_vl_moe"]


@pytest.fixture(scope="module")
def eager_registry():
    return make_eager_registry()


def _model(config: dict) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(config)


def _images(case: str) -> list[tuple[int, int]]:
    return [tuple(size) for size in MOE["cases"][case]["images"]]


def test_the_record_names_its_versions_and_every_case_ran():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert sorted(MOE["cases"]) == ["one", "text", "two"]
    assert MOE["class"] == "Qwen3VLMoeForConditionalGeneration"


def test_the_tiny_model_and_its_vision_tower_hold_transformers_parameters(registry):
    model = _model(MOE["config"])
    assert registry.parameters(model).total == MOE["parameters"]
    assert model.towers["vision"].parameters == MOE["visual_parameters"]


@pytest.mark.parametrize("variant", sorted(MOE["ties"]))
def test_the_wrappers_tie_word_embeddings_alone_ties_the_head(registry, variant):
    """Qwen3VLMoeConfig's false (its default) unties the head whatever the text config says (its
    class default is true); the wrapper's true ties it: as transformers builds each variant."""
    measured = MOE["ties"][variant]
    assert registry.parameters(_model(measured["config"])).total == measured["parameters"]


def test_the_tie_variants_differ_by_the_head_alone():
    ties, text = MOE["ties"], MOE["config"]["text_config"]
    head = text["hidden_size"] * text["vocab_size"]
    assert ties["text_true"]["parameters"] == ties["both_absent"]["parameters"] == ties["wrapper_true"]["parameters"] + head


def test_the_class_default_config_holds_transformers_parameters(registry):
    """tests/data/hf/qwen3-vl-moe-defaults.json is the recorded class-default config; totals equal."""
    measured = RECORD["defaults"]["qwen3_vl_moe"]
    config = json.loads((HF / "qwen3-vl-moe-defaults.json").read_text())
    assert config == measured["config"]
    model = _model(config)
    assert registry.parameters(model).total == measured["parameters"]
    assert model.towers["vision"].parameters == measured["visual_parameters"]


def test_the_published_30b_a3b_holds_transformers_parameters_and_the_model_cards_total(registry):
    measured = RECORD["published"]["qwen3-vl-30b-a3b"]
    model = _model(measured["config"])
    total = registry.parameters(model).total
    assert total == measured["parameters"] and model.towers["vision"].parameters == measured["visual_parameters"]
    assert round(total / 1e9, 2) == 31.07  # the model card's 31.07B


def test_text_alone_equals_flop_counter_mode(eager_registry):
    """The decoder: layer 0 dense (mlp_only_layers), 1 and 2 sparse (router, 2 of 5 experts a token)."""
    measured = MOE["cases"]["text"]
    assert eager_registry.evaluate(_model(MOE["config"]), seq_len=measured["sequence_length"], convention="eager").forward == measured["forward"]


def test_the_decoder_has_no_sliding_layers_and_sparse_layers_per_mlp_only_layers():
    config = {**MOE["config"], "text_config": {**MOE["config"]["text_config"], "use_sliding_window": True, "sliding_window": 4}}
    model = _model(config)  # Qwen3VLMoeTextConfig sets sliding_window None: no layer slides
    assert model == _model(MOE["config"])
    assert [layer.kind for layer in model.layers][0] != model.layers[1].kind == model.layers[2].kind


@pytest.mark.parametrize("case", ["one", "two"])
def test_the_tower_and_the_token_counts_equal_the_recorded_forward(registry, case):
    measured = MOE["cases"][case]
    result = registry.evaluate(_model(MOE["config"]), seq_len=MOE["text_tokens"], images=_images(case))
    assert [list(plan.grid) for plan in result.images.plans] == measured["image_grid_thw"]
    assert result.seqlens == (measured["sequence_length"],)
    assert result.images.forward == measured["visual"]


@pytest.mark.parametrize("case", ["one", "two"])
def test_the_whole_forward_equals_flop_counter_mode(eager_registry, case):
    """Tower plus the MoE language model over text and image tokens, to the FLOP (the language
    model under the eager convention, its s x s scores as FlopCounterMode sees them)."""
    measured = MOE["cases"][case]
    model = _model(MOE["config"])
    with_images = eager_registry.evaluate(model, seq_len=MOE["text_tokens"], images=_images(case))
    language_model = eager_registry.evaluate(model, seq_len=with_images.seqlens[0], convention="eager").forward
    assert language_model == measured["rest"]
    assert with_images.images.forward + language_model == measured["forward"]


@pytest.mark.parametrize("convention", ["megatron", "hf_trainer", "vllm"])
def test_a_convention_without_a_tower_term_refuses_the_images_by_name(registry, convention):
    with pytest.raises(flopsreg.FlopsregError, match=rf"convention '{convention}' has no term for the vision tower \(Qwen3-VL ViT\)"):
        registry.evaluate(_model(MOE["config"]), seq_len=9, images=[(100, 100)], convention=convention)
