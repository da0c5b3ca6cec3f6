"""Measure the forward FLOPs and parameters of tiny recurrent and hybrid language models (Zamba2, RecurrentGemma, xLSTM) with torch.

Each tiny config below keeps its family's structure at small, odd widths. One real forward pass of
the transformers implementation runs on the CPU (eager attention, no kernel package installed, so
the Mamba2 chunk scan, the RG-LRU scan loop, the causal convs and
the mLSTM's native chunkwise and step kernels run their torch fallbacks), under torch's FlopCounterMode,
at two sequence lengths; recorded as measure_recurrent.py records (every module's FLOPs and
parameters, the whole model's parameters, each type's class defaults on the meta device). The
result, forward_r5rec.json, is an oracle independent of flopsreg: tests/hf/test_r5rec_forward.py
compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_r5rec.py
Naming models measures only those and adds them to the existing record.
"""

from __future__ import annotations

import sys
from pathlib import Path

import measure_recurrent  # the same measurement, of this script's configs

HERE = Path(__file__).parent
RECORD = HERE / "forward_r5rec.json"

TOKENS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}  # inside the tiny vocabulary
ZAMBA2 = {**TOKENS, "vocab_size": 131, "hidden_size": 40, "intermediate_size": 72, "num_hidden_layers": 7,
          "num_attention_heads": 5, "num_key_value_heads": 5, "n_mamba_heads": 5, "mamba_ngroups": 5,
          "mamba_d_state": 6, "mamba_d_conv": 3, "mamba_expand": 2, "chunk_size": 16, "adapter_rank": 7,
          "layers_block_type": ["mamba", "hybrid", "mamba", "hybrid", "mamba", "mamba", "hybrid"],
          "max_position_embeddings": 256}

CONFIGS = {
    # three hybrid layers over two shared blocks: block 0 runs at hybrid uses 0 and 2 (with an adapter
    # for each), block 1 at use 1; q, k and v adapters as well as the MLP's
    "zamba2-tiny": {"model_type": "zamba2", **ZAMBA2, "num_mem_blocks": 2, "use_shared_attention_adapter": True},
    # one shared block, GQA, RoPE in the shared attention, SiLU gate, groups of Mamba2 heads
    "zamba2-gqa-tiny": {
        "model_type": "zamba2", **ZAMBA2, "num_attention_heads": 4, "num_key_value_heads": 1, "n_mamba_heads": 8,
        "mamba_ngroups": 2, "hidden_act": "silu", "use_mem_rope": True, "adapter_rank": 5,
        "layers_block_type": ["hybrid", "linear_attention", "hybrid", "hybrid", "linear_attention", "linear_attention", "hybrid"],
    },
    # RG-LRU blocks of 5 heads x 9 channels (lru_width 45), a local attention layer every third
    # layer with a window of 16 keys below both lengths, GQA, the MLP's width intermediate_size / 2
    "recurrent-gemma-tiny": {
        "model_type": "recurrent_gemma", **TOKENS, "vocab_size": 131, "hidden_size": 40, "intermediate_size": 72,
        "num_hidden_layers": 5, "num_attention_heads": 5, "num_key_value_heads": 1, "lru_width": 45,
        "attention_window_size": 16, "conv1d_width": 3,
    },
    # lru_width null (hidden_size), attention biases, alternating blocks, an untied head
    "recurrent-gemma-bias-untied-tiny": {
        "model_type": "recurrent_gemma", **TOKENS, "vocab_size": 131, "hidden_size": 36, "intermediate_size": 58,
        "num_hidden_layers": 4, "num_attention_heads": 4, "lru_width": None, "attention_window_size": 24,
        "conv1d_width": 4, "attention_bias": True, "block_types": ["attention", "recurrent"], "tie_word_embeddings": False,
    },
    # mLSTM of 5 heads (q and k 5 x 4 = int(40 x 0.5), v 5 x 8 = int(40 x 1.0)), chunks of 16: at
    # 37 and 100 tokens the chunkwise kernel runs 2 and 6 chunks and the step kernel the 5 and 4 left
    "xlstm-tiny": {
        "model_type": "xlstm", **TOKENS, "vocab_size": 131, "hidden_size": 40, "num_hidden_layers": 2, "num_heads": 5,
        "qk_dim_factor": 0.5, "v_dim_factor": 1.0, "chunk_size": 16, "ffn_proj_factor": 2.667, "ffn_round_up_to_multiple_of": 16,
    },
    # pieces of 64 tokens (100 = 64 + 36: each piece chunked on its own), another head width and FFN
    # rounding, a tied head; q, k and v widths multiples of 64, as the cache of the pieces path needs
    "xlstm-pieces-tied-tiny": {
        "model_type": "xlstm", **TOKENS, "vocab_size": 131, "hidden_size": 128, "num_hidden_layers": 2, "num_heads": 4,
        "qk_dim_factor": 0.5, "v_dim_factor": 0.5, "chunk_size": 8, "ffn_proj_factor": 1.3, "ffn_round_up_to_multiple_of": 8,
        "max_inference_chunksize": 64, "tie_word_embeddings": True,
    },
}
DEFAULT_TYPES = ("zamba2", "recurrent_gemma", "xlstm")


def main(names: list[str]) -> int:
    return measure_recurrent.main(names, CONFIGS, RECORD, DEFAULT_TYPES)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
