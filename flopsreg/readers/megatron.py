"""Megatron-LM arguments (the ``argparse`` namespace of a training run) as a flopsreg model.

Every rule follows Megatron-LM's own meaning of its arguments. The MLA arguments carry
default values in every Megatron run (``kv_lora_rank=32``, ...), so MLA is used only when
``multi_latent_attention`` is True: exactly the explicit-flag rule the slime bug broke.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flopsreg.errors import MAX_INT, ModelError
from flopsreg.readers.decoder import Decoder, build_model, dense_mlp, moe_mlp
from flopsreg.model import Model

__all__ = ["load_megatron_args", "window_keys"]

# Branches of Megatron-LM's FLOPs function for layers flopsreg has no patterns for yet.
_UNSUPPORTED = {
    "hybrid_layer_pattern": "hybrid Mamba/attention stacks",
    "hybrid_override_pattern": "hybrid Mamba/attention stacks",
    "experimental_attention_variant": "linear attention (Gated DeltaNet)",
    "moe_latent_size": "latent MoE",
}


def _get(args: Any, name: str, default: Any = None) -> Any:
    return getattr(args, name, default)


def _required_int(args: Any, name: str, why: str = "") -> int:
    value = _get(args, name)
    if value is None:
        raise ModelError(f"args.{name}: missing{why}")
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelError(f"args.{name} = {value!r}: expected an integer")
    if value > MAX_INT:
        raise ModelError(f"args.{name} = {value}: expected an integer <= 2^63 - 1 (a larger one is a typo)")
    return value


def window_keys(window_size: Any) -> int | None:
    """Keys a query sees for an inclusive flash-attention ``(left, right)`` window; None = infinite.

    >>> window_keys((127, 0)), window_keys((-1, 0)), window_keys(None)
    (128, None, None)
    """
    if window_size is None:
        return None
    if isinstance(window_size, str):  # as Megatron's --window-size parses it: "127,0" or "(127,0)"
        try:
            window_size = tuple(int(part) for part in window_size.strip("() ").split(","))
        except ValueError:
            raise ModelError(f"args.window_size = {window_size!r}: expected two integers, e.g. (127, 0)") from None
    if (
        not isinstance(window_size, Sequence)
        or len(window_size) != 2
        or any(type(v) is not int for v in window_size)
    ):
        raise ModelError(f"args.window_size = {window_size!r}: expected (left, right), e.g. (127, 0)")
    left, right = window_size
    if right not in (0, -1) and left != -1:
        raise ModelError(f"args.window_size = {window_size!r}: a causal decoder takes right = 0")
    if left == -1:
        return None
    if left < 0:
        raise ModelError(f"args.window_size = {window_size!r}: left must be >= 0 or -1 (infinite)")
    return left + 1  # keys q-left .. q: left earlier keys and the query itself


def _pattern(args: Any, name: str, layers: int, default_every: int | None) -> list[bool]:
    """A per-layer 0/1 pattern from an int frequency or an explicit list."""
    value = _get(args, name)
    if value is None:
        return [True] * layers if default_every is None else [i % default_every == 0 for i in range(layers)]
    if isinstance(value, bool):
        raise ModelError(f"args.{name} = {value!r}: expected an integer or a list of 0/1")
    if isinstance(value, int):
        if value < 1:
            raise ModelError(f"args.{name} = {value}: expected an integer >= 1")
        return [i % value == 0 for i in range(layers)]
    pattern = list(value)
    if len(pattern) != layers or any(v not in (0, 1) for v in pattern):
        raise ModelError(f"args.{name} = {value!r}: expected {layers} entries of 0 or 1 (one per layer)")
    return [bool(v) for v in pattern]


def _query_groups(args: Any, heads: int) -> tuple[dict[str, int], set[str]]:
    """``kv_heads`` as Megatron-LM runs them, and the flag and argument slime reads instead.

    Without ``group_query_attention`` Megatron-LM runs MHA (its FLOPs function even overwrites
    ``args.num_query_groups`` with the head count), but slime reads ``args.num_query_groups`` as
    given: its argparse default 1 on MHA runs. That value is kept for the slime convention only.
    """
    groups = _get(args, "num_query_groups")
    if _get(args, "group_query_attention"):
        return {"kv_heads": heads if groups is None else _required_int(args, "num_query_groups")}, set()
    raw = {} if groups is None else {"num_query_groups": _required_int(args, "num_query_groups")}
    return {"kv_heads": heads, **raw}, {"megatron_mha"}


def _vocabularies(args: Any) -> tuple[dict[str, int], set[str]]:
    """The output layer's rows (``vocab``: padded_vocab_size when given), and the sizes conventions read.

    Megatron-LM pads the vocabulary to a multiple of ``make_vocab_size_divisible_by`` x TP and
    its output layer computes every padded row, so that is what ``exact`` counts, as Megatron-LM
    does (``padded_vocab``). slime counts ``args.vocab_size`` (``unpadded_vocab``, flag
    ``vocab_padding``).
    """
    vocab = None if _get(args, "vocab_size") is None else _required_int(args, "vocab_size")
    padded = None if _get(args, "padded_vocab_size") is None else _required_int(args, "padded_vocab_size")
    if padded is None:
        if vocab is None:
            raise ModelError("args.vocab_size: missing (and no padded_vocab_size); the logits need a vocabulary")
        return {"vocab": vocab}, set()
    if vocab == padded:
        return {"vocab": padded, "padded_vocab": padded}, set()
    if vocab is not None and padded < vocab:
        raise ModelError(f"args.padded_vocab_size = {padded}: smaller than args.vocab_size = {vocab}")
    unpadded = {} if vocab is None else {"unpadded_vocab": vocab}
    return {"vocab": padded, "padded_vocab": padded, **unpadded}, {"vocab_padding"}


def load_megatron_args(args: Any, *, name: str = "megatron-model") -> Model:
    """A model from a Megatron-LM argument namespace (after ``validate_args``)."""
    for field, what in _UNSUPPORTED.items():
        if _get(args, field):
            raise ModelError(
                f"args.{field} = {_get(args, field)!r}: {what} is not supported yet; it comes with the 2026 "
                "architectures (Gated DeltaNet, Mamba hybrids, latent MoE), until then this run is refused"
            )
    hidden = _required_int(args, "hidden_size")
    layers = _required_int(args, "num_layers")
    heads = _required_int(args, "num_attention_heads")
    params: dict[str, int] = {"hidden": hidden, "heads": heads}
    flags = {"lm_head"}

    if _get(args, "multi_latent_attention"):
        if _get(args, "group_query_attention"):
            raise ModelError("args.group_query_attention = True: Megatron-LM does not combine it with multi_latent_attention")
        flags.add("mla")
        for arg, param in (
            ("kv_lora_rank", "kv_lora_rank"),
            ("qk_head_dim", "qk_nope_head_dim"),
            ("qk_pos_emb_head_dim", "qk_rope_head_dim"),
            ("v_head_dim", "v_head_dim"),
        ):
            params[param] = _required_int(args, arg, " (needed with multi_latent_attention)")
        if _get(args, "q_lora_rank") is not None:
            flags.add("q_lora")
            params["q_lora_rank"] = _required_int(args, "q_lora_rank")
    else:
        kv_channels = _get(args, "kv_channels")
        params["head_dim"] = hidden // heads if kv_channels is None else _required_int(args, "kv_channels")
        groups, group_flags = _query_groups(args, heads)
        params.update(groups)
        flags |= group_flags

    if _get(args, "attention_output_gate"):
        flags.add("output_gate")
    if _get(args, "swiglu"):
        flags |= {"swiglu", "gated"}
    if _get(args, "gated_linear_unit") or _get(args, "quick_geglu"):
        flags.add("gated")

    vocab, vocab_flags = _vocabularies(args)
    params.update(vocab)
    flags |= vocab_flags

    ffn_hidden = _required_int(args, "ffn_hidden_size", " (set by validate_args)")
    mlp_kinds = {"dense": dense_mlp(ffn_hidden)}
    if _get(args, "num_experts") is None:
        is_moe = [False] * layers
    else:
        is_moe = _pattern(args, "moe_layer_freq", layers, default_every=1)
        shared = _get(args, "moe_shared_expert_intermediate_size")
        mlp_kinds["moe"] = moe_mlp(
            experts=_required_int(args, "num_experts"),
            top_k=_required_int(args, "moe_router_topk"),
            width=_get(args, "moe_ffn_hidden_size") or ffn_hidden,  # Megatron's fallback
            shared=_required_int(args, "moe_shared_expert_intermediate_size") if shared else 0,
            gate=bool(_get(args, "moe_shared_expert_gate")),
        )

    keys = window_keys(_get(args, "window_size"))
    skip = _get(args, "window_attn_skip_freq")
    if keys is None:
        slides = [False] * layers
    elif isinstance(skip, int) and not isinstance(skip, bool):
        if skip < 1:
            raise ModelError(f"args.window_attn_skip_freq = {skip}: expected an integer >= 1 or a list of 0/1")
        slides = [(i + 1) % skip != 0 for i in range(layers)]  # 1-based layer l slides iff l % N != 0
    else:
        slides = _pattern(args, "window_attn_skip_freq", layers, default_every=None)

    decoder = Decoder(
        params=params,
        flags=flags,
        masks=["sliding" if slide else "full" for slide in slides],
        mlps=["moe" if moe else "dense" for moe in is_moe],
        mask_params={"sliding": {"window": keys}} if keys else {},
        mlp_kinds=mlp_kinds,
    )
    return build_model(decoder, name=name, source="Megatron-LM arguments", blocks={"mtp": _get(args, "mtp_num_layers") or 0})
