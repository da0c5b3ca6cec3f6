"""flopsreg against real forward passes of tiny recurrent and state-space language models (transformers 5.24).

tests/data/hf_forward/measure_recurrent.py ran each tiny config once under torch's FlopCounterMode
at two sequence lengths, recording the counted FLOPs and the parameters of every module, and built
each model type's config class at its own defaults on the meta device for its parameter total.
FlopCounterMode counts matmuls, einsums and convolutions only: what it does not see (the
elementwise state update of Mamba1's sequential scan, RWKV-4's WKV loop) comes from the step-by-step oracle of
tests/linear_oracles.py; what it counts twice (DiffLlama's second attention call recomputes the
same QK^T) from the shapes of that call. So the reference path is

    flopsreg (convention chunked_scan, padded convs, attention over every s x s pair)
        == recorded FlopCounterMode count + those unseen multiply-adds x 2 - the repeated QK^T,

and the exact count (the recurrent minimum) is below it.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import linear_oracles as lo
import pytest
import sympy

import flopsreg
from flopsreg.declarations.symbols import s
from flopsreg.formula.exact import compile_exact

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_recurrent.json").read_text())
MODELS = sorted(RECORD["models"])
DEFAULTS = sorted(RECORD["defaults"])
MIXER_FLAGS = {"mamba1", "mamba2", "rwkv4"}
MIXER_SLOTS = ("mixer.projection", "mixer.conv", "mixer.core", "mixer.output")
MIXER_MODULE = {"mamba": "mixer", "falcon_mamba": "mixer", "mamba2": "mixer", "bamba": "mamba", "rwkv": "attention"}
OUTPUT = ("out_proj", "output")
ATTENTION_ONLY = {"diffllama"}


class TorchReference:
    """Eager attention computes every (query, key) pair and masks afterwards."""

    @flopsreg.hookimpl
    def flopsreg_register_patterns(self):
        return [
            flopsreg.Pattern(
                name="eager_rectangle_beside_chunked_scans", slot="attention.mask", flags={"chunked_scan"},
                precedence=5000, produces="pairs", formula=s**2,
                summary="every (query, key) pair is computed, then masked", reference="transformers eager_attention_forward",
            )
        ]


@pytest.fixture(scope="module")
def reference():
    return flopsreg.Registry(plugins=[TorchReference()], load_entry_points=False)


def _model(registry, name: str, padded: bool = True) -> flopsreg.Model:
    """The recorded config read by flopsreg, its mixers' convs padded as torch's conv1d computes them."""
    model = flopsreg.Model.from_hf_config(RECORD["models"][name]["config"], registry=registry)
    if not padded:
        return model
    kinds = {k: attrs.evolve(v, flags=v.flags | {"padded_conv"}) if v.flags & MIXER_FLAGS else v for k, v in model.kinds.items()}
    return attrs.evolve(model, kinds=kinds)


def _unseen(flags: frozenset[str], params: dict[str, int], n: int) -> int:
    """FLOPs of one layer's scan that FlopCounterMode does not count: Mamba1's elementwise state update."""
    if "mamba1" in flags:
        update, _ = lo.mamba1_recurrent_macs(n, params["mamba_inner"], params["mamba_state"])
        return 2 * update
    if "rwkv4" in flags:  # every step of the WKV loop is elementwise
        return 2 * lo.rwkv4_recurrent_macs(n, params["rwkv_attention_width"])
    return 0


def _outside_modules(flags: frozenset[str], params: dict[str, int], n: int) -> int:
    """Mamba1's dt_proj runs as ``dt_proj.weight @ x`` (modeling_mamba.py MambaMixer.forward), filed under the mixer."""
    return 2 * n * params["mamba_dt_rank"] * params["mamba_inner"] if "mamba1" in flags else 0


def _repeated(flags: frozenset[str], params: dict[str, int], n: int) -> int:
    """FLOPs torch counts twice: DiffLlama's second attention call recomputes QK^T over every s x s pair
    (modeling_diffllama.py DiffLlamaAttention.forward calls the attention with the same Q and K twice)."""
    return 2 * params["heads"] * params["head_dim"] * n * n if "differential_attention" in flags else 0


def _type(name: str) -> str:
    return RECORD["models"][name]["config"]["model_type"]


def _runs(types=None):
    return [(name, int(n)) for name in MODELS for n in RECORD["models"][name].get("flops", {}) if types is None or _type(name) in types]


MIXER_MODELS = [name for name in MODELS if _type(name) in MIXER_MODULE]


def _layers(model: flopsreg.Model, registry, n: int, convention: str):
    """(index, kind selection, slot FLOPs) of every layer."""
    for unit in registry.select(model, convention=convention).kinds:
        for layers in unit.layers:
            for index in layers:
                yield index, unit, unit.flops(n)


def test_every_tiny_model_ran_and_every_family_is_recorded():
    assert all("flops" in RECORD["models"][name] for name in MODELS), "a model failed to run when recorded"
    assert {_type(name) for name in MODELS} == set(MIXER_MODULE) | ATTENTION_ONLY
    assert set(DEFAULTS) == set(MIXER_MODULE) | ATTENTION_ONLY


