"""Measure the forward FLOPs and parameters of tiny recurrent and state-space language models with torch.

Each tiny config below keeps its family's structure at small, odd widths. One real forward pass of
the transformers implementation runs on the CPU (eager attention, no kernel package installed, so
Mamba1's sequential scan, the Mamba2 torch chunk scan and the F.conv1d causal conv run their torch
fallbacks), under torch's FlopCounterMode, at two sequence lengths. Recorded per model: the total,
the counted FLOPs of every module (inclusive of its children), the parameters of every module
(``sum(p.numel())``, recursive) and of the whole model (``parameter_total``); and per model type the parameters of the
config class at its own defaults, built on the meta device. The result, forward_recurrent.json, is
an oracle independent of flopsreg: tests/hf/test_recurrent_forward.py compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_recurrent.py
Naming models measures only those and adds them to the existing record.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

HERE = Path(__file__).parent
RECORD = HERE / "forward_recurrent.json"
SEQ_LENS = (37, 100)  # Mamba2 chunks of 16: 37 = 2 x 16 + 5, 100 = 6 x 16 + 4, the last chunk padded

TOKENS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}  # inside the tiny vocabulary
MAMBA1 = {**TOKENS, "vocab_size": 131, "hidden_size": 40, "state_size": 5, "num_hidden_layers": 3, "expand": 3,
          "conv_kernel": 3, "time_step_rank": "auto"}

CONFIGS = {
    "mamba-tiny": {"model_type": "mamba", **MAMBA1},
    "mamba-untied-rank-tiny": {"model_type": "mamba", **MAMBA1, "time_step_rank": 7, "tie_word_embeddings": False},
    "falcon-mamba-tiny": {"model_type": "falcon_mamba", **MAMBA1},
    "mamba2-tiny": {
        "model_type": "mamba2", **TOKENS, "vocab_size": 131, "hidden_size": 40, "num_hidden_layers": 3, "expand": 2,
        "num_heads": 5, "head_dim": 16, "state_size": 6, "n_groups": 5, "conv_kernel": 3, "chunk_size": 16,
    },
    "bamba-tiny": {
        "model_type": "bamba", **TOKENS, "vocab_size": 131, "hidden_size": 48, "intermediate_size": 72,
        "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "attn_layer_indices": [2],
        "mamba_n_heads": 6, "mamba_d_head": "auto", "mamba_n_groups": 3, "mamba_d_state": 5, "mamba_d_conv": 3,
        "mamba_expand": 2, "mamba_chunk_size": 16, "max_position_embeddings": 256,
    },
    "diffllama-tiny": {
        "model_type": "diffllama", **TOKENS, "vocab_size": 131, "hidden_size": 48, "intermediate_size": 72,
        "num_hidden_layers": 3, "num_attention_heads": 6, "num_key_value_heads": 2, "head_dim": 12,
        "max_position_embeddings": 256,
    },
    "rwkv-tiny": {
        "model_type": "rwkv", **TOKENS, "vocab_size": 131, "hidden_size": 40, "num_hidden_layers": 3,
        "attention_hidden_size": 36, "intermediate_size": 88, "context_length": 256,
    },
}
DEFAULT_TYPES = ("mamba", "falcon_mamba", "mamba2", "bamba", "diffllama", "rwkv")


def measure(config: dict, seq_len: int) -> dict:
    hf_config = transformers.AutoConfig.for_model(config["model_type"], **{k: v for k, v in config.items() if k != "model_type"})
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(hf_config, attn_implementation="eager").eval()
    ids = torch.randint(3, config["vocab_size"], (1, seq_len))
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(input_ids=ids, use_cache=False)
    modules = {name: int(sum(ops.values())) for name, ops in counter.get_flop_counts().items()}
    parameters = {name: sum(p.numel() for p in module.parameters()) for name, module in model.named_modules() if name}
    return {"total": int(counter.get_total_flops()), "modules": modules, "parameters": parameters,
            "parameter_total": sum(p.numel() for p in model.parameters())}


def default_parameters(model_type: str) -> dict:
    """The config class at its own defaults, built on the meta device: its config and parameter total."""
    config = transformers.AutoConfig.for_model(model_type)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    return {"config": config.to_dict(), "total": sum(p.numel() for p in model.parameters())}


def main(names: list[str], configs: dict = CONFIGS, record: Path = RECORD, default_types: tuple[str, ...] = DEFAULT_TYPES) -> int:
    """Measure *configs* (those named, added to *record*; all when none is named) and the class
    defaults of *default_types* into *record* (measure_ssm2.py measures its own configs this way)."""
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_lens": list(SEQ_LENS), "models": {}, "defaults": {}}
    if names:  # add to the record made with the same versions
        results = json.loads(record.read_text())
        assert (results["torch"], results["transformers"]) == (torch.__version__, transformers.__version__), "other versions"
    for name, config in configs.items():
        if names and name not in names:
            continue
        try:
            runs = {str(n): measure(config, n) for n in SEQ_LENS}
        except Exception as exc:  # record, so the test knows which models were not measured
            results["models"][name] = {"config": config, "error": f"{type(exc).__name__}: {exc}"}
            print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        parameters, total = runs[str(SEQ_LENS[0])]["parameters"], runs[str(SEQ_LENS[0])]["parameter_total"]
        for run in runs.values():
            del run["parameters"], run["parameter_total"]
        results["models"][name] = {"config": config, "flops": runs, "parameters": parameters, "parameter_total": total}
    for model_type in default_types:
        if not names or model_type in names or any(configs[n]["model_type"] == model_type for n in names if n in configs):
            results["defaults"][model_type] = default_parameters(model_type)
    record.write_text(json.dumps(results, indent=1, sort_keys=True, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
