"""flopsreg against real forward passes of tiny linear-attention / SSM hybrids (transformers 5.24).

tests/data/hf_forward/measure_linear.py ran each tiny config once under torch's FlopCounterMode
at two sequence lengths, recording the counted FLOPs of every module and the parameters of every
module. What FlopCounterMode does not see is computed (tests/hf/linear_reference.py) from the
algorithms written out step by step (tests/linear_oracles.py): the two triangular solves of Gated
DeltaNet's chunked scan, KDA's mul-sum contractions and forward substitution, and the elementwise state update of Mamba1's
sequential scan (Jamba). So the reference path is

    flopsreg (convention chunked_scan, padded convs, attention over every s x s pair)
        == recorded FlopCounterMode count + those unseen multiply-adds x 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import linear_reference as lr
import pytest

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_linear.json").read_text())
MODELS = sorted(RECORD["models"])
# The module of each family's layers that holds the non-attention mixer, and its output projection.
MIXER_MODULE = {
    "qwen3_next": "linear_attn", "qwen3_5_text": "linear_attn", "qwen3_5_moe_text": "linear_attn",
    "olmo_hybrid": "linear_attn", "kimi_linear": "self_attn", "nemotron_h": "mixer", "falcon_h1": "mamba",
    "granitemoehybrid": "mamba", "lfm2": "conv", "jamba": "mamba", "minimax": "self_attn",
}
OUTPUT = ("out_proj", "o_proj")


@pytest.fixture(scope="module")
def reference():
    return lr.reference_registry()


def test_the_linear_family_configs_are_the_files_of_those_families():
    folder = Path(__file__).parents[1] / "data" / "hf"
    found = {p.stem for p in folder.glob("*.json") if lr.text_config(json.loads(p.read_text())).get("model_type", json.loads(p.read_text())["model_type"]) in MIXER_MODULE}
    assert found == lr.LINEAR_FAMILY_CONFIGS


def test_every_tiny_model_ran():
    assert all("flops" in RECORD["models"][name] for name in MODELS), "a model failed to run when recorded"
    families = {lr.model_type(RECORD, name) for name in MODELS}
    assert families == set(MIXER_MODULE)


@pytest.mark.parametrize(("name", "n"), lr.runs(RECORD))
def test_the_reference_path_is_what_torch_counts_plus_what_it_does_not_see(reference, name, n):
    lr.check_reference_path(RECORD, reference, name, n)


@pytest.mark.parametrize(("name", "n"), lr.runs(RECORD))
def test_every_mixer_projection_conv_and_scan_against_its_module(reference, name, n):
    lr.check_mixers_against_modules(RECORD, reference, name, n, MIXER_MODULE[lr.model_type(RECORD, name)], OUTPUT)


@pytest.mark.parametrize("name", MODELS)
def test_every_mixer_holds_the_parameters_transformers_allocates(registry, name):
    lr.check_mixer_parameters(RECORD, registry, name, MIXER_MODULE[lr.model_type(RECORD, name)])


@pytest.mark.parametrize("name", ["nemotron-h-latent-tiny"])
def test_latent_moe_holds_its_router_experts_and_projections(registry, name):
    model = lr.model(RECORD, registry, name, padded=False)
    parameters = RECORD["models"][name]["parameters"]
    for index, unit, _ in lr.layers(registry, model, 1, "exact"):
        if "latent_experts" not in unit.flags:
            continue
        held = {part: next(v for m, v in parameters.items() if m.endswith(f"layers.{index}.mixer.{part}")) for part in ("gate", "experts", "fc1_latent_proj", "fc2_latent_proj")}
        assert lr.weights(registry, unit, ("mlp",)) == held["gate"] + held["experts"]
        assert lr.weights(registry, unit, ("mlp.latent",)) == held["fc1_latent_proj"] + held["fc2_latent_proj"]
        return
    raise AssertionError("no latent MoE layer")


@pytest.mark.parametrize(("name", "n"), lr.runs(RECORD))
def test_the_recurrent_minimum_is_below_the_reference_path(registry, reference, name, n):
    exact = registry.evaluate(lr.model(RECORD, registry, name, padded=False), seq_len=n).forward
    assert exact < reference.evaluate(lr.model(RECORD, reference, name), seq_len=n, convention="chunked_scan").forward
