"""GIT and Fuyu with images against real forward passes: tests/data/hf_forward/measure_phi4git.py
ran tiny GitForCausalLM and FuyuForCausalLM models on random images through transformers' own
image processors (and FuyuProcessor's own placeholder expansion), under FlopCounterMode, and
recorded GIT's text-decoder masks with and without the image (forward_phi4git.json). The towers,
the language model, the token counts, the processor's grids and the parameters are each
compared with what was recorded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import flopsreg
from flopsreg.cli import main
from flopsreg.engine.media import tower_flops
from flopsreg.patterns.hf._fuyu_vit import TARGET

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_phi4git.json").read_text())
GIT, FUYU = RECORD["models"]["git"], RECORD["models"]["fuyu"]


def _model(measured: dict) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(measured["config"])


def _images(measured: dict, case: str) -> list[tuple[int, int]]:
    return [tuple(size) for size in measured["cases"][case]["images"]]


def test_the_record_names_its_versions_and_classes():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert (GIT["class"], FUYU["class"]) == ("GitForCausalLM", "FuyuForCausalLM")
    assert sorted(GIT["cases"]) == ["landscape", "portrait", "small"] and sorted(FUYU["cases"]) == ["large", "small", "tall", "two"]
    assert RECORD["models"]["phi4_multimodal"]["class"] == "Phi4MultimodalForCausalLM"


@pytest.mark.parametrize("measured", [GIT, FUYU], ids=["git", "fuyu"])
def test_the_whole_model_holds_transformers_parameters(registry, measured):
    assert registry.parameters(_model(measured)).total == measured["parameters"]


def test_gits_towers_and_class_defaults_hold_transformers_parameters(registry):
    model = _model(GIT)
    assert model.towers["vision"].parameters == GIT["vision_parameters"]
    assert model.towers["projector"].parameters == GIT["projection_parameters"]
    defaults = {"model_type": "git", "vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 6,  # GitConfig's
                "num_attention_heads": 12, "intermediate_size": 3072, "max_position_embeddings": 1024}
    assert registry.parameters(flopsreg.Model.from_hf_config(defaults)).total == GIT["default_parameters"]


# GIT ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", sorted(GIT["cases"]))
def test_gits_tower_projection_and_tokens_equal_the_recorded_forward(registry, case):
    measured = GIT["cases"][case]
    result = registry.evaluate(_model(GIT), seq_len=GIT["text_tokens"], images=_images(GIT, case))
    (plan,) = result.images.plans
    vision = GIT["config"]["vision_config"]
    side = vision["image_size"] // vision["patch_size"]
    assert measured["pixel_values"] == [1, 3, plan.resized[0], plan.resized[1]] and plan.grid == (1, side, side)
    assert result.seqlens == (measured["sequence_length"],) == (GIT["text_tokens"] + side * side + 1,)
    flops = dict(result.images.flops)
    assert flops.pop("projector") == measured["visual_projection"]
    assert sum(flops.values()) == measured["image_encoder"]


def _brute_force(length: int, image: int) -> int:
    """GitModel's mask, pair by pair: causal, and every image token (the first *image*) with every other."""
    return sum(kv <= q or (q < image and kv < image) for q in range(length) for kv in range(length))


