"""Gemma 3n's towers (timm's MobileNetV5 vision encoder, the USM conformer audio encoder, the two
multimodal embedders) against transformers' ``sum(p.numel())`` recorded on the meta device by
tests/data/hf_forward/measure_gemma3nmm.py: the class-default config, the published config of
tests/data/hf and a tiny config with odd audio kernels, strides and widths; and the vision
tower's FLOPs over one 768 x 768 image against FlopCounterMode's, less the convolutions' taps on
padding, counted here from each recorded convolution's shapes.
"""

import json
from pathlib import Path

import pytest

import flopsreg
from flopsreg.cli import main

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_gemma3nmm.json").read_text())
HF = Path(__file__).parents[1] / "data" / "hf"
CASES = [(group, name) for group in ("defaults", "published", "models") for name in sorted(RECORD[group])]


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


VISION = RECORD["vision_forward"]
PIECE_OF_MODULE = {"conv_stem": "stem", "blocks.0": "stage0", "blocks.1": "stage1", "blocks.2": "stage2", "blocks.3": "stage3", "msfa": "msfa"}


def _piece(name: str) -> str:
    """The flopsreg piece of a recorded module (``timm_model.blocks.2.14.attn.key.down_conv``: stage2)."""
    inside = name.removeprefix("timm_model.")
    return next(piece for prefix, piece in PIECE_OF_MODULE.items() if inside == prefix or inside.startswith(prefix + "."))


def _real_taps(size: int, out: int, kernel: int, stride: int, pad: int) -> int:
    """(output, tap) pairs along one axis that read an input position, not the zero padding."""
    return sum(0 <= o * stride - pad + j < size for o in range(out) for j in range(kernel))


def _padding(conv: dict, axis: int) -> int:
    """Zeros before the input along *axis*: the module's own, or for timm's Conv2dSame (which pads
    in its forward, so its recorded input is unpadded) TensorFlow's "same": the total
    ``(out - 1) stride + kernel - size`` with the smaller half first."""
    if conv["class"] == "Conv2d":
        return conv["padding"][axis]
    assert conv["class"] == "Conv2dSame" and conv["padding"] == [0, 0]
    size, out, kernel, stride = conv["in"][2 + axis], conv["out"][2 + axis], conv["kernel"][axis], conv["stride"][axis]
    return max((out - 1) * stride + kernel - size, 0) // 2


