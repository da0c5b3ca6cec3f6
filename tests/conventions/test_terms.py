"""Conventions know what they count (Convention.counts): a pattern no framework has a term for,
such as a plugin's new attention core, is refused by name under every convention that declares
its terms, while exact counts it; and refusals say what is true of the model at hand."""

from pathlib import Path

import attrs
import pytest
from plugins_for_tests import two_map_attention

import flopsreg
from flopsreg.patterns.conventions._rules import BUILTIN_TERMS, NO_FRAMEWORK_TERM

HF = Path(__file__).parent.parent / "data" / "hf"


@pytest.fixture(scope="module")
def with_plugin():
    return flopsreg.Registry(plugins=[two_map_attention], load_entry_points=False)


def _two_map(name="llama-3-8b"):
    base = flopsreg.Model.example(name)
    return attrs.evolve(base, flags=base.flags | {two_map_attention.FLAG})


def _declaring(registry):
    return sorted(name for name, c in registry.conventions.items() if c.counts is not None)


def test_every_framework_convention_declares_its_terms(registry):
    assert {"megatron", "megatron_bridge", "slime", "nanogpt", "verl", "torchtitan", "olmo_core"} <= set(_declaring(registry))
    assert registry.conventions["hf_trainer"].counts is None  # the Trainer counts any model by its parameters


def test_exact_counts_the_plugin_core(with_plugin, registry):
    s, layers, heads, head_dim = 4096, 32, 32, 128
    pairs = s * (s + 1) // 2  # full causal
    extra = with_plugin.evaluate(_two_map(), seq_len=s).forward - registry.evaluate(flopsreg.Model.example("llama-3-8b"), seq_len=s).forward
    assert extra == layers * 2 * heads * head_dim * pairs  # one more QK^T map per layer


@pytest.mark.parametrize("convention", ["megatron", "megatron_bridge", "slime", "nanogpt", "verl", "torchtitan", "olmo_core"])
def test_every_convention_refuses_the_plugin_core_by_name(with_plugin, convention):
    message = f"layers 0-31.*slot attention.core: {convention} has no term for two_map_attention_core \\(plugin 'plugins_for_tests.two_map_attention'\\)"
    with pytest.raises(flopsreg.ModelError, match=message):
        with_plugin.evaluate(_two_map(), seq_len=4096, convention=convention)


def test_without_the_plugin_flag_every_convention_still_counts(with_plugin, registry):
    model = flopsreg.Model.example("llama-3-8b")
    for convention in _declaring(registry):
        assert with_plugin.evaluate(model, seq_len=512, convention=convention).forward == registry.evaluate(model, seq_len=512, convention=convention).forward


def test_compare_says_cannot_count_with_the_reason(with_plugin):
    comparison = with_plugin.compare(_two_map(), seq_len=4096)
    refused = {t.convention: t.error for t in comparison.totals if t.result is None}
    assert {"megatron", "verl", "torchtitan"} <= set(refused)
    assert "megatron has no term for two_map_attention_core" in refused["megatron"]
    text = comparison.to_text()
    assert "cannot count" in text and "has no term for two_map_attention_core" in text


def test_builtin_terms_are_every_builtin_exact_pattern(registry):
    """A built-in pattern added later is outside every convention's terms until someone decides
    how each framework counts it: this names it."""
    conventions = set(registry.conventions)
    exact = {p.name for p in registry.patterns if not p.flags & conventions}
    assert exact - BUILTIN_TERMS - NO_FRAMEWORK_TERM == set(), "add them to BUILTIN_TERMS or NO_FRAMEWORK_TERM (patterns/conventions/_rules.py)"
    assert (BUILTIN_TERMS | NO_FRAMEWORK_TERM) - exact == set() and not BUILTIN_TERMS & NO_FRAMEWORK_TERM  # no stale or misspelt name


@pytest.mark.parametrize(("config", "pattern"), [("diffllama-defaults", "differential_attention_core"), ("rwkv-defaults", "rwkv4_wkv")])
@pytest.mark.parametrize("convention", ["megatron", "megatron_bridge", "slime", "verl"])
def test_built_in_patterns_no_framework_counts_are_refused_by_name(registry, config, pattern, convention):
    """DiffLlama's differential core and RWKV-4's WKV: exact counts them, these frameworks have no term."""
    model = flopsreg.Model.from_hf_config(HF / f"{config}.json")
    assert registry.evaluate(model, seq_len=37).forward > 0
    with pytest.raises(flopsreg.ModelError, match=rf"slot (attention|mixer)\.core: {convention} has no term for {pattern} \(plugin 'flopsreg\.patterns\."):
        registry.evaluate(model, seq_len=37, convention=convention)
