"""Gemma 4 and Phi-4-multimodal with audio against real forward passes: tests/data/hf_forward/
measure_audio.py ran tiny Gemma4ForConditionalGeneration and Phi4MultimodalForCausalLM models on
random waveforms through transformers' own feature extractors and their processors' placeholder
expansion, under FlopCounterMode, and recorded each piece of the audio towers, Gemma 4's blocked
mask and the token counts (forward_audio.json). The towers' closed forms count the real mel frames
and the pairs the mask allows; the kernels' extra work (the frame of Gemma 4's extractor padding,
its attention's whole blocks, the outputs Phi-4's depthwise convolution drops) is reconciled here
piece by piece.
"""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest

import flopsreg
import flopsreg.registry
from flopsreg.cli import main
from flopsreg.engine.media import tower_flops, tower_kinds
from flopsreg.patterns.hf._gemma4_audio import HOP, SAMPLING_RATE, WRAPPER_TOKENS
from flopsreg.plugin import IMAGE_GRID, MediaPlan, MediaRule, TowerKind

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_audio.json").read_text())
MEASURED = RECORD["models"]["gemma4"]
PHI4 = RECORD["models"]["phi4_multimodal"]
PHI4_AUDIO = PHI4["config"]["audio_config"]
AUDIO = MEASURED["config"]["audio_config"]
CASES = sorted(MEASURED["cases"])


def _model(**audio) -> flopsreg.Model:
    config = MEASURED["config"]
    return flopsreg.Model.from_hf_config({**config, "audio_config": {**AUDIO, **audio}})


def _seconds(case: str) -> Fraction:
    return Fraction(MEASURED["cases"][case]["samples"], SAMPLING_RATE)


def _brute_force_pairs(n: int, left: int, right: int) -> int:
    """The (query, key) pairs of Gemma 4's audio mask over n real frames, from its definition
    (sliding_window_mask_function((left - 1, right)): 0 <= q - k < left - 1, or 0 < k - q < right)."""
    return sum(1 for q in range(n) for k in range(n) if 0 <= q - k < left - 1 or 0 < k - q < right)


def test_the_record_names_its_versions_and_every_case_ran():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert CASES == ["1s", "2.49s", "2.5s"] and MEASURED["class"] == "Gemma4ForConditionalGeneration"


def test_the_whole_model_and_its_audio_tower_hold_transformers_parameters(registry):
    model = _model()
    assert registry.parameters(model).total == MEASURED["parameters"]
    assert model.towers["audio"].parameters == MEASURED["audio_parameters"]


@pytest.mark.parametrize("case", CASES)
def test_the_token_counts_and_frames_are_the_processors(registry, case):
    """The soft tokens Gemma4Processor inserts (and its own count from the length), the wrapper
    tokens around them, and the real mel frames of the extractor's mask."""
    measured = MEASURED["cases"][case]
    result = registry.evaluate(_model(), seq_len=MEASURED["text_tokens"], audio=[_seconds(case)])
    (plan,) = result.audio.plans
    assert measured["expanded"] == ["<boa>", f"{measured['soft_tokens']} x <audio>", "<eoa>"] and WRAPPER_TOKENS == 2
    assert plan.tokens == measured["soft_tokens"] + WRAPPER_TOKENS == measured["processor_num_tokens"] + 2
    assert result.seqlens == (measured["sequence_length"],)
    assert plan.grid == (1, measured["real_mel_frames"], MEASURED["mel_bins"]) and plan.samples == measured["samples"]
    # the extractor's padding to a multiple of 128 samples adds at most one (unreal) frame
    assert measured["mel_frames"] - measured["real_mel_frames"] == (0 if case == "1s" else 1)


