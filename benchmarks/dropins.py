"""The drop-ins called the training-loop way (same arguments every step) against plain-Python
functions with the arithmetic of the functions they replace.

- Megatron-LM's ``num_floating_point_operations`` for a dense GQA SwiGLU model (Llama-3-8B),
  written here from its formula (docs/conventions.md): per-token linear terms times
  ``batch * seq_length``, plus causal attention folded to ``s^2/2``, times 3 for training,
  computed in float as Megatron-LM does;
- slime's ``calculate_fwd_flops`` for the same model, per sequence in the list.

- ``megatron_general``: the same count written the way Megatron-LM's function is organised
  (from docs/conventions.md's description, not its code): every argument read from the
  namespace on each call, with the branches for GQA, gated MLPs, MoE, MLA, MTP and packed
  statistics that a general function needs. This is the fair stand-in for the replaced function.

- ``slime_general``: slime's count organised the way anchors/docs describe its function: the
  layer split from the arguments, then per sequence a layer function reading the arguments with
  its MLA and MoE branches.

The references are checked equal to flopsreg (under the matching convention) first. Prints
microseconds per call and the ratios flopsreg / reference (target: at most 2).

    python benchmarks/dropins.py
"""

from __future__ import annotations

import timeit
from types import SimpleNamespace

from flopsreg.integrations.megatron import num_floating_point_operations
from flopsreg.integrations.slime import calculate_fwd_flops

ARGS = SimpleNamespace(
    hidden_size=4096, num_layers=32, num_attention_heads=32, group_query_attention=True, num_query_groups=8,
    kv_channels=128, ffn_hidden_size=14336, swiglu=True, multi_latent_attention=False, kv_lora_rank=32,
    qk_head_dim=128, qk_pos_emb_head_dim=64, v_head_dim=128, q_lora_rank=None, num_experts=None,
    vocab_size=128256, padded_vocab_size=128256, seq_length=4096, mtp_num_layers=None, window_size=None,
)


def megatron_reference(args: SimpleNamespace, batch_size: int) -> float:
    """Megatron-LM's arithmetic for a dense GQA (Swi)GLU decoder, in float as it computes it."""
    h, layers, heads, groups = args.hidden_size, args.num_layers, args.num_attention_heads, args.num_query_groups
    kv = args.kv_channels
    gated = 3 / 2 if args.swiglu else 1
    per_token = (
        6 * layers * (h * (heads * kv + 2 * groups * kv) + heads * kv * h)  # QKV and output projections
        + 6 * layers * 2 * h * args.ffn_hidden_size * gated  # MLP
        + 6 * h * args.padded_vocab_size  # logits
    )
    core = 6 * heads * kv * layers  # 2 (QK^T, AV) x 2 x 3 x s^2/2 per head dimension
    tokens = batch_size * args.seq_length
    return tokens * per_token + batch_size * args.seq_length**2 * core


def megatron_general(args: SimpleNamespace, batch_size: int, squares: float | None = None, tokens: float | None = None) -> float:
    """Megatron-LM's count as a general function: argument reads and branches on every call,
    the 2026 ones included (hybrid stacks, Gated DeltaNet, latent MoE: anchors.md 1.1-1.2)."""
    if getattr(args, "hybrid_layer_pattern", None) or getattr(args, "hybrid_override_pattern", None):
        raise NotImplementedError("hybrid_flops: not needed for this benchmark's model")
    if getattr(args, "experimental_attention_variant", None) is not None:
        raise NotImplementedError("linear attention layers: not needed for this benchmark's model")
    if getattr(args, "moe_latent_size", None) is not None:
        raise NotImplementedError("latent MoE: not needed for this benchmark's model")
    h = args.hidden_size
    layers = args.num_layers
    heads = args.num_attention_heads
    groups = args.num_query_groups if getattr(args, "group_query_attention", False) else heads
    kv = args.kv_channels if args.kv_channels is not None else h // heads
    if getattr(args, "swiglu", False):
        gate = 3
    else:
        gate = 2 if getattr(args, "gated_linear_unit", False) or getattr(args, "quick_geglu", False) else 2
    experts = getattr(args, "num_experts", None)
    if experts:
        ffn = args.moe_ffn_hidden_size * args.moe_router_topk + (getattr(args, "moe_shared_expert_intermediate_size", None) or 0)
    else:
        ffn = args.ffn_hidden_size
    if getattr(args, "multi_latent_attention", False):
        raise NotImplementedError("not needed for this benchmark's model")
    attention = h * (heads * kv + 2 * groups * kv) + heads * kv * h
    if getattr(args, "attention_output_gate", False):
        attention += h * heads * kv
    mtp = getattr(args, "mtp_num_layers", None) or 0
    per_token = 6 * ((layers + mtp) * (attention + gate * h * ffn) + (1 + mtp) * h * args.padded_vocab_size)
    if mtp:
        per_token += 6 * mtp * (3 * h + 2 * h * h)
    tokens = batch_size * args.seq_length if tokens is None else tokens
    squares = batch_size * args.seq_length**2 if squares is None else squares
    return tokens * per_token + squares * 6 * heads * kv * (layers + mtp)


