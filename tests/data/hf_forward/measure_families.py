"""Measure tiny forward passes of the Llama-like families flopsreg reads from traits
(patterns/hf/_traits.py), and the parameters of every family's class-default config.

For every case below (a tiny config with odd widths: hidden 44, head_dim 12, intermediate 58,
vocabulary 97), build the transformers 5.24 model on the CPU with eager attention and eager
experts, run one forward pass at each of SEQ_LENS under torch's FlopCounterMode, and record the
total counted, the FLOPs of every module (at the longer length), the (query, key) pairs each
attention call's mask lets through, ``sum(p.numel())`` of the model and each module's own
parameters. For every model type it also records the class-default config
(``AutoConfig.for_model(type).to_dict()``) and the parameters of the model built from it on the
meta device (no memory, no weights). The result, forward_families.json, is an oracle
independent of flopsreg: tests/hf/test_families_forward.py compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_families.py
"""

from __future__ import annotations

import importlib
import json
import sys
import warnings
from pathlib import Path

import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

HERE = Path(__file__).parent
SEQ_LENS = (13, 24)

# Odd widths: head_dim 12 is not hidden / heads (11), so a reader that derives it is caught.
BASE = {
    "hidden_size": 44, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
    "intermediate_size": 58, "vocab_size": 97, "num_hidden_layers": 3, "max_position_embeddings": 128, "pad_token_id": 0,
}
# Families whose modeling code sizes some module by hidden / heads whatever head_dim says (Phi's
# q/k LayerNorm, Helium's o_proj, OLMoE's q/k norms): hidden 48, so head_dim 12 = hidden / heads.
DERIVED = {**BASE, "hidden_size": 48}
WINDOWED = {**BASE, "num_hidden_layers": 5, "sliding_window": 7}
MOE = {"moe_intermediate_size": 26, "num_experts_per_tok": 2}

CASES: dict[str, dict] = {
    "olmo": {"model_type": "olmo", **BASE, "attention_bias": True},
    "olmo2": {"model_type": "olmo2", **BASE},
    "olmo3": {"model_type": "olmo3", **WINDOWED},
    "phi": {"model_type": "phi", **DERIVED, "qk_layernorm": True},
    "phi3": {"model_type": "phi3", **BASE, "sliding_window": 7},
    "cohere": {"model_type": "cohere", **BASE, "use_qk_norm": True},
    "cohere2": {"model_type": "cohere2", **WINDOWED},
    "glm": {"model_type": "glm", **BASE},
    "glm4": {"model_type": "glm4", **BASE, "tie_word_embeddings": True},
    "granite": {"model_type": "granite", **BASE, "attention_bias": True, "mlp_bias": True},
    "granite_swa": {"model_type": "granite_swa", **WINDOWED},
    "ernie4_5": {"model_type": "ernie4_5", **BASE, "use_bias": True},
    "exaone": {"model_type": "exaone", **{k: v for k, v in BASE.items() if k != "num_hidden_layers"}, "num_layers": 3},
    "exaone4": {"model_type": "exaone4", **WINDOWED},
    "seed_oss": {"model_type": "seed_oss", **BASE},
    "smollm3": {"model_type": "smollm3", **WINDOWED, "use_sliding_window": True, "no_rope_layer_interval": 2},
    "ministral": {"model_type": "ministral", **WINDOWED},
    "ministral3": {"model_type": "ministral3", **WINDOWED},
    "apertus": {"model_type": "apertus", **BASE},
    "arcee": {"model_type": "arcee", **BASE},
    "helium": {"model_type": "helium", **DERIVED, "mlp_bias": True},
    "internlm3": {"model_type": "internlm3", **BASE, "qkv_bias": True, "bias": True},
    "gemma": {"model_type": "gemma", **BASE},
    "vaultgemma": {"model_type": "vaultgemma", **WINDOWED},
    "hunyuan_v1_dense": {"model_type": "hunyuan_v1_dense", **BASE},
    "iquestcoder": {"model_type": "iquestcoder", **BASE},
    "cwm": {"model_type": "cwm", **WINDOWED},
    "nanochat": {"model_type": "nanochat", **BASE},
    "nemotron": {"model_type": "nemotron", **BASE, "partial_rotary_factor": 0.5},
    "olmoe": {"model_type": "olmoe", **DERIVED, **MOE, "num_experts": 5},
    "granitemoe": {"model_type": "granitemoe", **BASE, "num_local_experts": 5, "num_experts_per_tok": 2},
    "granitemoeshared": {
        "model_type": "granitemoeshared", **BASE, "num_local_experts": 5, "num_experts_per_tok": 2, "shared_intermediate_size": 30,
    },
    "mellum": {"model_type": "mellum", **BASE, **MOE, "num_experts": 5},
    "flex_olmo": {"model_type": "flex_olmo", **BASE, "num_experts": 5, "num_experts_per_tok": 2},
    "phimoe": {
        "model_type": "phimoe", **BASE, "num_local_experts": 5, "num_experts_per_tok": 2, "sliding_window": 7,
        "attention_bias": True, "lm_head_bias": True,
    },
    # MoE on layers 1 and 2 (moe_layer_start_index .. moe_layer_end_index), dense on 0 and 3.
    "ernie4_5_moe": {
        "model_type": "ernie4_5_moe", **BASE, "num_hidden_layers": 4, "moe_intermediate_size": 26, "moe_k": 2, "moe_num_experts": 5,
        "moe_num_shared_experts": 1, "moe_layer_start_index": 1, "moe_layer_end_index": 2, "moe_layer_interval": 1,
    },
    "exaone_moe": {
        "model_type": "exaone_moe", **WINDOWED, **MOE, "num_experts": 5, "num_shared_experts": 1, "first_k_dense_replace": 2,
        "n_group": 1, "topk_group": 1,
    },
    "solar_open": {
        "model_type": "solar_open", **BASE, **MOE, "n_routed_experts": 5, "n_shared_experts": 1, "attention_bias": True,
        "n_group": 1, "topk_group": 1,
    },
    "granitemoe_swa": {
        "model_type": "granitemoe_swa", **WINDOWED, "num_local_experts": 5, "num_experts_per_tok": 2, "shared_intermediate_size": 30,
    },
}


