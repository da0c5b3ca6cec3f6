"""From a per-layer description (attention and MLP of every layer) to a readable :class:`Model`.

The Hugging Face and Megatron-LM readers say, for every decoder layer, which attention it uses
(a Hugging Face ``layer_types`` string such as ``sliding_attention``, or a kind the reader
defines) and which MLP (``dense``, ``moe``). This module names the distinct combinations as
layer kinds and compresses the per-layer list into the shortest plan (a ``first`` prefix plus a
repeating ``cycle``). The per-layer lists are :class:`Layers`, held in that same shape, so a
rule over 10**8 layers is read, zipped and planned in the size of its period.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain, cycle, islice
from typing import TypeVar

import attrs

from flopsreg.errors import ModelError
from flopsreg.model import LayerKind, Model, Plan, Repeated

__all__ = ["Decoder", "Layers", "TooManyListed", "build_model", "layers_with", "shortest_plan"]

Kind = tuple[frozenset[str], Mapping[str, int]]  # the flags and parameters of one attention or MLP kind
T = TypeVar("T")
U = TypeVar("U")

EXPANDED = 1 << 16  # layers up to this many are planned from their full list (the shortest plan, exactly)
MAX_LISTED = 1 << 20  # layers a description may list one by one beyond its repeating rule; more is refused


class TooManyListed(ModelError):
    """Layers that a plan (a listed prefix, then a repeating cycle) could hold only by listing more than MAX_LISTED."""


@attrs.frozen(eq=False)
class Layers(Sequence[T]):
    """One entry per decoder layer, stored as a model's plan is: the ``first`` entries, then
    ``cycle`` repeated up to ``length``, so a periodic rule over 10**8 layers costs its period.

    A reader builds it from a rule (:meth:`rule`, :meth:`uniform`) or from a list a config gives
    (:meth:`of`); ``map``, ``zip``, ``in`` and :meth:`distinct` work on the stored entries, never
    on one per layer. Iterating still yields every layer: for a config's own list, or small models.

    >>> Layers.rule(10**8, lambda i: "b" if (i + 1) % 6 == 0 else "a", period=6)
    Layers(first=(), cycle=('a', 'a', 'a', 'a', 'a', 'b'), length=100000000)
    """

    first: tuple[T, ...] = attrs.field(converter=lambda v: tuple(v))
    cycle: tuple[T, ...] = attrs.field(converter=lambda v: tuple(v))
    length: int

    def __attrs_post_init__(self) -> None:
        if len(self.first) > self.length or (not self.cycle and len(self.first) != self.length):
            raise ValueError(f"{len(self.first)} listed entries and a cycle of {len(self.cycle)} do not make {self.length} layers")

    @classmethod
    def of(cls, entries: Iterable[T]) -> Layers[T]:
        """*entries* as they are if already Layers, else listed one per layer."""
        if isinstance(entries, Layers):
            return entries
        entries = tuple(entries)
        return cls(first=entries, cycle=(), length=len(entries))

    @classmethod
    def uniform(cls, entry: T, length: int) -> Layers[T]:
        """*entry* on every one of *length* layers."""
        return cls(first=(), cycle=(entry,), length=length) if length else cls.of(())

    @classmethod
    def rule(cls, length: int, entry_of: Callable[[int], T], *, period: int = 1, start: int = 0) -> Layers[T]:
        """``entry_of(i)`` for each layer i, for a rule that repeats every *period* layers from
        layer *start* on (``entry_of`` is called at most ``start + period`` times)."""
        listed = min(start + period, length)
        if listed > MAX_LISTED:
            raise TooManyListed(
                f"a layer rule that repeats every {period:,} layers after the first {start:,}, over {length:,} layers: "
                f"more than {MAX_LISTED:,} layers to list one by one"
            )
        if listed == length:
            return cls.of(entry_of(i) for i in range(length))
        return cls(first=[entry_of(i) for i in range(start)], cycle=[entry_of(i) for i in range(start, start + period)], length=length)

    @classmethod
    def split(cls, length: int, before: T, after: T, at: int) -> Layers[T]:
        """*before* on layers ``0 .. at - 1``, *after* on the rest (``first_k_dense_replace``-like rules)."""
        if at <= 0 or at >= length:
            return cls.uniform(before if at > 0 else after, length)
        return cls.rule(length, lambda i: before if i < at else after, start=at)

    @classmethod
    def chosen(cls, length: int, indices: Iterable[int], inside: T, outside: T) -> Layers[T]:
        """*inside* on the layers a config lists by index, *outside* on every other one."""
        chosen = set(indices)
        return cls.rule(length, lambda i: inside if i in chosen else outside, start=max(chosen, default=-1) + 1)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> T:  # type: ignore[override]  # no slices: they would list layers
        if not -self.length <= index < self.length:
            raise IndexError(f"layer {index} of {self.length}")
        index %= self.length
        first = len(self.first)
        return self.first[index] if index < first else self.cycle[(index - first) % len(self.cycle)]

    def __iter__(self) -> Iterator[T]:
        return islice(chain(self.first, cycle(self.cycle)), self.length)

    def __contains__(self, entry: object) -> bool:
        return entry in self.first or entry in self.cycle[: self.length - len(self.first)]

    def __eq__(self, other: object) -> bool:
        """Equal when every layer's entry is: compared over one common period, not per layer."""
        if not isinstance(other, Layers):
            return NotImplemented
        if self.length != other.length:
            return False
        a, b = Layers.zip(self, other)._stored()
        return all(x == y for x, y in chain(a, b))

    def __hash__(self) -> int:
        return hash((self.length, self.distinct()))

    def _stored(self) -> tuple[tuple[T, ...], tuple[T, ...]]:
        """(first, the part of the cycle that is used): every entry the layers hold."""
        return self.first, self.cycle[: self.length - len(self.first)]

    def head(self, count: int) -> Layers[T]:
        """The first *count* layers (all of them if there are fewer)."""
        if count >= self.length:
            return self
        if count <= len(self.first):
            return Layers.of(self.first[:count])
        return Layers(first=self.first, cycle=self.cycle, length=count)

    def distinct(self) -> tuple[T, ...]:
        """The entries used, each once, in order of first appearance."""
        first, used = self._stored()
        return tuple(dict.fromkeys(first + used))

    def map(self, function: Callable[[T], U]) -> Layers[U]:
        """``function(entry)`` for each layer, calling *function* once per stored entry."""
        first, used = self._stored()  # a cycle longer than the layers after first: only its used part
        return Layers(first=map(function, first), cycle=map(function, used), length=self.length)

    @staticmethod
    def zip(a: Iterable[T], b: Iterable[U]) -> Layers[tuple[T, U]]:
        """The pairs ``(a[i], b[i])``, as Layers whose cycle is the common period of both."""
        a, b = Layers.of(a), Layers.of(b)
        if a.length != b.length:
            raise ValueError(f"{a.length} layers against {b.length}")
        start = max(len(a.first), len(b.first))
        period = math.lcm(len(a.cycle), len(b.cycle)) if a.cycle and b.cycle else a.length
        return Layers.rule(a.length, lambda i: (a[i], b[i]), period=period, start=start)

    def replaced(self, index: int, entry: T) -> Layers[T]:
        """These layers with layer *index* given *entry* (the layers before it listed one by one)."""
        if self[index] == entry:
            return self
        if index >= MAX_LISTED:
            raise TooManyListed(f"layer {index:,}: more than {MAX_LISTED:,} layers would be listed one by one to change it")
        return Layers.rule(
            self.length, lambda i: entry if i == index else self[i], period=max(len(self.cycle), 1), start=max(index + 1, len(self.first))
        )

    def indices(self, entry: T, limit: int) -> list[int]:
        """The first *limit* layers whose entry is *entry*, in order."""
        found = [i for i, e in enumerate(self.first) if e == entry][:limit]
        positions = [len(self.first) + p for p, e in enumerate(self.cycle) if e == entry]
        repeats = range(0, limit * len(self.cycle), len(self.cycle)) if self.cycle else ()
        found += sorted(p + r for p in positions for r in repeats if p + r < self.length)
        return found[:limit]

    def plan(self) -> tuple[tuple[T, ...], tuple[T, ...]]:
        """The shortest ``(first, cycle)`` these layers follow: :func:`shortest_plan` of the full
        list up to EXPANDED layers; above, the stored cycle cut to its shortest repeat, with the
        listed layers that already follow it taken into it."""
        if self.length <= EXPANDED or not self.cycle:
            return shortest_plan(self)
        cycle_ = self.cycle
        period = next(p for p in range(1, len(cycle_) + 1) if len(cycle_) % p == 0 and cycle_ == cycle_[p:] + cycle_[:p])
        first, cycle_ = self.first, cycle_[:period]
        while first and first[-1] == cycle_[-1]:
            first, cycle_ = first[:-1], cycle_[-1:] + cycle_[:-1]
        return first, cycle_


