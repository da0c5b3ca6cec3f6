"""Families whose attention reads no ``num_key_value_heads`` / ``head_dim`` (issue 21's audit):
configs carrying those fields against real forward passes and parameter counts, recorded by
tests/data/hf_forward/measure_heads5.py in forward_heads5.json.

Each case is a recorded config of another record (the classic, r5classic and fam1 records) with 2 key/value heads for 4 query heads and a head width of hidden / heads + 2
added, which the family's modeling file does not read (its attention is multi-head at hidden /
heads), run by transformers 5.24 under torch's FlopCounterMode at two lengths; GLM-4.7-Flash
with ``head_dim``, its config class's alias of ``qk_rope_head_dim``; Gemma 4 without ``head_dim``
(its class default 256; DeepSeek-V4's, 512, is in the deepseek_v4 record). Those numbers come
from torch and transformers. (Other records are named by their group, not their file name: the
hf-configs table names the test of each record by the file names a test mentions.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from recorded_forward import forward_at

import flopsreg

DATA = Path(__file__).parents[1] / "data" / "hf_forward"
RECORD = json.loads((DATA / "forward_heads5.json").read_text())
MODELS = sorted(RECORD["models"])
IGNORED = [name for name in MODELS if name.endswith("_heads_ignored")]


def _record(group: str) -> dict:
    """The models of the record forward_<group>.json."""
    return json.loads((DATA / f"forward_{group}.json").read_text())["models"]


BASES = [_record("classic"), _record("r5classic")]


def _model(name: str) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(RECORD["models"][name]["config"])


def _base(name: str) -> dict:
    """The record *name* was made from (its config without the added fields)."""
    base = name.removesuffix("_heads_ignored")
    return next(models[base] for models in BASES if base in models)


def test_every_case_ran_and_carries_the_fields():
    assert RECORD["transformers"] == "5.24.0" and MODELS
    assert all("totals" in RECORD["models"][name] for name in MODELS)
    assert all(RECORD["models"][name]["config"]["num_key_value_heads"] == 2 for name in IGNORED)


@pytest.mark.parametrize("name", IGNORED)
def test_transformers_ran_each_case_as_its_base(name):
    """The fields change nothing in transformers (else the case would not test a field it ignores)."""
    entry, base = RECORD["models"][name], _base(name)
    assert (entry["totals"], entry["parameters"]) == (base["totals"], base["parameters"])


@pytest.mark.parametrize("name", MODELS)
def test_the_whole_forward_equals_flop_counter_mode_at_both_lengths(eager_registry, name):
    totals = RECORD["models"][name]["totals"]
    assert forward_at(eager_registry, _model(name), totals) == totals


@pytest.mark.parametrize("name", MODELS)
def test_parameters_equal_what_transformers_allocates(registry, name):
    assert registry.parameters(_model(name)).total == RECORD["models"][name]["parameters"]


@pytest.mark.parametrize(("model_type", "field", "alias"), [
    ("glm4_moe_lite", "qk_rope_head_dim", "head_dim"),  # Glm4MoeLiteConfig.attribute_map
    ("zamba", "attention_head_dim", "head_dim"),  # ZambaConfig.attribute_map
])
def test_a_head_dim_alias_that_disagrees_with_its_field_is_refused(model_type, field, alias):
    config = next(entry["config"] for entry in _record("fam1" if model_type == "glm4_moe_lite" else "ssm2").values()
                  if entry["config"]["model_type"] == model_type and field in entry["config"])
    with pytest.raises(flopsreg.ModelError, match=rf"{field} = {config[field]} but {alias} = {config[field] + 2}: .*attribute_map"):
        flopsreg.Model.from_hf_config({**config, alias: config[field] + 2})
