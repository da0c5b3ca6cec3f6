"""dots.3 note's wrapper (``dots3_note``: patterns/hf/dots3_note.py, patterns/hf/_dots3_towers.py)
with images and audio against real forward passes: tests/data/hf_forward/measure_dots3mm.py ran
tiny wrappers (the MoE ViT with a per-layer schedule of experts, the audio encoder) on random
images through Qwen2VLImageProcessorPil and a synthetic waveform through Dots3NoteFeatureExtractor,
expanded as Dots3NoteProcessor expands the placeholders, under FlopCounterMode
(forward_dots3mm.json). The towers per piece, the whole forward, the token counts, the parameters
(tiny and class defaults) and the processor's rule are compared with what was recorded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from eager import DSA_INDEXER_RECTANGLE
from eager import eager_registry as make_eager_registry

import flopsreg
from flopsreg.engine.media import tower_flops
from flopsreg.patterns.hf._dots3_towers import DOTS3_AUDIO, DOTS3_IMAGES, DOTS3_VISION, vision_schedule

DATA = Path(__file__).parents[1] / "data" / "hf_forward"
RECORD = json.loads((DATA / "forward_dots3mm.json").read_text())
# The text class default's config.json (recorded for dots3_note_text by measure_dots3.py): the decoder of the class default.
TEXT_DEFAULTS = json.loads((DATA / "forward_dots3.json").read_text())["defaults"]["dots3_note_text"]["config"]
# Dots3NoteConfig's defaults as a config.json (tests/data/hf/SOURCES.md): that text config and the towers as saved.
DEFAULTS = DATA.parent / "hf" / "dots3-note-defaults.json"
MODELS = RECORD["models"]
CASES = [(name, case) for name in sorted(MODELS) for case in sorted(MODELS[name]["cases"])]
TINY = {"min_pixels": 64, "max_pixels": 4096}  # the tiny processor's bounds (measure_dots3mm.py)
TEXT_TOKENS = 7


@pytest.fixture(scope="module")
def eager_registry():
    """The eager convention with the indexer scoring every (query, key) pair, as Dots3NoteTextIndexer does."""
    return make_eager_registry(DSA_INDEXER_RECTANGLE)


def _model(name: str, **changes) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config({**MODELS[name]["config"], **changes})


def _evaluate(registry, name: str, case: str, **options):
    measured = MODELS[name]["cases"][case]
    return registry.evaluate(_model(name), seq_len=TEXT_TOKENS, images=[tuple(size) for size in measured["images"]],
                             audio=[str(measured["seconds"])], processor=TINY, **options)


def _modules(name: str, case: str, prefix: str) -> int:
    """The recorded FLOPs of the modules *prefix* names, ``*`` standing for each layer's index."""
    pattern = re.compile(re.escape(prefix).replace(r"\*", r"\d+") + "$")
    return sum(n for module, n in MODELS[name]["cases"][case]["modules"].items() if pattern.match(module))


def _padding_taps(name: str, case: str) -> int:
    """What FlopCounterMode counts of the audio convs' zero padding, from the record alone: each conv's
    (output, tap) pairs, 9 a position, less the real ones (a ones input through a ones kernel)."""
    return sum(2 * conv["in_channels"] * conv["out_channels"] * (9 * conv["output"][0] * conv["output"][1] - conv["real_taps"])
               for conv in MODELS[name]["cases"][case]["audio_stem"])


def test_the_record_names_its_versions_and_every_case_ran():
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert sorted(MODELS) == ["per_layer", "pyramid"] and len(CASES) == 4
    assert all("forward" in case for model in MODELS.values() for case in model["cases"].values())


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_whole_model_and_its_towers_hold_transformers_parameters(registry, name):
    model = _model(name)
    assert registry.parameters(model).total == MODELS[name]["parameters"]
    assert model.towers["vision"].parameters == MODELS[name]["vision_parameters"]
    assert model.towers["audio"].parameters == MODELS[name]["audio_parameters"]


