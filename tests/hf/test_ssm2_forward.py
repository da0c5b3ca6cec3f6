"""flopsreg against real forward passes of tiny Zamba and HRM-Text models (transformers 5.24):
shared blocks (Zamba's shared transformer, HRM's reused stacks) whose weights count once and whose
FLOPs count per use.

tests/data/hf_forward/measure_ssm2.py ran each tiny config once under torch's FlopCounterMode at
two sequence lengths, recording the counted FLOPs and the parameters of every module, and built
each model type's config class at its own defaults on the meta device for its parameter total.
FlopCounterMode does not see the elementwise state update of the Mamba scan: it comes from the
step-by-step oracle of tests/linear_oracles.py. So the reference path is

    flopsreg (convention chunked_scan, padded convs, eager attention over every s x s pair)
        == recorded FlopCounterMode count + those unseen multiply-adds x 2,

and the exact count (causal pairs, the recurrent minimum) is below it.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import linear_oracles as lo
import pytest

import flopsreg
from flopsreg.declarations.symbols import s

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_ssm2.json").read_text())
MODELS = sorted(RECORD["models"])
DEFAULTS = sorted(RECORD["defaults"])
RUNS = [(name, int(n)) for name in MODELS for n in RECORD["models"][name]["flops"]]


def _type(name: str) -> str:
    return RECORD["models"][name]["config"]["model_type"]


ZAMBA = [name for name in MODELS if _type(name) == "zamba"]
HRM = [name for name in MODELS if _type(name) == "hrm_text"]


class TorchReference:
    """Eager attention computes every (query, key) pair and masks afterwards."""

    @flopsreg.hookimpl
    def flopsreg_register_patterns(self):
        return [
            flopsreg.Pattern(
                name="eager_rectangle_beside_scans", slot="attention.mask", flags={"chunked_scan"},
                precedence=5000, produces="pairs", formula=s**2,
                summary="every (query, key) pair is computed, then masked", reference="transformers eager_attention_forward",
            )
        ]


@pytest.fixture(scope="module")
def reference():
    return flopsreg.Registry(plugins=[TorchReference()], load_entry_points=False)


def _model(registry, name: str, padded: bool = True) -> flopsreg.Model:
    """The recorded config read by flopsreg, its Mamba convs padded as torch's conv1d computes them."""
    model = flopsreg.Model.from_hf_config(RECORD["models"][name]["config"], registry=registry)
    if not padded:
        return model
    kinds = {k: attrs.evolve(v, flags=v.flags | {"padded_conv"}) if "mamba1" in v.flags else v for k, v in model.kinds.items()}
    return attrs.evolve(model, kinds=kinds)


def _unseen(flags: frozenset[str], params, n: int) -> int:
    """The Mamba scan's elementwise state update, which FlopCounterMode does not count."""
    return 2 * lo.mamba1_recurrent_macs(n, params["mamba_inner"], params["mamba_state"])[0] if "mamba1" in flags else 0


def _hf_layers(model: flopsreg.Model):
    """(flopsreg layer index, transformers layer index) of every layer: a shared block and the Mamba
    layer after it are one transformers layer."""
    hf = 0
    for layer in model.layers:
        yield layer.index, hf
        hf += "mamba1" in layer.flags


def _layer_flops(registry, model, n: int, convention: str) -> dict[int, tuple[object, dict[str, int]]]:
    found = {}
    for unit in registry.select(model, convention=convention).kinds:
        for layers in unit.layers:
            for index in layers:
                found[index] = (unit, unit.flops(n))
    return found


def test_every_tiny_model_ran_and_every_type_is_recorded():
    assert all("flops" in RECORD["models"][name] for name in MODELS)
    assert {_type(name) for name in MODELS} == {"zamba", "hrm_text"} == set(DEFAULTS)


@pytest.mark.parametrize(("name", "n"), RUNS)
def test_the_reference_path_is_what_torch_counts_plus_what_it_does_not_see(reference, name, n):
    model = _model(reference, name)
    plan = reference.select(model, convention="chunked_scan")
    unseen = sum(_unseen(k.flags, k.params, n) * k.count for k in plan.kinds)
    assert reference.evaluate(model, seq_len=n, convention="chunked_scan").forward == RECORD["models"][name]["flops"][str(n)]["total"] + unseen


@pytest.mark.parametrize(("name", "n"), [(name, n) for name, n in RUNS if name in ZAMBA])
def test_every_use_of_the_shared_block_its_linear_and_mamba_against_their_modules(reference, name, n):
    model = _model(reference, name)
    modules = {m.removeprefix("ZambaForCausalLM.model."): v for m, v in RECORD["models"][name]["flops"][str(n)]["modules"].items()}
    flops = _layer_flops(reference, model, n, "chunked_scan")
    uses = 0
    for index, hf in _hf_layers(model):
        unit, counted = flops[index]
        if "concat_input" in unit.flags:  # the shared block: attention and MLP, every use counted
            assert sum(counted.values()) == modules[f"layers.{hf}.shared_transf"], index
            uses += 1
        else:
            mamba = modules.get(f"layers.{hf}.mamba_decoder.mamba", modules.get(f"layers.{hf}.mamba"))
            assert counted.get("shared_block.output", 0) == modules.get(f"layers.{hf}.linear", 0), index
            mixer = sum(v for slot, v in counted.items() if slot.startswith("mixer."))
            assert mixer == mamba + _unseen(unit.flags, unit.params, n), index
    assert uses == sum(t == "hybrid" for t in RECORD["models"][name]["config"].get("layers_block_type") or ["hybrid"] * 2)


