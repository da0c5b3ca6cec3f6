"""Composition from the manifest alone: a cold ``eval`` without sympy.

The manifest of the built-ins (:mod:`flopsreg.plugins.manifest`) holds every built-in pattern's
formulas as formula trees. Where a default registry would load the built-ins and nothing else,
a model is selected here from the manifest's declarations with the selection rules of
:mod:`flopsreg.engine.select`, and composed by substituting trees, as
:func:`flopsreg.engine.compose.compose` substitutes sympy expressions; the result is the
:class:`~flopsreg.engine.cache.CachedSelection` the cache of compiled models would hold for it.

It answers only where it gives what the sympy composition gives: a model it cannot compose so
(a plan with blocks, a value out of range, an unknown name, any other error, a formula tree
beyond the bounds of :mod:`flopsreg.formula.tree`) gets None, and the caller composes with the
registry, which gives the number or the one-line error. tests/engine/test_cold.py checks that
every bundled example under every convention gives the same numbers and output both ways.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from flopsreg.declarations.readers import family_flag
from flopsreg.engine.cache import CachedSelection, CachedSlot, CachedUnit
from flopsreg.engine.select import SlotSelection, select
from flopsreg.errors import FlopsregError
from flopsreg.formula import named as trees
from flopsreg.model import Model, ranges_text, total_length
from flopsreg.plugins import builtins

__all__ = ["ColdPattern", "Manifest", "builtin_blocks", "cold_selection"]

EXACT = "exact"  # as flopsreg.declarations.pattern spells them (that module imports sympy)
FLOPS = "flops"
SEQ_LEN = "seq_len"
_PACKAGE = "flopsreg.patterns."


class _Unanswered(Exception):
    """The manifest cannot compose this model as sympy would: the registry must."""


class ColdPattern(NamedTuple):
    """A built-in pattern as the manifest gives it: what selection reads, and its formulas as
    trees over symbol names (:mod:`flopsreg.formula.named`), parsed from :attr:`trees` on first use."""

    name: str
    slot: str
    scope: str
    precedence: int
    flags: frozenset[str]
    produces: str
    param_names: frozenset[str]
    weights_only: bool
    refusal: str | None
    trees: str  # JSON: formula, provides, weights, active_weights, constraints ([message, condition])
    counted: Any = None  # under a per-weight convention, the formula that replaces its own

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> ColdPattern:
        return cls(
            data["name"], data["slot"], data["scope"], data["precedence"], frozenset(data["flags"]), data["produces"],
            frozenset(data["params"]), data["weights_only"], data["refusal"], data["trees"],
        )

    @property
    def formula(self) -> Any:
        return _parsed(self.trees)["formula"] if self.counted is None else self.counted

    @property
    def provides(self) -> Mapping[str, Any]:
        return _parsed(self.trees)["provides"]

    @property
    def weights(self) -> Any:
        return _parsed(self.trees)["weights"]

    @property
    def active_weights(self) -> Any:
        return _parsed(self.trees)["active_weights"]

    @property
    def constraints(self) -> list[tuple[str, Any]]:
        return _parsed(self.trees)["constraints"]

    @property
    def quantities(self) -> dict[str, Any]:
        """Its formula under ``produces``, then ``provides`` (as :attr:`Pattern.quantities`)."""
        return {self.produces: self.formula, **self.provides}


@functools.lru_cache(maxsize=None)
def _parsed(trees: str) -> dict[str, Any]:
    """A pattern's trees, parsed once (never changed: substitution builds new trees)."""
    return json.loads(trees)


class _Group(NamedTuple):
    name: str
    default: bool
    beside: frozenset[str]


class _Selector(NamedTuple):
    group: str
    flags: frozenset[str]


