"""Qwen2.5-Omni (``qwen2_5_omni``, ``qwen2_5_omni_thinker``) against real forward passes:
tests/data/hf_forward/measure_omni25.py ran a tiny Qwen2_5OmniThinkerForConditionalGeneration on random
images (Qwen2VLImageProcessorPil), video frames (Qwen2VLVideoProcessor) and waveforms
(WhisperFeatureExtractor as Qwen2_5OmniProcessor calls it) with the processor's placeholder
expansion, under FlopCounterMode, and built the tiny and the class-default whole models
(forward_omni25.json). The audio encoder's closed forms count the real mel frames and the pairs of
its windows; the encoder pads its windows to one length for the convolutions, reconciled here.
"""

from __future__ import annotations

import copy
import json
from fractions import Fraction
from pathlib import Path

import pytest

import flopsreg
from flopsreg.engine.media import tower_flops, tower_kinds
from flopsreg.patterns.hf._qwen2_5_omni_audio import MAX_SAMPLES, SAMPLING_RATE, WRAPPER_TOKENS

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_omni25.json").read_text())
MEASURED = RECORD["models"]["qwen2_5_omni_thinker"]
WHOLE = RECORD["models"]["qwen2_5_omni"]
THINKER = MEASURED["config"]
AUDIO = THINKER["audio_config"]
CLIPS = sorted(MEASURED["audio"])
IMAGES = sorted(MEASURED["images"])
VIDEOS = sorted(MEASURED["videos"]["cases"])


def _model(config: dict | None = None) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(THINKER if config is None else config)


def _seconds(case: str) -> Fraction:
    """The clip as the tiny extractor kept it (its n_samples is 3 s; the published one's 300 s)."""
    return Fraction(min(MEASURED["audio"][case]["samples"], MEASURED["n_samples"]), SAMPLING_RATE)


