"""Gemma 3n's audio tower against real forward passes: tests/data/hf_forward/measure_g3naudio.py ran
a tiny Gemma3nAudioEncoder and its Gemma3nMultimodalEmbedder (odd widths, a chunked mask with keys on
both sides, a reduction of 3) and the class defaults (on a meta device) on random waveforms through
transformers' own Gemma3nAudioFeatureExtractor, under FlopCounterMode, and recorded each piece of
the encoder, the pairs its mask allows and the text Gemma3nProcessor puts in place of a clip
(forward_g3naudio.json). The closed forms count the work a kept output frame depends on: a
dependency graph walked back from the kept frames, here in pure Python, gives the live rows of every
matrix and the live pairs of every attention, and FlopCounterMode's count is reconciled as the
live work + the dead work (from that graph) + the kernel's whole blocks.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

import flopsreg
from flopsreg.cli import main
from flopsreg.engine.media import tower_flops, tower_kinds
from flopsreg.patterns.hf._gemma3n_audio import SAMPLING_RATE, WRAPPER_TOKENS

DATA = Path(__file__).parents[1] / "data" / "hf_forward"
RECORD = json.loads((DATA / "forward_g3naudio.json").read_text())
TINY, DEFAULT, CAUSAL = RECORD["models"]["tiny"], RECORD["models"]["default"], RECORD["models"]["causal"]
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


def _keys(q: int, n: int, audio: dict) -> list[int]:
    """The keys query q attends to in Gemma3nAudioAttention's mask over n real frames, from its
    definition: q's block of chunk queries, the context of chunk + L + A keys from L before the
    block, ``local_causal_valid_mask[w, c]`` = w <= c <= w + L + A, keys inside the clip."""
    chunk = audio.get("conf_attention_chunk_size", 12)
    back, ahead = max(0, audio.get("conf_attention_context_left", 13) - 1), audio.get("conf_attention_context_right", 0)
    block, w = divmod(q, chunk)
    context = (block * chunk - back + c for c in range(chunk + back + ahead) if w <= c <= w + back + ahead)
    return [k for k in context if 0 <= k < n]


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _live(mel_frames: int, audio: dict) -> tuple[dict, list[dict]]:
    """The rows (frames) of each matrix and the pairs of each attention some kept output frame
    depends on: the subsampling's, then each conformer block's (first block first), walked back from
    frames 0, r, 2r, ... of the last block through its closing feed-forward, the causal depthwise
    kernel (output t reads t - K + 1..t), the attention (query q reads its keys), the residuals, and
    the subsampling (the second convolution's row t reads rows t sh1..t sh1 + kh1 - 1 of the first;
    each convolution's cumulative group norm reads every row before)."""
    (sh0, _), (sh1, _) = audio.get("sscp_conv_stride_size", [[2, 2], [2, 2]])
    kh1 = audio.get("sscp_conv_kernel_size", [[3, 3], [3, 3]])[1][0]
    kernel, reduction = audio.get("conf_conv_kernel_size", 5), audio.get("conf_reduction_factor", 4)
    t1 = _ceil(mel_frames, sh0)
    n = _ceil(t1, sh1)
    need, blocks = set(range(0, n, reduction)), []
    for _ in range(audio.get("conf_num_hidden_layers", 12)):
        queries = {t - j for t in need for j in range(kernel) if t - j >= 0}
        keys = {q: _keys(q, n, audio) for q in queries}
        inputs = set().union(*keys.values())
        blocks.append({"ffw_end": len(need), "conv": len(need), "linear_start": len(queries), "q": len(queries), "post": len(queries),
                       "pairs": sum(map(len, keys.values())), "kv": len(inputs), "ffw_start": len(inputs), "frames": n,
                       "lone": sum(len(k) == 1 for k in keys.values()), "keyed": len(set().union(*(k for k in keys.values() if len(k) > 1)))})
        need = inputs
    read = {t * sh1 + i for t in range(max(need) + 1) for i in range(kh1) if t * sh1 + i < t1}
    subsample = {"input_proj": len(need), "conv1": max(need) + 1, "conv0": max(read) + 1, "frames": (t1, n)}
    return subsample, blocks[::-1]


def _brute_force_flops(mel_frames: int, audio: dict, text: int) -> dict[str, int]:
    """Each piece's FLOPs over the live rows and pairs of :func:`_live` (2 per multiply-add)."""
    sub, blocks = _live(mel_frames, audio)
    h, kernel, mel = audio.get("hidden_size", 1536), audio.get("conf_conv_kernel_size", 5), audio.get("input_feat_size", 128)
    w = audio.get("conf_num_attention_heads", 8) * (h // audio.get("conf_num_attention_heads", 8))
    c0, c1 = audio.get("sscp_conv_channel_size", [128, 32])
    (kh0, kw0), (kh1, kw1) = audio.get("sscp_conv_kernel_size", [[3, 3], [3, 3]])
    (_, sw0), (_, sw1) = audio.get("sscp_conv_stride_size", [[2, 2], [2, 2]])
    f1 = (mel + 2 - kw0) // sw0 + 1
    f2 = (f1 + 2 - kw1) // sw1 + 1
    positions = max(0, audio.get("conf_attention_context_left", 13) - 1) + audio.get("conf_attention_context_right", 0) + 1
    n = sub["frames"][1]
    return {
        "subsample.conv0": 2 * sub["conv0"] * f1 * c0 * kh0 * kw0,
        "subsample.conv1": 2 * sub["conv1"] * f2 * c1 * kh1 * kw1 * c0,
        "subsample.input_proj": 2 * sub["input_proj"] * f2 * c1 * h,
        "blocks.feed_forward": sum(2 * 2 * 4 * h * h * (b["ffw_start"] + b["ffw_end"]) for b in blocks),
        "blocks.qkv_post": sum(2 * h * w * (b["q"] + 2 * b["kv"]) + 2 * h * h * b["post"] for b in blocks),
        "blocks.pos_proj": len(blocks) * 2 * positions * h * w,
        "blocks.attention": sum(2 * 2 * w * b["pairs"] + 2 * w * positions * b["q"] for b in blocks),
        "blocks.light_conv": sum(2 * 2 * h * h * b["linear_start"] + 2 * (h * kernel + h * h) * b["conv"] for b in blocks),
        "embedder": 2 * _ceil(n, audio.get("conf_reduction_factor", 4)) * h * text,
    }


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
def test_the_mask_definition_gives_the_recorded_pairs(case):
    """Over every frame (what the first block's attention runs over), the mask definition of
    :func:`_keys` allows the pairs measure_g3naudio.py counted in the module's own mask."""
    measured = TINY["cases"][case]
    n = measured["mask"]["real_queries"]
    assert sum(len(_keys(q, n, AUDIO)) for q in range(n)) == measured["mask"]["allowed_real_queries"]


# Encoders whose useful work the closed forms count: right context 0 (the tail dead in every block),
# >= reduction - 1 (live before the last block), a kernel equal to the reduction or wider, one block,
# no reduction, no key back.
CONFIGS = {
    "tiny": AUDIO,
    "default": {},
    "causal": {**AUDIO, "conf_attention_context_right": 0, "conf_conv_kernel_size": 4},
    "far ahead": {**AUDIO, "conf_attention_context_right": 5, "conf_num_hidden_layers": 3, "conf_attention_context_left": 1},
    "one block": {**AUDIO, "conf_num_hidden_layers": 1, "conf_reduction_factor": 2, "conf_attention_context_right": 1},
    "no reduction": {**AUDIO, "conf_reduction_factor": 1, "conf_conv_kernel_size": 1, "conf_attention_chunk_size": 3},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_the_closed_forms_count_the_live_work_of_the_dependency_graph(registry, name):
    audio = CONFIGS[name]
    model = _model(audio)
    kind = tower_kinds(model, registry.hf_readers)["audio"]
    text, bins = TINY["config"]["text_config"]["hidden_size"], audio.get("input_feat_size", 128)
    for mel in (*range(1, 70), 97, 247, 400):
        expected = _brute_force_flops(mel, audio, text)
        assert tower_flops(kind, model.towers["audio"].dims, [(1, mel, bins)]) == expected, mel


@pytest.mark.parametrize(("change", "message"), [
    ({"conf_conv_kernel_size": 2}, r"audio_config.conf_conv_kernel_size = 2 is less than conf_reduction_factor = 3: the last block's "
     r"useful frames are not one run from frame 0, which flopsreg does not count \(expected a kernel >= the reduction\)"),
    ({"conf_attention_context_right": 1}, r"audio_config.conf_attention_context_right = 1 with conf_reduction_factor = 3: each block's "
     r"useful frames end at a different place, which flopsreg does not count \(expected 0 or >= 2\)"),
    ({"conf_num_hidden_layers": 0}, r"audio_config.conf_num_hidden_layers = 0: expected at least one conformer block"),
])
def test_an_encoder_the_closed_forms_do_not_describe_is_refused_by_name(registry, change, message):
    with pytest.raises(flopsreg.FlopsregError, match=rf"^audio\[0\] = 1: {message} \(Gemma 3n USM audio encoder\)$"):
        registry.audio(_model({**AUDIO, **change}), audio=[1])


def test_the_dead_work_is_the_tail_and_the_last_blocks_dropped_frames():
    """The published encoder (reduction 4, kernel 5, right context 0) over 62 frames keeps 0, 4, ..., 60:
    frame 61 is dead in every block and the subsampling; the last block's closing feed-forward and
    light convolution output run over the 16 kept frames only."""
    sub, blocks = _live(248, {})
    assert sub == {"input_proj": 61, "conv1": 61, "conv0": 123, "frames": (124, 62)}
    assert blocks[-1] == {"ffw_end": 16, "conv": 16, "linear_start": 61, "q": 61, "post": 61, "pairs": 13 * 61 - 78,
                          "kv": 61, "ffw_start": 61, "frames": 62, "lone": 1, "keyed": 61}
    assert all(b == {**dict.fromkeys(("ffw_end", "conv", "linear_start", "q", "post", "kv", "ffw_start"), 61),
                     "pairs": 13 * 61 - 78, "frames": 62, "lone": 1, "keyed": 61} for b in blocks[:-1])


@pytest.mark.parametrize(("model", "case"), [("tiny", case) for case in RUN] + [("causal", case) for case in sorted(CAUSAL["cases"])])
def test_the_dependency_graph_is_the_one_backpropagation_finds(model, case):
    """measure_g3naudio.py backpropagated random weights of the kept frames into every matrix's
    output: a frame is live where its row has a nonzero gradient. The graph finds the same frames,
    but for a query whose mask allows one key (frame 0 with no key ahead): its softmax is 1 whatever
    its logit, so its query row, and a key only such queries see, get no gradient, though the logit
    is computed and used (counted, as the text path counts the first token's pair with itself)."""
    record = RECORD["models"][model]
    measured = record["cases"][case]
    sub, blocks = _live(measured["mel_frames"], record["config"]["audio_config"])
    assert measured["live"]["subsample"] == {piece: sub[piece] for piece in ("conv0", "conv1", "input_proj")}
    assert measured["live"]["layers"] == [
        {"ffw_start": b["ffw_start"], "q": b["q"] - b["lone"], "k": b["keyed"], "v": b["kv"], "post": b["post"], "linear_start": b["linear_start"],
         "conv": b["conv"], "linear_end": b["conv"], "ffw_end": b["ffw_end"]} for b in blocks]


def _dead(recorded: int, live: int, rows: int) -> int:
    """The part of a per-frame piece FlopCounterMode counted over all *rows* frames that ran on dead ones."""
    assert recorded % rows == 0
    return recorded // rows * (rows - live)


def _reconcile(registry, model: flopsreg.Model, audio: dict, measured: dict) -> None:
    """FlopCounterMode counts every frame: each piece it records is flopsreg's (the live work) + the
    work on dead frames (the dependency graph's dead rows and pairs at the recorded cost of a row) +,
    for the attention, the kernel's whole blocks: chunk queries against chunk + L + A keys (QK^T and
    AV) and every block query against the relative positions."""
    exact = registry.audio(model, audio=[_seconds(measured["samples"])]).flops
    kind = tower_kinds(model, registry.hf_readers)["audio"]
    assert exact == tower_flops(kind, model.towers["audio"].dims, [(1, measured["mel_frames"], audio.get("input_feat_size", 128))])
    live, blocks = _live(measured["mel_frames"], audio)
    (t1, n), sub, layers = live["frames"], measured["subsample"], measured["layers"]
    h = audio.get("hidden_size", 1536)
    chunk, left, right = audio.get("conf_attention_chunk_size", 12), audio.get("conf_attention_context_left", 13), audio.get("conf_attention_context_right", 0)
    context, positions = chunk + left - 1 + right, left - 1 + right + 1
    kernel = 2 * (2 * _ceil(n, chunk) * chunk * context * h) + 2 * _ceil(n, chunk) * chunk * h * positions
    every_pair = sum(len(_keys(q, n, audio)) for q in range(n))
    projections = ("q_proj", "k_proj", "v_proj", "post")
    recorded = {
        "subsample.conv0": sub["conv_0"], "subsample.conv1": sub["conv_1"], "subsample.input_proj": sub["input_proj_linear"],
        "blocks.feed_forward": sum(layer["ffw_layer_start"] + layer["ffw_layer_end"] for layer in layers),
        "blocks.qkv_post": sum(layer[f"attention.{p}"] for layer in layers for p in projections),
        "blocks.pos_proj": sum(layer["attention.pos_proj"] for layer in layers),
        "blocks.attention": sum(layer["attention"] - sum(layer[f"attention.{p}"] for p in (*projections, "pos_proj")) for layer in layers),
        "blocks.light_conv": sum(layer["lconv1d"] for layer in layers),
        "embedder": measured["audio_embedder"],
    }
    assert recorded["blocks.attention"] == len(layers) * kernel
    dead = {
        "subsample.conv0": _dead(sub["conv_0"], live["conv0"], t1), "subsample.conv1": _dead(sub["conv_1"], live["conv1"], n),
        "subsample.input_proj": _dead(sub["input_proj_linear"], live["input_proj"], n),
        "blocks.feed_forward": sum(_dead(layer["ffw_layer_start"], b["ffw_start"], n) + _dead(layer["ffw_layer_end"], b["ffw_end"], n)
                                   for layer, b in zip(layers, blocks, strict=True)),
        "blocks.qkv_post": sum(_dead(layer["attention.q_proj"], b["q"], n) + _dead(layer["attention.k_proj"], b["kv"], n)
                               + _dead(layer["attention.v_proj"], b["kv"], n) + _dead(layer["attention.post"], b["post"], n)
                               for layer, b in zip(layers, blocks, strict=True)),
        "blocks.pos_proj": 0,
        # every frame's queries: 4 w per pair and 2 w R relative logits (w = h here), the dead ones' apart
        "blocks.attention": sum(4 * h * (every_pair - b["pairs"]) + 2 * h * positions * (n - b["q"]) for b in blocks),
        # lconv1d = linear_start (h -> 2h) + the depthwise kernel + linear_end (h -> h): its linears split 2 : 1
        "blocks.light_conv": sum(_dead((layer["lconv1d"] - layer["lconv1d.depthwise_conv1d"]) * 2 // 3, b["linear_start"], n)
                                 + _dead(layer["lconv1d.depthwise_conv1d"], b["conv"], n)
                                 + _dead((layer["lconv1d"] - layer["lconv1d.depthwise_conv1d"]) // 3, b["conv"], n)
                                 for layer, b in zip(layers, blocks, strict=True)),
        "embedder": 0,
    }
    padding = {piece: 0 for piece in recorded} | {"blocks.attention": len(layers) * (kernel - 4 * h * every_pair - 2 * h * positions * n)}
    assert {piece: exact[piece] + dead[piece] + padding[piece] for piece in recorded} == recorded
    assert sum(recorded.values()) == measured["audio_encoder"] + measured["audio_embedder"]
    assert sum(dead.values()) > 0


@pytest.mark.parametrize("case", RUN)
def test_the_tower_equals_flop_counter_mode_with_the_kernels_blocks_apart(registry, case):
    _reconcile(registry, _model(), AUDIO, TINY["cases"][case])


@pytest.mark.parametrize("case", sorted(CAUSAL["cases"]))
def test_the_causal_tower_equals_flop_counter_mode_with_its_dead_frames_apart(registry, case):
    audio = CAUSAL["config"]["audio_config"]
    _reconcile(registry, _model(audio), audio, CAUSAL["cases"][case])


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
    # o = 16 kept frames (0, 4, ..., 60); frame 61 is dead in every block (no key ahead); the first
    # convolution's last row (123) only feeds it; the last block's ffw_layer_end, depthwise kernel and
    # linear_end run over the 16 kept frames; the queries 0..60 see 13 keys each but the first 12
    assert dict(planned.flops) == {
        "subsample.conv0": 2 * 123 * 64 * 128 * 9,
        "subsample.conv1": 2 * 61 * 32 * 32 * 9 * 128,
        "subsample.input_proj": 2 * 61 * 32 * 32 * h,
        "blocks.feed_forward": 2 * 2 * 4 * h**2 * (12 * 61 + 11 * 61 + 16),
        "blocks.qkv_post": 12 * 2 * 61 * 4 * h**2,
        "blocks.pos_proj": 12 * 2 * 13 * h**2,
        "blocks.attention": 12 * (4 * h * (13 * 61 - 78) + 2 * h * 61 * 13),
        "blocks.light_conv": 12 * 2 * 61 * 2 * h**2 + 2 * (5 * h + h**2) * (11 * 61 + 16),
        "embedder": 2 * 16 * h * 2048,
    }
    assert planned.tower == 78_814_393_344  # 3,221,326,848 (3.9%) less than every frame through every block
