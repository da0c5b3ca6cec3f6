"""flopsreg against real forward passes of tiny recurrent and hybrid models (transformers 5.24):
Zamba2's shared blocks, taken in turn, with per-use low-rank adapters; RecurrentGemma's RG-LRU
blocks and local attention; xLSTM's mLSTM blocks (the chunkwise and step kernels of its
inference path, in pieces of max_inference_chunksize tokens).

tests/data/hf_forward/measure_r5rec.py ran each tiny config once under torch's FlopCounterMode at
two sequence lengths, recording the counted FLOPs and the parameters of every module, and built
each model type's config class at its own defaults on the meta device for its parameter total.
The reconciliation is tests/hf/linear_reference.py's (its torch reference and unseen FLOPs):

    flopsreg (convention chunked_scan, padded convs, eager attention over every s x s pair)
        == recorded FlopCounterMode count + the multiply-adds it does not see x 2,

and the exact count (causal pairs, the recurrent minimum) is below it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import linear_reference as lr
import pytest

import flopsreg
from flopsreg.errors import ModelError

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_r5rec.json").read_text())
MODELS = sorted(RECORD["models"])
DEFAULTS = sorted(RECORD["defaults"])
RUNS = lr.runs(RECORD)


def _type(name: str) -> str:
    return lr.model_type(RECORD, name)


ZAMBA2 = [name for name in MODELS if _type(name) == "zamba2"]
GRIFFIN = [name for name in MODELS if _type(name) == "recurrent_gemma"]
XLSTM = [name for name in MODELS if _type(name) == "xlstm"]
MLSTM_PROJECTIONS = ("q", "k", "v", "ogate_preact", "igate_preact", "fgate_preact")


@pytest.fixture(scope="module")
def reference():
    return lr.reference_registry()


def _units(registry, model: flopsreg.Model, convention: str) -> dict[int, object]:
    """The selected layer kind of every flopsreg layer index."""
    return {index: unit for unit in registry.select(model, convention=convention).kinds for layers in unit.layers for index in layers}


def _hf_layers(model: flopsreg.Model):
    """(flopsreg layer index, transformers layer index) of every layer: a shared block and the
    Mamba2 layer after it are one transformers layer."""
    hf = 0
    for layer in model.layers:
        yield layer.index, hf
        hf += "mamba2" in layer.flags


def test_every_tiny_model_ran_and_every_type_is_recorded():
    assert all("flops" in RECORD["models"][name] for name in MODELS)
    assert {_type(name) for name in MODELS} == set(DEFAULTS)


@pytest.mark.parametrize(("name", "n"), RUNS)
def test_the_reference_path_is_what_torch_counts_plus_what_it_does_not_see(reference, name, n):
    lr.check_reference_path(RECORD, reference, name, n)


@pytest.mark.parametrize(("name", "n"), [(name, n) for name, n in RUNS if name in ZAMBA2])
def test_every_use_of_a_shared_block_its_adapters_linear_and_mamba2_against_their_modules(reference, name, n):
    """The adapters run inside the shared block's modules; flopsreg files them under the use (the
    hybrid layer after the block), whose weights they are."""
    model = lr.model(RECORD, reference, name)
    modules = {m.removeprefix("Zamba2ForCausalLM.model."): v for m, v in RECORD["models"][name]["flops"][str(n)]["modules"].items()}
    units = _units(reference, model, "chunked_scan")
    block = 0
    for index, hf in _hf_layers(model):
        counted = units[index].flops(n)
        if "concat_input" in units[index].flags:
            block = sum(counted.values())
            continue
        if f"layers.{hf}.shared_transformer" in modules:
            assert block + counted["shared_block.adapters"] == modules[f"layers.{hf}.shared_transformer"], index
            assert counted["shared_block.output"] == modules[f"layers.{hf}.linear"], index
        mamba = modules.get(f"layers.{hf}.mamba_decoder.mamba", modules.get(f"layers.{hf}.mamba"))
        mixer = sum(v for slot, v in counted.items() if slot.startswith("mixer."))
        assert mixer == mamba + lr.unseen(units[index].flags, units[index].params, n), index


@pytest.mark.parametrize("name", ZAMBA2)
def test_every_layer_holds_the_parameters_of_its_transformers_modules(registry, name):
    """A Mamba2 layer holds its module; a use its linear, Mamba2 layer and adapters; the blocks,
    once each, what transformers' first num_mem_blocks blocks hold less their adapters."""
    model = lr.model(RECORD, registry, name, padded=False)
    parameters = RECORD["models"][name]["parameters"]
    shares = registry.parameters(model).shares
    held = {(s.where, s.slot == "shared_block.adapters"): 0 for s in shares}
    for s in shares:
        held[s.where, s.slot == "shared_block.adapters"] += s.weights
    uses = [hf for index, hf in _hf_layers(model) if "concat_input" in model.kinds[model.plan.kind_at(index)].flags]
    for index, hf in _hf_layers(model):
        kind = model.plan.kind_at(index)
        if hf not in uses:
            assert held[kind, False] == parameters[f"model.layers.{hf}"], index
        elif kind == "hybrid":
            assert held[kind, False] == parameters[f"model.layers.{hf}.linear"] + parameters[f"model.layers.{hf}.mamba_decoder"], index
    first = uses[: RECORD["models"][name]["config"].get("num_mem_blocks", 1)]
    blocks = sum(parameters[f"model.layers.{hf}.shared_transformer"] for hf in first)
    assert held["shared", False] * len(first) + held["hybrid", True] * len(uses) == blocks
    assert {s.layers for s in shares if s.where == "shared"} == {len(first)}


