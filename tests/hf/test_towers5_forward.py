"""Qwen-VL models with images (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Qwen3.5) against real forward passes:
tests/data/hf_forward/measure_towers5.py ran tiny models on random images through transformers'
own image processor and the processor's placeholder expansion, under FlopCounterMode
(forward_towers5.json). The vision tower, the language model over text and image tokens, the
token counts and the resizing rule are each compared with what was recorded.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flopsreg
from flopsreg.cli import main
from flopsreg.engine.media import tower_flops
from flopsreg.patterns.hf._qwen_vit import QWEN2_5_VL_IMAGES, QWEN3_VL_IMAGES
from flopsreg.patterns.hf._towers import QWEN2_5_VL_VISION, QWEN2_VL_VISION, QWEN3_5_VISION, QWEN3_VL_VISION, SIGLIP_VISION
from flopsreg.plugin import IMAGE_GRID, MediaPlan

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_towers5.json").read_text())
HF = Path(__file__).parents[1] / "data" / "hf"
CASES = [(name, case) for name, model in sorted(RECORD["models"].items()) for case in sorted(model["cases"])]
RULES = {"qwen2_5_vl": (QWEN2_5_VL_IMAGES, 14), "qwen3_vl": (QWEN3_VL_IMAGES, 16)}
KINDS = {"qwen2_vl": QWEN2_VL_VISION, "qwen2_5_vl": QWEN2_5_VL_VISION, "qwen3_vl": QWEN3_VL_VISION, "qwen3_5": QWEN3_5_VISION}


def _model(name: str) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(RECORD["models"][name]["config"])


def _images(name: str, case: str) -> list[tuple[int, int]]:
    return [tuple(size) for size in RECORD["models"][name]["cases"][case]["images"]]


def test_the_record_names_its_versions_and_every_case_ran():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert sorted(RECORD["models"]) == ["qwen2_5_vl", "qwen2_vl", "qwen3_5", "qwen3_vl"] and len(CASES) == 12


@pytest.mark.parametrize("name", sorted(RECORD["models"]))
def test_the_whole_model_and_its_vision_tower_hold_transformers_parameters(registry, name):
    model = _model(name)
    assert registry.parameters(model).total == RECORD["models"][name]["parameters"]
    assert model.towers["vision"].parameters == RECORD["models"][name]["visual_parameters"]


@pytest.mark.parametrize("model_type", sorted(RECORD["defaults"]))
def test_the_class_default_configs_hold_transformers_parameters(registry, model_type):
    """tests/data/hf/<type>-defaults.json is the recorded class-default config; totals equal."""
    measured = RECORD["defaults"][model_type]
    config = json.loads((HF / f"{model_type.replace('_', '-')}-defaults.json").read_text())
    assert config == measured["config"]
    model = flopsreg.Model.from_hf_config(config)
    assert registry.parameters(model).total == measured["parameters"]
    assert model.towers["vision"].parameters == measured["visual_parameters"]


@pytest.mark.parametrize(("family", "row"), [(family, row) for family, rows in RECORD["resizing"].items() for row in rows])
def test_the_resizing_rule_gives_the_image_processors_grid(family, row):
    rule, patch = RULES[family]
    if "refused" in row:
        with pytest.raises(ValueError, match="aspect ratio above 200"):
            rule.plan({"patch": patch, "merge": 2, **rule.options}, *row["size"])
        return
    plan = rule.plan({"patch": patch, "merge": 2, **rule.options}, *row["size"])
    assert list(plan.grid) == row["grid"]
    assert plan.resized == (row["grid"][1] * patch, row["grid"][2] * patch)
    assert plan.tokens == row["grid"][1] * row["grid"][2] // 4 + 2


@pytest.mark.parametrize(("name", "case"), CASES)
def test_the_tower_and_the_token_counts_equal_the_recorded_forward(registry, name, case):
    measured = RECORD["models"][name]["cases"][case]
    result = registry.evaluate(_model(name), seq_len=RECORD["models"][name]["text_tokens"], images=_images(name, case))
    assert [list(plan.grid) for plan in result.images.plans] == measured["image_grid_thw"]
    assert result.seqlens == (measured["sequence_length"],)
    assert result.images.forward == measured["visual"]


@pytest.mark.parametrize(("name", "case"), [(name, case) for name, case in CASES if name != "qwen3_5"])
def test_the_whole_forward_equals_flop_counter_mode(eager_registry, name, case):
    """Tower plus language model over text and image tokens, to the FLOP: the tower exact (its
    attention is bidirectional: every pair it computes is allowed), the language model under the
    eager convention (its s x s scores, as FlopCounterMode sees them) over the same length."""
    measured = RECORD["models"][name]["cases"][case]
    model = _model(name)
    with_images = eager_registry.evaluate(model, seq_len=RECORD["models"][name]["text_tokens"], images=_images(name, case))
    language_model = eager_registry.evaluate(model, seq_len=with_images.seqlens[0], convention="eager").forward
    assert language_model == measured["rest"]
    assert with_images.images.forward + language_model == measured["forward"]


@pytest.mark.parametrize("case", sorted(RECORD["models"]["qwen3_5"]["cases"]))
def test_images_add_nothing_to_the_language_model_beyond_their_tokens(case):
    """What the language model spends with images is what it spends on text of the same length
    (recorded apart); Qwen3.5's chunked Gated DeltaNet is reconciled in test_linear_forward.py."""
    measured = RECORD["models"]["qwen3_5"]["cases"][case]
    assert measured["rest"] == measured["text_alone"]
    for name in ("qwen2_vl", "qwen2_5_vl", "qwen3_vl"):
        assert all(c["rest"] == c["text_alone"] for c in RECORD["models"][name]["cases"].values())


