"""Images on every path: cached prefixes, serving requests, generate, sweep, compare, plot, mfu and
the command line (docs/multimodal.md, "Images everywhere").

The cache and position rules are checked against a brute force: each sequence is laid out token
by token (text, each image's wrapper and soft tokens where it is placed), the pairs its new
queries may attend to are counted over transformers' Gemma 3 mask rule (full layers OR(causal,
same image); sliding layers AND(kv > q - window, OR(causal, same image))), and the images whose
first token is new are found from the layout, not from flopsreg's placement.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import flopsreg
from flopsreg.cli import main

DATA = Path(__file__).parents[1] / "data" / "hf_forward"
GEMMA3 = json.loads((DATA / "forward_gemma3img.json").read_text())["models"]["gemma3"]
QWEN = json.loads((DATA / "forward_towers5.json").read_text())["models"]
SOFT = GEMMA3["config"]["mm_tokens_per_image"]  # 9 soft tokens, wrapped in 2 + 2 tokens
TEXT = GEMMA3["config"]["text_config"]
PER_PAIR = 2 * TEXT["num_attention_heads"] * 2 * TEXT["head_dim"]  # QK^T and PV, 2 FLOPs per multiply-add
SIZES = [(100, 100), (50, 60)]


def _gemma3() -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(GEMMA3["config"])


def _qwen3_vl() -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(QWEN["qwen3_vl"]["config"])


def _layout(text: int, positions: list[int], soft: int) -> list[str | int]:
    """The sequence token by token: "t" for text, "w" for an image's wrapper tokens, the image's
    number for its soft tokens (Gemma 3: two tokens, the soft run, two tokens)."""
    tokens: list[str | int] = []
    placed = 0
    for number, position in enumerate(positions):
        tokens += ["t"] * (position - placed)
        placed = position
        tokens += ["w", "w", *[number] * soft, "w", "w"]
    return tokens + ["t"] * (text - placed)


def _pairs(layout: list[str | int], start: int, window: int | None, blocks: bool = True) -> int:
    """Pairs the queries from *start* on may attend to, over transformers' rule, pair by pair."""
    return sum(
        (kv <= q or blocks and isinstance(layout[q], int) and layout[q] == layout[kv]) and (window is None or kv > q - window)
        for q in range(start, len(layout)) for kv in range(len(layout))
    )


def _image_starts(positions: list[int]) -> list[int]:
    return [position + number * (SOFT + 4) for number, position in enumerate(positions)]


CASES = [  # (text tokens of the whole sequence, positions, cached prefix)
    (7, [0, 0], 0),
    (7, [0, 0], 26),  # both images cached, new text after them
    (7, [0, 0], 13),  # the first image cached, the second new
    (7, [0, 0], 32),  # a decode step: everything but one token cached
    (9, [2, 6], 2),  # text, then both images new
    (9, [2, 6], 18),  # cached up to the middle of the text between them
    (9, [2, 6], 17),  # the first image cached, the text after it partly
    (9, [3, 8], 21),  # the second image new, one text token after it
    (12, [5, 5], 5),
]


@pytest.mark.parametrize(("text", "positions", "cached"), CASES)
def test_a_cached_prefix_counts_the_masks_pairs_for_new_queries_and_encodes_only_new_images(registry, text, positions, cached):
    model = _gemma3()
    layout = _layout(text, positions, SOFT)
    new_images = [size for size, start in zip(SIZES, _image_starts(positions)) if start >= cached]
    new_text = layout[cached:].count("t")
    result = registry.evaluate(model, seq_len=new_text, cached=cached, images=SIZES, image_positions=positions)
    assert result.seqlens == (len(layout) - cached,)
    added = sum(_pairs(layout, cached, w) - _pairs(layout, cached, w, blocks=False)
                for w in (3 if kind == "sliding_attention" else None for kind in TEXT["layer_types"]))
    tower = registry.images(model, images=new_images).tower if new_images else 0
    language_model = registry.evaluate(model, seq_len=len(layout) - cached, cached=cached).forward
    assert result.forward == language_model + tower + PER_PAIR * added
    assert result.per_request == (result.forward,)


def test_the_brute_force_layout_and_its_pairs():
    layout = _layout(2, [1], 3)
    assert layout == ["t", "w", "w", 0, 0, 0, "w", "w", "t"]
    assert _pairs(layout, 0, None, blocks=False) == 9 * 10 // 2 and _pairs(layout, 0, None) == 45 + 3
    assert _pairs(layout, 8, 3) == 3  # the last query, window 3: itself and the two before it


