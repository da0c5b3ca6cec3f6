"""Megatron-LM's MLP arguments: gated units, dense and MoE layers, shared experts.

``moe_layer_freq`` N makes 0-based layer i MoE iff i % N == 0 (every layer when unset), and
``moe_ffn_hidden_size`` falls back to ``ffn_hidden_size``, as in Megatron-LM.
"""

import attrs

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.moe import moe_mlp
from flopsreg.plugin import MegatronReader, hookimpl


def _gate_flags(args) -> set[str]:
    """``swiglu`` is SwiGLU; ``gated_linear_unit`` and ``quick_geglu`` are other gated units."""
    flags = {"swiglu", "gated"} if args.flag("swiglu") else set()
    if args.flag("gated_linear_unit") or args.flag("quick_geglu"):
        flags.add("gated")
    return flags


def read(args, decoder):
    """Gate flags, then which layers are MoE and the dense and MoE widths."""
    flags = set(decoder.flags) | _gate_flags(args)
    layers = len(decoder.mlps)
    ffn_hidden = args.int("ffn_hidden_size", " (set by validate_args)")
    kinds = {**decoder.mlp_kinds, "dense": dense_mlp(ffn_hidden)}
    if args.get("num_experts") is None:
        return attrs.evolve(decoder, flags=flags, mlps=["dense"] * layers, mlp_kinds=kinds)
    is_moe = args.layer_pattern("moe_layer_freq", layers, default_every=1)
    shared = args.get("moe_shared_expert_intermediate_size")
    kinds["moe"] = moe_mlp(
        experts=args.int("num_experts"),
        top_k=args.int("moe_router_topk"),
        width=args.get("moe_ffn_hidden_size") or ffn_hidden,  # Megatron's fallback
        shared=args.int("moe_shared_expert_intermediate_size") if shared else 0,
        gate=bool(args.flag("moe_shared_expert_gate")),
    )
    mlps = ["moe" if moe else "dense" for moe in is_moe]
    return attrs.evolve(decoder, flags=flags, mlps=mlps, mlp_kinds=kinds)


MLP = MegatronReader(
    name="mlp",
    arguments=(
        "ffn_hidden_size", "swiglu", "gated_linear_unit", "quick_geglu", "num_experts", "moe_layer_freq",
        "moe_router_topk", "moe_ffn_hidden_size", "moe_shared_expert_intermediate_size", "moe_shared_expert_gate",
    ),
    read=read,
    precedence=10,
    summary="ffn_hidden_size and the gated units; num_experts with moe_layer_freq, top-k, expert and shared widths",
)


@hookimpl
def flopsreg_register_megatron_readers():
    return [MLP]
