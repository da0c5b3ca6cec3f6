"""Videos and audio clips at positions among the text (``video_positions=``, ``audio_positions=``,
``--video FxHxW@K``, ``--audio SECONDS@K``), beside images at theirs (docs/multimodal.md, "Where
the media lie").

Gemma 3's recorded tiny model (forward_gemma3img.json: its soft tokens attend to each other
bidirectionally, window 3 on its sliding layers) carries images, and stand-in video and audio
towers (causal tokens, a known cost a frame and a sample) carry videos and clips. Each sequence is
laid out token by token here from the positions (at one text position: the images, then the
videos, then the clips), and the pairs its new queries may attend to are counted pair by pair over
transformers' Gemma 3 mask rule (full layers OR(causal, same image); sliding layers AND(kv > q -
window, OR(causal, same image))), for every cached prefix that does not cut an image; the entries
whose first token is new are read from that layout.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import flopsreg
import flopsreg.registry
from flopsreg.cli import main
from flopsreg.plugin import IMAGE_GRID, MediaPlan, MediaRule, TowerKind

DATA = Path(__file__).parents[1] / "data" / "hf_forward"
GEMMA3 = json.loads((DATA / "forward_gemma3img.json").read_text())["models"]["gemma3"]
QWEN = json.loads((DATA / "forward_qwenvid.json").read_text())["videos"]["qwen2_5_vl"]
GEMMA4 = json.loads((DATA / "forward_audio.json").read_text())["models"]["gemma4"]
SOFT = GEMMA3["config"]["mm_tokens_per_image"]  # 9 soft tokens, wrapped in 2 + 2 tokens
TEXT = GEMMA3["config"]["text_config"]
WINDOWS = [TEXT["sliding_window"] if kind == "sliding_attention" else None for kind in TEXT["layer_types"]]
PER_PAIR = 2 * TEXT["num_attention_heads"] * 2 * TEXT["head_dim"]  # QK^T and PV, 2 FLOPs per multiply-add
IMAGES = [(100, 100), (50, 60)]
VIDEOS = [(2, 10, 10), (3, 10, 10)]  # stand-in: frames + 2 tokens, 1000 FLOPs a frame
CLIPS, SAMPLES = ["0.5", "1"], [5, 10]  # stand-in at 10 Hz: samples + 1 tokens, 7 FLOPs a sample
RATE, PER_FRAME, PER_SAMPLE = 10, 1000, 7
assert [RATE * float(seconds) for seconds in CLIPS] == SAMPLES


@pytest.fixture
def gemma3_with_videos_and_audio(registry, monkeypatch):
    """The registry with stand-in video and audio towers beside Gemma 3's vision tower."""
    def video(dims, frames, height, width):
        return MediaPlan(height=height, width=width, resized=(height, width), grid=(frames, 1, 1), tokens=frames + 2, frames=frames)

    def clip(dims, samples):
        return MediaPlan(height=0, width=0, resized=(0, 0), grid=(1, samples, 1), tokens=samples + 1, samples=samples)

    videos = TowerKind(name="video_stand_in", title="video stand-in", summary="1000 FLOPs a frame", dims=(), parameters=0, reference="x",
                       videos=MediaRule(summary="as given", plan=video, takes="video"), flops={"all": PER_FRAME * IMAGE_GRID[0]})
    audio = TowerKind(name="audio_stand_in", title="audio stand-in", summary="7 FLOPs a sample", dims=(), parameters=0, reference="x",
                      images=MediaRule(summary="as given", plan=clip, takes="audio", sampling_rate=RATE), flops={"all": PER_SAMPLE * IMAGE_GRID[1]})
    towers, kinds = registry.image_towers, flopsreg.registry.tower_kinds
    rules = {"video": ("video_stand_in", videos.videos), "audio": ("audio_stand_in", audio.images)}
    monkeypatch.setattr(registry, "image_towers", lambda m, takes="image", kinds=None: {
        **towers(m, takes, kinds), **({rules[takes][0]: ("stand-in", {}, rules[takes][1])} if takes in rules else {})})
    monkeypatch.setattr(flopsreg.registry, "tower_kinds", lambda m, readers: {
        **kinds(m, readers), "video_stand_in": videos, "audio_stand_in": audio})
    return registry


def _layout(text: int, images: list[int], videos: list[int], clips: list[int]) -> tuple[list[object], list[tuple[str, int, int]]]:
    """The sequence token by token ("t" text, "w" an image's wrapper tokens, ("image", i) its soft
    tokens, "v" a video's, "a" a clip's), and each entry's (medium, number, first token)."""
    entries = sorted([(k, 0, i) for i, k in enumerate(images)] + [(k, 1, i) for i, k in enumerate(videos)]
                     + [(k, 2, i) for i, k in enumerate(clips)])
    tokens: list[object] = []
    firsts = []
    placed = 0
    for position, medium, number in entries:
        tokens += ["t"] * (position - placed)
        placed = position
        firsts.append((("image", "video", "clip")[medium], number, len(tokens)))
        if medium == 0:
            tokens += ["w", "w", *[("image", number)] * SOFT, "w", "w"]
        elif medium == 1:
            tokens += ["v"] * (VIDEOS[number][0] + 2)
        else:
            tokens += ["a"] * (SAMPLES[number] + 1)
    return tokens + ["t"] * (text - placed), firsts