def slime_reference(seqlens: list[int], args: SimpleNamespace) -> int:
    """slime's arithmetic for the same decoder: per sequence, linear terms plus causal s^2/2 attention."""
    h, layers, heads, groups = args.hidden_size, args.num_layers, args.num_attention_heads, args.num_query_groups
    kv = args.kv_channels
    per_token = (
        2 * layers * (h * (heads * kv + 2 * groups * kv) + heads * kv * h)
        + 2 * layers * 3 * h * args.ffn_hidden_size
        + 2 * h * args.padded_vocab_size
    )
    return sum(s * per_token + 2 * heads * kv * layers * s * s for s in seqlens)


def slime_general(seqlens: list[int], args: SimpleNamespace) -> int:
    """slime's count as a general function: the layer split, then per sequence a layer function with its branches."""
    layers = args.num_layers
    if getattr(args, "num_experts", None) is None:
        dense, moe = layers, 0
    else:
        frequency = getattr(args, "moe_layer_freq", 1)
        pattern = frequency if isinstance(frequency, list) else [int(i % frequency == 0) for i in range(layers)]
        moe = sum(1 for entry in pattern if entry > 0)
        dense = layers - moe
    total = 0
    for s in seqlens:
        total += dense * _slime_layer(s, args, args.ffn_hidden_size)
        if moe:
            routed = args.moe_router_topk * args.moe_ffn_hidden_size
            total += moe * _slime_layer(s, args, routed + (getattr(args, "moe_shared_expert_intermediate_size", None) or 0))
        total += 2 * s * args.hidden_size * args.vocab_size
    return total


def _slime_layer(s: int, args: SimpleNamespace, ffn: int) -> int:
    h, heads = args.hidden_size, args.num_attention_heads
    mla = getattr(args, "multi_latent_attention", False)
    if mla:
        raise NotImplementedError("not needed for this benchmark's model")
    q = 2 * s * h * heads * args.kv_channels
    kv = 4 * s * h * args.num_query_groups * args.kv_channels
    core = 2 * heads * s * s * args.kv_channels // 2 + heads * s * s * args.kv_channels
    return q + kv + core + 2 * s * h * h + 6 * s * h * ffn


def main() -> None:
    expected = megatron_reference(ARGS, 512)
    assert num_floating_point_operations(ARGS, 512, convention="megatron") == expected == megatron_general(ARGS, 512)
    seqlens = [1000, 3096]
    assert calculate_fwd_flops(seqlens, ARGS, convention="slime") == slime_reference(seqlens, ARGS) == slime_general(seqlens, ARGS)
    cases = [
        ("megatron num_floating_point_operations", lambda: num_floating_point_operations(ARGS, 512, convention="megatron"),
         lambda: megatron_reference(ARGS, 512)),
        ("megatron, against the general function", lambda: num_floating_point_operations(ARGS, 512, convention="megatron"),
         lambda: megatron_general(ARGS, 512)),
        ("slime calculate_fwd_flops", lambda: calculate_fwd_flops(seqlens, ARGS, convention="slime"),
         lambda: slime_reference(seqlens, ARGS)),
        ("slime, against the general function", lambda: calculate_fwd_flops(seqlens, ARGS, convention="slime"),
         lambda: slime_general(seqlens, ARGS)),
    ]
    for name, ours, reference in cases:
        number = 20_000
        times = {label: [] for label in ("flopsreg", "reference")}
        for _ in range(5):  # interleaved, best of five
            times["flopsreg"].append(timeit.timeit(ours, number=number) / number * 1e6)
            times["reference"].append(timeit.timeit(reference, number=number) / number * 1e6)
        a, b = min(times["flopsreg"]), min(times["reference"])
        print(f"{name}: flopsreg {a:.2f} us, plain Python {b:.2f} us, ratio {a / b:.2f} (target <= 2)")


if __name__ == "__main__":
    main()
