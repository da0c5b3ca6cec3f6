"""Gemma 3 with images against real forward passes: tests/data/hf_forward/measure_gemma3img.py ran
a tiny Gemma3ForConditionalGeneration on random images through transformers' own image processor
and Gemma3Processor's placeholder expansion, under FlopCounterMode, and recorded the masks its
language model builds with and without the processor's token_type_ids (forward_gemma3img.json).
The SigLIP tower, the projector, the language model, the token counts and the pairs the
bidirectional image blocks add are each compared with what was recorded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import flopsreg
from flopsreg.cli import main
from flopsreg.engine.media import bidirectional_pairs
from flopsreg.patterns.hf._gemma3_vit import GEMMA3_IMAGES, WRAPPER_TOKENS
from flopsreg.plugin import MediaRule

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_gemma3img.json").read_text())
MEASURED = RECORD["models"]["gemma3"]
HF = Path(__file__).parents[1] / "data" / "hf"
CASES = sorted(MEASURED["cases"])
SOFT = MEASURED["config"]["mm_tokens_per_image"]


def _model(**vision) -> flopsreg.Model:
    config = MEASURED["config"]
    return flopsreg.Model.from_hf_config({**config, "vision_config": {**config["vision_config"], **vision}})


def _images(case: str) -> list[tuple[int, int]]:
    return [tuple(size) for size in MEASURED["cases"][case]["images"]]


def test_the_record_names_its_versions_and_every_case_ran():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert CASES == ["one", "three", "two"] and MEASURED["class"] == "Gemma3ForConditionalGeneration"


def test_the_whole_model_and_its_vision_tower_hold_transformers_parameters(registry):
    model = _model()
    assert registry.parameters(model).total == MEASURED["parameters"]
    assert model.towers["vision"].parameters == MEASURED["vision_parameters"]


def test_the_wrapper_tokens_are_those_gemma3processor_inserts():
    """The processor's full_image_sequence, as it builds it: newlines, begin, soft tokens, end, newlines."""
    for sequence, soft in ((MEASURED["full_image_sequence"], SOFT), (RECORD["published_full_image_sequence"], 256)):
        assert sequence == ["\n\n", "<start_of_image>", *["<image_soft_token>"] * soft, "<end_of_image>", "\n\n"]
        assert len(sequence) - soft == WRAPPER_TOKENS


@pytest.mark.parametrize("case", CASES)
def test_the_tower_projector_and_token_counts_equal_the_recorded_forward(registry, case):
    measured = MEASURED["cases"][case]
    result = registry.evaluate(_model(), seq_len=MEASURED["text_tokens"], images=_images(case))
    assert result.seqlens == (measured["sequence_length"],)
    assert all(plan.resized == (84, 84) and plan.grid == (1, 6, 6) for plan in result.images.plans)
    assert measured["pixel_values"] == [len(result.images.plans), 3, 84, 84]
    flops = dict(result.images.flops)
    assert flops.pop("projector") == measured["projector"]
    assert sum(flops.values()) == measured["vision_tower"]


@pytest.mark.parametrize("case", CASES)
def test_the_whole_forward_equals_flop_counter_mode(eager_registry, case):
    """Tower and projector exact (the tower's attention is bidirectional: every pair it computes is
    allowed), the language model under the eager convention (its s x s scores, as FlopCounterMode
    sees them, whatever the mask) over the same length."""
    measured = MEASURED["cases"][case]
    model = _model()
    with_images = eager_registry.evaluate(model, seq_len=MEASURED["text_tokens"], images=_images(case))
    language_model = eager_registry.evaluate(model, seq_len=with_images.seqlens[0], convention="eager").forward
    assert language_model == measured["rest"]
    assert with_images.images.tower + language_model == measured["forward"]


def _brute_force(length: int, blocks: list[range], window: int | None) -> int:
    """transformers' Gemma 3 masks, pair by pair: full layers OR(causal, same image block);
    sliding layers AND(kv > q - window, OR(causal, same image block))."""
    def block(position):
        return next((number for number, run in enumerate(blocks) if position in run), None)

    return sum(
        (kv <= q or (block(q) is not None and block(q) == block(kv))) and (window is None or kv > q - window)
        for q in range(length) for kv in range(length)
    )


