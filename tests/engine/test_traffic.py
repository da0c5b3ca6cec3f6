"""Step traffic, intensity, the roofline bound and MBU, by hand arithmetic on real models.

The bytes of each model are written out here from its config (never asked of flopsreg), in
bf16 (2 bytes an element); the FLOPs are flopsreg's exact counts, checked elsewhere.
"""

import re
from fractions import Fraction

import pytest

import flopsreg
from flopsreg.engine.traffic import ExpertBytes, StepBytes

BF16 = 2


@pytest.fixture(scope="module")
def registry():
    return flopsreg.Registry.default()


# Llama-3-8B: h 4096, 32 layers, 32 query heads, 8 KV heads of 128, SwiGLU 14336, vocab 128256 (untied).
H, L, KV, D, FFN, V = 4096, 32, 8, 128, 14336, 128256
LAYER = H * H + 2 * H * KV * D + H * H + 3 * H * FFN + 2 * H  # q, k, v, o, MLP, two norms
LLAMA_WEIGHTS = BF16 * (L * LAYER + H + V * H)  # + final norm + head; the input embedding apart
KV_PER_TOKEN = L * 2 * KV * D * BF16  # K and V of every layer: 131,072 bytes
LLAMA = StepBytes(weights=LLAMA_WEIGHTS, context=lambda n: n * KV_PER_TOKEN, embedding_row=H * BF16)


def test_llama_decode_at_batch_1_is_memory_bound(registry):
    """The issue's example: ~16 GFLOP against ~16 GB of weights, one FLOP per byte."""
    assert KV_PER_TOKEN == 131_072 and LLAMA_WEIGHTS + V * H * BF16 == 2 * 8_030_261_248
    step = registry.evaluate(flopsreg.Model.example("llama-3-8b"), requests=[(1, 4095)])
    traffic = step.traffic(LLAMA)
    assert traffic.weights_read == LLAMA_WEIGHTS + H * BF16  # one embedding row
    assert traffic.kv_read == 4095 * 131_072 and traffic.kv_written == 131_072
    assert traffic.total == LLAMA_WEIGHTS + H * BF16 + 4096 * 131_072 == 15_546_728_448
    assert traffic.intensity == Fraction(step.forward, 15_546_728_448)
    assert 1.1 < float(traffic.intensity) < 1.11  # 17.2 GFLOP over 15.5 GB
    roof = traffic.roofline(peak="h100-sxm-bf16", bandwidth=3_350_000_000_000)
    assert roof.bound == "memory"
    assert roof.memory_seconds == Fraction(15_546_728_448, 3_350_000_000_000)
    assert roof.compute_seconds == Fraction(step.forward) / Fraction(9895 * 10**11)
    assert roof.seconds == roof.memory_seconds  # 4.6 ms, where compute alone would take 16 us


def test_llama_prefill_is_compute_bound(registry):
    step = registry.evaluate(flopsreg.Model.example("llama-3-8b"), requests=[(8192, 0)])
    traffic = step.traffic(LLAMA)
    assert traffic.kv_read == 0 and traffic.kv_written == 8192 * KV_PER_TOKEN
    assert traffic.roofline(peak="h100-sxm-bf16", bandwidth=3_350_000_000_000).bound == "compute"


def test_batching_decodes_shares_the_weights(registry):
    """64 decodes read the weights once and 64 caches: intensity grows about 64-fold at short context."""
    llama = flopsreg.Model.example("llama-3-8b")
    one = registry.evaluate(llama, requests=[(1, 512)]).traffic(LLAMA)
    many = registry.evaluate(llama, requests=[(1, 512)], batch=64).traffic(LLAMA)
    assert many.weights_read == LLAMA_WEIGHTS + 64 * H * BF16
    assert many.kv_read == 64 * 512 * KV_PER_TOKEN and many.kv_written == 64 * KV_PER_TOKEN
    assert 40 < many.intensity / one.intensity < 64


def test_mbu_by_hand(registry):
    traffic = registry.evaluate(flopsreg.Model.example("llama-3-8b"), requests=[(1, 4095)]).traffic(LLAMA)
    mbu = traffic.mbu(step_time="0.006", bandwidth=3_350_000_000_000)
    assert mbu.fraction == Fraction(15_546_728_448) / (Fraction(6, 1000) * 3_350_000_000_000)  # 77 %
    assert mbu.to_dict()["bytes"] == "15546728448"
    with pytest.raises(flopsreg.ModelError, match=re.escape("MBU = 773.5: above 1") + ".*in milliseconds rather than seconds"):
        traffic.mbu(step_time="0.006e-3", bandwidth=3_350_000_000_000)
    with pytest.raises(flopsreg.ModelError, match="bandwidth: 0: expected bytes/s per device"):
        traffic.mbu(step_time=1, bandwidth=0)
    with pytest.raises(flopsreg.ModelError, match="devices: 0: expected an integer >= 1"):
        traffic.roofline(peak="h100-sxm-bf16", bandwidth=1, devices=0)


# Mixtral-8x7B: 32 layers of 8 experts, top 2, each expert 3 x 4096 x 14336 weights.
EXPERT = 3 * 4096 * 14336 * BF16


@pytest.mark.parametrize(("tokens", "touched"), [(1, 2), (3, 6), (4, 8), (512, 8)])
def test_moe_reads_the_experts_its_tokens_can_reach(registry, tokens, touched):
    mixtral = flopsreg.Model.example("mixtral-8x7b")
    experts = StepBytes(weights=0, context=lambda n: 0, experts=(ExpertBytes(layers=32, experts=8, top_k=2, bytes_per_expert=EXPERT),))
    step = registry.evaluate(mixtral, requests=[(1, 100)] * tokens)
    assert step.traffic(experts).experts_read == 32 * touched * EXPERT
    assert step.traffic(experts, all_experts=True).experts_read == 32 * 8 * EXPERT


def test_a_sliding_window_caps_what_is_read_and_kept(registry):
    """Mistral-7B-v0.1 keeps 4096 tokens a layer: a decode at 10,000 cached reads 4096 tokens' KV."""
    window = StepBytes(weights=0, context=lambda n: min(n, 4096) * 32 * 2 * 8 * 128 * BF16)
    step = registry.evaluate(flopsreg.Model.example("mistral-7b-v0.1"), requests=[(1, 10_000), (100, 0)])
    traffic = step.traffic(window)
    assert traffic.kv_read == 4096 * 131_072
    assert traffic.kv_written == 101 * 131_072


def test_state_is_read_and_written_once_per_request(registry):
    fixed = StepBytes(weights=0, context=lambda n: 0, state=1000)
    step = registry.evaluate(flopsreg.Model.example("llama-3-8b"), requests=[(1, 50), (7, 0)], batch=2)
    traffic = step.traffic(fixed)
    assert (traffic.state_read, traffic.state_written) == (2 * 1000, 4 * 1000)  # a fresh request has no state to read


def test_to_dict_is_exact(registry):
    traffic = registry.evaluate(flopsreg.Model.example("llama-3-8b"), requests=[(1, 4095)]).traffic(LLAMA)
    data = traffic.to_dict()
    assert data["total_bytes"] == "15546728448" and Fraction(data["intensity"]) == traffic.intensity
    roof = traffic.roofline(peak="h100-sxm-bf16", bandwidth=3_350_000_000_000).to_dict()
    assert roof["bound"] == "memory" and Fraction(roof["seconds"]) == Fraction(15_546_728_448, 3_350_000_000_000)
