"""Properties every attention count must have, checked with hypothesis.

Each property says something a reader can check without the formulas: a window longer than the
sequence changes nothing, longer sequences never cost less, GQA only changes the K/V
projections, batches and packed rows add up, and a model survives a trip through TOML.
"""

from __future__ import annotations

import oracles
import pytest
from helpers_models import gqa_model, mask_pairs, slot_flops
from hypothesis import given, settings
from hypothesis import strategies as st

import flopsreg

FAST = settings(max_examples=75, deadline=None)
SMALL = settings(max_examples=60, deadline=None)

lengths = st.integers(min_value=1, max_value=200_000)
sizes = st.integers(min_value=1, max_value=200_000)
MASKS = ("full_causal", "sliding_window", "chunked")


@st.composite
def gqa_dims(draw):
    """Attention dimensions with heads a multiple of kv_heads (the GQA constraint)."""
    kv_heads = draw(st.integers(1, 16))
    group = draw(st.integers(1, 8))
    return {
        "hidden": draw(st.integers(1, 8192)),
        "heads": kv_heads * group,
        "kv_heads": kv_heads,
        "head_dim": draw(st.integers(1, 256)),
    }


def masked(mask: str, size: int, dims: dict[str, int] | None = None, layers: int = 1):
    """A uniform GQA model with the given mask; *size* is the window or chunk (unused for full)."""
    dims = dims or {"hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 16}
    if mask == "sliding_window":
        return gqa_model(**dims, layers=layers, flags={"sliding_window"}, window=size)
    if mask == "chunked":
        return gqa_model(**dims, layers=layers, flags={"chunked"}, chunk=size)
    return gqa_model(**dims, layers=layers)


def forward(registry, model, **kwargs) -> int:
    return registry.evaluate(model, **kwargs).forward


# -- masks -----------------------------------------------------------------------------------------


@FAST
@given(s=lengths, extra=st.integers(0, 10**9))
def test_window_at_least_sequence_length_is_full_causal(registry, s, extra):
    """window >= s: every causal key is inside the window, so nothing is dropped."""
    assert forward(registry, masked("sliding_window", s + extra), seq_len=s) == forward(
        registry, masked("full_causal", 0), seq_len=s
    )


@FAST
@given(s=lengths, extra=st.integers(0, 10**9))
def test_chunk_at_least_sequence_length_is_full_causal(registry, s, extra):
    """chunk >= s: the whole sequence is the first chunk, so the mask is plain causal."""
    assert forward(registry, masked("chunked", s + extra), seq_len=s) == forward(
        registry, masked("full_causal", 0), seq_len=s
    )


@FAST
@pytest.mark.parametrize("mask", MASKS)
@given(s=lengths, grow=st.integers(0, 5000), size=sizes)
def test_flops_never_decrease_with_sequence_length(registry, mask, s, grow, size):
    """Appending tokens adds queries and never removes a pair of the earlier ones."""
    model = masked(mask, size)
    assert mask_pairs(registry, model, s) <= mask_pairs(registry, model, s + grow)
    assert mask_pairs(registry, model, s) <= mask_pairs(registry, model, s + 1)
    assert forward(registry, model, seq_len=s) <= forward(registry, model, seq_len=s + grow)


@FAST
@given(s=lengths, size=sizes)
def test_sliding_window_lies_between_chunked_and_full_causal(registry, s, size):
    """With C == W a query sees q mod C + 1 <= min(q + 1, W) keys chunked, min(q + 1, W) sliding.

    q mod C + 1 <= C and q mod C <= q, so chunked <= sliding; sliding <= full by definition.
    """
    full = mask_pairs(registry, masked("full_causal", 0), s)
    window = mask_pairs(registry, masked("sliding_window", size), s)
    chunk = mask_pairs(registry, masked("chunked", size), s)
    assert chunk <= window <= full


@SMALL
@given(s=st.integers(1, 40), size=st.integers(1, 45))
def test_chunked_mask_is_a_subset_of_the_equal_sized_sliding_window_mask(s, size):
    """Brute force, cell by cell: every pair a chunk of C admits, a window of W = C admits too."""
    chunked = oracles.chunked_mask(s, size)
    sliding = oracles.sliding_window_mask(s, size)
    causal = oracles.causal_mask(s)
    for q in range(s):
        for k in range(s):
            assert not chunked[q][k] or sliding[q][k]
            assert not sliding[q][k] or causal[q][k]


# -- heads -------------------------------------------------------------------------------------------


@FAST
@given(dims=gqa_dims(), s=st.integers(1, 100_000))
def test_gqa_with_kv_heads_equal_to_heads_is_multi_head_attention(registry, dims, s):
    """kv_heads == heads is MHA: Q, K, V and O are all hidden x (heads * head_dim)."""
    hidden, heads, head_dim = dims["hidden"], dims["heads"], dims["head_dim"]
    model = gqa_model(hidden=hidden, heads=heads, kv_heads=heads, head_dim=head_dim)
    attended = s * (s + 1) // 2
    mha = (
        2 * s * hidden * heads * head_dim  # q_proj
        + 2 * s * hidden * heads * head_dim  # k_proj
        + 2 * s * hidden * heads * head_dim  # v_proj
        + 2 * heads * head_dim * attended  # QK^T
        + 2 * heads * head_dim * attended  # PV
        + 2 * s * heads * head_dim * hidden  # o_proj
    )
    assert forward(registry, model, seq_len=s) == mha


@FAST
@pytest.mark.parametrize("mask", MASKS)
@given(dims=gqa_dims(), other=st.integers(1, 16), s=st.integers(1, 100_000), size=sizes)
def test_kv_heads_change_only_the_kv_projection(registry, mask, dims, other, s, size):
    """K and V are broadcast to every query head: the core and Q, O do not depend on kv_heads."""
    heads = dims["heads"]
    kv_other = next(d for d in range(min(other, heads), 0, -1) if heads % d == 0)
    a = masked(mask, size, dims)
    b = masked(mask, size, {**dims, "kv_heads": kv_other})
    for slot in ("attention.core", "attention.query", "attention.output"):
        assert slot_flops(registry, a, slot, s) == slot_flops(registry, b, slot, s), slot
    kv_delta = 2 * s * dims["hidden"] * 2 * (dims["kv_heads"] - kv_other) * dims["head_dim"]  # k_proj + v_proj
    assert forward(registry, a, seq_len=s) - forward(registry, b, seq_len=s) == kv_delta


# -- batches, packing, training -------------------------------------------------------------------


@FAST
@pytest.mark.parametrize("mask", MASKS)
@given(s=lengths, size=sizes, batch=st.integers(1, 10**6), layers=st.integers(1, 8))
def test_flops_are_linear_in_batch(registry, mask, s, size, batch, layers):
    """batch = b is b independent sequences: b times the FLOPs of one, per layer and in total."""
    model = masked(mask, size, layers=layers)
    one = registry.evaluate(model, seq_len=s)
    many = registry.evaluate(model, seq_len=s, batch=batch)
    assert many.forward == batch * one.forward
    assert [layer.flops for layer in many.layers] == [batch * layer.flops for layer in one.layers]


@FAST
@pytest.mark.parametrize("mask", MASKS)
@given(seqlens=st.lists(st.integers(1, 50_000), min_size=1, max_size=6), size=st.integers(1, 60_000))
def test_packed_row_costs_the_sum_of_its_sequences(registry, mask, seqlens, size):
    """Attention does not cross packed sequences: f(a) + f(b) + ..., never more than f(a + b + ...)."""
    model = masked(mask, size)
    packed = forward(registry, model, seqlens=seqlens)
    assert packed == sum(forward(registry, model, seq_len=n) for n in seqlens)
    assert packed <= forward(registry, model, seq_len=sum(seqlens))


@SMALL
@pytest.mark.parametrize("mask", ("sliding_window", "chunked"))
@given(a=st.integers(1, 25), b=st.integers(1, 25), size=st.integers(1, 30))
def test_packed_pairs_never_exceed_one_long_sequence_by_brute_force(mask, a, b, size):
    """The oracle agrees that splitting a row never adds pairs (for chunks too, whatever alignment)."""
    make = oracles.sliding_window_mask if mask == "sliding_window" else oracles.chunked_mask
    split = oracles.pairs(make(a, size)) + oracles.pairs(make(b, size))
    assert split <= oracles.pairs(make(a + b, size))


@FAST
@pytest.mark.parametrize("mask", MASKS)
@given(s=lengths, size=sizes, batch=st.integers(1, 64))
def test_training_is_three_forward_passes(registry, mask, s, size, batch):
    """Forward plus backward (input and weight gradients) = 3 x forward."""
    result = registry.evaluate(masked(mask, size, layers=2), seq_len=s, batch=batch)
    assert result.training == 3 * result.forward
    assert isinstance(result.training, int) and isinstance(result.forward, int)


# -- TOML round trip -----------------------------------------------------------------------------------


@st.composite
def layer_kinds(draw):
    """One layer kind: full causal, sliding window or chunked, sometimes with its own dims."""
    mask = draw(st.sampled_from(MASKS))
    params = {}
    if mask == "sliding_window":
        params["window"] = draw(sizes)
    elif mask == "chunked":
        params["chunk"] = draw(sizes)
    if draw(st.booleans()):
        params["head_dim"] = draw(st.integers(1, 256))
    flags = set() if mask == "full_causal" else {mask}
    return flopsreg.LayerKind(flags=flags, params=params)


@st.composite
def models(draw):
    """A model with 1-3 layer kinds laid out by a plan with a cycle and an optional first."""
    kind_list = draw(st.lists(layer_kinds(), min_size=1, max_size=3))
    kinds = {f"kind_{i}": kind for i, kind in enumerate(kind_list)}
    names = list(kinds)
    cycle = draw(st.lists(st.sampled_from(names), min_size=1, max_size=4))
    first = draw(st.lists(st.sampled_from(names), max_size=3))
    missing = [n for n in names if n not in cycle and n not in first]
    cycle += missing  # every kind must be used by the plan
    layers = len(first) + len(cycle) + draw(st.integers(0, 20))
    return flopsreg.Model(
        name=draw(st.sampled_from(["m", "gemma-like", "a_b"])),
        params={**draw(gqa_dims())},
        kinds=kinds,
        plan=flopsreg.Plan(layers=layers, first=first, cycle=cycle),
    )


@SMALL
@given(model=models(), s=lengths, batch=st.integers(1, 16))
def test_model_read_back_from_its_toml_gives_the_same_numbers(registry, model, s, batch):
    """model.to_toml() round-trips: the parsed model evaluates to the same FLOPs, layer by layer."""
    again = flopsreg.Model.from_toml_string(model.to_toml())
    before = registry.evaluate(model, seq_len=s, batch=batch)
    after = registry.evaluate(again, seq_len=s, batch=batch)
    assert after.forward == before.forward
    assert [(layer.kind, layer.patterns, layer.flops) for layer in after.layers] == [
        (layer.kind, layer.patterns, layer.flops) for layer in before.layers
    ]
    assert again.to_toml() == model.to_toml()
