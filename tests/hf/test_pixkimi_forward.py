"""Mistral Large 4 (Pixtral ViT, patch-merger projector) and Kimi K2.5 (MoonViT, projector) with images
against real forward passes: tests/data/hf_forward/measure_pixkimi.py ran tiny models on random
images through each family's own resize rule and placeholder expansion, under FlopCounterMode
(forward_pixkimi.json), with two and three images in one request. The tower and projector, the
language model over text and image tokens, the token counts, the parameters and the processors'
resize for a dozen sizes at the published settings are each compared with what was recorded.
A four-block Pixtral with vision_feature_layer 1, -3 and 4 (recorded per block) checks that only the
blocks whose output reaches the projector are counted.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from eager import DSA_INDEXER_FROM_HIDDEN_RECTANGLE, DSA_INDEXER_RECTANGLE
from eager import eager_registry as make_eager_registry

import flopsreg
from flopsreg.cli import main
from flopsreg.engine.media import tower_flops
from flopsreg.patterns.hf._kimi_vit import KIMI_IMAGES, WRAPPER_TOKENS
from flopsreg.patterns.hf._pixtral_vit import PIXTRAL_IMAGES
from flopsreg.patterns.hf._towers import KIMI_K25_VISION, PIXTRAL_VISION

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_pixkimi.json").read_text())
MODELS = RECORD["models"]
CASES = [(name, case) for name in sorted(MODELS) for case in sorted(MODELS[name]["cases"])]


@pytest.fixture(scope="module")
def eager_registry():
    return make_eager_registry(DSA_INDEXER_RECTANGLE, DSA_INDEXER_FROM_HIDDEN_RECTANGLE)


def _model(name: str, **vision) -> flopsreg.Model:
    config = MODELS[name]["config"]
    return flopsreg.Model.from_hf_config({**config, "vision_config": {**config["vision_config"], **vision}})


def _images(name: str, case: str) -> list[tuple[int, int]]:
    return [tuple(size) for size in MODELS[name]["cases"][case]["images"]]


def test_the_record_names_its_versions_and_every_case_ran():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert sorted(MODELS) == ["kimi_k25", "mistral_large4"] and len(CASES) == 6
    assert MODELS["mistral_large4"]["class"] == "MistralLarge4ForConditionalGeneration"
    assert MODELS["kimi_k25"]["class"] == "Kimi_K25ForConditionalGeneration"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_whole_model_and_its_towers_hold_transformers_parameters(registry, name):
    model = _model(name)
    assert registry.parameters(model).total == MODELS[name]["parameters"]
    assert model.towers["vision"].parameters == MODELS[name]["vision_parameters"]
    assert model.towers["projector"].parameters == MODELS[name]["projector_parameters"]


@pytest.mark.parametrize("row", RECORD["resizing"]["pixtral"]["sizes"], ids=lambda row: "x".join(map(str, row["size"])))
def test_the_pixtral_rule_gives_the_processors_size_and_tokens(row):
    """PixtralImageProcessorPil and PixtralProcessor at Mistral Small 3.1 / Large 3's settings (patch 14,
    merge 2, longest edge 1540): the resized size and the [IMG], [IMG_BREAK], [IMG_END] count."""
    settings = RECORD["resizing"]["pixtral"]["settings"]
    dims = {"patch": settings["patch"], "merge": settings["merge"], "longest_edge": settings["longest_edge"]}
    plan = PIXTRAL_IMAGES.plan(dims, *row["size"])
    assert (list(plan.resized), plan.tokens) == (row["resized"], row["tokens"])


@pytest.mark.parametrize("row", RECORD["resizing"]["kimi_k25"]["sizes"], ids=lambda row: "x".join(map(str, row["size"])))
def test_the_kimi_rule_gives_the_processors_grid_and_tokens(row):
    """Kimi_K25ImageProcessor's navit_resize and Kimi_K25Processor's pads at the processor's defaults
    (patch 14, merge 2, 16384 patches, 512 a side), plus the chat template's 4 wrapper tokens."""
    settings = RECORD["resizing"]["kimi_k25"]["settings"]
    assert (settings["max_patches"], settings["max_side"]) == (16384, 512)
    dims = {"patch": settings["patch"], "merge_h": settings["merge"], "merge_w": settings["merge"], **KIMI_IMAGES.options}
    plan = KIMI_IMAGES.plan(dims, *row["size"])
    assert (list(plan.resized), list(plan.grid)) == (row["padded"], row["grid"])
    assert plan.tokens == row["tokens"] + WRAPPER_TOKENS