class Manifest:
    """The built-ins as the manifest declares them, read the way :func:`~flopsreg.engine.select.select`
    reads a :class:`~flopsreg.plugins.loader.PluginLoader` (first declaration first, BUILTIN order).

    Built from the manifest's index; a module's patterns are read (by *patterns_of*, a module's
    name to its patterns, None where they cannot be read) only when one of them may apply to the
    flags asked about, so a start-up does not grow with the families a model does not use.
    """

    def __init__(self, index: Mapping[str, Any], patterns_of: Callable[[str], Sequence[Mapping[str, Any]] | None]) -> None:
        self._index = index["modules"]
        self._patterns_of = patterns_of
        self._read: dict[str, tuple[Mapping[str, Any], ...]] = {}  # module -> its patterns, as read
        self._owner: dict[str, str] = {}
        declared: dict[str, dict[str, Mapping[str, Any]]] = {}
        readers: list[Mapping[str, Any]] = []
        flags: set[str] = set()
        layer_flags: set[str] = set()
        for entry in self._index.values():
            for kind, items in entry["declares"].items():
                for item in items:
                    key = item["name"] if "name" in item else f"{item['group']}:{'+'.join(item['flags'])}"
                    declared.setdefault(kind, {}).setdefault(key, item)
            readers += entry["declares"].get("hf_readers", ())
            flags.update(*entry["selects"])
            layer_flags.update(entry["layer_flags"])

        def get(kind: str) -> dict[str, Mapping[str, Any]]:
            return declared.get(kind, {})

        self.slots = {name: CachedSlot(item["selective_recompute"]) for name, item in get("slots").items()}
        self.slot_scope = {name: item["scope"] for name, item in get("slots").items()}
        self.per_position = frozenset(name for name, item in get("slots").items() if item["per_position"])
        self.slot_groups = {name: _Group(name, item["default"], frozenset(item["beside"])) for name, item in get("slot_groups").items()}
        self.group_selectors = tuple(_Selector(item["group"], frozenset(item["flags"])) for item in get("group_selectors").values())
        first = {name: name.partition(".")[0] for name, scope in self.slot_scope.items() if scope == "layer"}
        self.slot_group_of = {name: group for name, group in first.items() if group in self.slot_groups}
        self.conventions = {name: item["per_weight"] for name, item in get("conventions").items()}
        self.counts = {name: None if item["counts"] is None else frozenset(item["counts"]) for name, item in get("conventions").items()}
        self.quantities = frozenset(get("quantities"))
        self.replacing_seq_len = frozenset(name for name, item in get("quantities").items() if item.get("replaces_seq_len"))
        self.blocks = dict(get("blocks"))
        self.params = {name: item["minimum"] for name, item in index["params"].items()}
        self.shared = frozenset(index["shared_dimensions"])
        selectors = {flag for g in self.group_selectors for flag in g.flags}
        self.flags = frozenset(flags | selectors | {flag for r in readers for flag in r["flags"]} | {family_flag(r["name"]) for r in readers})
        self.layer_flags = frozenset(layer_flags | selectors)
        self._applicable: dict[frozenset[str], tuple[ColdPattern, ...]] = {}

    def _patterns(self, modules: Iterable[str]) -> list[Mapping[str, Any]]:
        """The patterns of *modules* (in BUILTIN order), each module's read once."""
        found: list[Mapping[str, Any]] = []
        for module in modules:
            if module not in self._read:
                patterns = self._patterns_of(module)
                if patterns is None or any("trees" not in item for item in patterns):
                    raise _Unanswered("a manifest without a module's patterns or their formula trees")
                self._read[module] = tuple(patterns)
                self._owner.update((item["name"], f"{_PACKAGE}{module}") for item in patterns)
            found += self._read[module]
        return found

    def _sorted(self, items: Any) -> tuple[ColdPattern, ...]:
        """*items* as ColdPatterns, by slot, precedence (highest first), name: the loader's order."""
        return tuple(sorted(map(ColdPattern.of, items), key=lambda p: (p.slot, -p.precedence, p.name)))

    def applicable(self, flags: frozenset[str]) -> tuple[ColdPattern, ...]:
        """The patterns whose flags are all among *flags* (read from the modules that hold one)."""
        if flags not in self._applicable:
            modules = [m for m, entry in self._index.items() if any(all(f in flags for f in need) for need in entry["selects"])]
            self._applicable[flags] = self._sorted(p for p in self._patterns(modules) if all(flag in flags for flag in p["flags"]))
        return self._applicable[flags]

    def users_of(self, param: str) -> tuple[ColdPattern, ...]:
        """The patterns that declare parameter *param* (read from the modules that hold one)."""
        modules = [m for m, entry in self._index.items() if param in entry["params"]]
        return self._sorted(p for p in self._patterns(modules) if param in p["params"])

    def plugin_of(self, item: ColdPattern | str) -> str:
        return self._owner[item if isinstance(item, str) else item.name]