def _pairs(layout: list[object], start: int, window: int | None, blocks: bool = True) -> int:
    """Pairs the queries from *start* on may attend to, over transformers' rule, pair by pair."""
    return sum(
        (kv <= q or blocks and isinstance(layout[q], tuple) and layout[q] == layout[kv]) and (window is None or kv > q - window)
        for q in range(start, len(layout)) for kv in range(len(layout))
    )


def test_the_layout_and_its_pairs():
    layout, firsts = _layout(2, [1], [1], [0])
    assert layout == ["a"] * 6 + ["t"] + ["w", "w", *[("image", 0)] * 9, "w", "w"] + ["v"] * 4 + ["t"]
    assert firsts == [("clip", 0, 0), ("image", 0, 7), ("video", 0, 20)]
    assert _pairs(layout, 0, None) - _pairs(layout, 0, None, blocks=False) == 9 * 8 // 2


CASES = [  # (text tokens of the whole sequence, image, video and clip positions)
    (6, [0, 0], [0, 0], [0, 0]),  # all before the text: images, videos, clips
    (6, [3, 3], [3, 3], [3, 3]),  # all at one text position, in the same order
    (7, [0, 5], [2], [5, 7]),  # interleaved, a clip at the end
    (7, [6], [0, 6], [1]),  # a video first, then a clip, the image and the second video late
    (8, [2, 2], [4, 7], [0, 2]),
]


@pytest.mark.parametrize(("text", "images", "videos", "clips"), CASES)
def test_media_at_positions_count_the_masks_pairs_and_encode_the_new_entries_for_every_cached_prefix(
        gemma3_with_videos_and_audio, text, images, videos, clips):
    registry, model = gemma3_with_videos_and_audio, flopsreg.Model.from_hf_config(GEMMA3["config"])
    layout, firsts = _layout(text, images, videos, clips)
    media = {"images": IMAGES[:len(images)], "image_positions": images, "videos": VIDEOS[:len(videos)], "video_positions": videos,
             "audio": CLIPS[:len(clips)], "audio_positions": clips}
    image_tower = registry.images(model, images=IMAGES[:1]).tower
    for cached in range(len(layout)):
        new_text = layout[cached:].count("t")
        if not new_text:  # a step of media tokens alone: seq_len counts a step's new text, at least 1
            continue
        if any(medium == "image" and first < cached < first + SOFT + 4 for medium, _, first in firsts):  # cuts an image
            with pytest.raises(flopsreg.FlopsregError, match=rf"^cached = {cached}: cuts image \d \(tokens \d+ to \d+\), whose tokens attend"):
                registry.evaluate(model, seq_len=new_text, cached=cached, **media)
            continue
        result = registry.evaluate(model, seq_len=new_text, cached=cached, **media)
        assert result.seqlens == (len(layout) - cached,)
        added = sum(_pairs(layout, cached, window) - _pairs(layout, cached, window, blocks=False) for window in WINDOWS)
        new = [(medium, number) for medium, number, first in firsts if first >= cached]
        towers = sum(image_tower if medium == "image" else PER_FRAME * VIDEOS[number][0] if medium == "video"
                     else PER_SAMPLE * SAMPLES[number] for medium, number in new)
        language_model = registry.evaluate(model, seq_len=len(layout) - cached, cached=cached).forward
        assert result.forward == language_model + towers + PER_PAIR * added, cached


@pytest.mark.parametrize(("media", "message"), [
    ({"videos": VIDEOS, "video_positions": [1]}, "video_positions: 1 positions for 2 videos: expected one per video"),
    ({"videos": VIDEOS, "video_positions": [3, 1]}, "video_positions[1] = 1: below the video before it (3): videos are given in the order they appear"),
    ({"videos": VIDEOS, "video_positions": [0, -1]}, "video_positions[1] = -1: expected the text tokens before the video, an integer >= 0"),
    ({"videos": VIDEOS, "video_positions": "12"}, "video_positions = '12': expected one count of text tokens before each video"),
    ({"videos": VIDEOS, "video_positions": [0, 6]},
     "video_positions[1] = 6: after the sequence's 5 text tokens (0 cached, 5 new): a video lies within its sequence's text or at its end"),
    ({"video_positions": [0]}, "video_positions: no videos to place: give videos= beside it"),
    ({"audio": CLIPS, "audio_positions": [0, 2.0]}, "audio_positions[1] = 2.0: expected the text tokens before the clip, an integer >= 0"),
    ({"audio": CLIPS, "audio_positions": [4, 0]}, "audio_positions[1] = 0: below the clip before it (4): clips are given in the order they appear"),
    ({"audio": CLIPS, "audio_positions": [1, 9]},
     "audio_positions[1] = 9: after the sequence's 5 text tokens (0 cached, 5 new): a clip lies within its sequence's text or at its end"),
    ({"audio_positions": [0]}, "audio_positions: no audio clips to place: give audio= or audio_tokens= beside it"),
])
def test_a_bad_video_or_clip_position_is_one_line(gemma3_with_videos_and_audio, media, message):
    model = flopsreg.Model.from_hf_config(GEMMA3["config"])
    with pytest.raises(flopsreg.FlopsregError, match="^" + re.escape(message) + "$"):
        gemma3_with_videos_and_audio.evaluate(model, seq_len=5, **media)


