"""A drop-in for Megatron-Bridge's ``num_floating_point_operations(cfg, batch_size)``.

Replace ``from megatron.bridge.training.utils.flop_utils import num_floating_point_operations``
with ``from flopsreg.integrations.megatron_bridge import num_floating_point_operations``: same
arguments (the ``ConfigContainer``, whose ``cfg.model`` is the model provider, a Megatron-Core
``TransformerConfig``), training FLOPs of one global batch as an exact int.
``convention="megatron_bridge"`` reproduces Bridge's own number (Bridge computes it in floating
point, so it agrees to the last digit wherever Bridge's float is exact).

The provider's fields are read as Megatron-LM's arguments of the same meaning
(``num_moe_experts`` as ``num_experts``, ``num_query_groups`` unset as multi-head attention, an
integer ``window_size`` W as W keys) by the registry's Megatron-LM readers. Gemma 3 providers
slide the layers of ``interleaved_attn_pattern`` (local, global): that is the model counted, and
it carries the family flag ``hf_gemma3_text`` and its window model-wide, so that the
``megatron_bridge`` convention counts every layer as sliding, as Bridge's formula does.
Logits are over the rows that run (``vocab_size``, padded only with ``should_pad_vocab``); under
``megatron_bridge`` over ``calculate_padded_vocab_size(vocab_size, make_vocab_size_divisible_by,
tensor_model_parallel_size)``, the size Bridge's formula uses. Branches flopsreg has no rules for
(hybrid Mamba stacks, Gated DeltaNet, Kimi delta attention, DeepSeek sparse attention, latent
MoE, vision towers, Bridge's LoRA-on-SQuAD special case, a provider's own FLOPs method) are
refused with one line naming the field.
"""

from __future__ import annotations

import types
from typing import Any

import attrs

from flopsreg.declarations.pattern import EXACT
from flopsreg.declarations.readers import family_flag as family
from flopsreg.engine.compose import ModelSelection
from flopsreg.engine.evaluate import TRAINING_PASSES
from flopsreg.errors import ModelError
from flopsreg.integrations._shared import (
    attribute,
    default_registry,
    keep_selection,
    megatron_model,
    packed_forward,
    real_statistics,
    whole_number,
)
from flopsreg.model import as_int, shown
from flopsreg.patterns.sliding_window import WINDOW
from flopsreg.registry import Registry

__all__ = ["num_floating_point_operations"]

BRIDGE = "megatron_bridge"
# Provider fields of branches flopsreg does not count: refused when set (truthy).
UNSUPPORTED = (
    "hybrid_layer_pattern",
    "is_hybrid_model",
    "experimental_attention_variant",
    "kimi_kda_layers",
    "moe_latent_size",
    "vision_config",
    "_get_num_floating_point_operations",
    "_get_num_floating_point_operations_with_runtime_stats",
)
# Megatron-LM argument <- provider field, where the names differ.
RENAMED = {"num_experts": "num_moe_experts"}
SAME = (
    "hidden_size", "num_layers", "num_attention_heads", "num_query_groups", "kv_channels", "ffn_hidden_size",
    "gated_linear_unit", "moe_layer_freq", "moe_router_topk", "moe_ffn_hidden_size",
    "moe_shared_expert_intermediate_size", "moe_shared_expert_gate", "mtp_num_layers", "multi_latent_attention",
    "q_lora_rank", "kv_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim", "v_head_dim", "attention_output_gate",
    "window_attn_skip_freq", "seq_length",
)  # fmt: skip