@pytest.mark.parametrize("case", CASES)
def test_the_pairs_the_mask_allows_are_counted(registry, case):
    """The attention's useful pairs: brute force of the mask's definition, the recorded mask over the
    real queries, and the closed form's (what blocks.attention holds beyond the relative logits)."""
    measured = MEASURED["cases"][case]
    n, heads, h, layers = measured["soft_tokens"], AUDIO["num_attention_heads"], AUDIO["hidden_size"], AUDIO["num_hidden_layers"]
    pairs = _brute_force_pairs(n, AUDIO["attention_context_left"], AUDIO["attention_context_right"])
    assert pairs == measured["mask"]["allowed_real_queries"]
    positions = (AUDIO["attention_chunk_size"] + AUDIO["attention_context_left"] - 1 + AUDIO["attention_context_right"]) // 2 + 1
    width = heads * (h // heads)
    attention = registry.audio(_model(), audio=[_seconds(case)]).flops["blocks.attention"]
    assert attention == layers * (2 * 2 * width * pairs + 2 * width * n * positions)


@pytest.mark.parametrize("case", CASES)
def test_the_tower_equals_flop_counter_mode_with_the_kernels_padding_apart(registry, case):
    """Every piece but the attention's matmuls is a function of the frames: the closed forms at the
    frames the kernel ran (the extractor's padding frame included) give FlopCounterMode's count, at
    the real frames flopsreg's. The attention's matmuls run over whole blocks: chunk queries against
    chunk + left - 1 + right keys (QK^T and AV), and each block query against the relative positions."""
    measured = MEASURED["cases"][case]
    model = _model()
    kind = tower_kinds(model, registry.hf_readers)["audio"]
    dims = model.towers["audio"].dims
    ran = tower_flops(kind, dims, [(1, measured["mel_frames"], MEASURED["mel_bins"])])
    exact = registry.audio(model, audio=[_seconds(case)]).flops
    assert exact == tower_flops(kind, dims, [(1, measured["real_mel_frames"], MEASURED["mel_bins"])])
    pieces, layers = measured["pieces"], measured["layers"]
    assert ran["subsample.conv0"] == pieces["subsample.layer0"] and ran["subsample.conv1"] == pieces["subsample.layer1"]
    assert ran["subsample.input_proj"] == pieces["subsample.input_proj"] and ran["output_proj"] == pieces["output_proj"]
    assert ran["embedder"] == measured["audio_embedder"]
    assert ran["blocks.feed_forward"] == sum(layer["feed_forward1"] + layer["feed_forward2"] for layer in layers)
    assert ran["blocks.qkv_post"] == sum(layer[f"self_attn.{p}"] for layer in layers for p in ("q_proj", "k_proj", "v_proj", "post"))
    assert ran["blocks.relative_k_proj"] == exact["blocks.relative_k_proj"] == sum(layer["self_attn.relative_k_proj"] for layer in layers)
    assert ran["blocks.light_conv"] == sum(layer["lconv1d"] for layer in layers)
    # the attention's matmuls as the kernel runs them, over the frames it ran
    chunk, left, right = AUDIO["attention_chunk_size"], AUDIO["attention_context_left"], AUDIO["attention_context_right"]
    frames = -(-measured["mel_frames"] // 4)
    blocks, context = -(-frames // chunk), chunk + left - 1 + right
    assert measured["mask"]["shape"] == [1, 1, blocks, chunk, context]
    width = AUDIO["hidden_size"]
    kernel = 2 * (2 * blocks * chunk * context * width) + 2 * blocks * chunk * width * (context // 2 + 1)
    projections = ("q_proj", "k_proj", "v_proj", "post", "relative_k_proj")
    assert all(layer["self_attn"] - sum(layer[f"self_attn.{p}"] for p in projections) == kernel for layer in layers)
    assert sum(ran.values()) - ran["blocks.attention"] + len(layers) * kernel == measured["audio_tower"] + measured["audio_embedder"]
    # what the padding frame costs, apart: nothing at 1 s (no padding frame) and at 2.5 s (its 250th
    # frame falls in the rows of the 249th after each halving); at 2.49 s the 249th frame gives a
    # 125th row of the first convolution and a 63rd frame after the second, dropped at the end
    padding = {piece: ran[piece] - exact[piece] for piece in ran if piece != "blocks.attention"}
    if case != "2.49s":
        assert not any(padding.values())
    else:
        assert padding["subsample.conv0"] == 2 * 10 * AUDIO["subsampling_conv_channels"][0] * 9  # 10 bins after the first halving
        assert padding["output_proj"] == 2 * width * AUDIO["output_proj_dims"]
        assert padding["blocks.feed_forward"] == AUDIO["num_hidden_layers"] * 2 * 2 * 2 * 4 * width**2


@pytest.mark.parametrize("case", CASES)
def test_the_whole_forward_equals_flop_counter_mode(registry, eager_registry, case):
    """The language model under the eager convention (its s x s scores, as FlopCounterMode sees
    them) over the text and audio tokens, beside the tower: their sum is the recorded forward."""
    measured = MEASURED["cases"][case]
    result = registry.evaluate(_model(), seq_len=MEASURED["text_tokens"], audio=[_seconds(case)])
    language_model = eager_registry.evaluate(_model(), seq_len=result.seqlens[0], convention="eager").forward
    assert language_model == measured["rest"]
    assert measured["forward"] == measured["audio_tower"] + measured["audio_embedder"] + measured["rest"]
    exact = registry.evaluate(_model(), seq_len=result.seqlens[0]).forward
    assert result.forward == exact + result.audio.tower  # the audio tokens are causal, like text


def test_a_length_is_exact_in_every_form_and_clips_add_up(registry):
    model = _model()
    counts = {registry.evaluate(model, seq_len=7, audio=[given]).forward
              for given in (Fraction(5, 2), "2.5", "5/2", Decimal("2.5"), 2.5, " 2.50 ")}
    assert len(counts) == 1
    two = registry.evaluate(model, seq_len=7, audio=["2.5", 1])
    one, other = (registry.audio(model, audio=[clip]) for clip in ("2.5", 1))
    assert two.audio.tower == one.tower + other.tower and two.audio.tokens == one.tokens + other.tokens
    assert two.seqlens == (7 + one.tokens + other.tokens,)
    assert registry.evaluate(model, seq_len=7, audio=[1], batch=3).forward == 3 * registry.evaluate(model, seq_len=7, audio=[1]).forward
    packed = registry.evaluate(model, seqlens=[7, 20], audio=[1])
    assert sum(packed.per_request) == packed.forward


def test_a_clip_longer_than_30_seconds_is_truncated_as_the_extractor_does(registry):
    model = _model()
    thirty = registry.audio(model, audio=[30]).plans[0]
    assert registry.audio(model, audio=[45]).plans[0] == thirty
    assert thirty.tokens == 750 + 2 and thirty.samples == 30 * SAMPLING_RATE and thirty.grid[1] == (30 * SAMPLING_RATE - 1) // HOP


@pytest.mark.parametrize(("given", "message"), [
    ({"audio": [-1]}, r"^audio\[0\] = -1: expected a length > 0 seconds$"),
    ({"audio": [Fraction(1, 32000)]}, r"^audio\[0\] = Fraction\(1, 32000\): 0.00003125 s is not a whole number of samples at 16000 Hz$"),
    ({"audio": [0.1]}, r"is not a whole number of samples at 16000 Hz \(a float is taken at its binary value: give the decimal as a string, '0.1'\)$"),
    ({"audio": ["two"]}, r"^audio\[0\] = 'two': expected a length in seconds"),
    ({"audio": [True]}, r"^audio\[0\] = True: expected a length in seconds"),
    ({"audio": []}, r"^audio = \[\]: expected at least one audio clip$"),
    ({"audio": ["0.01"]}, r"^audio\[0\] = '0.01': a clip of 160 samples has no real mel frame"),
    ({"audio": [1], "audio_tokens": [3]}, r"^audio and audio_tokens: give one \(each audio clip in seconds, or the tokens of each\)$"),
    ({"audio_tokens": [25]}, r"^audio_tokens: Gemma 4 audio conformer needs each audio clip's length in seconds \(give audio=\): "
                             r"n tokens come from 4n - 3 to 4n real mel frames"),
])
def test_bad_audio_gets_one_line(registry, given, message):
    with pytest.raises(flopsreg.FlopsregError, match=message):
        registry.evaluate(_model(), seq_len=7, **given)


def test_a_model_without_an_audio_tower_is_refused_naming_its_towers(registry):
    config = {k: v for k, v in MEASURED["config"].items() if k != "audio_config"}
    with pytest.raises(flopsreg.FlopsregError, match=r"^audio: gemma4 takes no audio here: it has no audio tower$"):
        registry.evaluate(flopsreg.Model.from_hf_config(config), seq_len=7, audio=[1])
    with_vision = {**config, "vision_config": {"hidden_size": 36, "intermediate_size": 50, "num_hidden_layers": 1, "num_attention_heads": 3,
                                               "num_key_value_heads": 3, "head_dim": 12, "patch_size": 3, "position_embedding_size": 17}}
    with pytest.raises(flopsreg.FlopsregError, match=r"^audio: gemma4 takes no audio here: its towers \(vision \(Gemma 4 ViT\), "):
        registry.evaluate(flopsreg.Model.from_hf_config(with_vision), seq_len=7, audio=[1])


def test_every_other_convention_refuses_gemma4_audio_by_name(registry):
    """Every registered convention but exact; in an evaluation too, where the convention counts the
    Gemma 4 decoder at all (torchtitan, olmo_core and verl refuse the decoder itself first)."""
    assert len(registry.conventions) >= 10
    evaluated = []
    for convention in registry.conventions:
        message = rf"^audio: convention '{convention}' has no term for the audio tower \(Gemma 4 audio conformer\): count audio with the exact convention$"
        with pytest.raises(flopsreg.FlopsregError, match=message):
            registry.audio(_model(), audio=[1], convention=convention)
        try:
            registry.evaluate(_model(), seq_len=7, convention=convention)
        except flopsreg.FlopsregError:
            continue
        with pytest.raises(flopsreg.FlopsregError, match=message):
            registry.evaluate(_model(), seq_len=7, audio=[1], convention=convention)
        evaluated.append(convention)
    assert {"megatron", "vllm", "hf_trainer", "nanogpt", "slime"} <= set(evaluated)


def test_images_and_audio_together_run_both_towers_and_both_token_runs(registry, monkeypatch):
    """A request with images and audio: each tower over its own input, the language model over the
    text, image and audio tokens (a stand-in image rule here, beside Gemma 4's audio)."""
    model = _model()

    def plan(dims, height, width):
        return MediaPlan(height=height, width=width, resized=(height, width), grid=(1, 1, 1), tokens=5)

    stand_in = MediaRule(summary="as given", plan=plan)
    kind = TowerKind(name="stand_in", title="stand-in", summary="1000 FLOPs an image", dims=(), parameters=0, reference="x",
                     images=stand_in, flops={"all": 1000 * IMAGE_GRID[0]})
    towers, kinds = registry.image_towers(model), flopsreg.registry.tower_kinds
    monkeypatch.setattr(registry, "image_towers", lambda m, takes="image", kinds=None: {**towers, "vision": ("stand-in", {}, stand_in)})
    monkeypatch.setattr(flopsreg.registry, "tower_kinds", lambda m, readers: {**kinds(m, readers), "vision": kind})
    both = registry.evaluate(model, seq_len=7, images=[(10, 10)], audio=[1])
    audio = registry.audio(model, audio=[1])
    assert both.seqlens == (7 + 5 + audio.tokens,)
    assert both.forward == registry.evaluate(model, seq_len=7 + 5 + audio.tokens).forward + 1000 + audio.tower
    assert both.images.tower == 1000 and both.audio == audio
    assert sum(both.per_request) == both.forward
    # 4 cached tokens hold the image's first token (not encoded again); the clip after it is new
    step = registry.evaluate(model, seq_len=7, images=[(10, 10)], audio=[1], cached=4)
    assert step.forward == registry.evaluate(model, seq_len=7 + 1 + audio.tokens, cached=4).forward + audio.tower


def test_audio_tokens_plan_a_clip_where_a_rule_says_the_count_fixes_its_flops(registry, monkeypatch):
    """Neither family's count fixes its FLOPs (both refuse audio_tokens, saying why); a rule whose
    count does (a stand-in here) takes the clips by their tokens."""
    model = _model()

    def from_tokens(dims, n):
        return MediaPlan(height=0, width=0, resized=(0, 0), grid=(1, 4 * n, 20), tokens=n + 2)

    title, dims, rule = registry.image_towers(model)["audio"]
    stand_in = MediaRule(summary="4 frames a token", plan=rule.plan, takes="audio", sampling_rate=SAMPLING_RATE, from_tokens=from_tokens)
    monkeypatch.setattr(registry, "image_towers", lambda m, takes="image", kinds=None: {"audio": (title, dims, stand_in)})
    by_tokens = registry.evaluate(model, seq_len=7, audio_tokens=[25, 3])
    assert by_tokens.seqlens == (7 + 27 + 5,) and [plan.grid for plan in by_tokens.audio.plans] == [(1, 100, 20), (1, 12, 20)]
    assert by_tokens.audio.tower == registry.audio(model, audio=["1.01", "0.13"]).tower  # 100 and 12 real frames
    assert "  clip 1: given by its audio tokens: 100 mel frames x 20 mel bins, 27 tokens" in by_tokens.audio.text()
    with pytest.raises(flopsreg.FlopsregError, match=r"^audio_tokens\[0\] = 0: expected an integer >= 1$"):
        registry.evaluate(model, seq_len=7, audio_tokens=[0])
    with pytest.raises(ValueError, match=r"^MediaRule.sampling_rate = 0: expected > 0 exactly for a rule that takes audio$"):
        MediaRule(summary="s", plan=rule.plan, takes="audio")


def test_the_command_line_takes_audio(tmp_path, capsys, registry):
    path = tmp_path / "gemma4.json"
    path.write_text(json.dumps(MEASURED["config"]))
    assert main(["eval", str(path), "--seq-len", "7", "--audio", "2.5", "--format", "json", "--no-cache"]) == 0
    output = json.loads(capsys.readouterr().out)
    expected = registry.evaluate(_model(), seq_len=7, audio=["2.5"])
    assert output["forward_flops"] == str(expected.forward) and output["seqlens"] == [7 + MEASURED["cases"]["2.5s"]["soft_tokens"] + 2]
    assert output["audio"]["clips"] == [{"samples": 40000, "seconds": "2.5", "grid": [1, 249, 20], "tokens": 65}]
    assert main(["eval", str(path), "--seq-len", "7", "--audio", "5/2", "--no-cache"]) == 0
    assert "clip 1: 2.5 s = 40000 samples at 16000 Hz, 249 mel frames x 20 mel bins, 65 tokens" in capsys.readouterr().out
    assert main(["explain", str(path), "--audio", "1", "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "audio tower (Gemma 4 audio conformer): forward FLOPs of one audio clip's spectrogram" in text
    assert "  rule: grid: (1, rows = real mel frames" in text
    assert main(["eval", str(path), "--seq-len", "7", "--audio", "-2", "--no-cache"]) == 2
    assert "audio[0] = '-2': expected a length > 0 seconds" in capsys.readouterr().err


# The worked example of docs/multimodal.md ("Audio"): Gemma 4's published audio conformer
# (the class defaults: h 1024, 12 layers, 8 heads, chunk 12, 12 keys back) for a 2.5 s clip,
# into a 2304-wide language model.
def test_the_worked_example_of_the_docs(registry):
    config = {"model_type": "gemma4", "text_config": {**MEASURED["config"]["text_config"], "hidden_size": 2304}, "audio_config": {}}
    planned = registry.audio(flopsreg.Model.from_hf_config(config), audio=["2.5"])
    (plan,) = planned.plans
    assert (plan.samples, plan.grid, plan.tokens) == (40000, (1, 249, 128), 65)
    assert dict(planned.flops) == {
        "subsample.conv0": 2 * 125 * 64 * 128 * 9,
        "subsample.conv1": 2 * 63 * 32 * 32 * 9 * 128,
        "subsample.input_proj": 2 * 63 * 32 * 32 * 1024,
        "blocks.feed_forward": 12 * 2 * 2 * 2 * 63 * 4 * 1024**2,
        "blocks.qkv_post": 12 * 2 * 63 * 4 * 1024**2,
        "blocks.relative_k_proj": 12 * 2 * 13 * 1024**2,
        "blocks.attention": 12 * (4 * 1024 * _brute_force_pairs(63, 13, 0) + 2 * 1024 * 63 * 13),
        "blocks.light_conv": 12 * 2 * 63 * (3 * 1024**2 + 5 * 1024),
        "output_proj": 2 * 63 * 1024 * 1536,
        "embedder": 2 * 63 * 1536 * 2304,
    }
    assert _brute_force_pairs(63, 13, 0) == 12 * 63 - 66 and planned.tower == 37_797_494_784


# -- Phi-4-multimodal ---------------------------------------------------------------------------


def _phi4(**audio) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config({**PHI4["config"], "audio_config": {**PHI4_AUDIO, **audio}})


def test_phi4_holds_transformers_parameters(registry):
    model = _phi4()
    assert registry.parameters(model).total == PHI4["parameters"]
    assert model.towers["audio"].parameters == PHI4["audio_parameters"]
    assert sorted(PHI4["cases"]) == ["1s", "2.5s", "41s"] and PHI4["class"] == "Phi4MultimodalForCausalLM"


@pytest.mark.parametrize("case", sorted(PHI4["cases"]))
def test_phi4_tokens_and_tower_equal_flop_counter_mode_with_the_dropped_outputs_apart(registry, eager_registry, case):
    """The processor's tokens (audio_embed_sizes, no wrapper) and frames; every piece of the encoder
    and the projections as FlopCounterMode counts them, but for the depthwise convolution of each
    block's convolution module, whose padding of kernel - 1 on both sides gives kernel - 1 outputs
    past the frames of each window (and the pointwise convolution after it), dropped by the module."""
    measured = PHI4["cases"][case]
    result = registry.evaluate(_phi4(), seq_len=PHI4["text_tokens"], audio=[Fraction(measured["samples"], SAMPLING_RATE)])
    (plan,) = result.audio.plans
    n = measured["soft_tokens"]
    assert plan.tokens == n == measured["audio_embed_sizes"] and result.seqlens == (measured["sequence_length"],)
    assert plan.grid == (1, measured["mel_frames"], measured["mel_bins"])
    flops = result.audio.flops
    sub, layers = measured["subsample"], measured["layers"]
    assert flops["subsample.conv0"] == sub["conv.0"]
    assert flops["subsample.separable"] == sub["conv.2"] + sub["conv.3"] + sub["conv.5"] + sub["conv.6"]  # depthwise, pointwise, twice
    assert flops["subsample.out"] == sub["out"]
    assert flops["blocks.feed_forward"] == sum(layer["feed_forward_in"] + layer["feed_forward_out"] for layer in layers)
    assert flops["blocks.qkvo"] == sum(layer[f"self_attn.{p}"] for layer in layers for p in ("q_proj", "k_proj", "v_proj", "o_proj"))
    # the attention over every pair of each window of 500 frames (the last padded)
    windows = -(-n // 500)
    pairs = n * n if n <= 500 else 500 * 500 * windows
    width = PHI4_AUDIO["num_attention_heads"] * (PHI4_AUDIO["hidden_size"] // PHI4_AUDIO["num_attention_heads"])
    matmuls = [layer["self_attn"] - sum(layer[f"self_attn.{p}"] for p in ("q_proj", "k_proj", "v_proj", "o_proj")) for layer in layers]
    assert matmuls == [2 * 2 * width * pairs] * len(layers) and flops["blocks.attention"] == sum(matmuls)
    dropped = (PHI4_AUDIO["kernel_size"] - 1) * windows  # outputs past each window's frames
    channels = PHI4_AUDIO["hidden_size"] * PHI4_AUDIO["depthwise_multiplier"]
    per_output = 2 * channels * PHI4_AUDIO["kernel_size"] + 2 * channels * PHI4_AUDIO["depthwise_separable_out_channel"]
    assert sum(layer["conv.dw_conv"] + layer["conv.pw_conv"] for layer in layers) == (
        sum(layer["conv"] - layer["conv.glu"] - layer["conv.ext_pw_conv_1d"] for layer in layers))
    assert flops["blocks.conv"] + len(layers) * dropped * per_output == sum(layer["conv"] for layer in layers)
    assert flops["projection"] == measured["up_proj_for_speech"] + measured["down_proj_for_speech"]
    assert result.audio.tower + len(layers) * dropped * per_output == measured["audio_embed"]
    language_model = eager_registry.evaluate(_phi4(), seq_len=result.seqlens[0], convention="eager").forward
    assert language_model == measured["rest"] and measured["forward"] == measured["audio_embed"] + measured["rest"]
    assert result.forward == registry.evaluate(_phi4(), seq_len=result.seqlens[0]).forward + result.audio.tower


@pytest.mark.parametrize(("audio", "message"), [
    ({"time_reduction": 4}, r"time_reduction = 4, downsample_rate = 1: flopsreg counts the published 8 and 1"),
    ({"ext_pw_out_channel": 20}, r"ext_pw_out_channel = 20, depthwise_separable_out_channel = 36: the convolution module runs only"),
])
def test_phi4_an_encoder_counted_otherwise_is_refused(registry, audio, message):
    with pytest.raises(flopsreg.FlopsregError, match=r"^audio\[0\] = 1: " + message):
        registry.evaluate(_phi4(**audio), seq_len=7, audio=[1])


def test_phi4_bad_audio_and_conventions_get_one_line(registry):
    with pytest.raises(flopsreg.FlopsregError, match=r"^audio\[0\] = '0.02': a clip of 320 samples has no frame \(at least 400 are needed\)"):
        registry.evaluate(_phi4(), seq_len=7, audio=["0.02"])
    with pytest.raises(flopsreg.FlopsregError, match=r"^audio_tokens: Phi-4-multimodal audio embedding needs each audio clip's length"):
        registry.evaluate(_phi4(), seq_len=7, audio_tokens=[13])
    for convention in registry.conventions:
        message = rf"^audio: convention '{convention}' has no term for the audio tower \(Phi-4-multimodal audio embedding\)"
        with pytest.raises(flopsreg.FlopsregError, match=message):
            registry.audio(_phi4(), audio=[1], convention=convention)
