"""Megatron-LM's hybrid stacks: ``hybrid_layer_pattern``, one mixer or MLP per layer.

Each symbol of the pattern is one layer: ``M`` Mamba2, ``G`` Gated DeltaNet, ``*`` softmax
attention (no MLP), ``-`` a dense MLP (no attention), ``E`` a MoE MLP; ``|`` marks pipeline
stages. Each part after a ``/`` is one multi-token-prediction depth running that part's layers
(``"M*M*/*E/*E"``: two depths of an attention and a MoE layer). The pattern decides the layer
count (Megatron-LM ignores ``num_layers`` beside it) and, with a ``/``, the MTP depth.

Megatron-LM's Mamba mixer has ``mamba_num_heads`` heads of ``mamba_head_dim`` (without heads:
an inner width of 2 x hidden, ``expand=2`` in ``MambaMixer``), ``mamba_num_groups`` groups of
``mamba_state_dim`` states, and a 4-tap convolution (``d_conv=4``, no argument sets it).
``+`` layers run MLA (``validate_args`` sets ``multi_latent_attention`` for them); Megatron-LM's
FLOPs function has no term for them, so their kind carries the flag ``megatron_uncounted_mixer``.
With ``multi_latent_attention`` and ``*`` layers (a pattern cannot mix ``*`` and ``+``), the ``*``
layers still run ``SelfAttention``: multi-head (``group_query_attention`` is off with MLA) with
``kv_channels`` per head. ``window_size`` slides the attention layers ``is_layer_window_attention``
marks by their 1-based place in the pattern (``|`` skipped); an MTP part's layers are numbered
from 1 within the part (``HybridStack(pp_layer_offset=0)`` in ``multi_token_prediction.py``).
A ``spec`` ending in ``gdp_stack_spec`` (or ``gated_delta_product_stack_spec``) makes the ``M``
layers Gated Delta Product mixers of ``gdp_num_householder`` steps on the Mamba widths
(``mamba_num_heads`` required, as ``GatedDeltaProductMixer`` asserts). ``D`` layers run MLA with
DeepSeek sparse attention: each has its own lightning indexer of ``dsa_indexer_n_heads`` heads of
``dsa_indexer_head_dim`` reading the query latent (the hidden state without ``q_lora_rank``,
``DSAIndexer.__init__``), and each query attends to ``min(i + 1, dsa_indexer_topk)`` keys
(``dsa.py``, ``topk_k = min(index_topk, sk)``); Megatron-LM's FLOPs function counts them as zero
(its ``itemgetter`` in ``num_floating_point_operations`` reads no ``D`` count), like ``+`` layers.
Cross-layer top-k sharing (``dsa_indexer_topk_freq`` above 1) is refused by name.
"""

import attrs

from flopsreg.patterns._mixer_common import CONV_KERNEL
from flopsreg.patterns.dsa_indexer import DSA_INDEXER, INDEX_HEAD_DIM, INDEX_HEADS
from flopsreg.patterns.dsa_topk import DSA_TOPK, INDEX_TOPK
from flopsreg.patterns.gated_delta_product import FLAG as GDP
from flopsreg.patterns.gated_delta_product import HOUSEHOLDER
from flopsreg.patterns.gated_deltanet import FLAG as GATED_DELTANET
from flopsreg.patterns.layered_mtp import LAYERED_MTP, MTP_DEPTH
from flopsreg.patterns.low_rank_query import Q_LORA_RANK
from flopsreg.patterns.mamba2 import FLAG as MAMBA2
from flopsreg.patterns.mamba2 import GROUPS, HEAD_DIM, HEADS, STATE
from flopsreg.patterns.megatron.attention import MLA_ARGUMENTS, MLA_HEAD_DIM
from flopsreg.patterns.norms import SINGLE_NORM
from flopsreg.patterns.token_mixers import NO_ATTENTION
from flopsreg.plugin import MegatronReader, ModelError, hookimpl

HYBRID = "megatron_hybrid"  # model flag: layers as Megatron-LM's hybrid stack builds them
OUTPUT_GATE = "output_gate"  # attention_output_gate, as the attention reader sets it
MAMBA_CONV = 4  # MambaMixer(d_conv=4): no Megatron-LM argument sets it
UNCOUNTED = "megatron_uncounted_mixer"  # kind flag: Megatron-LM's hybrid_flops has no term for this layer's mixer
MLA_PARAMS = ("q_lora_rank", *MLA_ARGUMENTS.values())

