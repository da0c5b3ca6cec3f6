"""Gated DeltaNet, KDA, Mamba2, short convolutions and latent MoE as patterns (issue 10).

Expected numbers: the recurrences run token by token and the chunked algorithms written out
step by step (tests/linear_oracles.py), or hand arithmetic written here.
"""

from __future__ import annotations

import attrs
import linear_oracles as lo
import pytest

import flopsreg
from flopsreg.formula.exact import compile_exact

H = 64  # hidden width of the hand-made models

# One layer of each kind the mixers make, on one model: every pattern that has a cached-prefix
# form is used here (tests/engine/test_serving.py checks the cached-prefix identity on it).
MIXERS_TOML = f"""
name = "mixers"
flags = ["gated", "lm_head"]

[params]
hidden = {H}
heads = 4
kv_heads = 2
head_dim = 16
vocab = 100
conv_kernel = 4

[plan]
layers = 8
cycle = ["gdn", "kda", "mamba", "conv", "ffn", "hybrid", "attention", "mamba1"]

[kinds.gdn]
flags = ["gated_deltanet", "mlp"]
params = {{ linear_key_heads = 2, linear_value_heads = 4, linear_key_head_dim = 8, linear_value_head_dim = 16, ffn_hidden = 128 }}

[kinds.kda]
flags = ["kda", "mlp"]
params = {{ kda_heads = 4, kda_head_dim = 16, ffn_hidden = 128 }}

[kinds.mamba]
flags = ["mamba2"]
params = {{ mamba_heads = 8, mamba_head_dim = 16, mamba_state = 32, mamba_groups = 2 }}

[kinds.conv]
flags = ["short_conv", "mlp"]
params = {{ ffn_hidden = 128 }}

[kinds.ffn]
flags = ["no_attention", "moe", "latent_experts", "shared_experts"]
params = {{ experts = 8, top_k = 2, expert_hidden = 32, latent_width = 16, shared_hidden = 48 }}

[kinds.hybrid]
flags = ["mamba2", "parallel_attention", "mlp", "mamba2_no_norm"]
params = {{ mamba_heads = 8, mamba_head_dim = 16, mamba_state = 32, mamba_groups = 2, ffn_hidden = 128 }}

[kinds.attention]
flags = ["mlp"]
params = {{ ffn_hidden = 128 }}

[kinds.mamba1]
flags = ["mamba1", "mlp"]
params = {{ mamba_inner = 128, mamba_dt_rank = 4, mamba_state = 16, ffn_hidden = 128 }}
"""
REFERENCE_FLAGS = frozenset({"chunked_scan", "padded_conv"})  # reference-path forms: no cached-prefix form


def mixers_model(**kind_flags: str) -> flopsreg.Model:
    """The hand-made model, with a flag added to the named kinds (``padded_conv="gdn"``)."""
    text = MIXERS_TOML
    for flag, kind in kind_flags.items():
        text = text.replace(f"[kinds.{kind}]\nflags = [", f"[kinds.{kind}]\nflags = [\"{flag}\", ")
    return flopsreg.Model.from_toml_string(text)


# Models whose every pattern has a cached-prefix form, for tests/engine/test_serving.py's identity.
IDENTITY_MODELS = [("linear-mixers", mixers_model(), ("exact",))]


@attrs.frozen
class Layer:
    """One layer kind of a model: the pattern of each slot, and its FLOPs per slot for one sequence."""

    patterns: dict[str, str]
    slot_flops: dict[str, int]

    @property
    def flops(self) -> int:
        return sum(self.slot_flops.values())


def _slots(registry, model, s, kind, convention="exact"):
    unit = registry.select(model, convention=convention).kind(kind)
    return Layer(patterns=unit.patterns, slot_flops=unit.flops(s))


# -- recurrent minima against the recurrences run token by token ------------------------------


@pytest.mark.parametrize(("s", "heads", "d_k", "d_v"), [(1, 1, 1, 1), (5, 2, 3, 2), (9, 3, 2, 4)])
def test_gated_deltanet_core_is_the_recurrence_token_by_token(registry, s, heads, d_k, d_v):
    pattern = registry.pattern("gated_deltanet_core")
    got = compile_exact(pattern.formula)({"seq_len": s, "linear_value_heads": heads, "linear_key_head_dim": d_k, "linear_value_head_dim": d_v})
    assert got == 2 * lo.delta_rule_recurrent_macs(s, heads, d_k, d_v, per_channel_decay=False)