def layers_with(entries: Sequence[str], entry: str) -> str:
    """The indices of the layers whose entry is *entry*, for messages: ``0, 2, 4, 6, 8, 10, ...``.

    >>> layers_with(["a", "b"] * 8, "a")
    '0, 2, 4, 6, 8, 10, ...'
    """
    shown = Layers.of(entries).indices(entry, 7)
    return ", ".join(map(str, shown[:6])) + (", ..." if len(shown) > 6 else "")


@attrs.frozen(kw_only=True)
class Decoder:
    """What a reader found in a config, before layer kinds are named.

    Attributes:
        params: model-wide parameters (dimensions, vocab).
        flags: model-wide flags (gated, lm_head, mla, q_lora).
        attention: the attention of every decoder layer, a list or :class:`Layers` (stored as
            Layers: a reader builds a periodic rule with :meth:`Layers.rule`, so its cost is the
            period, not the layer count). A Hugging Face reader gives
            ``layer_types`` strings (``full_attention``, ``sliding_attention``, ...): the loader
            gives them the flags and parameters their :class:`~flopsreg.declarations.readers.HFLayerType`
            declares. Other readers name kinds of their own and define them in ``attention_kinds``.
        mlps: the MLP of every decoder layer, e.g. ``dense`` or ``moe`` (a list or Layers).
        attention_kinds: flags and parameters of each attention entry, e.g.
            ``{"sliding": ({"sliding_window"}, {"window": 4096})}``.
        mlp_kinds: flags and parameters of each MLP, e.g. ``{"dense": ({"mlp"}, {"ffn_hidden": F})}``.
        blocks: blocks of extra layers the description declares, as ``{block: depth}``: a
            Megatron-LM run's are counted; a Hugging Face config's (which its forward pass does
            not run) only when asked for (``load_hf_config(blocks=...)``).
        block_layers: the layers of one depth of a block, as ``(attention, mlp)`` entries, where
            a depth is not one copy of the last decoder layer (a Megatron-LM hybrid pattern's MTP
            part, ``"*E"``: ``{"mtp": (("full", "none"), ("none", "moe"))}``).
        weight_copies: attention entries whose layers run a shared block: ``{entry: copies}``,
            the weights the model holds of each such layer kind (e.g. ``{"shared": 1}``: one
            block run by every layer of that entry; FLOPs stay per layer).
    """

    params: Mapping[str, int]
    # Converters are lambdas, not the builtins: attrs reads a converter's signature, and a builtin's
    # is parsed with the tokenize module (compiling its regular expressions: a hundredth of a start).
    flags: frozenset[str] = attrs.field(converter=lambda v: frozenset(v))
    mlps: Layers[str] = attrs.field(converter=lambda v: Layers.of(v))
    attention: Layers[str] = attrs.field(converter=lambda v: Layers.of(v), default=())
    attention_kinds: Mapping[str, Kind] = attrs.field(factory=dict)
    mlp_kinds: Mapping[str, Kind] = attrs.field(factory=dict)
    blocks: Mapping[str, int] = attrs.field(factory=dict)
    block_layers: Mapping[str, tuple[tuple[str, str], ...]] = attrs.field(factory=dict)
    weight_copies: Mapping[str, int] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        if len(self.attention) != len(self.mlps):
            raise ValueError(f"{len(self.attention)} attention entries but {len(self.mlps)} MLPs")


