"""Mllama with images against real forward passes: tests/data/hf_forward/measure_mllamaimg.py ran a
tiny MllamaForConditionalGeneration on random images through transformers' own image processor
(MllamaImageProcessorPil) and processing_mllama's cross-attention mask, under FlopCounterMode, and
recorded the masks the vision encoder and the cross-attention layers build
(forward_mllamaimg.json). The processor's tiling, the vision encoder, the projector, the
cross-attention layers, the language model and the padding transformers computes on top (counted
apart) are each compared with what was recorded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import flopsreg
from flopsreg.cli import main
from flopsreg.patterns.hf._mllama_vit import MLLAMA_IMAGES, arrangements, tiled_canvas
from flopsreg.plugin import MediaRule

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_mllamaimg.json").read_text())
MEASURED = RECORD["models"]["mllama"]
CONFIG = MEASURED["config"]
VISION, TEXT = CONFIG["vision_config"], CONFIG["text_config"]
CASES = sorted(MEASURED["cases"])
SIDE = VISION["image_size"] // VISION["patch_size"]  # 4 x 4 patches per 56-pixel tile
TILE = SIDE**2 + 1  # and the class position: 17
PADDED = TILE + (8 - TILE % 8) % 8  # the encoder pads each tile to a multiple of 8 positions: 24


def _model() -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(CONFIG)


def _images(case: str) -> list[tuple[int, int]]:
    return [tuple(size) for size in MEASURED["cases"][case]["images"]]


def _encoder(positions: int, pairs: int, layers: int) -> int:
    """FLOPs of one of the vision encoders, from the config by hand: q, k, v, o and the MLP over
    *positions*, the attention over *pairs*."""
    h, i = VISION["hidden_size"], VISION["intermediate_size"]
    return layers * (2 * positions * 4 * h * h + 4 * h * pairs + 2 * positions * 2 * h * i)


def test_the_record_names_its_versions_and_every_case_ran():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert CASES == ["one", "three", "two", "wide"] and MEASURED["class"] == "MllamaForConditionalGeneration"


def test_the_whole_model_and_its_vision_encoder_hold_transformers_parameters(registry):
    model = _model()
    assert registry.parameters(model).total == MEASURED["parameters"]
    assert model.towers["vision"].parameters == MEASURED["vision_parameters"]


@pytest.mark.parametrize("tiling", RECORD["tiling"], ids=lambda t: "x".join(map(str, t["image"])))
def test_the_tiling_is_the_processors_at_the_published_tile_size(registry, tiling):
    """Tile 560, 4 tiles (Llama 3.2 Vision's preprocessor): the canvas, its aspect_ratio_id, the
    resized size, the real tiles (aspect_ratio_mask) and one <|image|> token per image."""
    model = flopsreg.Model.from_hf_config({**CONFIG, "vision_config": {**VISION, "image_size": 560}})
    (plan,) = registry.images(model, images=[tuple(tiling["image"])]).plans
    assert tiled_canvas(*tiling["image"], 4, 560) == tuple(tiling["tiles"])
    assert arrangements(4).index(tuple(tiling["tiles"])) + 1 == tiling["aspect_ratio_id"]  # the processor's id, 0 padding
    assert plan.resized == tuple(tiling["resized"]) and plan.tokens == 1
    assert plan.grid == (tiling["num_tiles"], 40, 40) and sum(tiling["aspect_ratio_mask"]) == tiling["num_tiles"]
    assert tiling["pixel_values"] == [1, 1, 4, 3, 560, 560]  # always padded to 4 tiles


@pytest.mark.parametrize("case", CASES)
def test_the_masks_allow_what_flopsreg_counts_and_the_padding_beside(case):
    """The encoders' mask (transformers' _prepare_aspect_ratio_attention_mask) masks a pair only where
    both positions are padding: brute force over the padded positions. The cross-attention mask
    lets the positions from each image's <|image|> token to the end attend to its real tiles."""
    measured = MEASURED["cases"][case]
    length = VISION["max_num_tiles"] * PADDED
    assert measured["vision_mask_length"] == length
    for tiles, pairs in zip(measured["num_tiles"], measured["vision_mask_pairs"], strict=True):
        real = [tile < tiles and position < TILE for tile in range(VISION["max_num_tiles"]) for position in range(PADDED)]
        assert sum(q or k for q in real for k in real) == pairs
    sequence = measured["sequence_length"]
    assert measured["cross_mask_pairs"] == sum((sequence - k) * tiles * TILE for k, tiles in enumerate(measured["num_tiles"]))
    assert measured["cross_mask_rows"] == sequence  # no row is masked out: every position follows an image
    assert measured["cross_mask_keys"] == len(measured["images"]) * VISION["max_num_tiles"] * TILE


