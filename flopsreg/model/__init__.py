"""Models: named layer kinds (flags and parameters) laid out by a plan.

Flags and parameters set on the model apply to every layer; a layer kind adds its own on top.
Parameters never have defaults and never switch a pattern on: only flags do. Which flags and
parameters a pattern needs is checked by the registry (:meth:`flopsreg.Registry.plan`), which
knows the patterns; this module checks structure and types.
"""

from __future__ import annotations

import functools
import math
import operator
import os
import re
from collections.abc import Callable, ItemsView, Iterable, Iterator, KeysView, Mapping, Sequence, ValuesView
from typing import Any, TypeVar, overload

import attrs

from flopsreg.errors import MAX_INT, ModelError, did_you_mean
from flopsreg.model.examples_index import example_names, example_path
from flopsreg.plugins.entry_points import own_entry_point

__all__ = ["FrozenMap", "Layer", "LayerKind", "Model", "Plan", "Repeated", "Tower"]

V = TypeVar("V")
T = TypeVar("T")


class FrozenMap(Mapping[str, V]):
    """A read-only mapping, equal and hashed by its contents: what models hold instead of dicts.

    A model is a value, so caches keyed by it can never serve another model's numbers.

    >>> params = FrozenMap({"hidden": 64})
    >>> params["hidden"], params == {"hidden": 64}, hash(params) == hash(FrozenMap(hidden=64))
    (64, True, True)
    """

    __slots__ = ("_data", "_hash")

    def __init__(self, *args: Any, **kwargs: V) -> None:
        object.__setattr__(self, "_data", dict(*args, **kwargs))
        object.__setattr__(self, "_hash", None)

    def __getitem__(self, key: str) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def keys(self) -> KeysView[str]:
        """The keys, read-only (the dict's own view: ``{**frozen_map}`` reads it at C speed)."""
        return self._data.keys()

    def items(self) -> ItemsView[str, V]:
        return self._data.items()

    def values(self) -> ValuesView[V]:
        return self._data.values()

    def __hash__(self) -> int:
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(frozenset(self._data.items())))
        return self._hash  # type: ignore[return-value]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._data!r})"


class IndexedView(Sequence[T]):
    """A read-only sequence whose items are computed on access: a model's layers, a result's.

    Memory stays the same for 10 or 10^8 layers; indexing, slicing and iteration work as on a tuple.
    """

    __slots__ = ("_length", "_item")

    def __init__(self, length: int, item: Callable[[int], T]) -> None:
        self._length = length
        self._item = item

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(self._length))]
        i = operator.index(index)
        if i < 0:
            i += self._length
        if not 0 <= i < self._length:
            raise IndexError(f"layer index {index} out of range for {self._length} layers")
        return self._item(i)

    def __iter__(self) -> Iterator[T]:
        return map(self._item, range(self._length))

    def __repr__(self) -> str:
        shown = ", ".join(map(repr, self[:3]))
        return f"<{self._length} items: {shown}{', ...' if self._length > 3 else ''}>"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")


def check_params(where: str, value: Any) -> FrozenMap[int]:
    """Parameters as a sorted read-only map of name to int; numpy integers become ints."""
    if not isinstance(value, Mapping):
        raise ModelError(f"{where}: expected a table of parameter = integer, got {type(value).__name__}")
    checked = {}
    for name, number in value.items():
        if not isinstance(name, str):
            raise ModelError(f"{where}: parameter name {name!r} is not a string")
        checked[name] = check_int(f"{where}.{name}", number)
    return FrozenMap(sorted(checked.items()))


def as_int(value: Any) -> int | None:
    """*value* as a Python int when it is one integer: an int, a numpy integer or a 0-d integer
    array (duck-typed by ``__index__`` and ``shape``: numpy is not imported), else None. Bools,
    floats (whole ones too: a count is never measured), text and other shapes are None."""
    if type(value) is int:
        return value
    if isinstance(value, bool) or not hasattr(value, "__index__") or getattr(value, "shape", ()) != ():
        return None
    try:
        return operator.index(value)
    except TypeError:  # a 0-d float or bool array: numpy's arrays all have __index__
        return None