@pytest.mark.parametrize("case", sorted(GIT["cases"]))
def test_gits_image_block_adds_the_masks_pairs(eager_registry, registry, case):
    """The recorded mask with the image allows the causal pairs and n(n-1)/2 more (n image tokens,
    attending to each other); a brute force over GitModel's rule gives it; the whole forward is the
    tower, the projection and the eager language model over text and image tokens."""
    measured = GIT["cases"][case]
    length, text = measured["sequence_length"], GIT["text_tokens"]
    image = length - text
    assert _brute_force(length, image) == measured["mask_pairs"] and _brute_force(text, 0) == measured["mask_pairs_text"]
    model = _model(GIT)
    result = registry.evaluate(model, seq_len=text, images=_images(GIT, case))
    heads, width = GIT["config"]["num_attention_heads"], GIT["config"]["hidden_size"]
    per_pair = 2 * heads * 2 * (width // heads)  # QK^T and PV, 2 FLOPs per multiply-add
    added = measured["mask_pairs"] - length * (length + 1) // 2
    assert added == image * (image - 1) // 2
    assert result.images.bidirectional == per_pair * added * GIT["config"]["num_hidden_layers"]
    eager = eager_registry.evaluate(model, seq_len=text, images=_images(GIT, case))
    language_model = eager_registry.evaluate(model, seq_len=length, convention="eager").forward
    assert language_model == measured["rest"]
    assert eager.images.tower + language_model == measured["forward"]


def test_git_takes_one_image_and_its_token_count(registry):
    model = _model(GIT)
    by_tokens = registry.evaluate(model, seq_len=7, image_tokens=[10])
    assert by_tokens.forward == registry.evaluate(model, seq_len=7, images=[(300, 500)]).forward
    with pytest.raises(flopsreg.FlopsregError, match=r"^images: 2 images, but GIT CLIP ViT takes at most 1 per sequence$"):
        registry.evaluate(model, seq_len=7, images=[(300, 500), (20, 30)])
    with pytest.raises(flopsreg.FlopsregError, match=r"^image_tokens\[0\] = 9: every image is 10 tokens .* resized to 42 x 42 \(GIT CLIP ViT\)$"):
        registry.evaluate(model, seq_len=7, image_tokens=[9])


def test_the_git_closed_forms_by_hand():
    """microsoft/git-base's shape: a 12-layer 768-wide CLIP at 224 pixels, patch 16 (196 patches and
    the class token), MLP 3072, text width 768."""
    (vision,) = [t.kind for t in flopsreg.Registry.default().hf_readers["git"].towers if t.part == "vision"]
    dims = {"h": 768, "i": 3072, "layers": 12, "channels": 3, "image": 224, "patch": 16, "text": 768}
    tokens = 197
    assert tower_flops(vision, dims, [(1, 14, 14)]) == {
        "patch_embed": 2 * 196 * 768 * 3 * 16 * 16,
        "blocks.qkv_proj": 12 * 2 * tokens * 4 * 768 * 768,
        "blocks.attention": 4 * 768 * 12 * tokens * tokens,
        "blocks.mlp": 12 * 2 * tokens * 2 * 768 * 3072,
        "projector": 2 * tokens * 768 * 768,
    }


# Fuyu ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", sorted(FUYU["cases"]))
def test_fuyus_projection_language_model_and_tokens_equal_the_recorded_forward(eager_registry, registry, case):
    measured = FUYU["cases"][case]
    model = _model(FUYU)
    result = registry.evaluate(model, seq_len=FUYU["text_tokens"], images=_images(FUYU, case))
    assert [list(plan.grid[1:]) for plan in result.images.plans] == measured["grids"]
    patches = sum(rows * columns for rows, columns in measured["grids"])
    assert measured["pixel_values"] == [1, patches, 3 * FUYU["config"]["patch_size"] ** 2]
    assert result.seqlens == (measured["sequence_length"],)
    assert dict(result.images.flops) == {"projection": measured["patch_projection"]}
    language_model = eager_registry.evaluate(model, seq_len=result.seqlens[0], convention="eager").forward
    assert language_model == measured["rest"]
    assert result.images.tower + language_model == measured["forward"]
    assert result.images.bidirectional == 0  # Fuyu's image tokens are causal like text


@pytest.mark.parametrize("size", sorted(FUYU["sizes"]))
def test_fuyus_resize_grid_and_tokens_equal_the_processors(registry, size):
    measured = FUYU["sizes"][size]
    height, width = map(int, size.split("x"))
    (plan,) = registry.evaluate(_model(FUYU), seq_len=1, images=[(height, width)]).images.plans
    assert list(plan.resized) == measured["resized"] and list(plan.grid) == [1, *measured["grid"]]
    assert plan.tokens == measured["tokens"]
    assert measured["padded"] == list(TARGET) == [FUYU["target"]["height"], FUYU["target"]["width"]]


def test_fuyu_needs_each_images_shape_and_refuses_an_image_it_cannot_resize(registry):
    model = _model(FUYU)
    with pytest.raises(flopsreg.FlopsregError, match=r"^image_tokens: Fuyu patch projection needs each image's height and width"):
        registry.evaluate(model, seq_len=7, image_tokens=[181])
    with pytest.raises(flopsreg.FlopsregError, match=r"^images\[0\] = \(1, 5000\): 1x5000: the processor would resize it to 0x1920 pixels"):
        registry.evaluate(model, seq_len=7, images=[(1, 5000)])


@pytest.mark.parametrize("convention", ["megatron", "megatron_bridge", "hf_trainer", "vllm", "slime", "nanogpt"])
@pytest.mark.parametrize(("measured", "title"), [(GIT, "vision tower \\(GIT CLIP ViT\\)"), (FUYU, "projector tower \\(Fuyu patch projection\\)")],
                         ids=["git", "fuyu"])
def test_every_other_convention_refuses_the_images_by_name(registry, convention, measured, title):
    message = rf"^images: convention '{convention}' has no term for the {title}: count images with the exact convention$"
    with pytest.raises(flopsreg.FlopsregError, match=message):
        registry.evaluate(_model(measured), seq_len=7, images=[(300, 500)], convention=convention)


def test_the_command_line_takes_fuyu_and_git_images(tmp_path, capsys, registry):
    for name, measured, tokens in (("git", GIT, 10), ("fuyu", FUYU, 181)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(measured["config"]))
        assert main(["eval", str(path), "--seq-len", "7", "--image", "300x500", "--format", "json", "--no-cache"]) == 0
        output = json.loads(capsys.readouterr().out)
        expected = registry.evaluate(_model(measured), seq_len=7, images=[(300, 500)])
        assert output["forward_flops"] == str(expected.forward) and output["seqlens"] == [7 + tokens]
    assert main(["explain", str(tmp_path / "fuyu.json"), "--image", "300x500", "--no-cache"]) == 0
    assert "image 1: 300x500 -> 300x500, patch grid 1x10x17 (t x h x w), 181 tokens" in capsys.readouterr().out


# Phi-4-multimodal ---------------------------------------------------------------------------------

PHI4 = RECORD["models"]["phi4_multimodal"]
SIDE = 32  # patches a side of a 448-pixel crop, patch 14


def _crop_patches(plan) -> list[int]:
    """Real patches of the global image and of each crop, row by row, from the plan's grid."""
    rows, columns = plan.grid[1:]
    down, across = plan.resized[0] // 448, plan.resized[1] // 448
    return [SIDE * SIDE] + [max(0, min(SIDE, rows - SIDE * a)) * max(0, min(SIDE, columns - SIDE * b))
                            for a in range(down) for b in range(across)]


def test_phi4_the_record_holds_the_processors_defaults_and_the_whole_models_parameters(registry):
    assert PHI4["class"] == "Phi4MultimodalForCausalLM"
    assert PHI4["processor"] == {"size": {"height": 448, "width": 448}, "patch_size": 14, "dynamic_hd": 36}
    model = _model(PHI4)
    assert model.towers["vision"].parameters == PHI4["vision_parameters"]
    assert registry.parameters(model).total == PHI4["parameters"]


@pytest.mark.parametrize("size", sorted(PHI4["sizes"]))
def test_phi4_crops_masks_and_tokens_equal_the_processors(registry, size):
    """Phi4MultimodalImageProcessor on 15 sizes: the crops' canvas (image_sizes), the real patches
    its mask leaves in each crop and num_img_tokens."""
    measured = PHI4["sizes"][size]
    height, width = map(int, size.split("x"))
    (plan,) = registry.evaluate(_model(PHI4), seq_len=1, images=[(height, width)]).images.plans
    assert list(plan.resized) == measured["image_size"]
    assert _crop_patches(plan) == measured["real_patches"] and len(measured["real_patches"]) == measured["crops"] + 1
    assert plan.tokens == measured["tokens"]


@pytest.mark.parametrize("case", sorted(PHI4["cases"]))
def test_phi4_the_useful_work_and_what_transformers_throws_away_make_the_recorded_tower(eager_registry, registry, case):
    """transformers runs the SigLIP over every patch of every crop (padded patches and the blank
    crops that pad a shorter image to the longest's included), all its layers, and the pooling head,
    then keeps layer -2's hidden states of the real tokens: the recorded tower is flopsreg's useful
    count plus that waste, each piece of it counted here by hand from the processor's masks."""
    measured = PHI4["cases"][case]
    modules = measured["modules"]
    model = _model(PHI4)
    result = registry.evaluate(model, seq_len=PHI4["text_tokens"], images=_images(PHI4, case))
    assert [plan.tokens for plan in result.images.plans] == measured["tokens"]
    assert result.seqlens == (measured["sequence_length"],)
    vision = PHI4["config"]["vision_config"]
    h, i, layers = vision["hidden_size"], vision["intermediate_size"], vision["num_hidden_layers"]
    images, crops = measured["pixel_values"][:2]
    real = []
    for plan, recorded in zip(result.images.plans, measured["real_patches"], strict=True):
        patches = _crop_patches(plan)
        assert recorded[:len(patches)] == patches and all(n == SIDE * SIDE for n in recorded[len(patches):])  # blank crops: mask of ones
        real += patches + [0] * (crops - len(patches))
    every = images * crops * SIDE * SIDE
    layer = 2 * every * 4 * h * h + 4 * h * images * crops * (SIDE * SIDE) ** 2 + 2 * every * 2 * h * i
    assert all(modules[f"img_processor.encoder.layers.{k}"] == layer for k in range(layers))
    useful_layer = 2 * sum(real) * 4 * h * h + 4 * h * sum(n * n for n in real) + 2 * sum(real) * 2 * h * i
    padding = 2 * (every - sum(real)) * h * 3 * 14**2 + (layers - 1) * (layer - useful_layer)
    waste = padding + layer + modules["img_processor.head"]  # the padding, the last layer, the pooling head
    flops = dict(result.images.flops)
    assert flops.pop("projector") == modules["img_projection_up"] + modules["img_projection_down"]
    assert sum(flops.values()) + waste == modules["img_processor"]
    assert modules["img_processor"] + modules["img_projection_up"] + modules["img_projection_down"] == measured["image_embed"]
    language_model = eager_registry.evaluate(model, seq_len=result.seqlens[0], convention="eager").forward
    assert language_model == measured["rest"] and result.images.bidirectional == 0


def test_phi4_refuses_what_its_processor_or_model_cannot_build(registry):
    model = _model(PHI4)
    with pytest.raises(flopsreg.FlopsregError, match=r"^image_tokens: Phi-4-multimodal image embedding needs each image's height and width"):
        registry.evaluate(model, seq_len=7, image_tokens=[545])
    with pytest.raises(flopsreg.FlopsregError, match=r"^images\[0\] = \(5, 3000\): 5x3000: the processor refuses the aspect ratio"):
        registry.evaluate(model, seq_len=7, images=[(5, 3000)])
    config = {**PHI4["config"], "vision_config": {**PHI4["config"]["vision_config"], "patch_size": 16}}
    with pytest.raises(flopsreg.FlopsregError, match=r"patch_size = 16: the processor cuts 448-pixel crops of 14-pixel patches"):
        registry.evaluate(flopsreg.Model.from_hf_config(config), seq_len=7, images=[(300, 500)])
    config = {**PHI4["config"], "vision_config": {**PHI4["config"]["vision_config"], "feature_layer": 2}}
    with pytest.raises(flopsreg.FlopsregError, match=r"vision_config.feature_layer = 2: expected a negative integer"):
        flopsreg.Model.from_hf_config(config)


@pytest.mark.parametrize("convention", ["megatron", "hf_trainer", "vllm", "nanogpt"])
def test_phi4_every_other_convention_refuses_its_images_by_name(registry, convention):
    message = rf"^images: convention '{convention}' has no term for the vision tower \(Phi-4-multimodal image embedding\)"
    with pytest.raises(flopsreg.FlopsregError, match=message):
        registry.evaluate(_model(PHI4), seq_len=7, images=[(300, 500)], convention=convention)


def test_a_git_image_cannot_be_placed_after_text(registry):
    """GitModel concatenates the image's tokens before the text embeddings: a position is refused."""
    model = _model(GIT)
    with pytest.raises(flopsreg.FlopsregError, match=r"^image_positions\[0\] = 3: .* images always come before the text"):
        registry.evaluate(model, seq_len=9, images=[(224, 224)], image_positions=[3])
    assert registry.evaluate(model, seq_len=9, images=[(224, 224)], image_positions=[0]).forward == \
        registry.evaluate(model, seq_len=9, images=[(224, 224)]).forward
