"""Gemma 3n's towers (timm's MobileNetV5 vision encoder, the USM conformer audio encoder, the two
multimodal embedders) against transformers' ``sum(p.numel())`` recorded on the meta device by
tests/data/hf_forward/measure_gemma3nmm.py: the class-default config, the published config of
tests/data/hf and a tiny config with odd audio kernels, strides and widths.
"""

import json
from pathlib import Path

import pytest

import flopsreg

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_gemma3nmm.json").read_text())
HF = Path(__file__).parents[1] / "data" / "hf"
CASES = [(group, name) for group in ("defaults", "published", "tiny") for name in sorted(RECORD[group])]


def config_of(group: str, name: str) -> dict:
    return RECORD[group][name]["config"] if group != "published" else json.loads((HF / f"{name}.json").read_text())


def test_the_record_names_its_versions_and_the_meta_device():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13") and RECORD["timm"] == "1.0.31"
    assert RECORD["device"] == "meta" and set(RECORD["published"]) == {"gemma-3n-e4b-defaults"}


@pytest.mark.parametrize(("group", "name"), CASES)
def test_total_and_every_tower_equal_transformers(registry, group, name):
    measured = RECORD[group][name]
    counts = registry.parameters(flopsreg.Model.from_hf_config(config_of(group, name), registry=registry))
    assert counts.total == measured["total"]
    assert counts.language_model == measured["language_model"]
    assert {part: (t.parameters, t.embeddings) for part, t in counts.towers.items()} == {
        part: (p["parameters"], p["embeddings"]) for part, p in measured["parts"].items()
    }


def test_the_class_defaults_by_hand():
    """Gemma3nConfig(): hidden 1536, 12 conformer blocks of 8 heads, kernel 5; 128 mel bins through
    two 3x3 stride-2 convolutions (128, 32 channels), padded by one in frequency: 128 -> 64 -> 32;
    the embedders' 128-token tables, vision width 2048 and audio 1536 to the text width 2048."""
    towers = flopsreg.Model.from_hf_config({"model_type": "gemma3n", "text_config": RECORD["defaults"]["gemma3n"]["config"]["text_config"]}).towers
    h = 1536
    block = 2 * (8 * h * h + 2 * h) + 4 * h * h + 192 + h * h + 2 * h + 3 * h * h + 5 * h + 2 * h + h
    assert towers["audio"].parameters == 9 * 128 + 128 + 9 * 128 * 32 + 32 + 32 * 32 * h + 12 * block == 681_348_640
    assert towers["vision_embedder"].parameters == 128 * 2048 + 2 * 2048 + 2048 * 2048 == 4_460_544
    assert towers["audio_embedder"].parameters == 128 * h + 2 * h + h * 2048 == 3_345_408
    assert towers["vision"].parameters == 294_126_912 and towers["vision"].embeddings == 0


@pytest.mark.parametrize(("field", "value"), [("architecture", "mobilenetv5_300m"), ("model_args", {"depth": 3})])
def test_another_vision_architecture_is_refused_by_name(field, value):
    config = json.loads((HF / "gemma-3n-e4b-defaults.json").read_text())
    config["vision_config"] = {field: value}
    message = rf"vision_config.{field} = {value!r}: unsupported for model_type gemma3n's vision tower \(flopsreg counts .*, MobileNetV5-300M\)"
    with pytest.raises(flopsreg.ModelError, match=message.replace("{", r"\{").replace("}", r"\}")):
        flopsreg.Model.from_hf_config(config)


def test_a_short_kernel_list_is_one_line():
    config = json.loads((HF / "gemma-3n-e4b-defaults.json").read_text())
    config["audio_config"] = {"sscp_conv_kernel_size": [[3], [3, 3]]}
    with pytest.raises(flopsreg.ModelError, match=r"audio_config.sscp_conv_kernel_size = \[\[3\], \[3, 3\]\]: expected a list of more than 1 entries at \[1\]"):
        flopsreg.Model.from_hf_config(config)


def test_images_are_refused_naming_the_towers_without_an_image_rule(registry):
    model = flopsreg.Model.from_hf_config(HF / "gemma-3n-e4b-defaults.json", registry=registry)
    with pytest.raises(flopsreg.FlopsregError, match=r"images: gemma3n takes no images here: its towers \(vision \(MobileNetV5-300M\), .*\) have no image rule"):
        registry.evaluate(model, seq_len=16, images=[(768, 768)])
