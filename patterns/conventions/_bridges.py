"""Megatron-Bridge's bridges as data: what each sets that its FLOPs formula reads.

Not a plugin (the leading underscore keeps it out of the built-in list): the table the
``megatron_bridge`` convention builds its per-family rules from. One entry per Hugging Face
``model_type`` flopsreg reads that a bridge at NVIDIA-NeMo/Megatron-Bridge 067f987d imports, each
cited to the line of ``src/megatron/bridge/models/`` that sets (or leaves) the field.
"""

from __future__ import annotations

import attrs

COMMIT = "067f987d"
BASE = "conversion/model_bridge.py:637"  # every bridge's divisor: make_vocab_size_divisible_by(vocab_size), line 1716


@attrs.frozen
class Bridge:
    """One bridge's settings that ``flop_utils.num_floating_point_operations`` reads.

    ``window``: it sets ``window_size``; False: it sets none, so sliding layers count as full
    causal; None: the model type has no sliding layers (nothing to set).
    ``every_layer_moe``: it leaves ``moe_layer_freq`` at 1, so dense layers count as MoE.
    ``vocab_divisor``: the ``make_vocab_size_divisible_by`` it sets, or None for the base
    class's largest power of 2 (at most 128) dividing ``vocab_size``: no padding at TP 1.
    ``mtp``: it sets ``mtp_num_layers`` from ``num_nextn_predict_layers`` (the model can have MTP depths).
    """

    source: str  # file:line under src/megatron/bridge/models/, the line that registers or sets it
    window: bool | None = None
    every_layer_moe: bool = False
    vocab_divisor: int | None = None
    mtp: bool = False


BRIDGES: dict[str, Bridge] = {
    "llama": Bridge("llama/llama_bridge.py:36"),
    "mistral": Bridge("mistral/mistral_bridge.py:58 (window [sliding_window - 1, 0]), :72 (divisor)", window=True),
    "qwen2": Bridge("qwen/qwen2_bridge.py:28 (no window_size; CONFIG_MAPPING has no sliding_window)", window=False),
    "qwen3": Bridge("qwen/qwen3_bridge.py:28 (no window_size; CONFIG_MAPPING has no sliding_window)", window=False),
    "qwen3_moe": Bridge(
        "qwen/qwen3_moe_bridge.py:28 (no window_size, no moe_layer_freq: training/utils/flop_utils.py:1017 reads 1)",
        window=False,
        every_layer_moe=True,
    ),
    "gemma2": Bridge("gemma/gemma2_bridge.py:55 (window_size (sliding_window - 1, 0))", window=True),
    "gemma3_text": Bridge("gemma/gemma3_bridge.py:66 (Gemma3ForCausalLM; window_size = sliding_window)", window=True),
    "gemma3": Bridge(
        "gemma_vl/gemma3_vl_bridge.py:72 (window_size), :81 (make_vocab_size_divisible_by = 128)", window=True, vocab_divisor=128
    ),
    "gpt_oss": Bridge("gpt_oss/gpt_oss_bridge.py:87-88 (window_size, window_attn_skip_freq = 2)", window=True),
    "deepseek_v2": Bridge(
        "deepseek/deepseek_v2_bridge.py:76 (make_vocab_size_divisible_by = 3200); conversion/model_bridge.py:497 (mtp_num_layers)",
        vocab_divisor=3200,
        mtp=True,
    ),
    "deepseek_v3": Bridge(
        "deepseek/deepseek_v3_bridge.py:90 (make_vocab_size_divisible_by = 1280), :97 (mtp_num_layers)",
        vocab_divisor=1280,
        mtp=True,
    ),
}
