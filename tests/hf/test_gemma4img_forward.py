"""Gemma 4 and Gemma 4 unified with images against real forward passes:
tests/data/hf_forward/measure_gemma4img.py ran a tiny Gemma4ForConditionalGeneration and
Gemma4UnifiedForConditionalGeneration on random images through transformers' own image processor
and Gemma4Processor's placeholder expansion, under FlopCounterMode, recorded the masks their
language models build with and without mm_token_type_ids, and the processor's soft tokens for a
dozen sizes at each budget (forward_gemma4img.json). The towers (their padding reconciled), the
language model, the token counts and the pairs the bidirectional image blocks add are each
compared with what was recorded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import flopsreg
from flopsreg.cli import main
from flopsreg.engine.media import tower_flops
from flopsreg.patterns.hf._gemma4_vit import BUDGETS, GEMMA4_IMAGES, WRAPPER_TOKENS, resized_size
from flopsreg.plugin import Dim, MediaRule

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_gemma4img.json").read_text())
MODELS = RECORD["models"]
CASES = sorted(MODELS["gemma4"]["cases"])
FAMILIES = ("gemma4", "gemma4_unified")
PROCESSOR = RECORD["processor"]


OPTIONS = {family: {"max_soft_tokens": MODELS[family]["max_soft_tokens"]} for family in FAMILIES}  # the record's processor


def _config(family: str, **text) -> dict:
    config = MODELS[family]["config"]
    return {**config, "text_config": {**config["text_config"], **text}}


def _model(family: str, **text) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(_config(family, **text))


def _images(family: str, case: str) -> list[tuple[int, int]]:
    return [tuple(size) for size in MODELS[family]["cases"][case]["images"]]


def _kind(registry, family: str):
    part = "vision" if family == "gemma4" else "vision_embedder"
    return next(tower.kind for tower in registry.hf_readers[family].towers if tower.part == part)


def test_the_record_names_its_versions_and_every_case_ran():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert MODELS["gemma4"]["class"] == "Gemma4ForConditionalGeneration"
    assert MODELS["gemma4_unified"]["class"] == "Gemma4UnifiedForConditionalGeneration"
    assert all(sorted(MODELS[family]["cases"]) == ["one", "three", "two"] for family in FAMILIES)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_whole_model_and_its_vision_towers_hold_transformers_parameters(registry, family):
    measured, model = MODELS[family], _model(family)
    assert registry.parameters(model).total == measured["parameters"]
    if family == "gemma4":
        assert model.towers["vision"].parameters == measured["vision_parameters"]
        assert model.towers["vision_embedder"].parameters == measured["embedder_parameters"]
    else:
        assert model.towers["vision_embedder"].parameters == measured["vision_parameters"]


def test_the_processor_defaults_are_the_rules():
    """Gemma4ImageProcessor's class defaults (those of the published preprocessor) and the budgets it takes."""
    assert PROCESSOR["defaults"] == {"patch_size": 16, "pooling_kernel_size": 3, "max_soft_tokens": 280}
    assert PROCESSOR["processor_image_seq_length"] == 280
    assert sorted(int(budget) for budget in PROCESSOR["sizes"]) == sorted(BUDGETS)
    for budget in ("30", "300"):
        assert PROCESSOR[f"refused_{budget}"] == f"`max_soft_tokens` must be one of {BUDGETS}, got {budget}."


