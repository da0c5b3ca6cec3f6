"""Measure tiny forward passes of configs that carry ``num_key_value_heads`` / ``head_dim`` where
transformers 5.24 reads neither (or reads ``head_dim`` under another name), for issue 21's audit of
the Hugging Face readers (docs/hf-configs.md, "Fields a family does not read"), and configs
without ``head_dim`` whose config class has a default for it (Gemma 4).

Each case is a config of another record (forward_classic.json, forward_r5classic.json,
forward_fam1.json) with the misleading fields added: 2 key/value heads for 4 query heads and a
head width of hidden / heads + 2 that the family's attention does not read (it runs multi-head at
hidden / heads); where its rotary embedding reads ``head_dim`` (``getattr(config, "head_dim", None)
or hidden // heads``) such a width cannot run, and only num_key_value_heads is added. The same
measurement as measure_families.py (imported from it); the result, forward_heads5.json, is an
oracle independent of flopsreg: tests/hf/test_heads5_forward.py compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_heads5.py
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import torch
import transformers
from measure_families import SEQ_LENS, measure

HERE = Path(__file__).parent
RECORD = HERE / "forward_heads5.json"
# The recorded configs the cases start from: record file -> its cases used here.
BASES = {
    "forward_classic.json": ("gpt2", "gpt-sw3", "gptj", "codegen", "gpt_neox", "gpt_bigcode", "gpt_bigcode-mha", "biogpt",
                             "xglm", "ctrl", "opt"),
    "forward_r5classic.json": ("openai-gpt", "bloom", "gpt_neo", "gpt_neox_japanese", "modernbert-decoder", "mpt"),
}
# Their rotary embeddings read head_dim (a width other than hidden / heads cannot run): key/value heads only.
# (StableLM reads num_key_value_heads and, in its rotary embedding alone, head_dim: no case runs.)
ROTARY_READS_HEAD_DIM = {"gpt_neox_japanese", "modernbert-decoder"}


def _hidden_heads(config: dict) -> tuple[int, int]:
    hidden = next(config[k] for k in ("hidden_size", "n_embd", "d_model") if k in config)
    heads = next(config[k] for k in ("num_attention_heads", "n_head", "num_heads", "attention_heads", "n_heads") if k in config)
    return hidden, heads


def _misleading(name: str, config: dict) -> dict:
    hidden, heads = _hidden_heads(config)
    extra = {"num_key_value_heads": heads // 2}
    if name not in ROTARY_READS_HEAD_DIM:
        extra["head_dim"] = hidden // heads + 2
    return {**config, **extra}


def cases() -> dict[str, dict]:
    """Each base config with the fields its family does not read, under ``<name>_heads_ignored``."""
    found = {}
    for record, names in BASES.items():
        models = json.loads((HERE / record).read_text())["models"]
        for name in names:
            found[f"{name}_heads_ignored"] = _misleading(name, models[name]["config"])
    # GLM-4.7-Flash's head_dim, which Glm4MoeLiteConfig's attribute_map stores as qk_rope_head_dim,
    # given in place of that key.
    lite = json.loads((HERE / "forward_fam1.json").read_text())["models"]["glm4_moe_lite"]["config"]
    found["glm4_moe_lite_head_dim_is_rope"] = {**{k: v for k, v in lite.items() if k != "qk_rope_head_dim"}, "head_dim": 8}
    # Gemma 4 without head_dim: Gemma4TextConfig's default 256, which its attention reads
    # (DeepSeek-V4's default, 512, is measured by measure_deepseek_v4.py).
    gemma4 = json.loads((HERE / "forward_attention2026.json").read_text())["models"]["gemma4_per_layer_config"]["config"]
    found["gemma4_text_head_dim_default"] = {k: v for k, v in gemma4.items() if k != "head_dim"}
    return found


def main() -> int:
    warnings.filterwarnings("ignore")
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_lens": list(SEQ_LENS), "models": {}}
    for name, config in cases().items():
        try:
            results["models"][name] = measure(config)
        except Exception as exc:  # record, so the test knows which models were not measured
            results["models"][name] = {"config": config, "error": f"{type(exc).__name__}: {exc}"}
            print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
    RECORD.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
