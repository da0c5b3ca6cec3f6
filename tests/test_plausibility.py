"""Plausibility and numeric inputs (issue 19, point 3 and the float part of point 4).

MFU above 1 is an error naming the unit mistake; every measured number is range-checked before
any arithmetic; numpy scalars and arrays are read wherever a Python number is, and refused by
name where they are no integer or of the wrong shape; Megatron-LM's boolean arguments take bools
only; the drop-ins warn once about values no run produces and return what the function they
replace returns, computed here by hand from the originals' formulas quoted in test_nanogpt.py
and test_integrations.py.
"""

from __future__ import annotations

import math
import time
import warnings
from decimal import Decimal
from fractions import Fraction
from types import SimpleNamespace

import pytest
from test_integrations import CORE_PER_SQUARED_TOKEN, LLAMA2_7B, LLAMA2_7B_VERL, PER_TOKEN, AttributeConfig, llama3_8b_args
from test_megatron_bridge import LLAMA_3_8B
from test_nanogpt import GPT2, nanogpt_training

import flopsreg
from flopsreg.cli import main
from flopsreg.engine.peaks import PEAK, STEP_TIME, TOKENS_PER_SECOND, exact_number, number_from_text
from flopsreg.errors import PlausibilityWarning
from flopsreg.integrations import megatron_bridge, slime
from flopsreg.integrations.megatron import num_floating_point_operations
from flopsreg.integrations.nanogpt import estimate_mfu
from flopsreg.integrations.verl import FlopsCounter
from flopsreg.model import check_int

# nanoGPT's flops_per_fwdbwd for GPT-2 small: N = get_num_params() (without wpe), T = 1024
GPT2_FLOPS = nanogpt_training(124_439_808 - 1024 * 768, 12, 12, 768, 1024)
H100 = "h100-sxm-bf16"


def tiny():
    """One layer whose forward over 4 tokens is 2368 FLOPs (the package docstring's example): training 7104."""
    return flopsreg.Model.uniform("tiny", layers=1, hidden=8, heads=2, kv_heads=2, head_dim=4)


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def one_line_error(capsys, *argv) -> str:
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    return err


# -- MFU and HFU above 1 -----------------------------------------------------------------------


def test_mfu_above_one_names_milliseconds(registry):
    res = registry.evaluate(tiny(), seq_len=4)
    # 7104 FLOPs in 0.001 s on one device of 7104 FLOP/s: 1000 times the peak
    with pytest.raises(flopsreg.ModelError, match=r"^MFU = 1000: above 1.*step_time = 0\.001 in milliseconds rather than seconds"):
        res.mfu(step_time=0.001, devices=1, peak=7104)
    assert res.mfu(step_time=1, devices=1, peak=7104).fraction == 1  # exactly the peak is allowed


def test_mfu_above_one_from_a_token_rate_names_all_devices(registry):
    res = registry.evaluate(tiny(), seq_len=4)
    # 4 tokens per step at 8 tokens/s on one device: a step of 0.5 s, 14208 FLOP/s against 7104
    with pytest.raises(flopsreg.ModelError, match=r"^MFU = 2: above 1.*tokens_per_second for all devices rather than per device"):
        res.mfu(tokens_per_second=8, devices=1, peak=7104)


def test_hfu_above_one_is_refused_when_mfu_is_not(registry):
    res = registry.evaluate(tiny(), seq_len=4, recompute="full")
    # MFU counts 3 x 2368 = 7104; HFU adds the one layer's forward again: 9472 FLOPs, 4/3 of the peak
    assert res.mfu(step_time=1, devices=1, peak=7104).fraction == 1
    with pytest.raises(flopsreg.ModelError, match=r"^HFU = 1\.333: above 1"):
        res.hfu(step_time=1, devices=1, peak=7104)


def test_cli_mfu_above_one_is_one_line(registry, capsys):
    argv = ["mfu", "llama-3-8b", "--seq-len", "4096", "--batch", "8", "--devices", "8", "--peak", H100]
    assert run(capsys, *argv, "--step-time", "1")[0] == 0
    err = one_line_error(capsys, *argv, "--step-time", "0.001")
    assert "flopsreg: error: MFU = " in err and "in milliseconds rather than seconds?" in err
    at_one_second = registry.evaluate(flopsreg.Model.example("llama-3-8b"), seq_len=4096, batch=8).mfu(step_time=1, devices=8, peak=H100)
    assert f"MFU = {float(at_one_second.fraction * 1000):.4g}:" in err  # 1000 times the MFU of a 1 s step
    err = one_line_error(capsys, *argv, "--tokens-per-second", "1e6")
    assert "for all devices rather than per device?" in err


