"""Count the parameters of every Hugging Face config in tests/data/hf, built at full size, and of
the configs in tests/data/hf_params/configs (recorded for their parameters only: config-class
defaults of a variant none of tests/data/hf covers, e.g. Gemma 4's per-layer embeddings).

Each published config is built with transformers' ``AutoModelForCausalLM.from_config`` on
torch's meta device (no memory is allocated, so DeepSeek-V3 builds in seconds) and the script
records ``sum(p.numel() for p in model.parameters())``, the number a transformers user reads,
with a breakdown by parameter name (layer indices replaced by ``*``). Multimodal configs
(``gemma3``, ``llama4``) are built from their ``text_config``: the text decoder
(Gemma3ForCausalLM, Llama4ForCausalLM) that flopsreg's readers count, without the vision tower;
a text config without a causal-LM class (``mistral_large4_text``) is built as its multimodal
class builds it: ``AutoModel.from_config(text_config)`` and a ``lm_head`` (see ``TextDecoder``).
``quantization_config`` is dropped (GPT-OSS's MXFP4 changes storage, not the count).
Kimi-K2.5/K2.6's ``text_config`` says ``model_type: kimi_k2``, which ``AutoConfig`` does not
know: it is built as ``deepseek_v3``, as transformers' KimiK25Config and flopsreg's reader read it.

The result, params.json, is an oracle independent of flopsreg for tests/engine/test_parameters.py.
Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_params/measure.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import torch
import transformers

HERE = Path(__file__).parent
CONFIGS = (HERE.parent / "hf", HERE / "configs")
_INDEX = re.compile(r"\.\d+\.")
# text model types AutoConfig does not know, and the type that builds them (KimiK25Config.__post_init__)
_TEXT_TYPES = {"kimi_k2": "deepseek_v3"}


def build(config: dict) -> torch.nn.Module:
    """The text decoder of *config* at full size, on the meta device."""
    text = dict(config.get("text_config", config))
    model_type = text.get("model_type", config["model_type"])
    model_type = _TEXT_TYPES.get(model_type, model_type)
    text.pop("quantization_config", None)
    if isinstance(text.get("attn_temperature_tuning"), int):  # published as 4; transformers wants a bool
        text["attn_temperature_tuning"] = bool(text["attn_temperature_tuning"])
    hf_config = transformers.AutoConfig.for_model(model_type, **{k: v for k, v in text.items() if k != "model_type"})
    with torch.device("meta"):
        if type(hf_config) in transformers.AutoModelForCausalLM._model_mapping:
            return transformers.AutoModelForCausalLM.from_config(hf_config)
        return TextDecoder(hf_config)


class TextDecoder(torch.nn.Module):
    """A text config with no causal-LM class of its own (``mistral_large4_text``): the decoder its
    multimodal ``ForConditionalGeneration`` builds (``AutoModel.from_config(text_config)``) and
    that class's ``lm_head`` (``Linear(hidden_size, vocab_size, bias=False)``, tied if the config says so)."""

    def __init__(self, config: transformers.PreTrainedConfig) -> None:
        super().__init__()
        self.model = transformers.AutoModel.from_config(config)
        self.lm_head = torch.nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight


def count(model: torch.nn.Module) -> dict:
    """The total and, per parameter name with layer indices as ``*``, the elements it holds."""
    by_name: dict[str, int] = {}
    for name, parameter in model.named_parameters():
        key = _INDEX.sub(".*.", name)
        by_name[key] = by_name.get(key, 0) + parameter.numel()
    total = sum(p.numel() for p in model.parameters())
    assert total == sum(by_name.values())
    return {"class": type(model).__name__, "total": total, "by_name": dict(sorted(by_name.items()))}


def main() -> int:
    results = {}
    for path in sorted((p for folder in CONFIGS for p in folder.glob("*.json")), key=lambda p: p.name):
        results[path.stem] = count(build(json.loads(path.read_text())))
        print(f"{path.stem}: {results[path.stem]['total']:,} ({results[path.stem]['class']})", file=sys.stderr)
    record = {"torch": torch.__version__, "transformers": transformers.__version__, "device": "meta", "models": results}
    (HERE / "params.json").write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