@functools.lru_cache(maxsize=1)
def _builtin_manifest() -> Manifest | None:
    index = builtins.planned_manifest()
    if index is None:
        return None
    try:
        return Manifest(index, builtins.planned_patterns)
    except (_Unanswered, KeyError, TypeError):
        return None


def _alone() -> Manifest | None:
    """The manifest, where a default registry would load the built-ins and nothing else."""
    return _builtin_manifest() if builtins.builtins_alone() else None


def builtin_blocks() -> dict[str, str] | None:
    """The blocks a default registry declares (name: meaning), from the manifest; None where it
    cannot say (another plugin may be installed, no manifest)."""
    manifest = _alone()
    return None if manifest is None else {name: item["meaning"] for name, item in manifest.blocks.items()}


def cold_selection(model: Model, convention: str = EXACT) -> CachedSelection | None:
    """*model*'s selection under *convention*, composed from the manifest without sympy, where a
    default registry would load the built-ins alone and the manifest composes the model exactly
    as sympy would; else None (compose with the registry)."""
    manifest = _alone()
    if manifest is None:
        return None
    try:
        return _compose(manifest, model, convention)
    except (_Unanswered, FlopsregError, ValueError, KeyError, RecursionError):
        return None


class _Unit(NamedTuple):
    """One composed unit: its selections, FLOPs terms per slot and the names it uses."""

    name: str
    scope: str
    flags: frozenset[str]
    params: Mapping[str, int]
    layers: tuple[range, ...]
    selections: tuple[SlotSelection, ...]
    terms: dict[str, Any]
    where: str

    @property
    def count(self) -> int:
        return total_length(self.layers) if self.scope == "layer" else 1

    def total(self) -> Any:
        return trees.sum_of(list(self.terms.values()))


def _compose(manifest: Manifest, model: Model, convention: str) -> CachedSelection:
    """As :func:`flopsreg.engine.compose.compose`, with trees; _Unanswered where it would differ."""
    if convention != EXACT and convention not in manifest.conventions:
        raise _Unanswered("an unknown convention")
    if model.plan.blocks:
        raise _Unanswered("a plan with blocks")  # composed by the registry
    _check_names(manifest, model)
    flags = model.flags | {convention} if convention != EXACT else model.flags
    per_weight = manifest.conventions.get(convention)
    kinds = []
    for name in model.plan.kinds():
        kind_flags, params = model.merged(name)
        if convention != EXACT:
            kind_flags = kind_flags | {convention}
        layers = model.plan.indices(name)
        where = f"{'layer' if total_length(layers) == 1 else 'layers'} {ranges_text(layers)} (kind {name!r})"
        kinds.append(_unit(manifest, "layer", kind_flags, params, name, layers, where, convention, per_weight))
    engine = {}
    structure = {}
    for block in manifest.blocks:  # no block lists a layer: each counts 0
        engine[f"{block}_block"] = 0
        structure[f"{block}_layers"] = 0
    head = _unit(manifest, "model", flags, {**model.params, **structure}, "model", (), "model-level slots", convention, per_weight, engine)
    units = [*kinds, *([head] if head.selections else [])]
    whole = trees.sum_of([["mul", unit.count, trees.substitute(unit.total(), unit.params)] for unit in units])
    return CachedSelection(
        model=model,
        convention=convention,
        kinds=tuple(_cached(unit, model) for unit in kinds),
        head=_cached(head, model),
        warnings=_warnings(manifest, model, flags, kinds, head),
        slots=manifest.slots,
        compiled=trees.formula(f"forward FLOPs of {model.name} (composed from the manifest)", whole),
    )