@pytest.mark.parametrize("positions", [[0, 0], [0, 7], [3, 3], [1, 5], [7, 7]])
def test_where_the_images_lie_changes_no_count_without_a_cache(registry, positions):
    """Near a window edge or not, each image block adds n(n-1)/2 pairs to every layer (window 3 < 9
    soft tokens): the brute force says so for each placement, and so does flopsreg."""
    model = _gemma3()
    layout = _layout(7, positions, SOFT)
    for window in (3, None):
        assert _pairs(layout, 0, window) - _pairs(layout, 0, window, blocks=False) == 2 * SOFT * (SOFT - 1) // 2
    placed = registry.evaluate(model, seq_len=7, images=SIZES, image_positions=positions)
    assert placed.forward == registry.evaluate(model, seq_len=7, images=SIZES).forward


def test_a_bidirectional_image_cut_by_the_cache_boundary_is_refused(registry):
    with pytest.raises(flopsreg.FlopsregError, match=r"^cached = 5: cuts image 1 \(tokens 0 to 12\), whose tokens attend to each other"):
        registry.evaluate(_gemma3(), seq_len=3, cached=5, images=SIZES)


def test_a_causal_image_cut_by_the_cache_boundary_was_encoded_with_its_first_token(registry):
    """Qwen3-VL's image tokens are causal: a prefill chunk that starts inside an image runs the
    language model over the rest of it, and the tower ran in the chunk that held its first token."""
    model = _qwen3_vl()
    planned = registry.images(model, images=[(64, 96)])
    tokens = planned.tokens
    first = registry.evaluate(model, seq_len=1, cached=0, images=[(64, 96)], image_positions=[1])
    assert first.seqlens == (1 + tokens,) and first.forward == registry.evaluate(model, seq_len=1 + tokens).forward + planned.tower
    rest = registry.evaluate(model, seq_len=4, cached=3, images=[(64, 96)])  # the image's tokens 3.. are new
    assert rest.seqlens == (tokens - 3 + 4,)
    assert rest.forward == registry.evaluate(model, seq_len=tokens + 1, cached=3).forward
    assert rest.placed[0].encoded is None


def test_a_position_past_the_text_and_positions_out_of_order_are_refused(registry):
    model = _qwen3_vl()
    with pytest.raises(flopsreg.FlopsregError, match=r"^image_positions\[0\] = 9: after the sequence's 5 text tokens \(0 cached, 5 new\)"):
        registry.evaluate(model, seq_len=5, images=[(64, 96)], image_positions=[9])
    with pytest.raises(flopsreg.FlopsregError, match=r"^image_positions\[1\] = 1: below the image before it \(4\)"):
        registry.evaluate(model, seq_len=5, images=[(64, 96)] * 2, image_positions=[4, 1])
    with pytest.raises(flopsreg.FlopsregError, match=r"^image_positions: 1 positions for 2 images"):
        registry.evaluate(model, seq_len=5, images=[(64, 96)] * 2, image_positions=[4])
    with pytest.raises(flopsreg.FlopsregError, match=r"^image_positions: no images to place"):
        registry.evaluate(model, seq_len=5, image_positions=[4])


def test_each_request_carries_its_own_images(registry):
    """Each request's FLOPs are those of its own step alone; the step's are their sum."""
    model = _gemma3()
    requests = [(7, 0), (1, 40), (5, 13), (3, 0)]
    own = [SIZES, SIZES, SIZES, None]
    result = registry.evaluate(model, requests=requests, request_images=own)
    alone = [
        registry.evaluate(model, seq_len=n, cached=c, logits="last", **({"images": i} if i else {})).forward
        for (n, c), i in zip(requests, own)
    ]
    assert result.per_request == tuple(alone) and result.forward == sum(alone)
    assert result.seqlens == (7 + 26, 1, 5 + 13, 3)
    assert [p.tokens for p in result.placed] == [26, 0, 13, 0]
    assert result.to_dict()["images_per_sequence"][2]["encoded"]["images"][0]["height"] == 50
    shared = registry.evaluate(model, requests=[(7, 0), (1, 40)], images=SIZES)
    assert shared.per_request == (alone[0], alone[1])


