"""flopsreg against real forward passes of tiny GLM-5.3-Flash models, recorded in
tests/data/hf_forward/forward_glm5_next.json by measure_glm5_next.py (transformers 5.24 on the
CPU, eager attention and experts, torch's FlopCounterMode): every module's FLOPs, the pairs each
attention call's mask let through (the indexer's selected pools and the tail) and every module's
parameters. Those numbers come from torch, not from flopsreg.

What transformers' torch path computes beyond the exact count is modelled by a plugin here, under
the built-in ``chunked_scan`` convention (KDA's chunked scan, the padded conv): eager attention
multiplies every query with every key before masking, and the k-pool indexer scores every complete
pool for every query (s floor(s/L) pairs) before masking the non-causal ones.
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
from flopsreg.patterns.dsa_kpool import INDEX_KPOOL, KPOOL_INDEXER, p_pool

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_glm5_next.json").read_text())
SEQ_LEN = RECORD["seq_len"]
MODELS = sorted(RECORD["models"])
KDA_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "forget_gate", "b_proj", "g_a_proj", "g_b_proj")


class TorchReference:
    """The rectangles transformers computes before masking, beside the chunked_scan convention."""

    @flopsreg.hookimpl
    def flopsreg_register_patterns(self):
        return [
            flopsreg.Pattern(
                name="eager_rectangle_beside_kpool", slot="attention.mask", flags={"chunked_scan"}, precedence=5000,
                produces="pairs", formula=s**2, summary="every (query, key) pair is computed, then masked",
                reference="transformers eager_attention_forward",
            ),
            flopsreg.Pattern(
                name="eager_kpool_indexer", slot="attention.topk_indexer", flags={"chunked_scan", *KPOOL_INDEXER.flags},
                precedence=5000, params=KPOOL_INDEXER.params,
                formula=KPOOL_INDEXER.formula.xreplace({p_pool: s * sympy.floor(s / INDEX_KPOOL.symbol)}),
                summary="every query scores every complete pool, then masks", reference="Glm5NextTextIndexer.forward",
            ),
        ]


@pytest.fixture(scope="module")
def reference():
    return flopsreg.Registry(plugins=[TorchReference()], load_entry_points=False)


def _model(registry, name: str, padded: bool = True) -> flopsreg.Model:
    """The recorded config read by flopsreg, the KDA convs padded as torch's conv1d computes them."""
    model = flopsreg.Model.from_hf_config(RECORD["models"][name]["config"], registry=registry)
    if not padded:
        return model
    kinds = {k: attrs.evolve(v, flags=v.flags | {"padded_conv"}) if "kda" in v.flags else v for k, v in model.kinds.items()}
    return attrs.evolve(model, kinds=kinds)


def _unseen(model: flopsreg.Model, flags: frozenset[str]) -> int:
    """KDA's mul-sum contractions and forward substitution, which FlopCounterMode does not count."""
    if "kda" not in flags:
        return 0
    _, other = lo.kda_chunked_macs(SEQ_LEN, model.params["kda_heads"], model.params["kda_head_dim"], 64)
    return 2 * other


def _units(registry, model, convention="exact"):
    plan = registry.select(model, convention=convention)
    return plan, {unit.name: unit for unit in plan.kinds}


def test_both_cases_ran_and_cover_shared_top_k_and_both_masks(registry):
    assert RECORD["models"]["glm5_next"]["config"]["text_config"]["indexer_types"][2] == "shared"
    masks = set()
    for name in MODELS:
        plan, units = _units(registry, _model(registry, name, padded=False))
        masks |= {sel.pattern.name for unit in units.values() for sel in unit.selections if sel.slot == "attention.mask"}
    assert {"dsa_kpool_topk", "dsa_kpool_topk_tail"} <= masks


@pytest.mark.parametrize("name", MODELS)
def test_pairs_per_indexed_layer_equal_what_the_selected_pools_let_through(registry, name):
    model = _model(registry, name, padded=False)
    plan, units = _units(registry, model)
    ours = [
        compile_exact(units[layer.kind].quantities["pairs"])({**model.params, **layer.params, "seq_len": SEQ_LEN})
        for layer in model.layers
        if "kda" not in layer.flags
    ]
    assert ours == RECORD["models"][name]["pairs"]


