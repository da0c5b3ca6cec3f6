"""Load-time checks of what plugins contribute: symbols, exactness, ties, flagless use, and
whether every FLOPs formula stays a whole number with every set of patterns that can apply
together; the weights a pattern holds are whole and non-negative; formulas nest no deeper than
:data:`MAX_DEPTH`; parameters are still valid :class:`~flopsreg.declarations.pattern.Param`. Each raises :class:`~flopsreg.errors.PluginError` naming the plugin to skip.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Iterable, Iterator, Mapping, Sequence
from fractions import Fraction
from typing import Any, NamedTuple

import attrs
import sympy

from flopsreg.declarations.pattern import FLOPS, Pattern, SlotGroup
from flopsreg.declarations.readers import MegatronReader
from flopsreg.errors import PatternError, PluginError, did_you_mean
from flopsreg.formula.exact import trial_function

__all__ = [
    "MAX_DEPTH",
    "Claim",
    "check_claims",
    "check_default_group",
    "declaration_faults",
    "check_compositions",
    "check_depth",
    "check_exact",
    "check_flagless_params",
    "check_params",
    "check_symbols",
    "check_ties",
    "tie_faults",
    "is_builtin",
    "unprovided",
]


# The deepest built-in expression nests 14 levels as built (13 read canonical: dsa_kpool_topk_tail's
# formula); sympy's printers and the formula compiler recurse out from about 250. Four times the
# built-ins' depth, a quarter of where things break.
MAX_DEPTH = 64


def nesting_depth(expr: Any) -> int:
    """How many levels of arguments *expr* nests (a symbol or number: 0), walked level by level
    without recursion and without hashing (both recurse through a deep expression)."""
    level, depth = [expr], 0
    while True:
        below = {id(arg): arg for node in level if isinstance(node, sympy.Basic) for arg in node.args}
        if not below:
            return depth
        level, depth = list(below.values()), depth + 1


def _as_built(pattern: Pattern) -> dict[str, Any]:
    """Every expression *pattern* declares, as the plugin built it: reading one canonical
    (:func:`flopsreg.declarations.pattern.canonical`) rebuilds it recursively."""
    built = {"formula": pattern._formula, **{f"provides[{q!r}]": e for q, e in pattern._provides.items()}}
    built |= {"weights": pattern._weights, "active_weights": pattern._active_weights}
    built |= {"cache": pattern._cache, "state": pattern._state, "routed_weights": pattern._routed_weights}
    return built | {f"constraint {c.message!r}": c._condition for c in pattern.constraints}


def check_depth(plugin: str, pattern: Pattern) -> None:
    """No expression of *pattern* nests deeper than :data:`MAX_DEPTH`: checked before anything
    recurses through it, so a deep formula is refused by name rather than a RecursionError."""
    for label, expr in _as_built(pattern).items():
        depth = nesting_depth(expr)
        if depth > MAX_DEPTH:
            raise PluginError(
                plugin,
                f"pattern {pattern.name!r}: {label} nests {depth} levels deep, more than the {MAX_DEPTH} flopsreg "
                "accepts; write it flatter (name repeated parts as quantities, or sum terms)",
            )


def check_params(plugin: str, pattern: Pattern) -> None:
    """Each parameter passes :class:`~flopsreg.declarations.pattern.Param`'s validation again: a name that cannot be
    a symbol (``1x``, ``a b``) is refused by pattern and parameter, however it got past the constructor."""
    for param in pattern.params:
        try:
            attrs.validate(param)
        except PatternError as exc:
            raise PluginError(plugin, f"pattern {pattern.name!r} declares an invalid parameter: {exc}") from None


def check_symbols(plugin: str, pattern: Pattern, declared: Mapping[sympy.Symbol, str]) -> None:
    """Every symbol of every formula is a declared one (shared, a quantity, a block's) or one of
    the pattern's parameters; *declared* maps each declared symbol to what it is."""
    allowed = {**declared, **{p.symbol: "a parameter of this pattern" for p in pattern.params}}
    allowed_names = {sym.name for sym in allowed}
    expressions = list(pattern.quantities.values()) + [c.condition for c in pattern.constraints] + list(_weight_forms(pattern).values())
    for expr in expressions:
        for symbol in sorted(expr.free_symbols, key=str):
            if symbol in allowed:
                continue
            if symbol.name in allowed_names:
                hint = (
                    f"symbol {symbol.name!r} was created with other assumptions: use Param.symbol, "
                    "Quantity.symbol, Block.flops/layers or flopsreg.declarations.symbols"
                )
            else:
                names = sorted(sym.name for sym in declared)
                hint = (
                    f"symbol {symbol.name!r} is neither a declared symbol ({', '.join(names)}) nor a "
                    f"parameter of the pattern ({', '.join(sorted(p.name for p in pattern.params)) or 'none'})"
                    f"{did_you_mean(symbol.name, allowed_names)}"
                )
            raise PluginError(plugin, f"pattern {pattern.name!r}: {hint}")


# -- load-time checks of formulas and of how patterns combine --------------------------------------

_TRIAL_VALUES = (1, 2, 3, 7, 64, 4096)  # odd and even, below and above each other, small and large
_INEXACT = (sympy.Float, sympy.NumberSymbol, sympy.core.numbers.Infinity, sympy.core.numbers.NegativeInfinity,
            sympy.core.numbers.ComplexInfinity, sympy.core.numbers.NaN, sympy.core.numbers.ImaginaryUnit)


def is_builtin(plugin: Any) -> bool:
    """A module of :mod:`flopsreg.patterns`, however it was passed."""
    return type(plugin) is types.ModuleType and plugin.__name__.startswith("flopsreg.patterns.")  # type(): runs no plugin code


@functools.lru_cache(maxsize=4096)
def _names_in(pattern: Pattern, *, constraints: bool = True) -> frozenset[str]:
    """Every symbol name *pattern*'s formulas (and constraints) use."""
    exprs = [*pattern.quantities.values(), *(c.condition for c in pattern.constraints if constraints)]
    return frozenset(sym.name for expr in exprs for sym in expr.free_symbols)


def _uses(consumer: Pattern, pool: Sequence[Pattern], quantities: frozenset[str]) -> frozenset[str]:
    """The quantities *consumer* uses, directly or through any provider in *pool*."""
    used: set[str] = set()
    frontier = set(_names_in(consumer, constraints=False) & quantities)
    while frontier:
        used |= frontier
        frontier = {
            name for p in pool if frontier & p.quantities.keys() for name in _names_in(p, constraints=False)
        } & quantities - used
    return frozenset(used)


def _weight_forms(pattern: Pattern) -> dict[str, sympy.Expr]:
    """``weights`` and, when given, ``active_weights``."""
    forms = {"weights": pattern.weights}
    if pattern.active_weights is not None:
        forms["active_weights"] = pattern.active_weights
    return forms


def _labelled(pattern: Pattern) -> dict[str, sympy.Expr]:
    return {"formula": pattern.formula, **{f"provides[{q!r}]": e for q, e in pattern.provides.items()}}


def _inexact_atom(expr: sympy.Basic) -> sympy.Basic | None:
    """The first part of *expr* with no exact rational value (a float, pi, sqrt(2), oo, ...)."""
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, _INEXACT) or (node.is_Pow and not node.exp.is_Integer):
            return node
    return None