@pytest.mark.parametrize(("name", "case"), CASES)
def test_the_token_counts_and_sequence_equal_the_recorded_forward(registry, name, case):
    measured = MODELS[name]["cases"][case]
    result = registry.evaluate(_model(name), seq_len=MODELS[name]["text_tokens"], images=_images(name, case))
    assert result.seqlens == (measured["sequence_length"],)
    if name == "mistral_large4":
        assert [list(plan.resized) for plan in result.images.plans] == measured["image_sizes"]
        assert [plan.tokens for plan in result.images.plans] == measured["image_tokens"]
    else:
        assert [list(plan.grid) for plan in result.images.plans] == [plan["grid"] for plan in measured["plans"]]
        assert [plan.tokens for plan in result.images.plans] == [plan["tokens"] + WRAPPER_TOKENS for plan in measured["plans"]]
        assert measured["pixel_values"][0] == sum(rows * columns for _, rows, columns in (p.grid for p in result.images.plans))


@pytest.mark.parametrize("case", sorted(MODELS["kimi_k25"]["cases"]))
def test_moonvit_and_its_projector_equal_the_recorded_forward(registry, case):
    """MoonViT splits the packed patches by image before attention: nothing to reconcile."""
    measured = MODELS["kimi_k25"]["cases"][case]
    flops = dict(registry.evaluate(_model("kimi_k25"), seq_len=7, images=_images("kimi_k25", case)).images.flops)
    assert flops.pop("projector") == measured["projector"]
    assert sum(flops.values()) == measured["vision_tower"]