@pytest.mark.parametrize(("name", "n"), _runs())
def test_the_reference_path_is_what_torch_counts_plus_what_it_does_not_see(reference, name, n):
    model = _model(reference, name)
    plan = reference.select(model, convention="chunked_scan")
    unseen = sum((_unseen(k.flags, k.params, n) - _repeated(k.flags, k.params, n)) * k.count for k in plan.kinds)
    assert reference.evaluate(model, seq_len=n, convention="chunked_scan").forward == RECORD["models"][name]["flops"][str(n)]["total"] + unseen


def _modules(name: str, n: int, index: int, part: str) -> dict[str, int]:
    """The recorded FLOPs of layer *index*'s module *part* and of its direct children, by child name."""
    modules = RECORD["models"][name]["flops"][str(n)]["modules"]
    prefix = next(m for m in modules if m.endswith((f".layers.{index}.{part}", f".blocks.{index}.{part}")))
    children = {m[len(prefix) + 1:]: v for m, v in modules.items() if m.startswith(prefix + ".") and "." not in m[len(prefix) + 1:]}
    return {"": modules[prefix], **children}


@pytest.mark.parametrize(("name", "n"), _runs(MIXER_MODULE))
def test_every_mixer_projection_conv_and_scan_against_its_module(reference, name, n):
    model = _model(reference, name)
    part = MIXER_MODULE[_type(name)]
    checked = 0
    for index, unit, flops in _layers(model, reference, n, "chunked_scan"):
        if not unit.flags & MIXER_FLAGS:
            continue
        recorded = _modules(name, n, index, part)
        total = recorded.pop("")
        assert flops["mixer.output"] == next(recorded.pop(o) for o in OUTPUT if o in recorded), (index, "output")
        outside = _outside_modules(unit.flags, unit.params, n)
        assert flops["mixer.projection"] == sum(recorded.values()) + outside, (index, "projections", sorted(recorded))
        inside = total - flops["mixer.output"] - sum(recorded.values()) - outside  # the conv and the scan
        assert flops.get("mixer.conv", 0) + flops["mixer.core"] == inside + _unseen(unit.flags, unit.params, n), index
        checked += 1
    assert checked


def _weights(registry, unit, slots) -> int:
    """The parameters of *slots* of a layer kind, from the selected patterns' weights."""
    total = 0
    for sel in unit.selections:
        if sel.slot in slots:
            expr = sel.pattern.weights.xreplace({registry.quantities[q].symbol: v for q, v in unit.quantities.items()})
            total += compile_exact(sympy.sympify(expr))(dict(unit.params))
    return total


@pytest.mark.parametrize("name", MIXER_MODELS)
def test_every_mixer_holds_the_parameters_transformers_allocates(registry, name):
    model = _model(registry, name, padded=False)
    part = MIXER_MODULE[_type(name)]
    parameters = RECORD["models"][name]["parameters"]
    checked = 0
    for index, unit, _ in _layers(model, registry, 1, "exact"):
        if unit.flags & MIXER_FLAGS:
            held = next(v for m, v in parameters.items() if m.endswith((f"layers.{index}.{part}", f"blocks.{index}.{part}")))
            assert _weights(registry, unit, MIXER_SLOTS) == held, (index, unit.name)
            checked += 1
    assert checked


@pytest.mark.parametrize(("name", "n"), _runs(ATTENTION_ONLY))
def test_differential_attention_core_against_its_module(reference, name, n):
    model = _model(reference, name)
    for index, unit, flops in _layers(model, reference, n, "chunked_scan"):
        recorded = _modules(name, n, index, "self_attn")
        total = recorded.pop("")
        assert flops["attention.query"] + flops["attention.projection"] + flops["attention.output"] == sum(recorded.values())
        assert flops["attention.core"] == total - sum(recorded.values()) - _repeated(unit.flags, unit.params, n), index


@pytest.mark.parametrize("name", [name for name in MODELS if _type(name) in ATTENTION_ONLY])
def test_differential_attention_holds_the_parameters_transformers_allocates(registry, name):
    model = _model(registry, name, padded=False)
    parameters = RECORD["models"][name]["parameters"]
    for index, unit, _ in _layers(model, registry, 1, "exact"):
        held = next(v for m, v in parameters.items() if m.endswith(f"layers.{index}.self_attn"))
        assert _weights(registry, unit, [slot for slot in registry.slots if slot.startswith("attention.")]) == held, index


@pytest.mark.parametrize("name", MODELS)
def test_the_parameter_total_is_what_transformers_allocates(registry, name):
    model = _model(registry, name, padded=False)
    assert registry.parameters(model).total == RECORD["models"][name]["parameter_total"]


@pytest.mark.parametrize("model_type", DEFAULTS)
def test_the_class_defaults_parameter_total_is_what_transformers_allocates(registry, model_type):
    recorded = RECORD["defaults"][model_type]
    model = flopsreg.Model.from_hf_config(recorded["config"], registry=registry)
    assert registry.parameters(model).total == recorded["total"]


@pytest.mark.parametrize(("name", "n"), _runs())
def test_the_recurrent_minimum_is_below_the_reference_path(registry, reference, name, n):
    exact = registry.evaluate(_model(registry, name, padded=False), seq_len=n).forward
    torch_path = reference.evaluate(_model(reference, name), seq_len=n, convention="chunked_scan").forward
    # RWKV-4 has no conv, no chunked scan and no attention: its only path is the recurrent minimum.
    assert exact == torch_path if _type(name) == "rwkv" else exact < torch_path
