"""flopsreg against real forward passes of tiny Qwen4-Exp text decoders, recorded in
tests/data/hf_forward/forward_qwen4exp.json by measure_qwen4exp.py (transformers 5.24 on the CPU,
eager attention and experts, torch's FlopCounterMode): every module's FLOPs, the pairs each
attention call's mask let through (the QSA indexer's selected blocks and each query's tail) and
every module's parameters; and a tiny Qwen4ExpForConditionalGeneration on random images through
transformers' own image processor and placeholder expansion (grids, tokens, the tower's FLOPs, the
whole forward, parameters, and the tower's parameters at the vision config's class defaults).
Those numbers come from torch, not from flopsreg.

The path transformers runs is counted as tests/hf/test_fam2026b_forward.py counts it: the chunked_scan
convention with Gated DeltaNet's conv padded, eager attention's full rectangle, plus what
FlopCounterMode does not see: Gated DeltaNet's triangular solves and, on a PLE layer, the n
per-stream gate dot products of width h (an elementwise multiply and sum in the modeling code).
The QSA indexer's per-query loop scores exactly the complete blocks each query sees: no reconciling.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import linear_oracles as lo
import pytest
from eager import eager_registry as make_eager_registry

import flopsreg
from flopsreg.declarations.symbols import s
from flopsreg.formula.exact import compile_exact

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_qwen4exp.json").read_text())
SEQ_LEN = RECORD["seq_len"]
MODELS = sorted(RECORD["models"])
RECTANGLE = flopsreg.Pattern(
    name="eager_rectangle_beside_qsa", slot="attention.mask", flags={"chunked_scan"}, precedence=5000,
    produces="pairs", formula=s**2, summary="every (query, key) pair is computed, then masked", reference="transformers eager_attention_forward",
)


@pytest.fixture(scope="module")
def eager_registry():
    return make_eager_registry(RECTANGLE)


def _config(name: str) -> dict:
    return RECORD["models"][name]["config"]


def _model(name: str, padded: bool = False) -> flopsreg.Model:
    """The recorded config read by flopsreg; *padded*: the Gated DeltaNet convs as torch's conv1d runs them."""
    model = flopsreg.Model.from_hf_config(_config(name))
    return _padded(model) if padded else model


def _ple_layers(name: str) -> list[int]:
    return [i - 1 for i in _config(name).get("ple_layer_ids", [])]


def _unseen(name: str, layer: int, length: int = SEQ_LEN) -> int:
    """PLE's gate dot products on one layer (n streams x width h), which FlopCounterMode does not count."""
    config = _config(name)
    return 2 * length * config["hc_count"] * config["hidden_size"] if layer in _ple_layers(name) else 0


def _solves(params, length: int = SEQ_LEN) -> int:
    """Gated DeltaNet's triangular solves in torch's chunked scan, which FlopCounterMode does not count."""
    _, solves = lo.gdn_chunked_macs(length, params["linear_value_heads"], params["linear_key_head_dim"], params["linear_value_head_dim"], 64)
    return 2 * solves


def _not_seen(name: str, model: flopsreg.Model, length: int = SEQ_LEN) -> int:
    """What flopsreg counts and FlopCounterMode does not see over a forward of *length* positions:
    PLE's gate dot products and Gated DeltaNet's triangular solves, summed over the layers."""
    return sum(
        _unseen(name, layer.index, length) + (_solves({**model.params, **layer.params}, length) if "gated_deltanet" in layer.flags else 0)
        for layer in model.layers
    )


def _padded(model: flopsreg.Model) -> flopsreg.Model:
    kinds = {k: attrs.evolve(v, flags=v.flags | {"padded_conv"}) if "gated_deltanet" in v.flags else v for k, v in model.kinds.items()}
    return attrs.evolve(model, kinds=kinds)


def test_the_cases_cover_qsa_ple_and_a_model_without_qsa():
    configs = [_config(name) for name in MODELS]
    assert any("indexer_n_heads" not in c for c in configs) and any("indexer_n_heads" in c and c.get("ple_layer_ids") for c in configs)
    assert any("full_attention" in c.get("layer_types", []) for c in configs)