def _windows(frames: int, n_window: int) -> list[int]:
    """The positions of each attention window, from Qwen2_5OmniAudioEncoder's definition: frames cut
    into chunks of 2 n_window (the last one shorter), each chunk's stride-2 convolution (padding 1)
    giving (length - 1) // 2 + 1 positions that attend only to each other."""
    chunks = [min(2 * n_window, frames - start) for start in range(0, frames, 2 * n_window)]
    return [(length - 1) // 2 + 1 for length in chunks]


def _brute_force_pairs(frames: int, n_window: int) -> int:
    """Every (query, key) pair of positions in the same window: the block-diagonal mask cu_seqlens builds."""
    owner = [window for window, size in enumerate(_windows(frames, n_window)) for _ in range(size)]
    return sum(1 for q in owner for k in owner if q == k)


def test_the_record_names_its_versions_and_every_case_ran():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert MEASURED["class"] == "Qwen2_5OmniThinkerForConditionalGeneration"
    assert CLIPS == ["0.05s", "1.001s", "1.23s", "1s", "3.5s"] and IMAGES == ["300x500", "64x100"] and len(VIDEOS) == 2


def test_the_thinker_and_its_towers_hold_transformers_parameters(registry):
    model = _model()
    assert registry.parameters(model).total == MEASURED["parameters"]
    assert model.towers["vision"].parameters == MEASURED["visual_parameters"]
    assert model.towers["audio"].parameters == MEASURED["audio_parameters"]
    assert model.towers["vision"].kind == "qwen2_5_vl_vision" and model.towers["audio"].kind == "qwen2_5_omni_audio"


@pytest.mark.parametrize("entry", ["qwen2_5_omni", "qwen2_5_omni_without_audio_output"])
def test_the_whole_model_holds_transformers_parameters_with_and_without_audio_output(registry, entry):
    """Qwen2_5OmniForConditionalGeneration: the thinker, and the talker and token2wav only when
    enable_audio_output (their FLOPs are not counted: spoken output)."""
    measured = RECORD["models"][entry]
    model = _model(measured["config"])
    counts = registry.parameters(model)
    assert counts.total == measured["parameters"]
    parts = {part: tower.parameters for part, tower in model.towers.items()}
    assert parts == {"vision": measured["parts"]["visual"], "audio": measured["parts"]["audio_tower"],
                     **{part: measured["parts"][part] for part in ("talker", "token2wav") if part in measured["parts"]}}
    assert counts.total - sum(parts.values()) + parts["vision"] + parts["audio"] == measured["parts"]["thinker"]
    data = counts.to_dict()
    assert data["flops_counted"] == ["language_model"] and not any(tower["flops_counted"] for tower in data["towers"].values())


@pytest.mark.parametrize("model_type", ["qwen2_5_omni", "qwen2_5_omni_thinker"])
def test_the_class_default_configs_hold_transformers_parameters(registry, model_type):
    """tests/data/hf/qwen2-5-omni[-thinker]-defaults.json are the recorded class-default configs."""
    measured = RECORD["defaults"][model_type]
    saved = json.loads((Path(__file__).parents[1] / "data" / "hf" / f"{model_type.replace('_', '-')}-defaults.json").read_text())
    assert saved == measured["config"]
    model = _model(saved)
    assert registry.parameters(model).total == measured["parameters"]
    if model_type == "qwen2_5_omni":
        assert {part: tower.parameters for part, tower in model.towers.items()} == {
            "vision": measured["parts"]["visual"], "audio": measured["parts"]["audio_tower"],
            "talker": measured["parts"]["talker"], "token2wav": measured["parts"]["token2wav"]}


def test_the_wrapper_and_its_thinker_count_the_same_flops(registry):
    whole, thinker = _model(WHOLE["config"]), _model()
    for kwargs in ({}, {"audio": [1]}, {"images": [(300, 500)]}, {"videos": [(4, 120, 160)]}):
        assert registry.evaluate(whole, seq_len=9, **kwargs).forward == registry.evaluate(thinker, seq_len=9, **kwargs).forward
    assert "hf_qwen2_5_omni" in whole.flags and "hf_qwen2_5_omni_thinker" not in whole.flags


def test_the_thinkers_own_tie_word_embeddings_ties_the_head(registry):
    """Qwen2_5OmniThinkerForConditionalGeneration reads its own tie_word_embeddings (default false),
    not its text_config's (default true): recorded untied with a text_config false, the head is
    hidden x vocab more than a tied one."""
    text = THINKER["text_config"]
    tied = registry.parameters(_model({**THINKER, "tie_word_embeddings": True})).total
    untied = registry.parameters(_model({**THINKER, "text_config": {**text, "tie_word_embeddings": True}})).total
    assert untied == MEASURED["parameters"] == tied + text["hidden_size"] * text["vocab_size"]


@pytest.mark.parametrize("case", CLIPS)
def test_the_audio_tokens_and_frames_are_the_processors(registry, case):
    measured = MEASURED["audio"][case]
    result = registry.evaluate(_model(), seq_len=MEASURED["text_tokens"], audio=[_seconds(case)])
    (plan,) = result.audio.plans
    assert plan.tokens == measured["audio_tokens"] + WRAPPER_TOKENS == measured["num_audio_tokens"] + WRAPPER_TOKENS
    assert plan.grid == (1, measured["real_mel_frames"], AUDIO["num_mel_bins"])
    assert result.seqlens == (measured["sequence_length"],)
    assert measured["mel_frames"] == MEASURED["n_samples"] // 160  # the extractor pads every clip to n_samples


@pytest.mark.parametrize("case", CLIPS)
def test_the_windows_are_the_encoders(case):
    measured = MEASURED["audio"][case]
    windows = _windows(measured["real_mel_frames"], AUDIO["n_window"])
    assert measured["attention"]["windows"] == windows and measured["attention"]["frames"] == sum(windows)
    assert measured["attention"]["pairs"] == _brute_force_pairs(measured["real_mel_frames"], AUDIO["n_window"])


@pytest.mark.parametrize("n_window", [1, 2, 3, 5])
def test_the_attention_closed_form_is_the_window_masks_pairs(registry, n_window):
    """For every frame count up to 60: the closed form's attention is 4h x layers x the pairs a
    brute-force enumeration of the block-diagonal mask allows."""
    model = _model({**THINKER, "audio_config": {**AUDIO, "n_window": n_window}})
    kind, dims = tower_kinds(model, registry.hf_readers)["audio"], model.towers["audio"].dims
    width = 4 * AUDIO["d_model"] * AUDIO["encoder_layers"]
    for frames in range(1, 61):
        flops = tower_flops(kind, dims, [(1, frames, AUDIO["num_mel_bins"])])
        assert flops["layers.attention"] == width * _brute_force_pairs(frames, n_window), frames


@pytest.mark.parametrize("case", CLIPS)
def test_the_audio_tower_equals_flop_counter_mode_with_the_window_padding_apart(registry, case):
    """The encoder pads its windows to the longest (2 n_window frames, or the clip's when shorter)
    for conv1 and conv2; every other piece runs over the real positions only."""
    measured, pieces = MEASURED["audio"][case], MEASURED["audio"][case]["pieces"]
    exact = registry.audio(_model(), audio=[_seconds(case)]).flops
    frames, window, h, mel = measured["real_mel_frames"], 2 * AUDIO["n_window"], AUDIO["d_model"], AUDIO["num_mel_bins"]
    chunks, longest = -(-frames // window), min(frames, window)
    assert pieces["conv1"] == 2 * chunks * longest * mel * h * 3 and exact["conv1"] == 2 * frames * mel * h * 3
    assert pieces["conv2"] == 2 * chunks * ((longest - 1) // 2 + 1) * h * h * 3
    assert exact["conv2"] == 2 * measured["attention"]["frames"] * h * h * 3
    padding = pieces["conv1"] + pieces["conv2"] - exact["conv1"] - exact["conv2"]
    assert (padding == 0) == (frames % window == 0 or frames < window)
    layers = range(AUDIO["encoder_layers"])
    projections = ("q_proj", "k_proj", "v_proj", "out_proj")
    assert exact["layers.qkvo"] == sum(pieces[f"layers.{i}.self_attn.{p}"] for i in layers for p in projections)
    assert exact["layers.attention"] == sum(
        pieces[f"layers.{i}.self_attn"] - sum(pieces[f"layers.{i}.self_attn.{p}"] for p in projections) for i in layers)
    assert exact["layers.mlp"] == sum(pieces[f"layers.{i}.fc1"] + pieces[f"layers.{i}.fc2"] for i in layers)
    assert exact["proj"] == pieces["proj"]
    assert sum(exact.values()) + padding == measured["audio_tower"]


@pytest.mark.parametrize("case", CLIPS)
def test_the_whole_forward_with_audio_equals_flop_counter_mode(registry, eager_registry, case):
    """The language model under the eager convention over the text and audio tokens (as
    FlopCounterMode sees it: the same as the text alone of that length), beside the tower."""
    measured = MEASURED["audio"][case]
    result = registry.evaluate(_model(), seq_len=MEASURED["text_tokens"], audio=[_seconds(case)])
    language_model = eager_registry.evaluate(_model(), seq_len=result.seqlens[0], convention="eager").forward
    assert language_model == measured["rest"] == measured["text_only_forward"]
    assert result.forward == registry.evaluate(_model(), seq_len=result.seqlens[0]).forward + result.audio.tower


@pytest.mark.parametrize("case", IMAGES)
def test_images_equal_the_recorded_run(registry, eager_registry, case):
    measured = MEASURED["images"][case]
    result = registry.evaluate(_model(), seq_len=MEASURED["text_tokens"], images=[tuple(measured["image"])])
    (plan,) = result.images.plans
    assert [list(plan.grid)] == measured["image_grid_thw"] and plan.tokens == measured["image_tokens"] + 2
    assert result.images.tower == measured["visual"] and result.seqlens == (measured["sequence_length"],)
    assert eager_registry.evaluate(_model(), seq_len=result.seqlens[0], convention="eager").forward == measured["rest"]


@pytest.mark.parametrize("case", VIDEOS)
def test_videos_equal_the_recorded_run(registry, case):
    """Qwen2VLVideoProcessor with Qwen2_5OmniProcessor's size bounds: Qwen2.5-VL's video rule."""
    measured = MEASURED["videos"]["cases"][case]
    assert MEASURED["videos"]["pixels"] == {"shortest_edge": 128 * 28 * 28, "longest_edge": 768 * 28 * 28}
    videos = registry.videos(_model(), videos=[tuple(measured["video"])])
    assert [list(videos.plans[0].grid)] == measured["video_grid_thw"] and videos.tower == measured["visual"]
    assert videos.tokens == measured["video_tokens"] + 2


@pytest.mark.parametrize("case", VIDEOS)
def test_a_videos_own_audio_interleaved_is_the_video_and_the_clip_given_apart(registry, case):
    """Qwen2_5OmniProcessor's placeholder of a video with its audio (load_audio_from_video): the
    video's tokens and the clip's, between <|audio_bos|> and <|audio_eos|>; inside the template's
    <|vision_bos|> ... <|vision_eos|> it is as long as the video and the clip given apart."""
    measured = MEASURED["videos"]["cases"][case]
    interleaved, pieces = measured["with_its_audio"], measured["with_its_audio"]["pieces"]
    video = registry.videos(_model(), videos=[tuple(measured["video"])])
    clip = registry.audio(_model(), audio=[Fraction(interleaved["seconds"])])
    assert clip.plans[0].samples == interleaved["samples"]
    assert pieces["<video>"] == measured["video_tokens"] and pieces["<audio>"] == clip.tokens - WRAPPER_TOKENS
    assert pieces["<audio_bos>"] == pieces["<audio_eos>"] == 1
    assert sum(pieces.values()) + 2 == video.tokens + clip.tokens


def test_a_videos_own_audio_is_an_ordinary_clip(registry):
    """use_audio_in_video interleaves the clip's tokens with the video's: the same tokens, and a
    causal language model's FLOPs depend on the length alone."""
    model = _model()
    both = registry.evaluate(model, seq_len=9, videos=[(4, 120, 160)], audio=[4])
    video, clip = registry.videos(model, videos=[(4, 120, 160)]), registry.audio(model, audio=[4])
    assert both.seqlens == (9 + video.tokens + clip.tokens,)
    assert both.forward == registry.evaluate(model, seq_len=both.seqlens[0]).forward + video.tower + clip.tower


def test_a_clip_past_300_seconds_is_truncated_as_the_extractor_does(registry):
    model = _model()
    longest = registry.audio(model, audio=[300]).plans[0]
    assert registry.audio(model, audio=[301]).plans[0] == longest and longest.samples == MAX_SAMPLES == 300 * SAMPLING_RATE
    assert longest.grid[1] == 30_000 and longest.tokens == 7500 + WRAPPER_TOKENS


@pytest.mark.parametrize(("given", "message"), [
    ({"audio": ["0.02"]}, r"^audio\[0\] = '0.02': a clip of 320 samples has 2 mel frames: the processor gives it no audio token"),
    ({"audio_tokens": [25]}, r"^audio_tokens: Qwen2.5-Omni audio encoder needs each audio clip's length in seconds \(give audio=\): "
                             r"n tokens come from 4n - 1 to 4n \+ 2 mel frames"),
])
def test_bad_audio_gets_one_line(registry, given, message):
    with pytest.raises(flopsreg.FlopsregError, match=message):
        registry.evaluate(_model(), seq_len=7, **given)


def test_every_other_convention_refuses_the_audio_tower_by_name(registry):
    refused = []
    for convention in registry.conventions:
        if convention == "exact":
            continue
        message = rf"^audio: convention '{convention}' has no term for the audio tower \(Qwen2.5-Omni audio encoder\)"
        with pytest.raises(flopsreg.FlopsregError, match=message):
            registry.audio(_model(), audio=[1], convention=convention)
        refused.append(convention)
    assert {"megatron", "vllm", "hf_trainer", "verl", "torchtitan"} <= set(refused)


def test_an_image_refusal_suggests_no_convention_that_refuses_the_model(registry):
    """Qwen2.5-VL's ViT rule has a verl term, but verl has no estimator for qwen2_5_omni: the refusal
    of images under another convention suggests the exact one alone (Qwen2.5-VL's suggests verl too)."""
    image = {"images": [(720, 1280)], "convention": "megatron"}
    with pytest.raises(flopsreg.FlopsregError, match=r"count images with the exact convention$"):
        registry.images(_model(), **image)
    qwen2_5_vl = flopsreg.Model.from_hf_config(Path(__file__).parents[1] / "data" / "hf" / "qwen2-5-vl-defaults.json")
    with pytest.raises(flopsreg.FlopsregError, match=r"count images with the exact convention or verl$"):
        registry.images(qwen2_5_vl, **image)


@pytest.mark.parametrize(("key", "change", "message"), [
    ("thinker_config", {"model_type": "qwen2_5_vl"},
     r"^config.json: thinker_config.model_type = 'qwen2_5_vl': unsupported for model_type qwen2_5_omni \(expected 'qwen2_5_omni_thinker'\)$"),
    ("thinker_config", [1], r"^config.json: thinker_config = \[1\]: expected an object$"),
    ("enable_audio_output", "yes", r"^config.json: enable_audio_output = 'yes': expected true or false$"),
    ("token2wav_config", {"bigvgan_config": {"upsample_rates": [5, 3, 2]}},
     r"^config.json: token2wav_config.bigvgan_config.upsample_rates = \[5, 3, 2\]: unsupported for model_type qwen2_5_omni's "
     r"token2wav tower \(flopsreg counts \[5, 3, 2, 2, 2, 2\], Qwen2.5-Omni token2wav\)$"),
])
def test_a_bad_wrapper_config_gets_one_line(key, change, message):
    config = copy.deepcopy(WHOLE["config"])
    config[key] = {**config[key], **change} if isinstance(change, dict) else change
    with pytest.raises(flopsreg.FlopsregError, match=message):
        _model(config)


def test_the_thinkers_errors_name_where_it_sits():
    config = copy.deepcopy(WHOLE["config"])
    config["thinker_config"]["text_config"]["num_hidden_layers"] = "two"
    with pytest.raises(flopsreg.FlopsregError, match=r"^config.json: thinker_config: text_config.num_hidden_layers = 'two'"):
        _model(config)


def test_the_other_omni_types_are_still_refused_as_not_causal_language_models():
    with pytest.raises(flopsreg.FlopsregError, match=r"model_type = 'qwen2_5_omni_talker': unsupported: not a causal language model"):
        flopsreg.Model.from_hf_config({"model_type": "qwen2_5_omni_talker"})
