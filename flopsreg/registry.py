"""The registry: loads pattern plugins into a fresh pluggy manager and validates them.

Built-in patterns (every module of :mod:`flopsreg.patterns`) go through exactly the hook a
third-party plugin uses. A plugin that fails in any way is skipped as a whole, reported by name
in :attr:`Registry.errors` and as a :class:`~flopsreg.errors.PluginWarning`; the others load.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import inspect
import os
import pkgutil
import types
import warnings
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import pluggy
import sympy

from flopsreg import hookspecs
from flopsreg.compile import trial_function
from flopsreg.errors import PatternError, PluginError, PluginWarning, did_you_mean
from flopsreg.pattern import Convention, Param, Pattern
from flopsreg.symbols import SHARED

from flopsreg.engine import ModelPlan, Result, evaluate, plan_model

if TYPE_CHECKING:
    from flopsreg.compare import Comparison
    from flopsreg.model import Model

__all__ = ["ENTRY_POINT_GROUP", "EXACT", "Registry"]

ENTRY_POINT_GROUP = "flopsreg"
EXACT = "exact"  # the default convention: the patterns without convention flags
_PLAN_CACHE_SIZE = 1024
_HOOK_NAMES = frozenset(
    name for name in dir(hookspecs) if name.startswith("flopsreg_") and callable(getattr(hookspecs, name))
)


def builtin_plugins() -> list[types.ModuleType]:
    """Every module of :mod:`flopsreg.patterns`, imported, in name order."""
    import flopsreg.patterns

    names = sorted(m.name for m in pkgutil.iter_modules(flopsreg.patterns.__path__) if not m.name.startswith("_"))
    return [importlib.import_module(f"flopsreg.patterns.{name}") for name in names]


def _plugin_name(plugin: object) -> str:
    if isinstance(plugin, types.ModuleType):
        return plugin.__name__
    if inspect.isclass(plugin):
        return plugin.__qualname__
    return type(plugin).__qualname__


class Registry:
    """All loaded patterns, and the entry point to evaluation.

    >>> reg = Registry.default()
    >>> [p.name for p in reg.patterns if p.slot == "attention.mask"]
    ['megatron_causal', 'slime_causal', 'chunked', 'sliding_window', 'full_causal']

    Args:
        plugins: extra plugin objects (modules, classes or instances with hookimpls).
        builtins: register the built-in patterns of :mod:`flopsreg.patterns` first.
        load_entry_points: then load installed plugins of the entry-point group ``flopsreg``
            (skipped when the environment sets ``FLOPSREG_DISABLE_PLUGIN_AUTOLOAD=1``).
    """

    def __init__(
        self,
        plugins: Iterable[object] = (),
        *,
        builtins: bool = True,
        load_entry_points: bool = True,
    ) -> None:
        self._pm = pluggy.PluginManager(hookspecs.PROJECT)
        self._pm.add_hookspecs(hookspecs)
        self._errors: list[PluginError] = []
        self._loaded: dict[str, tuple[list[Pattern], list[Convention]]] = {}  # plugin name -> its items
        self._builtins: set[str] = set()  # names of the loaded plugins of flopsreg.patterns
        self._index()
        self._plans: dict[tuple[Model, str], ModelPlan] = {}  # selection is pure: plan once per model
        candidates: list[tuple[str, Any]] = []
        if builtins:
            candidates += [(_plugin_name(m), m) for m in builtin_plugins()]
        candidates += [(_plugin_name(p), p) for p in plugins]
        if load_entry_points and os.environ.get("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD") != "1":
            candidates += self._entry_point_plugins()
        for name, plugin in candidates:
            try:
                self._loaded[name] = self._load(name, plugin)
            except PluginError as error:
                self._skip(error)
                continue
            if _is_builtin(plugin):
                self._builtins.add(name)
            self._index()
        self._check_quantities_provided()
        self._pm.check_pending()
        patterns = [p for own, _ in self._loaded.values() for p in own]
        self.patterns: tuple[Pattern, ...] = tuple(sorted(patterns, key=lambda p: (p.slot, -p.precedence, p.name)))

    @classmethod
    def default(cls) -> Registry:
        """The built-in patterns plus every installed plugin."""
        return cls()

    # -- loading -------------------------------------------------------------------------------

    def _entry_point_plugins(self) -> list[tuple[str, Any]]:
        loaded = []
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = ep.dist.name if ep.dist else "?"
            name = f"{ep.name} ({dist})"
            try:
                loaded.append((name, ep.load()))
            except Exception as exc:  # one broken plugin must not stop the others
                error = PluginError(name, f"failed to import {ep.value!r}: {type(exc).__name__}: {exc}")
                self._errors.append(error)
                warnings.warn(str(error), PluginWarning, stacklevel=3)
        return loaded

    def _load(self, name: str, plugin: Any) -> list[Pattern]:
        """Register one plugin, call its hook and validate what it returns; all or nothing."""
        self._check_hook_names(name, plugin)
        try:
            self._pm.register(plugin, name=name)
        except (ValueError, pluggy.PluginValidationError) as exc:
            raise PluginError(name, str(exc)) from exc
        try:
            patterns = self._collect(name, "flopsreg_register_patterns", Pattern)
            self._check_patterns(name, patterns)
            conventions = self._collect(name, "flopsreg_register_conventions", Convention)
            self._check_conventions(name, conventions)
            self._check_against_loaded(name, plugin, patterns, conventions)
        except PluginError:
            self._pm.unregister(name=name)
            raise
        return patterns, conventions

    def _skip(self, error: PluginError) -> None:
        self._errors.append(error)
        warnings.warn(str(error), PluginWarning, stacklevel=3)

    def _index(self) -> None:
        """The owner, parameter and convention tables of the loaded plugins, first declaration first."""
        self._owner: dict[str, str] = {}  # pattern name -> plugin name
        self._params: dict[str, tuple[Param, str]] = {}  # param name -> (param, pattern name)
        self._conventions: dict[str, tuple[Convention, str]] = {}  # name -> (convention, plugin)
        for name, (patterns, conventions) in self._loaded.items():
            for pattern in patterns:
                self._owner[pattern.name] = name
                for param in pattern.params:
                    self._params.setdefault(param.name, (param, pattern.name))
            self._conventions.update({c.name: (c, name) for c in conventions})

    def _check_against_loaded(
        self, name: str, plugin: Any, patterns: Sequence[Pattern], conventions: Sequence[Convention]
    ) -> None:
        """The checks that need the plugins loaded before: ties, flagless use, integer compositions."""
        for pattern in patterns:
            _check_exact(name, pattern)
        loaded = [p for own, _ in self._loaded.values() for p in own]
        builtin = [p for n in self._builtins for p in self._loaded[n][0]] + (list(patterns) if _is_builtin(plugin) else [])
        _check_flagless_params(name, patterns, builtin)
        names = {*self._conventions, *(c.name for c in conventions)}
        owner = {**self._owner, **{p.name: name for p in patterns}}
        _check_ties(name, patterns, loaded, names, owner)
        _check_compositions(name, patterns, loaded, names, owner)

    def _check_quantities_provided(self) -> None:
        """Drop plugins whose patterns use a quantity that no pattern able to apply with them provides.

        Run once everything is loaded (built-in consumers load before their providers); a plugin
        dropped here may have provided another's quantity, so repeat until nothing changes.
        """
        while True:
            patterns = [p for own, _ in self._loaded.values() for p in own]
            conventions = set(self._conventions)
            for name, (own, _) in self._loaded.items():
                problem = next(filter(None, (_unprovided(p, patterns, conventions) for p in own)), None)
                if problem:
                    self._pm.unregister(name=name)
                    del self._loaded[name]
                    self._builtins.discard(name)
                    self._index()
                    self._skip(PluginError(name, problem))
                    break
            else:
                return

    def _check_conventions(self, name: str, conventions: Sequence[Convention]) -> None:
        seen: set[str] = set()
        for convention in conventions:
            if convention.name == EXACT:
                raise PluginError(name, f"convention name {EXACT!r} is reserved for flopsreg's own exact counting")
            owner = self._conventions.get(convention.name)
            if owner is not None or convention.name in seen:
                by = owner[1] if owner else name
                raise PluginError(name, f"convention {convention.name!r} is already registered by plugin {by!r}")
            seen.add(convention.name)

    def _check_hook_names(self, name: str, plugin: Any) -> None:
        for attr in dir(plugin):
            opts = self._pm.parse_hookimpl_opts(plugin, attr)
            marked = opts is not None
            hook = (opts or {}).get("specname") or attr
            if marked and hook not in _HOOK_NAMES:
                raise PluginError(name, f"unknown hook {hook!r}{did_you_mean(hook, _HOOK_NAMES)}")
            if attr in _HOOK_NAMES and not marked and callable(getattr(plugin, attr, None)):
                raise PluginError(name, f"{attr!r} is not decorated with @flopsreg.hookimpl, so it would never run")

    def _collect(self, name: str, hook: str, kind: type) -> list[Any]:
        """Call plugin *name*'s implementation of *hook* and check it returned a list of *kind*."""
        items: list[Any] = []
        for impl in getattr(self._pm.hook, hook).get_hookimpls():
            if impl.plugin_name != name:
                continue
            if impl.kwargnames:
                raise PluginError(
                    name,
                    f"hookimpl {impl.function.__name__} has default-valued parameters "
                    f"{list(impl.kwargnames)}; pluggy never passes them, so remove them",
                )
            try:
                returned = impl.function()
            except Exception as exc:
                raise PluginError(name, f"{hook} raised {type(exc).__name__}: {exc}") from exc
            if not isinstance(returned, (list, tuple)):
                raise PluginError(name, f"{hook} must return a list of {kind.__name__}, got {type(returned).__name__}")
            for item in returned:
                if not isinstance(item, kind):
                    raise PluginError(name, f"{hook} returned {item!r}, which is not a flopsreg.{kind.__name__}")
            items += returned
        return items

    def _check_patterns(self, name: str, patterns: Sequence[Pattern]) -> None:
        staged: dict[str, tuple[Param, str]] = {}
        seen: dict[str, str] = {}
        for pattern in patterns:
            owner = self._owner.get(pattern.name) or seen.get(pattern.name)
            if owner is not None:
                raise PluginError(name, f"pattern name {pattern.name!r} is already registered by plugin {owner!r}")
            seen[pattern.name] = name
            for param in pattern.params:
                if param.name in SHARED:
                    raise PluginError(name, f"pattern {pattern.name!r} declares parameter {param.name!r}, which is a shared symbol")
                known = staged.get(param.name) or self._params.get(param.name)
                if known is not None and known[0] != param:
                    raise PluginError(
                        name,
                        f"pattern {pattern.name!r} declares parameter {param.name!r} differently from pattern "
                        f"{known[1]!r} (plugin {self._owner.get(known[1], name)!r}): {param} != {known[0]}; "
                        "import and reuse that Param",
                    )
                staged.setdefault(param.name, (param, pattern.name))
            _check_symbols(name, pattern)

    # -- queries -------------------------------------------------------------------------------

    @property
    def errors(self) -> tuple[PluginError, ...]:
        """The plugins that were skipped, each with the reason."""
        return tuple(self._errors)

    @functools.cached_property
    def params(self) -> dict[str, Param]:
        """Every declared parameter by name."""
        return {name: param for name, (param, _) in sorted(self._params.items())}

    @functools.cached_property
    def conventions(self) -> dict[str, Convention]:
        """Every registered convention by name (``"exact"``, the default, needs none)."""
        return {name: convention for name, (convention, _) in sorted(self._conventions.items())}

    @functools.cached_property
    def flags(self) -> frozenset[str]:
        """Every flag some pattern reacts to."""
        return frozenset().union(*(p.flags for p in self.patterns))

    def plugin_of(self, pattern: Pattern | str) -> str:
        """The name of the plugin that registered *pattern*."""
        return self._owner[pattern if isinstance(pattern, str) else pattern.name]

    def pattern(self, name: str) -> Pattern:
        """The pattern called *name*."""
        for pattern in self.patterns:
            if pattern.name == name:
                return pattern
        raise KeyError(f"no pattern {name!r}{did_you_mean(name, (p.name for p in self.patterns))}")

    # -- evaluation ----------------------------------------------------------------------------

    def plan(self, model: Model, *, convention: str = EXACT) -> ModelPlan:
        """Select a pattern for every slot of every layer of *model*, with the reasons.

        Plans are cached per (model, convention): models are immutable and so is the registry.
        """
        try:
            plan = self._plans.get((model, convention))
        except TypeError:  # unhashable: not a Model; plan_model says what was expected
            plan = None
        if plan is None:
            plan = plan_model(self, model, convention=convention)
            if len(self._plans) >= _PLAN_CACHE_SIZE:  # sweeps over many architectures stay bounded
                del self._plans[next(iter(self._plans))]
            self._plans[(model, convention)] = plan
        return plan

    def evaluate(
        self,
        model: Model,
        *,
        seq_len: int | None = None,
        seqlens: Sequence[int] | None = None,
        batch: int = 1,
        recompute: str = "none",
        convention: str = EXACT,
    ) -> Result:
        """Exact FLOPs of *model* for ``batch`` sequences of ``seq_len`` tokens, or a packed row.

        ``seqlens=[a, b, ...]`` is one packed row of independent sequences (attention does not
        cross them): it costs ``f(a) + f(b) + ...``; ``batch`` multiplies either form.
        ``recompute`` (``"none"``, ``"selective"``, ``"full"``) adds recomputed forward work to
        :attr:`Result.training`. ``convention`` counts the way another system does (see
        :attr:`conventions`); the default ``"exact"`` counts what the attention mask lets through.
        """
        plan = self.plan(model, convention=convention)
        return evaluate(plan, seq_len, seqlens, batch, recompute)  # positional: this is a hot path

    def sweep(
        self,
        model: Model,
        seq_len: Iterable[int],
        *,
        batch: int = 1,
        convention: str = EXACT,
        dtype: type | None = None,
    ) -> Any:
        """Forward FLOPs of *model* for each sequence length in *seq_len* (a range, list, ...).

        Exact Python ints by default, from one compiled loop; ``dtype=float`` gives a numpy
        float64 array instead (needs numpy), for plotting. Training FLOPs are 3 x these.
        """
        from flopsreg.sweep import sweep

        return sweep(self.plan(model, convention=convention), seq_len, batch=batch, dtype=dtype)

    def compare(
        self,
        model: Model,
        *,
        seq_len: int | None = None,
        seqlens: Sequence[int] | None = None,
        batch: int = 1,
        conventions: Sequence[str] | None = None,
    ) -> Comparison:
        """*model* under exact and each convention (all registered ones by default), with the
        differences from exact traced to the slots and patterns that cause them."""
        from flopsreg.compare import compare

        return compare(self, model, seq_len=seq_len, seqlens=seqlens, batch=batch, conventions=conventions)