@pytest.mark.parametrize("name", MODELS)
def test_the_whole_forward_is_what_torch_counts_plus_what_it_does_not_see(eager_registry, name):
    model = _model(name, padded=True)
    unseen = _not_seen(name, model)
    assert eager_registry.evaluate(model, seq_len=SEQ_LEN, convention="chunked_scan").forward == RECORD["models"][name]["total"] + unseen


@pytest.mark.parametrize("name", MODELS)
def test_pairs_per_indexed_layer_equal_what_the_selected_blocks_let_through(registry, name):
    model = _model(name)
    units = {unit.name: unit for unit in registry.select(model).kinds}
    ours = [
        compile_exact(units[layer.kind].quantities["pairs"])({**model.params, **layer.params, "seq_len": SEQ_LEN})
        for layer in model.layers
        if "gated_deltanet" not in layer.flags
    ]
    assert ours == RECORD["models"][name]["pairs"]


@pytest.mark.parametrize("name", MODELS)
def test_every_module_of_every_layer(eager_registry, name):
    modules = RECORD["models"][name]["modules"]
    model = _model(name, padded=True)
    plan = eager_registry.select(model, convention="chunked_scan")
    units = {unit.name: unit for unit in plan.kinds}
    for layer in model.layers:
        ours, at = units[layer.kind].flops(SEQ_LEN), f"model.layers.{layer.index}"
        params = {**model.params, **layer.params}
        if "gated_deltanet" in layer.flags:
            mixer = sum(n for slot, n in ours.items() if slot.startswith("mixer"))
            assert mixer == modules[f"{at}.linear_attn"] + _solves(params), (name, layer.index)
        else:
            attention = sum(n for slot, n in ours.items() if slot.startswith("attention"))
            assert attention == modules[f"{at}.self_attn"], (name, layer.index)
            assert ours["attention.topk_indexer"] == modules[f"{at}.self_attn.indexer"], (name, layer.index)
        assert ours["mlp"] + ours["mlp.shared"] + ours["mlp.shared_gate"] == modules[f"{at}.mlp"], (name, layer.index)
        hc = modules[f"{at}.attn_hyper_connection"] + modules[f"{at}.mlp_hyper_connection"]
        assert ours["residual_mixer"] == hc, (name, layer.index)
        assert ours.get("per_layer_input", 0) == modules.get(f"{at}.ple", 0) + _unseen(name, layer.index), (name, layer.index)
    head = plan.head.flops(SEQ_LEN)
    assert (head["residual_mixer.head"], head["head"]) == (modules["model.hyper_connection_mixer"], modules["lm_head"])


def _own(name: str, prefix: str) -> int:
    """Parameters of the module *prefix* and of every module under it, as recorded."""
    params = RECORD["models"][name]["module_parameters"]
    return sum(n for module, n in params.items() if module == prefix or module.startswith(prefix + "."))


@pytest.mark.parametrize("name", MODELS)
def test_every_patterns_weights_equal_its_modules_parameters(registry, name):
    model = _model(name)
    plan = registry.select(model)
    units = {unit.name: unit for unit in plan.kinds}
    for layer in model.layers:
        unit, at = units[layer.kind], f"model.layers.{layer.index}"
        chosen = {sel.slot: sel.pattern for sel in unit.selections}
        values = {**model.params, **layer.params}
        quantities = {plan.symbols[q].symbol: v for q, v in unit.quantities.items()}

        def w(*slots: str) -> int:
            total = 0
            for slot in (slot for slot in slots if slot in chosen):
                weights = chosen[slot].weights
                while weights.free_symbols & quantities.keys():  # quantities given in terms of others (v_dim)
                    weights = weights.xreplace(quantities)  # noqa: B023
                total += compile_exact(weights)(values)  # noqa: B023
            return total

        assert w("residual_mixer") == _own(name, f"{at}.attn_hyper_connection") + _own(name, f"{at}.mlp_hyper_connection")
        assert w("per_layer_input") == _own(name, f"{at}.ple"), (name, layer.index)
        assert w("mlp", "mlp.shared", "mlp.shared_gate") == _own(name, f"{at}.mlp"), (name, layer.index)
        if "gated_deltanet" not in layer.flags:
            assert w("attention.topk_indexer") == _own(name, f"{at}.self_attn.indexer"), (name, layer.index)
            norms = 2 * _config(name)["head_dim"]  # q_norm and k_norm: a weights-only slot, not among the selections
            assert w(*(slot for slot in chosen if slot.startswith("attention"))) + norms == _own(name, f"{at}.self_attn"), (name, layer.index)
    assert registry.parameters(model).total == RECORD["models"][name]["parameters"]


