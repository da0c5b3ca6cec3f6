"""Measure tiny forward passes of the GPT-2 era families (GPT-2, GPT-J, GPT-NeoX, GPT-BigCode, ...),
and the parameters of every family's class-default config.

The same measurement as measure_families.py (whose ``measure`` and ``class_defaults`` it runs): each
tiny config below (odd widths: hidden 44 over 4 heads of 11, MLP 58 or 4 x 44, vocabulary 97) is
built by transformers 5.24 on the CPU with eager attention and run once at each of measure_families'
SEQ_LENS under torch's FlopCounterMode; recorded are the totals, every module's FLOPs, the (query,
key) pairs each eager attention call's mask lets through, ``sum(p.numel())`` and each module's own
parameters; per model type, the class-default config and its model's parameters on the meta device.
The result, forward_classic.json, is an oracle independent of flopsreg: tests/hf/test_classic_forward.py
compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_classic.py [name ...]
Naming cases measures only those and keeps the rest of the existing record.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import torch
import transformers
from measure_families import SEQ_LENS, class_defaults, measure

HERE = Path(__file__).parent
RECORD = HERE / "forward_classic.json"

GPT2 = {"n_embd": 44, "n_head": 4, "n_layer": 3, "n_positions": 128, "vocab_size": 97, "pad_token_id": 0}
LLAMA_KEYS = {"hidden_size": 44, "num_attention_heads": 4, "num_hidden_layers": 3, "max_position_embeddings": 128, "vocab_size": 97,
              "pad_token_id": 0, "intermediate_size": 58}

CASES: dict[str, dict] = {
    "gpt2": {"model_type": "gpt2", **GPT2, "n_inner": 58},
    "gpt2-4h": {"model_type": "gpt2", **GPT2, "n_inner": None, "tie_word_embeddings": False},
    "gpt-sw3": {"model_type": "gpt-sw3", **GPT2},
    "gptj": {"model_type": "gptj", **GPT2, "n_inner": 58, "rotary_dim": 6},
    "codegen": {"model_type": "codegen", **GPT2, "rotary_dim": 6, "n_ctx": 128},
    "gpt_neox": {"model_type": "gpt_neox", **LLAMA_KEYS, "rotary_pct": 0.5},
    "gpt_neox-sequential": {"model_type": "gpt_neox", **LLAMA_KEYS, "use_parallel_residual": False, "attention_bias": False},
    "gpt_bigcode": {"model_type": "gpt_bigcode", **GPT2, "n_inner": 58},
    "gpt_bigcode-mha": {"model_type": "gpt_bigcode", **GPT2, "multi_query": False},
    # hidden 48 over 4 heads of 12: the partial rotary of StableLM and Persimmon needs an even width.
    "stablelm": {"model_type": "stablelm", **LLAMA_KEYS, "hidden_size": 48, "num_key_value_heads": 2, "use_qkv_bias": True,
                 "qk_layernorm": True, "partial_rotary_factor": 0.5},
    "stablelm-parallel": {"model_type": "stablelm", **LLAMA_KEYS, "hidden_size": 48, "num_key_value_heads": 4, "use_parallel_residual": True, "tie_word_embeddings": True,
                          "partial_rotary_factor": 0.5},
    "persimmon": {"model_type": "persimmon", **LLAMA_KEYS, "hidden_size": 48, "partial_rotary_factor": 0.5},
    "biogpt": {"model_type": "biogpt", **LLAMA_KEYS},
    "xglm": {"model_type": "xglm", "d_model": 44, "attention_heads": 4, "num_layers": 3, "ffn_dim": 58, "vocab_size": 97,
             "max_position_embeddings": 128, "pad_token_id": 0},
    "ctrl": {"model_type": "ctrl", **GPT2, "dff": 58},
    "opt": {"model_type": "opt", **LLAMA_KEYS, "ffn_dim": 58, "word_embed_proj_dim": 44},
    "opt-no-bias-weightless": {"model_type": "opt", **LLAMA_KEYS, "ffn_dim": 58, "enable_bias": False, "layer_norm_elementwise_affine": False,
                               "tie_word_embeddings": False},
}


def main(names: list[str]) -> int:
    warnings.filterwarnings("ignore")
    unknown = [name for name in names if name not in CASES]
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)}; expected some of: {', '.join(CASES)}", file=sys.stderr)
        return 2
    results = json.loads(RECORD.read_text()) if names and RECORD.exists() else {"models": {}, "defaults": {}}
    results.update(torch=torch.__version__, transformers=transformers.__version__, seq_lens=list(SEQ_LENS))
    for name in names or CASES:
        config = CASES[name]
        try:
            results["models"][name] = measure(config)
        except Exception as exc:  # record, so the test knows which models were not measured
            results["models"][name] = {"config": config, "error": f"{type(exc).__name__}: {exc}"}
            print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        results["defaults"][config["model_type"]] = class_defaults(config["model_type"])
    RECORD.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
