"""Megatron-LM's padded vocabulary on models that do not give one (config.json, model files):
``vocab`` rounded up to a multiple of make_vocab_size_divisible_by x TP = 128 x 1, its defaults."""

import json

import attrs
import pytest

import flopsreg
from flopsreg.cli import main
from flopsreg.model.examples_index import example_names

S = 4096
GEMMA_H = 2560


def with_padded_vocab(model: flopsreg.Model, value: int) -> flopsreg.Model:
    """*model* giving Megatron-LM's padded vocabulary, as the Megatron-LM reader gives it (value and flag)."""
    model = model.with_param("padded_vocab", value)
    return attrs.evolve(model, flags=model.flags | {"padded_vocab_given"})


@pytest.mark.parametrize("name", example_names())
def test_every_bundled_example_counts_under_megatron_without_a_parameter(registry, name):
    """No example needs --param padded_vocab; those Megatron-LM has no branch for are refused for that alone."""
    model = flopsreg.Model.example(name)
    try:
        result = registry.evaluate(model, seq_len=S, convention="megatron")
    except flopsreg.ModelError as error:
        assert "Megatron-LM" in str(error) and "vocab" not in str(error)
        return
    assert result.training > 0


def test_gemma_3_4b_logits_over_262_272_rows(registry):
    """262,208 is 2,048.5 x 128: Megatron-LM runs 2,049 x 128 = 262,272 rows."""
    gemma = flopsreg.Model.example("gemma-3-4b")
    assert gemma.params["vocab"] == 262208 and "padded_vocab" not in gemma.params
    result = registry.evaluate(gemma, seq_len=S, convention="megatron")
    assert result.slot_flops["head"] == 2 * S * GEMMA_H * 262272
    given = registry.evaluate(with_padded_vocab(gemma, 262272), seq_len=S, convention="megatron")
    assert given.training == result.training
    unpadded = registry.evaluate(with_padded_vocab(gemma, 262208), seq_len=S, convention="megatron")
    assert result.forward - unpadded.forward == 2 * S * GEMMA_H * 64


def test_a_given_padded_vocabulary_wins_by_its_flag(registry):
    """TP 8 pads Gemma 3 to a multiple of 1,024: 262,656 rows, counted when the model gives them."""
    gemma = with_padded_vocab(flopsreg.Model.example("gemma-3-4b"), 262656)
    assert registry.evaluate(gemma, seq_len=S, convention="megatron").slot_flops["head"] == 2 * S * GEMMA_H * 262656


def test_a_padded_vocabulary_without_its_flag_is_reported_unused(registry):
    """A value never selects: without padded_vocab_given the default padding counts, and the value is named."""
    gemma = flopsreg.Model.example("gemma-3-4b").with_param("padded_vocab", 262656)
    plan = registry.select(gemma, convention="megatron")
    (warning,) = [w for w in plan.warnings if "padded_vocab" in w]
    assert "262656 is set but no selected pattern uses it" in warning and "padded_vocab_given" in warning


def test_explain_and_compare_say_how_the_vocabulary_was_padded(registry, capsys):
    said = "vocabulary padded to a multiple of 128 (Megatron-LM's make_vocab_size_divisible_by x TP, defaults)"
    assert said in registry.select(flopsreg.Model.example("gemma-3-4b"), convention="megatron").explain()
    assert main(["compare", "gemma-3-4b", "--seq-len", "4096"]) == 0
    out = capsys.readouterr().out
    megatron_row = next(line for line in out.splitlines() if line.startswith("megatron "))
    assert "cannot count" not in megatron_row and "megatron_default_padded_logits instead of tied_logits" in out and said in out


def test_the_cli_flag_selects_a_given_padded_vocabulary(capsys):
    argv = ["eval", "gemma-3-4b", "--seq-len", "4096", "--convention", "megatron", "--format", "json"]
    assert main(argv) == 0
    default = int(json.loads(capsys.readouterr().out)["forward_flops"])
    assert main([*argv, "--param", "padded_vocab=262656", "--flag", "padded_vocab_given"]) == 0
    captured = capsys.readouterr()
    assert "--flag padded_vocab_given set in flags" in captured.err and "warning" not in captured.err
    assert int(json.loads(captured.out)["forward_flops"]) - default == 2 * S * GEMMA_H * (262656 - 262272)
    assert main(["eval", "gemma-3-4b", "--seq-len", "4096", "--flag", "paded_vocab_given"]) == 2
    err = capsys.readouterr().err
    assert err == "flopsreg: error: --flag paded_vocab_given: unknown flag; did you mean 'padded_vocab_given'? (no loaded pattern reacts to it)\n"
