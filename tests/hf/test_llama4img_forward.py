"""Llama 4 with tiled images against real forward passes: tests/data/hf_forward/measure_llama4img.py
ran a tiny Llama4ForConditionalGeneration on random images through transformers' own
Llama4ImageProcessor and Llama4Processor's placeholder expansion, under FlopCounterMode, recorded
the masks its language model builds, and what the processor makes of images of many sizes at the
published tile size (forward_llama4img.json). The tiling, the token counts, the vision tower, the
projector, the language model and the parameters are each compared with what was recorded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from recorded_forward import pairs_per_layer

import flopsreg
from flopsreg.cli import main
from flopsreg.engine.media import tower_flops
from flopsreg.patterns.hf._llama4_vit import LLAMA4_IMAGES, best_fit, canvases
from flopsreg.patterns.hf._towers import LLAMA4_VISION

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_llama4img.json").read_text())
MEASURED = RECORD["models"]["llama4"]
CASES = sorted(MEASURED["cases"])
VISION = MEASURED["config"]["vision_config"]
# Llama 4 Scout's vision_config (meta-llama/Llama-4-Scout-17B-16E config.json): 336-pixel tiles.
SCOUT_VISION = {"hidden_size": 1408, "intermediate_size": 5632, "num_hidden_layers": 34, "num_attention_heads": 16,
                "image_size": 336, "patch_size": 14, "pixel_shuffle_ratio": 0.5, "projector_input_dim": 4096,
                "projector_output_dim": 4096, "vision_output_dim": 4096, "rope_theta": 10000}


def _model(**vision) -> flopsreg.Model:
    config = MEASURED["config"]
    return flopsreg.Model.from_hf_config({**config, "vision_config": {**config["vision_config"], **vision}})


def _images(case: str) -> list[tuple[int, int]]:
    return [tuple(size) for size in MEASURED["cases"][case]["images"]]


def _dropped_class_token(vision: dict, tiles: int) -> int:
    """What FlopCounterMode counts beyond flopsreg: in the last block, the class token's query and
    output projections, its attention row (over the tile's patches and itself) and its MLP, whose
    output Llama4VisionModel drops (``hidden_state[:, :-1, :]``)."""
    h, i = vision["hidden_size"], vision["intermediate_size"]
    tokens = (vision["image_size"] // vision["patch_size"]) ** 2 + 1
    return tiles * (2 * 2 * h * h + 2 * 2 * tokens * h + 2 * 2 * h * i)


def test_the_record_names_its_versions_and_every_case_ran():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert CASES == ["single", "tiled", "two"] and MEASURED["class"] == "Llama4ForConditionalGeneration"


def test_the_whole_model_and_its_towers_hold_transformers_parameters(registry):
    model = _model()
    assert registry.parameters(model).total == MEASURED["parameters"]
    assert model.towers["vision"].parameters == MEASURED["vision_parameters"]
    assert model.towers["projector"].parameters == MEASURED["projector_parameters"]


@pytest.mark.parametrize(("record", "vision"), [("published_tiling", SCOUT_VISION), ("tiling", VISION)])
def test_the_tiling_and_token_count_equal_the_processors(record, vision):
    """Canvas (aspect_ratios), tiles with the global one, the size before padding and the tokens of
    Llama4Processor's expansion, for every recorded size."""
    model = flopsreg.Model.from_hf_config({**MEASURED["config"], "vision_config": vision})
    dims = model.towers["vision"].dims
    entries = RECORD[record] if record in RECORD else MEASURED[record]
    assert len(entries) >= 8
    side = vision["image_size"] // vision["patch_size"]
    for entry in entries:
        height, width = entry["image"]
        assert list(best_fit(height, width, vision["image_size"])) == entry["aspect_ratio"], entry
        plan = LLAMA4_IMAGES.plan({**dims, **LLAMA4_IMAGES.options}, height, width)
        assert plan.grid == (entry["tiles"], side, side) and list(plan.resized) == entry["resized"], entry
        assert plan.tokens == entry["tokens"], entry
        assert entry["patch_tokens"] == entry["tiles"] * side * side // 4


def test_the_expansion_is_begin_tiles_with_separators_global_tile_end():
    """Llama4Processor's expansion of a 2 x 3 canvas, as it built it: n = 9 <|patch|> a tile."""
    tile = ["<|patch|>"] * 9
    row = [*tile, "<|tile_x_separator|>", *tile, "<|tile_x_separator|>", *tile, "<|tile_y_separator|>"]
    assert MEASURED["expansion_tiled"] == ["<|image_start|>", *row, *row, "<|image|>", *tile, "<|image_end|>"]


def test_the_canvases_are_every_shape_of_at_most_16_tiles():
    shapes = canvases()
    assert len(shapes) == len(set(shapes)) == sum(16 // rows for rows in range(1, 17))
    assert all(rows * columns <= 16 for rows, columns in shapes)


@pytest.mark.parametrize("case", CASES)
def test_the_tower_and_projector_equal_the_recorded_forward(registry, case):
    """flopsreg counts every piece FlopCounterMode sees but the class token's dropped last-layer work."""
    measured = MEASURED["cases"][case]
    result = registry.evaluate(_model(), seq_len=MEASURED["text_tokens"], images=_images(case))
    tiles = measured["pixel_values"][0]
    assert sum(plan.grid[0] for plan in result.images.plans) == tiles
    assert [plan.tokens for plan in result.images.plans] == measured["tokens"]
    assert result.seqlens == (measured["sequence_length"],)
    flops = dict(result.images.flops)
    assert flops["patch_embed"] == measured["patch_embedding"]
    assert flops["vision_adapter"] == measured["vision_adapter"]
    assert flops.pop("projector") == measured["projector"]
    assert sum(flops.values()) + _dropped_class_token(VISION, tiles) == measured["vision_model"]


@pytest.mark.parametrize("case", CASES)
def test_the_whole_forward_equals_flop_counter_mode(eager_registry, case):
    """The language model under the eager convention (its s x s scores, as FlopCounterMode sees
    them, whatever the mask; the router picks every expert, as transformers computes them)."""
    measured = MEASURED["cases"][case]
    model = _model()
    with_images = eager_registry.evaluate(model, seq_len=MEASURED["text_tokens"], images=_images(case))
    language_model = eager_registry.evaluate(model, seq_len=with_images.seqlens[0], convention="eager").forward
    assert language_model == measured["rest"]
    dropped = _dropped_class_token(VISION, measured["pixel_values"][0])
    assert with_images.images.tower + dropped + language_model == measured["forward"]
    assert with_images.forward == eager_registry.evaluate(model, seq_len=with_images.seqlens[0]).forward + with_images.images.tower


def _brute_force(length: int, chunk: int | None) -> int:
    """transformers' Llama 4 masks pair by pair: causal, and within the same chunk of positions."""
    return sum(kv <= q and (chunk is None or kv // chunk == q // chunk) for q in range(length) for kv in range(length))


@pytest.mark.parametrize("case", CASES)
def test_the_language_model_attends_to_image_tokens_as_to_text(registry, case):
    """No bidirectional block: the recorded masks are causal (chunked on RoPE layers) over the image
    tokens too, as a brute force over that rule gives, and as flopsreg counts."""
    measured = MEASURED["cases"][case]
    length, chunk = measured["sequence_length"], MEASURED["config"]["text_config"]["attention_chunk_size"]
    expected = [_brute_force(length, chunk if kind == "chunked_attention" else None) for kind in MEASURED["layer_types"]]
    assert measured["mask_pairs"] == expected
    assert pairs_per_layer(registry, _model(), length) == expected
    result = registry.evaluate(_model(), seq_len=MEASURED["text_tokens"], images=_images(case))
    assert result.images.bidirectional == 0


@settings(max_examples=40, deadline=None)
@given(h=st.integers(1, 40), i=st.integers(1, 90), layers=st.integers(0, 4), side=st.integers(1, 7), tiles=st.integers(1, 17))
def test_the_closed_forms_are_the_tiles_work_token_by_token(h, i, layers, side, tiles):
    """Each piece summed token by token (every token of a tile in every block, but the class token
    of the last; its query against every key of its tile), against the closed forms."""
    dims = {"h": h, "i": i, "layers": layers, "channels": 3, "image": 5 * side, "patch": 5, "shuffle_in": 7,
            "shuffle_out": 11, "ds": 4, "vision_out": 13, "text": 17}
    tokens = side * side + 1
    queries = [(layer, token) for layer in range(layers) for token in range(tokens)
               if not (layer == layers - 1 and token == tokens - 1)]
    expected = {
        "patch_embed": tiles * (tokens - 1) * 2 * 3 * 25 * h,
        "blocks.qkv_proj": tiles * (layers * tokens * 2 * 2 * h * h + len(queries) * 2 * 2 * h * h),
        "blocks.attention": tiles * sum(2 * 2 * h * tokens for _ in queries),
        "blocks.mlp": tiles * sum(2 * 2 * h * i for _ in queries),
        "vision_adapter": tiles * (side * side // 4) * 2 * (i * 7 + 11 * 11),
        "projector": tiles * (side * side // 4) * 2 * 13 * 17,
    }
    assert tower_flops(LLAMA4_VISION, dims, [(tiles, side, side)]) == expected


def test_image_tokens_give_what_the_image_gives_and_refuse_another_count(registry):
    """An image known by its <|patch|> tokens: 9 a tile here, the tiles fix the rest."""
    model = _model()
    by_size = registry.evaluate(model, seq_len=7, images=[(200, 300), (60, 70)])
    by_tokens = registry.evaluate(model, seq_len=7, image_tokens=[13 * 9, 9])
    assert (by_tokens.forward, by_tokens.seqlens) == (by_size.forward, by_size.seqlens)
    for count in (10, 18, 18 * 9):
        with pytest.raises(flopsreg.FlopsregError, match=rf"^image_tokens\[0\] = {count}: an image is 9 <\|patch\|> tokens per tile, on 1 tile or 3 to 17"):
            registry.evaluate(model, seq_len=7, image_tokens=[count])


def test_every_sequence_of_a_batch_or_a_packed_row_holds_the_images(registry):
    model, images = _model(), _images("two")
    one = registry.evaluate(model, seq_len=7, images=images)
    assert registry.evaluate(model, seq_len=7, images=images, batch=3).forward == 3 * one.forward
    packed = registry.evaluate(model, seqlens=[7, 20], images=images)
    assert packed.forward == one.forward + registry.evaluate(model, seq_len=20, images=images).forward


@pytest.mark.parametrize(("vision", "message"), [
    ({"intermediate_size": 150}, r"intermediate_size = 150: the vision adapter's first matrix takes the shuffled width hidden_size x 4 = 144"),
    ({"vision_output_dim": 41}, r"projector_input_dim = 40, projector_output_dim = 40, vision_output_dim = 41: the adapter and the projector chain only if"),
    ({"image_size": 98}, r"the pixel shuffle \(1/4 of the tokens\) cannot split a tile of 7 x 7 patches"),
])
def test_a_tower_transformers_cannot_run_is_refused(registry, vision, message):
    with pytest.raises(flopsreg.FlopsregError, match=r"^images\[0\] = \(200, 300\): " + message):
        registry.evaluate(_model(**vision), seq_len=7, images=[(200, 300)])


def test_a_config_without_its_vision_config_is_refused_as_transformers_fails(registry):
    """llama-4-scout.json is stored without its vision_config: Llama4VisionConfig's class defaults
    (768 wide, intermediate_size 5632) cannot feed the adapter (transformers fails on it too)."""
    scout = flopsreg.Model.from_hf_config(json.loads((Path(__file__).parents[1] / "data" / "hf" / "llama-4-scout.json").read_text()))
    with pytest.raises(flopsreg.FlopsregError, match=r"intermediate_size = 5632: the vision adapter's first matrix takes the shuffled width hidden_size x 4 = 3072"):
        registry.evaluate(scout, seq_len=9, images=[(100, 100)])


def test_a_pixel_shuffle_ratio_that_is_no_ratio_is_one_line():
    with pytest.raises(flopsreg.ModelError, match=r"vision_config.pixel_shuffle_ratio = 2: expected a ratio in \(0, 1\]$"):
        _model(pixel_shuffle_ratio=2)


@pytest.mark.parametrize("convention", ["megatron", "hf_trainer", "vllm", "slime", "nanogpt"])
def test_every_other_convention_refuses_llama4_images_by_name(registry, convention):
    message = rf"^images: convention '{convention}' has no term for the vision tower \(Llama 4 vision encoder\): count images with the exact convention$"
    with pytest.raises(flopsreg.FlopsregError, match=message):
        registry.evaluate(_model(), seq_len=7, images=[(200, 300)], convention=convention)


@pytest.mark.parametrize(("convention", "reason"), [
    ("verl", "verl has no FLOPs estimator for model_type 'llama4'"),
    ("torchtitan", "torchtitan removed its llama4 model"),
    ("megatron_bridge", "Megatron-Bridge has no bridge for model_type 'llama4'"),
    ("olmo_core", "olmo_core has no term for chunked"),
])
def test_a_convention_that_cannot_count_llama4_refuses_the_model_images_or_not(registry, convention, reason):
    for images in (None, [(200, 300)]):
        with pytest.raises(flopsreg.FlopsregError, match=reason):
            registry.evaluate(_model(), seq_len=7, images=images, convention=convention)


def test_the_command_line_takes_llama4_images_and_explain_names_every_piece(tmp_path, capsys, registry):
    path = tmp_path / "llama4.json"
    path.write_text(json.dumps(MEASURED["config"]))
    assert main(["eval", str(path), "--seq-len", "7", "--image", "200x300", "--format", "json", "--no-cache"]) == 0
    output = json.loads(capsys.readouterr().out)
    expected = registry.evaluate(_model(), seq_len=7, images=[(200, 300)])
    assert output["forward_flops"] == str(expected.forward) and output["seqlens"] == [7 + 132]
    assert main(["explain", str(path), "--image", "200x300", "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "image 1: 200x300 -> 200x300, patch grid 13x6x6 (t x h x w), 132 tokens" in text
    for piece in ("patch_embed", "blocks.qkv_proj", "blocks.attention", "blocks.mlp", "vision_adapter", "projector"):
        assert f"  {piece}: " in text and f"  {piece} = " in text
