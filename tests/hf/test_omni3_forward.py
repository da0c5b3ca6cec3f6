"""Qwen3-Omni-MoE (``qwen3_omni_moe`` and its ``qwen3_omni_moe_thinker``) against real forward passes:
tests/data/hf_forward/measure_omni3.py ran a tiny Qwen3OmniMoeThinkerForConditionalGeneration on
text, on random images and video frames through Qwen2VLImageProcessorPil / Qwen2VLVideoProcessor and
on synthetic waveforms through WhisperFeatureExtractor, with Qwen3OmniMoeProcessor's own placeholder
expansion, under FlopCounterMode, and built the thinker's class defaults, the whole tiny model and the
published Qwen3-Omni-30B-A3B-Instruct thinker on the meta device (forward_omni3.json). The audio
encoder pads each clip's last chunk to a full one before its convolutions: that work is reconciled
here apart, piece by piece.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import attrs
import pytest

import flopsreg
from flopsreg.engine.media import tower_flops, tower_kinds
from flopsreg.patterns.hf._qwen3_omni_audio import HOP, SAMPLING_RATE, WRAPPER_TOKENS

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_omni3.json").read_text())
THINKER = RECORD["models"]["qwen3_omni_moe_thinker"]
AUDIO = THINKER["config"]["audio_config"]
CASES = sorted(THINKER["cases"])
CONV = ("conv.conv2d1", "conv.conv2d2", "conv.conv2d3", "conv.conv_out")


def _thinker(**audio) -> flopsreg.Model:
    config = THINKER["config"]
    return flopsreg.Model.from_hf_config({**config, "audio_config": {**AUDIO, **audio}})


def _omni(**top) -> flopsreg.Model:
    """The whole Qwen3OmniMoeConfig around the tiny thinker."""
    return flopsreg.Model.from_hf_config({"model_type": "qwen3_omni_moe", "thinker_config": THINKER["config"], **top})


def _media(case: str) -> dict:
    media = THINKER["cases"][case]["media"]
    given = {key: [tuple(item) for item in media[key]] for key in ("images", "videos") if key in media}
    if "audio" in media:
        given["audio"] = [Fraction(samples, SAMPLING_RATE) for samples in media["audio"]]
    return given


def _feat_extract_output_lengths(input_lengths, n_window=50):
    """transformers 5.24.0 models/qwen3_omni_moe/processing_qwen3_omni_moe.py, verbatim: the
    processor's audio token count (an oracle)."""
    chunk_len = n_window * 2
    input_lengths_leave = input_lengths % chunk_len
    feat_lengths = (input_lengths_leave - 1) // 2 + 1
    return ((feat_lengths - 1) // 2 + 1 - 1) // 2 + 1 + (input_lengths // chunk_len) * 13


def _windows(frames: list[int], n_window: int, n_window_infer: int) -> list[int]:
    """The attention windows of a batch of clips, in tokens, as Qwen3OmniMoeAudioEncoder builds
    cu_seqlens (chunk_and_pad_features, get_audio_cu_seqlens): every clip cut into chunks of
    2 n_window frames, each chunk's tokens through three stride-2 convolutions, a window of the
    longest chunk's tokens x n_window_infer // (2 n_window) tokens."""
    def tokens(length: int) -> int:
        for _ in range(3):
            length = (length - 1) // 2 + 1
        return length
    chunk = 2 * n_window
    chunks = [[chunk] * (n // chunk) + ([n % chunk] if n % chunk else []) for n in frames]
    window = max(tokens(length) for lengths in chunks for length in lengths) * (n_window_infer // chunk)
    out = []
    for lengths in chunks:
        clip = sum(tokens(length) for length in lengths)
        out += [window] * (clip // window) + ([clip % window] if clip % window else [])
    return out


def _pairs(windows: list[int]) -> int:
    """Every (query, key) pair the block-diagonal mask of *windows* allows, one by one."""
    starts = [sum(windows[:k]) for k in range(len(windows))]
    total = sum(windows)
    block = [next(k for k in range(len(windows)) if starts[k] <= q < starts[k] + windows[k]) for q in range(total)]
    return sum(1 for q in range(total) for k in range(total) if block[q] == block[k])


def test_the_record_names_its_versions_and_every_case_ran():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert THINKER["class"] == "Qwen3OmniMoeThinkerForConditionalGeneration" and len(CASES) == 11


def test_the_thinker_and_its_towers_hold_transformers_parameters(registry):
    model = _thinker()
    assert registry.parameters(model).total == THINKER["parameters"]
    assert model.towers["vision"].parameters == THINKER["visual_parameters"]
    assert model.towers["audio"].parameters == THINKER["audio_parameters"]


def test_the_thinkers_class_defaults_hold_transformers_parameters(registry):
    defaults = RECORD["defaults"]["qwen3_omni_moe_thinker"]
    model = flopsreg.Model.from_hf_config(defaults["config"])
    assert registry.parameters(model).total == defaults["parameters"] == 18_418_329_704
    assert (model.towers["vision"].parameters, model.towers["audio"].parameters) == (defaults["visual_parameters"], defaults["audio_parameters"])


def test_the_whole_class_defaults_with_the_keys_they_lack_hold_transformers_parameters(registry):
    """tests/data/hf/qwen3-omni-moe-defaults.json: Qwen3OmniMoeConfig() does not build (its talker reads
    shared_expert_intermediate_size, which its text config class does not declare); with it and
    spatial_merge_size added, transformers' total."""
    built = RECORD["built_defaults"]["qwen3_omni_moe"]
    assert "shared_expert_intermediate_size" in built["plain_defaults_error"]
    model = flopsreg.Model.from_hf_config(Path(__file__).parents[1] / "data" / "hf" / "qwen3-omni-moe-defaults.json")
    assert attrs.evolve(model, source="") == flopsreg.Model.from_hf_config(built["config"])
    assert registry.parameters(model).total == built["parameters"] == 21_978_863_145
    assert (model.towers["talker"].parameters, model.towers["code2wav"].parameters) == (
        built["talker_parameters"], built["code2wav_parameters"])


def test_the_published_thinker_holds_transformers_parameters(registry):
    """Qwen3-Omni-30B-A3B-Instruct's thinker: 31,719,205,488 parameters, as transformers builds it."""
    published = RECORD["published"]["qwen3-omni-30b-a3b-instruct"]
    model = _omni(thinker_config=published["thinker_config"], enable_audio_output=False)
    assert registry.parameters(model).total == published["parameters"] == 31_719_205_488
    assert model.towers["audio"].parameters == published["audio_parameters"]


WHOLE = THINKER["whole"]


def test_the_whole_wrapper_holds_transformers_parameters_talker_and_code2wav_included(registry):
    """The config.json transformers writes for the whole tiny model (the talker's experts saved as
    num_local_experts), and the same config as written by hand (num_experts): both its total."""
    by_switch = WHOLE["parameters_by_enable_audio_output"]
    for config in (WHOLE["saved_config"], {"model_type": "qwen3_omni_moe", "thinker_config": THINKER["config"],
                                           "talker_config": WHOLE["talker_config"], "code2wav_config": WHOLE["code2wav_config"]}):
        model = flopsreg.Model.from_hf_config(config)
        assert registry.parameters(model).total == by_switch["true"]
        assert {part: model.towers[part].parameters for part in WHOLE["parts"]} == WHOLE["parts"]


def test_without_audio_output_the_whole_wrapper_is_its_thinker(registry):
    by_switch = WHOLE["parameters_by_enable_audio_output"]
    model = flopsreg.Model.from_hf_config({**WHOLE["saved_config"], "enable_audio_output": False})
    assert registry.parameters(model).total == by_switch["false"] == THINKER["parameters"]
    assert model.towers.keys() == {"vision", "audio"}


def test_the_talker_and_code2wav_add_no_flops(registry):
    """Text output: the thinker's forward, whatever the wrapper builds to speak."""
    whole = flopsreg.Model.from_hf_config(WHOLE["saved_config"])
    for media in ({}, {"images": [(300, 500)], "audio": ["3.3"]}):
        assert registry.evaluate(whole, seq_len=50, **media).forward == registry.evaluate(_thinker(), seq_len=50, **media).forward


def test_the_published_whole_model_holds_transformers_parameters(registry):
    """Qwen3-Omni-30B-A3B-Instruct whole: 35,259,818,545 parameters (thinker, talker, code2wav)."""
    published = RECORD["published"]["qwen3-omni-30b-a3b-instruct"]
    model = _omni(thinker_config=published["thinker_config"], talker_config=published["talker_config"],
                  code2wav_config=published["code2wav_config"])
    assert registry.parameters(model).total == published["whole_parameters"] == 35_259_818_545
    assert (model.towers["talker"].parameters, model.towers["code2wav"].parameters) == (
        published["talker_parameters"], published["code2wav_parameters"])


@pytest.mark.parametrize(("change", "message"), [
    ({"enable_audio_output": "yes"}, r"enable_audio_output = 'yes': expected true or false"),
    ({"code2wav_config": {**WHOLE["code2wav_config"], "upsample_rates": [8, 5, 4]}},
     r"code2wav_config\.upsample_rates = \[8, 5, 4\]: unsupported for model_type qwen3_omni_moe's code2wav tower "
     r"\(flopsreg counts \[8, 5, 4, 3\], Qwen3-Omni code2wav\)"),
])
def test_a_speech_config_flopsreg_does_not_count_is_one_line(change, message):
    with pytest.raises(flopsreg.FlopsregError, match=message):
        flopsreg.Model.from_hf_config({**WHOLE["saved_config"], **change})


@pytest.mark.parametrize("case", CASES)
def test_the_grids_and_token_counts_are_the_processors(registry, case):
    """Each medium's grid and tokens (the processor's placeholders + 2 wrapper tokens) and the sequence."""
    measured = THINKER["cases"][case]
    result = registry.evaluate(_thinker(), seq_len=THINKER["text_tokens"], **_media(case))
    assert result.seqlens == (measured["sequence_length"],)
    if "images" in measured["media"]:
        assert [list(plan.grid) for plan in result.images.plans] == measured["image_grid_thw"]
        assert [plan.tokens - 2 for plan in result.images.plans] == measured["image_tokens"]
    if "videos" in measured["media"]:
        assert [list(plan.grid) for plan in result.videos.plans] == measured["video_grid_thw"]
        assert [plan.tokens - 2 for plan in result.videos.plans] == measured["video_tokens"]
    if "audio" in measured["media"]:
        plans = result.audio.plans
        assert [plan.grid for plan in plans] == [(1, frames, AUDIO["num_mel_bins"]) for frames in measured["mel_frames"]]
        assert [plan.tokens - WRAPPER_TOKENS for plan in plans] == measured["audio_tokens"] == measured["processor_num_tokens"]
        assert measured["processor_count_from_samples"] == measured["audio_tokens"]
        assert measured["mel_frames"] == [samples // HOP for samples in measured["samples"]]


@pytest.mark.parametrize("case", [case for case in CASES if "audio" in THINKER["cases"][case]["media"]])
def test_the_audio_windows_are_the_encoders_cu_seqlens(registry, case):
    measured = THINKER["cases"][case]
    cu = measured["cu_seqlens"]
    windows = [b - a for a, b in zip(cu, cu[1:])]
    assert windows == _windows(measured["mel_frames"], AUDIO["n_window"], AUDIO["n_window_infer"])
    attention = registry.audio(_thinker(), audio=_media(case)["audio"]).flops["blocks.attention"]
    assert attention == AUDIO["encoder_layers"] * 4 * AUDIO["d_model"] * _pairs(windows)


@pytest.mark.parametrize("frames", [1, 7, 8, 9, 99, 100, 101, 199, 200, 207, 208, 209, 333, 416, 417])
def test_the_window_pairs_equal_the_brute_force_mask(registry, frames):
    """A clip alone: the closed form's pairs equal every pair the block-diagonal mask allows."""
    clip = Fraction(frames * HOP, SAMPLING_RATE)
    attention = registry.audio(_thinker(), audio=[clip]).flops["blocks.attention"]
    pairs = _pairs(_windows([frames], AUDIO["n_window"], AUDIO["n_window_infer"]))
    assert attention == AUDIO["encoder_layers"] * 4 * AUDIO["d_model"] * pairs


def test_the_tokens_equal_the_processors_formula_for_every_length(registry):
    model = _thinker()
    for frames in range(1, 1201, 7):
        (plan,) = registry.audio(model, audio=[Fraction(frames * HOP, SAMPLING_RATE)]).plans
        assert plan.tokens == _feat_extract_output_lengths(frames) + WRAPPER_TOKENS, frames


@pytest.mark.parametrize("case", CASES)
def test_the_towers_equal_flop_counter_mode_with_the_chunk_padding_apart(registry, case):
    """The ViT to the FLOP; the audio encoder's blocks and projections at the real frames, its
    convolutions and conv_out as the kernel ran them over the chunks padded to the longest one."""
    measured = THINKER["cases"][case]
    model = _thinker()
    media = _media(case)
    vision = sum(getattr(registry, kind)(model, **{kind: media[kind]}).forward for kind in ("images", "videos") if kind in media)
    assert vision == measured["visual"]
    if "audio" not in media:
        assert measured["audio_tower"] == 0
        return
    exact = registry.audio(model, audio=media["audio"]).flops
    chunks, _, longest = measured["padded_chunks"]
    kind = tower_kinds(model, registry.hf_readers)["audio"]
    ran = tower_flops(kind, model.towers["audio"].dims, [(1, chunks * longest, AUDIO["num_mel_bins"])])
    pieces = measured["audio_pieces"]
    layers = range(AUDIO["encoder_layers"])
    assert [ran[piece] for piece in CONV] == [pieces[name] for name in ("conv2d1", "conv2d2", "conv2d3", "conv_out")]
    assert exact["blocks.qkv_proj"] == sum(pieces[f"layers.{n}.self_attn.{p}_proj"] for n in layers for p in "qkv") + sum(
        pieces[f"layers.{n}.self_attn.out_proj"] for n in layers)
    assert exact["blocks.mlp"] == sum(pieces[f"layers.{n}.fc{k}"] for n in layers for k in (1, 2))
    assert exact["proj"] == pieces["proj1"] + pieces["proj2"]
    padding = sum(ran[piece] - exact[piece] for piece in CONV)
    assert sum(exact.values()) + padding == measured["audio_tower"]
    # the padding is the last chunk's (and a shorter clip's) frames up to the longest chunk: none without it
    assert (padding == 0) == (chunks * longest == sum(measured["mel_frames"]))


@pytest.mark.parametrize("case", CASES)
def test_the_whole_forward_equals_flop_counter_mode(registry, eager_registry, case):
    """Towers plus the MoE language model over text and media tokens (eager convention), the
    audio encoder's chunk padding apart."""
    measured = THINKER["cases"][case]
    model = _thinker()
    with_media = registry.evaluate(model, seq_len=THINKER["text_tokens"], **_media(case))
    language_model = eager_registry.evaluate(model, seq_len=with_media.seqlens[0], convention="eager").forward
    assert language_model == measured["rest"]
    towers = sum(part.forward for part in (with_media.images, with_media.videos, with_media.audio) if part is not None)
    assert towers <= measured["visual"] + measured["audio_tower"]
    assert towers + language_model == measured["forward"] - (measured["audio_tower"] - (
        registry.audio(model, audio=_media(case)["audio"]).forward if "audio" in measured["media"] else 0))


@pytest.mark.parametrize("convention", ["megatron", "hf_trainer", "vllm", "nanogpt"])
def test_a_convention_without_a_tower_term_refuses_the_media_by_name(registry, convention):
    with pytest.raises(flopsreg.FlopsregError, match=rf"convention '{convention}' has no term for the vision tower \(Qwen3-Omni ViT\)"):
        registry.evaluate(_thinker(), seq_len=9, images=[(100, 100)], convention=convention)
    with pytest.raises(flopsreg.FlopsregError, match=rf"convention '{convention}' has no term for the audio tower \(Qwen3-Omni audio encoder\)"):
        registry.evaluate(_omni(), seq_len=9, audio=["1"], convention=convention)


@pytest.mark.parametrize(("audio", "message"), [
    ({"n_window": 60}, r"n_window = 60: a full chunk gives 15 tokens, but the processor counts 13"),
    ({"n_window_infer": 99}, r"n_window_infer = 99 < 2 x n_window = 100"),
])
def test_an_audio_config_transformers_cannot_run_is_one_line(registry, audio, message):
    with pytest.raises(flopsreg.FlopsregError, match=r"^audio\[0\] = '1': " + message):
        registry.audio(_thinker(**audio), audio=["1"])


def test_a_clip_without_a_frame_is_one_line(registry):
    with pytest.raises(flopsreg.FlopsregError, match=r"^audio\[0\] = '0.005': a clip of 80 samples has no mel frame"):
        registry.audio(_thinker(), audio=["0.005"])


@pytest.mark.parametrize(("change", "message"), [
    ({"thinker_config": {**THINKER["config"], "audio_config": {**AUDIO, "d_model": "wide"}}},
     r"thinker_config: audio_config\.d_model = 'wide': expected an integer >= 0"),
    ({"thinker_config": {**THINKER["config"], "text_config": {**THINKER["config"]["text_config"], "model_type": "qwen3_moe"}}},
     r"thinker_config: text_config\.model_type = 'qwen3_moe': unsupported for model_type qwen3_omni_moe_thinker"),
    ({"thinker_config": {**THINKER["config"], "text_config": {k: v for k, v in THINKER["config"]["text_config"].items()
                                                              if k != "num_experts_per_tok"}}},
     r"thinker_config: text_config\.num_experts_per_tok: missing"),
    ({"thinker_config": "none"}, r"thinker_config = 'none': expected an object"),
    ({"thinker_config": {**THINKER["config"], "tie_word_embeddings": "no"}}, r"thinker_config: tie_word_embeddings = 'no'"),
])
def test_a_bad_nested_field_is_named_by_its_path(change, message):
    with pytest.raises(flopsreg.FlopsregError, match=message):
        _omni(**change)


def test_the_omni_types_are_read_and_their_parts_still_refused():
    """qwen3_omni_moe and its thinker are read (outside MODEL_FOR_CAUSAL_LM_MAPPING, as qwen3_vl_moe);
    a config of the talker's decoder alone is still not a causal language model."""
    assert _omni().towers.keys() == {"vision", "audio", "talker", "code2wav"} and _thinker().towers.keys() == {"vision", "audio"}
    with pytest.raises(flopsreg.FlopsregError, match="qwen3_omni_moe_talker_text'?: unsupported: not a causal language model"):
        flopsreg.Model.from_hf_config({"model_type": "qwen3_omni_moe_talker_text"})


# The worked example of docs/multimodal.md ("Qwen3-Omni"): the published Qwen3-Omni-30B-A3B-Instruct,
# a 1280 x 720 image and a 10 s clip before 100 text tokens.
def test_the_worked_example_of_the_docs(registry):
    published = RECORD["published"]["qwen3-omni-30b-a3b-instruct"]
    model = _omni(thinker_config=published["thinker_config"], talker_config=published["talker_config"],
                  code2wav_config=published["code2wav_config"])
    image = registry.images(model, images=[(720, 1280)])
    (plan,) = image.plans
    assert (plan.resized, plan.grid, plan.tokens) == ((704, 1280), (1, 44, 80), 882)
    patches, wide = 44 * 80, 1152 * 4
    assert dict(image.flops) == {
        "patch_embed": 2 * patches * 1152 * 3 * 2 * 16**2,
        "blocks.qkv_proj": 27 * 2 * patches * 4 * 1152**2,
        "blocks.attention": 4 * 1152 * 27 * patches**2,
        "blocks.mlp": 27 * 2 * patches * 2 * 1152 * 4304,
        "merger": 4 * 2 * (patches // 4) * (wide**2 + wide * 2048),
    }
    assert image.forward == 4_663_879_925_760
    audio = registry.audio(model, audio=["10"])
    (clip,) = audio.plans
    assert (clip.samples, clip.grid, clip.tokens) == (160_000, (1, 1000, 128), 132)
    pairs = _pairs(_windows([1000], 50, 800))
    assert pairs == 104**2 + 26**2 == 11_492
    assert dict(audio.flops) == {
        "conv.conv2d1": 2 * 500 * 64 * 480 * 9,
        "conv.conv2d2": 2 * 250 * 32 * 480 * 9 * 480,
        "conv.conv2d3": 2 * 130 * 16 * 480 * 9 * 480,
        "conv.conv_out": 2 * 130 * 7680 * 1280,
        "blocks.qkv_proj": 32 * 2 * 130 * 4 * 1280**2,
        "blocks.attention": 32 * 4 * 1280 * pairs,
        "blocks.mlp": 32 * 2 * 130 * 2 * 1280 * 5120,
        "proj": 2 * 130 * (1280**2 + 1280 * 2048),
    }
    assert audio.forward == 211_204_423_680
    result = registry.evaluate(model, seq_len=100, images=[(720, 1280)], audio=["10"])
    assert result.seqlens == (1114,)
    assert result.forward - image.forward - audio.forward == registry.evaluate(model, seq_len=1114).forward == 7_265_813_004_288
    assert result.forward == 12_140_897_353_728
    assert registry.parameters(model).total - published["parameters"] == 3_540_613_057


@pytest.mark.parametrize("tie", THINKER["ties"])
def test_the_thinkers_tie_word_embeddings_alone_ties_the_head(registry, tie):
    """Qwen3OmniMoeThinkerForConditionalGeneration ties lm_head by the thinker config's own value;
    the wrapper's is not read (transformers' counts with either set)."""
    wrapper = {} if tie["wrapper"] is None else {"tie_word_embeddings": tie["wrapper"]}
    model = _omni(thinker_config={**THINKER["config"], "tie_word_embeddings": tie["thinker"]}, enable_audio_output=False, **wrapper)
    assert registry.parameters(model).total == tie["parameters"]

