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

import flopsreg

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_qwenvid.json").read_text())
HF = Path(__file__).parents[1] / "data" / "hf"
MOE = RECORD["models"]["qwen3_vl_moe"]


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


# --- video: the Qwen-VL towers over real frames through each family's video processor -------------------------

VIDEOS = RECORD["videos"]
VIDEO_CASES = [(name, case) for name in sorted(VIDEOS) for case in sorted(VIDEOS[name]["cases"])]


def _video_model(name: str) -> flopsreg.Model:
    return _model(VIDEOS[name]["config"])


def test_every_video_case_ran_through_its_familys_video_processor():
    assert sorted(VIDEOS) == ["qwen2_5_vl", "qwen2_vl", "qwen3_5", "qwen3_vl", "qwen3_vl_moe"] and len(VIDEO_CASES) == 20
    assert {VIDEOS[name]["processor"] for name in VIDEOS} == {"Qwen2VLVideoProcessor", "Qwen3VLVideoProcessor"}


@pytest.mark.parametrize(("name", "case"), [(name, case) for name, case in VIDEO_CASES if "refused" not in VIDEOS[name]["cases"][case]])
def test_the_video_grid_and_the_tower_equal_the_recorded_run(registry, name, case):
    """The grid (frames padded to whole temporal patches, the family's resizing) and the tower's
    FLOPs over it: attention within each temporal patch, Qwen2.5-VL's windows within each too."""
    measured = VIDEOS[name]["cases"][case]
    videos = registry.videos(_video_model(name), videos=[tuple(measured["video"])])
    (plan,) = videos.plans
    assert [list(plan.grid)] == measured["video_grid_thw"]
    assert videos.forward == measured["visual"]


@pytest.mark.parametrize(("name", "case"), [(name, case) for name, case in VIDEO_CASES if "refused" in VIDEOS[name]["cases"][case]])
def test_fewer_frames_than_a_temporal_patch_are_refused_as_qwen3_vls_processor_refuses_them(registry, name, case):
    measured = VIDEOS[name]["cases"][case]
    assert "must be larger than temporal_factor" in measured["refused"]
    with pytest.raises(flopsreg.FlopsregError, match=r"videos\[0\] = \(1, 100, 140\): 1 frames: the video processor needs at least temporal_patch_size = 2"):
        registry.evaluate(_video_model(name), seq_len=9, videos=[tuple(measured["video"])])


@pytest.mark.parametrize(("name", "case"), [(name, case) for name, case in VIDEO_CASES if "refused" not in VIDEOS[name]["cases"][case]])
def test_the_video_tokens_are_the_processors_expansion(registry, name, case):
    """transformers 5.24's processors: Qwen2-VL's replace_video_token puts grid.prod() // merge^2
    <|video_pad|> between one vision_start/vision_end; Qwen3-VL's puts each temporal patch's
    rows x columns // merge^2 between its own (after its "<t seconds>" timestamp, text)."""
    measured = VIDEOS[name]["cases"][case]
    (t, rows, columns), = measured["video_grid_thw"]
    expected = t * (rows * columns // 4 + 2) if name.startswith("qwen3") else t * rows * columns // 4 + 2
    result = registry.evaluate(_video_model(name), seq_len=9, videos=[tuple(measured["video"])])
    assert result.videos.tokens == expected and result.seqlens == (9 + expected,)
    assert result.forward == registry.evaluate(_video_model(name), seq_len=9 + expected).forward + measured["visual"]


def test_images_and_videos_together_sum_their_towers_and_tokens(registry):
    model = _video_model("qwen2_5_vl")
    both = registry.evaluate(model, seq_len=9, images=[(300, 500)], videos=[(4, 300, 500), (5, 200, 260)])
    image = registry.images(model, images=[(300, 500)])
    cases = VIDEOS["qwen2_5_vl"]["cases"]
    assert both.videos.forward == cases["four"]["visual"] + cases["five"]["visual"]
    assert both.seqlens == (9 + image.tokens + both.videos.tokens,)
    assert both.forward == registry.evaluate(model, seq_len=both.seqlens[0]).forward + image.forward + both.videos.forward
    assert both.per_request == (both.forward,)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"videos": [(4, 300)]}, r"videos\[0\] = \(4, 300\): expected \(frames, height, width\), three integers >= 1"),
    ({"videos": []}, r"videos = \[\]: expected at least one video"),
    ({"videos": [(4, 300, 500)], "convention": "verl"}, r"videos: convention 'verl' has no term for the vision tower \(Qwen2.5-VL ViT\)"),
    ({"request_videos": [[(4, 300, 500)]]}, r"^request_videos: one list of videos per request of requests="),
])
def test_bad_videos_are_one_line(registry, kwargs, message):
    with pytest.raises(flopsreg.FlopsregError, match=message):
        registry.evaluate(_video_model("qwen2_5_vl"), seq_len=9, **kwargs)


def test_a_tower_without_a_video_rule_refuses_videos_by_name(registry):
    config = json.loads((HF / "gemma-3-4b.json").read_text())
    with pytest.raises(flopsreg.FlopsregError, match=r"videos: .* takes no videos here: its towers \(.*\) have no video rule in flopsreg"):
        registry.evaluate(flopsreg.Model.from_hf_config(config), seq_len=9, videos=[(4, 300, 500)])


def test_the_command_line_takes_videos(registry, tmp_path, capsys):
    from flopsreg.cli import main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(VIDEOS["qwen3_vl"]["config"]))
    assert main(["eval", str(path), "--seq-len", "9", "--video", "4x300x500", "--format", "json", "--no-cache"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = registry.evaluate(_video_model("qwen3_vl"), seq_len=9, videos=[(4, 300, 500)])
    assert int(out["forward_flops"]) == expected.forward
    assert out["videos"]["images"][0] == {"frames": 4, "height": 300, "width": 500, "resized": [288, 512], "grid": [2, 18, 32], "tokens": 292}
    assert main(["eval", str(path), "--seq-len", "9", "--video", "4x300", "--no-cache"]) != 0
    assert "expected FRAMESxHEIGHTxWIDTH" in capsys.readouterr().err