def shown(value: Any) -> str:
    """*value*'s repr for an error message: on one line (a 2-D array's has several), at most 60 characters."""
    text = repr(value)
    text = " ".join(text.split()) if "\n" in text else text
    return text if len(text) <= 60 else text[:57] + "..."


def kind_of(value: Any) -> str:
    """What *value* is, for an error message: ``an array of shape (2, 3)``, ``float64``, ``str``."""
    shape = getattr(value, "shape", ())
    if shape != ():
        return f"an array of shape {tuple(shape)}"
    return str(getattr(value, "dtype", type(value).__name__))


def check_int(where: str, value: Any, minimum: int | None = None) -> int:
    """*value* as a Python int (numpy integers and 0-d integer arrays too, see :func:`as_int`), at
    most MAX_INT; bools, floats and arrays of other shapes refused."""
    number = as_int(value)
    if number is None:
        text = str(value).lower() if isinstance(value, bool) else shown(value)  # as TOML writes it
        expected = "an integer" if minimum is None else f"an integer >= {minimum}"
        raise ModelError(f"{where} = {text}: expected {expected}, got {kind_of(value)}")
    if minimum is not None and number < minimum:
        raise ModelError(f"{where} = {number}: expected an integer >= {minimum}")
    if not -MAX_INT - 1 <= number <= MAX_INT:
        raise ModelError(f"{where} = {number}: beyond a 64-bit integer (|value| < 2^63); is it a typo?")
    return number


def check_flags(where: str, value: Any) -> frozenset[str]:
    if isinstance(value, (str, Mapping)) or not isinstance(value, Iterable):
        raise ModelError(f"{where} = {value!r}: expected a list of flag names")
    flags = list(value)
    for flag in flags:
        if not isinstance(flag, str):
            raise ModelError(f"{where}: flag {flag!r} is not a string")
    return value if type(value) is frozenset else frozenset(flags)  # a checked set is kept: its hash is cached


@attrs.frozen(kw_only=True, cache_hash=True)
class LayerKind:
    """Flags and parameters shared by the layers of one kind (e.g. Gemma 3's local layers).

    ``weight_copies``: a shared block (Zamba's shared transformer, HRM's reused stacks) runs its
    weights on several layers: the model holds this kind's weights that many times, however many
    layers run it (None: once per layer). FLOPs are counted per layer, as always.
    """

    flags: frozenset[str] = attrs.field(default=(), converter=lambda v: check_flags("flags", v))
    params: FrozenMap[int] = attrs.field(factory=dict, converter=lambda v: check_params("params", v))
    weight_copies: int | None = attrs.field(default=None, converter=lambda v: v if v is None else check_int("weight_copies", v, minimum=1))


@attrs.frozen(kw_only=True, cache_hash=True)
class Tower:
    """A multimodal wrapper's tower beside the language model (vision or audio encoder,
    projector): its parameters are counted, its FLOPs are not.

    Attributes:
        kind, title: the tower kind's name and title (a reader plugin's ``TowerKind``).
        dims: the config values it was read from, by the kind's names.
        parameters: ``sum(p.numel())`` of its module.
        embeddings: the part of :attr:`parameters` held in ``nn.Embedding`` weights.
    """

    kind: str = attrs.field(converter=lambda v: check_name("kind", v))
    title: str = attrs.field(converter=lambda v: check_name("title", v))
    dims: FrozenMap[int] = attrs.field(factory=dict, converter=lambda v: check_params("dims", v))
    parameters: int = attrs.field(converter=lambda v: check_int("parameters", v, 0))
    embeddings: int = attrs.field(default=0, converter=lambda v: check_int("embeddings", v, 0))


def _towers(value: Any) -> FrozenMap[Tower]:
    if not isinstance(value, Mapping) or not all(isinstance(t, Tower) for t in value.values()):
        raise ModelError(f"towers: expected a table of part name -> flopsreg.model.Tower, got {value!r:.80}")
    return value if type(value) is FrozenMap else FrozenMap(value.items())  # kept: a model's copies share it and its hash