def test_the_class_defaults_hold_the_conditional_generation_models_parameters(registry):
    """The whole Dots3NoteForConditionalGeneration (what ``params`` counts, as for Mllama), read from the towers'
    sub-configs as to_dict saves them (the schedule as mlp_layer_types and per_layer_config); AutoModelForCausalLM
    builds Dots3NoteForCausalLM, the text model alone, whose total is the language model's part. The absent
    sub-configs (the class's own pyramid) count the same."""
    defaults = RECORD["defaults"]["dots3_note"]
    model = flopsreg.Model.from_hf_config({**defaults["config"], "text_config": TEXT_DEFAULTS})  # the towers as saved
    assert defaults["config"]["vision_config"]["per_layer_config"]["25"] == {"num_local_experts": 4}
    total = registry.parameters(model).total
    assert total == defaults["parameters"] == 287_309_195_008
    assert (model.towers["vision"].parameters, model.towers["audio"].parameters) == (defaults["vision_parameters"], defaults["audio_parameters"])
    assert defaults["causal_lm"]["class"] == "Dots3NoteForCausalLM"
    assert total - defaults["vision_parameters"] - defaults["audio_parameters"] == defaults["causal_lm"]["parameters"]
    absent = flopsreg.Model.from_hf_config({"model_type": "dots3_note", "text_config": TEXT_DEFAULTS})
    assert registry.parameters(absent).total == total == registry.parameters(flopsreg.Model.from_hf_config(DEFAULTS)).total


@pytest.mark.parametrize(("name", "case"), CASES)
def test_the_token_counts_and_sequence_equal_the_processors(registry, name, case):
    measured = MODELS[name]["cases"][case]
    result = _evaluate(registry, name, case)
    assert [list(plan.grid) for plan in result.images.plans] == measured["image_grid_thw"]
    assert [plan.tokens for plan in result.images.plans] == measured["image_tokens"]
    assert [plan.tokens for plan in result.audio.plans] == [measured["audio_tokens"]]
    assert result.audio.plans[0].grid[1] == measured["mel_frames"]
    assert result.seqlens == (measured["sequence"],)


@pytest.mark.parametrize(("name", "case"), CASES)
def test_the_vision_tower_per_piece_equals_its_modules(registry, name, case):
    """Every image of the case is attended within itself (cu_seqlens): nothing to reconcile."""
    flops = dict(_evaluate(registry, name, case).images.flops)
    record = MODELS[name]["cases"][case]["modules"]
    assert flops["patch_embed"] == record["vision_tower.patch_embed"]
    assert flops["blocks.qkv_proj"] == _modules(name, case, "vision_tower.blocks.*.attn.qkv") + _modules(name, case, "vision_tower.blocks.*.attn.proj")
    assert flops["blocks.router"] == _modules(name, case, "vision_tower.blocks.*.mlp.gate")
    assert flops["blocks.experts"] == _modules(name, case, "vision_tower.blocks.*.mlp.experts")
    dense = sum(record[f"vision_tower.blocks.{i}.mlp"] for i, (kind, *_) in enumerate(vision_schedule(MODELS[name]["config"]["vision_config"]))
                if kind == "dense")
    assert flops["blocks.mlp"] == dense
    assert flops["merger"] == record["vision_tower.merger"]
    assert sum(flops.values()) == record["vision_tower"]


@pytest.mark.parametrize(("name", "case"), CASES)
def test_the_audio_tower_per_piece_equals_its_modules_less_the_convs_padding(registry, name, case):
    """flopsreg counts the convs' taps that read real input; FlopCounterMode counts the zero padding too."""
    flops = dict(_evaluate(registry, name, case).audio.flops)
    record = MODELS[name]["cases"][case]["modules"]
    padding = _padding_taps(name, case)
    assert padding > 0
    convs = sum(record[f"audio_tower.conv_stem.convs.{i}"] for i in range(3))
    assert flops["conv_stem.convs"] + padding == convs
    assert flops["conv_stem.conv_out"] == record["audio_tower.conv_stem.conv_out"]
    assert flops["adapter"] == record["audio_tower.adapter"]
    assert flops["layers.mlp"] == _modules(name, case, "audio_tower.layers.*.mlp")
    assert flops["layers.qkvo_proj"] == sum(_modules(name, case, f"audio_tower.layers.*.self_attn.{p}_proj") for p in "qkvo")
    assert sum(flops.values()) + padding == record["audio_tower"]


