"""Videos and audio clips on every path, as images ride it: cached prefixes, serving requests,
generate, sweep, compare, plot, mfu, LaTeX and the command line (docs/multimodal.md, "Images,
videos and audio everywhere").

Models are the recorded ones: Qwen2.5-VL's tiny model with its video cases (forward_qwenvid.json,
the video tower recorded under FlopCounterMode) and Gemma 4's tiny model with audio
(forward_audio.json). A sequence is laid out token by token here (images at their positions, then
videos, then audio clips, then text), and the entries whose first token is new are found from that
layout, not from flopsreg's placement. Qwen-VL's video tokens and both audio families' tokens are
causal in the language model, so a step's language model is the text-only step of the same length.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import flopsreg
import flopsreg.registry
from flopsreg.cli import main
from flopsreg.plugin import IMAGE_GRID, MediaPlan, MediaRule, TowerKind

DATA = Path(__file__).parents[1] / "data" / "hf_forward"
QWEN = json.loads((DATA / "forward_qwenvid.json").read_text())["videos"]["qwen2_5_vl"]
GEMMA4 = json.loads((DATA / "forward_audio.json").read_text())["models"]["gemma4"]
FOUR = QWEN["cases"]["four"]  # a video of 4 frames of 300x500, its tower as recorded
VIDEO = tuple(FOUR["video"])
(GRID,) = FOUR["video_grid_thw"]
VIDEO_TOKENS = GRID[0] * GRID[1] * GRID[2] // 4 + 2  # 2x2 patches merged per token, <|vision_start|> and <|vision_end|>
IMAGE = (64, 96)
CLIP = "2.5"


def _qwen() -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(QWEN["config"])


def _gemma4() -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(GEMMA4["config"])


def _one_logit(registry, model) -> int:
    """The logits of one position: what a chunk adds beside the whole prompt's last one."""
    return registry.evaluate(model, seq_len=2).forward - registry.evaluate(model, seq_len=2, logits="last").forward


def _lm(registry, model, n: int, cached: int = 0, logits: str = "last") -> int:
    return registry.evaluate(model, seq_len=n, cached=cached, logits=logits).forward


def test_the_recorded_video_is_what_flopsreg_plans(registry):
    videos = registry.videos(_qwen(), videos=[VIDEO])
    assert videos.tokens == VIDEO_TOKENS == 398 and videos.tower == FOUR["visual"]


def test_a_chunked_prefill_with_an_image_and_a_video_is_the_whole_prompt_plus_one_logit(registry):
    """Image (tokens 0..I-1), video (I..I+V-1), 20 text tokens. Chunk 1 ends 5 tokens into the video
    (it ran the image and video towers: the video's first token is there); chunk 2 runs the rest of
    the video's tokens through the language model, causally, and encodes nothing again."""
    model = _qwen()
    image = registry.images(model, images=[IMAGE])
    media = {"images": [IMAGE], "videos": [VIDEO]}
    whole = registry.evaluate(model, seq_len=20, logits="last", **media)
    assert whole.seqlens == (image.tokens + VIDEO_TOKENS + 20,)
    assert whole.forward == _lm(registry, model, image.tokens + VIDEO_TOKENS + 20) + image.tower + FOUR["visual"]
    cut = image.tokens + 5
    chunk1 = _lm(registry, model, cut) + image.tower + FOUR["visual"]  # the step that held both entries' first tokens
    chunk2 = registry.evaluate(model, seq_len=20, cached=cut, logits="last", **media)
    assert chunk2.seqlens == (VIDEO_TOKENS - 5 + 20,)
    assert chunk2.forward == _lm(registry, model, VIDEO_TOKENS - 5 + 20, cut)
    assert chunk2.placed[0].media == () and chunk2.placed[0].tokens == VIDEO_TOKENS - 5
    assert chunk1 + chunk2.forward == whole.forward + _one_logit(registry, model)


def test_a_video_lies_before_the_text_and_an_image_placed_in_the_text_after_it(registry):
    """image_positions=[3]: the video (at text position 0) comes first, then 3 text tokens, then the
    image; a prefix that caches the video and the 3 text tokens leaves the image to encode."""
    model = _qwen()
    image = registry.images(model, images=[IMAGE])
    step = registry.evaluate(model, seq_len=4, cached=VIDEO_TOKENS + 3, images=[IMAGE], image_positions=[3], videos=[VIDEO])
    assert step.seqlens == (image.tokens + 4,)
    assert step.forward == _lm(registry, model, image.tokens + 4, VIDEO_TOKENS + 3, "all") + image.tower
    assert step.placed[0].videos is None and step.placed[0].encoded is not None