def test_generate_and_compare_take_the_positions(gemma3_with_videos_and_audio):
    """The prompt holds its video and clip where placed: the prefill is the placed evaluation, and
    a decode step attends to them in the cache, wherever they lie."""
    registry, model = gemma3_with_videos_and_audio, flopsreg.Model.from_hf_config(GEMMA3["config"])
    placed = {"videos": VIDEOS[:1], "video_positions": [3], "audio": CLIPS[:1], "audio_positions": [5]}
    generation = registry.generate(model, prompt=6, new_tokens=3, **placed)
    assert generation.prefill.forward == registry.evaluate(model, seq_len=6, logits="last", **placed).forward
    assert generation.total == registry.generate(model, prompt=6, new_tokens=3, videos=VIDEOS[:1], audio=CLIPS[:1]).total  # causal either way
    assert registry.compare(model, seq_len=6, conventions=["megatron"], **placed).exact.forward == registry.evaluate(model, seq_len=6, **placed).forward


def _qwen_video() -> str:
    return "x".join(map(str, QWEN["cases"]["four"]["video"]))


def test_the_command_line_places_videos_and_clips(tmp_path, capsys, registry):
    """--video FxHxW@K and --audio SECONDS@K (--audio-tokens N@K) give the positions Python takes:
    a cached prefix of 3 text tokens before a video placed after 5 of them encodes it (placed
    before the text, it would be cached)."""
    qwen, gemma = tmp_path / "qwen.json", tmp_path / "gemma4.json"
    qwen.write_text(json.dumps(QWEN["config"]))
    gemma.write_text(json.dumps(GEMMA4["config"]))
    video = tuple(QWEN["cases"]["four"]["video"])
    assert main(["eval", str(qwen), "--seq-len", "4", "--cached", "3", "--video", _qwen_video() + "@5", "--format", "json"]) == 0
    placed = registry.evaluate(flopsreg.Model.from_hf_config(QWEN["config"]), seq_len=4, cached=3, videos=[video], video_positions=[5])
    assert json.loads(capsys.readouterr().out)["forward_flops"] == str(placed.forward)
    assert placed.placed[0].videos is not None and placed.forward > registry.evaluate(
        flopsreg.Model.from_hf_config(QWEN["config"]), seq_len=4, cached=3 + placed.placed[0].tokens, videos=[video]).forward
    assert main(["eval", str(gemma), "--seq-len", "7", "--audio", "2.5@3", "--audio", "1@7", "--format", "json"]) == 0
    expected = registry.evaluate(flopsreg.Model.from_hf_config(GEMMA4["config"]), seq_len=7, audio=["2.5", "1"], audio_positions=[3, 7])
    assert json.loads(capsys.readouterr().out)["forward_flops"] == str(expected.forward)


@pytest.mark.parametrize(("argv", "message"), [
    (["eval", "--seq-len", "5", "--video", "{video}@2", "--video", "{video}"], "--video: @K on some videos and not others"),
    (["eval", "--seq-len", "5", "--video", "{video}@x"], "then @K: the text tokens before the video (e.g. 16x720x1280@50)"),
    (["eval", "--seq-len", "5", "--video", "{video}@9"], "video_positions[0] = 9: after the sequence's 5 text tokens"),
    (["sweep", "--seq-len", "5:7", "--video", "{video}@2"], "--video ...@K: a sweep places every video before the text"),
    (["plot", "--seq-len", "5:7", "--video", "{video}@2", "-o", "x.svg"], "--video ...@K: a plot places every video before the text"),
])
def test_the_command_line_refuses_half_placed_and_placed_swept_videos(tmp_path, capsys, argv, message):
    path = tmp_path / "qwen.json"
    path.write_text(json.dumps(QWEN["config"]))
    assert main([argv[0], str(path), *[arg.format(video=_qwen_video()) for arg in argv[1:]]]) != 0
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(("argv", "message"), [
    (["--audio", "2.5@1", "--audio", "1"], "--audio: @K on some clips and not others"),
    (["--audio", "2.5@k"], "expected SECONDS, optionally @K text tokens before the clip (e.g. 2.5 or 2.5@50)"),
    (["--audio-tokens", "5@x"], "expected the clip's audio tokens N, optionally @K text tokens before it"),
])
def test_the_command_line_refuses_bad_clip_positions(tmp_path, capsys, argv, message):
    path = tmp_path / "gemma4.json"
    path.write_text(json.dumps(GEMMA4["config"]))
    assert main(["eval", str(path), "--seq-len", "5", *argv]) != 0
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