@pytest.mark.parametrize(("name", "case"), CASES)
def test_the_whole_forward_equals_flop_counter_mode(registry, eager_registry, name, case):
    """The language model (eager, over text, image and audio tokens, all causal) plus both towers, the
    audio convs' padding apart."""
    measured = MODELS[name]["cases"][case]
    language_model = eager_registry.evaluate(_model(name), seq_len=measured["sequence"], convention="eager").forward
    result = _evaluate(registry, name, case)
    assert result.images.bidirectional == 0 and result.audio.bidirectional == 0
    assert language_model + result.images.tower + result.audio.tower + _padding_taps(name, case) == measured["forward"]


def _bidirectional_pairs(tokens: int, valid: int) -> int:
    """create_bidirectional_mask with a padding mask, pair by pair: a query attends to every key of its chunk that is not padding."""
    return sum(k < valid for _ in range(tokens) for k in range(tokens))


@pytest.mark.parametrize(("name", "case"), CASES)
def test_the_audio_mask_allows_the_pairs_flopsreg_counts(registry, name, case):
    """One chunk, no padding token (the extractor cuts the features to the clip's tokens): n^2 pairs."""
    measured = MODELS[name]["cases"][case]
    audio = MODELS[name]["config"]["audio_config"]
    n = measured["audio_tokens"]
    flops = _evaluate(registry, name, case).audio.flops
    assert flops["layers.attention"] == 4 * audio["hidden_size"] * audio["num_hidden_layers"] * _bidirectional_pairs(n, n)


@pytest.mark.parametrize("size", sorted(RECORD["processor"]))
def test_the_image_rule_gives_the_processors_grid_and_tokens(size):
    """Qwen2VLImageProcessorPil's class defaults (patch 14, merge 2, min 3136, max 1003520 pixels) and Dots3NoteProcessor."""
    dims = {"patch": 14, "merge": 2, **DOTS3_IMAGES.options}
    plan = DOTS3_IMAGES.plan(dims, *map(int, size.split("x")))
    assert (list(plan.grid), plan.tokens) == (RECORD["processor"][size]["grid"], RECORD["processor"][size]["tokens"])


@pytest.mark.parametrize("samples", sorted(RECORD["audio_tokens"], key=int))
def test_the_audio_rule_gives_the_extractors_tokens(samples):
    """Dots3NoteFeatureExtractor's num_audio_tokens at its defaults; a clip of several 60 s chunks is
    planned a grid per chunk, the longest chunk's frames being the padded batch's."""
    measured = RECORD["audio_tokens"][samples]
    plan = DOTS3_AUDIO.images.plan({"hop": 160, "mel": 128}, int(samples))
    assert plan.tokens == measured["tokens"]
    grids = plan.grids or (plan.grid,)
    assert len(grids) == len(measured["chunks"])
    assert max(grid[1] for grid in grids) == measured["mel_frames"]
    if len(grids) > 1:
        assert plan.grid[1] == sum(grid[1] for grid in grids)


def test_the_closed_forms_sum_over_images():
    model = _model("per_layer")
    dims = DOTS3_IMAGES.planning(model.towers["vision"].dims, TINY)
    plans = [DOTS3_IMAGES.plan(dims, *size) for size in ((100, 30), (23, 64))]
    together = tower_flops(DOTS3_VISION, dims, [plan.grid for plan in plans])
    apart = [tower_flops(DOTS3_VISION, dims, [plan.grid]) for plan in plans]
    assert together == {piece: sum(flops[piece] for flops in apart) for piece in together}


def test_the_schedule_enters_as_sums_not_a_term_per_layer():
    """The class default's 42 layers (25 dense, 17 of 16 distinct expert counts) come to the same number of terms as 4."""
    schedule = vision_schedule({})
    assert len(schedule) == 42 and len({entry for entry in schedule if entry[0] == "sparse"}) == 16
    config = {"model_type": "dots3_note", "text_config": TEXT_DEFAULTS}
    default = flopsreg.Model.from_hf_config(config).towers["vision"].dims
    assert (default["dense_layers"], default["routers"], default["active"]) == (25, 608, 17 * 2 * 2112)
    assert len(DOTS3_VISION.flops) == 7