@pytest.mark.parametrize("case", CASES)
def test_the_encoders_projector_and_cross_attention_are_the_real_work(registry, case):
    """flopsreg's pieces, from the config by hand over the real positions (real tiles x 17)."""
    measured = MEASURED["cases"][case]
    result = registry.evaluate(_model(), seq_len=MEASURED["text_tokens"], images=_images(case))
    assert [plan.grid[0] for plan in result.images.plans] == measured["num_tiles"]
    assert result.seqlens == (measured["sequence_length"],) and result.images.tokens == len(measured["images"])
    real = [tiles * TILE for tiles in measured["num_tiles"]]
    h, text = VISION["hidden_size"], TEXT["hidden_size"]
    flops = dict(result.images.flops)
    assert flops.pop("patch_embed") == 2 * sum(measured["num_tiles"]) * SIDE**2 * h * 3 * 14**2
    assert flops.pop("projector") == 2 * sum(real) * VISION["vision_output_dim"] * text
    layers = VISION["num_hidden_layers"] + VISION["num_global_layers"]  # the local and the global blocks alike
    assert sum(flops.values()) == sum(_encoder(n, n * n, layers) for n in real)
    sequence, kv = measured["sequence_length"], TEXT["num_key_value_heads"] * text // TEXT["num_attention_heads"]
    layer = (2 * sequence * 2 * text * text + 2 * sum(real) * 2 * text * kv
             + 4 * text * measured["cross_mask_pairs"] + 2 * sequence * 3 * text * TEXT["intermediate_size"])
    assert sum(result.images.cross_flops.values()) == len(TEXT["cross_attention_layers"]) * layer


@pytest.mark.parametrize("case", CASES)
def test_the_whole_forward_equals_flop_counter_mode_less_the_padding(eager_registry, case):
    """FlopCounterMode counts the encoders over every padded position (max_num_tiles x 24) with
    every pair, the mask's outer product (a matmul), the projector and the cross-attention k and v
    over the padding tiles, and the cross-attention over every (position, vision token) pair:
    each is flopsreg's form at the padded sizes, the padding being the difference; the language
    model's self-attention layers under the eager convention (s x s scores)."""
    measured = MEASURED["cases"][case]
    model = _model()
    result = eager_registry.evaluate(model, seq_len=MEASURED["text_tokens"], images=_images(case))
    images, tiles = len(measured["images"]), VISION["max_num_tiles"]
    padded, all_tiles = tiles * PADDED, tiles * TILE
    h, text, kv = VISION["hidden_size"], TEXT["hidden_size"], TEXT["num_key_value_heads"] * TEXT["hidden_size"] // TEXT["num_attention_heads"]
    flops = dict(result.images.flops)
    real = [t * TILE for t in measured["num_tiles"]]
    patch_padding = 2 * (images * tiles - sum(measured["num_tiles"])) * SIDE**2 * h * 3 * 14**2
    assert flops["patch_embed"] + patch_padding == measured["patch_embedding"]
    # both encoders over every padded position of every tile, every pair
    assert measured["transformer"] == images * _encoder(padded, padded**2, VISION["num_hidden_layers"])
    assert measured["global_transformer"] == images * _encoder(padded, padded**2, VISION["num_global_layers"])
    blocks = sum(v for k, v in flops.items() if k.startswith("blocks."))
    depth = VISION["num_hidden_layers"] + VISION["num_global_layers"]
    blocks_padding = images * _encoder(padded, padded**2, depth) - sum(_encoder(n, n * n, depth) for n in real)
    assert blocks + blocks_padding == measured["transformer"] + measured["global_transformer"]
    mask = images * 2 * padded**2  # _prepare_aspect_ratio_attention_mask's outer product
    assert measured["vision_model"] == measured["patch_embedding"] + measured["transformer"] + measured["global_transformer"] + mask
    assert flops["projector"] + 2 * (images * all_tiles - sum(real)) * VISION["vision_output_dim"] * text == measured["projector"]
    sequence, keys = measured["sequence_length"], images * all_tiles
    cross = dict(result.images.cross_flops)
    cross_padding = len(TEXT["cross_attention_layers"]) * (
        2 * (keys - sum(real)) * 2 * text * kv + 4 * text * (sequence * keys - measured["cross_mask_pairs"]))
    assert sum(cross.values()) + cross_padding == sum(measured["layers"][n] for n in TEXT["cross_attention_layers"])
    language_model = eager_registry.evaluate(model, seq_len=sequence, convention="eager").forward
    self_layers = [n for n in range(TEXT["num_hidden_layers"]) if n not in TEXT["cross_attention_layers"]]
    assert language_model == sum(measured["layers"][n] for n in self_layers) + measured["lm_head"]
    padding = (patch_padding + mask + blocks_padding
               + measured["projector"] - flops["projector"] + cross_padding)
    exact_language_model = eager_registry.evaluate(model, seq_len=sequence).forward  # causal pairs, where eager has s x s
    assert result.forward == exact_language_model + result.images.tower + sum(cross.values())
    assert language_model + result.images.tower + sum(cross.values()) + padding == measured["forward"]