def test_request_images_are_checked(registry):
    model = _gemma3()
    with pytest.raises(flopsreg.FlopsregError, match=r"^request_images = .*: expected one list of \(height, width\) images per request \(2\)"):
        registry.evaluate(model, requests=[(7, 0), (1, 40)], request_images=[SIZES])
    with pytest.raises(flopsreg.FlopsregError, match=r"^request_images: give each request its images, or images= for every request, not both"):
        registry.evaluate(model, requests=[(7, 0)], request_images=[SIZES], images=SIZES)
    with pytest.raises(flopsreg.FlopsregError, match=r"^request_images: one list of images per request of requests="):
        registry.evaluate(model, seq_len=7, request_images=[SIZES])


@pytest.mark.parametrize("convention", ["megatron", "vllm"])
def test_a_cached_step_with_images_is_refused_by_conventions_without_a_tower_term(registry, convention):
    with pytest.raises(flopsreg.FlopsregError, match=rf"^images: convention '{convention}' has no term for the vision tower"):
        registry.evaluate(_qwen3_vl(), seq_len=1, cached=100, images=[(64, 96)], convention=convention)


def test_generate_is_its_prefill_and_decode_evaluations(registry):
    model = _gemma3()
    gen = registry.generate(model, prompt=7, new_tokens=5, batch=2, images=SIZES, image_positions=[0, 3])
    prefill = registry.evaluate(model, seq_len=7, batch=2, logits="last", images=SIZES, image_positions=[0, 3])
    decode = registry.evaluate(model, seq_len=4, cached=7 + 26, batch=2, images=SIZES, image_positions=[0, 3])
    assert gen.prefill.forward == prefill.forward and gen.decode.forward == decode.forward
    assert gen.total == prefill.forward + decode.forward
    # the decode steps attend to the images in the cache: the language model alone, step by step
    steps = [registry.evaluate(model, requests=[(1, 7 + 26 + k)], batch=2).forward for k in range(4)]
    assert [step.forward for step in gen.steps()] == steps and sum(steps) == gen.decode.forward
    assert gen.to_dict()["images"]["tokens_per_sequence"] == 26
    assert "prompt 7 text tokens + 26 image tokens" in gen.to_text()


def test_sweep_evaluates_each_text_length_with_the_images(registry):
    model = _qwen3_vl()
    expected = [registry.evaluate(model, seq_len=n, batch=3, images=[(64, 96)]).forward for n in range(1, 40, 7)]
    assert registry.sweep(model, range(1, 40, 7), batch=3, images=[(64, 96)]) == expected
    assert registry.sweep(model, list(range(1, 40, 7)), batch=3, images=[(64, 96)]) == expected
    assert list(registry.iter_sweep(model, iter(range(1, 40, 7)), batch=3, images=[(64, 96)])) == list(zip(range(1, 40, 7), expected))
    floats = registry.sweep(model, range(1, 40, 7), batch=3, images=[(64, 96)], dtype=float)
    assert list(floats) == [float(v) for v in expected]
    with pytest.raises(flopsreg.FlopsregError, match=r"^images: a sweep over params= takes no images"):
        registry.sweep(model, 8, params={"hidden": [44]}, images=[(64, 96)])


def test_compare_counts_images_under_exact_and_verl_and_names_every_refusal(registry):
    model = _qwen3_vl()
    comparison = registry.compare(model, seq_len=9, images=[(64, 96)])
    totals = {total.convention: total for total in comparison.totals}
    assert totals["exact"].result.forward == registry.evaluate(model, seq_len=9, images=[(64, 96)]).forward
    assert totals["verl"].result.forward == registry.evaluate(model, seq_len=9, images=[(64, 96)], convention="verl").forward
    for name in ("megatron", "vllm", "slime", "hf_trainer"):
        assert totals[name].result is None and totals[name].error.startswith(f"images: convention '{name}' has no term for the vision tower")
    data = comparison.to_dict()
    assert data["images"]["tokens_per_sequence"] == registry.images(model, images=[(64, 96)]).tokens
    assert "images through the vision tower" in comparison.to_text()


def test_parameters_are_the_whole_models_whatever_the_images(registry):
    assert registry.parameters(_gemma3()).total == GEMMA3["parameters"]
    assert registry.parameters(_qwen3_vl()).total == QWEN["qwen3_vl"]["parameters"]


def test_a_step_with_images_has_its_mfu(registry):
    model = _gemma3()
    result = registry.evaluate(model, seq_len=7, images=SIZES)
    mfu = result.mfu(peak=10**12, step_time=1)
    assert mfu.flops == 3 * result.forward


def _config(tmp_path: Path) -> str:
    path = tmp_path / "gemma3.json"
    path.write_text(json.dumps(GEMMA3["config"]))
    return str(path)


