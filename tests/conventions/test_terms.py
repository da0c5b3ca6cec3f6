"""Conventions know what they count (Convention.counts): a pattern no framework has a term for,
such as a plugin's new attention core, is refused by name under every convention that declares
its terms, while exact counts it; and refusals say what is true of the model at hand."""

import json
from pathlib import Path

import attrs
import pytest
from plugins_for_tests import differential_attention

import flopsreg
from flopsreg.patterns.conventions._rules import BUILTIN_TERMS

HF = Path(__file__).parent.parent / "data" / "hf"


@pytest.fixture(scope="module")
def with_plugin():
    return flopsreg.Registry(plugins=[differential_attention], load_entry_points=False)


def _differential(name="llama-3-8b"):
    base = flopsreg.Model.example(name)
    return attrs.evolve(base, flags=base.flags | {differential_attention.FLAG})


def _declaring(registry):
    return sorted(name for name, c in registry.conventions.items() if c.counts is not None)


def test_every_framework_convention_declares_its_terms(registry):
    assert {"megatron", "megatron_bridge", "slime", "nanogpt", "verl", "torchtitan", "olmo_core", "hf_trainer"} <= set(_declaring(registry))


def test_exact_counts_the_plugin_core(with_plugin, registry):
    s, layers, heads, head_dim = 4096, 32, 32, 128
    pairs = s * (s + 1) // 2  # full causal
    extra = with_plugin.evaluate(_differential(), seq_len=s).forward - registry.evaluate(flopsreg.Model.example("llama-3-8b"), seq_len=s).forward
    assert extra == layers * 2 * heads * head_dim * pairs  # one more QK^T map per layer


@pytest.mark.parametrize("convention", ["megatron", "megatron_bridge", "slime", "nanogpt", "verl", "torchtitan", "olmo_core", "hf_trainer"])
def test_every_convention_refuses_the_plugin_core_by_name(with_plugin, convention):
    message = f"layers 0-31.*slot attention.core: {convention} has no term for differential_attention_core \\(plugin 'plugins_for_tests.differential_attention'\\)"
    with pytest.raises(flopsreg.ModelError, match=message):
        with_plugin.evaluate(_differential(), seq_len=4096, convention=convention)


def test_without_the_plugin_flag_every_convention_still_counts(with_plugin, registry):
    model = flopsreg.Model.example("llama-3-8b")
    for convention in _declaring(registry):
        assert with_plugin.evaluate(model, seq_len=512, convention=convention).forward == registry.evaluate(model, seq_len=512, convention=convention).forward


def test_compare_says_cannot_count_with_the_reason(with_plugin):
    comparison = with_plugin.compare(_differential(), seq_len=4096)
    refused = {t.convention: t.error for t in comparison.totals if t.result is None}
    assert {"megatron", "verl", "torchtitan"} <= set(refused)
    assert "megatron has no term for differential_attention_core" in refused["megatron"]
    text = comparison.to_text()
    assert "cannot count" in text and "has no term for differential_attention_core" in text


def test_builtin_terms_are_every_builtin_exact_pattern(registry):
    """A built-in pattern added later is outside every convention's terms until someone decides
    how each framework counts it: this names it."""
    conventions = set(registry.conventions)
    exact = {p.name for p in registry.patterns if not p.flags & conventions}
    assert exact - BUILTIN_TERMS == set(), "add them to patterns/conventions/_rules.py BUILTIN_TERMS, or refuse them"
    assert BUILTIN_TERMS - exact == set()  # no stale or misspelt name


def test_a_convention_counts_must_be_names():
    with pytest.raises(flopsreg.PatternError, match=r"^convention 'mine': counts = 3: expected None or a collection"):
        flopsreg.Convention(name="mine", summary="x", reference="y", counts=3)


def test_a_model_with_a_family_flag_is_not_told_it_has_none(registry):
    """deepseek-v3.2 read from its config.json has hf_deepseek_v32, which torchtitan has no model for."""
    model = flopsreg.Model.from_hf_config(json.loads((HF / "deepseek-v3.2.json").read_text()))
    assert "hf_deepseek_v32" in model.flags
    with pytest.raises(flopsreg.ModelError) as refused:
        registry.evaluate(model, seq_len=16, convention="torchtitan")
    assert "no family flag" not in str(refused.value)
    assert "none of this model's flags is the family flag of one (hf_llama" in str(refused.value)