@functools.lru_cache(maxsize=1024)
def _grid(names: tuple[str, ...], minimum: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """A few deterministic points: all names at each trial value, then the values rotated among names."""
    n = len(_TRIAL_VALUES)
    points = (
        tuple(max(_TRIAL_VALUES[(i + stride * j) % n], low) for j, low in enumerate(minimum))
        for stride in (0, 1, 2)
        for i in range(n)
    )
    return tuple(dict.fromkeys(points))


@functools.lru_cache(maxsize=4096)
def _condition_names(condition: sympy.Basic) -> tuple[str, ...]:
    return tuple(sorted(sym.name for sym in condition.free_symbols))


@functools.lru_cache(maxsize=4096)
def _holds(condition: sympy.Basic, values: tuple[tuple[str, int], ...]) -> bool:
    point = dict(values)
    return bool(condition.xreplace({sym: sympy.Integer(point[sym.name]) for sym in condition.free_symbols}))


def _value(expr: sympy.Expr, point: dict[str, Any], providers: Mapping[str, Pattern]) -> Any:
    """*expr* at *point*, each quantity taken from its provider's formula (cached in *point*)."""
    argnames, function = trial_function(expr)
    for name in argnames:
        if name not in point:
            point[name] = _value(providers[name].quantities[name], point, providers)
    try:
        return function(*(point[name] for name in argnames))
    except (ArithmeticError, TypeError, ValueError) as exc:  # 1/0, a Piecewise with no true branch, ...
        return f"undefined ({type(exc).__name__})"


def _trial_points(members: Sequence[Pattern], names: set[str]) -> Iterable[dict[str, int]]:
    """Grid points over *names* at which every constraint of *members* holds."""
    minimum = {p.name: p.minimum for m in members for p in m.params}
    ordered = tuple(sorted(names))
    constraints = [c.condition for m in members for c in m.constraints]
    for values in _grid(ordered, tuple(minimum.get(name, 1) for name in ordered)):
        point = dict(zip(ordered, values))
        if all(_holds(c, tuple((name, point[name]) for name in _condition_names(c))) for c in constraints):
            yield point


def _shown(point: Mapping[str, Any]) -> str:
    return ", ".join(f"{name}={value}" for name, value in sorted(point.items()))


def check_exact(plugin: str, pattern: Pattern) -> None:
    """Every formula is built from integers and rationals and is a finite rational on the trial grid;
    the weights are whole, non-negative, and the active ones no more than all."""
    fault = _inexact(pattern)
    if fault is not None:
        raise PluginError(plugin, f"pattern {pattern.name!r}: {fault}")


@functools.lru_cache(maxsize=4096)
def _inexact(pattern: Pattern) -> str | None:
    """Why a formula of *pattern* has no exact rational value somewhere, or None."""
    for label, expr in _labelled(pattern).items():
        atom = _inexact_atom(expr)
        if atom is not None:
            return (
                f"{label} contains {atom}, which has no exact rational value; "
                "use integers and sympy.Rational (s**2 / 2, not 0.5 * s**2)"
            )
        try:
            trial_function(expr)
        except PatternError as exc:
            return f"{label}: {exc}"
        names = {sym.name for sym in expr.free_symbols} | {n for c in pattern.constraints for n in _condition_names(c.condition)}
        for point in _trial_points([pattern], names):
            value = _value(expr, dict(point), {})
            if not isinstance(value, (int, Fraction)):
                return f"{label} is not a finite rational number at {_shown(point)}: {value}"
    return _weights_fault(pattern)


def _weights_fault(pattern: Pattern) -> str | None:
    """Why the weights of *pattern* are not a whole number >= 0 somewhere on the trial grid (with
    the quantities they use as free values), or why the active ones exceed all; else None."""
    forms = _weight_forms(pattern)
    for label, expr in forms.items():
        atom = _inexact_atom(expr)
        if atom is not None:
            return f"{label} contains {atom}, which has no exact rational value; use integers and sympy.Rational"
        try:
            trial_function(expr)
        except PatternError as exc:
            return f"{label}: {exc}"
    names = {sym.name for expr in forms.values() for sym in expr.free_symbols}
    names |= {n for c in pattern.constraints for n in _condition_names(c.condition)}
    for point in _trial_points([pattern], names):
        values = {label: _value(expr, dict(point), {}) for label, expr in forms.items()}
        for label, value in values.items():
            if not (isinstance(value, (int, Fraction)) and value == int(value) and value >= 0):
                return f"{label} is not a whole number >= 0 at {_shown(point)}: {value}"
        if values.get("active_weights", 0) > values["weights"]:
            return f"active_weights ({values['active_weights']}) exceed weights ({values['weights']}) at {_shown(point)}"
    return None


def check_flagless_params(plugin: str, patterns: Sequence[Pattern], builtin: Sequence[Pattern], selected: frozenset[str]) -> None:
    """A flagless pattern applies to every model: it may use only parameters every model sets.

    Those are the parameters of the built-in flagless patterns of the same scope (the default
    projection's kv_heads and head_dim): every model must set them already. A pattern of a slot
    in *selected* (a slot group a layer has only where flags select it) applies only there: its
    group's flags are its own, so it needs none.
    """
    for pattern in patterns:
        if pattern.flags or pattern.slot in selected:
            continue
        allowed = {name for p in builtin if not p.flags and p.scope == pattern.scope for name in p.param_names}
        for name in sorted(pattern.param_names - allowed):
            raise PluginError(
                plugin,
                f"pattern {pattern.name!r} has no flags, so it would apply to every model, but it needs parameter "
                f"{name!r} that not every model sets; give it a flag",
            )


def _conventions_of(patterns: Iterable[Pattern], conventions: set[str]) -> set[str]:
    return {flag for p in patterns for flag in p.flags if flag in conventions}


def _co_apply(patterns: Iterable[Pattern], conventions: set[str]) -> bool:
    """Whether one layer (or model) can select all *patterns*: at most one convention among their flags."""
    return len(_conventions_of(patterns, conventions)) <= 1


def check_ties(
    plugin: str, patterns: Sequence[Pattern], loaded: Sequence[Pattern], conventions: set[str], owner: Mapping[str, str]
) -> None:
    """Two patterns of one slot with equal precedence that can both apply: the later plugin is skipped."""
    for fault in tie_faults([(plugin, patterns)], loaded, conventions, owner):
        raise fault


def tie_faults(
    plugins: Iterable[tuple[str, Sequence[Any]]], loaded: Sequence[Any], conventions: set[str], owner: Mapping[str, str]
) -> Iterator[PluginError]:
    """:func:`check_ties` over *plugins* in load order, each against *loaded* and the plugins
    before it that had no tie: the fault of each plugin that has one. Patterns are read by name,
    slot, scope, precedence and flags only (a :class:`Pattern` or the manifest's entry), indexed
    by slot, scope and precedence: a start-up checks every built-in."""
    places: dict[tuple[str, str, int], list[Any]] = {}
    for pattern in loaded:
        places.setdefault((pattern.slot, pattern.scope, pattern.precedence), []).append(pattern)
    owners = dict(owner)
    for plugin, patterns in plugins:
        owners |= {p.name: plugin for p in patterns}
        added: list[tuple[str, str, int]] = []
        fault = None
        for pattern in patterns:
            place = (pattern.slot, pattern.scope, pattern.precedence)
            other = next((o for o in places.get(place, ()) if _co_apply((pattern, o), conventions)), None)
            if other is not None:
                fault = _tie(plugin, pattern, other, owners, [*(p for ps in places.values() for p in ps), *patterns])
                break
            places.setdefault(place, []).append(pattern)
            added.append(place)
        if fault is not None:
            for place in added:  # the plugin is skipped: none of its patterns stays
                places[place].pop()
            yield fault


def _tie(plugin: str, pattern: Any, other: Any, owner: Mapping[str, str], known: Sequence[Any]) -> PluginError:
    flags = sorted(pattern.flags | other.flags)
    where = f"where flags {', '.join(flags)} are set" if flags else "everywhere (neither has flags)"
    taken = sorted({p.precedence for p in known if (p.slot, p.scope) == (pattern.slot, pattern.scope)})
    return PluginError(
        plugin,
        f"pattern {pattern.name!r} ties with pattern {other.name!r} (plugin {owner[other.name]!r}) in slot "
        f"{pattern.slot}: both have precedence {pattern.precedence} and both apply {where}; give "
        f"{pattern.name!r} a precedence no other pattern of {pattern.slot} has (taken: "
        f"{', '.join(map(str, taken))})",
    )


class Claim(NamedTuple):
    """The Megatron-LM arguments a reader claims at its precedence, as the manifest lists them."""

    name: str
    precedence: int
    arguments: tuple[str, ...]

    clashes = MegatronReader.clashes  # the arguments both claim at equal precedence


def check_claims(plugin: str, readers: Sequence[Any], earlier: Sequence[tuple[Any, str]]) -> None:
    """Two Megatron-LM readers (:class:`MegatronReader` or :class:`Claim`) claiming one argument
    at equal precedence: nobody decided. *earlier*: (reader, its plugin) of the plugins before."""
    for i, reader in enumerate(readers):
        for other, by in [*earlier, *((r, plugin) for r in readers[i + 1 :])]:
            tied = reader.clashes(other)
            if tied:
                raise PluginError(
                    plugin,
                    f"Megatron-LM reader {reader.name!r} claims args.{tied[0]} at precedence {reader.precedence}, "
                    f"as does reader {other.name!r} of plugin {by!r}; give one of them a higher precedence",
                )


def declaration_faults(
    plugins: Sequence[tuple[str, Sequence[Any], Sequence[Any], Sequence[SlotGroup]]], conventions: set[str]
) -> list[PluginError]:
    """The checks that read declarations only, over *plugins* in load order, each given as (name,
    patterns, Megatron-LM readers, slot groups): :func:`tie_faults`, :func:`check_claims` and
    :func:`check_default_group`, each plugin against those before it that had no fault. Run on
    the manifest's data at every start (no import), they cost a pass over the patterns."""
    faults = {fault.plugin: fault for fault in tie_faults([(name, patterns) for name, patterns, _, _ in plugins], (), conventions, {})}
    found: list[PluginError] = []
    claims: list[tuple[Any, str]] = []
    default: str | None = None
    for name, _, readers, groups in plugins:
        try:
            if name in faults:
                raise faults[name]
            check_claims(name, readers, claims)
            check_default_group(name, groups, default)
        except PluginError as error:
            found.append(error)
            continue
        claims += [(reader, name) for reader in readers]
        default = default or next((g.name for g in groups if g.default), None)
    return found


def check_default_group(plugin: str, groups: Sequence[SlotGroup], default: str | None) -> None:
    """At most one slot group is the default token mixer: *default* is the one declared before (None: none)."""
    defaults = ([default] if default else []) + [g.name for g in groups if g.default and g.name != default]
    if len(defaults) > 1:
        raise PluginError(
            plugin,
            f"slot groups {defaults[0]!r} and {defaults[1]!r} are both the default token mixer; at most one group may be "
            "(select the other by flags with a GroupSelector)",
        )


def _compositions(
    consumer: Pattern, pool: Sequence[Pattern], conventions: set[str], quantities: frozenset[str]
) -> Iterable[dict[str, Pattern]]:
    """Each way one layer could provide the quantities *consumer* uses: ``{quantity: provider}``.

    As the engine selects: one pattern per slot, each quantity from one pattern, at most one
    convention among all their flags.
    """

    def extend(chosen: dict[str, Pattern], todo: list[str]) -> Iterable[dict[str, Pattern]]:
        if not todo:
            yield chosen
            return
        quantity, rest = todo[0], todo[1:]
        if quantity in chosen:
            yield from extend(chosen, rest)
            return
        for provider in pool:
            if provider is consumer or provider.scope != consumer.scope or quantity not in provider.quantities:
                continue
            members = {id(p): p for p in (consumer, *chosen.values())}
            if any(p.slot == provider.slot and p is not provider for p in members.values()):
                continue
            if any(chosen.get(q, provider) is not provider for q in provider.quantities if q != FLOPS):
                continue
            if not _co_apply((*members.values(), provider), conventions):
                continue
            more = sorted(_names_in(provider, constraints=False) & quantities)
            yield from extend({**chosen, **{q: provider for q in provider.quantities if q != FLOPS}}, rest + more)

    own = {q: consumer for q in consumer.provides}  # a pattern may use what it provides
    yield from extend(own, sorted(_names_in(consumer, constraints=False) & quantities))


def check_compositions(
    plugin: str,
    patterns: Sequence[Pattern],
    loaded: Sequence[Pattern],
    conventions: set[str],
    owner: Mapping[str, str],
    quantities: frozenset[str],
) -> None:
    """Every FLOPs formula, with each co-applicable set of quantity providers, is an integer on the grid.

    Only compositions with a member from this plugin are checked: the others passed when their
    latest member loaded, so a fault is always blamed on the later plugin.
    """
    pool = [*loaded, *patterns]
    new = {id(p) for p in patterns}
    new_quantities = {q for p in patterns for q in p.quantities if q != FLOPS}
    for consumer in pool:
        if consumer.produces != FLOPS or (id(consumer) not in new and not new_quantities & _uses(consumer, pool, quantities)):
            continue
        for providers in _compositions(consumer, pool, conventions, quantities):
            if not new & {id(p) for p in (consumer, *providers.values())}:
                continue
            fault = _non_integer_point(consumer, tuple(sorted(providers.items())), quantities)
            if fault is not None:
                raise PluginError(plugin, _composition_fault(consumer, providers, owner, *fault))


@functools.lru_cache(maxsize=4096)
def _non_integer_point(
    consumer: Pattern, providers: tuple[tuple[str, Pattern], ...], quantities: frozenset[str]
) -> tuple[dict[str, int], Any] | None:
    """The first trial point where *consumer*'s FLOPs with these providers are not a whole number."""
    members = list({id(p): p for p in (consumer, *(p for _, p in providers))}.values())
    names = set().union(*(_names_in(p) for p in members)) - quantities
    for point in _trial_points(members, names):
        value = _value(consumer.formula, dict(point), dict(providers))
        if not (type(value) is int or (isinstance(value, Fraction) and value.denominator == 1)):
            return point, value
    return None


def _composition_fault(
    consumer: Pattern, providers: Mapping[str, Pattern], owner: Mapping[str, str], point: Mapping[str, int], value: Any
) -> str:
    """The message for a FLOPs formula that is not a whole number with these providers at *point*."""
    by_provider: dict[str, list[str]] = {}
    for quantity, provider in sorted(providers.items()):
        by_provider.setdefault(provider.name, []).append(quantity)
    sources = "; ".join(
        f"{', '.join(qs)} from {name!r} (plugin {owner[name]!r})" for name, qs in by_provider.items()
    )
    return (
        f"pattern {consumer.name!r} (plugin {owner[consumer.name]!r}) gives {value} FLOPs at {_shown(point)}"
        f"{f' with {sources}' if sources else ''}; FLOPs must be whole numbers (a quantity such as pairs may be "
        "a fraction only if every formula using it makes the product whole)"
    )


def unprovided(pattern: Pattern, patterns: Sequence[Pattern], conventions: set[str], quantities: frozenset[str]) -> str | None:
    """Why *pattern* could never be evaluated for lack of a quantity provider, or None."""
    for quantity in sorted(_names_in(pattern, constraints=False) & quantities):
        providers = [
            p for p in patterns
            if (p is not pattern or quantity in pattern.provides)  # a pattern may use what it provides
            and p.scope == pattern.scope and quantity in p.quantities and _co_apply((p, pattern), conventions)
        ]
        if not pattern.flags and not any(not p.flags for p in providers):
            unit = "layer" if pattern.scope == "layer" else "model"
            return (
                f"pattern {pattern.name!r} has no flags, so it applies to every {unit}, but it uses quantity "
                f"{quantity!r}, which no flagless pattern of scope {pattern.scope!r} produces"
            )
        if not providers:
            return f"pattern {pattern.name!r} uses quantity {quantity!r}, which no pattern of scope {pattern.scope!r} produces"
    return None