def test_image_tokens_give_what_the_image_gives(registry):
    """An image known by its image tokens costs what the image does where attention spans the
    whole image (Qwen3-VL): the tokens fix the patches."""
    model = _model("qwen3_vl")
    by_size = registry.evaluate(model, seq_len=9, images=_images("qwen3_vl", "two"))
    tokens = [t * h * w // 4 for t, h, w in RECORD["models"]["qwen3_vl"]["cases"]["two"]["image_grid_thw"]]
    by_tokens = registry.evaluate(model, seq_len=9, image_tokens=tokens)
    assert (by_tokens.forward, by_tokens.seqlens) == (by_size.forward, by_size.seqlens)


def test_every_sequence_of_a_batch_or_a_packed_row_holds_the_images(registry):
    model, images = _model("qwen3_vl"), _images("qwen3_vl", "one")
    one = registry.evaluate(model, seq_len=9, images=images)
    assert registry.evaluate(model, seq_len=9, images=images, batch=3).forward == 3 * one.forward
    packed = registry.evaluate(model, seqlens=[9, 20], images=images)
    assert packed.forward == one.forward + registry.evaluate(model, seq_len=20, images=images).forward
    assert sum(packed.per_request) == packed.forward


def _window_dims(merge: int, window: int, layers: int = 1, fullatt: int = 0) -> dict[str, int]:
    """Qwen2.5-VL's dims with h = 1 and patch = 1: windows of *window* merged tokens a side, so that
    the attention's closed form is 4 x (the pairs it allows, summed over the layers)."""
    dims = {dim.name: 1 for dim in QWEN2_5_VL_VISION.dims}
    return {**dims, "merge": merge, "window": window * merge, "layers": layers, "fullatt": fullatt}


def _mask_pairs(t: int, rows: int, columns: int, merge: int, window: int) -> int:
    """Brute force over transformers' windows: patch p attends to q iff both fall in one window of
    *window* merged tokens (merge x merge patches each) a side, within each of the t frames."""
    def cell(p):
        return (p[0] // merge // window, p[1] // merge // window)

    patches = list(itertools.product(range(rows), range(columns)))
    return t * sum(cell(p) == cell(q) for p in patches for q in patches)


@pytest.mark.parametrize(("grid", "merge", "window"), [
    ((1, 4, 4), 2, 2), ((1, 6, 10), 2, 2), ((1, 22, 36), 2, 2), ((1, 8, 8), 2, 4), ((1, 2, 14), 2, 3), ((1, 10, 6), 2, 1),
    ((2, 6, 9), 3, 1), ((1, 5, 7), 1, 3), ((3, 12, 8), 2, 3),
])
def test_the_windows_closed_form_allows_the_pairs_of_the_boolean_mask(grid, merge, window):
    """Qwen2.5-VL's windowed layers (t merge^4 S_r S_c pairs in closed form) against the pairs of
    the boolean mask, one windowed layer and no full one; with two full layers of four, those
    attend over every pair of each frame."""
    pairs = tower_flops(QWEN2_5_VL_VISION, _window_dims(merge, window), [grid])["blocks.attention"]
    assert pairs == 4 * _mask_pairs(*grid, merge, window)
    t, rows, columns = grid
    mixed = tower_flops(QWEN2_5_VL_VISION, _window_dims(merge, window, layers=4, fullatt=2), [grid])["blocks.attention"]
    assert mixed == 4 * (2 * t * (rows * columns) ** 2 + 2 * _mask_pairs(*grid, merge, window))


def test_qwen2_5_vl_counts_windowed_and_full_layers_apart(registry):
    """4 blocks, 2 full: the attention is 4h x (2 x N^2 + 2 x sum of window^2), N = 22 x 36. By
    hand: 11 x 18 merged tokens cut into windows of 2 a side, rows 2,2,2,2,2,1 and columns 9 x 2;
    a window of a x b merged tokens holds 4ab patches, so sum of window^2 = 16 (5 x 4 + 1)(9 x 4)."""
    model = _model("qwen2_5_vl")
    flops = registry.evaluate(model, seq_len=9, images=_images("qwen2_5_vl", "one")).images.flops
    assert flops["blocks.attention"] == 4 * 36 * (2 * (22 * 36) ** 2 + 2 * 16 * 21 * 36)


def test_a_window_narrower_than_a_merged_token_is_one_line(registry):
    """window_size below patch x merge: transformers' window index divides by 0 too."""
    config = RECORD["models"]["qwen2_5_vl"]["config"]
    model = flopsreg.Model.from_hf_config({**config, "vision_config": {**config["vision_config"], "window_size": 20}})
    with pytest.raises(flopsreg.FlopsregError, match=r"^Qwen2.5-VL ViT: blocks.attention cannot be evaluated for the dims .*by zero$"):
        registry.evaluate(model, seq_len=9, images=_images("qwen2_5_vl", "one"))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"images": [(100, 100)], "image_tokens": [5]}, r"^images and image_tokens: give one"),
    ({"images": [(10, 2500)]}, r"^images\[0\] = \(10, 2500\): 10x2500: the processor refuses an aspect ratio above 200 \(Qwen3-VL ViT\)$"),
    ({"images": [(0, 100)]}, r"^images\[0\] = \(0, 100\): expected \(height, width\), two integers >= 1"),
    ({"images": []}, r"^images = \[\]: expected at least one image$"),
    ({"image_tokens": [0]}, r"^image_tokens\[0\] = 0: expected an integer >= 1$"),
])
def test_bad_images_are_one_line(registry, kwargs, message):
    with pytest.raises(flopsreg.FlopsregError, match=message):
        registry.evaluate(_model("qwen3_vl"), seq_len=9, **kwargs)