@pytest.mark.parametrize("name", MODELS)
def test_the_parameter_total_is_what_transformers_allocates(registry, name):
    model = lr.model(RECORD, registry, name, padded=False)
    assert registry.parameters(model).total == RECORD["models"][name]["parameter_total"]


@pytest.mark.parametrize("model_type", DEFAULTS)
def test_the_class_defaults_parameter_total_is_what_transformers_allocates(registry, model_type):
    recorded = RECORD["defaults"][model_type]
    model = flopsreg.Model.from_hf_config(recorded["config"], registry=registry)
    assert registry.parameters(model).total == recorded["total"]


@pytest.mark.parametrize(("name", "n"), RUNS)
def test_the_exact_count_is_below_the_reference_path(registry, reference, name, n):
    exact = registry.evaluate(lr.model(RECORD, registry, name, padded=False), seq_len=n).forward
    assert exact < reference.evaluate(lr.model(RECORD, reference, name), seq_len=n, convention="chunked_scan").forward


@pytest.mark.parametrize(("name", "n"), [(name, n) for name, n in RUNS if name in GRIFFIN])
def test_every_griffin_block_against_its_modules(reference, name, n):
    """Recurrent block: linear_x and linear_y, the conv, the RG-LRU (its gates; its recurrence is
    unseen by torch) and linear_out; attention block: everything under its module; the MLP."""
    model = lr.model(RECORD, reference, name)
    modules = {m.removeprefix("RecurrentGemmaForCausalLM.model."): v for m, v in RECORD["models"][name]["flops"][str(n)]["modules"].items()}
    units = _units(reference, model, "chunked_scan")
    for index, unit in units.items():
        counted, block = unit.flops(n), f"layers.{index}.temporal_block"
        if "rglru" in unit.flags:
            assert counted["mixer.projection"] == modules[f"{block}.linear_x"] + modules[f"{block}.linear_y"], index
            assert counted["mixer.conv"] == modules[f"{block}.conv_1d"], index
            assert counted["mixer.core"] == modules[f"{block}.rg_lru"] + lr.unseen(unit.flags, unit.params, n), index
            assert counted["mixer.output"] == modules[f"{block}.linear_out"], index
        else:
            assert sum(v for slot, v in counted.items() if slot.startswith("attention.")) == modules[block], index
        assert counted["mlp"] == modules[f"layers.{index}.mlp_block"], index