def _check_symbols(plugin: str, pattern: Pattern) -> None:
    """Every symbol of every formula must be a shared symbol or one of the pattern's parameters."""
    allowed = {info.symbol: n for n, info in SHARED.items()} | {p.symbol: p.name for p in pattern.params}
    allowed_names = set(allowed.values())
    expressions = list(pattern.quantities.values()) + [c.condition for c in pattern.constraints]
    for expr in expressions:
        for symbol in sorted(expr.free_symbols, key=str):
            if symbol in allowed:
                continue
            if symbol.name in allowed_names:
                hint = (
                    f"symbol {symbol.name!r} was created with other assumptions: use Param.symbol "
                    "or flopsreg.symbols, which make positive integers"
                )
            else:
                hint = (
                    f"symbol {symbol.name!r} is neither a shared symbol ({', '.join(sorted(SHARED))}) nor a "
                    f"declared parameter ({', '.join(sorted(p.name for p in pattern.params)) or 'none'})"
                    f"{did_you_mean(symbol.name, allowed_names)}"
                )
            raise PluginError(plugin, f"pattern {pattern.name!r}: {hint}")


# -- load-time checks of formulas and of how patterns combine --------------------------------------

_QUANTITY_NAMES = frozenset(n for n, info in SHARED.items() if info.kind == "quantity")
_TRIAL_VALUES = (1, 2, 3, 7, 64, 4096)  # odd and even, below and above each other, small and large
_INEXACT = (sympy.Float, sympy.NumberSymbol, sympy.core.numbers.Infinity, sympy.core.numbers.NegativeInfinity,
            sympy.core.numbers.ComplexInfinity, sympy.core.numbers.NaN, sympy.core.numbers.ImaginaryUnit)