@pytest.mark.parametrize("name", MODELS)
def test_the_whole_forward_is_what_torch_counts_plus_what_it_does_not_see(reference, name):
    model = _model(reference, name)
    plan = reference.select(model, convention="chunked_scan")
    unseen = sum(_unseen(model, k.flags) * k.count for k in plan.kinds)
    assert reference.evaluate(model, seq_len=SEQ_LEN, convention="chunked_scan").forward == RECORD["models"][name]["total"] + unseen


@pytest.mark.parametrize("name", MODELS)
def test_every_module_of_every_layer(reference, name):
    modules = RECORD["models"][name]["modules"]
    model = _model(reference, name)
    plan, units = _units(reference, model, "chunked_scan")
    for layer in model.layers:
        unit = units[layer.kind]
        ours, at = unit.flops(SEQ_LEN), f"model.language_model.layers.{layer.index}"
        attn = f"{at}.self_attn"

        def m(*names: str) -> int:
            return sum(modules.get(f"{attn}.{n}", 0) for n in names)

        inner = sum(v for k, v in modules.items() if k.startswith(attn + ".") and k.count(".") == attn.count(".") + 1)
        if "kda" in layer.flags:
            assert ours["mixer.projection"] == m(*KDA_PROJECTIONS), (name, layer.index)
            assert ours["mixer.output"] == m("o_proj"), (name, layer.index)
            # the padded conv and the chunked scan run inside self_attn, outside its submodules
            core = modules[attn] - inner + _unseen(model, layer.flags)
            assert ours["mixer.conv"] + ours["mixer.core"] == core, (name, layer.index)
        else:
            assert ours["attention.query"] == m("q_a_proj", "q_b_proj"), (name, layer.index)
            assert ours["attention.projection"] == m("kv_a_proj_with_mqa", "kv_b_proj"), (name, layer.index)
            assert ours["attention.output"] == m("o_proj"), (name, layer.index)
            assert ours.get("attention.topk_indexer", 0) == m("indexer"), (name, layer.index)
            assert ours["attention.core"] == modules[attn] - inner, (name, layer.index)
        assert ours["mlp"] + ours.get("mlp.shared", 0) == modules[f"{at}.mlp"], (name, layer.index)
        assert ours.get("mlp.shared", 0) == modules.get(f"{at}.mlp.shared_experts", 0), (name, layer.index)
        # mHC: the two fn projections, plus the two comb^T mixes the decoder layer runs itself.
        mixes = modules[at] - modules[attn] - modules[f"{at}.mlp"] - modules[f"{at}.attn_hc"] - modules[f"{at}.ffn_hc"]
        assert ours["residual_mixer"] == modules[f"{at}.attn_hc"] + modules[f"{at}.ffn_hc"] + mixes, (name, layer.index)
    # The hyper head is a mean: no FLOPs; the logits are lm_head's.
    assert sum(plan.head.flops(SEQ_LEN).values()) == modules["lm_head"]


def _own(name: str, prefix: str) -> int:
    """Parameters of the module *prefix* and of every module under it, as recorded."""
    params = RECORD["models"][name]["module_parameters"]
    return sum(n for module, n in params.items() if module == prefix or module.startswith(prefix + "."))


def _weights(plan, unit, slot: str, params) -> int:
    (selection,) = [sel for sel in unit.selections if sel.slot == slot]
    quantities = {plan.symbols[q].symbol: v for q, v in unit.quantities.items() if not v.free_symbols}  # ffn_matrices
    return compile_exact(selection.pattern.weights.xreplace(quantities))(dict(params))


@pytest.mark.parametrize("name", MODELS)
def test_every_patterns_weights_equal_its_modules_parameters(registry, name):
    model = _model(registry, name, padded=False)
    plan, units = _units(registry, model)
    for layer in model.layers:
        unit, at = units[layer.kind], f"model.language_model.layers.{layer.index}"
        chosen = {sel.slot for sel in unit.selections}

        def w(slot: str) -> int:
            return _weights(plan, unit, slot, {**model.params, **layer.params}) if slot in chosen else 0

        indexer = _own(name, f"{at}.self_attn.indexer")
        assert w("attention.topk_indexer") == indexer, (name, layer.index)
        assert w("residual_mixer") == _own(name, f"{at}.attn_hc") + _own(name, f"{at}.ffn_hc"), (name, layer.index)
        assert w("mlp") + w("mlp.shared") == _own(name, f"{at}.mlp"), (name, layer.index)
    # The whole text decoder to the parameter (the tiny vision tower is not counted by flopsreg).
    text = _own(name, "model.language_model") + _own(name, "lm_head")
    assert registry.parameters(model).total == text
