"""Multimodal wrappers: the language model and each tower (vision encoder, projector) apart, and
the whole model's total, against transformers' ``sum(p.numel())`` recorded on the meta device by
tests/data/hf_forward/measure_towers.py (class-default configs, the published configs of
tests/data/hf, tiny configs with odd tower widths). Only the language model's FLOPs are counted.
"""

import json
from pathlib import Path

import pytest

import flopsreg
from flopsreg.cli import main

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "towers.json").read_text())
HF = Path(__file__).parents[1] / "data" / "hf"


def config_of(group: str, name: str) -> dict:
    return RECORD[group][name]["config"] if group != "published" else json.loads((HF / f"{name}.json").read_text())


CASES = [(group, name) for group in ("defaults", "published", "tiny") for name in sorted(RECORD[group])]


def test_the_record_names_its_versions_and_the_meta_device():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13") and RECORD["device"] == "meta"


@pytest.mark.parametrize(("group", "name"), CASES)
def test_total_and_every_tower_equal_transformers(registry, group, name):
    measured = RECORD[group][name]
    counts = registry.parameters(flopsreg.Model.from_hf_config(config_of(group, name), registry=registry))
    assert counts.total == measured["total"]
    assert counts.language_model == measured["language_model"]
    assert {part: (t.parameters, t.embeddings) for part, t in counts.towers.items()} == {
        part: (p["parameters"], p["embeddings"]) for part, p in measured["parts"].items()
    }


@pytest.mark.parametrize(("group", "name"), CASES)
def test_the_towers_add_no_flops(registry, group, name):
    """The towers' parameters are counted, their FLOPs are not: the FLOPs are the text_config's alone."""
    config = config_of(group, name)
    whole = flopsreg.Model.from_hf_config(config, registry=registry)
    text = config["text_config"]
    kind = text.get("model_type", f"{config['model_type']}_text")
    alone = flopsreg.Model.from_hf_config({**text, "model_type": "deepseek_v3" if kind == "kimi_k2" else kind}, registry=registry)
    assert not alone.towers
    assert registry.evaluate(whole, seq_len=64).forward == registry.evaluate(alone, seq_len=64).forward


def test_an_absent_vision_config_is_the_wrappers_default():
    """MistralLarge4Config builds an absent vision_config from its own init_kwargs (2048 wide, 30
    layers), not PixtralVisionConfig's defaults: the class-default record has none given."""
    config = {k: v for k, v in RECORD["defaults"]["mistral_large4"]["config"].items() if k != "vision_config"}
    towers = flopsreg.Model.from_hf_config(config).towers
    assert towers["vision"].parameters == RECORD["defaults"]["mistral_large4"]["parts"]["vision"]["parameters"]


def test_a_vision_config_of_another_kind_is_refused_by_name():
    config = json.loads((HF / "gemma-3-4b.json").read_text())
    config["vision_config"] = {"model_type": "clip_vision_model"}
    with pytest.raises(flopsreg.ModelError, match=r"vision_config.model_type = 'clip_vision_model': unsupported for model_type gemma3's vision tower \(flopsreg counts 'siglip_vision_model', SigLIP ViT\)"):
        flopsreg.Model.from_hf_config(config)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("hidden_size", -3, r"vision_config.hidden_size = -3: expected an integer >= 0"),
    ("vision_use_head", "yes", r"vision_config.vision_use_head = 'yes': expected true or false"),
])
def test_a_bad_tower_field_is_one_line(field, value, message):
    config = json.loads((HF / "gemma-3-4b.json").read_text())
    config["vision_config"] = {field: value}
    with pytest.raises(flopsreg.ModelError, match=message):
        flopsreg.Model.from_hf_config(config)


def test_output_says_which_parts_are_counted(capsys):
    assert main(["params", str(HF / "llama-4-scout.json"), "--no-cache"]) == 0
    out = capsys.readouterr().out
    measured = RECORD["published"]["llama-4-scout"]
    assert out.startswith(f"llama4: {measured['total']:,} parameters")
    assert f"language model {measured['language_model']:,} (FLOPs counted)" in out
    assert f"vision: Llama 4 vision encoder {measured['parts']['vision']['parameters']:,} (parameters only: FLOPs not counted)" in out
    assert main(["params", str(HF / "llama-4-scout.json"), "--format", "json", "--no-cache"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["flops_counted"] == ["language_model"] and data["language_model"] == str(measured["language_model"])
    assert data["towers"]["projector"] == {
        "kind": "llama4_projector", "title": "Llama 4 projector", "parameters": str(measured["parts"]["projector"]["parameters"]), "flops_counted": False,
    }


def test_towers_round_trip_through_toml():
    model = flopsreg.Model.from_hf_config(HF / "qwen3.5-9b.json")
    assert flopsreg.Model.from_toml_string(model.to_toml()) == model