@pytest.mark.parametrize("case", CASES)
def test_the_bidirectional_image_blocks_add_the_masks_pairs(registry, case):
    """The pairs the recorded masks allow with token_type_ids, less those without, are n(n-1)/2 per
    image (n soft tokens) on full and sliding layers alike (window 3 < 9 soft tokens); a brute force
    over transformers' mask rule gives the recorded counts; flopsreg's language model adds them."""
    measured = MEASURED["cases"][case]
    images = len(measured["images"])
    length = measured["sequence_length"]
    step = SOFT + WRAPPER_TOKENS
    blocks = [range(start * step + 2, start * step + 2 + SOFT) for start in range(images)]
    for kind, window in (("full_attention", None), ("sliding_attention", 3)):
        assert _brute_force(length, blocks, window) == measured["mask_pairs"][kind]
        assert _brute_force(length, [], window) == measured["mask_pairs_text"][kind]
        assert measured["mask_pairs"][kind] - measured["mask_pairs_text"][kind] == bidirectional_pairs([SOFT] * images)
    model = _model()
    result = registry.evaluate(model, seq_len=MEASURED["text_tokens"], images=_images(case))
    text = MEASURED["config"]["text_config"]
    per_pair = 2 * text["num_attention_heads"] * 2 * text["head_dim"]  # QK^T and PV, 2 FLOPs per multiply-add
    added = sum(measured["mask_pairs"][kind] - measured["mask_pairs_text"][kind] for kind in text["layer_types"])
    assert result.images.bidirectional == per_pair * added
    assert result.forward == registry.evaluate(model, seq_len=length).forward + result.images.tower + per_pair * added


def test_image_tokens_give_what_the_image_gives_and_refuse_another_count(registry):
    model = _model()
    by_size = registry.evaluate(model, seq_len=7, images=[(300, 500), (20, 30)])
    by_tokens = registry.evaluate(model, seq_len=7, image_tokens=[SOFT, SOFT])
    assert (by_tokens.forward, by_tokens.seqlens) == (by_size.forward, by_size.seqlens)
    with pytest.raises(flopsreg.FlopsregError, match=r"^image_tokens\[0\] = 8: every image is 9 soft tokens \(mm_tokens_per_image\), resized to 84 x 84 \(SigLIP ViT\)$"):
        registry.evaluate(model, seq_len=7, image_tokens=[8])


def test_every_sequence_of_a_batch_or_a_packed_row_holds_the_images(registry):
    model, images = _model(), _images("two")
    one = registry.evaluate(model, seq_len=7, images=images)
    assert registry.evaluate(model, seq_len=7, images=images, batch=3).forward == 3 * one.forward
    packed = registry.evaluate(model, seqlens=[7, 20], images=images)
    assert packed.forward == one.forward + registry.evaluate(model, seq_len=20, images=images).forward
    assert sum(packed.per_request) == packed.forward


@pytest.mark.parametrize(("vision", "message"), [
    ({"vision_use_head": True}, r"vision_use_head = true: the SigLIP pooling head's output is unused by Gemma 3 and not counted"),
    ({"image_size": 70}, r"mm_tokens_per_image = 9: the projector pools the 5 x 5 patch grid to another count than the processor's placeholders"),
])
def test_a_tower_gemma3_cannot_build_as_counted_is_refused(registry, vision, message):
    with pytest.raises(flopsreg.FlopsregError, match=r"^images\[0\] = \(300, 500\): " + message):
        registry.evaluate(_model(**vision), seq_len=7, images=[(300, 500)])


def test_a_config_without_its_vision_config_is_refused_as_transformers_fails(registry):
    """gemma-3-4b.json leaves vision_config out: SigLIP's class defaults (224 px, patch 16: 14 x 14
    patches) cannot pool to 256 tokens (transformers' AvgPool2d kernel would be 0)."""
    gemma = flopsreg.Model.from_hf_config(json.loads((HF / "gemma-3-4b.json").read_text()))
    with pytest.raises(flopsreg.FlopsregError, match=r"pools the 14 x 14 patch grid"):
        registry.evaluate(gemma, seq_len=9, images=[(100, 100)])


@pytest.mark.parametrize("convention", ["megatron", "megatron_bridge", "hf_trainer", "vllm", "slime", "nanogpt"])
def test_every_other_convention_refuses_gemma3_images_by_name(registry, convention):
    message = rf"^images: convention '{convention}' has no term for the vision tower \(SigLIP ViT\): count images with the exact convention$"
    with pytest.raises(flopsreg.FlopsregError, match=message):
        registry.evaluate(_model(), seq_len=7, images=[(300, 500)], convention=convention)


def test_the_command_line_takes_gemma3_images(tmp_path, capsys, registry):
    path = tmp_path / "gemma3.json"
    path.write_text(json.dumps(MEASURED["config"]))
    assert main(["eval", str(path), "--seq-len", "7", "--image", "300x500", "--format", "json", "--no-cache"]) == 0
    output = json.loads(capsys.readouterr().out)
    expected = registry.evaluate(_model(), seq_len=7, images=[(300, 500)])
    assert output["forward_flops"] == str(expected.forward) and output["seqlens"] == [7 + SOFT + 4]
    assert output["images"]["bidirectional_flops_per_sequence"] == str(expected.images.bidirectional)
    assert main(["explain", str(path), "--image", "300x500", "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "image 1: 300x500 -> 84x84, patch grid 1x6x6 (t x h x w), 13 tokens" in text
    assert "language model, bidirectional pairs within each image: " in text


def test_a_bidirectional_rule_names_the_slot_that_costs_its_pairs():
    with pytest.raises(ValueError, match=r"^MediaRule.bidirectional needs pair_slot"):
        MediaRule(summary="s", plan=GEMMA3_IMAGES.plan, bidirectional=GEMMA3_IMAGES.bidirectional)
