"""Sweeps and the compiled fast path agree with the uncompiled sympy evaluation, exactly."""

import json
from fractions import Fraction

import numpy
import pytest
import sympy

import flopsreg
from flopsreg.cli import main
from flopsreg.declarations.symbols import s

EXAMPLES = ["gemma-3-27b", "llama-4-scout", "deepseek-v3", "gpt-oss-20b", "mistral-7b-v0.1"]
LENGTHS = [1, 2, 127, 128, 129, 1000, 4096, 8191, 8192, 8193, 20000, 131072, 10**7 + 3]


def _model(name):
    return flopsreg.Model.example(name)


@pytest.mark.parametrize("name", EXAMPLES)
def test_compiled_total_equals_sympy_substitution(registry, name):
    """The compiled whole-model function against sympy's own exact arithmetic (subs)."""
    plan = registry.select(_model(name))
    for length in LENGTHS:
        expected = plan.expression.subs(s, length)
        assert expected.is_Integer
        assert registry.evaluate(_model(name), seq_len=length).forward == int(expected)


@pytest.mark.parametrize("name", EXAMPLES)
def test_compiled_total_equals_the_sum_of_per_slot_terms(registry, name):
    """Two independent compilations (whole model vs each slot of each layer kind) agree."""
    result = registry.evaluate(_model(name), seqlens=[777, 8192, 9000], batch=3)
    assert result.forward == sum(result.slot_flops.values())
    assert result.forward == sum(layer.flops for layer in result.layers) + result.slot_flops.get("head", 0)


@pytest.mark.parametrize("name", EXAMPLES)
def test_exact_sweep_equals_one_evaluation_per_length(registry, name):
    model = _model(name)
    assert registry.sweep(model, LENGTHS, batch=2) == [registry.evaluate(model, seq_len=n, batch=2).forward for n in LENGTHS]
    assert all(type(v) is int for v in registry.sweep(model, range(1, 50)))


def test_float_sweep_is_numpy_float64_close_to_exact(registry):
    model = _model("gemma-3-27b")
    lengths = range(1, 200_001, 997)
    floats = registry.sweep(model, lengths, dtype=float, batch=4)
    assert isinstance(floats, numpy.ndarray) and floats.dtype == numpy.float64
    exact = registry.sweep(model, lengths, batch=4)
    assert numpy.allclose(floats, numpy.array(exact, dtype=numpy.float64), rtol=1e-12, atol=0)


def test_sweep_rejects_bad_lengths_and_dtypes(registry):
    model = _model("gemma-3-4b")
    with pytest.raises(flopsreg.ModelError, match=r"seq_len: 0 is not a sequence length"):
        registry.sweep(model, [4, 0])
    with pytest.raises(flopsreg.ModelError, match=r"seq_len: 0..9 includes lengths below 1"):
        registry.sweep(model, range(0, 10))
    with pytest.raises(flopsreg.ModelError, match=r"dtype: .*expected None \(exact ints\) or float"):
        registry.sweep(model, [4], dtype=complex)


def test_cli_sweep_csv_and_json(capsys):
    assert main(["sweep", "gemma-3-4b", "--seq-len", "1024:4096:1024"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "seq_len,forward_flops,training_flops,forward_per_token,training_per_token"
    assert [int(line.split(",")[0]) for line in lines[1:]] == [1024, 2048, 3072, 4096]  # stop included
    seq, forward, training, forward_per_token, training_per_token = lines[-1].split(",")
    assert int(training) == 3 * int(forward) == 98_999_344_300_032  # anchors 10.3 at 4096
    # 32,999,781,433,344 / 4096 tokens, exact: 8,056,587,264 (the anchor divides evenly)
    assert (forward_per_token, training_per_token) == ("8056587264", str(3 * 8056587264))
    assert main(["sweep", "gemma-3-4b", "--seq-len", "4096,100", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0] == {
        "seq_len": 4096,
        "forward_flops": "32999781433344",
        "training_flops": "98999344300032",
        "forward_per_token": "8056587264",
        "training_per_token": "24169761792",
    }
    assert main(["sweep", "gemma-3-4b", "--seq-len", "3", "--batch", "2"]) == 0
    three = capsys.readouterr().out.strip().splitlines()[1].split(",")
    assert three[3] == str(Fraction(int(three[1]), 2 * 3))  # a fraction n/d where tokens do not divide
    assert main(["sweep", "gemma-3-4b", "--seq-len", "10:1:0"]) == 2
    assert "expected START:STOP[:STEP]" in capsys.readouterr().err


def test_repeated_evaluations_reuse_one_plan(registry):
    model = _model("deepseek-v3")
    assert registry.select(model) is registry.select(_model("deepseek-v3"))  # equal models share a plan
    assert registry.select(model, convention="slime") is not registry.select(model)


def test_sympy_symbol_is_the_engine_symbol():
    assert s == sympy.Symbol("seq_len", integer=True, positive=True)


@pytest.mark.parametrize("name", ["deepseek-v3", "gemma-3-27b", "gpt-oss-20b", "llama-4-scout", "mixtral-8x7b"])
def test_float_sweeps_are_the_exact_integers_wherever_float64_holds_them(name):
    """Below 2**53 every float equals the exact count; above, float64's relative rounding only."""
    numpy = pytest.importorskip("numpy")
    reg = flopsreg.Registry(load_entry_points=False)
    model = flopsreg.Model.example(name)
    lengths = [*range(1, 3000, 7), *(2**k + d for k in range(10, 22) for d in (-1, 0, 1))]
    exact = reg.sweep(model, lengths)
    floats = reg.sweep(model, lengths, dtype=float)
    assert floats.dtype == numpy.float64 and floats.shape == (len(lengths),)
    for length, e, f in zip(lengths, exact, floats.tolist()):
        if e < 2**53:
            assert f == e, (length, e, f)
        else:
            assert abs(f - e) <= e * 2**-48, (length, e, f)
    assert reg.sweep(model, range(1, 3000, 7), dtype=float).tolist() == floats[: len(range(1, 3000, 7))].tolist()
    assert (reg.sweep(model, lengths, batch=3, dtype=float) == 3 * floats).all()