def shortest_plan(kinds: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The shortest ``(first, cycle)`` whose expansion is *kinds*; ties go to the shorter prefix.

    For each prefix length P the shortest cycle is the smallest period of the rest, read from the
    prefix function of the reversed list (a string and its reverse have the same periods): linear
    in the number of layers.

    >>> shortest_plan(["dense"] * 3 + ["moe"] * 5)
    (('dense', 'dense', 'dense'), ('moe',))
    >>> shortest_plan(["s", "s", "f"] * 2 + ["s"])
    ((), ('s', 's', 'f'))
    """
    kinds = tuple(kinds)
    n = len(kinds)
    reverse = kinds[::-1]
    border = [0] * (n + 1)  # border[m]: the longest proper border of reverse[:m]
    for m in range(1, n):
        k = border[m]
        while k and reverse[m] != reverse[k]:
            k = border[k]
        border[m + 1] = k + 1 if reverse[m] == reverse[k] else 0
    prefix = min(range(n), key=lambda p: (p + (n - p) - border[n - p], p), default=0)
    period = (n - prefix) - border[n - prefix]
    return kinds[:prefix], kinds[prefix : prefix + period]


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
    used = {*decoder.attention.distinct(), *(attention for attention, _ in listed)}
    name_attention = len(used) > 1 or any(decoder.attention_kinds[a][0] for a in used)
    name_mlp = len({*decoder.mlps.distinct(), *(mlp for _, mlp in listed)}) > 1 or not name_attention
    kinds: dict[str, LayerKind] = {}

    def kind_of(attention: str, mlp: str) -> str:
        kind = _kind_name(attention, mlp, name_attention=name_attention, name_mlp=name_mlp)
        if kind not in kinds:
            attention_flags, attention_params = decoder.attention_kinds[attention]
            mlp_flags, mlp_params = decoder.mlp_kinds[mlp]
            kinds[kind] = LayerKind(
                flags=frozenset(attention_flags) | frozenset(mlp_flags),
                params={**attention_params, **mlp_params},
                weight_copies=decoder.weight_copies.get(attention),
            )
        return kind

    per_layer = Layers.zip(decoder.attention, decoder.mlps).map(lambda entry: kind_of(*entry))
    first, cycle = per_layer.plan()
    extra = {}
    for block, depth in (blocks or {}).items():
        if depth > 0:
            depth_kinds = [kind_of(*entry) for entry in decoder.block_layers.get(block, ())] or [per_layer[-1]]
            extra[block] = Repeated(depth_kinds, depth)  # the depth's layers once, not depth times over
    return Model(
        name=name,
        source=source,
        flags=frozenset(decoder.flags) | frozenset(extra),
        params=dict(decoder.params),
        kinds=kinds,
        plan=Plan(layers=len(per_layer), first=first, cycle=cycle, blocks=extra),
    )