def _conv_flops(conv: dict) -> tuple[int, int]:
    """(FlopCounterMode's count, the count over real taps only) of one recorded convolution."""
    (_, c_in, *size), (_, c_out, *out) = conv["in"], conv["out"]
    per_tap = 2 * c_out * (c_in // conv["groups"])
    full = per_tap * out[0] * out[1] * conv["kernel"][0] * conv["kernel"][1]
    real = per_tap
    for axis in (0, 1):
        real *= _real_taps(size[axis], out[axis], conv["kernel"][axis], conv["stride"][axis], _padding(conv, axis))
    return full, real


# The tower over the same image at the model card's three sizes (the processor option "size").
VISION_AT = {768: VISION, **{int(size): record for size, record in RECORD["vision_forward_sizes"].items()}}


def _tower(registry, images=((600, 1000),), size: int | None = None):
    model = flopsreg.Model.from_hf_config(HF / "gemma-3n-e4b-defaults.json", registry=registry)
    return model, registry.evaluate(model, seq_len=16, images=list(images), processor=None if size is None else {"size": size})


def test_the_recorded_image_is_resized_to_768_and_pooled_to_256_soft_tokens(registry):
    _, result = _tower(registry)
    (plan,) = result.images.plans
    assert VISION["image"] == [plan.height, plan.width] == [600, 1000]
    assert VISION["pixel_values"] == [1, 3, *plan.resized] == [1, 3, 768, 768]
    assert VISION["output"] == [1, 2048, 16, 16] and plan.tokens == 16 * 16 + 4  # the processor's \n\n, boi, eoi, \n\n
    assert plan.grid == (1, 768 // 32, 768 // 32)


@pytest.mark.parametrize("size", sorted(VISION_AT))
def test_the_tower_is_flopcountermode_less_the_taps_on_padding(registry, size):
    """Every convolution of the record counted over its real taps, summed by stage, equals
    flopsreg's piece; FlopCounterMode's counts are those plus the taps on padding (reconciled
    per stage against its module totals); the MQA blocks' attention is its bmm. At each size the
    model card gives (768 by default; 256 and 512 with the processor option)."""
    vision = VISION_AT[size]
    _, result = _tower(registry, size=None if size == 768 else size)
    (plan,) = result.images.plans
    assert vision["pixel_values"] == [1, 3, *plan.resized] == [1, 3, size, size] and plan.grid == (1, size // 32, size // 32)
    assert vision["output"] == [1, 2048, 16, 16] and plan.tokens == 260
    full, real = {}, {}
    for conv in vision["convs"]:
        piece = _piece(conv["name"])
        counted, useful = _conv_flops(conv)
        full[piece] = full.get(piece, 0) + counted
        real[piece] = real.get(piece, 0) + useful
    recorded = {piece: vision["flops"][f"TimmWrapperModel.timm_model.{module}"]["aten.convolution"] for module, piece in PIECE_OF_MODULE.items()}
    assert full == recorded
    padding = {piece: full[piece] - real[piece] for piece in full}
    assert padding["msfa"] == 0 and all(padding[piece] > 0 for piece in ("stem", "stage0", "stage1", "stage2", "stage3"))
    bmm = sum(vision["flops"][f"TimmWrapperModel.timm_model.blocks.{i}"].get("aten.bmm", 0) for i in range(4))
    flops = result.images.flops
    assert {piece: flops[piece] for piece in real} == real
    assert flops["attention"] == bmm
    assert sum(real.values()) + sum(padding.values()) + bmm == vision["total"]
    assert VISION["total"] == 871_482_949_632


def test_another_size_is_refused_by_name(registry):
    """transformers runs the tower at any square; flopsreg counts the model card's sizes, recorded above."""
    with pytest.raises(flopsreg.FlopsregError, match=r"^images\[0\] = \(600, 1000\): size = 640: flopsreg counts Gemma 3n's images "
                       r"at the model card's sizes, 256, 512, 768 pixels a side \(MobileNetV5-300M\)$"):
        _tower(registry, size=640)


def test_the_size_changes_the_tower_only(registry):
    """At 256 and 512 px the image is still 256 soft tokens (+ 4): the language model's work is the same."""
    _, default = _tower(registry)
    for size in (256, 512):
        _, sized = _tower(registry, size=size)
        assert sized.seqlens == default.seqlens and sized.images.plans[0].resized == (size, size)
        assert sized.forward - sum(sized.images.flops.values()) == default.forward - sum(default.images.flops.values())
        assert sized.images.flops["embedder"] == default.images.flops["embedder"]


def test_the_stem_by_hand(registry):
    """conv_stem: 3 -> 64 channels, 3x3, stride 2, one pixel of padding each side, over 768 x 768:
    384 outputs a side, each reading 3 pixels but the last ("same" padding puts its one zero after)."""
    _, result = _tower(registry)
    assert result.images.flops["stem"] == 2 * 64 * 3 * (384 * 3 - 1) ** 2 == 508_723_584


def test_the_embedder_and_the_language_model_over_the_image_tokens(registry):
    """embed_vision maps the 256 soft tokens of width 2048 to the text width (2048); the language
    model runs over the 16 text tokens and the 260 image tokens, causal like text (Gemma 3n adds no
    bidirectional mask over an image)."""
    model, result = _tower(registry)
    assert result.images.flops["embedder"] == 2 * 256 * 2048 * 2048
    assert result.images.bidirectional == 0
    text = registry.evaluate(model, seq_len=16 + 260)
    assert result.forward == text.forward + sum(result.images.flops.values())
    two = registry.evaluate(model, seq_len=16, images=[(600, 1000), (50, 70)])
    assert two.images.flops == {piece: 2 * value for piece, value in result.images.flops.items()}


def test_image_tokens_fix_the_count(registry):
    model, result = _tower(registry)
    assert registry.evaluate(model, seq_len=16, image_tokens=[256]).forward == result.forward
    with pytest.raises(flopsreg.FlopsregError, match=r"^image_tokens\[0\] = 100: every image is 256 soft tokens"):
        registry.evaluate(model, seq_len=16, image_tokens=[100])


def test_another_soft_token_count_is_refused_as_transformers_fails(registry):
    config = json.loads((HF / "gemma-3n-e4b-defaults.json").read_text())
    model = flopsreg.Model.from_hf_config({**config, "vision_soft_tokens_per_image": 64}, registry=registry)
    with pytest.raises(flopsreg.FlopsregError, match=r"vision_soft_tokens_per_image = 64: MobileNetV5's fusion adapter gives 256"):
        registry.evaluate(model, seq_len=16, images=[(768, 768)])


@pytest.mark.parametrize("convention", ["hf_trainer", "nanogpt", "chunked_scan"])
def test_every_other_convention_refuses_gemma3n_images_by_name(registry, convention):
    """The conventions that count Gemma 3n's language model refuse its vision tower by name (the
    others already refuse the language model: AltUp, per-layer inputs, sandwich norms)."""
    model, _ = _tower(registry)
    message = rf"^images: convention '{convention}' has no term for the vision tower \(MobileNetV5-300M\): count images with the exact convention$"
    with pytest.raises(flopsreg.FlopsregError, match=message):
        registry.evaluate(model, seq_len=16, images=[(600, 1000)], convention=convention)


def test_the_command_line_takes_gemma3n_images(capsys, registry):
    _, result = _tower(registry)
    path = str(HF / "gemma-3n-e4b-defaults.json")
    assert main(["eval", path, "--seq-len", "16", "--image", "600x1000", "--format", "json", "--no-cache"]) == 0
    output = json.loads(capsys.readouterr().out)
    assert output["forward_flops"] == str(result.forward) and output["seqlens"] == [16 + 260]
    assert main(["explain", path, "--image", "600x1000", "--no-cache"]) == 0
    assert "image 1: 600x1000 -> 768x768, patch grid 1x24x24 (t x h x w), 260 tokens" in capsys.readouterr().out