@pytest.mark.parametrize(("s", "heads", "d"), [(1, 1, 1), (6, 2, 3), (11, 1, 4)])
def test_kda_core_is_the_recurrence_token_by_token(registry, s, heads, d):
    got = compile_exact(registry.pattern("kda_core").formula)({"seq_len": s, "kda_heads": heads, "kda_head_dim": d})
    assert got == 2 * lo.delta_rule_recurrent_macs(s, heads, d, d, per_channel_decay=True)


@pytest.mark.parametrize(("s", "heads", "p", "n"), [(1, 1, 1, 1), (7, 2, 3, 2), (4, 3, 2, 5)])
def test_mamba2_core_is_the_recurrence_token_by_token(registry, s, heads, p, n):
    got = compile_exact(registry.pattern("mamba2_core").formula)({"seq_len": s, "mamba_heads": heads, "mamba_head_dim": p, "mamba_state": n})
    assert got == 2 * lo.mamba2_recurrent_macs(s, heads, p, n)


@pytest.mark.parametrize(("s", "inner", "n"), [(1, 1, 1), (6, 3, 2), (3, 2, 5)])
def test_mamba1_core_is_the_recurrence_token_by_token(registry, s, inner, n):
    got = compile_exact(registry.pattern("mamba1_core").formula)({"seq_len": s, "mamba_inner": inner, "mamba_state": n})
    assert got == 2 * sum(lo.mamba1_recurrent_macs(s, inner, n))


# -- chunked forms against the chunked algorithms written out ---------------------------------

CHUNK_CASES = [(1, 4), (4, 4), (5, 4), (13, 4), (16, 8), (17, 3), (2, 1)]


@pytest.mark.parametrize(("s", "chunk"), CHUNK_CASES)
def test_gated_deltanet_chunked_core_is_the_chunked_algorithm(registry, s, chunk):
    matmuls, solves = lo.gdn_chunked_macs(s, 3, 2, 5, chunk)
    values = {"seq_len": s, "linear_value_heads": 3, "linear_key_head_dim": 2, "linear_value_head_dim": 5, "scan_chunk": chunk}
    assert compile_exact(registry.pattern("gated_deltanet_chunked_core").formula)(values) == 2 * (matmuls + solves)


@pytest.mark.parametrize(("s", "chunk"), CHUNK_CASES)
def test_kda_chunked_core_is_the_chunked_algorithm(registry, s, chunk):
    matmuls, other = lo.kda_chunked_macs(s, 2, 3, chunk)
    values = {"seq_len": s, "kda_heads": 2, "kda_head_dim": 3, "scan_chunk": chunk}
    assert compile_exact(registry.pattern("kda_chunked_core").formula)(values) == 2 * (matmuls + other)


@pytest.mark.parametrize(("s", "chunk"), CHUNK_CASES)
def test_mamba2_chunked_core_is_the_chunked_algorithm(registry, s, chunk):
    values = {"seq_len": s, "mamba_heads": 2, "mamba_head_dim": 3, "mamba_state": 4, "scan_chunk": chunk}
    assert compile_exact(registry.pattern("mamba2_chunked_core").formula)(values) == 2 * lo.mamba2_chunked_macs(s, 2, 3, 4, chunk)


def test_the_chunked_oracles_pad_to_whole_chunks():
    assert [lo.padded_length(s, 4) for s in (1, 4, 5, 8, 9)] == [4, 4, 8, 8, 12]
    # one chunk of 4, d_k = 1, d_v = 1: k_beta k^T and q k^T 16 each, solves 2 x (0+1+2+3),
    # then 4 + 4 + 16 + 4
    assert lo.gdn_chunked_macs(3, 1, 1, 1, 4) == (16 + 16 + 4 + 4 + 16 + 4, 12)


# -- a whole layer of each mixer, by hand -----------------------------------------------------


def test_a_gated_deltanet_layer_counts_no_softmax_attention(registry):
    s = 10
    layer = _slots(registry, mixers_model(), s, "gdn")
    hk, hv, dk, dv, k = 2, 4, 8, 16, 4
    # no attention slot exists on the layer: no zero rows, no *_no_* patterns
    assert not [slot for slot in (*layer.patterns, *layer.slot_flops) if slot.startswith("attention")]
    assert not [name for name in layer.patterns.values() if "_no_" in name]
    assert layer.slot_flops["mixer.projection"] == 2 * s * H * (2 * hk * dk + 2 * hv * dv + 2 * hv)
    assert layer.slot_flops["mixer.conv"] == 2 * s * (2 * hk * dk + hv * dv) * k
    assert layer.slot_flops["mixer.core"] == 6 * s * hv * dk * dv
    assert layer.slot_flops["mixer.output"] == 2 * s * hv * dv * H
    assert "attention.mask" not in layer.slot_flops


