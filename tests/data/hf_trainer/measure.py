"""Record what transformers' Trainer counts for every Hugging Face config in tests/data/hf and
tests/data/hf_params/configs: ``Trainer.floating_point_ops(inputs)`` is
``6 * inputs["input_ids"].numel() * model.num_parameters(exclude_embeddings=True)``
(transformers 5.24.0, trainer.py and modeling_utils.py), so the number to record per model is
``num_parameters(exclude_embeddings=True)``.

Each config's text decoder is built as tests/data/hf_params/measure.py builds it (on torch's meta
device); a config whose ``architectures`` name a ``...ForConditionalGeneration`` class is also
built whole with that class (its vision tower from the config's ``vision_config``, or the config
class's default where the stored config has none), and its count is recorded beside the
decoder's. The result, trainer.json, is an oracle independent of flopsreg for
tests/conventions/test_hf_trainer.py. Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_trainer/measure.py
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import torch
import transformers

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("hf_params_measure", HERE.parent / "hf_params" / "measure.py")
hf_params = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hf_params)


def composite(config: dict) -> torch.nn.Module | None:
    """The whole multimodal model of *config*, or None for a decoder-only one."""
    architecture = (config.get("architectures") or [""])[0]
    if not architecture.endswith("ForConditionalGeneration") or not hasattr(transformers, architecture):
        return None
    fields = {k: v for k, v in config.items() if k not in ("model_type", "quantization_config")}
    hf_config = transformers.AutoConfig.for_model(config["model_type"], **fields)
    with torch.device("meta"):
        return getattr(transformers, architecture)._from_config(hf_config)


def main() -> int:
    results = {}
    for path in sorted((p for folder in hf_params.CONFIGS for p in folder.glob("*.json")), key=lambda p: p.name):
        config = json.loads(path.read_text())
        decoder = hf_params.build(config)
        # PreTrainedModel.num_parameters, also for the plain-module TextDecoder of hf_params/measure.py
        non_embedding = transformers.PreTrainedModel.num_parameters(decoder, exclude_embeddings=True)
        entry = {"class": type(decoder).__name__, "non_embedding": non_embedding}
        try:
            whole = composite(config)
        except Exception as error:  # noqa: BLE001 (recorded, not hidden)
            entry["composite_error"] = f"{type(error).__name__}: {error}"[:200]
            whole = None
        if whole is not None:
            entry["composite"] = {"class": type(whole).__name__, "non_embedding": whole.num_parameters(exclude_embeddings=True)}
        results[path.stem] = entry
        print(path.stem, entry, file=sys.stderr)
    record = {"torch": torch.__version__, "transformers": transformers.__version__, "device": "meta", "models": results}
    (HERE / "trainer.json").write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
