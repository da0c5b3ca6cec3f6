"""Megatron-LM's hybrid stacks: ``hybrid_layer_pattern``, one mixer or MLP per layer.

Each symbol of the pattern is one layer: ``M`` Mamba2, ``G`` Gated DeltaNet, ``*`` softmax
attention (no MLP), ``-`` a dense MLP (no attention), ``E`` a MoE MLP; ``|`` marks pipeline
stages. Each part after a ``/`` is one multi-token-prediction depth running that part's layers
(``"M*M*/*E/*E"``: two depths of an attention and a MoE layer). The pattern decides the layer
count (Megatron-LM ignores ``num_layers`` beside it) and, with a ``/``, the MTP depth.

Megatron-LM's Mamba mixer has ``mamba_num_heads`` heads of ``mamba_head_dim`` (without heads:
an inner width of 2 x hidden, ``expand=2`` in ``MambaMixer``), ``mamba_num_groups`` groups of
``mamba_state_dim`` states, and a 4-tap convolution (``d_conv=4``, no argument sets it).
Refused by name: ``+`` (MLA) and ``D`` (DeepSeek sparse attention) layers, Gated Delta Product
stacks (a ``--spec`` ending in ``gdp_stack_spec``), and windows or MLA on ``*`` layers.
"""

import attrs

from flopsreg.patterns._mixer_common import CONV_KERNEL
from flopsreg.patterns.gated_deltanet import FLAG as GATED_DELTANET
from flopsreg.patterns.layered_mtp import LAYERED_MTP, MTP_DEPTH
from flopsreg.patterns.mamba2 import FLAG as MAMBA2
from flopsreg.patterns.mamba2 import GROUPS, HEAD_DIM, HEADS, STATE
from flopsreg.patterns.norms import SINGLE_NORM
from flopsreg.patterns.token_mixers import NO_ATTENTION
from flopsreg.plugin import MegatronReader, ModelError, hookimpl

HYBRID = "megatron_hybrid"  # model flag: layers as Megatron-LM's hybrid stack builds them
OUTPUT_GATE = "output_gate"  # attention_output_gate, as the attention reader sets it
MAMBA_CONV = 4  # MambaMixer(d_conv=4): no Megatron-LM argument sets it

# Each layer symbol as an (attention, mlp) entry of the decoder description.
SYMBOLS = {
    "M": ("mamba", "only"),
    "G": ("gdn", "only"),
    "*": ("attention", "only"),
    "-": ("ffn", "dense"),
    "E": ("ffn", "moe"),
}
REFUSED = {
    "+": "MLA layers ('+'), which Megatron-LM's FLOPs function does not count",
    "D": "DeepSeek sparse attention layers ('D'), which Megatron-LM's FLOPs function does not count",
}
GDP_SPECS = ("gdp_stack_spec", "gated_delta_product_stack_spec")


def _pattern(args) -> str | None:
    """The pattern, from ``hybrid_layer_pattern`` or its deprecated ``hybrid_override_pattern``."""
    pattern, legacy = args.get("hybrid_layer_pattern"), args.get("hybrid_override_pattern")
    if pattern is not None and legacy is not None and pattern != legacy:
        raise ModelError(
            f"args.hybrid_override_pattern = {legacy!r}: conflicts with args.hybrid_layer_pattern = {pattern!r} "
            "(the deprecated name is forwarded to hybrid_layer_pattern; set one)"
        )
    pattern = legacy if pattern is None else pattern
    if pattern is not None and not isinstance(pattern, str):
        raise ModelError(f"args.hybrid_layer_pattern = {pattern!r}: expected a string such as 'M-M*-'")
    return pattern


def _layers(pattern: str, part: str, allow_pipe: bool) -> list[tuple[str, str]]:
    """The (attention, mlp) entries of one part of the pattern."""
    entries = []
    for symbol in part:
        if symbol in REFUSED:
            raise ModelError(f"args.hybrid_layer_pattern = {pattern!r}: {REFUSED[symbol]}, are not supported yet")
        if symbol == "|" and allow_pipe:
            continue
        if symbol not in SYMBOLS:
            raise ModelError(
                f"args.hybrid_layer_pattern = {pattern!r}: {symbol!r} is not a layer symbol; expected "
                f"{', '.join(SYMBOLS)} ('|' between pipeline stages, '/' before each MTP depth)"
            )
        entries.append(SYMBOLS[symbol])
    if not entries:
        raise ModelError(f"args.hybrid_layer_pattern = {pattern!r}: the {'decoder' if allow_pipe else 'MTP'} part has no layers")
    return entries


def _mamba(args, hidden: int) -> dict[str, int]:
    """The Mamba2 parameters Megatron-LM's ``MambaMixer`` builds from the arguments."""
    why = " (needed by the 'M' layers of hybrid_layer_pattern)"
    head_dim = args.int("mamba_head_dim", why)
    heads = args.optional_int("mamba_num_heads")
    if heads is None:  # MambaMixer: d_inner = expand x hidden with expand = 2, heads = d_inner / head_dim
        if 2 * hidden % head_dim:
            raise ModelError(
                f"args.mamba_head_dim = {head_dim}: must divide the inner width 2 x hidden_size = {2 * hidden} "
                "when args.mamba_num_heads is unset"
            )
        heads = 2 * hidden // head_dim
    return {
        HEADS.name: heads,
        HEAD_DIM.name: head_dim,
        STATE.name: args.int("mamba_state_dim", why),
        GROUPS.name: args.int("mamba_num_groups", why),
    }


