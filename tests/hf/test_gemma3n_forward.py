"""flopsreg against a real forward pass of a tiny Gemma 3n text model, recorded in
tests/data/hf_forward/forward_gemma3n.json by measure_gemma3n.py (transformers 5.24, CPU, eager
attention, torch's FlopCounterMode): every module's FLOPs, the pairs of each attention call's
mask and every module's parameters, all from torch. Eager attention computes the whole s x s
rectangle: the ``eager`` convention below counts it so, and the pairs compare with the exact count.
Also the reader's refusals of the keys whose class defaults a config does not show."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import flopsreg
from flopsreg.errors import ModelError
from flopsreg.formula.exact import compile_exact

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_gemma3n.json").read_text())
SEQ_LEN = RECORD["seq_len"]
CASE = RECORD["models"]["gemma3n_text"]
MODULES, PARAMETERS = CASE["modules"], CASE["module_parameters"]


def _model(**changes) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config({k: v for k, v in {**CASE["config"], **changes}.items() if v is not None})


def _own(prefix: str) -> int:
    return sum(n for module, n in PARAMETERS.items() if module == prefix or module.startswith(prefix + "."))


def test_pairs_per_layer_equal_what_the_mask_let_through(registry):
    model = _model()
    units = {unit.name: unit for unit in registry.select(model).kinds}
    ours = [compile_exact(units[layer.kind].quantities["pairs"])({**layer.params, "seq_len": SEQ_LEN}) for layer in model.layers]
    assert ours == CASE["pairs"]


def test_the_whole_forward_equals_flop_counter_mode(eager_registry):
    assert eager_registry.evaluate(_model(), seq_len=SEQ_LEN, convention="eager").forward == CASE["total"]


def test_every_module_of_every_layer(eager_registry):
    model = _model()
    plan = eager_registry.select(model, convention="eager")
    units = {unit.name: unit for unit in plan.kinds}
    for layer in model.layers:
        ours, at = units[layer.kind].flops(SEQ_LEN), f"model.layers.{layer.index}"
        attn = f"{at}.self_attn"
        assert ours["attention.query"] == MODULES[f"{attn}.q_proj"]
        assert ours["attention.projection"] == MODULES.get(f"{attn}.k_proj", 0) + MODULES.get(f"{attn}.v_proj", 0)
        assert ours["attention.output"] == MODULES[f"{attn}.o_proj"]
        assert sum(v for k, v in ours.items() if k.startswith("attention.")) == MODULES[attn]
        assert ours["mlp"] == MODULES[f"{at}.mlp"]
        assert ours["residual_branch"] == MODULES[f"{at}.laurel"]
        assert ours["per_layer_input"] == MODULES[f"{at}.per_layer_input_gate"] + MODULES[f"{at}.per_layer_projection"]
        # AltUp: its three linear maps, plus the n x n mix of the copies. predict and correct are
        # methods, not forward, so torch records no altup module: the layer holds all of it.
        children = ("self_attn", "mlp", "laurel", "per_layer_input_gate", "per_layer_projection")
        altup = MODULES[at] - sum(MODULES[f"{at}.{m}"] for m in children if f"{at}.{m}" in MODULES)
        maps = sum(MODULES[f"{at}.altup.{m}"] for m in ("modality_router", "prediction_coefs", "correction_coefs"))
        assert ours["residual_mixer"] == altup and altup > maps
    altup = sum(v for k, v in MODULES.items() if k.startswith("model.altup_"))
    assert plan.head.flops(SEQ_LEN) == {
        "head": MODULES["lm_head"], "per_layer_embedding": MODULES["model.per_layer_model_projection"], "residual_mixer.head": altup,
    }


def _weights(plan, unit, slot: str, params) -> int:
    (selection,) = [sel for sel in unit.selections if sel.slot == slot]
    quantities = {plan.symbols[q].symbol: v for q, v in unit.quantities.items()}
    return compile_exact(selection.pattern.weights.xreplace(quantities))(dict(params))


def test_altup_laurel_and_their_heads_hold_their_modules_parameters(registry):
    model = _model()
    plan = registry.select(model)
    units = {unit.name: unit for unit in plan.kinds}
    for layer in model.layers:
        unit, at, params = units[layer.kind], f"model.layers.{layer.index}", {**model.params, **layer.params}
        assert _weights(plan, unit, "residual_mixer", params) == _own(f"{at}.altup")
        assert _weights(plan, unit, "residual_branch", params) == _own(f"{at}.laurel")
        assert _weights(plan, unit, "mlp", params) == _own(f"{at}.mlp")
        assert _weights(plan, unit, "attention.query", params) + _weights(plan, unit, "attention.projection", params) == sum(
            _own(f"{at}.self_attn.{m}") for m in ("q_proj", "k_proj", "v_proj")
        )
    head = {sel.slot: sel for sel in plan.head.selections}
    assert compile_exact(head["residual_mixer.head"].pattern.weights)(dict(model.params)) == _own("model.altup_projections") + _own(
        "model.altup_unembed_projections"
    )
    embedding = sum(_own(f"model.{m}") for m in ("embed_tokens_per_layer", "per_layer_model_projection", "per_layer_projection_norm"))
    assert compile_exact(head["per_layer_embedding"].pattern.weights)(dict(model.params)) == embedding


def test_the_multimodal_wrapper_reads_its_text_config(registry):
    wrapped = flopsreg.Model.from_hf_config({"model_type": "gemma3n", "text_config": CASE["config"]})
    assert registry.evaluate(wrapped, seq_len=SEQ_LEN).forward == registry.evaluate(_model(), seq_len=SEQ_LEN).forward


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"num_kv_shared_layers": None}, "num_kv_shared_layers: missing"),
        ({"hidden_size_per_layer_input": None}, "hidden_size_per_layer_input: missing"),
        ({"hidden_size_per_layer_input": 0}, "hidden_size_per_layer_input = 0"),
        ({"intermediate_size": [96, 96]}, "intermediate_size: 2 entries but num_hidden_layers = 7"),
        ({"num_kv_shared_layers": 5}, "num_kv_shared_layers = 5"),  # no full layer before the sharing ones
        ({"attention_bias": True}, "attention_bias = true"),
    ],
)
def test_the_reader_names_the_key_it_cannot_resolve(changes, message):
    with pytest.raises(ModelError, match=message):
        _model(**changes)


def test_default_layout_is_one_full_layer_in_five():
    model = _model(intermediate_size=96, num_hidden_layers=10, num_kv_shared_layers=0, activation_sparsity_pattern=None)
    assert [layer.kind for layer in model.layers] == ["sliding"] * 4 + ["full"] + ["sliding"] * 4 + ["full"]


def test_the_whole_model_holds_transformers_parameters(registry):
    """The weight-only slots too: sandwich and q/k norms (a query norm alone where K/V are reused),
    post_per_layer_input_norm, the tied embedding."""
    assert registry.parameters(_model()).total == CASE["parameters"]


@pytest.mark.parametrize("convention", ["slime", "megatron_bridge", "megatron"])
def test_frameworks_without_an_altup_branch_refuse(registry, convention):
    with pytest.raises(flopsreg.FlopsregError, match="a refusal, not a guess"):
        registry.evaluate(flopsreg.Model.example("gemma-3n-e4b"), seq_len=4096, convention=convention)
