"""Gemma 4 unified with audio against real forward passes: tests/data/hf_forward/measure_g4uaudio.py
ran tiny Gemma4UnifiedForConditionalGeneration models (640 and 250 samples per token) on random
waveforms through transformers' own Gemma4UnifiedAudioFeatureExtractor and the processor's
placeholder expansion and mm_token_type_ids, under FlopCounterMode, and recorded the embedder, the
whole forward, the language model's masks and the token counts (forward_g4uaudio.json). The
embedder's closed form counts each clip's frames; the frames a batch pads to its longest clip
(run, then dropped) are reconciled here apart.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from eager import eager_registry as make_eager_registry

import flopsreg
from flopsreg.cli import main
from flopsreg.engine.media import tower_flops, tower_kinds
from flopsreg.patterns.hf._gemma4u_audio import SAMPLING_RATE, WRAPPER_TOKENS

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_g4uaudio.json").read_text())
MODELS = RECORD["models"]
NAMES = sorted(MODELS)
CASES = sorted(MODELS["gemma4_unified"]["cases"])
PAIRS = [(name, case) for name in NAMES for case in CASES]
# Gemma4UnifiedConfig's class defaults (a 2304-wide decoder), with the audio config's defaults.
DEFAULTS = {**json.loads((Path(__file__).parents[1] / "data" / "hf" / "gemma4-unified-defaults.json").read_text()), "audio_config": {}}


@pytest.fixture(scope="module")
def eager_registry():
    return make_eager_registry()


def _model(name: str = "gemma4_unified") -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(MODELS[name]["config"])


def _seconds(name: str, case: str) -> list[Fraction]:
    return [Fraction(samples, SAMPLING_RATE) for samples in MODELS[name]["cases"][case]["samples"]]


def _brute_force_pairs(length: int, window: int | None) -> int:
    """The (query, key) pairs of a causal mask, within *window* keys back (the query's own included)."""
    return sum(1 for q in range(length) for k in range(q + 1) if window is None or k > q - window)


def test_the_record_names_its_versions_and_the_extractors_defaults():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert {m["class"] for m in MODELS.values()} == {"Gemma4UnifiedForConditionalGeneration"}
    assert RECORD["extractor_defaults"] == {"sampling_rate": SAMPLING_RATE, "audio_samples_per_token": 640, "feature_size": 640}
    # the class default audio_embed_dim is the extractor's default samples per token
    assert flopsreg.Model.from_hf_config(DEFAULTS).towers["audio_embedder"].dims["out"] == 640


@pytest.mark.parametrize("name", NAMES)
def test_the_whole_model_and_its_embedder_hold_transformers_parameters(registry, name):
    model = _model(name)
    assert registry.parameters(model).total == MODELS[name]["parameters"]
    assert model.towers["audio_embedder"].parameters == MODELS[name]["audio_parameters"]


@pytest.mark.parametrize(("name", "case"), PAIRS)
def test_the_token_counts_and_frames_are_the_processors(registry, name, case):
    """The soft tokens Gemma4UnifiedProcessor inserts per clip (the extractor's real frames, and its
    own count from the length), one <boa> and <eoa> each, the audio tokens of mm_token_type_ids."""
    measured, per_token = MODELS[name]["cases"][case], MODELS[name]["samples_per_token"]
    result = registry.evaluate(_model(name), seq_len=MODELS[name]["text_tokens"], audio=_seconds(name, case))
    plans = result.audio.plans
    clips = len(measured["samples"])
    assert measured["wrappers"] == [clips, clips] and WRAPPER_TOKENS == 2
    assert [plan.tokens - WRAPPER_TOKENS for plan in plans] == measured["real_frames"] == measured["processor_num_tokens"]
    assert sum(measured["real_frames"]) == measured["sequence_soft_tokens"] == measured["mm_token_type_ids_audio"]
    assert [plan.grid for plan in plans] == [(1, frames, per_token) for frames in measured["real_frames"]]
    assert [plan.samples for plan in plans] == measured["samples"]
    assert result.seqlens == (measured["sequence_length"],)
    # the extractor's frames: the longest clip's, every frame of a clip real
    assert measured["features"] == [clips, max(measured["real_frames"]), per_token]


@pytest.mark.parametrize(("name", "case"), PAIRS)
def test_the_embedder_equals_flop_counter_mode_with_the_batch_padding_apart(registry, name, case):
    """embed_audio runs one matrix on every frame of the extractor's batch, each clip padded to the
    longest, and drops the padding frames after: the closed form at the padded frames gives the
    record, at the real ones flopsreg's count; one clip has no padding frame."""
    measured, per_token = MODELS[name]["cases"][case], MODELS[name]["samples_per_token"]
    model = _model(name)
    kind = tower_kinds(model, registry.hf_readers)["audio_embedder"]
    dims = model.towers["audio_embedder"].dims
    clips, longest, _ = measured["features"]
    ran = tower_flops(kind, dims, [(1, longest, per_token)] * clips)
    assert measured["audio_embedder_ops"] == {"aten.mm": ran["embedder"]} and measured["audio_embedder"] == ran["embedder"]
    exact = registry.audio(model, audio=_seconds(name, case)).flops
    text = MODELS[name]["config"]["text_config"]["hidden_size"]
    assert dict(exact) == {"embedder": 2 * sum(measured["real_frames"]) * per_token * text}
    padding = clips * longest - sum(measured["real_frames"])
    assert ran["embedder"] - exact["embedder"] == 2 * padding * per_token * text
    assert (padding == 0) == (clips == 1)


@pytest.mark.parametrize(("name", "case"), PAIRS)
def test_the_audio_tokens_are_causal_and_the_whole_forward_is_flop_counter_modes(registry, eager_registry, name, case):
    """The masks the language model gets with the processor's mm_token_type_ids (3 on audio tokens)
    equal those without (the bidirectional blocks take types 1 and 2 only), the causal and sliding
    pairs by brute force; the language model under the eager convention over the whole length is
    the rest of the record, and flopsreg's forward is the text-only one at that length plus the embedder."""
    measured = MODELS[name]["cases"][case]
    text = MODELS[name]["config"]["text_config"]
    length = measured["sequence_length"]
    assert measured["mask_pairs"] == measured["mask_pairs_text"] == {
        "sliding_attention": _brute_force_pairs(length, text["sliding_window"]), "full_attention": _brute_force_pairs(length, None)}
    model = _model(name)
    result = registry.evaluate(model, seq_len=MODELS[name]["text_tokens"], audio=_seconds(name, case))
    assert result.audio.bidirectional == 0
    assert eager_registry.evaluate(model, seq_len=length, convention="eager").forward == measured["rest"]
    assert result.forward == registry.evaluate(model, seq_len=length).forward + result.audio.tower
    padding = measured["audio_embedder"] - result.audio.tower
    assert measured["forward"] == measured["rest"] + result.audio.tower + padding


def test_audio_tokens_fix_the_embedders_work(registry):
    """n soft tokens are n frames: a clip given by its tokens costs what the clip does."""
    model = _model()
    by_tokens = registry.evaluate(model, seq_len=7, audio_tokens=[25, 63])
    by_length = registry.evaluate(model, seq_len=7, audio=[1, "2.5"])
    assert by_tokens.seqlens == by_length.seqlens == (7 + 27 + 65,)
    assert by_tokens.audio.flops == by_length.audio.flops and by_tokens.forward == by_length.forward
    assert [plan.grid for plan in by_tokens.audio.plans] == [(1, 25, 640), (1, 63, 640)]
    with pytest.raises(flopsreg.FlopsregError, match=r"^audio_tokens\[0\] = 0: expected an integer >= 1$"):
        registry.evaluate(model, seq_len=7, audio_tokens=[0])


def test_every_other_convention_refuses_the_unified_audio_by_name(registry):
    """Every registered convention but exact; in an evaluation too, where the convention counts the
    decoder at all."""
    model, evaluated = _model(), []
    for convention in registry.conventions:
        message = (rf"^audio: convention '{convention}' has no term for the audio_embedder tower "
                   r"\(Gemma 4 unified audio embedder\): count audio with the exact convention$")
        with pytest.raises(flopsreg.FlopsregError, match=message):
            registry.audio(model, audio=[1], convention=convention)
        try:
            registry.evaluate(model, seq_len=7, convention=convention)
        except flopsreg.FlopsregError:
            continue
        with pytest.raises(flopsreg.FlopsregError, match=message):
            registry.evaluate(model, seq_len=7, audio=[1], convention=convention)
        evaluated.append(convention)
    assert {"megatron", "vllm", "hf_trainer", "nanogpt", "slime"} <= set(evaluated)


def test_a_unified_model_without_audio_config_is_refused(registry):
    config = {k: v for k, v in MODELS["gemma4_unified"]["config"].items() if k != "audio_config"}
    with pytest.raises(flopsreg.FlopsregError, match=r"^audio: gemma4_unified takes no audio here: it has no audio tower$"):
        registry.evaluate(flopsreg.Model.from_hf_config(config), seq_len=7, audio=[1])


def test_the_command_line_takes_unified_audio(tmp_path, capsys, registry):
    path = tmp_path / "gemma4u.json"
    path.write_text(json.dumps(MODELS["gemma4_unified"]["config"]))
    assert main(["eval", str(path), "--seq-len", "7", "--audio", "2.5", "--format", "json", "--no-cache"]) == 0
    output = json.loads(capsys.readouterr().out)
    expected = registry.evaluate(_model(), seq_len=7, audio=["2.5"])
    assert output["forward_flops"] == str(expected.forward) and output["seqlens"] == [MODELS["gemma4_unified"]["cases"]["2.5s"]["sequence_length"]]
    assert output["audio"]["clips"] == [{"samples": 40000, "seconds": "2.5", "grid": [1, 63, 640], "tokens": 65}]
    assert output["audio"]["tower_flops_per_sequence"] == {"embedder": str(2 * 63 * 640 * 44)}
    assert main(["eval", str(path), "--seq-len", "7", "--audio-tokens", "63", "--format", "json", "--no-cache"]) == 0
    assert json.loads(capsys.readouterr().out)["forward_flops"] == str(expected.forward)
    assert main(["explain", str(path), "--audio", "1", "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "audio_embedder tower (Gemma 4 unified audio embedder)" in text and "  embedder = 2*out*rows*t*text" in text


# The worked example of docs/multimodal.md ("Gemma 4 unified"): Gemma4UnifiedConfig's defaults
# (audio_embed_dim 640, a 2304-wide decoder) and one 2.5 s clip.
def test_the_worked_example_of_the_docs(registry):
    model = flopsreg.Model.from_hf_config(DEFAULTS)
    result = registry.evaluate(model, seq_len=1000, audio=["2.5"])
    (plan,) = result.audio.plans
    assert (plan.samples, plan.grid, plan.tokens) == (40000, (1, 63, 640), 65)
    assert dict(result.audio.flops) == {"embedder": 2 * 63 * 640 * 2304} and result.audio.tower == 185_794_560
    assert result.seqlens == (1065,)
    assert result.forward == registry.evaluate(model, seq_len=1065).forward + 185_794_560


def _unified_pairs(length: int, block: range, window: int | None) -> int:
    """Gemma 4 unified's mask pair by pair (create_masks_for_generate with block_sequence_ids): causal
    within the window, or both in the image's block, on every layer."""
    return sum(1 for q in range(length) for k in range(length)
               if (k <= q and (window is None or k > q - window)) or (q in block and k in block))


def test_an_image_and_a_clip_together_an_image_block_and_causal_audio(registry, eager_registry):
    """The recorded model with the vision embedder too: an image, a clip, then text. The masks with
    mm_token_type_ids (1 on image, 3 on audio tokens) add the image's block only; flopsreg's forward
    is the text-only one at the whole length, the image's bidirectional pairs and both embedders'
    real tokens; the language model under the eager convention is the rest of the record."""
    measured = RECORD["with_image"]
    text = measured["config"]["text_config"]
    model = flopsreg.Model.from_hf_config(measured["config"])
    options = {"max_soft_tokens": measured["max_soft_tokens"]}  # the processor's budget the record ran with
    assert registry.parameters(model).total == measured["parameters"]
    result = registry.evaluate(model, seq_len=measured["text_tokens"], images=[tuple(measured["image"])], audio=[1], processor=options)
    length = measured["sequence_length"]
    image, audio = measured["image_soft_tokens"], measured["audio_soft_tokens"]
    assert result.seqlens == (length,) == (image + 2 + audio + 2 + measured["text_tokens"],)
    assert measured["token_types"] == {"1": image, "3": audio}
    assert [plan.tokens for plan in result.images.plans] == [image + 2] and [plan.tokens for plan in result.audio.plans] == [audio + 2]
    block = range(1, 1 + image)  # after <boi>
    for kind, window in (("full_attention", None), ("sliding_attention", text["sliding_window"])):
        assert measured["mask_pairs"][kind] == _unified_pairs(length, block, window)
        assert measured["mask_pairs_text"][kind] == _unified_pairs(length, range(0), window)
    assert result.audio.tower == measured["audio_embedder"] == 2 * audio * 640 * text["hidden_size"]
    assert result.forward == (registry.evaluate(model, seq_len=length).forward + result.images.tower
                              + result.images.bidirectional + result.audio.tower)
    assert eager_registry.evaluate(model, seq_len=length, convention="eager").forward == measured["rest"]


def test_a_clip_is_shown_as_frames_of_raw_samples(registry):
    """Gemma 4 unified's grid is frames of audio_embed_dim raw samples, not a spectrogram: the
    output says so (the rule's axes)."""
    text = "\n".join(registry.audio(_model(), audio=["2.5"]).text())
    assert " frames x " in text and " samples a frame" in text and "mel" not in text