def test_text_alone_skips_the_cross_attention_layers(eager_registry):
    model = _model()
    assert eager_registry.evaluate(model, seq_len=MEASURED["text_tokens"], convention="eager").forward == MEASURED["text_only_forward"]


def test_every_sequence_of_a_batch_or_a_packed_row_holds_the_images(registry):
    model, images = _model(), _images("two")
    one = registry.evaluate(model, seq_len=7, images=images)
    assert registry.evaluate(model, seq_len=7, images=images, batch=3).forward == 3 * one.forward
    packed = registry.evaluate(model, seqlens=[7, 20], images=images, batch=2)
    twenty = registry.evaluate(model, seq_len=20, images=images)
    assert packed.forward == 2 * (one.forward + twenty.forward)
    assert packed.per_request == (2 * one.forward, 2 * twenty.forward)


@pytest.mark.parametrize("convention", ["megatron", "megatron_bridge", "hf_trainer", "vllm", "slime", "nanogpt"])
def test_every_other_convention_refuses_mllama_images_by_name(registry, convention):
    message = rf"^images: convention '{convention}' has no term for the vision tower \(Mllama vision encoder\): count images with the exact convention$"
    with pytest.raises(flopsreg.FlopsregError, match=message):
        registry.evaluate(_model(), seq_len=7, images=[(300, 500)], convention=convention)


def test_image_tokens_are_refused_the_tiles_need_the_size(registry):
    with pytest.raises(flopsreg.FlopsregError, match=r"^image_tokens: Mllama vision encoder needs each image's height and width \(give images=\): "
                       r"every image is one <\|image\|> token; its tiles, and so the encoder's work, depend on its size$"):
        registry.evaluate(_model(), seq_len=7, image_tokens=[1])


