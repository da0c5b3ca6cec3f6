"""Measure tiny forward passes of the GPT-2 era families read in issue 21's last batch (OpenAI GPT,
GPT-Neo, BLOOM, MPT, Falcon in its four attention layouts, GPT-NeoX-Japanese, ModernBERT-decoder),
and the parameters of every family's class-default config.

The same measurement as measure_families.py (whose ``measure`` and ``class_defaults`` it runs): each
tiny config below (odd widths: hidden 44 over 4 heads of 11, or 48 over 4 of 12 where rotary needs
an even head; MLP 58 where the class has a width key) is built by transformers 5.24 on the CPU with
eager attention and run once at each of measure_families' SEQ_LENS under torch's FlopCounterMode.
GPT-Neo's attention is not ``eager_attention_forward``: the (query, key) pairs each layer lets
through are read from its own mask buffer (``GPTNeoSelfAttention.bias``, the local layers' window
cut in) at the longer length. The result, forward_r5classic.json, is an oracle independent of
flopsreg: tests/hf/test_r5classic_forward.py compares flopsreg with it.

Needs torch and transformers (not flopsreg dependencies):
    pip install torch==2.13.0 transformers==5.24.0 && python tests/data/hf_forward/measure_r5classic.py
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
RECORD = HERE / "forward_r5classic.json"

GPT2 = {"n_embd": 44, "n_head": 4, "n_layer": 3, "n_positions": 128, "vocab_size": 97, "pad_token_id": 0}
NEO = {"hidden_size": 44, "num_heads": 4, "num_layers": 3, "max_position_embeddings": 128, "vocab_size": 97, "pad_token_id": 0}
FALCON = {"hidden_size": 48, "num_attention_heads": 4, "num_hidden_layers": 3, "vocab_size": 97, "pad_token_id": 0}

CASES: dict[str, dict] = {
    "openai-gpt": {"model_type": "openai-gpt", **GPT2},
    "openai-gpt-untied": {"model_type": "openai-gpt", **GPT2, "afn": "relu", "tie_word_embeddings": False},
    # layers global, local, local; a window of 5 keys, shorter than both lengths.
    "gpt_neo": {"model_type": "gpt_neo", **NEO, "intermediate_size": 58, "window_size": 5,
                "attention_types": [[["global", "local"], 1], [["local"], 1]]},
    "gpt_neo-4h-untied": {"model_type": "gpt_neo", **NEO, "window_size": 30, "attention_types": [[["local", "global", "local"], 1]],
                          "tie_word_embeddings": False},
    "bloom": {"model_type": "bloom", "hidden_size": 44, "n_head": 4, "n_layer": 3, "vocab_size": 97, "pad_token_id": 0},
    "bloom-untied": {"model_type": "bloom", "hidden_size": 44, "n_head": 4, "n_layer": 3, "vocab_size": 97, "pad_token_id": 0,
                     "tie_word_embeddings": False},
    "mpt": {"model_type": "mpt", "d_model": 44, "n_heads": 4, "n_layers": 3, "max_seq_len": 128, "vocab_size": 97, "pad_token_id": 0},
    # Falcon-7B's layout: multi-query, parallel attention and MLP on one LayerNorm, rotary, no biases.
    "falcon": {"model_type": "falcon", **FALCON},
    # Falcon-40B's: grouped key/value heads, ln_attn and ln_mlp, an MLP of ffn_hidden_size, biases.
    "falcon-new": {"model_type": "falcon", **FALCON, "new_decoder_architecture": True, "num_kv_heads": 2, "ffn_hidden_size": 58, "bias": True},
    "falcon-new-one-ln": {"model_type": "falcon", **FALCON, "new_decoder_architecture": True, "num_kv_heads": 2, "num_ln_in_parallel_attn": 1,
                          "tie_word_embeddings": False},
    # multi-head, sequential blocks (two LayerNorms), ALiBi, biases (the config still validates an even rotary head).
    "falcon-mha-sequential-alibi": {"model_type": "falcon", **FALCON, "multi_query": False, "parallel_attn": False,
                                    "alibi": True, "bias": True},
    "gpt_neox_japanese": {"model_type": "gpt_neox_japanese", "hidden_size": 48, "num_attention_heads": 4, "num_hidden_layers": 3,
                          "intermediate_multiple_size": 3, "vocab_size": 97, "max_position_embeddings": 128, "pad_token_id": 0},
    # layers full, sliding, sliding, full, sliding (global_attn_every_n_layers 3); local_attention 10: a window of 5 keys.
    "modernbert-decoder": {"model_type": "modernbert-decoder", "hidden_size": 48, "num_attention_heads": 4, "num_hidden_layers": 5,
                           "intermediate_size": 58, "local_attention": 10, "vocab_size": 97, "pad_token_id": 0, "bos_token_id": 1,
                           "eos_token_id": 2, "cls_token_id": 1, "sep_token_id": 2},
    # every bias, LayerNorms with biases, an untied head; layers given as a list (layer 0 sliding).
    "modernbert-decoder-biased": {"model_type": "modernbert-decoder", "hidden_size": 48, "num_attention_heads": 4, "num_hidden_layers": 3,
                                  "intermediate_size": 58, "local_attention": 40, "vocab_size": 97, "pad_token_id": 0, "bos_token_id": 1,
                                  "eos_token_id": 2, "cls_token_id": 1, "sep_token_id": 2, "norm_bias": True, "attention_bias": True,
                                  "mlp_bias": True, "classifier_bias": True, "tie_word_embeddings": False,
                                  "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]},
}


def _neo_pairs(config: dict) -> list[int]:
    """The pairs each GPT-Neo layer's own mask buffer lets through at the longer length."""
    hf_config = transformers.AutoConfig.for_model("gpt_neo", **{k: v for k, v in config.items() if k != "model_type"})
    model = transformers.AutoModelForCausalLM.from_config(hf_config, attn_implementation="eager")
    s = SEQ_LENS[-1]
    return [int(block.attn.attention.bias[0, 0, :s, :s].sum()) for block in model.transformer.h]


def main() -> int:
    warnings.filterwarnings("ignore")
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "seq_lens": list(SEQ_LENS), "models": {}, "defaults": {}}
    for name, config in CASES.items():
        try:
            results["models"][name] = measure(config)
            if config["model_type"] == "gpt_neo":
                results["models"][name]["pairs"] = _neo_pairs(config)
        except Exception as exc:  # record, so the test knows which models were not measured
            results["models"][name] = {"config": config, "error": f"{type(exc).__name__}: {exc}"}
            print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        results["defaults"][config["model_type"]] = class_defaults(config["model_type"])
    RECORD.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