def test_each_ple_layer_has_its_own_table_of_prime_rows():
    """The n-gram table of PLE layer l holds the heads' primes l G .. l G + G - 1 (padded): the rows differ by layer."""
    name = "qsa_ple"
    model, config = _model(name), _config(name)
    width = config.get("ple_embed_dim", config["hidden_size"]) // (2 * 8)  # ngram_size 3, heads_per_ngram 8 (defaults)
    rows = []
    for index in _ple_layers(name):
        recorded = RECORD["models"][name]["module_parameters"][f"model.layers.{index}.ple.ple_embedding.ngram_embedding"]
        assert model.layers[index].params["ngram_rows"] * width == recorded
        rows.append(recorded // width)
    assert len(set(rows)) == len(rows)


def _refused(name: str, change: dict, match: str) -> None:
    config = {**_config(name), **change}
    with pytest.raises(flopsreg.ModelError, match=match):
        flopsreg.Model.from_hf_config({k: v for k, v in config.items() if v is not None})


def test_an_indexed_layer_without_the_qsa_fields_is_refused():
    """The default-value trap: indexer_n_heads null means no QSA, which no indexed_attention layer can build."""
    without = {field: None for field in ("indexer_n_heads", "indexer_kv_heads", "indexer_head_dim", "indexer_budget", "indexer_compress_ratio")}
    _refused("qsa_no_ple", without, r"indexer_n_heads: missing or null: every indexed_attention layer runs the QSA indexer")
    _refused("qsa_no_ple", {"indexer_budget": None}, r"indexer_budget: missing or null while indexer_n_heads is set")
    _refused("qsa_no_ple", {"indexer_kv_heads": 2}, r"indexer_kv_heads = 2: expected 1")
    _refused("qsa_no_ple", {"indexer_budget": 6}, r"indexer_budget = 6: expected a multiple of indexer_compress_ratio = 4")


def test_an_index_head_narrower_than_the_rotary_width_is_refused():
    _refused("qsa_no_ple", {"rope_parameters": {"rope_type": "default", "partial_rotary_factor": 1.0}, "head_dim": 32},
             r"indexer_head_dim = 16: expected at least the rotary width 32")
    flopsreg.Model.from_hf_config({**_config("qsa_no_ple"), "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.5}, "head_dim": 32})


def test_the_class_defaults_transformers_cannot_build_are_refused_by_name():
    """Qwen4ExpConfig(): transformers fails building the indexer of its indexed layers; flopsreg names the field."""
    defaults = RECORD["defaults"]["qwen4_exp"]
    assert defaults["error"].startswith("TypeError")
    with pytest.raises(flopsreg.ModelError, match=r"text_config\.indexer_n_heads: missing or null"):
        flopsreg.Model.from_hf_config(defaults["config"])


def test_the_defaults_with_qsa_fields_hold_transformers_parameters(registry):
    """tests/data/hf/qwen4-exp-defaults.json: the class defaults plus the five indexer fields, on the meta device."""
    entry = RECORD["built_defaults"]["qwen4_exp"]
    saved = json.loads((Path(__file__).parents[1] / "data" / "hf" / "qwen4-exp-defaults.json").read_text())
    assert saved == entry["config"]
    model = flopsreg.Model.from_hf_config(saved)
    assert (registry.parameters(model).total, model.towers["vision"].parameters) == (entry["parameters"], entry["visual_parameters"])


def test_ple_on_an_indexed_layer_or_of_an_uneven_width_is_refused():
    _refused("qsa_ple", {"ple_layer_ids": [4]}, r"ple_layer_ids: layer 4 \(one-indexed\) is an indexed_attention layer")
    _refused("qsa_ple", {"ple_embed_dim": 20}, r"ple_embed_dim = 20: expected a multiple of the n-gram heads")


@pytest.mark.parametrize("convention", ["megatron", "verl"])
def test_conventions_refuse_the_qwen4_exp_pieces_by_name(registry, convention):
    with pytest.raises(flopsreg.FlopsregError, match=r"has no term for lowrank_hc"):
        registry.evaluate(_model("qsa_ple"), seq_len=SEQ_LEN, convention=convention)


@pytest.mark.parametrize("name", MODELS)
def test_hf_trainer_leaves_out_the_token_and_n_gram_tables(registry, name):
    """num_parameters(exclude_embeddings=True) skips every nn.Embedding weight: embed_tokens and each PLE layer's n-gram table."""
    params = RECORD["models"][name]["module_parameters"]
    embeddings = sum(n for module, n in params.items() if module == "model.embed_tokens" or module.endswith("ple_embedding.ngram_embedding"))
    counted = RECORD["models"][name]["parameters"] - embeddings
    assert registry.evaluate(_model(name), seq_len=SEQ_LEN, convention="hf_trainer").forward == 2 * SEQ_LEN * counted


# --- the wrapper with images: Qwen3.5's ViT, the qsa_ple decoder over text and image tokens -----------------

IMAGES = RECORD["images"]
CASES = sorted(IMAGES["cases"])


def _images(case: str) -> list[tuple[int, int]]:
    return [tuple(size) for size in IMAGES["cases"][case]["images"]]


def test_the_wrapper_and_its_tower_hold_transformers_parameters(registry):
    model = flopsreg.Model.from_hf_config(IMAGES["config"])
    assert (registry.parameters(model).total, model.towers["vision"].parameters) == (IMAGES["parameters"], IMAGES["visual_parameters"])
    defaults = IMAGES["default_vision"]  # Qwen4ExpVisionConfig() beside the tiny decoder
    model = flopsreg.Model.from_hf_config(defaults["config"])
    assert (registry.parameters(model).total, model.towers["vision"].parameters) == (defaults["parameters"], defaults["visual_parameters"])


@pytest.mark.parametrize("variant", sorted(IMAGES["ties"]))
def test_the_wrappers_tie_word_embeddings_alone_ties_the_head(registry, variant):
    """Qwen4ExpConfig's true ties the head; its text config's true is not forwarded (as transformers builds them)."""
    measured = IMAGES["ties"][variant]
    assert registry.parameters(flopsreg.Model.from_hf_config(measured["config"])).total == measured["parameters"]
    text = IMAGES["config"]["text_config"]
    untied = IMAGES["parameters"] - (text["hidden_size"] * text["vocab_size"] if variant == "wrapper_true" else 0)
    assert measured["parameters"] == untied


@pytest.mark.parametrize("case", CASES)
def test_the_grids_tokens_and_tower_equal_the_recorded_forward(registry, case):
    measured = IMAGES["cases"][case]
    result = registry.evaluate(flopsreg.Model.from_hf_config(IMAGES["config"]), seq_len=IMAGES["text_tokens"], images=_images(case))
    assert [list(plan.grid) for plan in result.images.plans] == measured["image_grid_thw"]
    assert result.seqlens == (measured["sequence_length"],)
    assert result.images.forward == measured["visual"]


@pytest.mark.parametrize("case", CASES)
def test_the_whole_forward_with_images_is_what_torch_counts_plus_what_it_does_not_see(eager_registry, case):
    """The tower plus the decoder over text and image tokens (causal: Qwen4-Exp attends causally within an image)."""
    measured = IMAGES["cases"][case]
    model = _padded(flopsreg.Model.from_hf_config(IMAGES["config"]))
    length = measured["sequence_length"]
    unseen = _not_seen("qsa_ple", model, length)
    language_model = eager_registry.evaluate(model, seq_len=length, convention="chunked_scan").forward
    assert language_model == measured["rest"] + unseen
    tower = eager_registry.evaluate(model, seq_len=IMAGES["text_tokens"], images=_images(case)).images.forward
    assert tower + language_model == measured["forward"] + unseen


def test_hf_trainer_counts_the_tower_per_weight_as_num_parameters_does(registry):
    """The wrapper's tower (less its nn.Embedding of positions) joins the decoder's non-embedding weights."""
    model = flopsreg.Model.from_hf_config(IMAGES["config"])
    vision = IMAGES["config"]["vision_config"]
    text = RECORD["models"]["qsa_ple"]["module_parameters"]
    tables = sum(n for module, n in text.items() if module == "model.embed_tokens" or module.endswith("ngram_embedding"))
    positions = vision["num_position_embeddings"] * vision["hidden_size"]
    counted = IMAGES["parameters"] - tables - positions
    assert registry.evaluate(model, seq_len=SEQ_LEN, convention="hf_trainer").forward == 2 * SEQ_LEN * counted


@pytest.mark.parametrize("convention", ["hf_trainer", "chunked_scan"])
def test_a_convention_without_a_tower_term_refuses_the_images_by_name(registry, convention):
    """The conventions that count this decoder (the others refuse its layers first, above) refuse its tower."""
    with pytest.raises(flopsreg.FlopsregError, match=rf"convention '{convention}' has no term for the vision tower \(Qwen3.5 ViT\)"):
        registry.evaluate(flopsreg.Model.from_hf_config(IMAGES["config"]), seq_len=9, images=[(100, 100)], convention=convention)


# --- the wrapper with videos: Qwen3.5's ViT and video rule (forward_qwen4exp_video.json, measure_vid3.py) -----------------
# AutoVideoProcessor maps qwen4_exp to Qwen3VLVideoProcessor and AutoProcessor to Qwen3VLProcessor;
# Qwen4ExpModel.get_video_features is get_image_features (the tower over the frames' patches), the
# placeholder mask scatters the merged tokens into the <|video_pad|> run: Qwen3.5's computation.

VIDEO_RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_qwen4exp_video.json").read_text())
VIDEOS = VIDEO_RECORD["models"]["qwen4_exp"]
VIDEO_CASES = sorted(VIDEOS["cases"])


def _video(case: str) -> list[tuple[int, int, int]]:
    return [tuple(VIDEOS["cases"][case]["video"])]


def _text(case: str) -> int:
    """The text of the recorded sequence: the prompt and each temporal patch's "<t seconds>" timestamp."""
    return VIDEOS["text_tokens"] + VIDEOS["cases"][case]["timestamp_tokens"]


def test_the_video_record_ran_the_wrapper_through_qwen3_vls_video_processor():
    assert VIDEO_RECORD["transformers"] == "5.24.0" and VIDEO_RECORD["torch"].startswith("2.13")
    assert (VIDEOS["class"], VIDEOS["processor"]) == ("Qwen4ExpForConditionalGeneration", "Qwen3VLVideoProcessor")
    assert VIDEOS["config"] == IMAGES["config"] and VIDEO_CASES == ["five", "four"]


@pytest.mark.parametrize("case", VIDEO_CASES)
def test_the_video_grid_tokens_and_tower_equal_the_recorded_forward(registry, case):
    """Qwen3VLProcessor puts vision_start, rows x columns / merge^2 <|video_pad|> and vision_end per temporal patch."""
    measured = VIDEOS["cases"][case]
    result = registry.evaluate(flopsreg.Model.from_hf_config(VIDEOS["config"]), seq_len=_text(case), videos=_video(case))
    assert [list(plan.grid) for plan in result.videos.plans] == measured["video_grid_thw"]
    assert result.videos.tokens == measured["video_pad_tokens"] + measured["wrapper_tokens"]
    assert result.seqlens == (measured["sequence_length"],)
    assert result.videos.forward == measured["visual"]


@pytest.mark.parametrize("case", VIDEO_CASES)
def test_the_whole_forward_with_a_video_is_what_torch_counts_plus_what_it_does_not_see(eager_registry, case):
    """The tower over the frames plus the decoder over text, timestamps and video tokens (causal, as for images)."""
    measured = VIDEOS["cases"][case]
    model = _padded(flopsreg.Model.from_hf_config(VIDEOS["config"]))
    length = measured["sequence_length"]
    unseen = _not_seen("qsa_ple", model, length)
    language_model = eager_registry.evaluate(model, seq_len=length, convention="chunked_scan").forward
    assert language_model == measured["rest"] + unseen
    tower = eager_registry.evaluate(model, seq_len=_text(case), videos=_video(case)).videos.forward
    assert tower + language_model == measured["forward"] + unseen


@pytest.mark.parametrize("convention", ["hf_trainer", "chunked_scan"])
def test_a_convention_without_a_tower_term_refuses_the_videos_by_name(registry, convention):
    with pytest.raises(flopsreg.FlopsregError, match=rf"videos: convention '{convention}' has no term for the vision tower \(Qwen3.5 ViT\)"):
        registry.evaluate(flopsreg.Model.from_hf_config(VIDEOS["config"]), seq_len=9, videos=[(4, 300, 500)], convention=convention)
