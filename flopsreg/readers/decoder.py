"""From a per-layer description (attention and MLP of every layer) to a readable :class:`Model`.

The Hugging Face and Megatron-LM readers say, for every decoder layer, which attention it uses
(a Hugging Face ``layer_types`` string such as ``sliding_attention``, or a kind the reader
defines) and which MLP (``dense``, ``moe``). This module names the distinct combinations as
layer kinds and compresses the per-layer list into the shortest plan (a ``first`` prefix plus a
repeating ``cycle``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from flopsreg.model import LayerKind, Model, Plan

__all__ = ["Decoder", "build_model", "layers_with", "shortest_plan"]

Kind = tuple[frozenset[str], Mapping[str, int]]  # the flags and parameters of one attention or MLP kind

def layers_with(entries: Sequence[str], entry: str) -> str:
    """The indices of the layers whose entry is *entry*, for messages: ``0, 2, 4, 6, 8, 10, ...``.

    >>> layers_with(["a", "b"] * 8, "a")
    '0, 2, 4, 6, 8, 10, ...'
    """
    shown = [str(i) for i, e in enumerate(entries) if e == entry]
    return ", ".join(shown[:6]) + (", ..." if len(shown) > 6 else "")


@attrs.frozen(kw_only=True)
class Decoder:
    """What a reader found in a config, before layer kinds are named.

    Attributes:
        params: model-wide parameters (dimensions, vocab).
        flags: model-wide flags (gated, lm_head, mla, q_lora).
        attention: the attention of every decoder layer. A Hugging Face reader gives
            ``layer_types`` strings (``full_attention``, ``sliding_attention``, ...): the loader
            gives them the flags and parameters their :class:`~flopsreg.declare.HFLayerType`
            declares. Other readers name kinds of their own and define them in ``attention_kinds``.
        mlps: the MLP of every decoder layer, e.g. ``dense`` or ``moe``.
        attention_kinds: flags and parameters of each attention entry, e.g.
            ``{"sliding": ({"sliding_window"}, {"window": 4096})}``.
        mlp_kinds: flags and parameters of each MLP, e.g. ``{"dense": ({"mlp"}, {"ffn_hidden": F})}``.
        blocks: blocks of extra layers the description declares, as ``{block: depth}``: a
            Megatron-LM run's are counted; a Hugging Face config's (which its forward pass does
            not run) only when asked for (``load_hf_config(blocks=...)``).
        block_layers: the layers of one depth of a block, as ``(attention, mlp)`` entries, where
            a depth is not one copy of the last decoder layer (a Megatron-LM hybrid pattern's MTP
            part, ``"*E"``: ``{"mtp": (("full", "none"), ("none", "moe"))}``).
    """

    params: Mapping[str, int]
    # Converters are lambdas, not the builtins: attrs reads a converter's signature, and a builtin's
    # is parsed with the tokenize module (compiling its regular expressions: a hundredth of a start).
    flags: frozenset[str] = attrs.field(converter=lambda v: frozenset(v))
    mlps: tuple[str, ...] = attrs.field(converter=lambda v: tuple(v))
    attention: tuple[str, ...] = attrs.field(converter=lambda v: tuple(v), default=())
    attention_kinds: Mapping[str, Kind] = attrs.field(factory=dict)
    mlp_kinds: Mapping[str, Kind] = attrs.field(factory=dict)
    blocks: Mapping[str, int] = attrs.field(factory=dict)
    block_layers: Mapping[str, tuple[tuple[str, str], ...]] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        if len(self.attention) != len(self.mlps):
            raise ValueError(f"{len(self.attention)} attention entries but {len(self.mlps)} MLPs")


def shortest_plan(kinds: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The shortest ``(first, cycle)`` whose expansion is *kinds*; ties go to the shorter prefix.

    >>> shortest_plan(["dense"] * 3 + ["moe"] * 5)
    (('dense', 'dense', 'dense'), ('moe',))
    >>> shortest_plan(["s", "s", "f"] * 2 + ["s"])
    ((), ('s', 's', 'f'))
    """
    kinds = tuple(kinds)
    n = len(kinds)
    best: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    for total in range(1, n + 1):
        for prefix in range(total):
            period = total - prefix
            if prefix + period > n:
                continue
            if all(kinds[i] == kinds[prefix + (i - prefix) % period] for i in range(prefix, n)):
                best = (kinds[:prefix], kinds[prefix : prefix + period])
                break
        if best is not None:
            return best
    raise AssertionError("unreachable: the whole list is always a valid cycle")  # pragma: no cover


def _kind_name(attention: str, mlp: str, *, name_attention: bool, name_mlp: bool) -> str:
    parts = ([attention] if name_attention else []) + ([mlp] if name_mlp else [])
    return "_".join(parts)


def build_model(
    decoder: Decoder, *, name: str, source: str, blocks: Mapping[str, int] | None = None
) -> Model:
    """Name the layer kinds, compress the plan, and add *blocks*: ``{block: depth}`` depths of
    the block's layers each (``decoder.block_layers``, else one copy of the last decoder
    layer's kind, as a multi-token-prediction module repeats it), whose pattern is switched on
    by the flag of the block's name.

    Every entry of ``decoder.attention`` must be defined in ``decoder.attention_kinds``. A kind
    is named after what varies: its attention when some layer's attention has flags or differs,
    its MLP when the MLPs differ (or when the attention says nothing), e.g. ``sliding``, ``moe``,
    ``chunked_moe``.
    """
    listed = [entry for entries in decoder.block_layers.values() for entry in entries]
    attentions = [*decoder.attention, *(attention for attention, _ in listed)]
    used = set(attentions)
    name_attention = len(used) > 1 or any(decoder.attention_kinds[a][0] for a in used)
    name_mlp = len({*decoder.mlps, *(mlp for _, mlp in listed)}) > 1 or not name_attention
    kinds: dict[str, LayerKind] = {}

    def kind_of(attention: str, mlp: str) -> str:
        kind = _kind_name(attention, mlp, name_attention=name_attention, name_mlp=name_mlp)
        if kind not in kinds:
            attention_flags, attention_params = decoder.attention_kinds[attention]
            mlp_flags, mlp_params = decoder.mlp_kinds[mlp]
            kinds[kind] = LayerKind(
                flags=frozenset(attention_flags) | frozenset(mlp_flags),
                params={**attention_params, **mlp_params},
            )
        return kind

    per_layer = [kind_of(attention, mlp) for attention, mlp in zip(decoder.attention, decoder.mlps)]
    first, cycle = shortest_plan(per_layer)
    extra = {}
    for block, depth in (blocks or {}).items():
        if depth > 0:
            depth_kinds = [kind_of(*entry) for entry in decoder.block_layers.get(block, ())] or [per_layer[-1]]
            extra[block] = tuple(depth_kinds) * depth
    return Model(
        name=name,
        source=source,
        flags=frozenset(decoder.flags) | frozenset(extra),
        params=dict(decoder.params),
        kinds=kinds,
        plan=Plan(layers=len(per_layer), first=first, cycle=cycle, blocks=extra),
    )