def _padded_and_cross_image(name: str, case: str) -> tuple[int, int]:
    """What transformers' Pixtral computes beyond the useful work, from the record alone: the Conv2d
    over the padding of the batch's pixel_values, and the attention scores across images that the
    block-diagonal mask then discards (QK^T and PV: 2 x 2 x h FLOPs a pair, each layer)."""
    measured, vision = MODELS[name]["cases"][case], MODELS[name]["config"]["vision_config"]
    h, layers, patch = vision["hidden_size"], vision["num_hidden_layers"], vision["patch_size"]
    patches = [(height // patch) * (width // patch) for height, width in measured["image_sizes"]]
    images, _, height, width = measured["pixel_values"]
    padding = 2 * h * 3 * patch**2 * (images * (height // patch) * (width // patch) - sum(patches))
    cross = 4 * h * layers * (sum(patches) ** 2 - sum(n * n for n in patches))
    return padding, cross


@pytest.mark.parametrize("case", sorted(MODELS["mistral_large4"]["cases"]))
def test_pixtral_and_its_projector_equal_the_recorded_forward_less_padding_and_cross_image_scores(registry, case):
    """flopsreg counts the real patches and the pairs within each image; the record's Conv2d and
    attention scores hold the padding and the cross-image pairs too: reconciled term by term."""
    measured = MODELS["mistral_large4"]["cases"][case]
    flops = dict(registry.evaluate(_model("mistral_large4"), seq_len=7, images=_images("mistral_large4", case)).images.flops)
    padding, cross = _padded_and_cross_image("mistral_large4", case)
    assert flops["patch_embed"] + padding == measured["patch_conv"]
    assert flops["blocks.attention"] + cross == measured["attention_scores"]
    assert flops.pop("projector.merge") + flops.pop("projector.mlp") == measured["projector"]
    assert sum(flops.values()) + padding + cross == measured["vision_tower"]
    assert (padding > 0 and cross > 0) == (len(measured["images"]) > 1)


def _block_diagonal_pairs(lengths: list[int]) -> int:
    """generate_block_attention_mask's rule, pair by pair: a query and a key of the packed sequence
    attend when they fall in the same image's run of patches."""
    image = [number for number, n in enumerate(lengths) for _ in range(n)]
    return sum(q == k for q in image for k in image)


@pytest.mark.parametrize("case", sorted(MODELS["mistral_large4"]["cases"]))
def test_pixtrals_mask_allows_the_pairs_flopsreg_counts(registry, case):
    """The mask transformers built (recorded) allows sum(n^2) pairs, as a brute force over its rule
    does; flopsreg's attention is 4h x layers times that."""
    measured, vision = MODELS["mistral_large4"]["cases"][case], MODELS["mistral_large4"]["config"]["vision_config"]
    patch = vision["patch_size"]
    lengths = [(height // patch) * (width // patch) for height, width in measured["image_sizes"]]
    assert measured["mask_pairs"] == [_block_diagonal_pairs(lengths)]
    flops = registry.evaluate(_model("mistral_large4"), seq_len=7, images=_images("mistral_large4", case)).images.flops
    assert flops["blocks.attention"] == 4 * vision["hidden_size"] * vision["num_hidden_layers"] * measured["mask_pairs"][0]


@pytest.mark.parametrize(("name", "case"), CASES)
def test_the_whole_forward_equals_flop_counter_mode(registry, eager_registry, name, case):
    """The language model under the eager convention over text and image tokens (the image tokens are
    causal like text in both families), plus the towers (Pixtral's as transformers runs it)."""
    measured = MODELS[name]["cases"][case]
    model = _model(name)
    language_model = eager_registry.evaluate(model, seq_len=measured["sequence_length"], convention="eager").forward
    assert language_model == measured["rest"]
    images = registry.evaluate(model, seq_len=7, images=_images(name, case)).images
    assert images.bidirectional == 0
    wasted = sum(_padded_and_cross_image(name, case)) if name == "mistral_large4" else 0
    assert images.tower + wasted + language_model == measured["forward"]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_closed_forms_equal_the_recorded_tower_per_image(name):
    """Each image of a case alone through the kind's closed forms; their sum is the case's useful work."""
    kind = {"mistral_large4": PIXTRAL_VISION, "kimi_k25": KIMI_K25_VISION}[name]
    model = _model(name)
    dims = model.towers["vision"].dims
    for case, measured in MODELS[name]["cases"].items():
        plans = [kind.images.plan(kind.images.planning(dims), *size) for size in _images(name, case)]
        per_image = [tower_flops(kind, dims, [plan.grid]) for plan in plans]
        together = tower_flops(kind, dims, [plan.grid for plan in plans])
        assert {piece: sum(flops[piece] for flops in per_image) for piece in together} == together
        wasted = sum(_padded_and_cross_image(name, case)) if name == "mistral_large4" else 0
        assert sum(together.values()) == measured["vision_tower"] + measured["projector"] - wasted


FEATURE_LAYERS = RECORD["feature_layers"]


@pytest.mark.parametrize("case", sorted(FEATURE_LAYERS["cases"]))
def test_pixtral_counts_the_blocks_up_to_vision_feature_layer_and_the_record_holds_the_rest(registry, case):
    """transformers runs every block of the tower; the projector reads hidden_states[vision_feature_layer]
    (hidden_states[0] the patch embeddings): recorded = counted + the recorded blocks after the selected one."""
    measured = FEATURE_LAYERS["cases"][case]
    config = measured["config"]
    layers, selected = config["vision_config"]["num_hidden_layers"], config["vision_feature_layer"]
    used = {1: 1, -3: 2, 4: 4}[selected]  # of 5 hidden states: index 1 is one block, -3 is index 2
    model = flopsreg.Model.from_hf_config(config)
    assert model.towers["vision"].dims["used"] == used
    assert registry.parameters(model).total == measured["parameters"]
    flops = dict(registry.evaluate(model, seq_len=7, images=[tuple(FEATURE_LAYERS["image"])]).images.flops)
    thrown_away = sum(measured["layers"][used:])
    assert (thrown_away > 0) == (used < layers)
    assert flops["patch_embed"] == measured["patch_conv"]
    assert flops["blocks.qkv_proj"] + flops["blocks.attention"] + flops["blocks.mlp"] == sum(measured["layers"][:used])
    assert flops.pop("projector.merge") + flops.pop("projector.mlp") == measured["projector"]
    assert sum(flops.values()) + thrown_away == measured["vision_tower"]


@pytest.mark.parametrize(("selected", "used"), [(-1, 4), (0, 0), (-5, 0), ([0, -2], 3), ([3, 1], 3), ([-1], 4)])
def test_pixtral_blocks_reach_the_deepest_selected_hidden_state(selected, used):
    """A list keeps the blocks up to its deepest index (negative from the end of 5 hidden states)."""
    config = {**MODELS["mistral_large4"]["config"], "vision_feature_layer": selected}
    model = flopsreg.Model.from_hf_config({**config, "vision_config": {**config["vision_config"], "num_hidden_layers": 4}})
    assert model.towers["vision"].dims["used"] == used


@pytest.mark.parametrize("selected", [5, -6, [0, 7], [-1, -6]])
def test_an_out_of_range_vision_feature_layer_is_refused_by_name(selected):
    config = {**MODELS["mistral_large4"]["config"], "vision_feature_layer": selected}
    config = {**config, "vision_config": {**config["vision_config"], "num_hidden_layers": 4}}
    message = rf"vision_config\.num_hidden_layers = 4: vision_feature_layer = {re.escape(repr(selected))} is out of range: expected an index or a non-empty list of indexes from -5 to 4"
    with pytest.raises(flopsreg.FlopsregError, match=message):
        flopsreg.Model.from_hf_config(config)


def test_image_tokens_alone_are_refused_by_name(registry):
    for name, note in (("mistral_large4", "the row breaks"), ("kimi_k25", "attention within each image")):
        with pytest.raises(flopsreg.FlopsregError, match=rf"^image_tokens: .+ needs each image's height and width \(give images=\): {note}"):
            registry.evaluate(_model(name), seq_len=7, image_tokens=[9])


def test_a_non_square_kimi_merge_kernel_is_refused(registry):
    with pytest.raises(flopsreg.FlopsregError, match=r"^images\[0\] = \(50, 37\): merge_kernel_size = \[2, 3\]: Kimi_K25ImageProcessor merges square groups"):
        registry.evaluate(_model("kimi_k25", merge_kernel_size=[2, 3]), seq_len=7, images=[(50, 37)])


def test_an_image_scaled_to_nothing_is_refused(registry):
    with pytest.raises(flopsreg.FlopsregError, match=r"^images\[0\] = \(1, 100000\): scaled to fit 64 pixels, a side comes to 0 pixels"):
        registry.evaluate(_model("mistral_large4"), seq_len=7, images=[(1, 100000)])


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("convention", sorted(set(flopsreg.Registry().conventions) - {"exact"}))
def test_every_other_convention_refuses_the_images_by_name(registry, name, convention):
    """No framework's convention counts these towers: where it counts the language model, a request with
    images is refused naming the tower; where it refuses the language model itself, that refusal stands."""
    model, title = _model(name), {"mistral_large4": r"Pixtral ViT", "kimi_k25": r"MoonViT \(Kimi K2.5\)"}[name]
    message = rf"^images: convention '{convention}' has no term for the vision tower \({title}\): count images with the exact convention$"
    try:
        registry.evaluate(model, seq_len=7, convention=convention)
    except flopsreg.FlopsregError as refused:
        message = "^" + re.escape(str(refused)) + "$"
    with pytest.raises(flopsreg.FlopsregError, match=message):
        registry.evaluate(model, seq_len=7, images=[(50, 37)], convention=convention)


def test_the_command_line_takes_pixtral_images(tmp_path, capsys, registry):
    path = tmp_path / "mistral_large4.json"
    path.write_text(json.dumps(MODELS["mistral_large4"]["config"]))
    assert main(["eval", str(path), "--seq-len", "7", "--image", "100x30", "--image", "23x64", "--format", "json", "--no-cache"]) == 0
    output = json.loads(capsys.readouterr().out)
    expected = registry.evaluate(_model("mistral_large4"), seq_len=7, images=[(100, 30), (23, 64)])
    assert output["forward_flops"] == str(expected.forward) and output["seqlens"] == [MODELS["mistral_large4"]["cases"]["two"]["sequence_length"]]
    assert main(["explain", str(path), "--image", "100x30", "--no-cache"]) == 0
    assert "image 1: 100x30 -> 64x24, patch grid 1x16x6 (t x h x w), 32 tokens" in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_formula_and_latex_show_the_tower_as_a_term_of_its_own(tmp_path, capsys, name):
    """``flopsreg formula``: F_vision(t, rows, columns) with the merged tokens M written out, summed
    over a recorded case's grids, is the recorded useful work; ``flopsreg latex`` writes it too."""
    import sympy

    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(MODELS[name]["config"]))
    assert main(["formula", str(path), "--no-cache"]) == 0
    text = capsys.readouterr().out
    # Pixtral's blocks are the `used` ones (up to vision_feature_layer); MoonViT runs all `layers`
    blocks = {"mistral_large4": "4*columns**2*h*rows**2*t*used", "kimi_k25": "4*columns**2*h*layers*rows**2*t"}[name]
    assert f"blocks.attention = {blocks}" in text
    (total,) = [line.split(" = ", 1)[1] for line in text.splitlines() if line.startswith("  F_vision(t, rows, columns) = ")]
    merged = [line.split(" = ", 1)[1] for line in text.splitlines() if line.startswith("  M = ")][-1]  # with the dims' values
    form = sympy.sympify(total).subs(sympy.Symbol("M"), sympy.sympify(merged))
    grid = sympy.symbols("t rows columns")
    for case, measured in MODELS[name]["cases"].items():
        plans = [tuple(p.grid) for p in flopsreg.Registry().evaluate(_model(name), seq_len=7, images=_images(name, case)).images.plans]
        wasted = sum(_padded_and_cross_image(name, case)) if name == "mistral_large4" else 0
        assert sum(form.subs(dict(zip(grid, g, strict=True))) for g in plans) == measured["vision_tower"] + measured["projector"] - wasted
    assert main(["latex", str(path), "--no-cache"]) == 0
    assert r"F_{\mathrm{vision}}(t, r, c) &= " in capsys.readouterr().out