def _is_builtin(plugin: Any) -> bool:
    """A module of :mod:`flopsreg.patterns`, however it was passed."""
    return isinstance(plugin, types.ModuleType) and plugin.__name__.startswith("flopsreg.patterns.")


@functools.lru_cache(maxsize=4096)
def _names_in(pattern: Pattern, *, constraints: bool = True) -> frozenset[str]:
    """Every symbol name *pattern*'s formulas (and constraints) use."""
    exprs = [*pattern.quantities.values(), *(c.condition for c in pattern.constraints if constraints)]
    return frozenset(sym.name for expr in exprs for sym in expr.free_symbols)


def _uses(consumer: Pattern, pool: Sequence[Pattern]) -> frozenset[str]:
    """The quantities *consumer* uses, directly or through any provider in *pool*."""
    used: set[str] = set()
    frontier = set(_names_in(consumer, constraints=False) & _QUANTITY_NAMES)
    while frontier:
        used |= frontier
        frontier = {
            name for p in pool if frontier & p.quantities.keys() for name in _names_in(p, constraints=False)
        } & _QUANTITY_NAMES - used
    return frozenset(used)


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


def _check_exact(plugin: str, pattern: Pattern) -> None:
    """Every formula is built from integers and rationals and is a finite rational on the trial grid."""
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
    return None