@pytest.mark.parametrize(("vision", "message"), [
    ({"num_hidden_layers": 3, "mlp_layer_types": None, "per_layer_config": None}, r"vision_config\.num_hidden_layers = 3: without mlp_layer_types or pyramid_num_routed, Dots3NoteVisionConfig's pyramid of experts has 42 entries"),
    ({"mlp_layer_types": ["dense", "sparse"]}, r"vision_config\.mlp_layer_types = \['dense', 'sparse'\]: expected 'dense' or 'sparse' for each of the 4 layers"),
    ({"adapter_out_dim": 40}, r"vision_config\.adapter_out_dim = 40: Dots3NoteConfig requires the text hidden_size \(44\)"),
    ({"mlp_layer_types": ["dense", "sparse", "sparse", "sparse"], "per_layer_config": {"1": {"hidden_act": "gelu"}}},
     r"vision_config\.per_layer_config\['1'\]\.hidden_act: unsupported"),
    ({"mlp_layer_types": ["dense", "sparse", "sparse", "sparse"], "per_layer_config": {"1": {"num_experts_per_tok": 9}}},
     r"vision_config\.per_layer_config\[1\]\.num_experts_per_tok = 9: expected at most its num_local_experts \(6\)"),
    ({"num_attention_heads": 5}, r"vision_config\.hidden_size = 24: Dots3NoteVisionConfig requires a multiple of num_attention_heads \(5\)"),
    ({"pyramid_num_routed": [-1, 1, 5, 2], "mlp_bias": True}, r"vision_config\.mlp_bias = true: Dots3NoteVisionConfig refuses it"),
])
def test_configs_transformers_refuses_are_refused_by_name(vision, message):
    config = MODELS["per_layer"]["config"]
    changed = {key: value for key, value in {**config["vision_config"], **vision}.items() if value is not None}
    if "pyramid_num_routed" in vision:
        changed.pop("mlp_layer_types")
    with pytest.raises(flopsreg.FlopsregError, match=message):
        flopsreg.Model.from_hf_config({**config, "vision_config": changed})



@pytest.mark.parametrize("field", ["vision_config", "audio_config"])
@pytest.mark.parametrize("value", [[1], "x", 3])
def test_a_tower_sub_config_that_is_not_an_object_is_one_line(field, value):
    """The towers' derived dims (the ViT's expert schedule) read their sub-config: not an object, one line."""
    config = MODELS["per_layer"]["config"]
    with pytest.raises(flopsreg.FlopsregError, match=rf"^config\.json: {field} = {value!r:.60}: expected an object$".replace("[", r"\[").replace("]", r"\]")):
        flopsreg.Model.from_hf_config({**config, field: value})

def test_a_flat_config_of_another_width_is_refused_by_name():
    """Dots3NoteConfig builds a flat config's towers at their class defaults: adapters 5120 wide."""
    text = dict(MODELS["per_layer"]["config"]["text_config"])
    with pytest.raises(flopsreg.FlopsregError, match=r"vision_config\.adapter_out_dim = 5120: Dots3NoteConfig requires the text hidden_size \(44\)"):
        flopsreg.Model.from_hf_config({**text, "model_type": "dots3_note"})


def test_a_flat_config_of_the_released_width_reads_as_the_nested_one(registry):
    text = {k: v for k, v in TEXT_DEFAULTS.items() if k != "model_type"}
    nested = flopsreg.Model.from_hf_config({"model_type": "dots3_note", "text_config": text})
    flat = flopsreg.Model.from_hf_config({**text, "model_type": "dots3_note"})
    assert registry.parameters(flat).total == registry.parameters(nested).total


@pytest.mark.parametrize(("name", "case"), CASES)
def test_audio_and_image_tokens_alone_plan_the_same_work(registry, name, case):
    """n audio tokens are 8n frames, an image's n tokens n x merge^2 patches: the towers' FLOPs follow from the counts."""
    measured = MODELS[name]["cases"][case]
    by_shape = _evaluate(registry, name, case)
    by_tokens = registry.evaluate(_model(name), seq_len=TEXT_TOKENS, image_tokens=measured["image_tokens"],
                                  audio_tokens=[measured["audio_tokens"]])
    assert by_tokens.forward == by_shape.forward and by_tokens.seqlens == (measured["sequence"],)


LONG = RECORD["long_clip"]


def _long_evaluate(registry):
    return registry.evaluate(_model(LONG["model"]), seq_len=TEXT_TOKENS, audio=[str(LONG["seconds"])])