@pytest.mark.parametrize("budget", sorted(PROCESSOR["sizes"], key=int))
def test_the_resize_and_tokens_equal_the_processors_for_a_dozen_sizes(registry, budget):
    """Each size through Gemma4ImageProcessorPil at patch 16, pooling 3 and this budget: flopsreg's
    plan gives its resized size (from the patches' positions) and soft tokens, plus <boi> and <eoi>."""
    config = {**_config("gemma4"), "vision_config": {**_config("gemma4")["vision_config"], "patch_size": 16, "pooling_kernel_size": 3}}
    model = flopsreg.Model.from_hf_config(config)
    for entry in PROCESSOR["sizes"][budget]:
        (plan,) = registry.evaluate(model, seq_len=1, images=[tuple(entry["size"])], processor={"max_soft_tokens": int(budget)}).images.plans
        assert list(plan.resized) == entry["resized"] and plan.tokens == entry["soft_tokens"] + WRAPPER_TOKENS
        assert plan.grid == (1, entry["resized"][0] // 16, entry["resized"][1] // 16)
        assert entry["padded"] == int(budget) * 9  # the patches the processor pads every image to


def test_the_resize_by_hand_and_at_extreme_aspect_ratios():
    """720 x 1280 at 280: scale sqrt(280 x 9 x 256 / 921600) = 0.8367, 602.4 / 48 -> 12 and
    1070.9 / 48 -> 22 merged patches: 576 x 1056, 264 soft tokens. A side rounding to 0 (an aspect
    ratio above 9 x budget) becomes one merged patch and the other floor(long / short) of them, at
    most the budget: always the budget there, and no refusal."""
    assert resized_size(720, 1280, 16, 3, 280) == (576, 1056)
    assert resized_size(1, 100000, 16, 3, 70) == (48, 70 * 48) and resized_size(100000, 1, 16, 3, 70) == (70 * 48, 48)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("family", FAMILIES)
def test_the_sequence_and_token_counts_equal_the_processors_expansion(registry, family, case):
    measured = MODELS[family]["cases"][case]
    result = registry.evaluate(_model(family), seq_len=MODELS[family]["text_tokens"], images=_images(family, case), processor=OPTIONS[family])
    assert [plan.tokens - WRAPPER_TOKENS for plan in result.images.plans] == measured["soft_tokens"]
    expected = [piece for soft in measured["soft_tokens"] for piece in ["<boi>", *["<image>"] * soft, "<eoi>"]]
    assert measured["sequence"] == expected and result.seqlens == (measured["sequence_length"],)


@pytest.mark.parametrize("case", CASES)
def test_the_gemma4_tower_is_the_recorded_one_less_the_padding_and_the_pooling_matmul(registry, case):
    """FlopCounterMode sees the tower run over the processor's padding (budget x pooling^2 patches
    per image) and the pooler's average as a one-hot matmul: the kind's closed forms at the padded
    length, plus that matmul, give the recorded tower piece by piece; flopsreg counts the real
    patches and no pooling. The embedder runs on the real soft tokens only: equal as it is."""
    measured, model = MODELS["gemma4"]["cases"][case], _model("gemma4")
    dims, kind = model.towers["vision"].dims, _kind(registry, "gemma4")
    images, padded = len(measured["images"]), measured["pixel_values"][1]
    assert padded == MODELS["gemma4"]["max_soft_tokens"] * dims["pooling"] ** 2
    at_padding = tower_flops(kind, dims, [(1, 1, padded)] * images)
    pooling_matmul = images * 2 * MODELS["gemma4"]["max_soft_tokens"] * padded * dims["h"]
    modules = measured["tower_modules"]
    assert modules["vision_tower.patch_embedder"] == {"aten.mm": at_padding["patch_embed"]}
    assert modules["vision_tower.encoder"] == {"aten.mm": at_padding["blocks.qkv_proj"] + at_padding["blocks.mlp"],
                                               "aten.bmm": at_padding["blocks.attention"]}
    assert modules["vision_tower.pooler"] == {"aten.bmm": pooling_matmul}
    assert measured["tower"] == sum(at_padding.values()) - at_padding["embedder"] + pooling_matmul
    result = registry.evaluate(model, seq_len=7, images=_images("gemma4", case), processor=OPTIONS["gemma4"])
    flops = dict(result.images.flops)
    assert flops.pop("embedder") == measured["embedder"]
    real = [9 * soft for soft in measured["soft_tokens"]]  # each image's real patches: pooling^2 per soft token
    # By hand: h 36, MLP 50, 2 layers, 3 heads and 1 key/value head of 12, patches of 8 x 8 pixels.
    assert flops == {
        "patch_embed": 2 * sum(real) * 3 * 8**2 * 36,
        "blocks.qkv_proj": 2 * 2 * sum(real) * (2 * 36 * 3 * 12 + 2 * 36 * 1 * 12),
        "blocks.attention": 2 * 4 * 3 * 12 * sum(n * n for n in real),
        "blocks.mlp": 2 * 2 * sum(real) * 3 * 36 * 50,
    }


@pytest.mark.parametrize("case", CASES)
def test_the_unified_embedder_is_the_recorded_one_less_the_padding(registry, case):
    """Gemma4UnifiedVisionEmbedder runs its matrices on every padded merged patch (budget per image)
    and drops the padding after: the closed forms at the padded length give the record; flopsreg
    counts the real tokens."""
    measured, model = MODELS["gemma4_unified"]["cases"][case], _model("gemma4_unified")
    dims, kind = model.towers["vision_embedder"].dims, _kind(registry, "gemma4_unified")
    budget, images = MODELS["gemma4_unified"]["max_soft_tokens"], len(measured["images"])
    assert measured["pixel_values"] == [images, budget, 3 * 24**2]
    at_padding = tower_flops(kind, dims, [(1, 3, 3 * budget)] * images)  # budget merged patches of 3 x 3 patches
    modules = measured["tower_modules"]
    assert modules["embed_vision.patch_dense"] == {"aten.addmm": at_padding["patch_dense"]}
    assert modules["embed_vision.multimodal_embedder"] == {"aten.mm": at_padding["embedder"]}
    assert measured["tower"] == sum(at_padding.values())
    result = registry.evaluate(model, seq_len=7, images=_images("gemma4_unified", case), processor=OPTIONS["gemma4_unified"])
    tokens = sum(measured["soft_tokens"])
    assert dict(result.images.flops) == {"patch_dense": 2 * tokens * 3 * 24**2 * 30, "embedder": 2 * tokens * 30 * 44}


def _brute_force(family: str, length: int, blocks: list[range], window: int | None) -> int:
    """transformers' masks pair by pair. Gemma 4 (create_masks_for_vision_model): full layers causal,
    sliding AND(kv > q - window, OR(causal, same block)); Gemma 4 unified (create_masks_for_generate
    with block_sequence_ids): OR(causal and within the window, same block) on every layer."""
    def block(position):
        return next((number for number, run in enumerate(blocks) if position in run), None)

    def allowed(q, kv):
        causal = kv <= q and (window is None or kv > q - window)
        same = block(q) is not None and block(q) == block(kv)
        if family == "gemma4":
            return causal or (window is not None and same and kv > q - window)
        return causal or same

    return sum(allowed(q, kv) for q in range(length) for kv in range(length))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("family", FAMILIES)
def test_the_bidirectional_image_blocks_add_the_masks_pairs(registry, family, case):
    """The pairs the recorded masks allow with mm_token_type_ids, less those without, per layer
    type; a brute force over transformers' rule gives both counts; flopsreg's language model adds
    exactly those pairs at each layer's per-pair cost."""
    measured = MODELS[family]["cases"][case]
    text = MODELS[family]["config"]["text_config"]
    blocks, start = [], 0
    for soft in measured["soft_tokens"]:
        blocks.append(range(start + 1, start + 1 + soft))
        start += soft + WRAPPER_TOKENS
    length = measured["sequence_length"]
    for kind, window in (("full_attention", None), ("sliding_attention", text["sliding_window"])):
        assert _brute_force(family, length, blocks, window) == measured["mask_pairs"][kind]
        assert _brute_force(family, length, [], window) == measured["mask_pairs_text"][kind]
    added = {kind: measured["mask_pairs"][kind] - measured["mask_pairs_text"][kind] for kind in measured["mask_pairs"]}
    triangles = sum(n * (n - 1) // 2 for n in measured["soft_tokens"])
    w = text["sliding_window"]
    if family == "gemma4":
        assert added == {"full_attention": 0, "sliding_attention": triangles}
    else:
        beyond = sum((n - w) * (n - w + 1) // 2 for n in measured["soft_tokens"])
        assert added == {"full_attention": triangles, "sliding_attention": triangles + beyond}
    # QK^T and PV: 2 FLOPs per multiply-add, heads x (qk + v width) each; the full layers' heads are global_head_dim wide.
    width = {"sliding_attention": text["head_dim"], "full_attention": text["global_head_dim"]}
    expected = sum(2 * text["num_attention_heads"] * 2 * width[kind] * added[kind] for kind in text["layer_types"])
    model = _model(family)
    result = registry.evaluate(model, seq_len=MODELS[family]["text_tokens"], images=_images(family, case), processor=OPTIONS[family])
    assert result.images.bidirectional == expected
    assert result.forward == registry.evaluate(model, seq_len=length).forward + result.images.tower + expected


@pytest.mark.parametrize("family", FAMILIES)
def test_without_vision_bidirectionality_the_image_tokens_are_causal(registry, family):
    """use_bidirectional_attention null (Gemma4TextConfig's default; explicit for the unified
    one, whose default is "vision"): the masks stay causal, nothing is added."""
    model = _model(family, use_bidirectional_attention=None)
    result = registry.evaluate(model, seq_len=7, images=_images(family, "two"), processor=OPTIONS[family])
    assert result.images.bidirectional == 0
    assert result.forward == registry.evaluate(model, seq_len=result.seqlens[0]).forward + result.images.tower
    absent = {**_config(family), "text_config": {k: v for k, v in _config(family)["text_config"].items() if k != "use_bidirectional_attention"}}
    default = registry.evaluate(flopsreg.Model.from_hf_config(absent), seq_len=7, images=_images(family, "two"), processor=OPTIONS[family])
    assert (default.images.bidirectional == 0) == (family == "gemma4")
    cached = 3  # inside the first image's soft tokens: causal, so the cut is counted (the second image is encoded)
    step = registry.evaluate(model, seq_len=7, cached=cached, images=_images(family, "two"), processor=OPTIONS[family])
    assert step.placed[0].pairs == 0 and len(step.placed[0].encoded.plans) == 1
    assert step.forward == registry.evaluate(model, seq_len=result.seqlens[0] - cached, cached=cached).forward + step.placed[0].forward


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("family", FAMILIES)
def test_the_whole_forward_equals_flop_counter_mode(registry, eager_registry, family, case):
    """The language model under the eager convention (its s x s scores, as FlopCounterMode sees
    them, whatever the mask) over the same length gives the rest of the record; the tower's
    padding and pooling matmul, reconciled above, make up the difference with flopsreg's tower."""
    measured, model = MODELS[family]["cases"][case], _model(family)
    with_images = registry.evaluate(model, seq_len=MODELS[family]["text_tokens"], images=_images(family, case), processor=OPTIONS[family])
    language_model = eager_registry.evaluate(model, seq_len=with_images.seqlens[0], convention="eager").forward
    assert language_model == measured["rest"]
    kind, dims = _kind(registry, family), next(iter(t.dims for t in model.towers.values() if t.kind == _kind(registry, family).name))
    images, budget = len(measured["images"]), MODELS[family]["max_soft_tokens"]
    grid = (1, 1, budget * 9) if family == "gemma4" else (1, 3, 3 * budget)
    padded = tower_flops(kind, dims, [grid] * images)
    if family == "gemma4":  # the embedder on the real soft tokens, the pooler's one-hot matmul
        padded["embedder"] = with_images.images.flops["embedder"]
        padded["pooling"] = images * 2 * budget * budget * 9 * dims["h"]
    assert sum(padded.values()) + language_model == measured["forward"]


@pytest.mark.parametrize("family", FAMILIES)
def test_image_tokens_give_what_the_image_gives_and_refuse_more_than_the_budget(registry, family):
    model = _model(family)
    by_size = registry.evaluate(model, seq_len=7, images=[(64, 100), (450, 260)], processor=OPTIONS[family])
    by_tokens = registry.evaluate(model, seq_len=7, image_tokens=[60, 66], processor=OPTIONS[family])
    assert (by_tokens.forward, by_tokens.seqlens) == (by_size.forward, by_size.seqlens)
    title = "Gemma 4 ViT" if family == "gemma4" else "Gemma 4 unified vision embedder"
    with pytest.raises(flopsreg.FlopsregError, match=rf"^image_tokens\[0\] = 71: an image is at most max_soft_tokens = 70 soft tokens \({title}\)$"):
        registry.evaluate(model, seq_len=7, image_tokens=[71], processor=OPTIONS[family])


@pytest.mark.parametrize(("family", "change", "options", "message"), [
    ("gemma4", {}, {"max_soft_tokens": 100}, r"max_soft_tokens = 100: the processor takes one of 70, 140, 280, 560, 1120 \(Gemma 4 ViT\)"),
    ("gemma4_unified", {"vision_config": {**MODELS["gemma4_unified"]["config"]["vision_config"], "output_proj_dims": 26}},
     OPTIONS["gemma4_unified"], r"output_proj_dims = 26: the projection takes the embedder's mm_embed_dim = 30 \(transformers fails on it\)"),
])
def test_a_budget_or_embedder_transformers_refuses_is_refused(registry, family, change, options, message):
    model = flopsreg.Model.from_hf_config({**_config(family), **change})
    with pytest.raises(flopsreg.FlopsregError, match=r"^images\[0\] = \(300, 500\): " + message):
        registry.evaluate(model, seq_len=7, images=[(300, 500)], processor=options)


def test_an_unknown_bidirectional_setting_is_one_line():
    message = "text_config.use_bidirectional_attention = 'visoin': expected one of null, 'vision', 'all'; did you mean 'vision'?"
    with pytest.raises(flopsreg.FlopsregError, match=re.escape(message) + "$"):
        flopsreg.Model.from_hf_config(_config("gemma4_unified", use_bidirectional_attention="visoin"))


@pytest.mark.parametrize("convention", ["megatron", "megatron_bridge", "hf_trainer", "vllm", "slime", "nanogpt"])
@pytest.mark.parametrize("family", FAMILIES)
def test_every_other_convention_refuses_gemma4_images_by_name(registry, family, convention):
    title = "vision tower (Gemma 4 ViT)" if family == "gemma4" else "vision_embedder tower (Gemma 4 unified vision embedder)"
    message = f"images: convention '{convention}' has no term for the {title}: count images with the exact convention"
    with pytest.raises(flopsreg.FlopsregError, match="^" + re.escape(message) + "$"):
        registry.evaluate(_model(family), seq_len=7, images=[(300, 500)], convention=convention, processor=OPTIONS[family])


@pytest.mark.parametrize("family", FAMILIES)
def test_verl_counts_no_gemma4_at_all(registry, family):
    """verl has no estimator for either model_type (its FlopsCounter returns 0): the model is refused, images or not."""
    with pytest.raises(flopsreg.FlopsregError, match=r"verl .*model_type"):
        registry.evaluate(_model(family), seq_len=7, images=[(300, 500)], convention="verl", processor=OPTIONS[family])


def test_the_command_line_takes_gemma4_images(tmp_path, capsys, registry):
    path = tmp_path / "gemma4.json"
    path.write_text(json.dumps(_config("gemma4")))
    options = ["--processor", "max_soft_tokens=70"]
    assert main(["eval", str(path), "--seq-len", "7", "--image", "300x500", *options, "--format", "json", "--no-cache"]) == 0
    output = json.loads(capsys.readouterr().out)
    expected = registry.evaluate(_model("gemma4"), seq_len=7, images=[(300, 500)], processor=OPTIONS["gemma4"])
    assert output["forward_flops"] == str(expected.forward) and output["seqlens"] == [7 + 60 + 2]
    assert output["images"]["bidirectional_flops_per_sequence"] == str(expected.images.bidirectional)
    assert main(["explain", str(path), "--image", "300x500", *options, "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "image 1: 300x500 -> 144x240, patch grid 1x18x30 (t x h x w), 62 tokens" in text
    assert "embedder = 2*columns*h*rows*t*text/pooling**2" in text


def test_per_layer_pairs_need_the_runs_they_count():
    with pytest.raises(ValueError, match=r"^MediaRule.layer_pairs needs bidirectional"):
        MediaRule(summary="s", plan=GEMMA4_IMAGES.plan, layer_pairs=GEMMA4_IMAGES.layer_pairs)


def test_a_choice_dim_declares_its_choices():
    assert Dim("b", "text_config.use_bidirectional_attention", None, read="choice", choices=(None, "vision")).choices == (None, "vision")
    for bad in ({"read": "choice"}, {"choices": (None, "vision")}):
        with pytest.raises(ValueError, match=r"^Dim 'b': choices go with read='choice'"):
            Dim("b", "text_config.use_bidirectional_attention", None, **bad)


@pytest.mark.parametrize("family", FAMILIES)
def test_after_a_cached_image_the_next_image_adds_its_own_layer_pairs(registry, family):
    """Two images before the text, the first in the cache: the step encodes the second alone and
    adds the pairs of its soft tokens by the family's own per-layer rule (Gemma 4: sliding layers
    only; unified: every layer, and more on a sliding layer narrower than the image)."""
    text = MODELS[family]["config"]["text_config"]
    model, case = _model(family), max(MODELS[family]["cases"], key=lambda c: len(MODELS[family]["cases"][c]["images"]))
    first, second = _images(family, case)[:2]
    soft = registry.images(model, images=[second], processor=OPTIONS[family]).plans[0].tokens - WRAPPER_TOKENS
    w = text["sliding_window"]
    triangle, beyond = soft * (soft - 1) // 2, (soft - w) * (soft - w + 1) // 2 if soft > w else 0
    added = {"full_attention": 0, "sliding_attention": triangle} if family == "gemma4" else {
        "full_attention": triangle, "sliding_attention": triangle + beyond}
    width = {"sliding_attention": text["head_dim"], "full_attention": text["global_head_dim"]}
    pairs = sum(2 * text["num_attention_heads"] * 2 * width[kind] * added[kind] for kind in text["layer_types"])
    cached = registry.images(model, images=[first], processor=OPTIONS[family]).tokens
    step = registry.evaluate(model, seq_len=5, cached=cached, images=[first, second], processor=OPTIONS[family])
    tokens = registry.images(model, images=[second], processor=OPTIONS[family]).tokens
    language_model = registry.evaluate(model, seq_len=5 + tokens, cached=cached).forward
    assert step.forward == language_model + registry.images(model, images=[second], processor=OPTIONS[family]).tower + pairs
