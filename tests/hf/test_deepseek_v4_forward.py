"""flopsreg against real forward passes of tiny DeepSeek-V4 models, recorded in
tests/data/hf_forward/forward_deepseek_v4.json by measure_deepseek_v4.py (transformers 5.24 on
the CPU, eager attention and experts, torch's FlopCounterMode): every module's FLOPs, the pairs
each attention call's mask let through (raw window keys plus the compressed entries, the CSA ones
picked by the indexer's top-k) and every module's parameters. Those numbers come from torch.

Eager attention multiplies every query with every raw key and every compressed entry before
masking, and the indexer scores every entry (its head-weighted sum is an elementwise product and
a sum, which FlopCounterMode does not see): the ``eager`` convention below counts those
rectangles, so modules compare; the pairs compare with the exact count.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sympy
from eager import eager_registry as make_eager_registry

import flopsreg
from flopsreg.declarations.symbols import s
from flopsreg.formula.exact import compile_exact
from flopsreg.patterns.dsa_indexer import n_idx
from flopsreg.patterns.window_compression import CSA_INDEXER, CSA_MASK, HCA_MASK, m, m_h, p_cidx

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_deepseek_v4.json").read_text())
SEQ_LEN = RECORD["seq_len"]
MODELS = sorted(RECORD["models"])


@pytest.fixture(scope="module")
def eager_registry():
    def mask(name, flags, precedence, rate, params):
        return flopsreg.Pattern(
            name=name, slot="attention.mask", flags={"eager", *flags}, precedence=precedence, produces="pairs",
            params=params, formula=s * (s + sympy.floor(s / rate)),
            summary="every query with every raw key and every closed entry", reference="eager_attention_forward",
        )

    return make_eager_registry(
        mask("eager_csa", CSA_MASK.flags, 1001, m, CSA_MASK.params),
        mask("eager_hca", HCA_MASK.flags, 1002, m_h, HCA_MASK.params),
        flopsreg.Pattern(
            name="eager_csa_indexer", slot="attention.topk_indexer", flags={"eager", *CSA_INDEXER.flags}, precedence=1000,
            params=CSA_INDEXER.params,
            # Every closed entry scored; the head-weighted sum unseen by FlopCounterMode.
            formula=CSA_INDEXER.formula.xreplace({p_cidx: s * sympy.floor(s / m)}) - 2 * s * sympy.floor(s / m) * n_idx,
            summary="scores every entry, then masks", reference="DeepseekV4IndexerScorer.forward",
        ),
    )



def _model(name: str) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(RECORD["models"][name]["config"])


def _units(registry, model, convention="exact"):
    plan = registry.select(model, convention=convention)
    return plan, {unit.name: unit for unit in plan.kinds}


@pytest.mark.parametrize("name", MODELS)
def test_pairs_per_layer_equal_what_the_mask_and_the_topk_let_through(registry, name):
    plan, units = _units(registry, _model(name))
    ours = [
        compile_exact(units[layer.kind].quantities["pairs"])({**layer.params, "seq_len": SEQ_LEN}) for layer in plan.model.layers
    ]
    assert ours == RECORD["models"][name]["pairs"]


@pytest.mark.parametrize("name", MODELS)
def test_the_whole_forward_equals_flop_counter_mode(eager_registry, name):
    assert eager_registry.evaluate(_model(name), seq_len=SEQ_LEN, convention="eager").forward == RECORD["models"][name]["total"]


@pytest.mark.parametrize("name", MODELS)
def test_every_module_of_every_layer(eager_registry, name):
    modules = RECORD["models"][name]["modules"]
    model = _model(name)
    plan, units = _units(eager_registry, model, "eager")
    for layer in model.layers:
        ours, at = units[layer.kind].flops(SEQ_LEN), f"model.layers.{layer.index}"
        attn = f"{at}.self_attn"
        assert ours["attention.query"] == modules[f"{attn}.q_a_proj"] + modules[f"{attn}.q_b_proj"]
        assert ours["attention.projection"] == modules[f"{attn}.kv_proj"]
        assert ours["attention.output"] == modules[f"{attn}.o_a_proj"] + modules[f"{attn}.o_b_proj"]
        assert ours.get("attention.topk_indexer", 0) == modules.get(f"{attn}.compressor.indexer", 0)
        compressor = modules.get(f"{attn}.compressor.kv_proj", 0) + modules.get(f"{attn}.compressor.gate_proj", 0)
        assert ours.get("attention.compressor", 0) == compressor
        # The core is what self_attn computes outside its submodules (the two eager matmuls).
        inner = sum(v for k, v in modules.items() if k.startswith(attn + ".") and k.count(".") == attn.count(".") + 1)
        assert ours["attention.core"] == modules[attn] - inner
        assert ours["mlp"] + ours["mlp.shared"] == modules[f"{at}.mlp"]
        assert ours["mlp.shared"] == modules[f"{at}.mlp.shared_experts"]
        # mHC: the two fn projections, plus the two comb^T mixes the decoder layer runs itself.
        mixes = modules[at] - modules[attn] - modules[f"{at}.mlp"] - modules[f"{at}.attn_hc"] - modules[f"{at}.ffn_hc"]
        assert ours["residual_mixer"] == modules[f"{at}.attn_hc"] + modules[f"{at}.ffn_hc"] + mixes
    assert plan.head.flops(SEQ_LEN) == {"head": modules["lm_head"], "residual_mixer.head": modules["model.hc_head"]}


def _own(name: str, prefix: str) -> int:
    """Parameters of the module *prefix* and of every module under it, as recorded."""
    params = RECORD["models"][name]["module_parameters"]
    return sum(n for module, n in params.items() if module == prefix or module.startswith(prefix + "."))


def _weights(plan, unit, slot: str, params) -> int:
    (selection,) = [sel for sel in unit.selections if sel.slot == slot]
    quantities = {plan.symbols[q].symbol: v for q, v in unit.quantities.items()}  # in parameters only
    return compile_exact(selection.pattern.weights.xreplace(quantities))(dict(params))


@pytest.mark.parametrize("name", MODELS)
def test_every_patterns_weights_equal_its_modules_parameters(registry, name):
    model = _model(name)
    plan, units = _units(registry, model)
    for layer in model.layers:
        unit, at = units[layer.kind], f"model.layers.{layer.index}"
        attn = f"{at}.self_attn"
        chosen = {sel.slot for sel in unit.selections}

        def w(slot):
            return _weights(plan, unit, slot, {**model.params, **layer.params})

        assert w("attention.query") == sum(_own(name, f"{attn}.{m}") for m in ("q_a_proj", "q_a_norm", "q_b_proj"))
        assert w("attention.projection") == _own(name, f"{attn}.kv_proj") + _own(name, f"{attn}.kv_norm")
        assert w("attention.output") == _own(name, f"{attn}.o_a_proj") + _own(name, f"{attn}.o_b_proj")
        if "attention.compressor" in chosen:
            indexer = _own(name, f"{attn}.compressor.indexer")
            assert w("attention.compressor") == _own(name, f"{attn}.compressor") - indexer
            assert (w("attention.topk_indexer") if "attention.topk_indexer" in chosen else 0) == indexer
        assert w("residual_mixer") == _own(name, f"{at}.attn_hc") + _own(name, f"{at}.ffn_hc")
        assert w("mlp") + w("mlp.shared") == _own(name, f"{at}.mlp")
    head = {sel.slot: sel for sel in plan.head.selections}["residual_mixer.head"]
    assert compile_exact(head.pattern.weights)(dict(model.params)) == _own(name, "model.hc_head")
    # The weight-only slots too (norms, sinks, embedding): the whole model to the parameter.
    assert registry.parameters(model).total == RECORD["models"][name]["parameters"]
