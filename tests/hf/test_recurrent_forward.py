"""flopsreg against real forward passes of tiny recurrent and state-space language models (transformers 5.24).

tests/data/hf_forward/measure_recurrent.py ran each tiny config once under torch's FlopCounterMode
at two sequence lengths, recording the counted FLOPs and the parameters of every module, and built
each model type's config class at its own defaults on the meta device for its parameter total.
FlopCounterMode counts matmuls, einsums and convolutions only: what it does not see (the
elementwise state update of Mamba1's sequential scan, RWKV-4's WKV loop) comes from the step-by-step oracle of
tests/linear_oracles.py (the reconciliation is tests/hf/linear_reference.py's); what it counts twice (DiffLlama's second attention call recomputes the
same QK^T) from the shapes of that call. So the reference path is

    flopsreg (convention chunked_scan, padded convs, attention over every s x s pair)
        == recorded FlopCounterMode count + those unseen multiply-adds x 2 - the repeated QK^T,

and the exact count (the recurrent minimum) is below it.
"""

from __future__ import annotations

import json
from pathlib import Path

import linear_reference as lr
import pytest

import flopsreg

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_recurrent.json").read_text())
MODELS = sorted(RECORD["models"])
DEFAULTS = sorted(RECORD["defaults"])
MIXER_MODULE = {"mamba": "mixer", "falcon_mamba": "mixer", "mamba2": "mixer", "bamba": "mamba", "rwkv": "attention"}
OUTPUT = ("out_proj", "output")
ATTENTION_ONLY = {"diffllama"}


@pytest.fixture(scope="module")
def reference():
    return lr.reference_registry()


def _repeated(flags: frozenset[str], params: dict[str, int], n: int) -> int:
    """FLOPs torch counts twice: DiffLlama's second attention call recomputes QK^T over every s x s pair
    (modeling_diffllama.py DiffLlamaAttention.forward calls the attention with the same Q and K twice)."""
    return 2 * params["heads"] * params["head_dim"] * n * n if "differential_attention" in flags else 0


def _type(name: str) -> str:
    return lr.model_type(RECORD, name)


MIXER_MODELS = [name for name in MODELS if _type(name) in MIXER_MODULE]


def test_every_tiny_model_ran_and_every_family_is_recorded():
    assert all("flops" in RECORD["models"][name] for name in MODELS), "a model failed to run when recorded"
    assert {_type(name) for name in MODELS} == set(MIXER_MODULE) | ATTENTION_ONLY
    assert set(DEFAULTS) == set(MIXER_MODULE) | ATTENTION_ONLY


@pytest.mark.parametrize(("name", "n"), lr.runs(RECORD))
def test_the_reference_path_is_what_torch_counts_plus_what_it_does_not_see(reference, name, n):
    lr.check_reference_path(RECORD, reference, name, n, repeated=_repeated)


@pytest.mark.parametrize(("name", "n"), lr.runs(RECORD, MIXER_MODULE))
def test_every_mixer_projection_conv_and_scan_against_its_module(reference, name, n):
    lr.check_mixers_against_modules(RECORD, reference, name, n, MIXER_MODULE[_type(name)], OUTPUT)


@pytest.mark.parametrize("name", MIXER_MODELS)
def test_every_mixer_holds_the_parameters_transformers_allocates(registry, name):
    lr.check_mixer_parameters(RECORD, registry, name, MIXER_MODULE[_type(name)])


@pytest.mark.parametrize(("name", "n"), lr.runs(RECORD, ATTENTION_ONLY))
def test_differential_attention_core_against_its_module(reference, name, n):
    model = lr.model(RECORD, reference, name)
    for index, unit, flops in lr.layers(reference, model, n, "chunked_scan"):
        recorded = lr.modules(RECORD, name, n, index, "self_attn")
        total = recorded.pop("")
        assert flops["attention.query"] + flops["attention.projection"] + flops["attention.output"] == sum(recorded.values())
        assert flops["attention.core"] == total - sum(recorded.values()) - _repeated(unit.flags, unit.params, n), index


@pytest.mark.parametrize("name", [name for name in MODELS if _type(name) in ATTENTION_ONLY])
def test_differential_attention_holds_the_parameters_transformers_allocates(registry, name):
    model = lr.model(RECORD, registry, name, padded=False)
    parameters = RECORD["models"][name]["parameters"]
    for index, unit, _ in lr.layers(registry, model, 1, "exact"):
        held = next(v for m, v in parameters.items() if m.endswith(f"layers.{index}.self_attn"))
        assert lr.weights(registry, unit, [slot for slot in registry.slots if slot.startswith("attention.")]) == held, index


@pytest.mark.parametrize("name", MODELS)
def test_the_parameter_total_is_what_transformers_allocates(registry, name):
    model = lr.model(RECORD, registry, name, padded=False)
    assert registry.parameters(model).total == RECORD["models"][name]["parameter_total"]


@pytest.mark.parametrize("model_type", DEFAULTS)
def test_the_class_defaults_parameter_total_is_what_transformers_allocates(registry, model_type):
    recorded = RECORD["defaults"][model_type]
    model = flopsreg.Model.from_hf_config(recorded["config"], registry=registry)
    assert registry.parameters(model).total == recorded["total"]


@pytest.mark.parametrize(("name", "n"), lr.runs(RECORD))
def test_the_recurrent_minimum_is_below_the_reference_path(registry, reference, name, n):
    exact = registry.evaluate(lr.model(RECORD, registry, name, padded=False), seq_len=n).forward
    torch_path = reference.evaluate(lr.model(RECORD, reference, name), seq_len=n, convention="chunked_scan").forward
    # RWKV-4 has no conv, no chunked scan and no attention: its only path is the recurrent minimum.
    assert exact == torch_path if _type(name) == "rwkv" else exact < torch_path
