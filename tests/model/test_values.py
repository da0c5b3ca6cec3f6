"""Models are values, memory follows layer kinds, and the Python API takes what scripts hold.

Each expected number is written out here from the model's dimensions (Llama-3-8B-like layers:
GQA projections, full causal core, SwiGLU MLP), never read back from flopsreg.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from oracles import causal_pairs

import flopsreg
from flopsreg import render
from flopsreg.engine.sweep import iter_sweep


def llama_layer(s: int, h: int = 4096, n: int = 32, g: int = 8, d: int = 128, f: int = 14336) -> int:
    """Forward FLOPs of one Llama-3-8B decoder layer for one sequence of s tokens."""
    qkvo = 2 * s * h * (n * d) + 2 * 2 * s * h * (g * d) + 2 * s * (n * d) * h
    core = 2 * n * (d + d) * causal_pairs(s)
    return qkvo + core + 3 * 2 * s * h * f


def llama(layers: int = 32, **overrides: int) -> flopsreg.Model:
    text = flopsreg.Model.example("llama-3-8b").to_toml().replace("layers = 32", f"layers = {layers}")
    model = flopsreg.Model.from_toml_string(text)
    for name, value in overrides.items():
        model = model.with_param(name, value)
    return model


HEAD = 2 * 4096 * 128256  # logits per token


# -- values -------------------------------------------------------------------------------------


def test_model_fields_cannot_be_changed_in_place():
    model = llama()
    with pytest.raises(TypeError):
        model.params["hidden"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        model.kinds["dense"].params["ffn_hidden"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        model.kinds["other"] = flopsreg.LayerKind()  # type: ignore[index]
    with pytest.raises(AttributeError):
        model.params._data = {}  # type: ignore[attr-defined]


def test_models_are_equal_and_hash_alike_exactly_when_their_contents_are():
    a, b = llama(), llama()
    assert a == b and hash(a) == hash(b)
    wider = llama(ffn_hidden=14337)
    assert wider != a and {a: 1, wider: 2}[llama(ffn_hidden=14337)] == 2


def test_the_plan_cache_never_serves_another_models_numbers(registry):
    """Evaluate, then evaluate a model that differs only inside a layer kind: new numbers."""
    s = 1024
    assert registry.evaluate(llama(), seq_len=s).forward == 32 * llama_layer(s) + s * HEAD
    narrower = llama(ffn_hidden=8192)
    assert registry.evaluate(narrower, seq_len=s).forward == 32 * llama_layer(s, f=8192) + s * HEAD


def test_a_layer_kind_called_model_counts_once_per_layer(registry):
    model = flopsreg.Model.uniform("m", layers=3, hidden=8, heads=2, kv_heads=2, head_dim=4)
    renamed = flopsreg.Model(
        name="m", params=model.params, kinds={"model": flopsreg.LayerKind()}, plan=flopsreg.Plan.uniform("model", 3)
    )
    s, h, n, d = 5, 8, 2, 4
    layer = 4 * (2 * s * h * n * d) + 2 * n * (d + d) * causal_pairs(s)
    assert registry.evaluate(renamed, seq_len=s).forward == 3 * layer
    assert registry.evaluate(model, seq_len=s).forward == 3 * layer


def test_with_param_sets_a_parameter_where_the_model_sets_it(registry):
    gemma = flopsreg.Model.example("gemma-3-4b")
    narrowed = gemma.with_param("window", 512)
    assert gemma.param_places("window") == ("params", "kinds.local.params")  # model-wide too: Megatron-Bridge's every-layer window
    assert narrowed.kinds["local"].params["window"] == 512 and narrowed.params["window"] == 512
    s = 4096
    before, after = registry.evaluate(gemma, seq_len=s), registry.evaluate(narrowed, seq_len=s)
    n, d, local_layers = 8, 256, 29
    window_pairs = lambda w: sum(min(q + 1, w) for q in range(s))  # noqa: E731 - keys seen by each query
    core = lambda w: 2 * n * (d + d) * window_pairs(w)  # noqa: E731
    assert before.forward - after.forward == local_layers * (core(1024) - core(512))
    wider = gemma.with_param("padded_vocab", 262272)
    assert gemma.param_places("padded_vocab") == ("params",) and wider.params["padded_vocab"] == 262272


# -- bounded ------------------------------------------------------------------------------------


def test_a_hundred_million_layers_cost_what_one_kind_costs(registry):
    """Layers are never expanded: a 10^8-layer plan evaluates and renders like a 32-layer one."""
    layers, s = 10**8, 256
    model = llama(layers)
    res = registry.evaluate(model, seq_len=s)
    assert res.forward == layers * llama_layer(s) + s * HEAD
    assert len(model.layers) == len(res.layers) == layers
    assert res.layers[-1].index == layers - 1 and res.layers[-1].flops == llama_layer(s)
    data = render.result_json(res)
    assert data["kinds"][0]["layers"] == [{"first": 0, "last": layers - 1, "step": 1}]
    assert len(json.dumps(data)) < 5000
    assert f"{layers} layers" in res.explain()


def test_an_alternating_plan_of_many_layers_is_one_progression_per_kind():
    plan = flopsreg.Plan(layers=10**9, first=["a"], cycle=["b", "c"])
    assert plan.indices("a") == (range(0, 1),)
    assert plan.indices("c") == (range(2, 10**9, 2),)
    assert plan.kind_at(10**9 - 2) == "c" and plan.kind_at(10**9 - 1) == "b" and plan.kinds() == ("a", "b", "c")


@pytest.mark.parametrize(
    ("layers", "first", "cycle"),
    [(7, [], ["x", "y", "y"]), (40, ["y"], ["x", "y", "y", "x"]), (5000, ["x", "x"], ["y", "x", "x"]), (9, ["x"] * 9, [])],
)
def test_plan_indices_cover_exactly_the_layers_of_each_kind(layers, first, cycle):
    plan = flopsreg.Plan(layers=layers, first=first, cycle=cycle)
    expanded = first + [cycle[(i - len(first)) % len(cycle)] for i in range(len(first), layers)] if cycle else first
    for kind in set(expanded):
        listed = sorted(i for r in plan.indices(kind) for i in r)
        assert listed == [i for i, k in enumerate(expanded) if k == kind]


def test_a_sweep_over_a_billion_lengths_streams(registry):
    rows = iter_sweep(registry.select(llama(1)), range(1, 10**9 + 1))
    assert list(itertools.islice(rows, 3)) == [(s, llama_layer(s) + s * HEAD) for s in (1, 2, 3)]


# -- inputs from scripts ------------------------------------------------------------------------


def test_numpy_integers_are_accepted_wherever_ints_are(registry):
    model, s = llama(1), 300
    expected = llama_layer(s) + s * HEAD
    assert registry.evaluate(model, seq_len=np.int64(s), batch=np.int32(2)).forward == 2 * expected
    packed = registry.evaluate(model, seqlens=np.array([s, 7]))
    assert packed.forward == expected + llama_layer(7) + 7 * HEAD and packed.seqlens == (s, 7)
    assert all(type(n) is int for n in packed.seqlens)
    assert registry.sweep(model, np.arange(299, 302)) == [llama_layer(n) + n * HEAD for n in (299, 300, 301)]
    params = flopsreg.Model.uniform("np", layers=np.int64(2), hidden=np.int64(8), heads=2, kv_heads=2, head_dim=4)
    assert type(params.params["hidden"]) is int and params.plan.layers == 2


@pytest.mark.parametrize(
    ("call", "parts"),
    [
        (lambda reg: reg.evaluate("llama-3-8b", seq_len=8), ["model", "flopsreg.Model", "str", "Model.example"]),
        (lambda reg: reg.evaluate(None, seq_len=8), ["model", "NoneType"]),
        (lambda reg: reg.evaluate({"hidden": 8}, seq_len=8), ["model", "dict"]),
        (lambda reg: reg.evaluate(llama(1), seq_len=8, convention=None), ["convention", "None"]),
        (lambda reg: reg.evaluate(llama(1), seq_len=8, convention="megatorn"), ["megatorn", "did you mean 'megatron'"]),
        (lambda reg: reg.evaluate(llama(1), seq_len=8, recompute=["full"]), ["recompute", "['full']"]),
        (lambda reg: reg.evaluate(llama(1), seq_len=np.float64(8.0)), ["seq_len", "8.0"]),
        (lambda reg: reg.evaluate(llama(1), seq_len=True), ["seq_len", "True"]),
        (lambda reg: reg.evaluate(llama(1), seqlens="812,4096"), ["seqlens", "'812,4096'"]),
        (lambda reg: reg.evaluate(llama(1), seq_len=8, batch=2.0), ["batch", "2.0"]),
        (lambda reg: reg.sweep(llama(1), range(10, 5)), ["seq_len", "empty"]),
        (lambda reg: reg.sweep(llama(1), []), ["seq_len", "empty"]),
        (lambda reg: reg.sweep(llama(1), 4096), ["seq_len", "4096"]),
        (lambda reg: llama(1).with_param("hidden", 10**30), ["hidden", "64-bit"]),
        (lambda reg: flopsreg.Model.uniform("m", layers=1, hidden=10**30), ["params.hidden", "64-bit"]),
        (lambda reg: flopsreg.Plan(layers=2**63, cycle=["a"]), ["plan.layers", "64-bit"]),
        (lambda reg: flopsreg.Model.example("gemma-3-4bb"), ["gemma-3-4bb", "did you mean 'gemma-3-4b'"]),
        (lambda reg: flopsreg.Model(name=1, kinds={}, plan=flopsreg.Plan.uniform("a", 1)), ["name", "string"]),
        (lambda reg: flopsreg.Model(name="m", kinds={"a": {}}, plan=flopsreg.Plan.uniform("a", 1)), ["kinds.a", "LayerKind"]),
        (lambda reg: flopsreg.LayerKind(flags={"mlp": 1}), ["flags", "list of flag names"]),
    ],
)
def test_wrong_arguments_are_one_line_flopsreg_errors(registry, call, parts):
    with pytest.raises(flopsreg.FlopsregError) as info:
        call(registry)
    message = str(info.value)
    assert "\n" not in message
    for part in parts:
        assert part in message, message


def test_model_example_loads_every_bundled_example_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    gemma = flopsreg.Model.example("gemma-3-4b")
    assert gemma.name == "gemma-3-4b" and gemma.plan.layers == 34
    assert flopsreg.Model.example("gemma-3-4b.toml") == gemma