# Each layer symbol as an (attention, mlp) entry of the decoder description.
SYMBOLS = {
    "M": ("mamba", "only"),
    "G": ("gdn", "only"),
    "*": ("attention", "only"),
    "+": ("mla", "only"),
    "D": ("dsa", "only"),
    "-": ("ffn", "dense"),
    "E": ("ffn", "moe"),
}
DSA_ARGUMENTS = ("dsa_indexer_n_heads", "dsa_indexer_head_dim", "dsa_indexer_topk")  # TransformerConfig fields
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


def _gdp(args) -> int | None:
    """Householder steps when the stack spec swaps the 'M' layers to Gated Delta Product, else None:
    a ``spec`` whose last word is ``gdp_stack_spec`` (``_uses_gated_delta_product_spec``)."""
    spec = args.get("spec")
    parts = [spec] if isinstance(spec, str) else list(spec or ())
    words = " ".join(str(part) for part in parts).replace("[", " ").replace("]", " ").replace(",", " ").split()
    if not words or words[-1] not in GDP_SPECS:
        return None
    steps = args.int("gdp_num_householder", " (the Householder steps of the Gated Delta Product layers args.spec selects)")
    if steps < 1:
        raise ModelError(f"args.gdp_num_householder = {steps}: expected an integer >= 1")
    return steps


def _mamba_kind(args, hidden: int) -> tuple[tuple[frozenset[str], dict], dict[str, int]]:
    """The kind of the 'M' layers (Mamba2, or Gated Delta Product under a GDP spec) and their widths."""
    widths = _mamba(args, hidden)
    steps = _gdp(args)
    if steps is None:
        return (frozenset({MAMBA2}), {CONV_KERNEL.name: MAMBA_CONV}), widths
    if args.optional_int("mamba_num_heads") is None:
        raise ModelError(
            "args.mamba_num_heads: missing; GatedDeltaProductMixer asserts it is set (mamba_num_heads must be set "
            "for GatedDeltaProductMixer), so no model runs without it"
        )
    return (frozenset({GDP}), {CONV_KERNEL.name: MAMBA_CONV}), {**widths, HOUSEHOLDER.name: steps}


def _dsa(args, decoder, full) -> tuple[tuple[frozenset[str], dict], dict[str, int]]:
    """The kind of the 'D' layers (MLA whose queries attend to the indexer's top-k keys, each with its
    own indexer) and the indexer widths, from the ``dsa_indexer_*`` arguments ``DSAIndexer`` reads."""
    missing = [name for name in DSA_ARGUMENTS if args.get(name) is None]
    if missing:
        raise ModelError(f"args.{', args.'.join(missing)}: missing; the 'D' (DeepSeek sparse attention) layers of hybrid_layer_pattern need them")
    freq = args.get("dsa_indexer_topk_freq")
    if freq not in (None, 1):
        raise ModelError(f"args.dsa_indexer_topk_freq = {freq!r}: cross-layer top-k sharing (above 1) is not supported yet; expected 1")
    why = " (needed by the 'D' layers of hybrid_layer_pattern)"
    values = {name: args.int(name, why) for name in DSA_ARGUMENTS}
    for name, value in values.items():
        if value < 1:
            raise ModelError(f"args.{name} = {value}: expected an integer >= 1")
    # DSAIndexer: linear_wq_b reads the query latent, or the hidden state without q_lora_rank.
    rank = decoder.params.get(Q_LORA_RANK.name, decoder.params["hidden"])
    flags = frozenset(full[0]) | {UNCOUNTED} | DSA_TOPK.flags | DSA_INDEXER.flags
    kind = (flags, {**full[1], INDEX_TOPK.name: values["dsa_indexer_topk"], Q_LORA_RANK.name: rank})
    return kind, {INDEX_HEADS.name: values["dsa_indexer_n_heads"], INDEX_HEAD_DIM.name: values["dsa_indexer_head_dim"]}