def test_a_chunked_prefill_with_an_audio_clip_is_the_whole_prompt_plus_one_logit(registry):
    model = _gemma4()
    clip = registry.audio(model, audio=[CLIP])
    whole = registry.evaluate(model, seq_len=30, audio=[CLIP], logits="last")
    assert whole.forward == _lm(registry, model, clip.tokens + 30) + clip.tower
    chunk1 = registry.evaluate(model, seq_len=4, audio=[CLIP], logits="last")
    assert chunk1.forward == _lm(registry, model, clip.tokens + 4) + clip.tower
    chunk2 = registry.evaluate(model, seq_len=26, cached=clip.tokens + 4, audio=[CLIP], logits="last")
    assert chunk2.forward == _lm(registry, model, 26, clip.tokens + 4) and chunk2.placed[0].audio is None
    assert chunk1.forward + chunk2.forward == whole.forward + _one_logit(registry, model)


@pytest.fixture
def with_a_video_tower(registry, monkeypatch):
    """Gemma 4's recorded model (audio) with a stand-in vision tower that takes videos: 6 tokens
    and 1000 FLOPs a frame, so one sequence can hold a video and an audio clip."""
    def plan(dims, frames, height, width):
        return MediaPlan(height=height, width=width, resized=(height, width), grid=(frames, 1, 1), tokens=6, frames=frames)

    rule = MediaRule(summary="as given", plan=plan, takes="video")
    kind = TowerKind(name="stand_in", title="stand-in", summary="1000 FLOPs a frame", dims=(), parameters=0, reference="x",
                     videos=rule, flops={"all": 1000 * IMAGE_GRID[0]})
    towers, kinds = registry.image_towers, flopsreg.registry.tower_kinds
    monkeypatch.setattr(registry, "image_towers", lambda m, takes="image", kinds=None: {
        **towers(m, takes, kinds), **({"vision": ("stand-in", {}, rule)} if takes == "video" else {})})
    monkeypatch.setattr(flopsreg.registry, "tower_kinds", lambda m, readers: {**kinds(m, readers), "vision": kind})
    return registry


def _media_layout(clip_tokens: int, text: int) -> list[str]:
    """One sequence token by token: the video's 6 tokens, the clip's, then the text."""
    return ["v"] * 6 + ["a"] * clip_tokens + ["t"] * text


@pytest.mark.parametrize("cached", [0, 3, 6, 7, 40, 71, 75, 80])
def test_a_cached_prefix_with_a_video_and_a_clip_encodes_only_the_entries_whose_first_token_is_new(with_a_video_tower, cached):
    registry, model = with_a_video_tower, _gemma4()
    clip = registry.audio(model, audio=[CLIP])
    layout = _media_layout(clip.tokens, 10)
    assert cached < len(layout)
    new_text = layout[cached:].count("t")
    result = registry.evaluate(model, seq_len=new_text, cached=cached, videos=[(3, 10, 10)], audio=[CLIP])
    firsts = {"v": layout.index("v"), "a": layout.index("a")}
    towers = (3000 if firsts["v"] >= cached else 0) + (clip.tower if firsts["a"] >= cached else 0)
    assert result.seqlens == (len(layout) - cached,)
    assert result.forward == _lm(registry, model, len(layout) - cached, cached, "all") + towers
    assert result.per_request == (result.forward,)


def test_a_chunked_prefill_with_a_video_and_an_audio_clip_is_the_whole_prompt_plus_one_logit(with_a_video_tower):
    registry, model = with_a_video_tower, _gemma4()
    media = {"videos": [(3, 10, 10)], "audio": [CLIP]}
    clip = registry.audio(model, audio=[CLIP])
    whole = registry.evaluate(model, seq_len=12, logits="last", **media)
    assert whole.seqlens == (6 + clip.tokens + 12,) and whole.forward == _lm(registry, model, 6 + clip.tokens + 12) + 3000 + clip.tower
    cut = 6 + 2  # chunk 1: the video and the clip's first 2 tokens: both towers run in it
    chunk1 = _lm(registry, model, cut) + 3000 + clip.tower
    chunk2 = registry.evaluate(model, seq_len=12, cached=cut, logits="last", **media)
    assert chunk2.forward == _lm(registry, model, clip.tokens - 2 + 12, cut)
    assert chunk1 + chunk2.forward == whole.forward + _one_logit(registry, model)
    assert "the videos, audio: vision tower and audio tower" in whole.latex()


@pytest.mark.parametrize(("model", "media"), [(_qwen, {"videos": [VIDEO]}), (_gemma4, {"audio": [CLIP]})])
def test_a_decode_step_after_cached_media_costs_the_language_model_alone(registry, model, media):
    model = model()
    step = registry.evaluate(model, seq_len=1, cached=900, **media)
    assert step.forward == _lm(registry, model, 1, 900, "all") and step.placed[0].media == ()