def test_the_command_line_and_explain_show_the_cross_attention(tmp_path, capsys, registry):
    path = tmp_path / "mllama.json"
    path.write_text(json.dumps(CONFIG))
    assert main(["eval", str(path), "--seq-len", "7", "--image", "60x200", "--format", "json", "--no-cache"]) == 0
    output = json.loads(capsys.readouterr().out)
    expected = registry.evaluate(_model(), seq_len=7, images=[(60, 200)])
    assert output["forward_flops"] == str(expected.forward) and output["seqlens"] == [8]
    assert output["images"]["cross_attention"]["keys"] == [4 * TILE]
    assert main(["explain", str(path), "--image", "60x200", "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "image 1: 60x200 -> 56x186, patch grid 4x4x4 (t x h x w), 1 tokens" in text
    assert "Mllama cross-attention layers (cross_attention): vision tokens each image gives as keys: 68" in text
    assert "cross_attention tower (Mllama cross-attention layers): forward FLOPs of one sequence with images" in text
    assert "  attention = 4*cross_layers*heads*pairs*floor(h/heads)" in text


def test_the_formula_shows_the_cross_attention_layers_as_a_term_of_their_own(tmp_path, capsys):
    """``flopsreg formula``: F_cross_attention(length, keys, pairs), dims substituted, at each
    recorded case's length, real vision tokens and allowed pairs, is what FlopCounterMode recorded
    for the cross-attention layers less their k and v over the padding tiles and their scores
    against them; ``flopsreg latex`` writes both towers' forms."""
    import sympy

    path = tmp_path / "mllama.json"
    path.write_text(json.dumps(CONFIG))
    assert main(["formula", str(path), "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "  blocks.attention = d*n**2*(4*global_layers + 4*local_layers)" in text
    (line,) = [line for line in text.splitlines() if line.startswith("  F_cross_attention(length, keys, pairs) = ")]
    total = sympy.sympify(line.split(" = ", 1)[1])
    text_width = TEXT["hidden_size"]
    kv = TEXT["num_key_value_heads"] * text_width // TEXT["num_attention_heads"]
    for measured in MEASURED["cases"].values():
        sequence, real = measured["sequence_length"], sum(measured["num_tiles"]) * TILE
        keys = measured["cross_mask_keys"]
        padding = len(TEXT["cross_attention_layers"]) * (
            2 * (keys - real) * 2 * text_width * kv + 4 * text_width * (sequence * keys - measured["cross_mask_pairs"]))
        values = dict(zip(sympy.symbols("length keys pairs"), (sequence, real, measured["cross_mask_pairs"]), strict=True))
        assert total.subs(values) + padding == sum(measured["layers"][n] for n in TEXT["cross_attention_layers"])
    assert main(["latex", str(path), "--no-cache"]) == 0
    tex = capsys.readouterr().out
    assert r"F_{\mathrm{blocks.attention}} &= d n^{2} \left(4 G + 4 L\right)" in tex
    assert r"F_{\mathrm{cross\_attention}}(\ell, v, p) &= " in tex


def test_a_kind_refuses_a_sequence_form_over_an_undeclared_symbol_and_a_dim_named_like_its_symbols():
    import sympy

    from flopsreg.plugin import CROSS_ATTENTION, Dim, TowerKind

    base = {"name": "k", "title": "K", "summary": "s", "reference": "r", "parameters": 0}
    with pytest.raises(ValueError, match=r"sequence_flops\['mlp'\] uses \['rows'\], which no dim declares"):
        TowerKind(**base, dims=(Dim("h", "hidden_size", 1),), sequence_flops={"mlp": sympy.Symbol("rows") * CROSS_ATTENTION[0]})
    with pytest.raises(ValueError, match=r"^TowerKind dims: \['pairs'\] name the cross-attention's symbols; rename the dim$"):
        TowerKind(**base, dims=(Dim("pairs", "hidden_size", 1),))


def test_a_cross_attention_rule_names_its_keys():
    with pytest.raises(ValueError, match=r"^MediaRule.cross_part and cross_keys go together"):
        MediaRule(summary="s", plan=MLLAMA_IMAGES.plan, cross_part="cross_attention")


def _cross_layer(queries: int, keys: int, pairs: int) -> int:
    """One cross-attention layer by hand: q and o over the queries, k and v over the vision tokens
    the step encodes, attention over the allowed pairs, the MLP over the queries."""
    text, i = TEXT["hidden_size"], TEXT["intermediate_size"]
    kv = TEXT["num_key_value_heads"] * text // TEXT["num_attention_heads"]
    return 2 * queries * 2 * text * text + 2 * keys * 2 * text * kv + 4 * text * pairs + 2 * queries * 3 * text * i


def test_a_step_after_cached_images_cross_attends_without_encoding_them(registry):
    """A decode step with both images of case "two" in the cache: the tower runs no more, k and v of
    the vision tokens come from the cache, and the one new position attends to every image's
    real positions; its self-attention layers are the language model's at that cache."""
    measured = MEASURED["cases"]["two"]
    keys = [tiles * TILE for tiles in measured["num_tiles"]]
    model, sequence = _model(), measured["sequence_length"]
    step = registry.evaluate(model, seq_len=1, cached=sequence, images=_images("two"))
    layers = len(TEXT["cross_attention_layers"])
    assert sum(step.images.cross_flops.values()) == layers * _cross_layer(1, 0, sum(keys))
    text_only = registry.evaluate(model, seq_len=1, cached=sequence).forward
    assert step.forward == text_only + layers * _cross_layer(1, 0, sum(keys))


def test_positions_before_the_first_image_do_no_cross_attention_work(registry):
    """Two images after 3 and 5 text tokens (one ``<|image|>`` token each, at positions 3 and 6):
    positions 0 to 2 attend to no image (transformers multiplies their rows by 0), position 3 on
    attends to the first image and 6 on to both."""
    measured = MEASURED["cases"]["two"]
    keys = [tiles * TILE for tiles in measured["num_tiles"]]
    text = MEASURED["text_tokens"]
    result = registry.evaluate(_model(), seq_len=text, images=_images("two"), image_positions=[3, 5])
    end = text + 2
    pairs = keys[0] * (end - 3) + keys[1] * (end - 6)
    assert sum(result.images.cross_flops.values()) == len(TEXT["cross_attention_layers"]) * _cross_layer(end - 3, sum(keys), pairs)
