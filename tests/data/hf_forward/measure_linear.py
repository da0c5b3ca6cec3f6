"""Measure the forward FLOPs and parameters of tiny linear-attention / SSM hybrids with torch.

Each tiny config below keeps its family's structure (layer pattern, mixer, MoE kind) at small
widths. One real forward pass of the transformers implementation runs on the CPU (eager
attention, eager experts, no kernel package installed, so every hub kernel runs its torch
fallback: torch_chunk_gated_delta_rule, chunk_kimi_delta_attention, the Mamba2 torch chunk scan, Mamba1's sequential scan,
the F.conv1d causal conv; MiniMax's lightning attention runs its own block loop), under torch's FlopCounterMode, at two
sequence lengths. Recorded per model: the total, the counted FLOPs of every module (inclusive of its children), and the
parameters of every module (``sum(p.numel())``, recursive) and of the whole model. The result,
forward_linear.json, is an oracle independent of flopsreg: tests/hf/test_linear_forward.py
compares flopsreg's counts of the same configs with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_linear.py
Naming models (``python tests/data/hf_forward/measure_linear.py minimax-tiny``) measures only those and adds
them to the existing record, leaving the entries recorded before untouched.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

HERE = Path(__file__).parent
SEQ_LENS = (37, 100)  # GDN and KDA pad to chunks of 64: one chunk, then two; Mamba2 chunks of 16

TOKENS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}  # inside the tiny vocabulary
GQA = {**TOKENS, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128, "max_position_embeddings": 256}
GDN = {"linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8, "linear_value_head_dim": 16, "linear_conv_kernel_dim": 4}
QWEN_MOE = {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48}
HYBRID_4 = ["linear_attention", "linear_attention", "linear_attention", "full_attention"]

CONFIGS = {
    "qwen3-next-tiny": {
        "model_type": "qwen3_next", **GQA, **GDN, **QWEN_MOE, "head_dim": 16, "num_hidden_layers": 4,
        "intermediate_size": 96, "layer_types": HYBRID_4, "decoder_sparse_step": 2, "mlp_only_layers": [],
    },
    "qwen3.5-tiny": {
        "model_type": "qwen3_5",
        "text_config": {"model_type": "qwen3_5_text", **GQA, **GDN, "head_dim": 16, "num_hidden_layers": 4, "intermediate_size": 96},
    },
    "qwen3.5-moe-tiny": {
        "model_type": "qwen3_5_moe",
        "text_config": {"model_type": "qwen3_5_moe_text", **GQA, **GDN, **QWEN_MOE, "head_dim": 16, "num_hidden_layers": 4,
                        "layer_types": ["linear_attention", "full_attention", "linear_attention", "full_attention"]},
    },
    "olmo-hybrid-tiny": {
        "model_type": "olmo_hybrid", **GQA, "num_hidden_layers": 4, "intermediate_size": 96, "linear_num_key_heads": 2,
    },
    "kimi-linear-tiny": {
        "model_type": "kimi_linear", **TOKENS, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 128, "num_hidden_layers": 5,
        "intermediate_size": 96, "moe_intermediate_size": 32, "num_experts": 4, "num_experts_per_token": 2,
        "num_shared_experts": 1, "kv_lora_rank": 16, "q_lora_rank": None, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8,
        "v_head_dim": 8, "first_k_dense_replace": 1, "max_position_embeddings": 256,
        "linear_attn_config": {"full_attn_layers": [4], "kda_layers": [1, 2, 3, 5], "head_dim": 16, "num_heads": 4,
                               "short_conv_kernel_size": 4},
    },
    "nemotron-h-tiny": {
        "model_type": "nemotron_h", **GQA, "head_dim": 16, "hybrid_override_pattern": "ME*-M",
        "intermediate_size": 96, "mamba_num_heads": 8, "mamba_head_dim": 16, "ssm_state_size": 8, "n_groups": 2,
        "conv_kernel": 4, "chunk_size": 16, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
        "moe_shared_expert_intermediate_size": 48,
    },
    "nemotron-h-latent-tiny": {
        "model_type": "nemotron_h", **GQA, "head_dim": 16, "layers_block_type": ["mamba", "moe", "attention", "moe"],
        "intermediate_size": 96, "mamba_num_heads": 8, "mamba_head_dim": 16, "ssm_state_size": 8, "n_groups": 2,
        "conv_kernel": 4, "chunk_size": 16, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
        "moe_shared_expert_intermediate_size": 48, "moe_latent_size": 24,
    },
    "granite-4.0-h-tiny": {
        "model_type": "granitemoehybrid", **GQA, "num_hidden_layers": 4, "intermediate_size": 32,
        "shared_intermediate_size": 48, "num_local_experts": 4, "num_experts_per_tok": 2,
        "layer_types": ["mamba", "mamba", "attention", "mamba"], "mamba_n_heads": 8, "mamba_n_groups": 1,
        "mamba_d_state": 8, "mamba_d_head": 16, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_chunk_size": 16,
    },
    "falcon-h1-tiny": {
        "model_type": "falcon_h1", **GQA, "num_hidden_layers": 3, "intermediate_size": 96, "mamba_d_ssm": 128,
        "mamba_n_heads": 8, "mamba_d_head": "auto", "mamba_n_groups": 1, "mamba_d_state": 8, "mamba_d_conv": 4,
        "mamba_expand": 2, "mamba_chunk_size": 16, "mamba_rms_norm": False,
    },
    "jamba-tiny": {
        "model_type": "jamba", **GQA, "num_hidden_layers": 4, "intermediate_size": 96, "num_experts": 4,
        "num_experts_per_tok": 2, "attn_layer_period": 4, "attn_layer_offset": 2, "expert_layer_period": 2,
        "expert_layer_offset": 1, "mamba_d_state": 8, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": "auto",
        "use_mamba_kernels": False,
    },
    "lfm2-tiny": {
        "model_type": "lfm2", **GQA, "num_hidden_layers": 4, "intermediate_size": 96, "block_multiple_of": 32,
        "layer_types": ["conv", "conv", "full_attention", "conv"], "conv_L_cache": 3,
    },
    # Lightning blocks of 16: 37 = 16 + 16 + 5 and 100 = 6 x 16 + 4 tokens, the last block partial.
    "minimax-tiny": {
        "model_type": "minimax", **GQA, "head_dim": 16, "num_hidden_layers": 4, "intermediate_size": 32,
        "num_local_experts": 4, "num_experts_per_tok": 2, "block_size": 16,
        "layer_types": ["linear_attention", "linear_attention", "full_attention", "linear_attention"],
    },
}


def measure(config: dict, seq_len: int) -> dict:
    text = config.get("text_config", config)
    hf_config = transformers.AutoConfig.for_model(text["model_type"], **{k: v for k, v in text.items() if k != "model_type"})
    torch.manual_seed(0)
    # Eager experts loop over the experts tokens are routed to; the grouped kernels (the default)
    # are not counted by FlopCounterMode at all.
    model = transformers.AutoModelForCausalLM.from_config(
        hf_config, attn_implementation="eager", experts_implementation="eager"
    ).eval()
    ids = torch.randint(0, text["vocab_size"], (1, seq_len))
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(input_ids=ids, use_cache=False)
    modules = {name: int(sum(ops.values())) for name, ops in counter.get_flop_counts().items()}
    parameters = {name or "model": sum(p.numel() for p in module.parameters()) for name, module in model.named_modules()}
    return {"total": int(counter.get_total_flops()), "modules": modules, "parameters": parameters}


def main(names: list[str]) -> int:
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_lens": list(SEQ_LENS), "models": {}}
    if names:  # add to the record made with the same versions
        results = json.loads((HERE / "forward_linear.json").read_text())
        assert (results["torch"], results["transformers"]) == (torch.__version__, transformers.__version__), "other versions"
    for name, config in CONFIGS.items():
        if names and name not in names:
            continue
        try:
            runs = {str(n): measure(config, n) for n in SEQ_LENS}
        except Exception as exc:  # record, so the test knows which models were not measured
            results["models"][name] = {"config": config, "error": f"{type(exc).__name__}: {exc}"}
            print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        parameters = runs[str(SEQ_LENS[0])].pop("parameters")
        for run in runs.values():
            run.pop("parameters", None)
        results["models"][name] = {"config": config, "flops": runs, "parameters": parameters}
    (HERE / "forward_linear.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