def test_each_request_carries_its_own_audio_and_videos(registry):
    model = _gemma4()
    clip = registry.audio(model, audio=[CLIP])
    requests = [(7, 0), (1, 400), (5, 3), (3, 0)]
    own = [[CLIP], [CLIP], [CLIP], None]
    result = registry.evaluate(model, requests=requests, request_audio=own)
    alone = [_lm(registry, model, clip.tokens + 7) + clip.tower, _lm(registry, model, 1, 400),
             _lm(registry, model, clip.tokens - 3 + 5, 3), _lm(registry, model, 3)]
    assert result.per_request == tuple(alone) and result.forward == sum(alone)
    assert [p.tokens for p in result.placed] == [clip.tokens, 0, clip.tokens - 3, 0]
    assert result.to_dict()["images_per_sequence"][0]["encoded_audio"]["tokens_per_sequence"] == clip.tokens
    shared = registry.evaluate(model, requests=[(7, 0), (1, 400)], audio=[CLIP])
    assert shared.per_request == tuple(alone[:2])
    qwen = _qwen()
    videos = registry.evaluate(qwen, requests=[(4, 0), (2, 0)], request_videos=[[VIDEO], None])
    assert videos.per_request == (_lm(registry, qwen, VIDEO_TOKENS + 4) + FOUR["visual"], _lm(registry, qwen, 2))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"requests": [(7, 0), (1, 4)], "request_audio": [[CLIP]]}, r"^request_audio = .*: expected one list of audio clips in seconds per request \(2\)"),
    ({"requests": [(7, 0)], "request_audio": [[CLIP]], "audio": [CLIP]}, r"^request_audio: give each request its audio, or audio= for every request"),
    ({"seq_len": 7, "request_audio": [[CLIP]]}, r"^request_audio: one list of audio per request of requests="),
    ({"seq_len": 7, "audio": [CLIP], "convention": "megatron"}, r"^audio: convention 'megatron' has no term for the audio tower"),
    ({"seq_len": 7, "cached": 3, "audio": [CLIP], "convention": "vllm"}, r"^audio: convention 'vllm' has no term for the audio tower"),
])
def test_bad_media_requests_are_one_line(registry, kwargs, message):
    with pytest.raises(flopsreg.FlopsregError, match=message):
        registry.evaluate(_gemma4(), **kwargs)


def test_generate_is_its_prefill_and_decode_evaluations(registry):
    model = _qwen()
    gen = registry.generate(model, prompt=7, new_tokens=4, batch=2, videos=[VIDEO])
    assert gen.prefill.forward == 2 * (_lm(registry, model, VIDEO_TOKENS + 7) + FOUR["visual"])
    assert gen.decode.forward == 2 * _lm(registry, model, 3, VIDEO_TOKENS + 7, "all")
    assert gen.total == gen.prefill.forward + gen.decode.forward
    assert f"prompt 7 text tokens + {VIDEO_TOKENS} video tokens" in gen.to_text()
    assert gen.to_dict()["videos"]["tokens_per_sequence"] == VIDEO_TOKENS
    gemma = _gemma4()
    clip = registry.audio(gemma, audio=[CLIP])
    spoken = registry.generate(gemma, prompt=5, new_tokens=3, audio=[CLIP])
    assert spoken.total == _lm(registry, gemma, clip.tokens + 5) + clip.tower + _lm(registry, gemma, 2, clip.tokens + 5, "all")


def test_sweep_evaluates_each_text_length_with_the_media(registry):
    model = _gemma4()
    expected = [registry.evaluate(model, seq_len=n, batch=3, audio=[CLIP]).forward for n in range(1, 30, 7)]
    assert registry.sweep(model, range(1, 30, 7), batch=3, audio=[CLIP]) == expected
    assert list(registry.iter_sweep(model, iter(range(1, 30, 7)), batch=3, audio=[CLIP])) == list(zip(range(1, 30, 7), expected))
    qwen = _qwen()
    assert registry.sweep(qwen, [5, 9], videos=[VIDEO]) == [_lm(registry, qwen, VIDEO_TOKENS + n, 0, "all") + FOUR["visual"] for n in (5, 9)]
    with pytest.raises(flopsreg.FlopsregError, match=r"^images: a sweep over params= takes no images, videos or audio"):
        registry.sweep(qwen, 8, params={"hidden": [44]}, videos=[VIDEO])


@pytest.mark.parametrize(("model", "media", "tower"), [(_qwen, {"videos": [VIDEO]}, "vision"), (_gemma4, {"audio": [CLIP]}, "audio")])
def test_compare_counts_media_under_exact_and_names_every_refusal(registry, model, media, tower):
    model = model()
    comparison = registry.compare(model, seq_len=9, **media)
    (given,) = media
    assert comparison.exact.forward == registry.evaluate(model, seq_len=9, **media).forward
    text_alone = {total.convention for total in registry.compare(model, seq_len=9).totals[1:] if total.result is not None}
    assert text_alone  # some convention counts the language model: it refuses the tower by name
    for total in comparison.totals[1:]:
        assert total.result is None
        if total.convention in text_alone:
            assert total.error.startswith(f"{given}: convention '{total.convention}' has no term for the {tower} tower")
    assert comparison.to_dict()[given]["tokens_per_sequence"] == registry.evaluate(model, seq_len=9, **media).placed[0].tokens


