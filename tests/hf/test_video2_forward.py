"""Videos for Gemma 4, Gemma 4 unified and GIT against real forward passes:
tests/data/hf_forward/measure_video2.py ran tiny Gemma4ForConditionalGeneration and
Gemma4UnifiedForConditionalGeneration on random frames through each family's own video processor
and the processor's placeholder expansion (replace_video_token), and a tiny GitForCausalLM on
frames through its image processor as a 5D pixel_values, under FlopCounterMode, with the masks the
language models build (forward_video2.json). The towers (their padding reconciled), the language
model, the token counts and the pairs each frame's bidirectional block adds are each compared
with what was recorded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs
import pytest

import flopsreg
from flopsreg.cli import main
from flopsreg.engine.media import tower_flops
from flopsreg.patterns.hf._gemma4_vit import GEMMA4_VIDEOS

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_video2.json").read_text())
MODELS = RECORD["models"]
GEMMA4 = ("gemma4", "gemma4_unified")
GIT = MODELS["git"]
WRAPPER_TOKENS = 2  # <boi> and <eoi> around each frame's soft tokens


def _model(family: str, **text) -> flopsreg.Model:
    config = MODELS[family]["config"]
    if text:
        config = {**config, "text_config": {**config["text_config"], **text}}
    return flopsreg.Model.from_hf_config(config)


def _cases(family: str) -> list[str]:
    return sorted(MODELS[family]["cases"])


def _options(family: str, case: str) -> dict:
    """The record's processor: its budget, and do_sample_frames with num_frames where the case sampled."""
    measured = MODELS[family]["cases"][case]
    options = {"max_soft_tokens": MODELS[family]["max_soft_tokens"]}
    return {**options, "do_sample_frames": True, **measured["options"]} if measured["options"] else options


def _videos(family: str, case: str, **options):
    """flopsreg's result for the case: its text and the frames' timestamps (text: seq_len) and its video."""
    measured = MODELS[family]["cases"][case]
    text = MODELS[family]["text_tokens"] + MODELS[family]["timestamp_tokens"] * measured["timestamps"]
    return text, {"videos": [tuple(measured["video"])], "processor": _options(family, case), **options}


def _kind(registry, family: str):
    part = "vision" if family == "gemma4" else "vision_embedder"
    return next(tower.kind for tower in registry.hf_readers[family].towers if tower.part == part)


def test_the_record_names_its_versions_and_every_case_ran():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert [MODELS[family]["processor"] for family in GEMMA4] == ["Gemma4VideoProcessor", "Gemma4UnifiedVideoProcessor"]
    assert all(_cases(family) == ["one", "sampled", "tall", "three"] for family in GEMMA4)
    assert sorted(GIT["cases"]) == ["four", "one", "two"] and GIT["class"] == "GitForCausalLM"


@pytest.mark.parametrize("family", GEMMA4)
def test_the_video_processors_defaults_are_the_rules_options(registry, family):
    """Gemma4VideoProcessor's (and the unified one's) class defaults: 70 soft tokens a frame, 32
    frames sampled when do_sample_frames is on (flopsreg's default: off, the frames as given)."""
    defaults = MODELS[family]["processor_defaults"]
    assert defaults == {"max_soft_tokens": 70, "num_frames": 32, "do_sample_frames": True, "patch_size": 16, "pooling_kernel_size": 3}
    rule = _kind(registry, family).videos
    assert dict(rule.options) == {"max_soft_tokens": 70, "do_sample_frames": False, "num_frames": 32}


@pytest.mark.parametrize("case", _cases("gemma4"))
@pytest.mark.parametrize("family", GEMMA4)
def test_the_frames_and_tokens_equal_the_processors_expansion(registry, family, case):
    """Per kept frame: <boi>, the frame's soft tokens, <eoi> (its "mm:ss " timestamp is text)."""
    measured = MODELS[family]["cases"][case]
    text, media = _videos(family, case)
    result = registry.evaluate(_model(family), seq_len=text, **media)
    (plan,) = result.videos.plans
    assert plan.grid[0] == measured["frames"] and plan.frames == measured["video"][0]
    assert plan.grid[1] * plan.grid[2] == 9 * measured["soft_tokens_per_frame"]
    assert plan.tokens == measured["frames"] * (measured["soft_tokens_per_frame"] + WRAPPER_TOKENS) == measured["video_tokens"]
    assert result.seqlens == (measured["sequence_length"],)