def _long_padding() -> dict[str, int]:
    """What FlopCounterMode counts of the padded batch beyond each chunk's own work, from the record and
    the config: the stem over the batch's frames less each chunk's real taps, and per padded position
    (T - n a chunk of n tokens in a batch of T) conv_out, q/k/v/o and the MLP, and the T^2 - n^2 pairs."""
    audio = MODELS[LONG["model"]]["config"]["audio_config"]
    h, i, layers = audio["hidden_size"], audio["intermediate_size"], audio["num_hidden_layers"]
    batch = LONG["audio_stem"]
    longest = batch[-1]["output"][1]
    chunks = [stem[-1]["output"][1] for stem in LONG["chunk_stems"]]
    padded = sum(longest - n for n in chunks)
    convs = sum(2 * conv["in_channels"] * conv["out_channels"]
                * (9 * conv["output"][0] * conv["output"][1] * len(chunks) - sum(stem[k]["real_taps"] for stem in LONG["chunk_stems"]))
                for k, conv in enumerate(batch))
    return {
        "conv_stem.convs": convs,
        "conv_stem.conv_out": 2 * padded * batch[-1]["out_channels"] * batch[-1]["output"][0] * h,
        "layers.qkvo_proj": layers * 2 * padded * 4 * h * h,
        "layers.mlp": layers * 2 * padded * 3 * h * i,
        "layers.attention": 4 * h * layers * sum(longest**2 - n**2 for n in chunks),
        "adapter": 0,
    }


def test_a_long_clip_is_planned_as_the_extractors_chunks(registry):
    result = _long_evaluate(registry)
    (plan,) = result.audio.plans
    assert LONG["chunk_sample_lengths"] == [960000, LONG["samples"] - 960000]
    assert plan.tokens == LONG["audio_tokens"] and result.seqlens == (LONG["sequence"],)
    assert [grid[1] for grid in plan.grids] == [stem[0]["input"][1] for stem in LONG["chunk_stems"]]
    assert max(grid[1] for grid in plan.grids) == LONG["mel_frames"] == LONG["features_shape"][-1]


def test_a_long_clips_tower_is_flop_counter_mode_less_the_batchs_padding(registry):
    """Each chunk's own frames, tokens and pairs are counted; recorded = counted + padding, per piece."""
    flops = dict(_long_evaluate(registry).audio.flops)
    record, padding = LONG["modules"], _long_padding()
    assert all(padding[piece] > 0 for piece in padding if piece != "adapter")
    layer = re.compile(r"audio_tower\.layers\.\d+\.")
    projections = sum(n for module, n in record.items() if layer.match(module) and module.endswith("_proj") and ".self_attn." in module)
    attention = sum(n for module, n in record.items() if re.fullmatch(r"audio_tower\.layers\.\d+\.self_attn", module)) - projections
    mlp = sum(n for module, n in record.items() if re.fullmatch(r"audio_tower\.layers\.\d+\.mlp", module))
    assert flops["conv_stem.convs"] + padding["conv_stem.convs"] == sum(record[f"audio_tower.conv_stem.convs.{k}"] for k in range(3))
    assert flops["conv_stem.conv_out"] + padding["conv_stem.conv_out"] == record["audio_tower.conv_stem.conv_out"]
    assert flops["layers.qkvo_proj"] + padding["layers.qkvo_proj"] == projections
    assert flops["layers.attention"] + padding["layers.attention"] == attention
    assert flops["layers.mlp"] + padding["layers.mlp"] == mlp
    assert flops["adapter"] == record["audio_tower.adapter"]
    assert sum(flops.values()) + sum(padding.values()) == record["audio_tower"]


def test_a_long_clips_whole_forward_equals_flop_counter_mode(registry, eager_registry):
    language_model = eager_registry.evaluate(_model(LONG["model"]), seq_len=LONG["sequence"], convention="eager").forward
    result = _long_evaluate(registry)
    assert language_model + result.audio.tower + sum(_long_padding().values()) == LONG["forward"]