def test_a_step_with_media_has_its_mfu_and_latex_row(registry):
    model = _gemma4()
    clip = registry.audio(model, audio=[CLIP])
    result = registry.evaluate(model, seq_len=7, audio=[CLIP])
    assert result.mfu(peak=10**12, step_time=1).flops == 3 * result.forward
    latex = result.latex()
    assert f"I &= {clip.tower:,}".replace(",", "{,}") in latex and f"F({7 + clip.tokens}) + I &" in latex
    assert r"\text{(the audio: audio tower)}" in latex


def test_plots_carry_videos(registry):
    pytest.importorskip("matplotlib")
    from flopsreg.render import plot

    figure = plot.by_slot(_qwen(), "8:64:8", registry=registry, videos=[VIDEO])
    labels = figure.axes[0].get_legend_handles_labels()[1] or [t.get_text() for t in figure.legends[0].get_texts()]
    assert any(label.startswith("vision tower: ") for label in labels)


def test_the_command_line_carries_videos_and_audio_everywhere(tmp_path, capsys, registry):
    qwen, gemma = tmp_path / "qwen.json", tmp_path / "gemma4.json"
    qwen.write_text(json.dumps(QWEN["config"]))
    gemma.write_text(json.dumps(GEMMA4["config"]))
    video = "x".join(map(str, VIDEO))

    def run(*argv: str) -> str:
        assert main(list(argv)) == 0
        return capsys.readouterr().out

    data = json.loads(run("eval", str(qwen), "--seq-len", "5", "--cached", str(VIDEO_TOKENS + 1), "--video", video, "--format", "json"))
    assert data["forward_flops"] == str(_lm(registry, _qwen(), 5, VIDEO_TOKENS + 1, "all"))  # the video and 1 text token cached
    data = json.loads(run("eval", str(gemma), "--request", "7:0", "--request", "1:400", "--audio", CLIP, "--format", "json"))
    assert data["forward_flops"] == str(registry.evaluate(_gemma4(), requests=[(7, 0), (1, 400)], audio=[CLIP]).forward)
    data = json.loads(run("generate", str(gemma), "--prompt", "5", "--new-tokens", "3", "--audio", CLIP, "--format", "json"))
    assert data["total_flops"] == str(registry.generate(_gemma4(), prompt=5, new_tokens=3, audio=[CLIP]).total)
    rows = run("sweep", str(qwen), "--seq-len", "5:6", "--video", video).splitlines()[1:]
    assert [row.split(",")[1] for row in rows] == [str(f) for f in registry.sweep(_qwen(), [5, 6], videos=[VIDEO])]
    data = json.loads(run("compare", str(gemma), "--seq-len", "7", "--audio", CLIP, "--format", "json"))
    assert data["conventions"][0]["forward_flops"] == str(registry.evaluate(_gemma4(), seq_len=7, audio=[CLIP]).forward)
    assert all("error" in entry for entry in data["conventions"][1:])
    assert any(entry["error"].startswith(f"audio: convention '{entry['convention']}'") for entry in data["conventions"][1:])
    data = json.loads(run("mfu", str(qwen), "--seq-len", "7", "--video", video, "--devices", "1", "--peak", "1e12",
                          "--step-time", "1", "--format", "json"))
    assert str(3 * registry.evaluate(_qwen(), seq_len=7, videos=[VIDEO]).forward) in json.dumps(data)
    latex = run("eval", str(gemma), "--seq-len", "7", "--audio", CLIP, "--format", "latex")
    assert r"\text{(the audio: audio tower)}" in latex


@pytest.mark.parametrize(("model", "plan", "media"), [
    (_qwen, "images", {"images": [IMAGE]}), (_qwen, "videos", {"videos": [VIDEO]}), (_gemma4, "audio", {"audio": [CLIP]})])
def test_images_videos_and_audio_each_look_the_tower_kinds_up_once(registry, monkeypatch, model, plan, media):
    """Registry._plan_media: one tower_kinds lookup serves the towers' rules and their closed forms."""
    calls, kinds = [], flopsreg.registry.tower_kinds
    monkeypatch.setattr(flopsreg.registry, "tower_kinds", lambda m, readers: calls.append(m.name) or kinds(m, readers))
    planned = getattr(registry, plan)(model(), **media)
    assert len(calls) == 1 and planned.tower > 0
