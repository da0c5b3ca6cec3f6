"""Step traffic, intensity, the roofline bound and MBU, by hand arithmetic on real models.

The bytes of each model are written out here from its config (never asked of flopsreg), in
bf16 (2 bytes an element); the FLOPs are flopsreg's exact counts, checked elsewhere.
"""

import json
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
    experts = StepBytes(weights=0, context=lambda n: 0, experts=(ExpertBytes(layers=32, bytes=8 * EXPERT, token_bytes=2 * EXPERT),))
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


# The same bytes as the model's patterns declare them (Result.traffic() without StepBytes).


def test_llama_bytes_come_from_its_declarations(registry):
    """16,060,522,496 bytes of bf16 weights (8,030,261,248 parameters, counted above by hand), of
    which a step reads all but the input embedding's table, and one 8,192-byte row of it per token."""
    step = registry.evaluate(flopsreg.Model.example("llama-3-8b"), requests=[(1, 4095)])
    assert step.traffic() == step.traffic(LLAMA)
    assert step.traffic().total == 15_546_728_448
    batch = registry.evaluate(flopsreg.Model.example("llama-3-8b"), requests=[(7, 100), (1, 9)], batch=3).traffic()
    assert batch.weights_read == LLAMA_WEIGHTS + 3 * 8 * H * BF16
    assert batch.kv_read == 3 * 109 * KV_PER_TOKEN and batch.kv_written == 3 * 8 * KV_PER_TOKEN


def test_dtypes_scale_what_they_store(registry):
    step = registry.evaluate(flopsreg.Model.example("llama-3-8b"), requests=[(1, 4095)])
    fp8_kv = step.traffic(kv_dtype="fp8")
    assert fp8_kv.kv_read == 4095 * KV_PER_TOKEN // 2 and fp8_kv.weights_read == LLAMA_WEIGHTS + H * BF16
    fp32 = step.traffic(weights_dtype="fp32")  # the KV cache follows the weights unless told
    assert fp32.weights_read == 2 * (LLAMA_WEIGHTS + H * BF16) and fp32.kv_written == 2 * KV_PER_TOKEN
    with pytest.raises(flopsreg.ModelError, match=r"kv_dtype: 'fp9': expected a number format.*did you mean"):
        step.traffic(kv_dtype="fp9")
    with pytest.raises(flopsreg.ModelError, match="step_bytes: give the model's bytes or the dtypes"):
        step.traffic(LLAMA, kv_dtype="fp8")


# Mixtral-8x7B by hand: per layer q, k, v, o, the router (4096 x 8) and two norms beside the experts.
MIXTRAL_LAYER = 2 * 4096 * 4096 + 2 * 4096 * 8 * 128 + 4096 * 8 + 2 * 4096
MIXTRAL_WEIGHTS = BF16 * (32 * MIXTRAL_LAYER + 4096 + 32000 * 4096)  # + final norm + head


@pytest.mark.parametrize(("tokens", "touched"), [(1, 2), (3, 6), (512, 8)])
def test_mixtral_experts_come_from_its_declarations(registry, tokens, touched):
    step = registry.evaluate(flopsreg.Model.example("mixtral-8x7b"), requests=[(1, 100)] * tokens)
    traffic = step.traffic()
    assert traffic.weights_read == MIXTRAL_WEIGHTS + tokens * 4096 * BF16
    assert traffic.experts_read == 32 * touched * EXPERT
    assert step.traffic(all_experts=True).experts_read == 32 * 8 * EXPERT
    assert traffic.kv_read == tokens * 100 * KV_PER_TOKEN  # 32 layers of 8 kv heads of 128, as Llama's