def _attention(pattern: str, args, decoder, used: set) -> tuple[dict, frozenset[str], dict]:
    """The attention kinds of ``*``, ``+`` and ``D`` layers, the model flags and parameters they leave.

    ``+`` and ``D`` layers run MLA, which Megatron-LM does not count; with ``multi_latent_attention``
    the ``*`` layers run multi-head attention of ``kv_channels`` per head, so the MLA flags and
    parameters go."""
    mla = "mla" in decoder.flags
    full, kinds = decoder.attention_kinds["full"], {}
    sliding = decoder.attention_kinds.get("sliding")
    latent = {symbol for symbol, entry in (("+", ("mla", "only")), ("D", ("dsa", "only"))) if entry in used}
    if latent:
        if ("attention", "only") in used:
            raise ModelError(f"args.hybrid_layer_pattern = {pattern!r}: '*' and '{min(latent)}' layers in one model are not supported by Megatron-LM")
        if not mla:
            raise ModelError(
                f"args.hybrid_layer_pattern = {pattern!r}: its '{min(latent)}' layers are MLA, which needs args.multi_latent_attention "
                "and the MLA widths (validate_args sets it for them); give the arguments after validate_args"
            )
        for name, kind in {"mla": full, "mla_sliding": sliding}.items():
            if kind is not None:
                kinds[name] = (frozenset(kind[0]) | {UNCOUNTED}, kind[1])
        params = {name: value for name, value in decoder.params.items() if name != MLA_HEAD_DIM}
        if "D" in latent:
            kinds["dsa"], widths = _dsa(args, decoder, full)
            params.update(widths)
        return kinds, decoder.flags, params
    kinds["attention"] = full
    if sliding is not None:
        kinds["attention_sliding"] = sliding
    if not mla:
        return kinds, decoder.flags, dict(decoder.params)
    params = {name: value for name, value in decoder.params.items() if name not in MLA_PARAMS}
    params["kv_heads"] = params["heads"]  # head_dim: kv_channels, which the attention reader keeps under MLA
    return kinds, decoder.flags - {"mla", "q_lora"}, params


def _slide(pattern: str, decoder, entries: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The entries with their sliding attention layers renamed ``<kind>_sliding``: those the window
    reader marked among ``num_layers`` (the pattern's layer count, after ``validate_args``), 1-based
    from the start of the part."""
    if "sliding" not in decoder.attention_kinds:
        return entries
    marks = [kind == "sliding" for kind in decoder.attention]
    if len(marks) < len(entries):
        raise ModelError(
            f"args.num_layers = {len(marks)}: the pattern {pattern!r} has more layers; give the arguments after "
            "validate_args, which sets num_layers from it"
        )
    return [(f"{mixer}_sliding", mlp) if slide and mixer in ("attention", "mla") else (mixer, mlp) for (mixer, mlp), slide in zip(entries, marks)]


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
    if pattern is None:  # a GPT stack: MLA on every layer, no '*' layer to take kv_channels
        params = {name: value for name, value in decoder.params.items() if name != MLA_HEAD_DIM or "mla" not in decoder.flags}
        return attrs.evolve(decoder, params=params)
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
    softmax, model_flags, params = _attention(pattern, args, decoder, used)
    if "sliding" in decoder.attention_kinds and len(decoder.attention) != len(layers):
        raise ModelError(
            f"args.num_layers = {len(decoder.attention)}: the pattern {pattern!r} has {len(layers)} layers; give the "
            "arguments after validate_args, which sets num_layers from it"
        )
    layers, mtp = _slide(pattern, decoder, layers), _slide(pattern, decoder, mtp)
    mamba = (frozenset({MAMBA2}), {CONV_KERNEL.name: MAMBA_CONV})  # a G layer's kernel may differ
    if ("mamba", "only") in used:
        mamba, widths = _mamba_kind(args, params["hidden"])
        params.update(widths)
    if GDP in mamba[0]:  # the 'M' layers run Gated Delta Product: named for it
        layers, mtp = ([("gdp" if a == "mamba" else a, m) for a, m in entries] for entries in (layers, mtp))
    attention_kinds = {
        **decoder.attention_kinds,
        **softmax,
        "gdp" if GDP in mamba[0] else "mamba": mamba,
        "gdn": (frozenset({GATED_DELTANET}), {}),  # its widths: the megatron_gdn reader
        "ffn": (frozenset({NO_ATTENTION}), {}),
    }
    model_flags, attention_kinds = softmax_only_gate(attrs.evolve(decoder, flags=model_flags), attention_kinds, set(softmax))
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
        "hybrid_layer_pattern", "hybrid_override_pattern", "spec", "gdp_num_householder",
        "mamba_state_dim", "mamba_head_dim", "mamba_num_groups", "mamba_num_heads",
        *DSA_ARGUMENTS, "dsa_indexer_topk_freq", "dsa_indexer_skip_topk_offset",  # the offset moves nothing at freq 1
    ),
    read=read,
    precedence=20,  # after the attention, MLP, MTP and window readers (10), whose results it rearranges
    summary="hybrid_layer_pattern (M, G, *, +, D, -, E; '|'; MTP depths after '/') and the Mamba2 widths",
)


@hookimpl
def flopsreg_register_megatron_readers():
    return [HYBRID_STACK]