@pytest.mark.parametrize("convention", sorted(set(flopsreg.Registry().conventions) - {"exact"}))
@pytest.mark.parametrize("medium", ["images", "videos", "audio"])
def test_every_other_convention_refuses_the_towers_by_name(registry, convention, medium):
    """Where a convention counts the language model, a request with images, videos or audio is refused naming the
    tower; where it refuses the language model itself (the per-head gate, MLA...), that refusal stands."""
    model = _model("per_layer")
    media = {"images": {"images": [(50, 37)]}, "videos": {"videos": [(3, 40, 56)]}, "audio": {"audio": ["0.7"]}}[medium]
    try:
        registry.evaluate(model, seq_len=7, convention=convention)
    except flopsreg.FlopsregError as exc:
        refusal = re.escape(str(exc))
    else:
        tower = "audio tower (dots.3 note audio encoder)" if medium == "audio" else "vision tower (dots.3 note MoE ViT)"
        refusal = rf"^{medium}: convention '{convention}' has no term for the {re.escape(tower)}: count {medium} with the exact convention"
    with pytest.raises(flopsreg.FlopsregError, match=refusal):
        registry.evaluate(model, seq_len=7, convention=convention, **media)


# The worked example of docs/multimodal.md ("dots.3 note"): the class defaults, a 1280 x 720 picture,
# a 10 s clip and 1000 text tokens; every piece written out by hand.
def test_the_worked_example_of_the_docs(registry):
    model = flopsreg.Model.from_hf_config(DEFAULTS)
    result = registry.evaluate(model, seq_len=1000, images=[(720, 1280)], audio=["10"])
    (image,), (clip,) = result.images.plans, result.audio.plans
    assert (image.resized, image.grid, image.tokens) == ((728, 1288), (1, 52, 92), 1196)
    assert (clip.samples, clip.grid, clip.tokens) == (160_000, (1, 1000, 128), 125)
    p, h, layers = 52 * 92, 1536, 42
    experts = sum(range(4, 65, 4)) + 64  # the pyramid's 17 sparse layers
    vision = {
        "patch_embed": 2 * p * h * 3 * 14**2, "blocks.qkv_proj": layers * 2 * p * 4 * h * h,
        "blocks.attention": 4 * h * layers * p * p, "blocks.mlp": 2 * p * 3 * h * 25 * 4224,
        "blocks.router": 2 * p * h * experts, "blocks.experts": 2 * p * 3 * h * 17 * 2 * 2112,
        "merger": 2 * (p // 4) * ((4 * h) ** 2 + 4 * h * 5120),
    }
    assert experts == 608 and dict(result.images.flops) == vision and result.images.tower == 17_703_164_903_424
    n, a, c = 125, 1280, 480
    assert [(x + 1) // 2 + x - 1 for x in (128, 1000, 64, 500, 32, 250)] == [191, 1499, 95, 749, 47, 374]
    audio = {
        "conv_stem.convs": 2 * c * 191 * 1499 + 2 * c * c * 95 * 749 + 2 * c * c * 47 * 374,
        "conv_stem.conv_out": 2 * n * c * 16 * a, "layers.qkvo_proj": 32 * 2 * n * 4 * a * a,
        "layers.attention": 4 * a * 32 * n * n, "layers.mlp": 32 * 2 * n * 3 * a * 5120, "adapter": 2 * n * (a * 5120 + 5120 * 5120),
    }
    assert dict(result.audio.flops) == audio and result.audio.tower == 264_087_823_040
    assert result.seqlens == (2321,)
    language_model = registry.evaluate(model, seq_len=2321).forward
    assert language_model == 76_959_297_888_896
    assert result.forward == language_model + 17_703_164_903_424 + 264_087_823_040 == 94_926_550_615_360


# --- videos: Qwen3VLVideoProcessor (AutoVideoProcessor's class for dots3_note), forward_dots3_video.json ------------

VIDEO_RECORD = json.loads((DATA / "forward_dots3_video.json").read_text())["models"]["dots3_note"]
VIDEO_RUNS = VIDEO_RECORD["runs"]
VIDEO_TINY = {"min_pixels": 64, "max_pixels": 4096 * 3, "temporal_patch_size": 1}  # measure_vid3.py's DOTS3_PIXELS


def _video_model() -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(VIDEO_RECORD["config"])


def test_transformers_runs_a_video_only_with_one_frame_a_temporal_patch():
    """The video processor's class defaults (patch 16, two frames a temporal patch) and two frames of
    the tower's patch both hand Dots3NoteVisionPatchEmbed more patches than the grid says: it raises."""
    assert sorted(VIDEO_RUNS) == ["class_defaults", "temporal_1", "tower_patch"]
    assert VIDEO_RUNS["class_defaults"]["processor"] == {"merge_size": 2, "patch_size": 16, "temporal_patch_size": 2}
    for name in ("class_defaults", "tower_patch"):
        assert VIDEO_RUNS[name]["error"].startswith("RuntimeError: The size of tensor a")
    assert "error" not in VIDEO_RUNS["temporal_1"] and VIDEO_RUNS["temporal_1"]["processor"]["temporal_patch_size"] == 1


def test_the_video_grid_tokens_tower_and_whole_forward_equal_the_recorded_run(registry, eager_registry):
    """Each frame its own grid (attention within a frame), Dots3NoteProcessor's t rows columns / 4 tokens, causal like text."""
    measured = VIDEO_RUNS["temporal_1"]
    result = registry.evaluate(_video_model(), seq_len=VIDEO_RECORD["text_tokens"], videos=[tuple(VIDEO_RECORD["video"])],
                               processor=VIDEO_TINY)
    (plan,) = result.videos.plans
    assert [list(plan.grid)] == measured["video_grid_thw"] and plan.tokens == measured["video_tokens"]
    assert result.seqlens == (measured["sequence"],) and result.videos.bidirectional == 0
    assert result.videos.tower == measured["visual"]
    language_model = eager_registry.evaluate(_video_model(), seq_len=measured["sequence"], convention="eager").forward
    assert language_model + result.videos.tower == measured["forward"]


@pytest.mark.parametrize("medium", ["images", "videos"])
def test_two_frames_a_temporal_patch_are_refused_by_name_with_the_reason(registry, medium):
    given = {"images": [(40, 56)]} if medium == "images" else {"videos": [(3, 40, 56)]}
    with pytest.raises(flopsreg.FlopsregError, match=rf"^{medium}\[0\] = .*: temporal_patch_size = 2: Dots3NoteVisionPatchEmbed takes "
                       r"one frame a patch \(3 x 4 x 4\); with more the grid counts fewer patches than the tower makes and "
                       r"transformers raises: run the processor with temporal_patch_size 1 \(dots.3 note MoE ViT\)$"):
        registry.evaluate(_video_model(), seq_len=7, processor={"temporal_patch_size": 2}, **given)


def test_images_and_videos_share_the_processor_options(registry):
    """One ``processor=`` for both: the pixel bounds and temporal_patch_size 1 are options of both rules."""
    result = registry.evaluate(_video_model(), seq_len=7, images=[(40, 56)], videos=[tuple(VIDEO_RECORD["video"])], processor=VIDEO_TINY)
    assert result.videos.tower == VIDEO_RUNS["temporal_1"]["visual"]
    assert result.seqlens == (7 + result.images.tokens + result.videos.tokens,)



def test_the_worked_example_of_the_video(registry):
    """docs/multimodal.md ("dots.3 note with a 16-frame video"): the class defaults, 16 frames of 1280 x 720."""
    model = flopsreg.Model.from_hf_config(DEFAULTS)
    result = registry.evaluate(model, seq_len=1000, videos=[(16, 720, 1280)])
    (video,) = result.videos.plans
    assert (video.resized, video.grid, video.tokens) == ((140, 280), (16, 10, 20), 800)
    frames, p, h, layers = 16, 10 * 20, 1536, 42
    patches = frames * p
    vision = {
        "patch_embed": 2 * patches * h * 3 * 14**2, "blocks.qkv_proj": layers * 2 * patches * 4 * h * h,
        "blocks.attention": 4 * h * layers * frames * p * p, "blocks.mlp": 2 * patches * 3 * h * 25 * 4224,
        "blocks.router": 2 * patches * h * 608, "blocks.experts": 2 * patches * 3 * h * 17 * 2 * 2112,
        "merger": 2 * (patches // 4) * ((4 * h) ** 2 + 4 * h * 5120),
    }
    assert dict(result.videos.flops) == vision and result.videos.tower == 8_056_327_372_800
    image = registry.evaluate(model, seq_len=1000, images=[(140, 280)])
    assert (image.images.plans[0].grid, image.images.tokens) == ((1, 10, 20), 50)
    assert result.videos.tower == 16 * image.images.tower
    assert result.seqlens == (1800,)
    assert result.forward == registry.evaluate(model, seq_len=1800).forward + 8_056_327_372_800 == 67_123_649_554_944
    assert registry.evaluate(model, seq_len=1800).forward == 59_067_322_182_144