def test_mixtral_experts_in_mxfp4(registry):
    """An expert of 3 x 4096 x 14336 elements in MXFP4 is 17 bytes per 32 elements."""
    traffic = registry.evaluate(flopsreg.Model.example("mixtral-8x7b"), requests=[(1, 100)]).traffic(experts_dtype="mxfp4")
    assert traffic.experts_read == 32 * 2 * (3 * 4096 * 14336 // 32 * 17)
    assert traffic.weights_read == MIXTRAL_WEIGHTS + 4096 * BF16


def test_a_declared_window_caps_the_kv_read(registry):
    """Gemma 3 27B: 52 sliding layers keep 1024 tokens, 10 global ones all; 16 kv heads x 128 x K, V x 2 bytes."""
    per_layer_token = 16 * 128 * 2 * 2
    traffic = registry.evaluate(flopsreg.Model.example("gemma-3-27b"), requests=[(1, 100_000)]).traffic()
    assert traffic.kv_read == (52 * 1024 + 10 * 100_000) * per_layer_token
    assert traffic.kv_written == 62 * per_layer_token


def test_tied_embedding_is_read_whole_by_the_head(registry):
    """Gemma 3 ties its head to the embedding: the head reads the table, so the step reads all the weights."""
    model = flopsreg.Model.example("gemma-3-27b")
    traffic = registry.evaluate(model, requests=[(1, 10)]).traffic()
    assert traffic.weights_read == registry.memory(model, seq_len=1).weights_bytes == 2 * registry.parameters(model).total


def test_declared_states_are_read_and_written(registry):
    """Qwen3-Next: 36 Gated DeltaNet layers of 39,518,208 state bytes in all (tests/engine/test_memory.py by hand)."""
    model = flopsreg.Model.example("qwen3-next-80b-a3b")
    traffic = registry.evaluate(model, requests=[(1, 4096), (64, 0)]).traffic()
    assert (traffic.state_read, traffic.state_written) == (39_518_208, 2 * 39_518_208)
    assert traffic.kv_read == 12 * 2 * 256 * 2 * 2 * 4096


def test_mbu_and_roofline_on_the_result_take_device_names(registry):
    step = registry.evaluate(flopsreg.Model.example("llama-3-8b"), requests=[(1, 4095)])
    mbu = step.mbu(step_time="0.006", bandwidth="h100-sxm")
    assert mbu.fraction == Fraction(15_546_728_448) / (Fraction(6, 1000) * 3_350_000_000_000)
    assert step.mbu(step_time="0.006", bandwidth="h100-sxm-bf16") == mbu  # a peak's name: its device's bandwidth
    assert step.mbu(step_time="0.003", bandwidth="h100-sxm", devices=2, kv_dtype="fp8").bytes == 15_546_728_448 - 4096 * 131_072 // 2
    roof = step.roofline(peak="h100-sxm-bf16", bandwidth="h100-sxm")
    assert roof.bound == "memory" and roof.memory_seconds == Fraction(15_546_728_448, 3_350_000_000_000)
    with pytest.raises(flopsreg.ModelError, match=r"bandwidth: 'h100-sxn' is neither bytes/s nor a known accelerator.*did you mean 'h100-sxm'"):
        step.roofline(peak="h100-sxm-bf16", bandwidth="h100-sxn")


# The command line: mfu and generate print the bytes, MBU and roofline bound beside the FLOPs.


def _run(capsys, *argv):
    from flopsreg.cli import main

    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_mfu_prints_mbu_and_the_roofline(registry, capsys):
    llama = flopsreg.Model.example("llama-3-8b")
    status, out, _ = _run(capsys, "mfu", "llama-3-8b", "--request", "1:4095", "--step-time", "0.006", "--devices", "1", "--peak", "h100-sxm-bf16", "--format", "json")
    data = json.loads(out)
    step = registry.evaluate(llama, requests=[(1, 4095)])
    assert status == 0 and data == step.utilisation(peak="h100-sxm-bf16", step_time="0.006").to_dict()
    assert data["bandwidth"] == "3350000000000" and data["traffic"]["total_bytes"] == "15546728448"  # the H100 SXM's, from the peak's device
    assert Fraction(data["mbu"]["fraction"]) == Fraction(15_546_728_448) / (Fraction(6, 1000) * 3_350_000_000_000)
    assert data["roofline"]["bound"] == "memory" and Fraction(data["roofline"]["seconds"]) == Fraction(15_546_728_448, 3_350_000_000_000)
    status, out, _ = _run(capsys, "mfu", "llama-3-8b", "--request", "1:4095", "--step-time", "0.006", "--devices", "1", "--peak", "h100-sxm-bf16")
    assert status == 0 and "MBU        0.773469" in out and "memory-bound" in out and "15,546,728,448" in out


def test_cli_mfu_bandwidth_and_dtypes(registry, capsys):
    argv = ("mfu", "llama-3-8b", "--request", "1:4095", "--step-time", "0.006", "--devices", "2", "--peak", "1e15")
    status, out, _ = _run(capsys, *argv, "--format", "json")
    assert status == 0 and json.loads(out)["mbu"] is None and json.loads(out)["traffic"]["total_bytes"] == "15546728448"
    status, out, _ = _run(capsys, *argv)
    assert "give --bandwidth" in out
    status, out, _ = _run(capsys, *argv, "--bandwidth", "2e12", "--kv-dtype", "fp8", "--format", "json")
    fp8_total = 15_546_728_448 - 4096 * 131_072 // 2
    assert json.loads(out)["traffic"]["total_bytes"] == str(fp8_total)
    assert Fraction(json.loads(out)["mbu"]["fraction"]) == Fraction(fp8_total) / (Fraction(6, 1000) * 2 * 2 * 10**12)
    status, _, err = _run(capsys, *argv, "--bandwidth", "h100-smx")
    assert status != 0 and "bandwidth: 'h100-smx' is neither bytes/s nor a known accelerator" in err and "'h100-sxm'" in err
    status, _, err = _run(capsys, "mfu", "llama-3-8b", "--seq-len", "4096", "--step-time", "1", "--devices", "8", "--peak", "h100-sxm-bf16", "--bandwidth", "h100-sxm")
    assert status != 0 and "MBU and the roofline bound are a serving step's" in err and len(err.strip().splitlines()) == 1


def test_cli_generate_prints_each_phase_bound(registry, capsys):
    """Prefill: the weights once, 1000 embedding rows, 1000 tokens' KV written; decode: 23 steps,
    each reading the weights, one row and the KV of 1000 + i tokens, and writing one token's KV."""
    status, out, _ = _run(capsys, "generate", "llama-3-8b", "--prompt", "1000", "--new-tokens", "24", "--peak", "h100-sxm-bf16", "--format", "json")
    gen = registry.generate(flopsreg.Model.example("llama-3-8b"), prompt=1000, new_tokens=24)
    data = json.loads(out)
    assert status == 0 and data == gen.bounds(peak="h100-sxm-bf16").to_dict()
    prefill, decode = data["prefill_bounds"]["traffic"], data["decode_bounds"]["traffic"]
    assert prefill["total_bytes"] == str(LLAMA_WEIGHTS + 1000 * H * BF16 + 1000 * KV_PER_TOKEN)
    assert decode["weights_read_bytes"] == str(23 * (LLAMA_WEIGHTS + H * BF16))
    assert decode["kv_read_bytes"] == str(sum(range(1000, 1023)) * KV_PER_TOKEN) and decode["kv_written_bytes"] == str(23 * KV_PER_TOKEN)
    assert (data["prefill_bounds"]["roofline"]["bound"], data["decode_bounds"]["roofline"]["bound"]) == ("compute", "memory")
    status, out, _ = _run(capsys, "generate", "llama-3-8b", "--prompt", "1000", "--new-tokens", "1", "--peak", "1e15", "--bandwidth", "h200", "--format", "json")
    assert json.loads(out)["decode_bounds"] is None and json.loads(out)["bandwidth"] == "4800000000000"
    status, _, err = _run(capsys, "generate", "llama-3-8b", "--prompt", "10", "--new-tokens", "2", "--bandwidth", "h200")
    assert status != 0 and "--peak: the bytes and roofline bound of a generation need" in err
    status, _, err = _run(capsys, "generate", "llama-3-8b", "--prompt", "10", "--new-tokens", "2", "--peak", "1e15")
    assert status != 0 and "bandwidth: none given, and peak '1e15' names no device" in err