# -- ranges, checked before any arithmetic ------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "text"),
    [
        ("--step-time", "1e999"), ("--step-time", "1e100000000"), ("--step-time", "1e-320"), ("--step-time", "nan"),
        ("--step-time", "inf"), ("--step-time", "-1"), ("--step-time", "0"), ("--step-time", "1e-100000000"),
        ("--tokens-per-second", "1e100000000"), ("--tokens-per-second", "1e13"), ("--tokens-per-second", "1e999"),
    ],
)  # fmt: skip
def test_cli_times_and_rates_out_of_range_are_one_line(capsys, option, text):
    started = time.process_time()
    err = one_line_error(capsys, "mfu", "llama-3-8b", "--seq-len", "8", "--devices", "1", "--peak", H100, option, text)
    bounds = STEP_TIME if option == "--step-time" else TOKENS_PER_SECOND
    assert f"flopsreg: error: {option}: {text!r}: expected {bounds.what}, a number from {bounds.low} to {bounds.high}" in err
    assert time.process_time() - started < 5  # no 100-million-digit integer was built (it took 20 s)


@pytest.mark.parametrize("text", ["1e999", "1e100000000", "1e-320", "nan", "inf", "1e22", "0", "1e-100000000"])
def test_cli_peaks_out_of_range_are_one_line(capsys, text):
    err = one_line_error(capsys, "mfu", "llama-3-8b", "--seq-len", "8", "--devices", "1", "--step-time", "1", "--peak", text)
    assert f"flopsreg: error: peak: {text!r}: expected FLOP/s per device, a number from 1 to 1e21" in err


def test_ranges_are_physically_generous():
    assert (STEP_TIME.low, STEP_TIME.high) == ("1e-9", "1e7")
    assert (TOKENS_PER_SECOND.low, TOKENS_PER_SECOND.high) == ("1e-6", "1e12")
    assert (PEAK.low, PEAK.high) == ("1", "1e21")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        (dict(step_time=1e-320), "step_time"), (dict(step_time=1e999), "step_time"), (dict(step_time=float("nan")), "step_time"),
        (dict(step_time=10**400), "step_time"), (dict(step_time=Decimal("1e100000000")), "step_time"),
        (dict(step_time=Decimal("1e-100000000")), "step_time"), (dict(step_time=2e7), "step_time"),
        (dict(tokens_per_second=1e999), "tokens_per_second"), (dict(tokens_per_second=1e-7), "tokens_per_second"),
        (dict(step_time=1, peak=1e999), "peak"), (dict(step_time=1, peak=1e-320), "peak"), (dict(step_time=1, peak="1e100000000"), "peak"),
    ],
)  # fmt: skip
def test_python_times_rates_and_peaks_out_of_range_are_refused_by_name(registry, kwargs, field):
    res = registry.evaluate(tiny(), seq_len=4)
    with pytest.raises(flopsreg.ModelError, match=rf"^{field}: .*: expected .*, a number from "):
        res.mfu(**{"peak": 7104, "devices": 1, **kwargs})


def test_number_from_text_is_exact_and_bounded():
    assert number_from_text("1.5") == Fraction(3, 2) and number_from_text(" 2e-3 ") == Fraction(1, 500)
    assert number_from_text("3/2") == Fraction(3, 2) and number_from_text("0e-100000000") == 0
    for text in ("1e100000000", "1e-100000000", "nan", "inf", "fast", "1" * 65, ""):
        assert number_from_text(text) is None, text


# -- numpy values where Python numbers go ------------------------------------------------------


def test_exact_number_reads_numpy_floats_and_0d_arrays():
    np = pytest.importorskip("numpy")
    assert exact_number(np.float64(1.5)) == Fraction(3, 2)  # was "Invalid literal for Fraction"
    assert exact_number(np.float32(0.1)) == Fraction(1, 10)  # the decimal it prints as
    assert exact_number(np.float16(0.5)) == Fraction(1, 2)
    assert exact_number(np.array(0.25)) == Fraction(1, 4) and exact_number(np.array(3)) == 3
    assert exact_number(np.int64(3)) == 3
    for value in (np.array([1.5]), np.True_, np.array(True), np.float64("nan"), np.float64("inf"), "1.5", True, None):
        assert exact_number(value) is None, repr(value)


