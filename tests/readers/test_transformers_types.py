"""The refusal of an unsupported model_type: a typo gets the closest supported name; a type
transformers 5.24 knows is named for what it is (left out by kind, or not read yet, with a
relative only where transformers runs both with one class), never a look-alike of another family."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import flopsreg
from flopsreg.readers.transformers_types import transformers_types, unsupported_reason

ROOT = Path(__file__).resolve().parents[2]
# what flopsreg read before this wave, among them the look-alikes difflib picked for olmo2, bamba, ernie4_5_moe
SUPPORTED = {"llama", "mistral", "qwen3", "qwen3_5_moe", "lfm2", "jamba", "glm4_moe", "deepseek_v3"}


@pytest.mark.parametrize(("model_type", "cls"), [("olmo2", "Olmo2ForCausalLM"), ("bamba", "BambaForCausalLM"), ("ernie4_5_moe", "Ernie4_5_MoeForCausalLM")])
def test_a_known_type_not_read_yet_gets_no_look_alike(model_type, cls):
    reason = unsupported_reason(model_type, SUPPORTED)
    assert reason == f": {cls} (transformers 5.24.0) is not read by flopsreg yet (see docs/hf-configs.md)"


@pytest.mark.parametrize(("model_type", "relative", "cls"), [("exaone", "llama", "LlamaForCausalLM"), ("sarvam_moe", "glm4_moe", "Glm4MoeForCausalLM"), ("sarvam_mla", "deepseek_v3", "DeepseekV3ForCausalLM")])
def test_a_relative_is_named_only_where_transformers_runs_both_with_one_class(model_type, relative, cls):
    reason = unsupported_reason(model_type, SUPPORTED)
    assert f"its relative {relative!r} is (transformers 5.24.0 runs both with {cls};" in reason


@pytest.mark.parametrize(
    ("model_type", "kind"),
    [("bert", "is an encoder"), ("xlm-roberta", "is an encoder"), ("bart", "the decoder of an encoder-decoder"),
     ("whisper", "a speech model"), ("musicgen", "a music model"), ("trocr", "an OCR model"), ("got_ocr2", "an OCR model")],
)
def test_an_excluded_kind_says_why(model_type, kind):
    reason = unsupported_reason(model_type, SUPPORTED)
    assert kind in reason and "flopsreg counts decoder-only language models" in reason and "did you mean" not in reason


def test_a_typo_gets_the_closest_supported_name_and_other_known_types_none():
    assert unsupported_reason("lama", SUPPORTED).startswith("; did you mean 'llama'? (supported: deepseek_v3, glm4_moe,")
    assert unsupported_reason("mistrl", SUPPORTED).startswith("; did you mean 'mistral'?")
    # llava is a transformers type (a vision-language wrapper) outside the causal-LM mapping, not a typo of llama
    assert unsupported_reason("llava", SUPPORTED) == (
        ": not a causal language model of transformers 5.24.0 (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES), so flopsreg reads none "
        "(see docs/hf-configs.md)"
    )


def test_the_refusal_is_one_line_through_the_reader():
    with pytest.raises(flopsreg.FlopsregError) as error:
        flopsreg.Model.from_hf_config({"model_type": "bert"})
    assert str(error.value) == (
        "config.json: model_type = 'bert': unsupported: BertLMHeadModel in transformers 5.24.0 is an encoder (bidirectional "
        "attention, a masked-LM model run as a decoder); flopsreg counts decoder-only language models (see docs/hf-configs.md)"
    )


def test_a_type_whose_flops_depend_on_the_input_is_refused_by_name_with_the_reason():
    """BLT's entropy patching decides the global transformer's length from the input bytes."""
    with pytest.raises(flopsreg.FlopsregError) as error:
        flopsreg.Model.from_hf_config({"model_type": "blt"})
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("config.json: model_type = 'blt': unsupported: BltForCausalLM (transformers 5.24.0) cannot be counted from its config: ")
    assert "patching_mode 'entropy'" in message and "depend on the input bytes" in message and "did you mean" not in message
    assert [name for name, entry in transformers_types().causal_lm.items() if entry.refused] == ["blt", "gemma4_assistant", "gemma4_unified_assistant", "zaya"]



def test_zaya_is_refused_because_its_router_may_skip_the_experts():
    """ZAYA's skip expert does no work, so the MLP FLOPs follow the router's choices."""
    with pytest.raises(flopsreg.FlopsregError) as error:
        flopsreg.Model.from_hf_config({"model_type": "zaya", "num_experts": 16})
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("config.json: model_type = 'zaya': unsupported: ZayaForCausalLM (transformers 5.24.0) cannot be counted from its config: ")
    assert "skip expert" in message and "router's choices" in message

def test_the_stored_list_is_transformers_5_24s():
    known = transformers_types()
    assert known.version == "5.24.0"
    # a few entries as transformers' models/auto/modeling_auto.py spells them
    assert known.causal_lm["gemma3"].cls == "Gemma3ForConditionalGeneration"
    assert known.causal_lm["internlm3"].cls == "LlamaForCausalLM"
    assert known.causal_lm["xlstm"].cls == "xLSTMForCausalLM"
    assert {"t5", "llava", "qwen2_vl", "llama"} <= known.model_types
    assert set(known.causal_lm) <= known.model_types | {"gpt-sw3"}
    kinds = {entry.excluded.split(" (")[0] for entry in known.causal_lm.values() if entry.excluded}
    assert kinds == {"an encoder", "the decoder of an encoder-decoder", "a speech model", "a music model", "an OCR model"}


TOOL = ROOT / "tools" / "make_transformers_types.py"


@pytest.mark.slow
@pytest.mark.skipif("FLOPSREG_TRANSFORMERS_PYTHON" not in os.environ or not TOOL.exists(), reason="set FLOPSREG_TRANSFORMERS_PYTHON to a Python with transformers 5.24, in a source checkout")
def test_the_stored_list_is_what_the_script_writes(tmp_path):
    """Run tools/make_transformers_types.py with transformers installed: it writes the committed file."""
    python = os.environ["FLOPSREG_TRANSFORMERS_PYTHON"]
    target = tmp_path / "types.json"
    done = subprocess.run([python, str(TOOL), "-o", str(target)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert target.read_text(encoding="utf-8") == (ROOT / "flopsreg" / "readers" / "transformers_types.json").read_text(encoding="utf-8")