def _check_stack(pattern: str, args, decoder) -> None:
    """Refuse what the hybrid stack would silently drop: GDP specs, windows and MLA on attention layers."""
    spec = args.get("spec")
    parts = [spec] if isinstance(spec, str) else list(spec or ())
    words = " ".join(str(part) for part in parts).replace("[", " ").replace("]", " ").replace(",", " ").split()
    if words and words[-1] in GDP_SPECS:
        raise ModelError(f"args.spec = {spec!r}: Gated Delta Product hybrid stacks are not supported yet")
    if "mla" in decoder.flags:
        raise ModelError(f"args.hybrid_layer_pattern = {pattern!r}: multi_latent_attention on '*' layers is not supported")
    if set(decoder.attention) != {"full"}:
        raise ModelError(
            f"args.hybrid_layer_pattern = {pattern!r}: sliding windows (args.window_size) on hybrid attention "
            "layers are not supported"
        )


def softmax_only_gate(decoder, kinds: dict, softmax: set[str]) -> tuple[frozenset[str], dict]:
    """Model flags without ``output_gate`` (``attention_output_gate``, a model-wide argument), which
    moves to the *softmax* attention kinds: a Mamba2 or Gated DeltaNet layer has no such gate."""
    if OUTPUT_GATE not in decoder.flags:
        return decoder.flags, kinds
    for name in softmax:
        flags, params = kinds[name]
        kinds[name] = (frozenset(flags) | {OUTPUT_GATE}, params)
    return decoder.flags - {OUTPUT_GATE}, kinds


def read(args, decoder):
    """The layers of the pattern, its MTP depths, and the Mamba2 parameters when it has 'M' layers."""
    pattern = _pattern(args)
    if pattern is None:
        return decoder
    _check_stack(pattern, args, decoder)
    main, *depths = pattern.split("/")
    layers = _layers(pattern, main, allow_pipe=True)
    if any(depth != depths[0] for depth in depths):
        raise ModelError(f"args.hybrid_layer_pattern = {pattern!r}: every MTP depth after '/' must repeat the same layers")
    mtp = _layers(pattern, depths[0], allow_pipe=False) if depths else []
    if decoder.blocks.get("mtp") and not depths:
        raise ModelError(
            f"args.mtp_num_layers = {decoder.blocks['mtp']}: a hybrid model's MTP layers are the parts of "
            f"args.hybrid_layer_pattern after '/', and {pattern!r} has none"
        )
    used = set(layers + mtp)
    if ("ffn", "moe") in used and "moe" not in decoder.mlp_kinds:
        raise ModelError(f"args.hybrid_layer_pattern = {pattern!r}: its 'E' layers need args.num_experts")
    params = dict(decoder.params)
    if ("mamba", "only") in used:
        params.update(_mamba(args, params["hidden"]))
    attention_kinds = {
        **decoder.attention_kinds,
        "attention": decoder.attention_kinds["full"],
        "mamba": (frozenset({MAMBA2}), {CONV_KERNEL.name: MAMBA_CONV}),  # a G layer's kernel may differ
        "gdn": (frozenset({GATED_DELTANET}), {}),  # its widths: the megatron_gdn reader
        "ffn": (frozenset({NO_ATTENTION}), {}),
    }
    model_flags, attention_kinds = softmax_only_gate(decoder, attention_kinds, {"attention"})
    flags = set(model_flags) | {HYBRID} | SINGLE_NORM.flags  # each hybrid layer has one norm, before its one module
    blocks, block_layers = dict(decoder.blocks), dict(decoder.block_layers)
    if mtp:  # the pattern's depth, as validate_args infers mtp_num_layers from it
        blocks["mtp"], block_layers["mtp"] = len(depths), tuple(mtp)
        params[MTP_DEPTH.name] = len(depths)
        flags.add(LAYERED_MTP)
    return attrs.evolve(
        decoder,
        params=params,
        flags=flags,
        attention=[attention for attention, _ in layers],
        mlps=[mlp for _, mlp in layers],
        attention_kinds=attention_kinds,
        mlp_kinds={**decoder.mlp_kinds, "only": (frozenset(), {})},
        blocks=blocks,
        block_layers=block_layers,
    )


HYBRID_STACK = MegatronReader(
    name="hybrid",
    arguments=(
        "hybrid_layer_pattern", "hybrid_override_pattern", "spec",
        "mamba_state_dim", "mamba_head_dim", "mamba_num_groups", "mamba_num_heads",
    ),
    read=read,
    precedence=20,  # after the attention, MLP, MTP and window readers (10), whose results it rearranges
    summary="hybrid_layer_pattern (M, G, *, -, E; '|'; MTP depths after '/') and the Mamba2 widths",
)


@hookimpl
def flopsreg_register_megatron_readers():
    return [HYBRID_STACK]