def test_mfu_takes_numpy_times_rates_peaks_and_devices(registry):
    np = pytest.importorskip("numpy")
    res = registry.evaluate(tiny(), seq_len=4)
    # 7104 FLOPs in 1.5 s on 2 devices of 7104 FLOP/s: 1/3
    for step_time in (np.float64(1.5), np.float32(1.5), np.array(1.5), Fraction(3, 2)):
        for devices in (2, np.int64(2), np.int32(2), np.array(2)):
            got = res.mfu(step_time=step_time, devices=devices, peak=np.float64(7104))
            assert got.fraction == Fraction(1, 3) and type(got.devices) is int, (step_time, devices)
    assert res.mfu(tokens_per_second=np.float64(2), devices=np.int64(2), peak=7104).fraction == Fraction(1, 2)


@pytest.mark.parametrize("devices", ["float", "array", "bool"])
def test_devices_that_are_no_integer_are_refused_by_name(registry, devices):
    np = pytest.importorskip("numpy")
    value = {"float": np.float64(2.0), "array": np.array([2]), "bool": np.True_}[devices]
    with pytest.raises(flopsreg.ModelError, match=r"^devices: .*: expected an integer >= 1"):
        registry.evaluate(tiny(), seq_len=4).mfu(step_time=1, devices=value, peak=7104)


def test_check_int_takes_numpy_integers_and_refuses_floats_and_arrays():
    np = pytest.importorskip("numpy")
    for value in (np.int64(8), np.uint8(8), np.array(8)):
        assert check_int("plan.layers", value) == 8 and type(check_int("plan.layers", value)) is int
    with pytest.raises(flopsreg.ModelError, match=r"^plan\.layers = np\.float64\(8\.0\): expected an integer, got float64$"):
        check_int("plan.layers", np.float64(8.0))  # a whole float is no integer here, as 8.0 in TOML is not
    with pytest.raises(flopsreg.ModelError, match=r"expected an integer, got an array of shape \(1,\)$"):
        check_int("plan.layers", np.array([8]))
    with pytest.raises(flopsreg.ModelError, match=r"expected an integer, got float64$"):
        check_int("plan.layers", np.array(8.0))


def test_evaluate_takes_numpy_batches_lengths_and_cached(registry):
    np = pytest.importorskip("numpy")
    model = flopsreg.Model.example("llama-3-8b")
    assert registry.evaluate(model, seq_len=np.int64(8), batch=np.array(2)).forward == registry.evaluate(model, seq_len=8, batch=2).forward
    assert registry.evaluate(model, seqlens=np.array([4, 8])).forward == registry.evaluate(model, seqlens=[4, 8]).forward
    assert registry.evaluate(model, seq_len=4, cached=np.array(3)).forward == registry.evaluate(model, seq_len=4, cached=3).forward
    assert (registry.evaluate(model, seqlens=[4, 5], cached=np.array([1, 2])).forward
            == registry.evaluate(model, seqlens=[4, 5], cached=[1, 2]).forward)  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(seqlens="2-D"), r"^seqlens = .*: expected a list of sequence lengths, got an array of shape \(2, 2\)$"),
        (dict(seqlens="0-D"), r"^seqlens = array\(4\): expected a list of sequence lengths, got int64$"),
        (dict(seq_len=4, batch="1-D"), r"^batch: .* is not a batch size: expected an integer >= 1, got an array of shape \(2,\)$"),
        (dict(seq_len=4, batch="float"), r"^batch: .* is not a batch size: expected an integer >= 1, got float64$"),
        (dict(seq_len="float"), r"^seq_len: .* is not a sequence length: expected an integer >= 1, got float64$"),
        (dict(seqlens=[4, 5], cached="2-D"), r"^cached = .*: expected one int, or a list with one per sequence, got an array of shape \(2, 2\)$"),
        (dict(seqlens=[4, 5], cached="float"), r"^cached: .* is not a count of cached tokens: expected an integer >= 0, got float64$"),
    ],
)  # fmt: skip
def test_numpy_values_of_the_wrong_shape_or_kind_are_refused_by_name(registry, kwargs, message):
    np = pytest.importorskip("numpy")
    arrays = {"2-D": np.array([[4, 5], [6, 7]]), "0-D": np.array(4), "1-D": np.array([1, 2]), "float": np.float64(2.0)}
    kwargs = {key: arrays.get(value, value) if isinstance(value, str) else value for key, value in kwargs.items()}
    with pytest.raises(flopsreg.ModelError, match=message):
        registry.evaluate(flopsreg.Model.example("llama-3-8b"), **kwargs)