def test_the_command_line_places_images_and_carries_them_everywhere(tmp_path, capsys, registry):
    config, model = _config(tmp_path), _gemma3()

    def run(*argv: str) -> str:
        assert main(list(argv)) == 0
        return capsys.readouterr().out

    data = json.loads(run("eval", config, "--seq-len", "5", "--image", "100x100@2", "--image", "50x60@5", "--format", "json"))
    assert data["images"]["images"][1]["text_tokens_before"] == 5
    assert data["forward_flops"] == str(registry.evaluate(model, seq_len=5, images=SIZES, image_positions=[2, 5]).forward)
    data = json.loads(run("eval", config, "--seq-len", "5", "--cached", "13", "--image", "100x100", "--image", "50x60", "--format", "json"))
    assert data["forward_flops"] == str(registry.evaluate(model, seq_len=5, cached=13, images=SIZES).forward)
    assert data["images_per_sequence"][0]["new_image_tokens"] == 13
    data = json.loads(run("generate", config, "--prompt", "7", "--new-tokens", "3", "--image", "100x100", "--format", "json"))
    assert data["total_flops"] == str(registry.generate(model, prompt=7, new_tokens=3, images=[(100, 100)]).total)
    rows = run("sweep", config, "--seq-len", "5:7", "--image", "100x100").splitlines()[1:]
    swept = registry.sweep(model, [5, 6, 7], images=[(100, 100)])
    assert [row.split(",")[:2] for row in rows] == [[str(n), str(f)] for n, f in zip((5, 6, 7), swept)]
    assert rows[0].split(",")[3] == str(swept[0] // (5 + 13))  # per token of the language model: 5 text + 13 image tokens
    data = json.loads(run("compare", config, "--seq-len", "7", "--image", "100x100", "--format", "json"))
    assert data["conventions"][0]["forward_flops"] == str(registry.evaluate(model, seq_len=7, images=[(100, 100)]).forward)
    assert all("error" in entry for entry in data["conventions"][1:])
    data = json.loads(run("mfu", config, "--seq-len", "7", "--image", "100x100", "--devices", "1", "--peak", "1e12",
                          "--step-time", "1", "--format", "json"))
    assert json.dumps(data).count(str(3 * registry.evaluate(model, seq_len=7, images=[(100, 100)]).forward)) >= 1


@pytest.mark.parametrize(("argv", "message"), [
    (["eval", "--seq-len", "5", "--image", "100x100@2", "--image", "50x60"], "--image: @K on some images and not others"),
    (["sweep", "--seq-len", "5:7", "--image", "100x100@2"], "--image ...@K: a sweep places every image before the text"),
])
def test_the_command_line_refuses_half_placed_images_and_placed_sweeps(tmp_path, capsys, argv, message):
    assert main([argv[0], _config(tmp_path), *argv[1:]]) != 0
    assert message in capsys.readouterr().err


def test_plots_carry_the_images(registry, tmp_path):
    pytest.importorskip("matplotlib")
    from flopsreg.render import plot

    model = _qwen3_vl()
    figure = plot.by_slot(model, "8:64:8", registry=registry, images=[(64, 96)])
    labels = figure.axes[0].get_legend_handles_labels()[1] or [t.get_text() for t in figure.legends[0].get_texts()]
    assert "vision tower: blocks.attention" in labels
    skipped = plot.conventions(model, "8:64:8", registry=registry, images=[(64, 96)]).skipped
    assert any(item.startswith("megatron: images: convention 'megatron' has no term") for item in skipped)
    assert not any(item.startswith("verl:") for item in skipped)


def test_the_latex_of_a_result_with_images_adds_their_work_to_the_language_models(tmp_path, capsys, registry):
    path = tmp_path / "qwen3_vl.json"
    path.write_text(json.dumps(QWEN["qwen3_vl"]["config"]))
    assert main(["eval", str(path), "--seq-len", "5", "--image", "64x96", "--format", "latex"]) == 0
    latex = capsys.readouterr().out
    model = _qwen3_vl()
    planned = registry.images(model, images=[(64, 96)])
    result = registry.evaluate(model, seq_len=5, images=[(64, 96)])
    assert f"I &= {planned.tower:,}".replace(",", "{,}") in latex
    assert f"F({5 + planned.tokens}) + I &" in latex and f"= {result.forward:,}".replace(",", "{,}") in latex
    assert "% vision tower (Qwen3-VL ViT): forward FLOPs of one image" in latex
