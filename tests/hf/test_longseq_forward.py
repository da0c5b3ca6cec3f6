"""Model types whose layers run over another length than the input (patterns/hf/cpmant.py, the
``positions`` quantity) against real forward passes and parameter counts, recorded in
tests/data/hf_forward/forward_longseq.json.

tests/data/hf_forward/measure_longseq.py ran a tiny config of every type (odd widths: hidden 44,
dim_head 12, dim_ff 58, vocabulary 97, a prompt of 5 tokens, and a case without one) through
transformers 5.24 on the CPU (eager attention) under torch's FlopCounterMode at two lengths, and
recorded the totals, the FLOPs of every module and ``sum(p.numel())``; and, per type, the
class-default config with the parameters of its model built on the meta device (the config saved
as tests/data/hf/<type>-defaults.json). Those numbers come from torch and transformers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eager import eager_registry as make_eager_registry
from recorded_forward import forward_at, mlp_per_layer

import flopsreg
from flopsreg.engine import cold
from flopsreg.formula.exact import compile_exact

DATA = Path(__file__).parents[1] / "data"
RECORD = json.loads((DATA / "hf_forward" / "forward_longseq.json").read_text())
MODELS = sorted(RECORD["models"])
DEFAULTS = sorted(RECORD["defaults"])
LONG = RECORD["seq_lens"][-1]


@pytest.fixture(scope="module")
def eager_registry():
    return make_eager_registry()


def _model(name: str, **changes) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config({**RECORD["models"][name]["config"], **changes})


def _positions(name: str, seq_len: int) -> int:
    """What CpmAntModel.forward runs its encoder over: the prompt ids, then the input ids."""
    return RECORD["models"][name]["config"]["prompt_length"] + seq_len


def test_every_type_was_recorded_and_ran_and_built_from_its_defaults():
    assert {entry["config"]["model_type"] for entry in RECORD["models"].values()} == set(DEFAULTS) == {"cpmant"}
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert all("totals" in entry for entry in RECORD["models"].values()), "a model failed to run when recorded"
    assert all("parameters" in entry for entry in RECORD["defaults"].values()), "a class-default model failed to build"


@pytest.mark.parametrize("name", MODELS)
def test_the_whole_forward_equals_flop_counter_mode_at_both_lengths(eager_registry, name):
    totals = RECORD["models"][name]["totals"]
    assert forward_at(eager_registry, _model(name), totals) == totals


@pytest.mark.parametrize("name", MODELS)
def test_exact_counts_what_eager_does_every_pair_is_attended(registry, name):
    """CpmAnt's mask lets every (query, key) pair of the s + prompt_length positions through
    (context is all ones): the exact count is the eager one, no masked pair to leave out."""
    totals = RECORD["models"][name]["totals"]
    assert {length: registry.evaluate(_model(name), seq_len=int(length)).forward for length in totals} == totals


@pytest.mark.parametrize("name", MODELS)
def test_every_layers_modules_run_over_the_prompt_and_the_head_over_the_input(eager_registry, name):
    """Each layer's MLP and projections count s + prompt_length positions; the head, s."""
    modules, model = RECORD["models"][name]["modules"], _model(name)
    for layer, ours in zip(model.layers, mlp_per_layer(eager_registry, model, LONG)):
        assert ours == modules[f"cpmant.encoder.layers.{layer.index}.ffn"], layer.index
    flops = eager_registry.select(model, convention="eager").kinds[0].flops(LONG)
    projection = modules["cpmant.encoder.layers.0.self_att.self_attention.project_q"]
    assert flops["attention.query"] == projection == 2 * _positions(name, LONG) * 44 * 4 * 12
    assert eager_registry.evaluate(model, seq_len=LONG, convention="eager").slot_flops["head"] == modules["lm_head"] == 2 * LONG * 44 * 97


@pytest.mark.parametrize("name", MODELS)
def test_the_layers_pairs_are_every_pair_of_the_positions(registry, name):
    """A literal loop over CpmAntModel._prepare_attention_mask with context all ones, no span and no padding."""
    positions = _positions(name, LONG)
    context, span, kept = [True] * positions, [0] * positions, [True] * positions  # no input id is 0: no left padding
    attended = sum(
        1 for q in range(positions) for k in range(positions)
        if (context[k] or (not context[q] and k <= q)) and span[q] == span[k] and kept[q] and kept[k]
    )
    unit = registry.select(_model(name)).kinds[0]
    assert compile_exact(unit.quantities["pairs"])({**unit.params, "seq_len": LONG}) == attended == positions**2


@pytest.mark.parametrize("name", MODELS)
def test_parameters_equal_what_transformers_allocates(registry, name):
    assert registry.parameters(_model(name)).total == RECORD["models"][name]["parameters"]


def test_the_prompt_and_segment_weights_are_what_the_modules_hold(registry):
    held = RECORD["models"]["cpmant"]["module_parameters"]
    counts = registry.parameters(_model("cpmant")).by_slot()
    assert counts["embedding"] == held["cpmant.input_embedding"] == (97 + 3 * 5) * 44
    assert counts["position_embedding"] == held["cpmant.segment_embedding"] + held["cpmant.position_bias"]


@pytest.mark.parametrize("model_type", DEFAULTS)
def test_class_default_parameters_equal_the_meta_device_model(registry, model_type):
    """The saved tests/data/hf/<type>-defaults.json is the recorded class-default config."""
    path = DATA / "hf" / f"{model_type.replace('_', '-')}-defaults.json"
    entry = RECORD["defaults"][model_type]
    assert json.loads(path.read_text()) == entry["config"]
    assert registry.parameters(flopsreg.Model.from_hf_config(entry["config"])).total == entry["parameters"]


def test_a_layer_over_a_prompt_counts_as_the_same_layer_over_the_longer_input(registry):
    """The positions a layer runs over stand in for seq_len in every slot of that layer, and only there."""
    with_prompt, without = _model("cpmant"), _model("cpmant", prompt_length=0)
    longer = registry.select(without).kinds[0].flops(LONG + 5)
    assert registry.select(with_prompt).kinds[0].flops(LONG) == longer
    head = registry.evaluate(with_prompt, seq_len=LONG).slot_flops["head"]
    assert head == registry.evaluate(without, seq_len=LONG).slot_flops["head"] != registry.evaluate(without, seq_len=LONG + 5).slot_flops["head"]


def test_the_manifest_trees_compose_it_as_sympy_does(registry):
    model = _model("cpmant")
    tree = cold.cold_selection(model)
    assert tree is not None
    assert [tree.forward(n) for n in (1, 13, LONG)] == [registry.evaluate(model, seq_len=n).forward for n in (1, 13, LONG)]


def test_after_a_cached_prefix_there_is_no_count(registry):
    """With a cache CpmAnt embeds the prompt again and keeps its keys: not new tokens in a longer sequence."""
    with pytest.raises(flopsreg.ModelError, match=r"run over positions = prompt_length \+ seq_len, not over the seq_len input tokens"):
        registry.evaluate(_model("cpmant"), seq_len=4, cached=8)


def test_no_framework_convention_counts_it(registry):
    with pytest.raises(flopsreg.ModelError, match=r"megatron has no term for bidirectional"):
        registry.evaluate(_model("cpmant"), seq_len=LONG, convention="megatron")
