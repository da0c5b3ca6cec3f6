"""Measure tiny forward passes of the text models of multimodal wrappers that flopsreg reads
from traits (patterns/hf/llama_like.py), and their class-default parameters: for h-mm's types.

The same measurement as measure_families.py (imported from it: eager attention and experts,
FlopCounterMode at two lengths, the pairs each mask lets through, each module's FLOPs, the
parameters of the tiny model and of the class-default config on the meta device), for the cases
below. The result, forward_mm.json, is an oracle independent of flopsreg:
tests/hf/test_mm_forward.py compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_mm.py
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import torch
import transformers
from measure_families import BASE, SEQ_LENS, class_defaults, measure

HERE = Path(__file__).parent

CASES: dict[str, dict] = {
    # Aria's text model: 5 routed experts, top 2, 2 shared experts (one MLP of 2 x 58), q/k/v/o biases.
    "aria_text": {"model_type": "aria_text", **BASE, "moe_num_experts": 5, "moe_topk": 2, "moe_num_shared_experts": 2, "attention_bias": True},
    # Emu3: AutoModelForCausalLM builds Emu3ForCausalLM from the text_config alone; both biases on.
    "emu3": {"model_type": "emu3", "vocab_size": BASE["vocab_size"], "text_config": {"model_type": "emu3_text_model", **BASE, "attention_bias": True, "mlp_bias": True}},
}


def main() -> int:
    warnings.filterwarnings("ignore")
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_lens": list(SEQ_LENS), "models": {}, "defaults": {}}
    for name, config in CASES.items():
        results["models"][name] = measure(config)
        print(name, results["models"][name]["totals"], file=sys.stderr)
    for model_type in sorted({config["model_type"] for config in CASES.values()}):
        results["defaults"][model_type] = class_defaults(model_type)
    (HERE / "forward_mm.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
