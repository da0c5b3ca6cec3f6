"""Measure the forward FLOPs and parameters of tiny shared-block language models (Zamba, HRM-Text) with torch.

Each tiny config below keeps its family's structure at small, odd widths. One real forward pass of
the transformers implementation runs on the CPU (eager attention, no kernel package installed, so
the Mamba selective scan runs its sequential torch loop and the causal conv F.conv1d), under torch's
FlopCounterMode, at two sequence lengths. Recorded per model: the total, the counted FLOPs of every
module (inclusive of its children), the parameters of every module (``sum(p.numel())``, recursive:
a shared block appears under every layer that runs it) and of the whole model (``parameter_total``,
every tensor once); and per model type the parameters of the config class at its own defaults, built
on the meta device. The result, forward_ssm2.json, is an oracle independent of flopsreg:
tests/hf/test_ssm2_forward.py compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_ssm2.py
Naming models measures only those and adds them to the existing record.
"""

from __future__ import annotations

import sys
from pathlib import Path

import measure_recurrent  # the same measurement, of this script's configs

HERE = Path(__file__).parent
RECORD = HERE / "forward_ssm2.json"

TOKENS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}  # inside the tiny vocabulary
ZAMBA = {**TOKENS, "vocab_size": 131, "hidden_size": 40, "intermediate_size": 72, "num_hidden_layers": 7,
         "num_attention_heads": 5, "num_key_value_heads": 5, "n_mamba_heads": 2, "mamba_d_state": 5, "mamba_d_conv": 3,
         "mamba_expand": 2, "mamba_dt_rank": "auto", "attn_layer_period": 3, "attn_layer_offset": 1,
         "max_position_embeddings": 256}

CONFIGS = {
    # layers_block_type from the class rule: hybrid on layers 2 and 4, both running the one shared block
    "zamba-tiny": {"model_type": "zamba", **ZAMBA},
    "zamba-gqa-untied-tiny": {
        "model_type": "zamba", **ZAMBA, "num_attention_heads": 4, "num_key_value_heads": 2, "attention_head_dim": 12,
        "mamba_dt_rank": 7, "tie_word_embeddings": False,
        "layers_block_type": ["hybrid", "mamba", "hybrid", "hybrid", "mamba", "mamba", "hybrid"],
    },
    # num_hidden_layers is the layers of ONE stack when num_layers_per_stack is absent (__post_init__)
    "hrm-text-tiny": {
        "model_type": "hrm_text", **TOKENS, "vocab_size": 131, "hidden_size": 40, "intermediate_size": 72,
        "num_hidden_layers": 2, "num_attention_heads": 5, "head_dim": 12, "H_cycles": 2, "L_cycles": 3,
        "max_position_embeddings": 256,
    },
    "hrm-text-tied-bias-tiny": {
        "model_type": "hrm_text", **TOKENS, "vocab_size": 131, "hidden_size": 40, "intermediate_size": 56,
        "num_hidden_layers": 40, "num_layers_per_stack": 3, "num_attention_heads": 4, "head_dim": 10, "H_cycles": 3,
        "L_cycles": 1, "mlp_bias": True, "tie_word_embeddings": True, "max_position_embeddings": 256,
    },
}
DEFAULT_TYPES = ("zamba", "hrm_text")


def main(names: list[str]) -> int:
    return measure_recurrent.main(names, CONFIGS, RECORD, DEFAULT_TYPES)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