def test_a_windowed_tower_needs_the_image_sizes(registry):
    with pytest.raises(flopsreg.FlopsregError, match=r"^image_tokens: Qwen2.5-VL ViT needs each image's height and width"):
        registry.evaluate(_model("qwen2_5_vl"), seq_len=9, image_tokens=[100])


def test_a_model_without_a_vision_tower_takes_no_images(registry):
    model = flopsreg.Model.from_hf_config(json.loads((HF / "llama-3-8b.json").read_text()))
    with pytest.raises(flopsreg.FlopsregError, match=r"^images: .* takes no images here: it has no vision tower$"):
        registry.evaluate(model, seq_len=9, images=[(100, 100)])
    from flopsreg.engine.media import plan_media

    # a plugin's wrapper whose towers count parameters only (every built-in vision tower has a rule)
    with pytest.raises(flopsreg.FlopsregError, match=r"^images: m takes no images here: its towers \(vision \(X ViT\), projector \(X\)\) have no image rule in flopsreg$"):
        plan_media("m", {"vision": ("X ViT", {}, None), "projector": ("X", {}, None)}, [(100, 100)], None, kinds={})


@pytest.mark.parametrize("convention", ["megatron", "hf_trainer", "vllm", "slime"])
def test_a_convention_without_a_tower_term_refuses_images_by_name(registry, convention):
    message = rf"^images: convention '{convention}' has no term for the vision tower \(Qwen3-VL ViT\): count images with the exact convention"
    with pytest.raises(flopsreg.FlopsregError, match=message):
        registry.evaluate(_model("qwen3_vl"), seq_len=9, images=[(100, 100)], convention=convention)


