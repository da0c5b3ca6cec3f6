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
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

from flopsreg import hookspecs
from flopsreg.errors import PluginError, PluginWarning, did_you_mean
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
        self._owner: dict[str, str] = {}  # pattern name -> plugin name
        self._params: dict[str, tuple[Param, str]] = {}  # param name -> (param, pattern name)
        self._conventions: dict[str, tuple[Convention, str]] = {}  # name -> (convention, plugin)
        self._plans: dict[tuple[Model, str], ModelPlan] = {}  # selection is pure: plan once per model
        patterns: list[Pattern] = []
        candidates: list[tuple[str, Any]] = []
        if builtins:
            candidates += [(_plugin_name(m), m) for m in builtin_plugins()]
        candidates += [(_plugin_name(p), p) for p in plugins]
        if load_entry_points and os.environ.get("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD") != "1":
            candidates += self._entry_point_plugins()
        for name, plugin in candidates:
            try:
                patterns += self._load(name, plugin)
            except PluginError as error:
                self._errors.append(error)
                warnings.warn(str(error), PluginWarning, stacklevel=2)
        self._pm.check_pending()
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
            staged_params = self._check_patterns(name, patterns)
            conventions = self._collect(name, "flopsreg_register_conventions", Convention)
            self._check_conventions(name, conventions)
        except PluginError:
            self._pm.unregister(name=name)
            raise
        for pattern in patterns:
            self._owner[pattern.name] = name
        self._params.update(staged_params)
        self._conventions.update({c.name: (c, name) for c in conventions})
        return patterns

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

    def _check_patterns(self, name: str, patterns: Sequence[Pattern]) -> dict[str, tuple[Param, str]]:
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
        return staged

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
