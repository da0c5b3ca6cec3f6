"""Megatron-LM's Gated DeltaNet: ``experimental_attention_variant`` gdn / gdn2 and the ``linear_*`` widths.

In a GPT stack ``linear_attention_freq`` N makes 0-based layer i a Gated DeltaNet layer iff
(i + 1) % N != 0 (every N-th layer keeps softmax attention); a list marks them with 1, one entry
per layer. In a hybrid stack the ``G`` symbols of ``hybrid_layer_pattern`` are its layers and
``linear_attention_freq`` is unused. The widths (``linear_num_key_heads``,
``linear_num_value_heads``, ``linear_key_head_dim``, ``linear_value_head_dim``,
``linear_conv_kernel_dim``) are required: Megatron-LM's config defaults (16, 32, 128, 128, 4)
are what its model then runs, so an argument namespace without them is refused, not filled in.

An MTP layer runs the last decoder layer's mixer, but Megatron-LM's FLOPs function classifies MTP
depth j as layer num_layers + j of ``linear_attention_freq``: where that makes it a Gated DeltaNet
layer behind a softmax-attention last layer (Qwen3-Next's 48 layers with N = 4), the MTP kind
carries the flag ``megatron_counts_gdn`` for the ``megatron`` convention; where it makes it a
softmax layer behind a Gated DeltaNet last layer, ``megatron_counts_attention``. Depths counted
differently are listed one by one (the block has depth 1 and one layer per depth). ``gdn2`` (channel-wise
erase and write gates) adds the flag ``gated_deltanet2``; ``dsa`` is refused by name.
"""

import attrs

from flopsreg.patterns._mixer_common import CONV_KERNEL
from flopsreg.patterns.gated_deltanet import FLAG, KEY_DIM, KEY_HEADS, VALUE_DIM, VALUE_HEADS
from flopsreg.patterns.gated_deltanet2 import FLAG as GDN2
from flopsreg.patterns.megatron.hybrid import HYBRID, OUTPUT_GATE, softmax_only_gate
from flopsreg.plugin import MegatronReader, ModelError, hookimpl

COUNTS_GDN = "megatron_counts_gdn"  # kind flag: Megatron-LM's FLOPs function counts this softmax layer as GDN
COUNTS_ATTENTION = "megatron_counts_attention"  # kind flag: ... counts this GDN layer as softmax attention
ALIASES = {"gated_delta_net": "gdn"}  # Megatron-LM's deprecated spelling
REFUSED = {"dsa": "DeepSeek sparse attention from Megatron-LM arguments is not supported yet"}
WIDTHS = {
    "linear_num_key_heads": KEY_HEADS.name,
    "linear_num_value_heads": VALUE_HEADS.name,
    "linear_key_head_dim": KEY_DIM.name,
    "linear_value_head_dim": VALUE_DIM.name,
}


def _variant(args) -> str | None:
    """``gdn``, ``gdn2`` or None; ``dsa`` refused by name."""
    value = args.get("experimental_attention_variant")
    variant = ALIASES.get(value, value)
    if variant in REFUSED:
        raise ModelError(f"args.experimental_attention_variant = {value!r}: {REFUSED[variant]}")
    if variant not in (None, "gdn", "gdn2"):
        raise ModelError(
            f"args.experimental_attention_variant = {value!r}: expected 'gdn' (or 'gated_delta_net') or 'gdn2'"
        )
    return variant


def _flags(variant: str | None) -> frozenset[str]:
    """A Gated DeltaNet layer's flags: GDN-2's channel-wise gates with ``gdn2``."""
    return frozenset({FLAG, GDN2} if variant == "gdn2" else {FLAG})


def _widths(args) -> tuple[dict[str, int], int]:
    """The head counts and widths (model parameters) and the convolution kernel."""
    why = " (Gated DeltaNet layers need it; Megatron-LM's config default is what its model would run)"
    widths = {param: args.int(argument, why) for argument, param in WIDTHS.items()}
    for argument, param in WIDTHS.items():
        if widths[param] < 1:
            raise ModelError(f"args.{argument} = {widths[param]}: expected an integer >= 1")
    if widths[VALUE_HEADS.name] % widths[KEY_HEADS.name]:
        raise ModelError(
            f"args.linear_num_value_heads = {widths[VALUE_HEADS.name]}: must be a multiple of "
            f"args.linear_num_key_heads = {widths[KEY_HEADS.name]}"
        )
    kernel = args.int("linear_conv_kernel_dim", why)
    if kernel < 1:
        raise ModelError(f"args.linear_conv_kernel_dim = {kernel}: expected an integer >= 1")
    return widths, kernel


def _frequency(args, layers: int) -> tuple[list[bool], int | None]:
    """Which decoder layers are Gated DeltaNet, and the period N when given as an integer."""
    value = args.get("linear_attention_freq")
    if value is None:
        raise ModelError("args.linear_attention_freq: missing; experimental_attention_variant gdn needs the layer pattern")
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise ModelError(f"args.linear_attention_freq = {value}: expected an integer >= 1 or a list of 0/1")
        return [(i + 1) % value != 0 for i in range(layers)], value
    if isinstance(value, (list, tuple)) and len(value) == layers and all(v in (0, 1) and not isinstance(v, float) for v in value):
        return [bool(v) for v in value], None
    raise ModelError(f"args.linear_attention_freq = {value!r}: expected an integer or {layers} entries of 0 or 1 (one per layer)")


