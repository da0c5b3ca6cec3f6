"""Models that differ only in parameter values: composed once per structure, numbers unchanged.

A registry that has evaluated a model rebinds another model of the same structure (flags, plan,
parameter names) to it instead of composing it again. Every number must equal what a fresh
composition gives (``compose`` called directly: no cache of any kind), bad values must be refused
with the same message, and the grid sweep must equal one evaluation per point. Last, every result
object's ``to_dict()`` equals the command line's ``--format json`` for the same call.
"""

from __future__ import annotations

import itertools
import json

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flopsreg
from flopsreg import render
from flopsreg.cli import main
from flopsreg.engine.compose import compose
from flopsreg.engine.evaluate import evaluate
from flopsreg.engine.sweep import MAX_SWEEP


@pytest.fixture(autouse=True)
def _no_installed_plugins(monkeypatch):
    """The command line must load the same plugins as the registry fixture."""
    monkeypatch.setenv("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD", "1")


def fresh(registry, model, convention="exact"):
    """*model* composed from scratch: no plan, structure or compiled model reused."""
    return compose(registry, model, convention=convention, render=render)


def same_numbers(registry, model, convention="exact", seq_len=777):
    """Everything a Result reports, from the registry (rebound) and from a fresh composition."""
    rebound = registry.evaluate(model, seq_len=seq_len, batch=2, recompute="selective", convention=convention)
    expected = evaluate(fresh(registry, model, convention), seq_len, None, 2, "selective")
    assert rebound.forward == expected.forward
    assert rebound.training == expected.training
    assert rebound.slot_flops == expected.slot_flops
    assert [layer.flops for layer in rebound.layers] == [layer.flops for layer in expected.layers]
    assert rebound.warnings == expected.warnings
    assert rebound.expression == expected.expression
    return rebound