@pytest.mark.parametrize("name", GRIFFIN)
def test_every_griffin_layer_holds_the_parameters_of_its_module(registry, name):
    model = lr.model(RECORD, registry, name, padded=False)
    parameters = RECORD["models"][name]["parameters"]
    shares = registry.parameters(model).shares
    for layer in model.layers:
        held = sum(s.weights for s in shares if s.where == layer.kind)
        assert held == parameters[f"model.layers.{layer.index}"], layer.index


@pytest.mark.parametrize(("name", "n"), [(name, n) for name, n in RUNS if name in XLSTM])
def test_every_mlstm_block_against_its_modules(reference, name, n):
    """q, k, v and the gates; the backend (chunkwise and step kernels, with what torch does not
    see of them); out_proj; the feed-forward."""
    model = lr.model(RECORD, reference, name)
    modules = {m.removeprefix("xLSTMForCausalLM.backbone."): v for m, v in RECORD["models"][name]["flops"][str(n)]["modules"].items()}
    units = _units(reference, model, "chunked_scan")
    for index, unit in units.items():
        counted, layer = unit.flops(n), f"blocks.{index}.mlstm_layer"
        assert counted["mixer.projection"] == sum(modules[f"{layer}.{part}"] for part in MLSTM_PROJECTIONS), index
        assert counted["mixer.core"] == modules[f"{layer}.mlstm_backend"] + lr.unseen(unit.flags, unit.params, n), index
        assert counted["mixer.output"] == modules[f"{layer}.out_proj"], index
        assert counted["mlp"] == modules[f"blocks.{index}.ffn"], index


@pytest.mark.parametrize("name", XLSTM)
def test_every_mlstm_block_holds_the_parameters_of_its_module(registry, name):
    """Also: the head is untied whatever tie_word_embeddings says (xLSTMForCausalLM ties nothing)."""
    model = lr.model(RECORD, registry, name, padded=False)
    parameters = RECORD["models"][name]["parameters"]
    shares = registry.parameters(model).shares
    for layer in model.layers:
        assert sum(s.weights for s in shares if s.where == layer.kind) == parameters[f"backbone.blocks.{layer.index}"], layer.index
    assert [s.weights for s in shares if s.slot == "head"] == [parameters["lm_head"]]


@pytest.mark.parametrize(("change", "field"), [
    ({"tie_word_embeddings": False}, "tie_word_embeddings"),
    ({"add_bias_linear": True}, "add_bias_linear"),
    ({"num_key_value_heads": 1}, "use_shared_attention_adapter"),
    ({"layers_block_type": None}, "layers_block_type"),
    ({"layers_block_type": ["hybrid"] * 6 + ["attention"]}, "layers_block_type[6]"),
])
def test_what_zamba2_cannot_count_is_refused_in_one_line(registry, change, field):
    config = {**RECORD["models"]["zamba2-tiny"]["config"], **change}
    with pytest.raises(ModelError, match="^config\\.json: " + re.escape(field)) as error:
        flopsreg.Model.from_hf_config(config, registry=registry)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("change", "field"), [
    ({"lru_width": 44}, "lru_width"),
    ({"block_types": ["recurrent", "local"]}, "block_types"),
])
def test_what_recurrent_gemma_cannot_count_is_refused_in_one_line(registry, change, field):
    config = {**RECORD["models"]["recurrent-gemma-tiny"]["config"], **change}
    with pytest.raises(ModelError, match="^config\\.json: " + re.escape(field)) as error:
        flopsreg.Model.from_hf_config(config, registry=registry)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("change", "field"), [
    ({"use_bias": True}, "use_bias"),
    ({"mode": "train_with_padding"}, "mode"),
    ({"qk_dim_factor": 0.3}, "qk_dim_factor"),
    ({"v_dim_factor": "1"}, "v_dim_factor"),
    ({"embedding_dim": 48}, "embedding_dim"),
])
def test_what_xlstm_cannot_count_is_refused_in_one_line(registry, change, field):
    config = {**RECORD["models"]["xlstm-tiny"]["config"], **change}
    with pytest.raises(ModelError, match="^config\\.json: " + re.escape(field)) as error:
        flopsreg.Model.from_hf_config(config, registry=registry)
    assert "\n" not in str(error.value)
