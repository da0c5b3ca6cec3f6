"""Bad Hugging Face configs: one-line errors naming the field, the value and what was expected.

A config the loader cannot read exactly as transformers does must fail, never give a model
that is silently wrong.
"""

from __future__ import annotations

import contextlib
import io

import pytest
from hf_data import config, path

from flopsreg import ModelError
from flopsreg.cli import main
from flopsreg.readers.hf import load_hf_config


def error(cfg, **kwargs) -> str:
    with pytest.raises(ModelError) as info:
        load_hf_config(cfg, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_unknown_model_type_lists_supported_and_closest():
    cfg = config("llama-3-8b")
    cfg["model_type"] = "lama"
    message = error(cfg)
    assert "model_type = 'lama': unsupported; did you mean 'llama'?" in message
    assert "qwen3_moe" in message and "deepseek_v3" in message


def test_missing_model_type(registry):
    cfg = config("llama-3-8b")
    del cfg["model_type"]
    # every registered reader, sorted (readers are plugins: the list grows with them)
    assert error(cfg) == f"config.json: model_type: missing; supported: {', '.join(sorted(registry.hf_readers))}"
    assert {"deepseek_v2", "gemma3_text", "llama", "qwen3_moe"} <= set(registry.hf_readers)


def test_missing_required_field_names_field_and_model_type():
    cfg = config("llama-3-8b")
    del cfg["hidden_size"]
    assert error(cfg) == "config.json: hidden_size: missing (needed for model_type llama)"


def test_missing_field_in_a_file_names_the_file(tmp_path):
    file = tmp_path / "config.json"
    file.write_text('{"model_type": "mixtral", "hidden_size": 4096}')
    assert error(file) == f"{file}: num_hidden_layers: missing (needed for model_type mixtral)"


@pytest.mark.parametrize(("value", "kind"), [(4096.0, "float"), ("4096", "str"), (True, "bool")])
def test_wrong_type_for_an_integer(value, kind):
    cfg = config("llama-3-8b")
    cfg["hidden_size"] = value
    assert error(cfg) == f"config.json: hidden_size = {value!r}: expected an integer, got {kind}"


def test_nonpositive_integer():
    cfg = config("qwen2-moe")
    cfg["num_experts_per_tok"] = 0
    assert error(cfg) == "config.json: num_experts_per_tok = 0: expected an integer >= 1"


def test_text_config_with_unsupported_model_type():
    cfg = config("gemma-3-4b")
    cfg["text_config"]["model_type"] = "siglip_vision_model"
    assert error(cfg) == (
        "config.json: text_config.model_type = 'siglip_vision_model': unsupported for model_type gemma3 "
        "(expected 'gemma3_text')"
    )


def test_wrapper_without_text_config():
    cfg = config("llama-4-scout")
    del cfg["text_config"]
    assert "text_config: missing" in error(cfg)


def test_missing_field_inside_text_config_is_prefixed():
    cfg = config("gemma-3-4b")
    del cfg["text_config"]["intermediate_size"]
    assert error(cfg) == "config.json: text_config.intermediate_size: missing (needed for model_type gemma3_text)"


def test_mistral_without_sliding_window_is_not_defaulted():
    """MistralConfig would switch a 4096 window on; the loader asks instead."""
    cfg = config("mistral-7b-v0.1")
    del cfg["sliding_window"]
    assert "sliding_window: missing (MistralConfig would default it to 4096" in error(cfg)


def test_sliding_layers_without_a_window():
    cfg = config("gpt-oss-20b")
    del cfg["sliding_window"]
    assert error(cfg) == (
        "config.json: sliding_window: missing (layers 0, 2, 4, 6, 8, 10, ... are sliding_attention)"
    )


def test_layer_types_of_the_wrong_length_or_value():
    cfg = config("gpt-oss-20b")
    cfg["layer_types"] = cfg["layer_types"][:-1]
    assert "layer_types: 23 entries but num_hidden_layers = 24" in error(cfg)
    cfg = config("gpt-oss-20b")
    cfg["layer_types"][3] = "sliding_atention"
    assert "layer_types[3] = 'sliding_atention': unsupported for model_type gpt_oss; did you mean 'sliding_attention'?" in error(cfg)


def test_llama4_without_rope_or_moe_layer_plan():
    text = config("llama-4-scout")["text_config"]
    del text["no_rope_layers"]
    assert "no_rope_layers: missing" in error(text)
    text = config("llama-4-scout")["text_config"]
    del text["moe_layers"], text["interleave_moe_layer_step"]
    assert "moe_layers: missing" in error(text)


def test_llama4_no_rope_layers_must_be_zero_or_one():
    text = config("llama-4-scout")["text_config"]
    text["no_rope_layers"][5] = 2
    assert "no_rope_layers[5] = 2: expected an integer between 0 and 1" in error(text)


def test_deepseek_moe_layer_freq_other_than_one_is_ambiguous():
    cfg = config("deepseek-v3")
    cfg["moe_layer_freq"] = 2
    assert "moe_layer_freq = 2: transformers ignores it" in error(cfg)


def test_deepseek_q_lora_rank_must_be_stated():
    cfg = config("deepseek-v2-lite")
    del cfg["q_lora_rank"]
    assert "q_lora_rank: missing (null for a direct q_proj" in error(cfg)


def test_qwen_moe_sliding_window_needs_layer_types():
    cfg = config("qwen3-30b-a3b")
    cfg["use_sliding_window"] = True
    assert "use_sliding_window = true: which layers slide differs" in error(cfg)


def test_mtp_depth_of_wrong_type():
    """The DeepSeek reader reads the depth it reports as the mtp block, asked for or not."""
    cfg = config("deepseek-v3")
    cfg["num_nextn_predict_layers"] = 1.0
    assert "num_nextn_predict_layers = 1.0: expected an integer, got float" in error(cfg)


def test_unreadable_and_invalid_files(tmp_path):
    assert "cannot read config" in error(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert "not valid JSON" in error(bad)
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    assert "expected a JSON object, got list" in error(listed)


def test_cli_reports_config_errors_on_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD", "1")
    file = tmp_path / "config.json"
    file.write_text(path("llama-3-8b").read_text().replace('"llama"', '"llamma"'))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(["eval", str(file), "--seq-len", "16"])
    assert status == 2
    lines = err.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("flopsreg: error: ") and "did you mean 'llama'?" in lines[0]


# -- wrong JSON types, typo-sized integers, files that are not text -----------------------------


@pytest.mark.parametrize(("value", "kind"), [({"name": "silu"}, "dict"), (["silu"], "list"), (1, "int"), (None, "null")])
def test_hidden_act_must_be_a_string(value, kind):
    cfg = config("llama-3-8b")
    cfg["hidden_act"] = value
    assert error(cfg) == f"config.json: hidden_act = {value!r}: expected a string, got {kind}"


def test_name_or_path_must_be_a_string():
    cfg = config("llama-3-8b")
    cfg["_name_or_path"] = ["meta-llama/Meta-Llama-3-8B"]
    assert error(cfg) == "config.json: _name_or_path = ['meta-llama/Meta-Llama-3-8B']: expected a string, got list"


@pytest.mark.parametrize("value", [2**63, 10**30])
def test_integers_beyond_max_int_are_refused_by_name(value):
    """TOML cannot hold them either; such a value is a typo, never a dimension."""
    cfg = config("llama-3-8b")
    cfg["hidden_size"] = value
    assert error(cfg) == f"config.json: hidden_size = {value}: expected an integer <= 2^63 - 1 (a larger one is a typo)"


def test_max_int_itself_is_accepted_by_the_reader():
    cfg = config("llama-3-8b")
    cfg["vocab_size"] = 2**63 - 1
    assert load_hf_config(cfg).params["vocab"] == 2**63 - 1


@pytest.mark.parametrize("content", [b"\xff\xfe{\x00}\x00", b'{"model_type": "llama", "x": "\xe9"}', bytes(range(256))])
def test_binary_or_non_utf8_file_is_one_line(tmp_path, content):
    file = tmp_path / "config.json"
    file.write_bytes(content)
    message = error(file)
    assert message.startswith(f"{file}: not a UTF-8 text file (byte ") and message.endswith("expected a config.json")


def test_binary_file_on_the_command_line_exits_2(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD", "1")
    file = tmp_path / "config.json"
    file.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(["eval", str(file), "--seq-len", "16"])
    lines = err.getvalue().splitlines()
    assert status == 2 and len(lines) == 1 and "not a UTF-8 text file" in lines[0]


# -- attribute_map aliases: both spellings given and different -----------------------------------


@pytest.mark.parametrize(
    ("name", "field", "alias"),
    [
        ("qwen3-30b-a3b", "num_experts", "num_local_experts"),
        ("qwen2-moe", "num_experts", "num_local_experts"),
        ("mixtral-8x7b", "num_local_experts", "num_experts"),
        ("gpt-oss-20b", "num_local_experts", "num_experts"),
        ("deepseek-v2-lite", "n_routed_experts", "num_experts"),
        ("deepseek-v3", "n_routed_experts", "num_local_experts"),
    ],
)
def test_an_alias_that_disagrees_with_its_field_names_both(name, field, alias):
    cfg = config(name)
    cfg[alias] = cfg[field] + 1
    assert error(cfg) == (
        f"config.json: {field} = {cfg[field]!r} but {alias} = {cfg[field] + 1!r}: the config class reads "
        f"{alias} as {field} (attribute_map), so they must agree; keep one"
    )


def test_qwen2_moe_zero_window_with_sliding_layers_is_refused():
    """Qwen2MoeConfig writes sliding_window 0 for "no window": never a window of 0 keys."""
    cfg = config("qwen2-moe")
    cfg["sliding_window"] = 0
    cfg["layer_types"] = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(28)]
    assert error(cfg) == (
        "config.json: sliding_window = 0: no window (as Qwen2MoeConfig writes it when use_sliding_window is off), "
        "but layer_types marks layers 0, 2, 4, 6, 8, 10, ... sliding; expected a window >= 1"
    )