# -- Megatron-LM's booleans --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [("group_query_attention", "False"), ("swiglu", "no"), ("swiglu", 1), ("swiglu", 0), ("multi_latent_attention", "False"),
     ("add_bias_linear", "True"), ("untie_embeddings_and_output_weights", 0)],
)  # fmt: skip
def test_megatron_booleans_take_bools_only(name, value):
    with pytest.raises(flopsreg.ModelError, match=rf"^args\.{name} = {value!r}: expected True or False .*argparse"):
        flopsreg.Model.from_megatron_args(llama3_8b_args(**{name: value}))


def test_megatron_booleans_false_is_read_as_false():
    # 'False' used to be read as true: GQA's 8 groups; False gives Megatron-LM's MHA (32 kv heads)
    assert flopsreg.Model.from_megatron_args(llama3_8b_args(group_query_attention=False)).params["kv_heads"] == 32
    assert flopsreg.Model.from_megatron_args(llama3_8b_args(group_query_attention=True)).params["kv_heads"] == 8


def test_megatron_missing_argument_names_the_closest_one():
    args = llama3_8b_args()
    args.num_layer = args.num_layers
    del args.num_layers
    with pytest.raises(flopsreg.ModelError, match=r"^args\.num_layers: missing; did you mean 'num_layer'\?$"):
        flopsreg.Model.from_megatron_args(args)


def test_megatron_integer_arguments_take_numpy_integers():
    np = pytest.importorskip("numpy")
    numpy_args = flopsreg.Model.from_megatron_args(llama3_8b_args(hidden_size=np.int64(4096), num_query_groups=np.int32(8)))
    assert numpy_args == flopsreg.Model.from_megatron_args(llama3_8b_args())


# -- drop-ins: values no run produces warn once and give the original's value -----------------