def _check_names(manifest: Manifest, model: Model) -> None:
    """Every flag and parameter is known and every value in range (else the registry says which not)."""
    known_flags = manifest.flags - set(manifest.conventions)
    places = [(model.flags, model.params)] + [(kind.flags, kind.params) for kind in model.kinds.values()]
    for flags, params in places:
        if not flags <= known_flags:
            raise _Unanswered("an unknown flag")
        for name, value in params.items():
            if name not in manifest.params and name not in manifest.shared:
                raise _Unanswered("an unknown parameter")
            if value < manifest.params.get(name, 1):
                raise _Unanswered("a value out of range")


def _counted_per_weight(selection: SlotSelection, convention: str, per_weight: str) -> SlotSelection:
    """As :func:`flopsreg.engine.compose._counted_per_weight`: 2 FLOPs per token per weight."""
    pattern = selection.pattern
    if convention in pattern.flags or pattern.produces != FLOPS:
        return selection
    active = per_weight == "active_weights" and pattern.active_weights is not None
    held = pattern.active_weights if active else pattern.weights
    counted = pattern._replace(
        name=f"{convention}_{pattern.name}", flags=pattern.flags | {convention}, counted=["mul", 2, ["sym", SEQ_LEN], held],
        weights_only=held == 0 and pattern.weights != 0,  # a tree is 0 where its canonical sympy form is
    )
    return SlotSelection(slot=selection.slot, pattern=counted, applicable=(counted, *selection.applicable))


def _unit(
    manifest: Manifest, scope: str, flags: frozenset[str], params: Mapping[str, int], name: str, layers: tuple[range, ...],
    where: str, convention: str, per_weight: str | None, engine: Mapping[str, Any] | None = None,
) -> _Unit:
    """As :func:`flopsreg.engine.compose._plan_unit`, with trees."""
    selections = chosen = select(manifest, scope, flags, where)  # type: ignore[arg-type]
    if per_weight is not None:
        selections = [_counted_per_weight(sel, convention, per_weight) for sel in selections]
    if any(sel.pattern.refusal is not None for sel in selections):
        raise _Unanswered("a refusal")
    kept = frozenset(q for sel in selections for q in sel.pattern.quantities if q in manifest.replacing_seq_len)
    if len(kept) > 1:
        raise _Unanswered("two quantities replacing seq_len")
    if manifest.counts.get(convention) is not None and not _has_terms(manifest, convention, chosen if per_weight else _needed(chosen, kept)):
        raise _Unanswered("a pattern the convention has no term for")
    quantities: dict[str, Any] = dict(engine or {})
    for sel in selections:
        for quantity, tree in sel.pattern.quantities.items():
            if quantity == FLOPS:
                continue
            if quantity in quantities:
                raise _Unanswered("a quantity produced twice")
            quantities[quantity] = tree
    over = [quantities[name] for name in sorted(kept)]
    selections = _needed(selections, kept)
    needed = {q for sel in selections for q in sel.pattern.quantities}
    quantities = {k: v for k, v in quantities.items() if k in needed or k not in manifest.quantities}
    terms = {}
    for sel in selections:
        if sel.pattern.produces != FLOPS:
            continue
        term = trees.substitute(sel.pattern.formula, quantities)
        if trees.symbols(term) & manifest.quantities:
            raise _Unanswered("a quantity no selected pattern produces")
        terms[sel.slot] = trees.replaced(term, SEQ_LEN, over[0]) if over else term
    unit = _Unit(name, scope, flags, params, layers, tuple(selections), terms, where)
    _check_params(unit)
    return unit


def _has_terms(manifest: Manifest, convention: str, selections: Sequence[SlotSelection]) -> bool:
    """As :func:`flopsreg.engine.compose._check_terms`: each slot's exact pattern is one the
    convention declares a term for (a FLOPs pattern counted per weight is its own term)."""
    counts, conventions = manifest.counts[convention], set(manifest.conventions)
    for sel in selections:
        exact = next((p for p in sel.applicable if not p.flags & conventions), None)
        per_weight = manifest.conventions[convention] is not None and exact is sel.pattern and exact.produces == FLOPS
        if not (exact is None or per_weight or exact.name in counts or sel.slot in counts):  # type: ignore[operator]
            return False
    return True


