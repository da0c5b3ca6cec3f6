"""Which mask, MLP and head patterns each example selects, layer by layer, read from explain().

The expected layout of every model is written here from its published config and the Hugging
Face rule that reads it (HF_SEMANTICS in the research notes): Gemma 3 slides iff
(i + 1) % 6 != 0, GPT-OSS lists its layer_types, Llama 4 chunks iff no_rope_layers[i] == 1,
DeepSeek-V3 is dense below first_k_dense_replace.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import flopsreg

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
_UNIT = re.compile(r"^layers? (?P<ranges>[0-9a-z, -]+) \(kind '(?P<kind>[^']+)'\): flags")
_PART = re.compile(r"(?P<first>[0-9]+)(-(?P<last>[0-9]+))?( every (?P<step>[0-9]+)(st|nd|rd|th))?")
_SELECTION = re.compile(r"^  (?P<slot>[a-z_.]+): (?P<pattern>[a-z_]+) \(")


def explained_patterns(text: str) -> dict[int, dict[str, str]]:
    """{layer index: {slot: pattern}} parsed from the explain() text of a model."""
    layers: dict[int, dict[str, str]] = {}
    current: list[int] = []
    for line in text.splitlines():
        unit = _UNIT.match(line)
        if unit:
            current = []
            for part in unit["ranges"].split(", "):  # "3", "0-4" or "5-59 every 6th"
                m = _PART.fullmatch(part)
                assert m, part
                current += range(int(m["first"]), int(m["last"] or m["first"]) + 1, int(m["step"] or 1))
            for index in current:
                layers[index] = {}
            continue
        if not line.startswith("  "):
            current = []  # the model-level unit or a warning
            continue
        selection = _SELECTION.match(line)
        if selection:
            for index in current:
                layers[index][selection["slot"]] = selection["pattern"]
    return layers


def _explain(registry, name: str) -> str:
    return registry.select(flopsreg.Model.from_toml(EXAMPLES / f"{name}.toml")).explain()


def gemma_3(layers: int) -> list[str]:
    return ["sliding_window" if (i + 1) % 6 != 0 else "full_causal" for i in range(layers)]


MASKS = {
    "llama-3-8b": ["full_causal"] * 32,
    "llama-3.1-70b": ["full_causal"] * 80,
    "mistral-7b-v0.1": ["sliding_window"] * 32,
    "mixtral-8x7b": ["full_causal"] * 32,  # published sliding_window is null
    "qwen3-8b": ["full_causal"] * 36,  # use_sliding_window false
    "qwen3-30b-a3b": ["full_causal"] * 48,
    "gemma-3-4b": gemma_3(34),
    "gemma-3-27b": gemma_3(62),
    "llama-4-scout": ["chunked" if rope else "full_causal" for rope in [1, 1, 1, 0] * 12],
    "gpt-oss-20b": ["sliding_window", "full_causal"] * 12,
    "gpt-oss-120b": ["sliding_window", "full_causal"] * 18,
    "deepseek-v3": ["full_causal"] * 61,
}

MLPS = {
    "llama-3-8b": ["dense_mlp"] * 32,
    "llama-3.1-70b": ["dense_mlp"] * 80,
    "mistral-7b-v0.1": ["dense_mlp"] * 32,
    "mixtral-8x7b": ["moe"] * 32,
    "qwen3-8b": ["dense_mlp"] * 36,
    "qwen3-30b-a3b": ["moe"] * 48,  # decoder_sparse_step 1, mlp_only_layers []
    "gemma-3-4b": ["dense_mlp"] * 34,
    "gemma-3-27b": ["dense_mlp"] * 62,
    "llama-4-scout": ["moe"] * 48,  # moe_layers 0..47
    "gpt-oss-20b": ["moe"] * 24,
    "gpt-oss-120b": ["moe"] * 36,
    "deepseek-v3": ["dense_mlp"] * 3 + ["moe"] * 58,  # first_k_dense_replace 3
}

SHARED = {"llama-4-scout", "deepseek-v3"}  # models whose MoE layers have a shared expert


@pytest.mark.parametrize("name", sorted(MASKS))
def test_explain_selects_the_published_mask_for_every_layer(registry, name):
    layers = explained_patterns(_explain(registry, name))
    assert [layers[i]["attention.mask"] for i in range(len(layers))] == MASKS[name]


@pytest.mark.parametrize("name", sorted(MLPS))
def test_explain_selects_the_published_mlp_for_every_layer(registry, name):
    layers = explained_patterns(_explain(registry, name))
    assert [layers[i]["mlp"] for i in range(len(layers))] == MLPS[name]
    assert all(layer["mlp.activation"] == "gated_ffn" for layer in layers.values())  # all are GLUs
    shared = [i for i, layer in sorted(layers.items()) if layer.get("mlp.shared") == "shared_experts"]
    assert shared == ([i for i, mlp in enumerate(MLPS[name]) if mlp == "moe"] if name in SHARED else [])


@pytest.mark.parametrize("name", sorted(MASKS))
def test_explain_selects_the_logits_head_once_and_no_mtp(registry, name):
    text = _explain(registry, name)
    # Gemma ties its head to the embedding (tie_word_embeddings, true by default): the same
    # logits FLOPs through the embedding's matrix, held once (issue 13's parameter counts).
    head = "tied_logits" if name.startswith("gemma") else "logits"
    assert text.count(f"  head: {head} (") == 1
    assert not [line for line in text.splitlines() if line.startswith("  mtp:")]


def test_gemma_3_global_layers_are_5_11_17_23_29(registry):
    """The README's example: Gemma 3 4B's full-attention layers by index."""
    layers = explained_patterns(_explain(registry, "gemma-3-4b"))
    assert [i for i, layer in sorted(layers.items()) if layer["attention.mask"] == "full_causal"] == [5, 11, 17, 23, 29]


def test_explain_parser_reads_result_layers_alike(registry):
    """The parser agrees with Result.layers, so the tests above read what the engine chose."""
    model = flopsreg.Model.from_toml(EXAMPLES / "llama-4-scout.toml")
    result = registry.evaluate(model, seq_len=8)
    parsed = explained_patterns(result.explain())
    assert {layer.index: dict(layer.patterns) for layer in result.layers} == parsed