class Repeated(Sequence[str]):
    """The layer kinds of a block whose depth repeats the same layers: ``unit`` ``times`` over,
    held as the unit, so a multi-token-prediction depth of 10**7 costs what depth 2 costs.
    Indexing, ``len``, ``count``, ``in`` and iteration work as on the tuple it stands for.

    >>> Repeated(("x",), 3) == ("x", "x", "x"), len(Repeated(("a", "b"), 10**7))
    (True, 20000000)
    """

    __slots__ = ("unit", "times")

    def __init__(self, unit: Iterable[str], times: int) -> None:
        object.__setattr__(self, "unit", tuple(unit))
        object.__setattr__(self, "times", check_int("depth", times, minimum=1))
        if not self.unit:
            raise ModelError("a repeated block needs at least one layer kind")
        if len(self.unit) * self.times > MAX_INT:
            raise ModelError(f"depth = {self.times}: {len(self.unit)} layers each make more than 2^63 - 1 layers (a typo?)")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __len__(self) -> int:
        return len(self.unit) * self.times

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        i = operator.index(index)
        if not -len(self) <= i < len(self):
            raise IndexError(f"block layer {index} of {len(self)}")
        return self.unit[i % len(self.unit)]

    def __iter__(self) -> Iterator[str]:
        return (kind for _ in range(self.times) for kind in self.unit)

    def __contains__(self, kind: object) -> bool:
        return kind in self.unit

    def count(self, kind: str) -> int:
        """How many layers are of *kind*."""
        return self.unit.count(kind) * self.times

    def kinds(self) -> tuple[str, ...]:
        """The kinds used, each once, in order."""
        return tuple(dict.fromkeys(self.unit))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Repeated):
            return len(self) == len(other) and all(self[i] == other[i] for i in range(math.lcm(len(self.unit), len(other.unit))))
        if isinstance(other, tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash((len(self), self.kinds()))

    def __repr__(self) -> str:
        return f"Repeated({self.unit!r}, {self.times})"


_LISTED_BLOCK = 64  # a repeated block of at most this many layers is held as a plain tuple


def _kind_names(where: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, Repeated):
        _kind_names(where, value.unit)
        return tuple(value) if len(value) <= _LISTED_BLOCK else value  # type: ignore[return-value]
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ModelError(f"{where} = {value!r}: expected a list of layer-kind names")
    names = tuple(value)
    for name in names:
        if not isinstance(name, str):
            raise ModelError(f"{where}: {name!r} is not a layer-kind name (a string)")
    return names


def _distinct(kinds: Sequence[str]) -> tuple[str, ...]:
    """The kinds of a block, each once (a repeated block's from its unit, not its every layer)."""
    return kinds.kinds() if isinstance(kinds, Repeated) else tuple(dict.fromkeys(kinds))


def _blocks(value: Any) -> FrozenMap[tuple[str, ...]]:
    if not isinstance(value, Mapping):
        raise ModelError(f"plan.blocks = {value!r}: expected a table of block name = [layer kinds]")
    blocks = {}
    for name, kinds in value.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ModelError(f"plan.blocks: {name!r} is not a block name (a word)")
        blocks[name] = _kind_names(f"plan.{name}", kinds)
    return FrozenMap(sorted((name, kinds) for name, kinds in blocks.items() if kinds))


@attrs.frozen(kw_only=True, init=False)
class Plan:
    """Which kind each layer is: the ``first`` kinds in order, then ``cycle`` repeated.

    A uniform model is a cycle of one kind; an explicit list is ``first`` covering every layer.
    ``blocks`` lists named groups of extra layers outside the decoder stack, by kind, each
    counted by the model-level pattern that uses that :class:`~flopsreg.Block` (e.g. one decoder
    layer per multi-token-prediction module). Any other keyword names a block too:
    ``Plan(..., mtp=["moe"])`` is ``Plan(..., blocks={"mtp": ["moe"]})``, as model files write it.
    """

    layers: int = attrs.field(converter=lambda v: check_int("plan.layers", v, minimum=1))
    first: tuple[str, ...] = attrs.field(default=(), converter=lambda v: _kind_names("plan.first", v))
    cycle: tuple[str, ...] = attrs.field(default=(), converter=lambda v: _kind_names("plan.cycle", v))
    blocks: FrozenMap[tuple[str, ...]] = attrs.field(factory=dict, converter=_blocks)

    def __init__(
        self,
        *,
        layers: int,
        first: Iterable[str] = (),
        cycle: Iterable[str] = (),
        blocks: Mapping[str, Iterable[str]] | None = None,
        **named_blocks: Iterable[str],
    ) -> None:
        given = _blocks(blocks if blocks is not None else {})  # refused here if not a table, before it is merged
        self.__attrs_init__(layers=layers, first=first, cycle=cycle, blocks={**given, **named_blocks})

    def __attrs_post_init__(self) -> None:
        if len(self.first) > self.layers:
            raise ModelError(
                f"plan.first lists {len(self.first)} layers but plan.layers = {self.layers}"
            )
        if not self.cycle and len(self.first) != self.layers:
            raise ModelError(
                f"plan covers {len(self.first)} of {self.layers} layers: give a cycle, a uniform "
                "kind, or a list with one kind per layer"
            )

    @classmethod
    def uniform(cls, kind: str, layers: int) -> Plan:
        """Every layer of one kind."""
        return cls(layers=layers, cycle=(kind,))

    @classmethod
    def explicit(cls, kinds: Iterable[str]) -> Plan:
        """One kind per layer, in order."""
        names = _kind_names("plan.list", kinds)
        return cls(layers=len(names), first=names)

    def kind_at(self, index: int) -> str:
        """The kind of decoder layer *index* (0-based), without expanding the plan."""
        first = len(self.first)
        return self.first[index] if index < first else self.cycle[(index - first) % len(self.cycle)]

    def kinds(self) -> tuple[str, ...]:
        """The kinds of the decoder layers, each once, in order of first appearance."""
        used = self.cycle[: self.layers - len(self.first)]
        return tuple(dict.fromkeys(self.first + used))

    def indices(self, kind: str) -> tuple[range, ...]:
        """The decoder layers of *kind* as ranges, as few as the plan allows (not one per layer).

        Layers listed in ``first`` come as runs of consecutive indices. The cycle gives one
        arithmetic progression per position of *kind* in it, unless runs are no more than twice
        as many (and the plan is small enough to list them): then runs, which read more easily.

        >>> Plan(layers=8, first=["d", "d"], cycle=["s", "s", "f"]).indices("s")
        (range(2, 4), range(5, 7))
        >>> Plan(layers=34, cycle=["s"] * 5 + ["f"]).indices("f")
        (range(5, 34, 6),)
        >>> Plan(layers=10**8, cycle=["s", "f"]).indices("f")
        (range(1, 100000000, 2),)
        """
        head = _runs(i for i, name in enumerate(self.first) if name == kind)
        start, period = len(self.first), len(self.cycle)
        progressions = tuple(
            range(start + p, self.layers, period) for p, name in enumerate(self.cycle) if name == kind
        )
        progressions = tuple(r for r in progressions if r)
        if self.layers - start <= _LISTED_LAYERS:
            runs = _runs(i for i in range(start, self.layers) if self.kind_at(i) == kind)
            if len(runs) <= 2 * len(progressions):
                return head + runs
        return head + progressions


_LISTED_LAYERS = 4096  # plans up to this many cycle layers may describe a kind by runs


def _runs(indices: Iterable[int]) -> tuple[range, ...]:
    """Increasing *indices* as runs of consecutive integers."""
    runs: list[range] = []
    for i in indices:
        if runs and runs[-1].stop == i:
            runs[-1] = range(runs[-1].start, i + 1)
        else:
            runs.append(range(i, i + 1))
    return tuple(runs)


def total_length(ranges: Iterable[range]) -> int:
    """How many indices *ranges* hold."""
    return sum(len(r) for r in ranges)


def ranges_text(ranges: Sequence[range]) -> str:
    """``"0-4, 6-10, 12"``; a long progression of step k as ``"5-99999995 every 6th"``.

    >>> ranges_text((range(0, 5), range(6, 11), range(12, 13), range(13, 100, 6)))
    '0-4, 6-10, 12, 13-97 every 6th'
    >>> ranges_text((range(5, 35, 6),))
    '5, 11, 17, 23, 29'
    """
    parts = []
    for r in ranges:
        if len(r) == 1 or r.step > 1 and len(r) <= 6:
            parts.extend(map(str, r))
        elif r.step == 1:
            parts.append(f"{r.start}-{r[-1]}")
        else:
            parts.append(f"{r.start}-{r[-1]} every {_ordinal(r.step)}")
    return ", ".join(parts)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


@attrs.frozen(kw_only=True)
class Layer:
    """One decoder layer: model-wide flags and parameters merged with its kind's."""

    index: int
    kind: str
    flags: frozenset[str]
    params: FrozenMap[int]


def _kinds(value: Any) -> FrozenMap[LayerKind]:
    if not isinstance(value, Mapping):
        raise ModelError(f"kinds: expected a table of layer kinds, got {type(value).__name__}")
    for name, kind in value.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ModelError(f"kinds.{name}: a kind name must be a word (letters, digits, _ or -)")
        if not isinstance(kind, LayerKind):
            raise ModelError(f"kinds.{name}: expected a flopsreg.LayerKind, got {type(kind).__name__}")
    return value if type(value) is FrozenMap else FrozenMap(value)  # kept: a model's copies share it and its hash


def _string(where: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise ModelError(f"{where} = {value!r}: expected a string")
        return value

    return check


def _refused(char: str) -> bool:
    """Whether *char* cannot stand in a one-line name: a control, format, surrogate, private-use or
    unassigned character (Unicode category C*: NUL, ESC, tab, newline, ...) or a line or paragraph separator."""
    import unicodedata  # only for the rare name that str.isprintable refuses (e.g. one with a no-break space)

    category = unicodedata.category(char)
    return category[0] == "C" or category in ("Zl", "Zp")


def _unprintable(text: str) -> int | None:
    """The index of the first character of *text* that :func:`_refused` refuses, or None."""
    if text.isprintable():  # the common case, without looking at each character
        return None
    return next((i for i, char in enumerate(text) if _refused(char)), None)


def check_name(where: str, value: Any) -> str:
    """*value* as a model name: a string with some text, all printable, as every output prints it on
    one line (an empty name printed ``, batch 1 x 16 tokens``; an ESC or NUL broke terminals and pdflatex)."""
    name = _string(where)(value)
    if not name.strip():
        raise ModelError(f"{where} = {name!r}: empty; a model needs a name, which every output starts with")
    bad = _unprintable(name)
    if bad is not None:
        raise ModelError(
            f"{where} = {name!r:.80}: character {bad + 1} (U+{ord(name[bad]):04X}) is a control character or line "
            "break; a model name is printed on one line: use letters, digits, spaces and punctuation"
        )
    return name


def printable_name(text: str, fallback: str) -> str:
    """*text* made a valid model name: each character :func:`check_name` refuses written as its
    escape (``\\x1b``) once surrounding blanks are dropped; *fallback* if nothing is left. For names read
    from a file (a config.json's ``_name_or_path`` may be any path), where refusing would refuse the file."""
    text = text.strip()
    if not text.isprintable():
        text = "".join(char.encode("unicode_escape").decode("ascii") if _refused(char) else char for char in text)
    return text or fallback


def _plan(value: Any) -> Plan:
    if not isinstance(value, Plan):
        raise ModelError(f"plan: expected a flopsreg.Plan, got {type(value).__name__}")
    return value


@attrs.frozen(kw_only=True, cache_hash=True)
class Model:
    """A transformer as flopsreg sees it: model-wide settings, layer kinds and a plan.

    A value: every field is immutable, and two models are equal (and hash alike) exactly when
    their contents are, so a cache keyed by a model can never return another model's numbers.

    >>> m = Model.uniform("tiny", layers=2, hidden=64, heads=4, kv_heads=4, head_dim=16)
    >>> [layer.kind for layer in m.layers]
    ['layer', 'layer']
    """

    name: str = attrs.field(converter=lambda v: check_name("name", v))
    kinds: FrozenMap[LayerKind] = attrs.field(converter=_kinds)
    plan: Plan = attrs.field(converter=_plan)
    flags: frozenset[str] = attrs.field(default=(), converter=lambda v: check_flags("flags", v))
    params: FrozenMap[int] = attrs.field(factory=dict, converter=lambda v: check_params("params", v))
    source: str = attrs.field(default="", converter=_string("source"))
    # A multimodal wrapper's other towers by part ("vision", "projector"): parameters only.
    towers: FrozenMap[Tower] = attrs.field(factory=dict, converter=_towers)

    def __attrs_post_init__(self) -> None:
        places = [("plan.first", self.plan.first), ("plan.cycle", self.plan.cycle)]
        places += [(f"plan.{block}", _distinct(kinds)) for block, kinds in self.plan.blocks.items()]
        for where, names in places:
            for kind in names:
                if kind not in self.kinds:
                    raise ModelError(
                        f"{where}: unknown layer kind {kind!r}; defined kinds: "
                        f"{', '.join(sorted(self.kinds)) or 'none'}{did_you_mean(kind, self.kinds)}"
                    )
        unused = sorted(set(self.kinds) - set(self.plan.kinds()) - {k for kinds in self.plan.blocks.values() for k in _distinct(kinds)})
        if unused:
            raise ModelError(f"kinds.{unused[0]} is defined but the plan never uses it")
        for name, kind in self.kinds.items():
            if kind.weight_copies is not None and kind.weight_copies > (runs := total_length(self.plan.indices(name))):
                raise ModelError(f"kinds.{name}.weight_copies = {kind.weight_copies}: more copies of its weights than the {runs} layers that run them")

    def __repr__(self) -> str:
        """Short: name, layer count and the layers of each kind (the attrs dump is the whole plan)."""
        counts = {kind: sum(len(r) for r in self.plan.indices(kind)) for kind in self.plan.kinds()}
        return f"Model(name={self.name!r}, layers={self.plan.layers}, kinds={counts!r})"

    def _repr_markdown_(self) -> str:
        """Jupyter: the model-wide flags and parameters, then one table row per layer kind."""
        def cells(flags: Iterable[str], params: Mapping[str, int]) -> str:
            shown = [f"`{flag}`" for flag in sorted(flags)] + [f"{name} = {value:,}" for name, value in params.items()]
            return ", ".join(shown) or "-"

        rows = [f"| {kind} | {ranges_text(self.plan.indices(kind))} | {cells(self.kinds[kind].flags, self.kinds[kind].params)} |" for kind in self.plan.kinds()]
        return (
            f"**{self.name}**: {self.plan.layers} layers; model-wide: {cells(self.flags, self.params)}\n\n"
            "| kind | layers | flags and parameters |\n|---|---|---|\n" + "\n".join(rows)
        )

    def merged(self, kind: str) -> tuple[frozenset[str], FrozenMap[int]]:
        """The flags and parameters of a layer of *kind*: the model's, with the kind's on top."""
        return self.flags | self.kinds[kind].flags, FrozenMap({**self.params, **self.kinds[kind].params})

    def _layer(self, index: int, kind: str) -> Layer:
        flags, params = self.merged(kind)
        return Layer(index=index, kind=kind, flags=flags, params=params)

    @property
    def layers(self) -> Sequence[Layer]:
        """Every decoder layer, computed from the plan on access (memory does not grow with layers)."""
        return IndexedView(self.plan.layers, lambda i: self._layer(i, self.plan.kind_at(i)))

    def block(self, name: str) -> Sequence[Layer]:
        """The layers of block *name* (none if the plan lists none), numbered after the decoder
        layers and the blocks before it."""
        if not isinstance(name, str):
            raise ModelError(f"block {name!r}: expected a block name (a string), got {type(name).__name__}")
        start, kinds = self._block_start(name), self.plan.blocks.get(name, ())
        return IndexedView(len(kinds), lambda i: self._layer(start + i, kinds[i]))

    def _block_start(self, name: str) -> int:
        """The index of block *name*'s first layer: after the decoder layers and the blocks before it."""
        return self.plan.layers + sum(len(kinds) for block, kinds in self.plan.blocks.items() if block < name)

    def block_kinds(self, name: str) -> dict[str, tuple[range, ...]]:
        """The layers of block *name* by kind, as runs of the indices :meth:`block` gives (one
        progression per place in a repeated block's unit): a block's layers of one kind are alike,
        so they are planned once, as decoder kinds are."""
        start, kinds = self._block_start(name), self.plan.blocks.get(name, ())
        if isinstance(kinds, Repeated):
            end, step = start + len(kinds), len(kinds.unit)
            if step == 1:
                return {kinds.unit[0]: (range(start, end),)}
            return {kind: tuple(range(start + j, end, step) for j, k in enumerate(kinds.unit) if k == kind) for kind in kinds.kinds()}
        return {kind: _runs(start + i for i, k in enumerate(kinds) if k == kind) for kind in dict.fromkeys(kinds)}

    @classmethod
    def uniform(cls, name: str, *, layers: int, flags: Iterable[str] = (), **params: int) -> Model:
        """A model whose layers are all alike, flags and parameters set model-wide."""
        return cls(
            name=name,
            kinds={"layer": LayerKind()},
            plan=Plan.uniform("layer", layers),
            flags=flags,
            params=params,
        )

    def with_param(self, name: str, value: int) -> Model:
        """This model with parameter *name* set to *value* wherever it is set (model-wide and in
        every layer kind that sets it), else model-wide; :meth:`param_places` says where.

        >>> m = Model.example("gemma-3-4b").with_param("window", 512)
        >>> m.params["window"], m.kinds["local"].params["window"]
        (512, 512)
        """
        places = self.param_places(name)
        value = check_int(f"param {name}", value)
        params = {**self.params, name: value} if "params" in places else self.params
        kinds = self.kinds
        if len(places) > ("params" in places):  # some layer kind sets it: those kinds are new (the others shared)
            kinds = {
                k: attrs.evolve(kind, params={**kind.params, name: value}) if f"kinds.{k}.params" in places else kind
                for k, kind in self.kinds.items()
            }
        return attrs.evolve(self, params=params, kinds=kinds)

    def param_places(self, name: str) -> tuple[str, ...]:
        """Where :meth:`with_param` sets parameter *name*: ``"params"`` if the model sets it or no
        layer kind does, and ``"kinds.K.params"`` for each kind K that sets it.

        >>> Model.example("gemma-3-4b").param_places("window")
        ('params', 'kinds.local.params')
        """
        if not isinstance(name, str):
            raise ModelError(f"param {name!r}: expected a parameter name (a string), got {type(name).__name__}")
        kinds = [f"kinds.{k}.params" for k, kind in self.kinds.items() if name in kind.params]
        return (("params",) if name in self.params or not kinds else ()) + tuple(kinds)

    def layers_of(self, kind: str) -> tuple[range, ...]:
        """The decoder layers of *kind*, as ranges of indices (see :meth:`Plan.indices`)."""
        if not isinstance(kind, str) or kind not in self.kinds:
            raise ModelError(f"kind {kind!r}: not a layer kind of {self.name}{did_you_mean(str(kind), self.kinds)}")
        return self.plan.indices(kind)

    @classmethod
    def example(cls, name: str) -> Model:
        """A bundled example model by name, e.g. ``Model.example("gemma-3-4b")``.

        >>> Model.example("llama-3-8b").plan.layers
        32
        """
        if not isinstance(name, str):
            raise ModelError(f"example {name!r:.60}: expected a bundled example's name (a string), got {type(name).__name__}")
        path = example_path(name)
        if path is None:
            names = example_names()
            raise ModelError(
                f"example {name!r}: no bundled example of that name{did_you_mean(name, names)} "
                f"(bundled: {', '.join(names)})"
            )
        return cls.from_toml_string(path.read_text(encoding="utf-8"), where=f"example {name}")

    # -- files ---------------------------------------------------------------------------------
    # The readers (flopsreg.readers) import this module to build models, so these methods reach
    # them by their names in flopsreg's entry-point group "flopsreg.readers" (see _reader).

    @classmethod
    def from_toml(cls, path: Any) -> Model:
        """Read a flopsreg model file (see ``docs/model-files.md``)."""
        return _reader("toml")(_path(path, "a model file"))

    @classmethod
    def from_toml_string(cls, text: str, *, where: str = "<string>") -> Model:
        """Parse the text of a flopsreg model file."""
        if not isinstance(text, str):
            hint = "; decode it first: text.decode('utf-8')" if isinstance(text, (bytes, bytearray)) else ""
            raise ModelError(f"text = {text!r:.60}: expected a model file's text (a str), got {type(text).__name__}{hint}")
        return _reader("toml_string")(text, where=_string("where")(where))

    @classmethod
    def from_hf_config(cls, config: Any, **options: Any) -> Model:
        """A model from a Hugging Face ``config.json`` (a path or the parsed dict).

        The reader plugin of its ``model_type`` maps the config's own fields to explicit flags
        (see ``docs/hf-configs.md``); options as :func:`flopsreg.readers.hf.load_hf_config` takes
        them: ``registry=`` (whose reader plugins to use), ``blocks=("mtp",)``, ``name=``.
        """
        _check_hf_options(options)
        return _reader("hf_config")(config, **options)

    @classmethod
    def from_hf(cls, source: str, *, revision: str | None = None, **options: Any) -> Model:
        """A model from a Hugging Face Hub id (``"Qwen/Qwen3-8B"``), or a local ``config.json`` or
        folder holding one, which wins over a Hub id of the same spelling.

        A Hub id reads only its ``config.json``, through ``huggingface_hub`` (the extra ``hub``):
        its cache, ``HF_HUB_OFFLINE`` and login token apply; *revision* is a branch, tag or commit
        (default the main branch). Other options as :meth:`from_hf_config`; the name defaults to
        the Hub id.
        """
        if not isinstance(source, (str, os.PathLike)):
            raise ModelError(f"source = {source!r:.60}: expected a Hub id or a path (a str), got {type(source).__name__}")
        if revision is not None and not isinstance(revision, str):
            raise ModelError(f"revision = {revision!r:.60}: expected a branch, tag or commit (a str), got {type(revision).__name__}")
        _check_hf_options(options)
        return _reader("hf")(os.fspath(source), revision=revision, **options)

    @classmethod
    def from_megatron_args(cls, args: Any, **options: Any) -> Model:
        """A model from Megatron-LM's argument namespace (``megatron.training.get_args()``).

        MLA is used only when ``multi_latent_attention`` is True, whatever values the MLA
        arguments carry; ``window_size`` is flash-attention's inclusive ``(left, right)``.
        """
        for option in options:
            if option not in _MEGATRON_OPTIONS:
                raise ModelError(
                    f"{option}=: not an option of Model.from_megatron_args{did_you_mean(option, _MEGATRON_OPTIONS)} "
                    f"(options: {', '.join(_MEGATRON_OPTIONS)})"
                )
        _check_registry(options.get("registry"))
        return _reader("megatron_args")(args, **options)

    def to_toml(self) -> str:
        """This model as a model file; :meth:`from_toml_string` gives it back unchanged."""
        return _reader("to_toml")(self)


_MEGATRON_OPTIONS = ("registry", "name")


def _path(value: Any, what: str) -> Any:
    """*value* if it is a file path (a str or a path object of one), else one line saying so."""
    if isinstance(value, str) or isinstance(value, os.PathLike) and isinstance(os.fspath(value), str):
        return value
    raise ModelError(f"path = {value!r:.60}: expected the path of {what} (a str or pathlib.Path), got {type(value).__name__}")


def _check_registry(value: Any) -> None:
    """A reader's ``registry=`` option is None or a registry of plugins."""
    if value is None:
        return
    from flopsreg.plugins.loader import PluginLoader  # loaded already wherever a registry was made

    if not isinstance(value, PluginLoader):
        raise ModelError(f"registry = {value!r:.60}: expected a flopsreg.Registry (or None for the default), got {type(value).__name__}")


def _check_hf_options(options: Mapping[str, Any]) -> None:
    """The ``registry=`` and ``blocks=`` options of the config.json readers, checked before reading."""
    _check_registry(options.get("registry"))
    blocks = options.get("blocks", ())
    if isinstance(blocks, str) or not isinstance(blocks, Iterable):
        raise ModelError(f"blocks = {blocks!r:.60}: expected a list of block names (one name goes in a list too)")


READER_GROUP = "flopsreg.readers"  # the entry-point group naming the readers behind Model.from_*


@functools.cache
def _reader(name: str) -> Callable[..., Any]:
    """The reader registered as *name* in flopsreg's own entry points of :data:`READER_GROUP`
    (pyproject.toml), imported on first use: the reader layer imports this module, so this
    module never imports it, and nothing fills a table for it."""
    reader = own_entry_point(READER_GROUP, name)
    if reader is None:
        raise ModelError(f"reader {name!r}: not among flopsreg's entry points {READER_GROUP!r}; reinstall flopsreg (pip install -e .) to read model files")
    return reader  # type: ignore[no-any-return]