@pytest.mark.parametrize("name", ZAMBA)
def test_every_layer_holds_the_parameters_of_its_transformers_module(registry, name):
    model = _model(registry, name, padded=False)
    parameters = RECORD["models"][name]["parameters"]
    shares = registry.parameters(model).shares
    for index, hf in _hf_layers(model):
        kind = model.plan.kind_at(index)
        held = sum(share.weights for share in shares if share.where == kind)
        if "concat_input" in model.kinds[kind].flags:
            assert held == parameters[f"model.layers.{hf}.shared_transf"], index
        elif f"model.layers.{hf}.linear" in parameters:
            assert held == parameters[f"model.layers.{hf}.linear"] + parameters[f"model.layers.{hf}.mamba_decoder"], index
        else:
            assert held == parameters[f"model.layers.{hf}"], index


@pytest.mark.parametrize("name", MODELS)
def test_the_parameter_total_is_what_transformers_allocates(registry, name):
    """Tied embeddings: transformers ties every hybrid layer's block to the first (held once);
    untied, it ties nothing and every hybrid layer holds a block of its own."""
    model = _model(registry, name, padded=False)
    assert registry.parameters(model).total == RECORD["models"][name]["parameter_total"]


def test_the_shared_block_is_held_once_when_tied_and_per_use_when_not(registry):
    tied = registry.parameters(_model(registry, "zamba-tiny", padded=False))
    untied = registry.parameters(_model(registry, "zamba-gqa-untied-tiny", padded=False))
    assert {share.layers for share in tied.shares if share.where == "shared"} == {1}
    assert {share.layers for share in untied.shares if share.where == "shared"} == {4}


@pytest.mark.parametrize("model_type", DEFAULTS)
def test_the_class_defaults_parameter_total_is_what_transformers_allocates(registry, model_type):
    recorded = RECORD["defaults"][model_type]
    model = flopsreg.Model.from_hf_config(recorded["config"], registry=registry)
    assert registry.parameters(model).total == recorded["total"]


@pytest.mark.parametrize(("name", "n"), RUNS)
def test_the_exact_count_is_below_the_reference_path(registry, reference, name, n):
    exact = registry.evaluate(_model(registry, name, padded=False), seq_len=n).forward
    assert exact < reference.evaluate(_model(reference, name), seq_len=n, convention="chunked_scan").forward


def _stack(model: flopsreg.Model, kind: str) -> str:
    return {"low_stack": "L_module", "high_stack": "H_module"}[kind]


@pytest.mark.parametrize(("name", "n"), [(name, n) for name, n in RUNS if name in HRM])
def test_every_stack_layer_counts_its_flops_once_per_run(reference, name, n):
    """FlopCounterMode adds a module's FLOPs over every call: layer i of the L stack ran
    H_cycles x L_cycles times, of the H stack H_cycles times."""
    model = _model(reference, name)
    config = RECORD["models"][name]["config"]
    per_stack = config.get("num_layers_per_stack") or config["num_hidden_layers"]
    runs = {"low_stack": config["H_cycles"] * config["L_cycles"], "high_stack": config["H_cycles"]}
    modules = RECORD["models"][name]["flops"][str(n)]["modules"]
    for unit in reference.select(model, convention="chunked_scan").kinds:
        assert unit.count == runs[unit.name] * per_stack
        for i in range(per_stack):
            recorded = modules[f"HrmTextForCausalLM.model.{_stack(model, unit.name)}.layers.{i}"]
            assert sum(unit.flops(n).values()) * runs[unit.name] == recorded, (unit.name, i)


@pytest.mark.parametrize("name", HRM)
def test_every_stack_holds_its_layers_once(registry, name):
    model = _model(registry, name, padded=False)
    parameters = RECORD["models"][name]["parameters"]
    config = RECORD["models"][name]["config"]
    per_stack = config.get("num_layers_per_stack") or config["num_hidden_layers"]
    shares = registry.parameters(model).shares
    for kind in ("low_stack", "high_stack"):
        assert {share.layers for share in shares if share.where == kind} == {per_stack}
        held = sum(share.weights for share in shares if share.where == kind)
        assert held * per_stack == parameters[f"model.{_stack(model, kind)}"]
    initial = [share for share in shares if share.slot == "initial_state"]
    assert [share.weights for share in initial] == [parameters["model"] - sum(
        v for k, v in parameters.items() if k.count(".") == 1 and k.startswith("model."))]
