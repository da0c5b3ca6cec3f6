"""flopsreg against real forward passes of tiny 2026-architecture models (DSA, Gemma 4, GLM-4.5,
MiniMax-M2, Mistral 4, StarCoder2), recorded in tests/data/hf_forward/forward_attention2026.json.

tests/data/hf_forward/measure_attention2026.py ran each tiny config through transformers 5.24 on
the CPU (eager attention, eager experts) under torch's FlopCounterMode and recorded the FLOPs of
every module, the (query, key) pairs the mask of each attention call let through (for DSA the
causal mask combined with the indexer's top-k) and the parameters of every module. Those numbers
come from torch and transformers, not from flopsreg.

Eager attention computes QK^T and PV over the whole s x s rectangle and masks afterwards, and
the DSA indexer scores every (query, key) pair the same way: the ``eager`` convention below
counts those rectangles, so whole modules compare; the pairs compare with the exact count.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eager import DSA_INDEXER_FROM_HIDDEN_RECTANGLE, DSA_INDEXER_RECTANGLE
from eager import eager_registry as make_eager_registry

import flopsreg
from flopsreg.formula.exact import compile_exact

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_attention2026.json").read_text())
SEQ_LEN = RECORD["seq_len"]
MODELS = sorted(RECORD["models"])
ATTENTION_SLOTS = ("attention.query", "attention.projection", "attention.core", "attention.output", "attention.topk_indexer")
MLP_SLOTS = ("mlp", "mlp.shared", "mlp.parallel_experts")
KV_MODULES = ("k_proj", "v_proj", "kv_a_proj_with_mqa", "kv_b_proj")
# The key/value projection patterns of this issue (the older ones get their weights elsewhere).
OWN_PROJECTIONS = (
    "k_eq_v_projection", "kv_reuse_projection", "mla_latent_reuse_projection",
)


@pytest.fixture(scope="module")
def eager_registry():
    return make_eager_registry(DSA_INDEXER_RECTANGLE, DSA_INDEXER_FROM_HIDDEN_RECTANGLE)



def _model(name: str) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(RECORD["models"][name]["config"])


def _layers(name: str) -> str:
    """Where the record keeps the decoder layers: ``model.layers`` or, in a multimodal class, ``model.language_model.layers``."""
    return next(m.removesuffix(".0.self_attn") for m in RECORD["models"][name]["modules"] if m.endswith("layers.0.self_attn"))


def _layer_flops(registry, model, convention="exact") -> list[dict[str, int]]:
    plan = registry.select(model, convention=convention)
    units = {unit.name: unit for unit in plan.kinds}
    return [units[layer.kind].flops(SEQ_LEN) for layer in model.layers]


def test_every_case_ran():
    assert all("total" in RECORD["models"][name] for name in MODELS), "a model failed to run when recorded"
    assert {RECORD["models"][name]["config"]["model_type"] for name in MODELS} >= {
        "deepseek_v32", "glm_moe_dsa", "gemma4_text", "glm4_moe", "minimax_m2", "mistral4", "starcoder2", "mistral_large4",
    }


@pytest.mark.parametrize("name", MODELS)
def test_pairs_per_layer_equal_what_the_mask_or_the_topk_let_through(registry, name):
    plan = registry.select(_model(name))
    units = {unit.name: unit for unit in plan.kinds}
    ours = [
        compile_exact(units[layer.kind].quantities["pairs"])({**layer.params, "seq_len": SEQ_LEN})
        for layer in plan.model.layers
    ]
    assert ours == RECORD["models"][name]["pairs"]


@pytest.mark.parametrize("name", MODELS)
def test_the_whole_forward_equals_flop_counter_mode(eager_registry, name):
    assert eager_registry.evaluate(_model(name), seq_len=SEQ_LEN, convention="eager").forward == RECORD["models"][name]["total"]


@pytest.mark.parametrize("name", MODELS)
def test_every_layers_attention_projections_indexer_and_mlp(eager_registry, name):
    modules = RECORD["models"][name]["modules"]
    for i, ours in enumerate(_layer_flops(eager_registry, _model(name), "eager")):
        layer = f"{_layers(name)}.{i}"
        assert sum(ours.get(slot, 0) for slot in ATTENTION_SLOTS) == modules[f"{layer}.self_attn"], (name, i)
        assert ours.get("attention.topk_indexer", 0) == modules.get(f"{layer}.self_attn.indexer", 0), (name, i)
        assert ours["attention.projection"] == sum(modules.get(f"{layer}.self_attn.{m}", 0) for m in KV_MODULES), (name, i)
        mlp = modules[f"{layer}.mlp"] + modules.get(f"{layer}.router", 0) + modules.get(f"{layer}.experts", 0)
        assert sum(ours.get(slot, 0) for slot in MLP_SLOTS) == mlp, (name, i)
        ple = modules.get(f"{layer}.per_layer_input_gate", 0) + modules.get(f"{layer}.per_layer_projection", 0)
        assert ours.get("per_layer_input", 0) == ple, (name, i)


def _weights(plan, unit, slot: str, params) -> int:
    """The ``weights`` closed form of the pattern filling *slot* in *unit*, at *params*."""
    (selection,) = [sel for sel in unit.selections if sel.slot == slot]
    quantities = {plan.symbols[q].symbol: v for q, v in unit.quantities.items() if not v.free_symbols}
    return compile_exact(selection.pattern.weights.xreplace(quantities))(dict(params))


def _own(name: str, prefix: str) -> int:
    """Parameters of the module *prefix* and of every module under it, as recorded."""
    return sum(n for module, n in RECORD["models"][name]["module_parameters"].items() if module == prefix or module.startswith(prefix + "."))


@pytest.mark.parametrize("name", ["deepseek_v32", "glm_moe_dsa", "gemma4_features", "mistral_large4"])
def test_the_new_patterns_weights_equal_the_modules_parameters(registry, name):
    """dsa_indexer(_from_hidden), the MLA and K/V projection variants, parallel_experts,
    per_layer_input and per_layer_embedding hold exactly the parameters of the modules they count."""
    model = _model(name)
    plan = registry.select(model)
    units = {unit.name: unit for unit in plan.kinds}
    checked = set()
    for layer in model.layers:
        unit, at = units[layer.kind], f"{_layers(name)}.{layer.index}"
        chosen = {sel.slot: sel.pattern.name for sel in unit.selections}
        if chosen.get("attention.topk_indexer") in ("dsa_indexer", "dsa_indexer_from_hidden"):
            assert _weights(plan, unit, "attention.topk_indexer", layer.params) == _own(name, f"{at}.self_attn.indexer")
        if chosen["attention.projection"] in OWN_PROJECTIONS:
            kv = sum(_own(name, f"{at}.self_attn.{m}") for m in KV_MODULES)
            assert _weights(plan, unit, "attention.projection", layer.params) == kv
        if "mlp.parallel_experts" in chosen:
            experts = _own(name, f"{at}.router") + _own(name, f"{at}.experts")
            assert _weights(plan, unit, "mlp.parallel_experts", layer.params) == experts
        if "per_layer_input" in chosen:
            ple = sum(_own(name, f"{at}.{m}") for m in ("per_layer_input_gate", "per_layer_projection", "post_per_layer_input_norm"))
            assert _weights(plan, unit, "per_layer_input", layer.params) == ple
        checked |= {p for p in chosen.values()}
    if name == "mistral_large4":
        assert {"dsa_indexer_from_hidden", "mla_latent_reuse_projection"} <= checked
    if name == "gemma4_features":
        assert {"k_eq_v_projection", "kv_reuse_projection", "parallel_experts", "per_layer_input"} <= checked
        head = {sel.slot: sel for sel in plan.head.selections}["per_layer_embedding"]
        embedding = sum(_own(name, f"model.{m}") for m in ("embed_tokens_per_layer", "per_layer_model_projection", "per_layer_projection_norm"))
        assert compile_exact(head.pattern.weights)(dict(model.params)) == embedding
        projection = plan.head.flops(SEQ_LEN)["per_layer_embedding"]
        assert projection == RECORD["models"][name]["modules"]["model.per_layer_model_projection"]