def _check_flagless_params(plugin: str, patterns: Sequence[Pattern], builtin: Sequence[Pattern]) -> None:
    """A flagless pattern applies to every model: it may use only parameters every model sets.

    Those are the parameters of the built-in flagless patterns of the same scope (the default
    projection's kv_heads and head_dim): every model must set them already.
    """
    for pattern in patterns:
        if pattern.flags:
            continue
        allowed = {param.name for p in builtin if not p.flags and p.scope == pattern.scope for param in p.params}
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


def _check_ties(
    plugin: str, patterns: Sequence[Pattern], loaded: Sequence[Pattern], conventions: set[str], owner: Mapping[str, str]
) -> None:
    """Two patterns of one slot with equal precedence that can both apply: the later plugin is skipped."""
    seen = list(loaded)
    for pattern in patterns:
        for other in seen:
            if (other.slot, other.scope, other.precedence) != (pattern.slot, pattern.scope, pattern.precedence):
                continue
            if not _co_apply((pattern, other), conventions):
                continue
            flags = sorted(pattern.flags | other.flags)
            where = f"where flags {', '.join(flags)} are set" if flags else "everywhere (neither has flags)"
            taken = sorted({p.precedence for p in (*seen, *patterns) if (p.slot, p.scope) == (pattern.slot, pattern.scope)})
            raise PluginError(
                plugin,
                f"pattern {pattern.name!r} ties with pattern {other.name!r} (plugin {owner[other.name]!r}) in slot "
                f"{pattern.slot}: both have precedence {pattern.precedence} and both apply {where}; give "
                f"{pattern.name!r} a precedence no other pattern of {pattern.slot} has (taken: "
                f"{', '.join(map(str, taken))})",
            )
        seen.append(pattern)


