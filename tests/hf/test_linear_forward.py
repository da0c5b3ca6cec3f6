"""flopsreg against real forward passes of tiny linear-attention / SSM hybrids (transformers 5.24).

tests/data/hf_forward/measure_linear.py ran each tiny config once under torch's FlopCounterMode
at two sequence lengths, recording the counted FLOPs of every module and the parameters of every
module. What FlopCounterMode does not see is computed here from the algorithms written out step by step
(tests/linear_oracles.py): the two triangular solves of Gated DeltaNet's chunked scan, KDA's
mul-sum contractions and forward substitution, and the elementwise state update of Mamba1's
sequential scan (Jamba). So the reference path is

    flopsreg (convention chunked_scan, padded convs, attention over every s x s pair)
        == recorded FlopCounterMode count + those unseen multiply-adds x 2.
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

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_linear.json").read_text())
MODELS = sorted(RECORD["models"])
MIXER_FLAGS = {"gated_deltanet", "kda", "mamba1", "mamba2", "short_conv", "lightning", "rglru", "mlstm"}
MIXER_SLOTS = ("mixer.projection", "mixer.conv", "mixer.core", "mixer.output")
# The module of each family's layers that holds the non-attention mixer, and its output projection.
MIXER_MODULE = {
    "qwen3_next": "linear_attn", "qwen3_5_text": "linear_attn", "qwen3_5_moe_text": "linear_attn",
    "olmo_hybrid": "linear_attn", "kimi_linear": "self_attn", "nemotron_h": "mixer", "falcon_h1": "mamba",
    "granitemoehybrid": "mamba", "lfm2": "conv", "jamba": "mamba", "minimax": "self_attn",
}
OUTPUT = ("out_proj", "o_proj")
# The configs of these families in tests/data/hf: read by the tests of tests/hf/test_linear.py; their
# forward passes are recorded here as tiny configs of the same families, not by tests/data/hf_forward/measure.py.
LINEAR_FAMILY_CONFIGS = frozenset({
    "qwen3-next-80b-a3b", "qwen3.5-9b", "qwen3.5-35b-a3b", "olmo-hybrid-7b-defaults", "kimi-linear-48b-a3b",
    "nemotron-3-nano-30b-a3b", "nemotron-3-super-120b-a12b", "falcon-h1-defaults", "granite-4.0-h-defaults", "lfm2-defaults",
    "jamba-defaults", "minimax-text-01",
})


class TorchReference:
    """Eager attention computes every (query, key) pair and masks afterwards: under the
    chunked_scan convention, count s^2 pairs (the rest of that convention is the built-ins')."""

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


def _text(config: dict) -> dict:
    return config.get("text_config", config)


def _model(registry, name: str, padded: bool = True) -> flopsreg.Model:
    """The recorded config read by flopsreg, its mixers' convs padded as torch's conv1d computes them."""
    model = flopsreg.Model.from_hf_config(RECORD["models"][name]["config"], registry=registry)
    if not padded:
        return model
    kinds = {k: attrs.evolve(v, flags=v.flags | {"padded_conv"}) if v.flags & MIXER_FLAGS else v for k, v in model.kinds.items()}
    return attrs.evolve(model, kinds=kinds)


def _unseen(flags: frozenset[str], params: dict[str, int], n: int) -> int:
    """FLOPs of one layer's scan that FlopCounterMode does not count, from the oracles."""
    if "gated_deltanet" in flags:
        _, solves = lo.gdn_chunked_macs(n, params["linear_value_heads"], params["linear_key_head_dim"], params["linear_value_head_dim"], 64)
        return 2 * solves
    if "kda" in flags:
        _, other = lo.kda_chunked_macs(n, params["kda_heads"], params["kda_head_dim"], 64)
        return 2 * other
    if "mamba1" in flags:  # the sequential scan's state update is elementwise; its readout is a matmul
        update, _ = lo.mamba1_recurrent_macs(n, params["mamba_inner"], params["mamba_state"])
        return 2 * update
    if "rglru" in flags:  # the RG-LRU's recurrence is elementwise; its gates are batched matmuls
        _, update = lo.rglru_recurrent_macs(n, params["rglru_blocks"], params["rglru_block_width"])
        return 2 * update
    if "mlstm" in flags:  # the normaliser's sums of the chunkwise and step kernels are elementwise
        _, other = lo.mlstm_chunked_macs(n, params["mlstm_heads"], params["mlstm_qk_dim"], params["mlstm_v_dim"], params["scan_chunk"], params["mlstm_piece"])
        return 2 * other
    return 0


def _outside_modules(flags: frozenset[str], params: dict[str, int], n: int) -> int:
    """FLOPs of a mixer's projection that transformers computes without calling its module:
    Jamba's dt_proj runs as ``dt_proj.weight @ x`` (modeling_jamba.py:580), filed under the mixer."""
    return 2 * n * params["mamba_dt_rank"] * params["mamba_inner"] if "mamba1" in flags else 0


def _runs():
    return [(name, int(n)) for name in MODELS for n in RECORD["models"][name].get("flops", {})]


def test_the_linear_family_configs_are_the_files_of_those_families():
    folder = Path(__file__).parents[1] / "data" / "hf"
    found = {p.stem for p in folder.glob("*.json") if _text(json.loads(p.read_text())).get("model_type", json.loads(p.read_text())["model_type"]) in MIXER_MODULE}
    assert found == LINEAR_FAMILY_CONFIGS


def test_every_tiny_model_ran():
    assert all("flops" in RECORD["models"][name] for name in MODELS), "a model failed to run when recorded"
    families = {_text(RECORD["models"][name]["config"])["model_type"] for name in MODELS}
    assert families == set(MIXER_MODULE)


@pytest.mark.parametrize(("name", "n"), _runs())
def test_the_reference_path_is_what_torch_counts_plus_what_it_does_not_see(reference, name, n):
    model = _model(reference, name)
    plan = reference.select(model, convention="chunked_scan")
    unseen = sum(_unseen(k.flags, k.params, n) * k.count for k in plan.kinds)
    assert reference.evaluate(model, seq_len=n, convention="chunked_scan").forward == RECORD["models"][name]["flops"][str(n)]["total"] + unseen


def _layers(model: flopsreg.Model, registry, n: int, convention: str):
    """(index, kind selection, slot FLOPs) of every layer."""
    for unit in registry.select(model, convention=convention).kinds:
        for layers in unit.layers:
            for index in layers:
                yield index, unit, unit.flops(n)


def _modules(name: str, n: int, index: int, part: str) -> dict[str, int]:
    """The recorded FLOPs of layer *index*'s module *part* and of its direct children, by child name."""
    modules = RECORD["models"][name]["flops"][str(n)]["modules"]
    prefix = next(m for m in modules if m.endswith(f".layers.{index}.{part}"))
    children = {m[len(prefix) + 1:]: v for m, v in modules.items() if m.startswith(prefix + ".") and "." not in m[len(prefix) + 1:]}
    return {"": modules[prefix], **children}


@pytest.mark.parametrize(("name", "n"), _runs())
def test_every_mixer_projection_conv_and_scan_against_its_module(reference, name, n):
    model = _model(reference, name)
    part = MIXER_MODULE[_text(RECORD["models"][name]["config"])["model_type"]]
    checked = 0
    for index, unit, flops in _layers(model, reference, n, "chunked_scan"):
        if not unit.flags & MIXER_FLAGS:
            continue
        recorded = _modules(name, n, index, part)
        total = recorded.pop("")
        output = next(recorded.pop(o) for o in OUTPUT if o in recorded)
        assert flops["mixer.output"] == output, (index, "output")
        outside = _outside_modules(unit.flags, unit.params, n)
        assert flops["mixer.projection"] == sum(recorded.values()) + outside, (index, "projections", sorted(recorded))
        inside = total - output - sum(recorded.values()) - outside  # the conv (if any) and the scan: F.conv1d, matmuls, einsums
        assert flops.get("mixer.conv", 0) + flops.get("mixer.core", 0) == inside + _unseen(unit.flags, unit.params, n), index
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


@pytest.mark.parametrize("name", MODELS)
def test_every_mixer_holds_the_parameters_transformers_allocates(registry, name):
    model = _model(registry, name, padded=False)
    part = MIXER_MODULE[_text(RECORD["models"][name]["config"])["model_type"]]
    parameters = RECORD["models"][name]["parameters"]
    checked = 0
    for index, unit, _ in _layers(model, registry, 1, "exact"):
        if not unit.flags & MIXER_FLAGS:
            continue
        held = next(v for m, v in parameters.items() if m.endswith(f"layers.{index}.{part}"))
        assert _weights(registry, unit, MIXER_SLOTS) == held, (index, unit.name)
        checked += 1
    assert checked


@pytest.mark.parametrize("name", ["nemotron-h-latent-tiny"])
def test_latent_moe_holds_its_router_experts_and_projections(registry, name):
    model = _model(registry, name, padded=False)
    parameters = RECORD["models"][name]["parameters"]
    for index, unit, _ in _layers(model, registry, 1, "exact"):
        if "latent_experts" not in unit.flags:
            continue
        held = {part: next(v for m, v in parameters.items() if m.endswith(f"layers.{index}.mixer.{part}")) for part in ("gate", "experts", "fc1_latent_proj", "fc2_latent_proj")}
        assert _weights(registry, unit, ("mlp",)) == held["gate"] + held["experts"]
        assert _weights(registry, unit, ("mlp.latent",)) == held["fc1_latent_proj"] + held["fc2_latent_proj"]
        return
    raise AssertionError("no latent MoE layer")


@pytest.mark.parametrize(("name", "n"), _runs())
def test_the_recurrent_minimum_is_below_the_reference_path(registry, reference, name, n):
    exact = registry.evaluate(_model(registry, name, padded=False), seq_len=n).forward
    assert exact < reference.evaluate(_model(reference, name), seq_len=n, convention="chunked_scan").forward