def warned(call):
    """(call()'s value, the PlausibilityWarnings it raised) under the default filter."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        value = call()
    return value, [w for w in caught if issubclass(w.category, PlausibilityWarning)]


@pytest.mark.parametrize("dt", [-0.5, -3.7, float("inf"), 1e-320])
def test_nanogpt_implausible_dt_warns_and_returns_nanogpts_value(dt):
    got, caught = warned(lambda: estimate_mfu(GPT2, 40, dt, convention="nanogpt"))
    assert got == GPT2_FLOPS * 40 * (1.0 / dt) / 312e12  # nanoGPT's estimate_mfu, its order of operations
    assert len(caught) == 1 and "nanoGPT estimate_mfu: dt is" in str(caught[0].message)
    assert caught[0].filename == __file__  # pointed at the calling line


def test_nanogpt_nan_dt_warns_and_returns_nan():
    got, caught = warned(lambda: estimate_mfu(GPT2, 40, float("nan"), convention="nanogpt"))
    assert math.isnan(got) and len(caught) == 1


def test_a_training_loop_is_warned_once():
    def loop():
        return [estimate_mfu(GPT2, 40, dt, convention="nanogpt") for dt in (-0.5, -0.6, -0.7, -0.8)]

    values, caught = warned(loop)
    assert len(values) == 4 and len(caught) == 1


def test_nanogpt_plausible_dt_does_not_warn():
    np = pytest.importorskip("numpy")
    for dt in (0.5, np.float64(0.5), np.array(0.5)):
        got, caught = warned(lambda: estimate_mfu(GPT2, np.int64(40), dt, convention="nanogpt"))
        assert got == GPT2_FLOPS * 40 * (1.0 / 0.5) / 312e12 and not caught


def test_nanogpt_dt_zero_is_an_error_where_nanogpt_divides_by_zero():
    with pytest.raises(flopsreg.ModelError, match=r"^dt = 0: expected the iteration time in seconds, > 0 \(nanoGPT divides by it\)$"):
        estimate_mfu(GPT2, 40, 0)
    np = pytest.importorskip("numpy")
    got, caught = warned(lambda: estimate_mfu(GPT2, 40, np.float64(0.0)))  # numpy divides: nanoGPT gives inf
    assert got == math.inf and len(caught) == 1


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: estimate_mfu(None, 40, 1.0), r"^model = None: expected nanoGPT's GPT, or its GPTConfig$"),
        (lambda: estimate_mfu(SimpleNamespace(**{**vars(GPT2), "n_embed": 768, "n_embd": None}), 40, 1.0), r"^config\.n_embd = None"),
        (lambda: estimate_mfu(SimpleNamespace(**{k: v for k, v in vars(GPT2).items() if k != "n_embd"}, n_embed=768), 40, 1.0),
         r"^config\.n_embd: missing \(nanoGPT GPTConfig\.n_embd\); did you mean 'n_embed'\?$"),
        (lambda: estimate_mfu(SimpleNamespace(**{k: v for k, v in vars(GPT2).items() if k != "bias"}), 40, 1.0), r"^config\.bias: missing"),
        (lambda: estimate_mfu(GPT2, 40, None), r"^dt = None: expected the step time in seconds, one number$"),
        (lambda: estimate_mfu(GPT2, 40, "1.0"), r"^dt = '1\.0': expected the step time in seconds"),
        (lambda: num_floating_point_operations(None, 1), r"^args = None: expected Megatron-LM's argument namespace"),
        (lambda: slime.calculate_fwd_flops(None, llama3_8b_args()), r"^seqlens = None: expected a list of sequence lengths"),
        (lambda: slime.calculate_fwd_flops([4], None), r"^args = None: expected Megatron-LM's argument namespace"),
        (lambda: megatron_bridge.num_floating_point_operations(None), r"^cfg = None: expected Megatron-Bridge's ConfigContainer"),
        (lambda: megatron_bridge.num_floating_point_operations(SimpleNamespace(modle=1)), r"^cfg\.model: missing .*; did you mean 'modle'\?$"),
        (lambda: megatron_bridge.num_floating_point_operations(SimpleNamespace(model=None)), r"^cfg\.model = None: expected a Megatron-Bridge model provider"),
        (lambda: FlopsCounter(LLAMA2_7B, device_name="CPU").estimate_flops(None, 1.0), r"^batch_seqlens = None: expected a list"),
        (lambda: FlopsCounter(LLAMA2_7B, device_name="CPU").estimate_flops([8], None), r"^delta_time = None: expected the step time"),
    ],
)  # fmt: skip
def test_drop_ins_given_none_or_a_missing_attribute_say_which_in_one_line(call, message):
    with pytest.raises(flopsreg.FlopsregError, match=message):
        call()


@pytest.mark.parametrize("delta_time", [-2.0, float("inf"), 1e8])
def test_verl_implausible_delta_time_warns_and_returns_verls_value(delta_time):
    counter = FlopsCounter(AttributeConfig(LLAMA2_7B), convention="verl", device_name="NVIDIA H100 80GB HBM3")
    (achieved, promised), caught = warned(lambda: counter.estimate_flops([512, 1024, 2048], delta_time))
    assert achieved == LLAMA2_7B_VERL * (1.0 / delta_time) / 1e12 and promised == 989.5  # verl: flops * (1.0 / delta_time) / 1e12
    assert len(caught) == 1 and "delta_time is" in str(caught[0].message)


def test_verl_delta_time_zero_is_an_error_where_verl_divides_by_zero():
    counter = FlopsCounter(LLAMA2_7B, device_name="CPU")
    with pytest.raises(flopsreg.ModelError, match=r"^delta_time = 0: expected the step time in seconds, > 0 \(verl divides by it\)$"):
        counter.estimate_flops([8], 0)


@pytest.mark.parametrize(
    ("squares", "tokens"),
    [(100, -1), (99, 100), (10_001, 100), (1000**2 + 3096**2 + 1, 4096), (-4096, 4096)],  # the fourth: sum s^2 - sum s is odd
)
def test_megatron_impossible_statistics_warn_and_return_megatrons_formula(squares, tokens):
    got, caught = warned(lambda: num_floating_point_operations(llama3_8b_args(), 2, squares, tokens, convention="megatron"))
    assert got == tokens * PER_TOKEN + squares * CORE_PER_SQUARED_TOKEN  # Megatron-LM's THD terms, written out
    assert len(caught) == 1 and "no set of sequences" in str(caught[0].message) and caught[0].filename == __file__


def test_megatron_real_statistics_do_not_warn():
    tokens, squares = 1000 + 3096, 1000**2 + 3096**2
    got, caught = warned(lambda: num_floating_point_operations(llama3_8b_args(), 2, squares, tokens, convention="megatron"))
    assert got == tokens * PER_TOKEN + squares * CORE_PER_SQUARED_TOKEN and not caught


def test_bridge_impossible_statistics_warn_and_return_bridges_formula():
    cfg = SimpleNamespace(model=LLAMA_3_8B)  # Bridge counts Llama-3-8B as Megatron-LM does (its vocabulary is unpadded at TP 1)
    call = lambda: megatron_bridge.num_floating_point_operations(cfg, 2, seqlen_sum=-8, seqlen_squared_sum=32, convention="megatron_bridge")  # noqa: E731
    got, caught = warned(call)
    assert got == -8 * PER_TOKEN + 32 * CORE_PER_SQUARED_TOKEN and len(caught) == 1