def test_a_kda_layer_by_hand(registry):
    s, heads, d, k = 3, 4, 16, 4
    layer = _slots(registry, mixers_model(), s, "kda")
    # q, k, v 3 x 64 x 64; f_a, g_a 64 x 16; f_b, g_b 16 x 64; b_proj 64 x 4
    assert layer.slot_flops["mixer.projection"] == 2 * s * (3 * 64 * 64 + 2 * 64 * 16 + 2 * 16 * 64 + 64 * 4)
    assert layer.slot_flops["mixer.conv"] == 2 * s * 3 * heads * d * k
    assert layer.slot_flops["mixer.output"] == 2 * s * heads * d * H
    assert "attention.core" not in layer.slot_flops and "attention.core" not in layer.patterns


def test_a_mamba2_layer_has_neither_attention_nor_mlp(registry):
    s = 5
    layer = _slots(registry, mixers_model(), s, "mamba")
    inner, groups, state, heads = 8 * 16, 2, 32, 8
    assert layer.slot_flops["mixer.projection"] == 2 * s * H * (2 * inner + 2 * groups * state + heads)
    assert layer.slot_flops["mixer.conv"] == 2 * s * (inner + 2 * groups * state) * 4
    assert layer.slot_flops["mixer.core"] == 4 * s * heads * 16 * state
    assert layer.slot_flops["mixer.output"] == 2 * s * inner * H
    assert "mlp" not in layer.slot_flops
    assert layer.flops == sum(layer.slot_flops[slot] for slot in ("mixer.projection", "mixer.conv", "mixer.core", "mixer.output"))


def test_a_short_conv_layer_by_hand(registry):
    layer = _slots(registry, mixers_model(), 7, "conv")
    assert (layer.slot_flops["mixer.projection"], layer.slot_flops["mixer.conv"], layer.slot_flops["mixer.output"]) == (
        2 * 7 * 64 * 192,
        2 * 7 * 64 * 4,
        2 * 7 * 64 * 64,
    )
    assert "mixer.core" not in layer.slot_flops


def test_a_latent_moe_layer_without_attention(registry):
    s = 6
    layer = _slots(registry, mixers_model(), s, "ffn")
    assert layer.patterns["mlp"] == "latent_experts"
    # router 64 -> 8; 2 experts of width 32 on the latent width 16, gated (3 matmuls)
    assert layer.slot_flops["mlp"] == 2 * s * 64 * 8 + 2 * s * 2 * 16 * 32 * 3
    assert layer.slot_flops["mlp.latent"] == 2 * s * 64 * 16 + 2 * s * 16 * 64
    assert layer.slot_flops["mlp.shared"] == 2 * s * 64 * 48 * 3
    assert not [slot for slot in (*layer.patterns, *layer.slot_flops) if slot.startswith(("attention", "mixer"))]