def _needed(selections: Sequence[SlotSelection], kept: frozenset[str] = frozenset()) -> list[SlotSelection]:
    """As :func:`flopsreg.engine.compose._needed`."""
    selections = [sel for sel in selections if not sel.pattern.weights_only]
    providers = {q: sel for sel in selections for q in sel.pattern.quantities if q != FLOPS}
    needed: set[str] = set(kept & set(providers))
    frontier = [sel.pattern.formula for sel in selections if sel.pattern.produces == FLOPS]
    frontier += [providers[q].pattern.quantities[q] for q in needed]
    while frontier:
        for name in trees.symbols(frontier.pop()) & set(providers) - needed:
            needed.add(name)
            frontier.extend(providers[name].pattern.quantities.values())
    kept = {id(providers[q]) for q in needed}
    return [sel for sel in selections if sel.pattern.produces == FLOPS or id(sel) in kept]


def _check_params(unit: _Unit) -> None:
    """Every parameter the unit reads is set and every constraint holds (else the registry says why not)."""
    needed = trees.symbols(unit.total()) - {SEQ_LEN, "cached"}
    for sel in unit.selections:
        for _, condition in sel.pattern.constraints:
            needed |= trees.symbols(condition)
    if not needed <= set(unit.params):
        raise _Unanswered("a parameter not set")
    for sel in unit.selections:
        for _, condition in sel.pattern.constraints:
            test = trees.formula("constraint", condition)
            if test.function(*(unit.params[name] for name in test.argnames)) is not True:
                raise _Unanswered("a constraint that fails")


def _cached(unit: _Unit, model: Model) -> CachedUnit:
    """The unit as the cache holds it: per-slot and total formulas over its parameters and seq_len."""
    label = f"{model.name}, {unit.where}"
    return CachedUnit(
        name=unit.name,
        scope=unit.scope,
        count=unit.count,
        layers=unit.layers,
        patterns={sel.slot: sel.pattern.name for sel in unit.selections},
        params=dict(unit.params),
        total_formula=trees.formula(f"FLOPs of {label}", unit.total()),
        slot_formulas={slot: trees.formula(f"FLOPs of {label}, slot {slot}", term) for slot, term in unit.terms.items()},
    )


def _warnings(manifest: Manifest, model: Model, flags: frozenset[str], kinds: Sequence[_Unit], head: _Unit) -> tuple[str, ...]:
    """As :func:`flopsreg.engine.compose.unused`, with its values filled in (:func:`~flopsreg.engine.compose.warning_texts`)."""
    conventions = set(manifest.conventions)

    def used(unit: _Unit) -> set[str]:
        names = trees.symbols(unit.total())
        names |= {
            name for p in manifest.applicable(unit.flags) if p.scope == unit.scope and p.weights_only for name in p.param_names
        }
        for sel in unit.selections:
            names |= sel.pattern.param_names
            if sel.pattern.flags & conventions:
                names |= set().union(*(p.param_names for p in sel.applicable))
        return names

    def hint(name: str) -> str:
        reachable = [p for p in manifest.users_of(name) if not (p.flags & conventions) - flags]
        shown = ", ".join(f"{p.name} (flags: {', '.join(sorted(p.flags)) or 'none'})" for p in reachable)
        return f"; it is used by {shown}" if shown else ""

    def other_conventions_only(name: str) -> bool:
        declaring = manifest.users_of(name)
        return bool(declaring) and all((p.flags & conventions) - flags for p in declaring)

    warnings = []
    for name, kind in model.kinds.items():
        for flag in sorted(kind.flags - manifest.layer_flags):
            warnings.append(
                f"kinds.{name}.flags: {flag!r} selects only model-level patterns, so on a layer kind it "
                "does nothing; set it in the model's flags"
            )
    used_anywhere = set().union(used(head), *(used(k) for k in kinds))
    for name, value in model.params.items():
        if name not in used_anywhere and not other_conventions_only(name):
            warnings.append(f"params.{name} = {value} is set but no selected pattern uses it{hint(name)}")
    for unit in kinds:
        for name, value in model.kinds[unit.name].params.items():
            if name not in used(unit) and not other_conventions_only(name):
                warnings.append(
                    f"kinds.{unit.name}.params.{name} = {value} is set but no pattern selected for {unit.where} uses it{hint(name)}"
                )
    return tuple(warnings)