@pytest.mark.parametrize("case", _cases("gemma4"))
def test_the_gemma4_tower_is_the_recorded_one_less_the_padding_and_the_pooling_matmul(registry, case):
    """The tower runs on each frame as on an image padded to the budget (max_soft_tokens x 9
    patches) and its pooler's average is a one-hot matmul: the kind's closed forms at the padded
    length over t = frames, plus that matmul, give the record; flopsreg counts the real patches."""
    measured, model = MODELS["gemma4"]["cases"][case], _model("gemma4")
    dims, kind = model.towers["vision"].dims, _kind(registry, "gemma4")
    frames, padded, budget = measured["frames"], measured["pixel_values_videos"][1], MODELS["gemma4"]["max_soft_tokens"]
    assert measured["pixel_values_videos"][0] == frames and padded == budget * 9
    at_padding = tower_flops(kind, dims, [(frames, 1, padded)])
    pooling_matmul = frames * 2 * budget * padded * dims["h"]
    assert measured["tower"] == sum(at_padding.values()) - at_padding["embedder"] + pooling_matmul
    text, media = _videos("gemma4", case)
    flops = dict(registry.evaluate(model, seq_len=text, **media).videos.flops)
    assert flops.pop("embedder") == measured["embedder"]
    real = 9 * measured["soft_tokens_per_frame"]  # each frame's real patches
    # By hand: h 36, MLP 50, 2 layers, 3 heads and 1 key/value head of 12, patches of 8 x 8 pixels.
    assert flops == {
        "patch_embed": 2 * frames * real * 3 * 8**2 * 36,
        "blocks.qkv_proj": 2 * 2 * frames * real * (2 * 36 * 3 * 12 + 2 * 36 * 1 * 12),
        "blocks.attention": 2 * 4 * 3 * 12 * frames * real**2,  # within each frame
        "blocks.mlp": 2 * 2 * frames * real * 3 * 36 * 50,
    }


@pytest.mark.parametrize("case", _cases("gemma4_unified"))
def test_the_unified_embedder_is_the_recorded_one_less_the_padding(registry, case):
    measured, model = MODELS["gemma4_unified"]["cases"][case], _model("gemma4_unified")
    dims, kind = model.towers["vision_embedder"].dims, _kind(registry, "gemma4_unified")
    frames, budget = measured["frames"], MODELS["gemma4_unified"]["max_soft_tokens"]
    assert measured["pixel_values_videos"] == [frames, budget, 3 * 24**2]
    assert measured["embedder"] == sum(tower_flops(kind, dims, [(frames, 3, 3 * budget)]).values())
    text, media = _videos("gemma4_unified", case)
    tokens = frames * measured["soft_tokens_per_frame"]
    assert dict(registry.evaluate(model, seq_len=text, **media).videos.flops) == {
        "patch_dense": 2 * tokens * 3 * 24**2 * 30, "embedder": 2 * tokens * 30 * 44}


def _brute_force(family: str, length: int, blocks: list[range], window: int | None, first: int = 0) -> int:
    """transformers' masks pair by pair (as tests/hf/test_gemma4img_forward.py): Gemma 4 sliding
    layers AND(window, OR(causal, same block)), full layers causal; unified OR(causal in window, same block).
    The queries from *first* on (a step after a cached prefix of *first* tokens)."""
    def block(position):
        return next((number for number, run in enumerate(blocks) if position in run), None)

    def allowed(q, kv):
        causal = kv <= q and (window is None or kv > q - window)
        same = block(q) is not None and block(q) == block(kv)
        if family == "gemma4":
            return causal or (window is not None and same and kv > q - window)
        return causal or same

    return sum(allowed(q, kv) for q in range(first, length) for kv in range(length))