def _compositions(consumer: Pattern, pool: Sequence[Pattern], conventions: set[str]) -> Iterable[dict[str, Pattern]]:
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
            if any(chosen.get(q, provider) is not provider for q in provider.quantities if q != "flops"):
                continue
            if not _co_apply((*members.values(), provider), conventions):
                continue
            more = sorted(_names_in(provider, constraints=False) & _QUANTITY_NAMES)
            yield from extend({**chosen, **{q: provider for q in provider.quantities if q != "flops"}}, rest + more)

    yield from extend({}, sorted(_names_in(consumer, constraints=False) & _QUANTITY_NAMES))


def _check_compositions(
    plugin: str, patterns: Sequence[Pattern], loaded: Sequence[Pattern], conventions: set[str], owner: Mapping[str, str]
) -> None:
    """Every FLOPs formula, with each co-applicable set of quantity providers, is an integer on the grid.

    Only compositions with a member from this plugin are checked: the others passed when their
    latest member loaded, so a fault is always blamed on the later plugin.
    """
    pool = [*loaded, *patterns]
    new = {id(p) for p in patterns}
    new_quantities = {q for p in patterns for q in p.quantities if q != "flops"}
    for consumer in pool:
        if consumer.produces != "flops" or (id(consumer) not in new and not new_quantities & _uses(consumer, pool)):
            continue
        for providers in _compositions(consumer, pool, conventions):
            if not new & {id(p) for p in (consumer, *providers.values())}:
                continue
            fault = _non_integer_point(consumer, tuple(sorted(providers.items())))
            if fault is not None:
                raise PluginError(plugin, _composition_fault(consumer, providers, owner, *fault))


@functools.lru_cache(maxsize=4096)
def _non_integer_point(consumer: Pattern, providers: tuple[tuple[str, Pattern], ...]) -> tuple[dict[str, int], Any] | None:
    """The first trial point where *consumer*'s FLOPs with these providers are not a whole number."""
    members = list({id(p): p for p in (consumer, *(p for _, p in providers))}.values())
    names = set().union(*(_names_in(p) for p in members)) - _QUANTITY_NAMES
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


def _unprovided(pattern: Pattern, patterns: Sequence[Pattern], conventions: set[str]) -> str | None:
    """Why *pattern* could never be evaluated for lack of a quantity provider, or None."""
    for quantity in sorted(_names_in(pattern, constraints=False) & _QUANTITY_NAMES):
        providers = [
            p for p in patterns
            if p is not pattern and p.scope == pattern.scope and quantity in p.quantities and _co_apply((p, pattern), conventions)
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