def padded_vocab_size(model: Any) -> int:
    """Megatron's ``calculate_padded_vocab_size``: vocab_size rounded up to divisible-by x TP."""
    multiple = _field(model, "make_vocab_size_divisible_by") * _field(model, "tensor_model_parallel_size")
    return -(-_field(model, "vocab_size") // multiple) * multiple


def _field(model: Any, name: str) -> int:
    value = attribute(model, "cfg.model", name, " (a Megatron-Bridge model provider has it)")
    number = as_int(value)  # numpy integers too
    if number is None or number < 1:
        raise ModelError(f"cfg.model.{name} = {shown(value)}: expected an integer >= 1")
    return number


def megatron_arguments(model: Any, convention: str) -> dict[str, Any]:
    """The Megatron-LM arguments of a Bridge model provider, as the Megatron-LM readers read them."""
    for name in UNSUPPORTED:
        if getattr(model, name, None):
            raise ModelError(f"cfg.model.{name} = {shown(getattr(model, name))}: not counted by flopsreg yet")
    if "Gemma2" in type(model).__name__:
        raise ModelError(
            f"cfg.model: {type(model).__name__} slides odd layers by its layer spec, which the provider's "
            "fields do not say; read the model with Model.from_hf_config and evaluate it instead"
        )
    args = {name: getattr(model, name, None) for name in SAME}
    args |= {megatron: getattr(model, bridge, None) for megatron, bridge in RENAMED.items()}
    args["group_query_attention"] = args["num_query_groups"] is not None
    args["swiglu"] = bool(args["gated_linear_unit"]) and getattr(getattr(model, "activation_func", None), "__name__", "") == "silu"
    window = getattr(model, "window_size", None)
    args["window_size"] = (window - 1, 0) if type(window) is int else window  # an int is W keys (Gemma 3)
    pattern = getattr(model, "interleaved_attn_pattern", None)
    if pattern is not None and window is not None and args["window_attn_skip_freq"] is None:
        args["window_attn_skip_freq"] = _local_layers(pattern, _field(model, "num_layers"))
    vocab = _field(model, "vocab_size")
    padded = padded_vocab_size(model)
    args["vocab_size"] = vocab
    args["padded_vocab_size"] = padded if convention == BRIDGE or getattr(model, "should_pad_vocab", False) else vocab
    return args


def _local_layers(pattern: Any, layers: int) -> list[int]:
    """Gemma 3's (local, global) pattern or layer_types list as 1 for each sliding layer."""
    if pattern and isinstance(pattern[0], str):
        return [int(kind == "sliding_attention") for kind in pattern]
    local, every = int(pattern[0]), int(pattern[0]) + int(pattern[1])
    return [int(i % every < local) for i in range(layers)]


def bridge_plan(model: Any, registry: Registry, convention: str) -> ModelSelection:
    """The plan of a Bridge model provider under *convention*, kept while its fields keep their values."""
    args = megatron_arguments(model, convention)
    gemma3 = args["window_attn_skip_freq"] is not None and getattr(model, "interleaved_attn_pattern", None) is not None
    values = tuple((name, _frozen(value)) for name, value in sorted(args.items()))

    def build() -> ModelSelection:
        read = megatron_model(types.SimpleNamespace(**args), registry)
        if gemma3:  # Bridge's formula counts every layer as sliding, over this window
            read = attrs.evolve(
                read, flags=read.flags | {family("gemma3_text")}, params={**read.params, WINDOW.name: args["window_size"][0] + 1}
            )
        return registry.select(read, convention=convention)

    return keep_selection((registry, convention, values), build)


def _frozen(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_frozen(item) for item in value))
    return (type(value).__name__, value)


def num_floating_point_operations(
    cfg: Any,
    batch_size: int = 1,
    seqlen_sum: int | None = None,
    seqlen_squared_sum: int | None = None,
    num_vision_patches: int = 0,
    cross_seqlen_sum: int | None = None,
    cross_seqlen_product_sum: int | None = None,
    *,
    convention: str = EXACT,
    registry: Registry | None = None,
) -> int:
    """Training FLOPs (forward + backward) of one global batch of *batch_size* sequences.

    Without the statistics every sequence has ``cfg.model.seq_length`` tokens. With them, as
    Bridge's training loop passes them, token-linear terms use *seqlen_sum* and attention uses
    *seqlen_squared_sum*. Sequences of one length (``seqlen_squared_sum * batch_size ==
    seqlen_sum ** 2``, the dense path) are counted at that length; packed ones of different
    lengths only where no layer slides, since those two sums do not determine a window's pairs.
    """
    registry = registry or default_registry()
    if num_vision_patches or cross_seqlen_sum or cross_seqlen_product_sum:
        raise ModelError("num_vision_patches, cross_seqlen_sum, cross_seqlen_product_sum: not counted by flopsreg (no vision tower, no cross-attention); leave unset")
    if type(getattr(cfg, "peft", None)).__name__ == "LoRA":
        raise ModelError("cfg.peft: LoRA runs are counted by Bridge with frozen-weight factors flopsreg does not reproduce")
    if cfg is None:
        raise ModelError("cfg = None: expected Megatron-Bridge's ConfigContainer (its .model is the model provider)")
    provider = attribute(cfg, "cfg", "model", " (Megatron-Bridge's ConfigContainer has the model provider there)")
    if provider is None:
        raise ModelError("cfg.model = None: expected a Megatron-Bridge model provider (a TransformerConfig)")
    plan = bridge_plan(provider, registry, convention)
    batch_size = whole_number("batch_size", batch_size)
    if batch_size < 1:
        raise ModelError(f"batch_size = {batch_size}: expected an integer >= 1 (sequences per global batch)")
    seq_length = _field(provider, "seq_length")
    if seqlen_sum is None and seqlen_squared_sum is None:
        return TRAINING_PASSES * batch_size * plan.forward(seq_length)
    tokens = batch_size * seq_length if seqlen_sum is None else whole_number("seqlen_sum", seqlen_sum)
    if seqlen_squared_sum is None:  # Bridge's fallback: every sequence at the mean length
        if tokens * tokens % batch_size:
            raise ModelError(f"seqlen_sum = {tokens}: not a whole number of tokens per sequence; give seqlen_squared_sum too")
        squares = tokens * tokens // batch_size
    else:
        squares = whole_number("seqlen_squared_sum", seqlen_squared_sum)
    if real_statistics(tokens, squares) and tokens % batch_size == 0 and squares * batch_size == tokens * tokens:  # every sequence tokens / batch long
        return TRAINING_PASSES * batch_size * plan.forward(tokens // batch_size)
    return TRAINING_PASSES * packed_forward(plan, tokens, squares, ("seqlen_sum", "seqlen_squared_sum"))
