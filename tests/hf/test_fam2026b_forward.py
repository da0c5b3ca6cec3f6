"""The 2026 families of brief fam2026b (laguna, ...) against real forward passes and parameter
counts, recorded in tests/data/hf_forward/forward_fam2026b.json.

tests/data/hf_forward/measure_fam2026b.py ran a tiny config of each case (odd widths: hidden 44,
head_dim 12, vocabulary 97) through transformers 5.24 on the CPU (eager attention, eager experts)
under torch's FlopCounterMode at two sequence lengths, and recorded the totals, the FLOPs of every
module, the (query, key) pairs each attention call's mask let through and ``sum(p.numel())``; and,
per model type, the class-default config (also saved as tests/data/hf/<type>-defaults.json) with
the parameters of its model built on the meta device. Those numbers come from torch and transformers.

Models with linear-attention layers are counted as tests/hf/test_linear_forward.py counts them:
under the chunked_scan convention with convs padded as torch's conv1d computes them, plus what
FlopCounterMode does not see (Gated DeltaNet's two triangular solves, KDA's mul-sum contractions
and forward substitution, from tests/linear_oracles.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import linear_oracles as lo
import pytest
from eager import eager_registry as make_eager_registry

import flopsreg
from flopsreg.declarations.symbols import s
from flopsreg.formula.exact import compile_exact

DATA = Path(__file__).parents[1] / "data"
RECORD = json.loads((DATA / "hf_forward" / "forward_fam2026b.json").read_text())
MODELS = sorted(RECORD["models"])
DEFAULTS = sorted(RECORD["defaults"])
MIXER_FLAGS = {"gated_deltanet", "kda", "short_conv"}
MIXER_MODULES = ("self_attn", "linear_attn", "conv")  # a layer's attention or other token mixer
MLP_MODULES = ("mlp", "feed_forward")
# Eager attention beside the chunked scans: every (query, key) pair, as under the eager convention.
RECTANGLE_BESIDE_SCANS = flopsreg.Pattern(
    name="eager_rectangle_beside_chunked_scans", slot="attention.mask", flags={"chunked_scan"}, precedence=5000,
    produces="pairs", formula=s**2, summary="every (query, key) pair is computed, then masked", reference="transformers eager_attention_forward",
)


@pytest.fixture(scope="module")
def eager_registry():
    return make_eager_registry(RECTANGLE_BESIDE_SCANS)


def _model(name: str) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(RECORD["models"][name]["config"])


def _reference(name: str) -> tuple[flopsreg.Model, str]:
    """The model as the recorded pass ran it, and the convention counting that path: the mixers'
    convs padded (torch's conv1d computes s + K - 1 outputs) and chunked scans, where it has mixers."""
    model = _model(name)
    if not any(kind.flags & MIXER_FLAGS for kind in model.kinds.values()):
        return model, "eager"
    kinds = {k: attrs.evolve(v, flags=v.flags | {"padded_conv"}) if v.flags & MIXER_FLAGS else v for k, v in model.kinds.items()}
    return attrs.evolve(model, kinds=kinds), "chunked_scan"


def _unseen(flags: frozenset[str], params, n: int) -> int:
    """FLOPs of one layer's chunked scan that FlopCounterMode does not count (the triangular solves)."""
    if "gated_deltanet" in flags:
        _, solves = lo.gdn_chunked_macs(n, params["linear_value_heads"], params["linear_key_head_dim"], params["linear_value_head_dim"], 64)
        return 2 * solves
    if "kda" in flags:  # the A_kk / A_qk mul-sums and the forward substitution
        _, other = lo.kda_chunked_macs(n, params["kda_heads"], params["kda_head_dim"], 64)
        return 2 * other
    return 0


def test_every_case_ran_and_every_default_built():
    assert all("totals" in RECORD["models"][name] for name in MODELS), "a model failed to run when recorded"
    assert all("parameters" in RECORD["defaults"][t] for t in DEFAULTS), "a class-default config failed to build"


@pytest.mark.parametrize("name", MODELS)
def test_the_whole_forward_equals_flop_counter_mode_at_both_lengths(eager_registry, name):
    totals = RECORD["models"][name]["totals"]
    model, convention = _reference(name)
    unseen = {n: sum(_unseen(layer.flags, layer.params, int(n)) for layer in model.layers) for n in totals}
    ours = {n: eager_registry.evaluate(model, seq_len=int(n), convention=convention).forward for n in totals}
    assert ours == {n: total + unseen[n] for n, total in totals.items()}


@pytest.mark.parametrize("name", MODELS)
def test_pairs_per_layer_equal_what_the_masks_let_through(registry, name):
    plan = registry.select(_model(name))
    units = {unit.name: unit for unit in plan.kinds}
    ours = [
        compile_exact(units[layer.kind].quantities["pairs"])({**layer.params, "seq_len": RECORD["seq_lens"][-1]})
        for layer in plan.model.layers
        if "pairs" in units[layer.kind].quantities  # the attention layers (a mixer layer calls no attention)
    ]
    assert ours == RECORD["models"][name]["pairs"]


@pytest.mark.parametrize("name", MODELS)
def test_every_layers_attention_and_mlp_equal_their_modules(eager_registry, name):
    """Each layer's attention or mixer (projections, gate, conv, scan, output) and MLP (router, experts, shared) alone."""
    modules, length = RECORD["models"][name]["modules"], RECORD["seq_lens"][-1]
    model, convention = _reference(name)
    units = {unit.name: unit for unit in eager_registry.select(model, convention=convention).kinds}
    for layer in model.layers:
        ours = units[layer.kind].flops(length)
        at = f"model.layers.{layer.index}"
        mixer = sum(n for slot, n in ours.items() if slot.startswith(("attention", "mixer")))
        recorded = sum(modules.get(f"{at}.{part}", 0) for part in MIXER_MODULES) + _unseen(layer.flags, layer.params, length)
        mlp = sum(n for slot, n in ours.items() if slot.startswith("mlp"))
        assert (mixer, mlp) == (recorded, sum(modules.get(f"{at}.{part}", 0) for part in MLP_MODULES)), (name, layer.index)


@pytest.mark.parametrize("name", MODELS)
def test_parameters_equal_what_transformers_allocates(registry, name):
    assert registry.parameters(_model(name)).total == RECORD["models"][name]["parameters"]


@pytest.mark.parametrize("model_type", DEFAULTS)
def test_class_default_parameters_equal_the_meta_device_model(registry, model_type):
    """The class-default config saved in tests/data/hf is the one recorded, and read to its total."""
    path = DATA / "hf" / f"{model_type.replace('_', '-')}-defaults.json"
    entry = RECORD["defaults"][model_type]
    assert json.loads(path.read_text()) == entry["config"]
    assert registry.parameters(flopsreg.Model.from_hf_config(path)).total == entry["parameters"]


def test_laguna_gating_other_than_its_four_values_is_refused():
    config = {**RECORD["models"]["laguna"]["config"], "gating": "per-token"}
    with pytest.raises(flopsreg.ModelError, match=r"gating = 'per-token': expected true, false, 'per-head' or 'per-element'"):
        flopsreg.Model.from_hf_config(config)


def test_laguna_gating_false_is_the_per_channel_gate():
    """LagunaAttention: only true or 'per-head' gate per head; false builds g_proj of heads x head_dim."""
    config = RECORD["models"]["laguna_per_element"]["config"]
    per_element = flopsreg.Model.from_hf_config(config)
    assert flopsreg.Model.from_hf_config({**config, "gating": False}).flags == per_element.flags
    assert "output_gate" in per_element.flags and "head_gate" in flopsreg.Model.from_hf_config({**config, "gating": "per-head"}).flags


def test_lfm2_moe_without_layer_types_is_refused():
    """Lfm2MoeConfig leaves layer_types None, and transformers fails to build the model from it
    (the recorded class defaults add a layout, see measure_fam2026b.py)."""
    config = {**RECORD["defaults"]["lfm2_moe"]["config"], "layer_types": None}
    with pytest.raises(flopsreg.ModelError, match=r"layer_types.*Lfm2MoeConfig has no default for it"):
        flopsreg.Model.from_hf_config(config)
    model = flopsreg.Model.from_hf_config(RECORD["defaults"]["lfm2_moe"]["config"])
    assert [layer.kind for layer in model.layers][:4] == ["conv_dense", "conv_dense", "full_moe", "conv_moe"]


@pytest.mark.parametrize(("seq_len", "hidden", "heads"), [(1, 1, 1), (5, 3, 2), (7, 4, 3)])
def test_the_head_gate_is_the_multiply_adds_of_its_literal_loop(registry, seq_len, hidden, heads):
    """g_proj hidden -> heads written out: one multiply-add per (token, head, input feature)."""
    multiply_adds = sum(1 for _ in range(seq_len) for _ in range(heads) for _ in range(hidden))
    pattern = registry.pattern("attention_head_gate")
    assert compile_exact(pattern.formula)({"seq_len": seq_len, "hidden": hidden, "heads": heads}) == 2 * multiply_adds
    assert compile_exact(pattern.weights)({"hidden": hidden, "heads": heads}) == hidden * heads


def test_bailing_hybrid_key_value_heads_other_than_the_heads_are_refused():
    config = {**RECORD["models"]["bailing_hybrid"]["config"], "num_key_value_heads": 2}
    with pytest.raises(flopsreg.ModelError, match=r"num_key_value_heads = 2: the MLA expands keys and values to all 4 heads"):
        flopsreg.Model.from_hf_config(config)