def test_parallel_attention_runs_beside_the_mamba2_mixer(registry):
    s = 9
    hybrid = _slots(registry, mixers_model(), s, "hybrid")
    mamba = _slots(registry, mixers_model(), s, "mamba")
    attention = _slots(registry, mixers_model(), s, "attention")
    for slot in ("attention.query", "attention.projection", "attention.core", "attention.output"):
        assert hybrid.slot_flops[slot] == attention.slot_flops[slot] > 0
    for slot in ("mixer.projection", "mixer.conv", "mixer.core", "mixer.output"):
        assert hybrid.slot_flops[slot] == mamba.slot_flops[slot]
    # GQA by hand: q 64 -> 4 x 16, k and v 64 -> 2 x 16 each, 45 causal pairs, o 64 -> 64
    assert hybrid.slot_flops["attention.query"] + hybrid.slot_flops["attention.projection"] == 2 * s * 64 * (64 + 2 * 32)
    assert hybrid.slot_flops["attention.core"] == 2 * 4 * (16 + 16) * (s * (s + 1) // 2)


def test_a_mamba1_layer_by_hand(registry):
    s = 4
    layer = _slots(registry, mixers_model(), s, "mamba1")
    inner, rank, n = 128, 4, 16
    # in_proj 64 -> 2 x 128; x_proj 128 -> 4 + 2 x 16; dt_proj 4 -> 128
    assert layer.slot_flops["mixer.projection"] == 2 * s * (64 * 256 + inner * (rank + 2 * n) + rank * inner)
    assert layer.slot_flops["mixer.conv"] == 2 * s * inner * 4
    assert layer.slot_flops["mixer.core"] == 4 * s * inner * n
    assert "attention.core" not in layer.slot_flops and "attention.core" not in layer.patterns


CHUNKED_TOML = MIXERS_TOML.replace("conv_kernel = 4", "conv_kernel = 4\nscan_chunk = 64")


def test_the_chunked_scan_convention_and_the_padded_conv_flag(registry):
    s = 70
    plain = _slots(registry, mixers_model(), s, "gdn")
    model = flopsreg.Model.from_toml_string(CHUNKED_TOML.replace('flags = ["gated_deltanet"', 'flags = ["padded_conv", "gated_deltanet"'))
    chunked = _slots(registry, model, s, "gdn", convention="chunked_scan")
    assert chunked.patterns["mixer.core"] == "gated_deltanet_chunked_core"
    assert chunked.patterns["mixer.conv"] == "gated_deltanet_padded_conv"
    # 70 tokens pad to 128: 2 H_v L (2 Q d_k + Q d_v + 3 d_k d_v) + H_v L (Q - 1)(d_k + d_v)
    assert chunked.slot_flops["mixer.core"] == 2 * 4 * 128 * (2 * 64 * 8 + 64 * 16 + 3 * 8 * 16) + 4 * 128 * 63 * (8 + 16)
    assert chunked.slot_flops["mixer.conv"] == 2 * (70 + 3) * (2 * 2 * 8 + 4 * 16) * 4  # s + K - 1 outputs
    assert plain.slot_flops["mixer.core"] == 6 * 70 * 4 * 8 * 16
    assert _slots(registry, model, s, "gdn").patterns["mixer.core"] == "gated_deltanet_core"  # exact: the minimum


def test_compare_shows_the_chunked_scans_against_the_recurrent_minima(registry):
    s = 100
    model = flopsreg.Model.from_toml_string(CHUNKED_TOML)
    comparison = registry.compare(model, seq_len=s, conventions=["chunked_scan"])
    exact, chunked = (t.result.forward for t in comparison.totals)
    plan = registry.select(model, convention="chunked_scan")
    cores = {kind: plan.kind(kind).flops(s)["mixer.core"] for kind in ("gdn", "kda", "mamba", "hybrid")}
    minima = {"gdn": 6 * s * 4 * 8 * 16, "kda": 6 * s * 4 * 16 * 16, "mamba": 4 * s * 8 * 16 * 32, "hybrid": 4 * s * 8 * 16 * 32}
    assert chunked - exact == sum(cores.values()) - sum(minima.values()) > 0


def test_the_chunked_scan_convention_needs_the_chunk(registry):
    with pytest.raises(flopsreg.ModelError, match="scan_chunk"):
        registry.evaluate(mixers_model(), seq_len=8, convention="chunked_scan")


def test_reference_forms_have_no_cached_prefix_form(registry):
    model = flopsreg.Model.from_toml_string(CHUNKED_TOML)
    with pytest.raises(flopsreg.ModelError, match="chunked_core"):
        registry.evaluate(model, seq_len=1, cached=10, convention="chunked_scan")
    with pytest.raises(flopsreg.ModelError, match="padded_conv"):
        registry.evaluate(mixers_model(padded_conv="conv"), seq_len=1, cached=10)


def test_weights_of_the_mixers_are_closed_forms_in_their_parameters(registry):
    values = {"hidden": 64, "linear_key_heads": 2, "linear_value_heads": 4, "linear_key_head_dim": 8, "linear_value_head_dim": 16, "conv_kernel": 4}
    total = sum(compile_exact(registry.pattern(name).weights)(values) for name in ("gated_deltanet_projection", "gated_deltanet_conv", "gated_deltanet_core", "gated_deltanet_output"))
    # in_proj_qkvz 64 x (16 + 16 + 64 + 64), in_proj_ba 64 x 8, conv (16 + 16 + 64) x 4,
    # dt_bias and A_log 4 each, norm 16, out_proj 64 x 64
    assert total == 64 * 160 + 64 * 8 + 96 * 4 + 8 + 16 + 64 * 64