def _hybrid(args, decoder):
    """The widths of a hybrid stack's 'G' layers."""
    listed = [attention for entries in decoder.block_layers.values() for attention, _ in entries]
    if "gdn" not in [*decoder.attention, *listed]:
        return decoder
    flags = _flags(_variant(args))  # Megatron-LM's G layers are gdn unless the variant says gdn2
    widths, kernel = _widths(args)
    kinds = {**decoder.attention_kinds, "gdn": (flags, {CONV_KERNEL.name: kernel})}
    return attrs.evolve(decoder, params={**decoder.params, **widths}, attention_kinds=kinds)


def _mtp_layers(args, decoder, linear: list[bool], period: int | None, gdn: frozenset[str]) -> tuple[dict, dict, dict]:
    """The blocks, block layers and extra attention kinds of the MTP depths, each running the last
    decoder layer: a depth Megatron-LM counts as Gated DeltaNet behind a softmax last layer gets
    that layer's kind with the flag ``megatron_counts_gdn``; one it counts as softmax attention
    behind a Gated DeltaNet last layer gets the GDN kind with ``megatron_counts_attention``."""
    depth = decoder.blocks.get("mtp", 0)
    if not depth:
        return dict(decoder.blocks), dict(decoder.block_layers), {}
    if period is None:
        raise ModelError(
            f"args.linear_attention_freq = {args.get('linear_attention_freq')!r}: with args.mtp_num_layers = {depth}, "
            f"Megatron-LM's FLOPs function needs {len(linear) + depth} entries and its model {len(linear)}; give an integer"
        )
    counted = [(len(linear) + j + 1) % period != 0 for j in range(depth)]
    if set(counted) == {linear[-1]}:
        return dict(decoder.blocks), dict(decoder.block_layers), {}
    if "mla" in decoder.flags and not linear[-1]:
        raise ModelError(
            f"args.mtp_num_layers = {depth}: Megatron-LM counts these MTP depths as layers {len(linear)}.."
            f"{len(linear) + depth - 1} of args.linear_attention_freq = {period}, some as Gated DeltaNet, where the "
            "model runs MLA; flopsreg does not reproduce that"
        )
    last, mlp = decoder.attention[-1], decoder.mlps[-1]
    runs = "gdn" if linear[-1] else last
    flags, params = (gdn, {}) if linear[-1] else decoder.attention_kinds[last]
    if linear[-1]:  # counted as softmax attention, with the output gate where the softmax layers have one
        # (a Gated DeltaNet layer has no attention slots, so the gate counts only where the convention gives it them)
        name = "gdn_as_attention"
        counted_as = {COUNTS_ATTENTION} | ({OUTPUT_GATE} if OUTPUT_GATE in decoder.flags else set())
    else:
        name = f"{last}_as_gdn"
        counted_as = {COUNTS_GDN} | (gdn - {FLAG})  # and GDN-2's projection, where the variant is gdn2
    kinds = {name: (frozenset(flags) | counted_as, params)}
    entries = tuple((runs if same else name, mlp) for same in (c == linear[-1] for c in counted))
    if len(set(entries)) == 1:  # every depth alike: one layer per depth
        return dict(decoder.blocks), {**decoder.block_layers, "mtp": entries[:1]}, kinds
    return {**decoder.blocks, "mtp": 1}, {**decoder.block_layers, "mtp": entries}, kinds  # the depths listed once each


def read(args, decoder):
    """Gated DeltaNet on the layers ``linear_attention_freq`` (or a hybrid pattern's 'G') marks."""
    if HYBRID in decoder.flags:
        return _hybrid(args, decoder)
    variant = _variant(args)
    if variant is None:
        return decoder
    linear, period = _frequency(args, len(decoder.attention))
    widths, kernel = _widths(args)
    blocks, block_layers, mtp_kinds = _mtp_layers(args, decoder, linear, period, _flags(variant))
    kinds = {**decoder.attention_kinds, **mtp_kinds, "gdn": (_flags(variant), {})}
    attention = ["gdn" if gdn else kind for gdn, kind in zip(linear, decoder.attention)]
    flags, kinds = softmax_only_gate(decoder, kinds, {name for name in kinds if FLAG not in kinds[name][0]})
    return attrs.evolve(
        decoder,
        params={**decoder.params, **widths, CONV_KERNEL.name: kernel},
        flags=flags,
        attention=attention,
        attention_kinds=kinds,
        blocks=blocks,
        block_layers=block_layers,
    )


GATED_DELTANET = MegatronReader(
    name="gated_delta_net",
    arguments=(
        "experimental_attention_variant", "linear_attention_freq", "linear_conv_kernel_dim",
        *WIDTHS,
    ),
    read=read,
    precedence=30,  # after the hybrid reader (20), whose 'G' layers it gives their widths
    summary="experimental_attention_variant gdn on the layers linear_attention_freq (or a hybrid pattern's G) marks, "
    "with the linear_* widths",
)


@hookimpl
def flopsreg_register_megatron_readers():
    return [GATED_DELTANET]