def test_a_decode_step_after_cached_images_is_the_language_model_alone(registry):
    """The images are in the cached prefix (tests/engine/test_images_everywhere.py: the cache rule)."""
    model = _model("qwen3_vl")
    assert registry.images(model, images=[(100, 100)]).tokens == 66  # scaled up to min_pixels: 16 x 16 patches / 4 + 2
    result = registry.evaluate(model, seq_len=1, cached=100, images=[(100, 100)])
    assert result.forward == registry.evaluate(model, seq_len=1, cached=100).forward


def _config_file(tmp_path: Path, name: str) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(RECORD["models"][name]["config"]))
    return str(path)


def test_the_command_line_takes_images_and_shows_each(tmp_path, capsys, registry):
    path = _config_file(tmp_path, "qwen3_vl")
    assert main(["eval", path, "--seq-len", "9", "--image", "300x500", "--format", "json", "--no-cache"]) == 0
    output = json.loads(capsys.readouterr().out)
    expected = registry.evaluate(_model("qwen3_vl"), seq_len=9, images=[(300, 500)])
    assert output["forward_flops"] == str(expected.forward) and output["seqlens"] == [9 + 18 * 32 // 4 + 2]
    assert output["images"]["images"] == [{"height": 300, "width": 500, "resized": [288, 512], "grid": [1, 18, 32], "tokens": 146}]
    assert main(["eval", path, "--seq-len", "9", "--image", "300x500", "--no-cache"]) == 0
    assert "image 1: 300x500 -> 288x512, patch grid 1x18x32 (t x h x w), 146 tokens" in capsys.readouterr().out
    assert main(["explain", path, "--image-tokens", "144", "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "image 1: given by its image tokens: 576 patches, 146 tokens" in text and "rule: blocks.attention = " in text


@pytest.mark.parametrize(("argv", "message"), [
    (["--image", "300by500"], "argument --image: expected HEIGHTxWIDTH in pixels (e.g. 720x1280), got '300by500'"),
    (["--image", "300x500", "--image-tokens", "5"], "argument --image-tokens: not allowed with argument --image"),
    (["--image", "10x2500"], "images[0] = (10, 2500): 10x2500: the processor refuses an aspect ratio above 200 (Qwen3-VL ViT)"),
])
def test_bad_images_on_the_command_line_are_one_line(tmp_path, capsys, argv, message):
    assert main(["eval", _config_file(tmp_path, "qwen3_vl"), "--seq-len", "9", *argv, "--no-cache"]) != 0
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


# -- the closed forms declared on the tower kinds (TowerKind.flops) --------------------------


@pytest.mark.parametrize(("name", "case"), CASES)
def test_the_closed_forms_give_the_recorded_tower(name, case):
    """Each piece's closed form, summed over the recorded images' patch grids, totals the
    tower FlopCounterMode recorded."""
    measured = RECORD["models"][name]["cases"][case]
    flops = tower_flops(KINDS[name], _model(name).towers["vision"].dims, [tuple(g) for g in measured["image_grid_thw"]])
    assert sum(flops.values()) == measured["visual"]


@st.composite
def _towers(draw):
    """A kind with closed forms (the Qwen-VL ViTs, SigLIP), small dims of its own and one to three
    images (grids in merge groups)."""
    kind = draw(st.sampled_from(sorted([*KINDS.values(), SIGLIP_VISION], key=lambda k: k.name)))
    dims = {dim.name: draw(st.integers(1, 6)) for dim in kind.dims}
    dims.update(merge=draw(st.integers(1, 3)), patch=draw(st.integers(1, 4)), fullatt=draw(st.integers(0, 8)))
    dims["window"] = draw(st.integers(dims["merge"] * dims["patch"], 5 * dims["merge"] * dims["patch"]))  # k >= 1
    grid = st.tuples(st.integers(1, 2), st.integers(1, 9), st.integers(1, 9))
    grids = [(t, rows * dims["merge"], columns * dims["merge"]) for t, rows, columns in draw(st.lists(grid, min_size=1, max_size=3))]
    return kind, {name: value for name, value in dims.items() if name in {dim.name for dim in kind.dims}}, grids


@settings(max_examples=120, deadline=None)
@given(tower=_towers())
def test_the_compiled_forms_equal_sympy_s_value_of_the_forms(tower):
    """The engine's compiled code (integer floor, Mod and Min) and sympy substituting the values
    into the same closed forms give the same integer, piece by piece, for any dims and grids."""
    kind, dims, grids = tower
    values = {dim.symbol: dims[dim.name] for dim in kind.dims}
    by_sympy = {
        piece: sum(form.subs(values).subs(dict(zip(IMAGE_GRID, grid, strict=True))) for grid in grids)
        for piece, form in kind.closed_forms().items()
    }
    assert tower_flops(kind, dims, grids) == by_sympy


def test_a_kind_refuses_a_closed_form_over_an_undeclared_symbol():
    import sympy

    with pytest.raises(ValueError, match=r"flops\['merger'\] uses \['wide'\], which no dim declares"):
        QWEN3_5_VISION.__class__(**{**{f: getattr(QWEN3_5_VISION, f) for f in ("name", "title", "summary", "dims", "reference")},
                                   "parameters": 0, "flops": {"merger": sympy.Symbol("wide")}})


@pytest.mark.parametrize("name", ["qwen2_vl", "qwen3_vl", "qwen3_5"])
def test_the_formula_shows_the_tower_as_a_term_of_its_own(tmp_path, capsys, name):
    """``flopsreg formula``: the tower's total with its dims substituted, F_vision(t, rows,
    columns), summed over a recorded case's grids, is the tower FlopCounterMode recorded."""
    import sympy

    assert main(["formula", _config_file(tmp_path, name), "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "blocks.attention = 4*columns**2*h*layers*rows**2*t" in text
    (line,) = [line for line in text.splitlines() if line.startswith("  F_vision(t, rows, columns) = ")]
    total = sympy.sympify(line.split(" = ", 1)[1])
    for measured in RECORD["models"][name]["cases"].values():
        grids = measured["image_grid_thw"]
        assert sum(total.subs(dict(zip(sympy.symbols("t rows columns"), g, strict=True))) for g in grids) == measured["visual"]


def test_explain_and_latex_show_the_window_forms(tmp_path, capsys):
    path = _config_file(tmp_path, "qwen2_5_vl")
    assert main(["explain", path, "--image", "308x504", "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "  k = floor(window/(merge*patch))" in text and "    F_vision(t, rows, columns) = " in text
    assert main(["latex", path, "--no-cache"]) == 0
    tex = capsys.readouterr().out
    assert r"S_{r} &= k^{2} \left\lfloor{\frac{r}{k m}}\right\rfloor" in tex and r"F_{\mathrm{vision}}(t, r, c) &= " in tex
    assert main(["formula", path, "--convention", "verl", "--no-cache"]) == 0
    assert "F_vision" not in capsys.readouterr().out  # verl's count of the tower is not a closed form here


def test_a_kind_refuses_a_dim_named_as_the_image_grid():
    from flopsreg.plugin import Dim, TowerKind

    with pytest.raises(ValueError, match=r"TowerKind dims: \['rows'\] name the image grid's symbols"):
        TowerKind(name="x", title="X", summary="x", dims=(Dim("rows", "{tower}.rows", 1),), parameters=0, reference="x")


def test_a_rules_images_are_counted_by_its_kinds_closed_forms():
    """A tower's images are counted by its kind's closed forms, per image grid: here 2 h t rows
    columns with h = 3 for grids 1x2x5 and 2x3x3 (30 + 54 patches); a kind without forms is refused."""
    import sympy

    from flopsreg.engine.media import plan_media
    from flopsreg.errors import FlopsregError
    from flopsreg.plugin import Dim, MediaRule, TowerKind

    def plan(dims, height, width):
        return MediaPlan(height=height, width=width, resized=(height, width), grid=(1 + height // 10, height % 10, width), tokens=1)

    rule = MediaRule(summary="as given", plan=plan)
    h = sympy.Symbol("h", integer=True, nonnegative=True)
    kind = TowerKind(name="x", title="X", summary="x", dims=(Dim("h", "{tower}.h", 3),), parameters=0, reference="x",
                     images=rule, flops={"blocks": 2 * h * sympy.Mul(*IMAGE_GRID)})
    images = plan_media("m", {"vision": ("X", {"h": 3}, rule)}, [(2, 5), (13, 3)], None, kinds={"vision": kind})
    assert images.flops == {"blocks": 2 * 3 * (1 * 2 * 5 + 2 * 3 * 3)}
    bare = attrs.evolve(kind, flops={})
    with pytest.raises(FlopsregError, match=r"^images: X declares no FLOPs for its images \(TowerKind.flops\)$"):
        plan_media("m", {"vision": ("X", {"h": 3}, rule)}, [(2, 5)], None, kinds={"vision": bare})
