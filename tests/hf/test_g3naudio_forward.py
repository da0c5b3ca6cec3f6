"""Gemma 3n's audio tower against real forward passes: tests/data/hf_forward/measure_g3naudio.py ran
a tiny Gemma3nAudioEncoder and its Gemma3nMultimodalEmbedder (odd widths, a chunked mask with keys on
both sides, a reduction of 3) and the class defaults (on a meta device) on random waveforms through
transformers' own Gemma3nAudioFeatureExtractor, under FlopCounterMode, and recorded each piece of
the encoder, the pairs its mask allows and the text Gemma3nProcessor puts in place of a clip
(forward_g3naudio.json). The closed forms count the pairs the mask allows; the kernel's whole
blocks are reconciled here.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

import flopsreg
from flopsreg.cli import main
from flopsreg.engine.images import tower_flops, tower_kinds
from flopsreg.patterns.hf._gemma3n_audio import SAMPLING_RATE, WRAPPER_TOKENS

DATA = Path(__file__).parents[1] / "data" / "hf_forward"
RECORD = json.loads((DATA / "forward_g3naudio.json").read_text())
TINY, DEFAULT = RECORD["models"]["tiny"], RECORD["models"]["default"]
AUDIO = TINY["config"]["audio_config"]
# a gemma3n config: Gemma3nTextConfig's defaults as its text_config (vision and audio configs left out)
BASE = json.loads((DATA.parent / "hf" / "gemma-3n-e4b-defaults.json").read_text())
CASES = sorted(TINY["cases"])
RUN = [case for case in CASES if case != "31s"]  # a 31 s clip gives the tiny encoder 250 tokens: more than 188


def _config(audio: dict, text_hidden: int) -> dict:
    return {**BASE, "text_config": {**BASE["text_config"], "hidden_size": text_hidden}, "audio_config": audio}


def _model(audio: dict | None = None) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(_config(AUDIO if audio is None else audio, TINY["config"]["text_config"]["hidden_size"]))


def _seconds(samples: int) -> Fraction:
    return Fraction(samples, SAMPLING_RATE)


def _brute_force_pairs(n: int, left: int, right: int) -> int:
    """The (query, key) pairs of Gemma3nAudioAttention's mask over n real frames, from its
    definition: keys from left - 1 back to right ahead of the query, its own included."""
    return sum(1 for q in range(n) for k in range(n) if -max(0, left - 1) <= k - q <= right)


def test_the_record_names_its_versions():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13") and RECORD["sampling_rate"] == SAMPLING_RATE
    assert TINY["classes"] == DEFAULT["classes"] == ["Gemma3nAudioEncoder", "Gemma3nMultimodalEmbedder"]


def test_the_towers_hold_transformers_parameters():
    model = _model()
    assert model.towers["audio"].parameters == TINY["audio_parameters"]
    assert model.towers["audio_embedder"].parameters == TINY["embedder_parameters"]


def test_every_clip_is_the_processors_fixed_text():
    """Gemma3nProcessor replaces a clip by "\\n\\n<boa>", 188 audio tokens, "<eoa>\\n\\n" whatever its length."""
    assert RECORD["processor_text"] == "\n\n<boa>" + "<audio>" * 188 + "<eoa>\n\n" and WRAPPER_TOKENS == 4


@pytest.mark.parametrize("case", RUN)
def test_the_frames_and_tokens_are_the_extractors_and_processors(registry, case):
    measured = TINY["cases"][case]
    result = registry.evaluate(_model(), seq_len=7, audio=[_seconds(measured["samples"])])
    (plan,) = result.audio.plans
    assert plan.grid == (1, measured["mel_frames"], AUDIO["input_feat_size"]) and measured["real_mel_frames"] == measured["mel_frames"]
    assert plan.tokens == 188 + WRAPPER_TOKENS and result.seqlens == (7 + 188 + WRAPPER_TOKENS,)
    assert measured["real_output_tokens"] == measured["output_tokens"] <= 188


def test_a_clip_the_encoder_gives_more_than_188_tokens_is_refused(registry):
    """The tiny encoder keeps one frame in 3: 30 s (the extractor truncates 31 s) gives 250 tokens,
    which transformers cannot pad to 188; the class default keeps one in 4: 188 tokens."""
    assert TINY["cases"]["31s"]["mel_frames"] == 2997 and TINY["cases"]["31s"]["output_tokens"] == 250
    with pytest.raises(flopsreg.FlopsregError, match=r"^audio\[0\] = 31: a clip of 480000 samples \(after truncation\) "
                       r"gives 250 encoder tokens, more than audio_soft_tokens_per_image = 188"):
        registry.audio(_model(), audio=[31])
    default = registry.audio(_model({}), audio=[31])
    assert default.flops["embedder"] == 2 * 188 * 1536 * 44


@pytest.mark.parametrize("case", RUN)
def test_the_pairs_the_mask_allows_are_counted(registry, case):
    measured = TINY["cases"][case]
    n, h, layers = measured["mask"]["real_queries"], AUDIO["hidden_size"], AUDIO["conf_num_hidden_layers"]
    left, right = AUDIO["conf_attention_context_left"], AUDIO["conf_attention_context_right"]
    pairs = _brute_force_pairs(n, left, right)
    assert pairs == measured["mask"]["allowed_real_queries"]
    positions = left - 1 + right + 1
    attention = registry.audio(_model(), audio=[_seconds(measured["samples"])]).flops["blocks.attention"]
    assert attention == layers * (2 * 2 * h * pairs + 2 * h * n * positions)


def _reconcile(registry, model: flopsreg.Model, audio: dict, measured: dict) -> None:
    """Every piece but the attention's matmuls equals FlopCounterMode's; those run over whole blocks:
    chunk queries against chunk + left - 1 + right keys (QK^T and AV) and every block query against
    the relative positions."""
    exact = registry.audio(model, audio=[_seconds(measured["samples"])]).flops
    kind = tower_kinds(model, registry.hf_readers)["audio"]
    assert exact == tower_flops(kind, model.towers["audio"].dims, [(1, measured["mel_frames"], audio.get("input_feat_size", 128))])
    sub, layers = measured["subsample"], measured["layers"]
    assert (exact["subsample.conv0"], exact["subsample.conv1"], exact["subsample.input_proj"]) == (
        sub["conv_0"], sub["conv_1"], sub["input_proj_linear"])
    assert exact["blocks.feed_forward"] == sum(layer["ffw_layer_start"] + layer["ffw_layer_end"] for layer in layers)
    projections = ("q_proj", "k_proj", "v_proj", "post")
    assert exact["blocks.qkv_post"] == sum(layer[f"attention.{p}"] for layer in layers for p in projections)
    assert exact["blocks.pos_proj"] == sum(layer["attention.pos_proj"] for layer in layers)
    assert exact["blocks.light_conv"] == sum(layer["lconv1d"] for layer in layers)
    assert exact["embedder"] == measured["audio_embedder"]
    h = audio.get("hidden_size", 1536)
    chunk, left, right = audio.get("conf_attention_chunk_size", 12), audio.get("conf_attention_context_left", 13), audio.get("conf_attention_context_right", 0)
    frames = -(-(-(-measured["mel_frames"] // 2)) // 2)
    blocks, context, positions = -(-frames // chunk), chunk + left - 1 + right, left - 1 + right + 1
    kernel = 2 * (2 * blocks * chunk * context * h) + 2 * blocks * chunk * h * positions
    pieces = (*(f"attention.{p}" for p in projections), "attention.pos_proj")
    assert all(layer["attention"] - sum(layer[p] for p in pieces) == kernel for layer in layers)
    whole = measured["audio_encoder"] + measured["audio_embedder"]
    assert sum(exact.values()) - exact["blocks.attention"] + len(layers) * kernel == whole


@pytest.mark.parametrize("case", RUN)
def test_the_tower_equals_flop_counter_mode_with_the_kernels_blocks_apart(registry, case):
    _reconcile(registry, _model(), AUDIO, TINY["cases"][case])


def test_the_class_defaults_equal_flop_counter_mode(registry):
    """The published widths (h 1536, 12 layers, chunk 12, 12 keys back) on a 1 s clip, into a 2048-wide model."""
    model = flopsreg.Model.from_hf_config(_config({}, DEFAULT["config"]["text_config"]["hidden_size"]))
    assert model.towers["audio"].parameters == DEFAULT["audio_parameters"]
    _reconcile(registry, model, {}, DEFAULT["cases"]["1s"])


def test_every_other_convention_refuses_gemma3n_audio_by_name(registry):
    assert len(registry.conventions) >= 10
    for convention in registry.conventions:
        message = rf"^audio: convention '{convention}' has no term for the audio tower \(Gemma 3n USM audio encoder\): count audio with the exact convention$"
        with pytest.raises(flopsreg.FlopsregError, match=message):
            registry.audio(_model(), audio=[1], convention=convention)


def test_a_clip_given_by_its_tokens_is_refused_saying_why(registry):
    with pytest.raises(flopsreg.FlopsregError, match=r"^audio_tokens: Gemma 3n USM audio encoder needs each audio clip's length "
                       r"in seconds \(give audio=\): every clip is 188 tokens whatever its length"):
        registry.audio(_model(), audio_tokens=[192])


def test_a_clip_too_short_for_one_frame_is_refused(registry):
    with pytest.raises(flopsreg.FlopsregError, match=r"a clip of 512 samples has no mel frame"):
        registry.audio(_model(), audio=[Fraction(512, SAMPLING_RATE)])
    assert registry.audio(_model(), audio=[Fraction(513, SAMPLING_RATE)]).plans[0].grid == (1, 1, 20)


def test_the_command_line_takes_audio(tmp_path, capsys, registry):
    path = tmp_path / "gemma3n.json"
    path.write_text(json.dumps(_config(AUDIO, 44)))
    assert main(["eval", str(path), "--seq-len", "7", "--audio", "1", "--format", "json", "--no-cache"]) == 0
    output = json.loads(capsys.readouterr().out)
    expected = registry.evaluate(_model(), seq_len=7, audio=[1])
    assert output["forward_flops"] == str(expected.forward) and output["seqlens"] == [7 + 192]
    assert output["audio"]["clips"] == [{"samples": 16000, "seconds": "1", "grid": [1, 97, 20], "tokens": 192}]
    assert main(["explain", str(path), "--audio", "1", "--no-cache"]) == 0
    assert "audio tower (Gemma 3n USM audio encoder): forward FLOPs of one audio clip's spectrogram" in capsys.readouterr().out


# The worked example of docs/multimodal.md ("Audio", Gemma 3n): the published encoder (the class
# defaults) for a 2.5 s clip into a 2048-wide language model.
def test_the_worked_example_of_the_docs(registry):
    planned = registry.audio(flopsreg.Model.from_hf_config(_config({}, 2048)), audio=["2.5"])
    (plan,) = planned.plans
    assert (plan.samples, plan.grid, plan.tokens) == (40000, (1, 248, 128), 192)
    h = 1536
    assert dict(planned.flops) == {
        "subsample.conv0": 2 * 124 * 64 * 128 * 9,
        "subsample.conv1": 2 * 62 * 32 * 32 * 9 * 128,
        "subsample.input_proj": 2 * 62 * 32 * 32 * h,
        "blocks.feed_forward": 12 * 2 * 2 * 2 * 62 * 4 * h**2,
        "blocks.qkv_post": 12 * 2 * 62 * 4 * h**2,
        "blocks.pos_proj": 12 * 2 * 13 * h**2,
        "blocks.attention": 12 * (4 * h * _brute_force_pairs(62, 13, 0) + 2 * h * 62 * 13),
        "blocks.light_conv": 12 * 2 * 62 * (3 * h**2 + 5 * h),
        "embedder": 2 * 16 * h * 2048,
    }
    assert _brute_force_pairs(62, 13, 0) == 13 * 62 - 78 and planned.tower == 82_035_720_192
