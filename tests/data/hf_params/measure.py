"""Count the parameters of every Hugging Face config in tests/data/hf, built at full size.

Each published config is built with transformers' ``AutoModelForCausalLM.from_config`` on
torch's meta device (no memory is allocated, so DeepSeek-V3 builds in seconds) and the script
records ``sum(p.numel() for p in model.parameters())``, the number a transformers user reads,
with a breakdown by parameter name (layer indices replaced by ``*``). Multimodal configs
(``gemma3``, ``llama4``) are built from their ``text_config``: the text decoder
(Gemma3ForCausalLM, Llama4ForCausalLM) that flopsreg's readers count, without the vision tower.
``quantization_config`` is dropped (GPT-OSS's MXFP4 changes storage, not the count).

The result, params.json, is an oracle independent of flopsreg for tests/test_parameters.py.
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
CONFIGS = HERE.parent / "hf"
_INDEX = re.compile(r"\.\d+\.")


def build(config: dict) -> torch.nn.Module:
    """The text decoder of *config* at full size, on the meta device."""
    text = dict(config.get("text_config", config))
    model_type = text.get("model_type", config["model_type"])
    text.pop("quantization_config", None)
    if isinstance(text.get("attn_temperature_tuning"), int):  # published as 4; transformers wants a bool
        text["attn_temperature_tuning"] = bool(text["attn_temperature_tuning"])
    hf_config = transformers.AutoConfig.for_model(model_type, **{k: v for k, v in text.items() if k != "model_type"})
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(hf_config)


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
    for path in sorted(CONFIGS.glob("*.json")):
        results[path.stem] = count(build(json.loads(path.read_text())))
        print(f"{path.stem}: {results[path.stem]['total']:,} ({results[path.stem]['class']})", file=sys.stderr)
    record = {"torch": torch.__version__, "transformers": transformers.__version__, "device": "meta", "models": results}
    (HERE / "params.json").write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
