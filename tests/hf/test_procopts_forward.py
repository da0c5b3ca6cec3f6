"""The processor's own options (MediaRule.options; ``processor=`` and ``--processor KEY=VALUE``):
Qwen-VL's min_pixels and max_pixels for images and videos, Llama 4's max_patches, Pixtral's
longest_edge and Kimi K2.5's max_patches against what transformers' processors give with them (tests/data/hf_forward/forward_procopts.json, measure_procopts.py),
the defaults unchanged, and every refusal one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs
import pytest

import flopsreg
from flopsreg.cli import main
from flopsreg.patterns.hf._gemma3_vit import GEMMA3_IMAGES
from flopsreg.patterns.hf._qwen_vit import QWEN3_PIXELS
from flopsreg.patterns.hf._towers import PIXTRAL_VISION
from flopsreg.plugin import MediaRule, TowerKind

DATA = Path(__file__).parents[1] / "data"
RECORD = json.loads((DATA / "hf_forward" / "forward_procopts.json").read_text())
CONFIGS = {"qwen2_5_vl": "qwen2-5-vl", "qwen2_vl": "qwen2-vl", "qwen3_vl": "qwen3-vl"}


def _model(family: str) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(json.loads((DATA / "hf" / f"{CONFIGS[family]}-defaults.json").read_text()))


def _rows(medium: str):
    return [(family, setting, row) for family, settings in RECORD[medium].items()
            for setting, entry in settings.items() for row in entry["rows"]]


def test_the_record_names_its_version_and_both_settings():
    assert RECORD["transformers"] == "5.24.0"
    assert {family: set(settings) for family, settings in RECORD["images"].items()} == {
        "qwen2_5_vl": {"max_only", "both"}, "qwen3_vl": {"max_only", "both"}}
    assert RECORD["images"]["qwen3_vl"]["max_only"]["options"] == {"max_pixels": 1003520}


@pytest.mark.parametrize(("family", "setting", "row"), _rows("images"))
def test_images_resize_as_the_image_processor_with_its_options(registry, family, setting, row):
    options = RECORD["images"][family][setting]["options"]
    if "refused" in row:
        with pytest.raises(flopsreg.FlopsregError, match="aspect ratio above 200"):
            registry.images(_model(family), images=[tuple(row["size"])], processor=options)
        return
    images = registry.images(_model(family), images=[tuple(row["size"])], processor=options)
    (plan,) = images.plans
    t, rows, columns = row["grid"]
    assert plan.grid == (t, rows, columns) and plan.tokens == rows * columns // 4 + 2
    assert images.options == options


@pytest.mark.parametrize(("family", "setting", "row"), _rows("videos"))
def test_videos_resize_as_the_video_processor_with_its_options(registry, family, setting, row):
    options = RECORD["videos"][family][setting]["options"]
    (plan,) = registry.videos(_model(family), videos=[tuple(row["video"])], processor=options).plans
    assert list(plan.grid) == row["grid"]


def test_an_option_changes_the_count_and_its_default_changes_nothing(registry):
    model, image = _model("qwen3_vl"), [(1440, 2560)]
    plain = registry.evaluate(model, seq_len=10, images=image)
    assert registry.evaluate(model, seq_len=10, images=image, processor={"max_pixels": QWEN3_PIXELS[1]}).forward == plain.forward
    capped = registry.evaluate(model, seq_len=10, images=image, processor={"max_pixels": 1003520})
    assert capped.images.plans[0].grid == (1, 46, 82) != plain.images.plans[0].grid  # the record's 1440 x 2560, max_only
    assert capped.seqlens == (10 + 46 * 82 // 4 + 2,) and capped.forward < plain.forward
    assert capped.images.to_dict()["processor"] == {"max_pixels": 1003520} and "processor" not in plain.images.to_dict()
    assert "  processor options: max_pixels=1003520 (the rest at their defaults)" in capped.images.text()


def test_image_tokens_take_the_options_too(registry):
    """Gemma 4: an image known by its soft tokens is at most the budget the options set."""
    config = json.loads((DATA / "hf_forward" / "forward_gemma4img.json").read_text())["models"]["gemma4"]["config"]
    model = flopsreg.Model.from_hf_config(config)
    assert registry.images(model, image_tokens=[300], processor={"max_soft_tokens": 560}).tokens == 302
    with pytest.raises(flopsreg.FlopsregError, match=r"at most max_soft_tokens = 280 soft tokens"):
        registry.images(model, image_tokens=[300])


def _llama4(**vision) -> flopsreg.Model:
    """The recorded tiny Llama 4 with the published 336-pixel tile (patch 14: 24 x 24 patches, 144 tokens a tile)."""
    config = json.loads((DATA / "hf_forward" / "forward_llama4img.json").read_text())["models"]["llama4"]["config"]
    return flopsreg.Model.from_hf_config({**config, "vision_config": {**config["vision_config"], "image_size": 336, "patch_size": 14, **vision}})


@pytest.mark.parametrize(("max_patches", "row"), [(int(m), row) for m, rows in RECORD["llama4"].items() for row in rows])
def test_llama4_tiles_as_the_image_processor_with_its_max_patches(registry, max_patches, row):
    """Llama4ImageProcessor(max_patches=4 or 9): its canvas, and its tiles with the global one."""
    (plan,) = registry.images(_llama4(), images=[tuple(row["size"])], processor={"max_patches": max_patches}).plans
    rows, columns = row["aspect_ratio"]
    assert plan.grid == (row["tiles"], 24, 24)
    assert plan.tokens == 3 + 144 + (rows * columns * 145 if rows * columns > 1 else 0)  # the expansion, as its own test checks


def test_llama4_image_tokens_take_at_most_max_patches_tiles(registry):
    assert registry.images(_llama4(), image_tokens=[10 * 144], processor={"max_patches": 9}).plans[0].grid == (10, 24, 24)
    with pytest.raises(flopsreg.FlopsregError, match=r"on 1 tile or 3 to 5 \(the canvas's and the global one\)"):
        registry.images(_llama4(), image_tokens=[10 * 144], processor={"max_patches": 4})


def _fuyu() -> flopsreg.Model:
    """Fuyu: a processor rule with no options (the patches through one matrix)."""
    return flopsreg.Model.from_hf_config(json.loads((DATA / "hf_forward" / "forward_phi4git.json").read_text())["models"]["fuyu"]["config"])


def _pixkimi(name: str, **vision) -> flopsreg.Model:
    """The recorded tiny Mistral Large 4 or Kimi K2.5 with the published patch of 14 pixels (merge 2)."""
    config = json.loads((DATA / "hf_forward" / "forward_pixkimi.json").read_text())["models"][name]["config"]
    return flopsreg.Model.from_hf_config({**config, "vision_config": {**config["vision_config"], "patch_size": 14, **vision}})


@pytest.mark.parametrize(("edge", "row"), [(int(edge), row) for edge, rows in RECORD["pixtral"].items() for row in rows])
def test_pixtral_resizes_as_the_image_processor_with_its_longest_edge(registry, edge, row):
    """PixtralImageProcessorPil(size={"longest_edge": 1024 or 512}) and PixtralProcessor's tokens, whatever the tower's image_size."""
    images = registry.images(_pixkimi("mistral_large4", image_size=1540), images=[tuple(row["size"])], processor={"longest_edge": edge})
    (plan,) = images.plans
    assert (list(plan.resized), plan.tokens) == (row["resized"], row["tokens"])
    assert plan.grid == (1, row["resized"][0] // 14, row["resized"][1] // 14) and images.options == {"longest_edge": edge}


def test_pixtrals_longest_edge_defaults_to_the_towers_image_size(registry):
    """The published processors set longest_edge to the tower's image_size: the default follows it,
    and giving it that value changes nothing."""
    for size in ((720, 1280), (3000, 2000)):
        for edge in (1024, 512):
            default = registry.images(_pixkimi("mistral_large4", image_size=edge), images=[size])
            given = registry.images(_pixkimi("mistral_large4", image_size=1540), images=[size], processor={"longest_edge": edge})
            assert default.plans == given.plans and default.tower == given.tower and default.options == {}


@pytest.mark.parametrize(("max_patches", "row"), [(int(m), row) for m, rows in RECORD["kimi_k25"].items() for row in rows])
def test_kimi_resizes_as_the_image_processor_with_its_max_patches(registry, max_patches, row):
    """Kimi_K25ImageProcessor(max_patches=1024 or 4096): its grid (the padding may take it past the
    budget), and Kimi_K25Processor's <|media_pad|> tokens plus the chat template's 4 wrapper tokens."""
    (plan,) = registry.images(_pixkimi("kimi_k25"), images=[tuple(row["size"])], processor={"max_patches": max_patches}).plans
    assert list(plan.grid) == row["grid"] and plan.tokens == row["tokens"] + 4


@pytest.mark.parametrize(("side", "row"), [(int(side), row) for side, rows in RECORD["kimi_k25_side"].items() for row in rows])
def test_kimi_resizes_as_the_image_processor_with_its_most_patches_a_side(registry, side, row):
    """Kimi_K25ImageProcessor(size={"max_height": 64 or 200, "max_width": the same}) at its default budget:
    its grid, and Kimi_K25Processor's <|media_pad|> tokens plus the chat template's 4 wrapper tokens."""
    images = registry.images(_pixkimi("kimi_k25"), images=[tuple(row["size"])], processor={"max_height": side, "max_width": side})
    (plan,) = images.plans
    assert list(plan.grid) == row["grid"] and plan.tokens == row["tokens"] + 4
    assert images.options == {"max_height": side, "max_width": side}


def test_kimis_most_patches_a_side_defaults_to_512_and_unequal_sides_are_refused(registry):
    """The processor's default size (512 a side) changes nothing given; it refuses unequal max_height and
    max_width, and so does flopsreg, in one line."""
    model = _pixkimi("kimi_k25")
    plain = registry.evaluate(model, seq_len=10, images=[(1440, 2560)])
    assert registry.evaluate(model, seq_len=10, images=[(1440, 2560)], processor={"max_height": 512, "max_width": 512}).forward == plain.forward
    capped = registry.evaluate(model, seq_len=10, images=[(1440, 2560)], processor={"max_height": 64, "max_width": 64})
    assert capped.forward < plain.forward
    with pytest.raises(flopsreg.FlopsregError, match=r"^images\[0\] = \(1440, 2560\): max_height = 64, max_width = 512: "
                       r"Kimi_K25ImageProcessor takes a size with identical values \(give both\) \(MoonViT \(Kimi K2.5\)\)$"):
        registry.evaluate(model, seq_len=10, images=[(1440, 2560)], processor={"max_height": 64})


@pytest.mark.parametrize(("side", "row"), [(int(side), row) for side, rows in RECORD["kimi_k25_video_side"].items() for row in rows])
def test_kimi_videos_resize_as_the_video_processor_with_its_most_patches_a_side(registry, side, row):
    """Kimi_K25VideoProcessor(size={"max_height": 64 or 200, "max_width": the same}) at its default
    budget, the frames as given: each chunk's grid, and the chunks' tokens (pads plus 4 wrappers a chunk)."""
    videos = registry.videos(_pixkimi("kimi_k25"), videos=[tuple(row["video"])], processor={"max_height": side, "max_width": side})
    (plan,) = videos.plans
    assert [list(grid) for grid in plan.grids] == row["video_grid_thw"] and len(plan.grids) == row["chunks"]
    assert plan.tokens == sum(rows * columns // 4 + 4 for _, rows, columns in row["video_grid_thw"])
    assert videos.options == {"max_height": side, "max_width": side}


def test_kimi_videos_most_patches_a_side_defaults_to_512_and_unequal_sides_are_refused(registry):
    model, video = _pixkimi("kimi_k25"), [(5, 100, 3000)]
    default = registry.videos(model, videos=video)
    assert default.plans == registry.videos(model, videos=video, processor={"max_height": 512, "max_width": 512}).plans
    assert default.plans != registry.videos(model, videos=video, processor={"max_height": 64, "max_width": 64}).plans
    with pytest.raises(flopsreg.FlopsregError, match=r"max_height = 64, max_width = 200: Kimi_K25VideoProcessor takes a size "
                       r"with identical values \(give both\)"):
        registry.videos(model, videos=video, processor={"max_height": 64, "max_width": 200})


def test_pixtral_and_kimi_options_change_the_count_and_their_defaults_change_nothing(registry):
    for name, option, default, other in (("mistral_large4", "longest_edge", 1540, 512), ("kimi_k25", "max_patches", 16384, 1024)):
        model = _pixkimi(name, image_size=1540) if name == "mistral_large4" else _pixkimi(name)
        plain = registry.evaluate(model, seq_len=10, images=[(1440, 2560)])
        assert registry.evaluate(model, seq_len=10, images=[(1440, 2560)], processor={option: default}).forward == plain.forward
        capped = registry.evaluate(model, seq_len=10, images=[(1440, 2560)], processor={option: other})
        assert capped.forward < plain.forward and capped.images.to_dict()["processor"] == {option: other}
    with pytest.raises(flopsreg.FlopsregError, match=r"^processor: longest_edge = 0: expected an integer >= 1$"):
        registry.evaluate(_pixkimi("mistral_large4"), seq_len=5, images=[(64, 64)], processor={"longest_edge": 0})
    with pytest.raises(flopsreg.FlopsregError, match=r"^processor: 'max_patch' is not an option of MoonViT \(Kimi K2.5\)'s processor "
                       r"\(it takes max_patches, max_height, max_width\); did you mean 'max_patches'\?$"):
        registry.evaluate(_pixkimi("kimi_k25"), seq_len=5, images=[(64, 64)], processor={"max_patch": 1024})


def test_an_option_defaulting_to_a_dim_names_one_the_kind_declares():
    rule = attrs.evolve(PIXTRAL_VISION.images, options={"longest_edge": "image_edge"})
    with pytest.raises(ValueError, match=r"^TowerKind 'pixtral_vision': images.options\['longest_edge'\] = 'image_edge' names no dim of the kind$"):
        TowerKind(**{**attrs.asdict(PIXTRAL_VISION, recurse=False), "images": rule})


@pytest.mark.parametrize(("processor", "message"), [
    ({"max_pixel": 1003520}, "processor: 'max_pixel' is not an option of Qwen3-VL ViT's processor (it takes min_pixels, max_pixels); "
     "did you mean 'max_pixels'?"),
    ({"max_pixels": 0}, "processor: max_pixels = 0: expected an integer >= 1"),
    ({"max_pixels": "1003520"}, "processor: max_pixels = '1003520': expected an integer >= 1"),
    ({"min_pixels": True}, "processor: min_pixels = True: expected an integer >= 1"),
    ([("max_pixels", 1)], "processor = [('max_pixels', 1)]: expected a mapping of the processor's options, e.g. {'max_pixels': 1003520}"),
])
def test_a_bad_option_is_one_line(registry, processor, message):
    with pytest.raises(flopsreg.FlopsregError, match=re.escape(message) + "$"):
        registry.evaluate(_model("qwen3_vl"), seq_len=5, images=[(720, 1280)], processor=processor)


def test_options_without_images_and_for_a_rule_without_options_are_refused(registry):
    with pytest.raises(flopsreg.FlopsregError, match=r"^processor = \{'max_pixels': 1003520\}: no images or videos for the processor's "
                       r"options: give images= or videos= beside it$"):
        registry.evaluate(_model("qwen3_vl"), seq_len=5, processor={"max_pixels": 1003520})
    with pytest.raises(flopsreg.FlopsregError, match=r"^processor: 'max_pixels' is not an option of .*'s processor \(it takes none\)$"):
        registry.evaluate(_fuyu(), seq_len=5, images=[(64, 64)], processor={"max_pixels": 1003520})


def test_gemma3_pan_and_scan_is_refused_by_name(registry):
    model = flopsreg.Model.from_hf_config(json.loads((DATA / "hf_forward" / "forward_gemma3img.json").read_text())["models"]["gemma3"]["config"])
    assert GEMMA3_IMAGES.options == {"do_pan_and_scan": False}
    same = registry.evaluate(model, seq_len=5, images=[(300, 500)], processor={"do_pan_and_scan": False})
    assert same.forward == registry.evaluate(model, seq_len=5, images=[(300, 500)]).forward
    with pytest.raises(flopsreg.FlopsregError, match=r"^images\[0\] = \(300, 500\): do_pan_and_scan = true: the processor's pan-and-scan "
                       r"crops are not counted by flopsreg \(SigLIP ViT\)$"):
        registry.evaluate(model, seq_len=5, images=[(300, 500)], processor={"do_pan_and_scan": True})
    with pytest.raises(flopsreg.FlopsregError, match=r"^processor: do_pan_and_scan = 1: expected true or false$"):
        registry.evaluate(model, seq_len=5, images=[(300, 500)], processor={"do_pan_and_scan": 1})


def test_an_option_default_is_an_int_or_a_bool():
    with pytest.raises(ValueError, match=r"^MediaRule.options\['max_pixels'\] = 0: expected an int >= 1 or a bool default$"):
        MediaRule(summary="s", plan=GEMMA3_IMAGES.plan, options={"max_pixels": 0})


def test_the_command_line_takes_processor_options(tmp_path, capsys, registry):
    path = tmp_path / "qwen3.json"
    path.write_text((DATA / "hf" / "qwen3-vl-defaults.json").read_text())
    args = ["eval", str(path), "--seq-len", "10", "--image", "1440x2560", "--processor", "max_pixels=1003520", "--format", "json", "--no-cache"]
    assert main(args) == 0
    output = json.loads(capsys.readouterr().out)
    expected = registry.evaluate(_model("qwen3_vl"), seq_len=10, images=[(1440, 2560)], processor={"max_pixels": 1003520})
    assert output["forward_flops"] == str(expected.forward) and output["images"]["processor"] == {"max_pixels": 1003520}
    assert main(["explain", str(path), "--image", "1440x2560", "--processor", "max_pixels=1003520", "--no-cache"]) == 0
    assert "image 1: 1440x2560 -> 736x1312, patch grid 1x46x82 (t x h x w), 945 tokens" in capsys.readouterr().out


@pytest.mark.parametrize(("options", "message"), [
    (["--processor", "max_pixels"], "expected KEY=VALUE, an option of the model's processor (e.g. max_pixels=1003520), got 'max_pixels'"),
    (["--processor", "max_pixels=1e6"], "expected KEY=VALUE with an integer, true or false as the value"),
    (["--processor", "max_pixels=1", "--processor", "max_pixels=2"], "--processor max_pixels: given twice (1 and 2); give each option once"),
    (["--processor", "max_pixel=1003520"], "did you mean 'max_pixels'?"),
])
def test_bad_processor_options_on_the_command_line_are_one_line(tmp_path, capsys, options, message):
    path = tmp_path / "qwen3.json"
    path.write_text((DATA / "hf" / "qwen3-vl-defaults.json").read_text())
    assert main(["eval", str(path), "--seq-len", "10", "--image", "720x1280", *options, "--no-cache"]) != 0
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_processor_options_without_an_image_on_the_command_line_are_refused(tmp_path, capsys):
    path = tmp_path / "qwen3.json"
    path.write_text((DATA / "hf" / "qwen3-vl-defaults.json").read_text())
    for command in (["eval", "--seq-len", "10"], ["explain"]):
        assert main([command[0], str(path), *command[1:], "--processor", "max_pixels=1003520", "--no-cache"]) != 0
        assert "--processor: no --image, --image-tokens or --video for the processor's options to apply to" in capsys.readouterr().err


@pytest.mark.parametrize(("command", "shown"), [
    (["sweep", "--seq-len", "10"], "10,{forward},"),
    (["compare", "--seq-len", "10"], "batch 1 x 955 tokens"),
    (["generate", "--prompt", "10", "--new-tokens", "2"], "prompt 10 text tokens + 945 image tokens"),
])
def test_every_command_with_images_takes_the_options(tmp_path, capsys, registry, command, shown):
    """945 image tokens: the 46 x 82 patches of 1440 x 2560 under max_pixels 1003520 (the record's)."""
    path = tmp_path / "qwen3.json"
    path.write_text((DATA / "hf" / "qwen3-vl-defaults.json").read_text())
    assert main([command[0], str(path), *command[1:], "--image", "1440x2560", "--processor", "max_pixels=1003520", "--no-cache"]) == 0
    forward = registry.evaluate(_model("qwen3_vl"), seq_len=10, images=[(1440, 2560)], processor={"max_pixels": 1003520}).forward
    assert shown.format(forward=forward) in capsys.readouterr().out


def test_each_requests_own_images_and_a_sweep_take_the_options(registry):
    """The options reach the images of each request (``request_images``) and of a sweep's held
    media: the capped 1440 x 2560 image is 46 x 82 patches there too (the recorded max_only grid)."""
    model, image, options = _model("qwen3_vl"), [(1440, 2560)], {"max_pixels": 1003520}
    step = registry.evaluate(model, requests=[(10, 0), (1, 50)], request_images=[image, None], processor=options)
    alone = registry.evaluate(model, seq_len=10, images=image, processor=options, logits="last")
    assert step.per_request[0] == alone.forward and alone.seqlens == (10 + 46 * 82 // 4 + 2,)
    (held,) = registry.held_media(model, "exact", images=image, processor=options)
    assert held.plans[0].grid == (1, 46, 82)


def test_a_sweep_applies_the_processor_options_to_every_point(registry):
    """Registry.sweep / iter_sweep(processor=): every length's evaluation with the capped image (945
    tokens, the record's 46 x 82 patches); a sweep over an option's values is one sweep per value."""
    model, image, lengths = _model("qwen3_vl"), [(1440, 2560)], [10, 100, 1000]
    for options in ({"max_pixels": 1003520}, {"min_pixels": 200704, "max_pixels": 401408}):
        expected = [registry.evaluate(model, seq_len=n, batch=2, images=image, processor=options).forward for n in lengths]
        assert registry.sweep(model, lengths, batch=2, images=image, processor=options) == expected
        assert list(registry.iter_sweep(model, iter(lengths), batch=2, images=image, processor=options)) == list(zip(lengths, expected))
    capped = registry.sweep(model, lengths, images=image, processor={"max_pixels": 1003520})
    assert capped != registry.sweep(model, lengths, images=image)
    assert registry.sweep(model, lengths, images=image, processor={"max_pixels": QWEN3_PIXELS[1]}) == registry.sweep(model, lengths, images=image)
    by_value = {cap: registry.sweep(model, lengths, images=image, processor={"max_pixels": cap}) for cap in (401408, 1003520, 4014080)}
    assert by_value[401408] < by_value[1003520] < by_value[4014080]  # each length: fewer pixels, fewer FLOPs
    assert all(a < b for a, b in zip(by_value[401408], by_value[1003520]))


def test_a_sweep_refuses_options_without_media_and_over_params(registry):
    model = _model("qwen3_vl")
    message = r"^processor = \{'max_pixels': 1003520\}: no images or videos for the processor's options: give images= or videos= beside it$"
    for sweep in (registry.sweep, registry.iter_sweep):
        with pytest.raises(flopsreg.FlopsregError, match=message):
            sweep(model, [10, 20], processor={"max_pixels": 1003520})
        with pytest.raises(flopsreg.FlopsregError, match=message):
            sweep(model, 10, params={"hidden": [64]}, processor={"max_pixels": 1003520})
        with pytest.raises(flopsreg.FlopsregError, match=r"^images: a sweep over params= takes no images, videos or audio"):
            sweep(model, 10, params={"hidden": [64]}, images=[(64, 64)], processor={"max_pixels": 1003520})
    with pytest.raises(flopsreg.FlopsregError, match=r"^processor: 'max_patches' is not an option of Qwen3-VL ViT's processor"):
        registry.sweep(model, [10, 20], images=[(64, 64)], processor={"max_patches": 4})


def test_plots_take_the_processor_options(registry, tmp_path, capsys):
    """plot.by_slot, conventions and models (and flopsreg plot --processor) draw the capped image: its
    945 tokens and tower, as the sweep with the options counts them."""
    pytest.importorskip("matplotlib")
    from flopsreg.render import plot

    model, image, options = _model("qwen3_vl"), [(1440, 2560)], {"max_pixels": 1003520}
    figure = plot.by_slot(model, "8:64:8", registry=registry, images=image, processor=options)
    assert "+ 1 image(s) of 945 tokens" in figure.axes[0].get_title()
    lines = plot.models([model], "8:64:8", registry=registry, images=image, processor=options).axes[0].lines
    assert list(lines[0].get_ydata()) == [float(f) for f in registry.sweep(model, range(8, 65, 8), images=image, processor=options)]
    ratios = plot.conventions(model, "8:64:8", names=["verl"], registry=registry, images=image, processor=options).axes[0].lines
    exact = registry.sweep(model, range(8, 65, 8), images=image, processor=options)
    verl = registry.sweep(model, range(8, 65, 8), convention="verl", images=image, processor=options)
    assert list(ratios[-1].get_ydata()) == [v / e for v, e in zip(verl, exact)]
    path = tmp_path / "qwen3.json"
    path.write_text((DATA / "hf" / "qwen3-vl-defaults.json").read_text())
    out = tmp_path / "plot.svg"
    assert main(["plot", str(path), "--seq-len", "8:64", "--image", "1440x2560", "--processor", "max_pixels=1003520", "-o", str(out)]) == 0
    assert "945 tokens" in out.read_text()