@pytest.mark.parametrize("case", _cases("gemma4"))
@pytest.mark.parametrize("family", GEMMA4)
def test_each_frame_is_a_bidirectional_block_of_its_own(registry, family, case):
    """The recorded masks with mm_token_type_ids (2 on video tokens) less those without: one block
    per frame's soft tokens (the <eoi>, the timestamp and <boi> between frames break the run); a
    brute force over transformers' rule with those blocks gives both counts; flopsreg adds exactly
    those pairs at each layer's per-pair cost."""
    measured = MODELS[family]["cases"][case]
    text = MODELS[family]["config"]["text_config"]
    soft, stamp = measured["soft_tokens_per_frame"], MODELS[family]["timestamp_tokens"]
    blocks, start = [], 0
    for _ in range(measured["frames"]):
        start += stamp + 1  # the frame's timestamp, then <boi>
        blocks.append(range(start, start + soft))
        start += soft + 1  # <eoi>
    length = measured["sequence_length"]
    for kind, window in (("full_attention", None), ("sliding_attention", text["sliding_window"])):
        assert _brute_force(family, length, blocks, window) == measured["mask_pairs"][kind]
        assert _brute_force(family, length, [], window) == measured["mask_pairs_text"][kind]
    added = {kind: measured["mask_pairs"][kind] - measured["mask_pairs_text"][kind] for kind in measured["mask_pairs"]}
    w, frames = text["sliding_window"], measured["frames"]
    triangles = frames * soft * (soft - 1) // 2
    if family == "gemma4":
        assert added == {"full_attention": 0, "sliding_attention": triangles}
    else:
        assert added == {"full_attention": triangles, "sliding_attention": triangles + frames * (soft - w) * (soft - w + 1) // 2}
    width = {"sliding_attention": text["head_dim"], "full_attention": text["global_head_dim"]}
    expected = sum(2 * text["num_attention_heads"] * 2 * width[kind] * added[kind] for kind in text["layer_types"])
    model = _model(family)
    length_text, media = _videos(family, case)
    result = registry.evaluate(model, seq_len=length_text, **media)
    assert result.videos.bidirectional == expected
    assert result.forward == registry.evaluate(model, seq_len=length).forward + result.videos.tower + expected


@pytest.mark.parametrize("case", _cases("gemma4"))
@pytest.mark.parametrize("family", GEMMA4)
def test_the_whole_forward_equals_flop_counter_mode(registry, eager_registry, family, case):
    """The language model under the eager convention (its s x s scores, whatever the mask) gives
    the rest of the record; the tower at the padded length (and Gemma 4's pooling matmul) the rest."""
    measured, model = MODELS[family]["cases"][case], _model(family)
    text, media = _videos(family, case)
    with_videos = registry.evaluate(model, seq_len=text, **media)
    language_model = eager_registry.evaluate(model, seq_len=with_videos.seqlens[0], convention="eager").forward
    assert language_model == measured["rest"]
    kind = _kind(registry, family)
    dims = next(t.dims for t in model.towers.values() if t.kind == kind.name)
    frames, budget = measured["frames"], MODELS[family]["max_soft_tokens"]
    padded = tower_flops(kind, dims, [(frames, 1, budget * 9) if family == "gemma4" else (frames, 3, 3 * budget)])
    if family == "gemma4":
        padded["embedder"] = with_videos.videos.flops["embedder"]
        padded["pooling"] = frames * 2 * budget * budget * 9 * dims["h"]
    assert sum(padded.values()) + language_model == measured["forward"]


@pytest.mark.parametrize("family", GEMMA4)
def test_a_video_costs_its_frames_as_images_at_the_video_budget(registry, family):
    """The tower on a video is the tower on its frames as images (at the same budget); the tokens
    are the images' (one <boi>/<eoi> pair a frame), and so are the bidirectional pairs."""
    model = _model(family)
    video = registry.videos(model, videos=[(3, 300, 500)], processor={"max_soft_tokens": 140})
    images = registry.images(model, images=[(300, 500)] * 3, processor={"max_soft_tokens": 140})
    assert dict(video.flops) == dict(images.flops) and video.tokens == images.tokens and video.bidirectional == images.bidirectional
    assert video.plans[0].resized == images.plans[0].resized


@pytest.mark.parametrize("family", GEMMA4)
def test_sampling_keeps_num_frames_and_refuses_a_shorter_video(registry, family):
    model = _model(family)
    sampled = registry.videos(model, videos=[(40, 300, 500)], processor={"do_sample_frames": True})
    assert sampled.plans[0].grid[0] == 32 and sampled.plans[0].frames == 40
    assert registry.videos(model, videos=[(40, 300, 500)]).plans[0].grid[0] == 40  # as given by default
    title = "Gemma 4 ViT" if family == "gemma4" else "Gemma 4 unified vision embedder"
    message = (r"^videos\[0\] = \(8, 300, 500\): do_sample_frames picks num_frames = 32 frames, more than the video's 8 "
               rf"\(the processor refuses it\) \({title}\)$")
    with pytest.raises(flopsreg.FlopsregError, match=message):
        registry.evaluate(model, seq_len=7, videos=[(8, 300, 500)], processor={"do_sample_frames": True})
    with pytest.raises(flopsreg.FlopsregError, match=r"max_soft_tokens = 100: the processor takes one of 70, 140, 280, 560, 1120"):
        registry.evaluate(model, seq_len=7, videos=[(8, 300, 500)], processor={"max_soft_tokens": 100})
    with pytest.raises(flopsreg.FlopsregError, match=r"processor: 'num_frame' is not an option of .* did you mean 'num_frames'"):
        registry.evaluate(model, seq_len=7, videos=[(8, 300, 500)], processor={"num_frame": 4})


@pytest.mark.parametrize("convention", ["megatron", "megatron_bridge", "hf_trainer", "vllm", "slime"])
@pytest.mark.parametrize("family", [*GEMMA4, "git"])
def test_every_other_convention_refuses_the_video_by_name(registry, family, convention):
    title = {"gemma4": "vision tower (Gemma 4 ViT)", "gemma4_unified": "vision_embedder tower (Gemma 4 unified vision embedder)",
             "git": "vision tower (GIT CLIP ViT)"}[family]
    message = f"videos: convention '{convention}' has no term for the {title}: count videos with the exact convention"
    with pytest.raises(flopsreg.FlopsregError, match="^" + re.escape(message) + "$"):
        registry.evaluate(_model(family), seq_len=7, videos=[(2, 300, 500)], convention=convention)


# --- GIT: frames through the image processor, a 5D pixel_values ---------------------------------------------


@pytest.mark.parametrize("case", sorted(GIT["cases"]))
def test_git_video_tower_tokens_and_forward_equal_the_record(registry, eager_registry, case):
    """Each frame through the CLIP ViT as an image (3 x 3 patches and the class token), the
    projection over all frames' tokens, before the text; the text decoder over frames x 10 + 7
    positions, the video's tokens one bidirectional block (the recorded mask: causal plus the
    n(n-1)/2 pairs above the block's diagonal)."""
    measured, model = GIT["cases"][case], _model("git")
    frames = measured["video"][0]
    result = registry.evaluate(model, seq_len=GIT["text_tokens"], videos=[tuple(measured["video"])])
    (plan,) = result.videos.plans
    assert plan.grid == (frames, 3, 3) and plan.tokens == frames * 10
    assert result.seqlens == (measured["sequence_length"],) == (frames * 10 + GIT["text_tokens"],)
    flops = dict(result.videos.flops)
    assert flops.pop("projector") == measured["visual_projection"]
    assert sum(flops.values()) == measured["image_encoder"]
    n, length = frames * 10, measured["sequence_length"]
    assert measured["mask_pairs"] == length * (length + 1) // 2 + n * (n - 1) // 2
    language_model = eager_registry.evaluate(model, seq_len=length, convention="eager").forward
    assert language_model == measured["rest"]
    assert result.videos.forward + language_model == measured["forward"] + result.videos.bidirectional
    # QK^T and PV over the block's extra pairs: 2 layers x 2 x 4 heads x (11 + 11) FLOPs a pair.
    assert result.videos.bidirectional == 2 * 2 * 4 * 2 * 11 * n * (n - 1) // 2


def test_git_refuses_the_videos_transformers_fails_on(registry):
    failures = GIT["failures"]
    assert failures["more_frames"]["error"].startswith("IndexError") and failures["no_embeddings"]["error"].startswith("AttributeError")
    model = _model("git")
    with pytest.raises(flopsreg.FlopsregError, match=r"^videos\[0\] = \(5, 300, 500\): 5 frames: GitModel holds num_image_with_embedding = 4 "):
        registry.evaluate(model, seq_len=7, videos=[(5, 300, 500)])
    without = flopsreg.Model.from_hf_config({k: v for k, v in GIT["config"].items() if k != "num_image_with_embedding"})
    with pytest.raises(flopsreg.FlopsregError, match=r"^videos\[0\] = \(2, 300, 500\): num_image_with_embedding is null"):
        registry.evaluate(without, seq_len=7, videos=[(2, 300, 500)])
    with pytest.raises(flopsreg.FlopsregError, match=r"^videos: 2 videos, but GIT CLIP ViT takes at most 1 per sequence$"):
        registry.evaluate(model, seq_len=7, videos=[(2, 300, 500)] * 2)
    with pytest.raises(flopsreg.FlopsregError, match=r"^GIT CLIP ViT takes its images before the text from one input of the model: "
                       r"a sequence holds one medium there, not images and videos$"):
        registry.evaluate(model, seq_len=7, images=[(300, 500)], videos=[(2, 300, 500)])


def test_git_parameters_include_the_temporal_embeddings(registry):
    assert registry.parameters(_model("git")).total == GIT["parameters"]


def test_the_command_line_takes_gemma4_videos(tmp_path, capsys, registry):
    path = tmp_path / "gemma4.json"
    path.write_text(json.dumps(MODELS["gemma4"]["config"]))
    assert main(["eval", str(path), "--seq-len", "7", "--video", "3x300x500", "--format", "json", "--no-cache"]) == 0
    output = json.loads(capsys.readouterr().out)
    expected = registry.evaluate(_model("gemma4"), seq_len=7, videos=[(3, 300, 500)])
    assert output["forward_flops"] == str(expected.forward) and output["seqlens"] == [7 + 3 * 62]
    assert output["videos"]["images"][0] == {"frames": 3, "height": 300, "width": 500, "resized": [144, 240], "grid": [3, 18, 30],
                                             "tokens": 186}
    assert main(["explain", str(path), "--video", "40x300x500", "--processor", "do_sample_frames=true", "--no-cache"]) == 0
    assert "video 1: 40 frames of 300x500 -> 144x240, patch grid 32x18x30 (t x h x w), 1984 tokens" in capsys.readouterr().out


# --- Kimi K2.5: chunks of temporal_patch_size frames through Kimi_K25VideoProcessor --------------------------

KIMI = MODELS["kimi_k25"]


def test_kimis_video_processor_defaults_are_the_rules_options(registry):
    """Kimi_K25VideoProcessor's class defaults: a budget of 4096 patches (its images' is 16384),
    chunks of 4 frames, 512 patches a side; its sampling (fps = 2 of the video's own rate) is off in flopsreg."""
    defaults = KIMI["processor_defaults"]
    assert defaults == {"max_patches": 4096, "temporal_patch_size": 4, "do_sample_frames": True, "fps": 2,
                        "size": {"max_height": 512, "max_width": 512}, "patch_size": 14, "merge_size": 2}
    kind = next(tower.kind for tower in registry.hf_readers["kimi_k25"].towers if tower.part == "vision")
    assert dict(kind.videos.options) == {"max_patches": 4096, "temporal_patch_size": 4, "do_sample_frames": False,
                                         **defaults["size"]}


@pytest.mark.parametrize("case", sorted(KIMI["cases"]))
def test_kimi_chunks_tokens_tower_and_forward_equal_the_record(registry, eager_registry, case):
    """Each chunk one clip: its grid as the processor's video_grid_thw, 4 wrapper tokens and its
    pads (rows x columns / 4, the frames averaged into one); MoonViT's attention over the whole
    chunk; the language model (causal) over the rest of the record."""
    measured, model = KIMI["cases"][case], _model("kimi_k25")
    text = KIMI["text_tokens"] + KIMI["timestamp_tokens"] * measured["chunks"]
    result = registry.evaluate(model, seq_len=text, videos=[tuple(measured["video"])], processor=measured["options"] or None)
    (plan,) = result.videos.plans
    assert [list(grid) for grid in plan.grids] == measured["video_grid_thw"]
    assert plan.grid == (measured["video"][0], *measured["video_grid_thw"][0][1:])
    assert plan.tokens == measured["video_tokens"] == measured["pads"] + 4 * measured["chunks"]
    assert result.seqlens == (measured["sequence_length"],)
    flops = dict(result.videos.flops)
    assert flops.pop("projector") == measured["projector"]
    assert sum(flops.values()) == measured["vision_tower"]
    # By hand: h 36, MLP 50, 2 layers, patches of 4 x 4 pixels; attention over each chunk's t x rows x columns patches.
    grids = measured["video_grid_thw"]
    assert flops["blocks.attention"] == 4 * 36 * 2 * sum((t * r * c) ** 2 for t, r, c in grids)
    assert eager_registry.evaluate(model, seq_len=measured["sequence_length"], convention="eager").forward == measured["rest"]
    assert result.forward == registry.evaluate(model, seq_len=measured["sequence_length"]).forward + result.videos.tower


def test_kimi_refuses_sampling_and_chunks_past_its_temporal_positions(registry):
    model = _model("kimi_k25")
    with pytest.raises(flopsreg.FlopsregError, match=r"^videos\[0\] = \(8, 50, 37\): do_sample_frames samples fps = 2 frames a second "
                       r"of the video's own frame rate, which a request does not carry"):
        registry.evaluate(model, seq_len=7, videos=[(8, 50, 37)], processor={"do_sample_frames": True})
    with pytest.raises(flopsreg.FlopsregError, match=r"temporal_patch_size = 5: MoonViT holds pos_emb_time = 4 temporal positions"):
        registry.evaluate(model, seq_len=7, videos=[(8, 50, 37)], processor={"temporal_patch_size": 5})
    with pytest.raises(flopsreg.FlopsregError, match=r"^videos: convention 'megatron' has no term for the vision tower \(MoonViT \(Kimi K2.5\)\)"):
        registry.evaluate(model, seq_len=7, videos=[(8, 50, 37)], convention="megatron")


def test_a_kimi_videos_clips_are_shown_in_text_and_json(tmp_path, capsys):
    path = tmp_path / "kimi.json"
    path.write_text(json.dumps(KIMI["config"]))
    assert main(["explain", str(path), "--video", "6x50x37", "--no-cache"]) == 0
    assert "video 1: 6 frames of 50x37 -> 56x40, patch grid 6x14x10 (t x h x w), encoded as 2 clips of 4 + 2 frames, 78 tokens" in (
        capsys.readouterr().out)
    assert main(["eval", str(path), "--seq-len", "7", "--video", "6x50x37", "--format", "json", "--no-cache"]) == 0
    (video,) = json.loads(capsys.readouterr().out)["videos"]["images"]
    assert video["clips"] == KIMI["cases"]["six"]["video_grid_thw"] and video["grid"] == [6, 14, 10]


@pytest.mark.parametrize("family", GEMMA4)
def test_a_step_after_a_cached_video_encodes_nothing_and_a_cut_video_is_refused(registry, family):
    """A decode step after the whole video is cached is the language model alone (no tower, no
    block pairs: the frames' keys were computed with them); a prefix ending inside the video is refused."""
    model = _model(family)
    tokens = registry.videos(model, videos=[(3, 300, 500)]).tokens
    step = registry.evaluate(model, seq_len=5, cached=tokens + 7, videos=[(3, 300, 500)])
    assert step.forward == registry.evaluate(model, seq_len=5, cached=tokens + 7).forward
    with pytest.raises(flopsreg.FlopsregError, match=r"^cached = 100: cuts video 1 \(tokens 0 to 185\), whose tokens attend to each other"):
        registry.evaluate(model, seq_len=5, cached=100, videos=[(3, 300, 500)])


@pytest.mark.parametrize("beside", [-1, 0, 1])  # before the last cached frame's <eoi>, between two frames, after a <boi>
@pytest.mark.parametrize("frames_cached", [1, 2])
@pytest.mark.parametrize("family", GEMMA4)
def test_a_prefix_cached_between_two_frames_adds_the_new_frames_pairs_alone(registry, family, frames_cached, beside):
    """Each frame is its own block: a prefix that ends between two frames, or beside a block (after
    a frame's <boi>, before its <eoi>), leaves the later frames' blocks whole in the step. The tower
    ran in the step that held the video's first token (as for any cut video); this step is the
    language model over its new tokens plus the pairs the blocks add to the queries from the cut
    on, counted pair by pair over the step's mask."""
    model, text = _model(family), MODELS[family]["config"]["text_config"]
    video = registry.videos(model, videos=[(3, 300, 500)])
    frames, group = 3, video.tokens // 3
    soft = group - WRAPPER_TOKENS
    blocks = [range(k * group + 1, k * group + 1 + soft) for k in range(frames)]  # <boi>, soft tokens, <eoi>
    cached, new_text = frames_cached * group + beside, 5
    length = video.tokens + new_text
    added = {kind: _brute_force(family, length, blocks, window, cached) - _brute_force(family, length, [], window, cached)
             for kind, window in (("full_attention", None), ("sliding_attention", text["sliding_window"]))}
    left, w = frames - frames_cached, text["sliding_window"]
    triangles = left * soft * (soft - 1) // 2  # the new frames' blocks alone: the cached ones add nothing to new queries
    if family == "gemma4":
        assert added == {"full_attention": 0, "sliding_attention": triangles}
    else:
        assert added == {"full_attention": triangles, "sliding_attention": triangles + left * (soft - w) * (soft - w + 1) // 2}
    width = {"sliding_attention": text["head_dim"], "full_attention": text["global_head_dim"]}
    expected = sum(2 * text["num_attention_heads"] * 2 * width[kind] * added[kind] for kind in text["layer_types"])
    step = registry.evaluate(model, seq_len=new_text, cached=cached, videos=[(3, 300, 500)])
    assert step.seqlens == (length - cached,) and step.placed[0].videos is None
    assert step.forward == registry.evaluate(model, seq_len=length - cached, cached=cached).forward + expected


@pytest.mark.parametrize("family", GEMMA4)
def test_a_prefix_cached_inside_a_frame_is_refused_naming_the_frame_boundaries(registry, family):
    group = registry.videos(_model(family), videos=[(3, 300, 500)]).tokens // 3
    for cached in (group + 2, 2 * group - 2):  # after a frame's first soft token, before its last
        with pytest.raises(flopsreg.FlopsregError, match=rf"^cached = {cached}: cuts video 1 .+ or outside its 3 blocks "
                           rf"\(every {group} tokens, each from token 1 of its group\)$"):
            registry.evaluate(_model(family), seq_len=5, cached=cached, videos=[(3, 300, 500)])


@pytest.mark.parametrize("family", GEMMA4)
def test_without_bidirectional_attention_a_cut_inside_a_frame_is_counted_causally(registry, family):
    """use_bidirectional_attention null: every video token is causal like text, so a prefix may end
    anywhere in the video; the step is the language model over its new tokens, no block pairs
    (the brute force over the mask without blocks adds none), the tower in the step that held the
    video's first token."""
    model = _model(family, use_bidirectional_attention=None)
    video = registry.videos(model, videos=[(3, 300, 500)])
    group, new_text = video.tokens // 3, 5
    length = video.tokens + new_text
    assert registry.evaluate(model, seq_len=new_text, videos=[(3, 300, 500)]).videos.bidirectional == 0
    for cached in (group + 2, 100, 2 * group - 2):
        step = registry.evaluate(model, seq_len=new_text, cached=cached, videos=[(3, 300, 500)])
        assert step.seqlens == (length - cached,) and step.placed[0].videos is None
        assert step.forward == registry.evaluate(model, seq_len=length - cached, cached=cached).forward
    with pytest.raises(flopsreg.FlopsregError, match=r"^cached = 100: cuts video 1 "):
        registry.evaluate(_model(family), seq_len=new_text, cached=100, videos=[(3, 300, 500)])


@pytest.mark.parametrize(("changes", "offset"), [({"bidirectional": None, "layer_pairs": None, "pair_slot": ""}, 1), ({}, -1)])
def test_a_run_offset_needs_the_runs_it_places(changes, offset):
    with pytest.raises(ValueError, match=rf"^MediaRule.run_offset = {offset}: expected >= 0, with bidirectional"):
        attrs.evolve(GEMMA4_VIDEOS, run_offset=offset, **changes)