def _pair_recorder(pairs: list[tuple[int, int]]):
    """Wrap eager_attention_forward: record (layer, pairs its mask lets through) for each call."""

    def wrap(function):
        def recorded(module, query, key, value, attention_mask, *args, **kwargs):
            if attention_mask is None:
                allowed = -1
            else:
                mask = attention_mask[0, 0, :, : key.shape[-2]]
                allowed = int(mask.sum()) if mask.dtype == torch.bool else int((mask == 0).sum())
            pairs.append((module.layer_idx, allowed))
            return function(module, query, key, value, attention_mask, *args, **kwargs)

        return recorded

    return wrap


def _run(model, vocab: int, seq_len: int):
    modeling = importlib.import_module(type(model).__module__)
    pairs: list[tuple[int, int]] = []
    original = getattr(modeling, "eager_attention_forward", None)
    if original is not None:
        modeling.eager_attention_forward = _pair_recorder(pairs)(original)
    ids = torch.randint(0, vocab, (1, seq_len))
    counter = FlopCounterMode(display=False)
    try:
        with torch.no_grad(), counter:
            model(input_ids=ids)
    finally:
        if original is not None:
            modeling.eager_attention_forward = original
    return counter, [n for _, n in sorted(pairs)]


def measure(config: dict) -> dict:
    model_type = config["model_type"]
    hf_config = transformers.AutoConfig.for_model(model_type, **{k: v for k, v in config.items() if k != "model_type"})
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(
        hf_config, attn_implementation="eager", experts_implementation="eager"
    ).eval()
    totals = {}
    for seq_len in SEQ_LENS:
        counter, pairs = _run(model, config.get("vocab_size") or config["text_config"]["vocab_size"], seq_len)
        totals[str(seq_len)] = int(counter.get_total_flops())
    counts = counter.get_flop_counts()
    root = type(model).__name__
    modules = {
        name.removeprefix(f"{root}."): int(sum(ops.values()))
        for name, ops in counts.items()
        if name.startswith(f"{root}.") and sum(ops.values())
    }
    return {
        "config": config,
        "class": root,
        "totals": totals,
        "modules": dict(sorted(modules.items())),
        "pairs": pairs,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "module_parameters": {
            name: int(sum(p.numel() for p in module.parameters(recurse=False)))
            for name, module in model.named_modules()
            if any(True for _ in module.parameters(recurse=False))
        },
    }


def _jsonable(value):
    try:
        json.dumps(value)
        return True
    except TypeError:
        return False


def class_defaults(model_type: str, **extra) -> dict:
    """The class-default config as a config.json holds it (with the keys *extra* sets, for a class
    that does not build from its defaults alone), and the parameters of its model (meta device)."""
    config = transformers.AutoConfig.for_model(model_type, **extra)
    saved = {k: v for k, v in config.to_dict().items() if _jsonable(v)}
    try:
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(config)
        return {"config": saved, "parameters": int(sum(p.numel() for p in model.parameters()))}
    except Exception as exc:  # some classes build only from a real config (recorded, not guessed)
        return {"config": saved, "error": f"{type(exc).__name__}: {exc}"}


def main() -> int:
    warnings.filterwarnings("ignore")
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_lens": list(SEQ_LENS), "models": {}, "defaults": {}}
    for name, config in CASES.items():
        try:
            results["models"][name] = measure(config)
        except Exception as exc:  # record, so the test knows which models were not measured
            results["models"][name] = {"config": config, "error": f"{type(exc).__name__}: {exc}"}
            print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        results["defaults"][config["model_type"]] = class_defaults(config["model_type"])
    (HERE / "forward_families.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