def values_of(model, names):
    """Strategy: *model* with each parameter of *names* set to a value near its own (1/4x to 4x)."""
    def near(name):
        value = model.params[name]
        return st.integers(min_value=max(1, value // 4), max_value=4 * value)

    return st.fixed_dictionaries({name: near(name) for name in names})


def with_values(model, values):
    for name, value in values.items():
        model = model.with_param(name, value)
    return model


CASES = {  # bundled examples with model-wide values to vary (GQA constraints kept by multiples)
    "llama-3-8b": ["hidden", "vocab", "head_dim"],
    "gemma-3-27b": ["hidden", "vocab"],
    "deepseek-v3": ["hidden", "kv_lora_rank"],
    "qwen3.5-9b": ["hidden"],
}


@pytest.mark.parametrize("name", CASES)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_same_structure_gives_a_fresh_compositions_numbers(registry, name, data):
    base = flopsreg.Model.example(name)
    registry.evaluate(base, seq_len=16)  # the structure's first model
    model = with_values(base, data.draw(values_of(base, [n for n in CASES[name] if n in base.params])))
    same_numbers(registry, model, seq_len=data.draw(st.integers(1, 70_000)))


def test_rebound_models_are_not_composed_again(registry, monkeypatch):
    """After two models of a structure, a third is rebound: compose is never called for it."""
    base = flopsreg.Model.example("llama-3-8b")
    registry.evaluate(base, seq_len=8)
    registry.evaluate(base.with_param("hidden", 1024), seq_len=8)

    def refuse(*args, **kwargs):
        raise AssertionError("composed again")

    monkeypatch.setattr("flopsreg.engine.compose.compose", refuse)
    result = registry.evaluate(base.with_param("hidden", 3072), seq_len=4096)
    assert result.model.params["hidden"] == 3072
    monkeypatch.undo()
    assert result.forward == evaluate(fresh(registry, base.with_param("hidden", 3072)), 4096).forward


def test_kind_values_conventions_and_serving_stay_exact(registry):
    """A value a layer kind sets (Gemma's window), a convention, serving and parameter counts."""
    base = flopsreg.Model.example("gemma-3-4b")
    registry.evaluate(base, seq_len=8)
    model = base.with_param("window", 300)
    assert model.kinds["local"].params["window"] == 300
    same_numbers(registry, model)
    for convention in ("megatron_bridge", "slime", "nanogpt"):
        registry.evaluate(base, seq_len=8, convention=convention)
        same_numbers(registry, base.with_param("hidden", 2048), convention=convention)
    served = registry.evaluate(model, seq_len=1, cached=5000, logits="last")
    assert served.forward == evaluate(fresh(registry, model), 1, None, 1, "none", 5000, "last").forward
    assert registry.parameters(model).to_dict() == registry.parameters(flopsreg.Model.from_toml_string(model.to_toml())).to_dict()


def test_warnings_carry_each_models_own_values(registry):
    base = flopsreg.Model.example("llama-3-8b").with_param("window", 4096)  # set, but no pattern uses it
    first = registry.evaluate(base, seq_len=8)
    assert any("params.window = 4096 is set" in w for w in first.warnings)
    other = same_numbers(registry, base.with_param("window", 777))
    assert any("params.window = 777 is set" in w for w in other.warnings)


def test_bad_values_of_a_known_structure_are_refused_with_the_same_message(registry):
    base = flopsreg.Model.example("llama-3-8b")
    registry.evaluate(base, seq_len=8)
    registry.evaluate(base.with_param("hidden", 1024), seq_len=8)
    for name, value in (("heads", 30), ("hidden", 0), ("kv_heads", 0)):
        model = base.with_param(name, value)
        with pytest.raises(flopsreg.ModelError) as expected:
            fresh(registry, model)
        with pytest.raises(flopsreg.ModelError) as refused:
            registry.evaluate(model, seq_len=8)
        assert str(refused.value) == str(expected.value)
    assert "heads must be a multiple of kv_heads" in str(refused.value) or "kv_heads = 0" in str(refused.value)


def test_models_with_blocks_of_extra_layers_are_composed_each(registry):
    """Multi-token prediction: the head's formula holds the blocks' values, so no rebinding."""
    import attrs

    base = flopsreg.Model.example("deepseek-v3")
    mtp = attrs.evolve(base, flags=base.flags | {"mtp"}, plan=attrs.evolve(base.plan, mtp=("moe",)))
    registry.evaluate(mtp, seq_len=8)
    other = mtp.with_param("hidden", 4096)
    assert registry.evaluate(other, seq_len=100).forward == evaluate(fresh(registry, other), 100).forward
    grid = registry.sweep(mtp, 100, params={"hidden": [4096, 7168]})
    assert grid == [evaluate(fresh(registry, mtp.with_param("hidden", h)), 100).forward for h in (4096, 7168)]


# -- the grid sweep --------------------------------------------------------------------------


def test_grid_sweep_is_the_product_in_documented_order(registry):
    base = flopsreg.Model.example("llama-3-8b")
    params = {"hidden": [2048, 4096, 5120], "heads": [32, 64], "kv_heads": [8]}
    lengths = [1, 4096, 9000]
    grid = registry.sweep(base, lengths, params=params, batch=3)
    points = list(itertools.product(*params.values(), lengths))
    expected = [
        evaluate(fresh(registry, with_values(base, dict(zip(params, p[:-1])))), p[-1], None, 3).forward for p in points
    ]
    assert grid == expected and all(type(v) is int for v in grid)
    rows = list(registry.iter_sweep(base, lengths, params=params, batch=3))
    assert rows == [(*p, f) for p, f in zip(points, expected)]
    one_length = registry.sweep(base, 4096, params=params)  # one length: the generated loop runs over the last parameter
    assert one_length == [evaluate(fresh(registry, with_values(base, dict(zip(params, p)))), 4096).forward for p in itertools.product(*params.values())]


def test_grid_sweep_of_a_kind_value_sets_it_where_the_model_sets_it(registry):
    base = flopsreg.Model.example("gemma-3-4b")
    windows = [128, 512, 4096]
    assert registry.sweep(base, 8192, params={"window": windows}) == [
        evaluate(fresh(registry, base.with_param("window", w)), 8192).forward for w in windows
    ]


def test_grid_sweep_floats_are_the_exact_values_rounded_and_shaped(registry):
    base = flopsreg.Model.example("llama-3-8b")
    params = {"hidden": [2048, 4096], "vocab": [32000, 128256, 256000]}
    exact = registry.sweep(base, [512, 8192], params=params)
    floats = registry.sweep(base, [512, 8192], params=params, dtype=float)
    assert floats.dtype == numpy.float64 and floats.shape == (2, 3, 2)
    assert floats.ravel().tolist() == [float(v) for v in exact]
    assert registry.sweep(base, 512, params=params, dtype=float).shape == (2, 3)


def test_grid_sweep_refuses_bad_names_values_and_sizes(registry):
    base = flopsreg.Model.example("llama-3-8b")
    with pytest.raises(flopsreg.ModelError, match=r"^params: 'hiden' is not a parameter of llama-3-8b; did you mean 'hidden'\?"):
        registry.sweep(base, 8, params={"hiden": [1024]})
    with pytest.raises(flopsreg.ModelError, match=r"^params.heads: empty"):
        registry.sweep(base, 8, params={"heads": []})
    with pytest.raises(flopsreg.ModelError, match=r"^param hidden = 1.5: expected an integer, got float"):
        registry.sweep(base, 8, params={"hidden": [1024, 1.5]})
    with pytest.raises(flopsreg.ModelError, match=r"^params = \[1\]: expected a dict"):
        registry.sweep(base, 8, params=[1])
    with pytest.raises(flopsreg.ModelError) as refused:
        registry.sweep(base, 8, params={"heads": [32, 30]})
    with pytest.raises(flopsreg.ModelError) as expected:
        registry.evaluate(base.with_param("heads", 30), seq_len=8)
    assert str(refused.value) == str(expected.value)
    with pytest.raises(flopsreg.ModelError, match=r"^params x seq_len: 4097 x 4096 x 1 = 16,781,312 points; .* at most 16,777,216"):
        registry.sweep(base, 8, params={"hidden": range(1, 4098), "vocab": range(1, 4097)})
    assert 4097 * 4096 > MAX_SWEEP
    with pytest.raises(flopsreg.ModelError, match=r"^params.hidden: more than 16,777,216 values"):
        next(registry.iter_sweep(base, 8, params={"hidden": itertools.count(1)}))  # streamed rows, but each axis is held


# -- to_dict equals the command line's JSON -----------------------------------------------------


def cli_json(capsys, *argv):
    status = main([*argv, "--format", "json", "--no-cache"] if argv[0] in ("eval", "sweep") else [*argv, "--format", "json"])
    out, err = capsys.readouterr()
    assert status == 0, err
    return json.loads(out)


def test_result_to_dict_is_eval_json(registry, capsys):
    model = flopsreg.Model.example("gemma-3-4b")
    result = registry.evaluate(model, seqlens=[100, 4096], batch=2, recompute="full")
    assert result.to_dict() == cli_json(capsys, "eval", "gemma-3-4b", "--seqlens", "100,4096", "--batch", "2", "--recompute", "full")
    assert result.to_dict(per_layer=True) == cli_json(
        capsys, "eval", "gemma-3-4b", "--seqlens", "100,4096", "--batch", "2", "--recompute", "full", "--per-layer"
    )
    served = registry.evaluate(model, seq_len=1, cached=2048, logits="last", convention="slime")
    assert served.to_dict() == cli_json(
        capsys, "eval", "gemma-3-4b", "--seq-len", "1", "--cached", "2048", "--logits", "last", "--convention", "slime"
    )


def test_generation_parameters_and_comparison_to_dict_are_their_commands_json(registry, capsys):
    model = flopsreg.Model.example("llama-3-8b")
    generation = registry.generate(model, prompt=1000, new_tokens=24, batch=2)
    assert generation.to_dict() == cli_json(capsys, "generate", "llama-3-8b", "--prompt", "1000", "--new-tokens", "24", "--batch", "2")
    assert registry.parameters(model).to_dict() == cli_json(capsys, "params", "llama-3-8b")
    comparison = registry.compare(model, seq_len=4096)
    assert comparison.to_dict() == cli_json(capsys, "compare", "llama-3-8b", "--seq-len", "4096")


def test_utilisation_to_dict_is_mfu_json(registry, capsys):
    result = registry.evaluate(flopsreg.Model.example("llama-3-8b"), seq_len=4096, batch=8, recompute="selective")
    step = result.utilisation(peak="h100-sxm-bf16", devices=8, step_time=2.5)
    argv = ["mfu", "llama-3-8b", "--seq-len", "4096", "--batch", "8", "--recompute", "selective"]
    assert step.to_dict() == cli_json(capsys, *argv, "--devices", "8", "--peak", "h100-sxm-bf16", "--step-time", "2.5")
    assert step.mfu == result.mfu(peak="h100-sxm-bf16", devices=8, step_time=2.5)
    assert step.to_dict()["hfu"] == step.hfu.to_dict() and step.hfu.flops == result.training


@pytest.mark.parametrize("form", ["json", "jsonl"])
def test_sweep_json_is_sweep_output(registry, capsys, form):
    model = flopsreg.Model.example("llama-3-8b")
    rows = render.sweep_json(registry.iter_sweep(model, range(1000, 3001, 1000), batch=3), batch=3)
    status = main(["sweep", "llama-3-8b", "--seq-len", "1000:3000:1000", "--batch", "3", "--format", form, "--no-cache"])
    out, err = capsys.readouterr()
    assert status == 0, err
    printed = json.loads(out) if form == "json" else [json.loads(line) for line in out.splitlines()]
    assert rows == printed
    assert [int(row["forward_flops"]) for row in rows] == registry.sweep(model, [1000, 2000, 3000], batch=3)


def _unit_view(unit):
    """A unit's public attributes as plain values (units compare by identity)."""
    return (
        type(unit).__name__, unit.name, unit.flags, dict(unit.params), unit.patterns, dict(unit.terms), dict(unit.quantities),
        unit.per_position, unit.count, unit.where, unit.scope, unit.expression, unit.total(777, 0, "all"), unit.flops(777, 0, "all"),
        unit.serving_terms("last"), getattr(unit, "layers", None), [(sel.slot, sel.pattern.name) for sel in unit.selections],
    )


def _selection_view(selection):
    """A ModelSelection's public attributes (methods called), units as plain values."""
    return (
        selection.model, selection.convention, [_unit_view(unit) for unit in selection.units], _unit_view(selection.head),
        {name: [_unit_view(unit) for unit in units] for name, units in selection.blocks.items()}, selection.warnings,
        selection.expression, selection.serving_expression("last"), selection.serving(9, 100, "last"), selection.forward(777),
        selection.explain(), selection.symbols is not None, selection.slots, dict(selection.hf_readers),
        selection._repr_markdown_(), selection._repr_latex_(), repr(selection), [unit.name for unit in selection.kinds],
    )


def _result_view(result):
    """Every public attribute of a Result (methods called; dicts keyed by unit listed in unit order)."""
    return (
        result.batch, result.cached, result.convention, result.explain(), result.expression, result.forward, result.forward_per_token,
        result.latex(), [(layer.index, layer.kind, dict(layer.patterns), layer.flops) for layer in result.layers], result.logits,
        result.model, result.recompute, result.recomputed, result.seqlens, result.serving, result.slot_flops, result.to_dict(),
        result.tokens, result.training, result.training_per_token, list(result.unit_flops.values()), list(result.unit_totals.values()),
        [result.flops_through(unit) for unit in result.selection.units], result.warnings, _selection_view(result.selection),
        result.to_dict(per_layer=True), result.utilisation(peak=10**18, devices=8, step_time=100.0).to_dict(),
    )


@pytest.mark.parametrize(("name", "param", "value"), [
    ("llama-3-8b", "hidden", 3072), ("gemma-3-4b", "window", 300), ("deepseek-v3", "kv_lora_rank", 256), ("qwen3.5-9b", "hidden", 2048),
])
def test_every_public_attribute_of_a_rebound_result_is_a_fresh_compositions(registry, name, param, value):
    """A rebound model's units, warnings and symbolic terms are derived on first use: each of
    them, and every other public attribute of its Result, equals a fresh composition's."""
    base = flopsreg.Model.example(name)
    registry.evaluate(base, seq_len=8)
    registry.evaluate(base.with_param(param, value + 64), seq_len=8)  # compiles the structure
    model = base.with_param(param, value)
    rebound = registry.evaluate(model, seq_len=777, batch=2, recompute="selective")
    assert rebound.selection.bound_forward is not None  # rebound, not composed
    expected = evaluate(fresh(registry, model), 777, None, 2, "selective")
    assert _result_view(rebound) == _result_view(expected)
    assert rebound.selection.units_source != expected.selection.units_source  # derived, not copied


def test_a_rebound_selection_sets_every_field_as_its_init_would(registry):
    """ModelSelection.rebound sets the fields one by one: it must cover every field, each with
    the value attrs' ``__init__`` would give (the template's, or the model's own)."""
    import attrs

    from flopsreg.engine.compose import REBOUND_FIELDS

    assert sorted(REBOUND_FIELDS) == sorted(field.name for field in attrs.fields(type(registry.select(flopsreg.Model.example("llama-3-8b")))))
    base = flopsreg.Model.example("llama-3-8b")
    template = registry.select(base)
    model = base.with_param("hidden", 1024)
    units, forward = (lambda: template._units), (lambda seq_len: 7)
    rebound = template.rebound(model, units, forward)
    by_init = attrs.evolve(template, model=model, units_source=units, bound_forward=forward)
    for field in attrs.fields(type(template)):
        assert getattr(rebound, field.name) is getattr(by_init, field.name), field.name


def test_models_sharing_a_rebound_models_parts_but_not_its_structure_are_not_confused(registry):
    """The last structure is found again by the very objects a model shares with the last rebound
    one (kinds, flags, plan) and its parameter names: another name, a convention, a layer kind's
    value or equal but new objects each give that model's own numbers."""
    base = flopsreg.Model.example("llama-3-8b")
    registry.evaluate(base, seq_len=8)
    registry.evaluate(base.with_param("hidden", 1024), seq_len=8)
    same_numbers(registry, base.with_param("hidden", 3072))  # rebound: the fast path is set
    renamed = base.with_param("hidden", 2048).with_param("window", 512)  # the same parts, one more name
    assert renamed.kinds is base.kinds and renamed.plan is base.plan and renamed.flags is base.flags
    assert any("params.window = 512 is set" in w for w in same_numbers(registry, renamed).warnings)
    same_numbers(registry, base.with_param("hidden", 4096), convention="megatron_bridge")
    gemma = flopsreg.Model.example("gemma-3-4b")
    registry.evaluate(gemma, seq_len=8)
    registry.evaluate(gemma.with_param("window", 300), seq_len=8)
    same_numbers(registry, gemma.with_param("window", 700))
    same_numbers(registry, gemma.with_param("hidden", 1024))
    copy = flopsreg.Model.from_toml_string(base.with_param("hidden", 512).to_toml())  # equal, but no shared objects
    assert copy.kinds is not base.kinds
    same_numbers(registry, copy)
