"""The plugin registry: loads plugins into a fresh pluggy manager and validates what they declare.

Built-in plugins (the modules :data:`flopsreg.patterns.BUILTIN` lists) go through exactly the hooks a
third-party plugin uses. Loading runs in two passes: first every plugin's declarations
(quantities, slots, blocks, conventions, readers), then every plugin's patterns, checked against
all declarations. A plugin that fails in any way is skipped as a whole, reported by name in
:attr:`PluginLoader.errors` and as a :class:`~flopsreg.errors.PluginWarning`; the others load.
This module only loads: selection, composition and evaluation live in their own modules.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.machinery
import os
import threading
import types
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import pluggy
import sympy
from sympy.core.parameters import evaluate as sympy_evaluation

from flopsreg.declarations.pattern import (
    EXACT,
    FLOPS,
    Block,
    Convention,
    GroupSelector,
    Param,
    Pattern,
    Quantity,
    Slot,
    SlotGroup,
)
from flopsreg.declarations.readers import HFLayerType, HFReader, MegatronReader, family_flag
from flopsreg.declarations.symbols import SHARED, SymbolInfo, SymbolTable
from flopsreg.errors import PluginError, PluginWarning, did_you_mean
from flopsreg.plugins import builtins, hookspecs, manifest
from flopsreg.plugins.builtins import ENTRY_POINT_GROUP, manifest_path
from flopsreg.plugins.checks import (
    Claim,
    check_claims,
    check_compositions,
    check_default_group,
    check_depth,
    check_exact,
    check_flagless_params,
    check_params,
    check_symbols,
    check_ties,
    declaration_faults,
    is_builtin,
    unprovided,
)
from flopsreg.plugins.entry_points import may_declare_entry_points
from flopsreg.plugins.manifest import PatternEntry

__all__ = [
    "ENTRY_POINT_GROUP", "PluginLoader", "builtin_plugins", "default_plugins", "manifest_path", "plugin_fault", "step_bytes_function",
]

_HOOK_PREFIX = f"{hookspecs.PROJECT}_"
_BUILTIN_PACKAGE = "flopsreg.patterns."
_HOOK_NAMES = frozenset(
    name for name in dir(hookspecs) if name.startswith(_HOOK_PREFIX) and callable(getattr(hookspecs, name))
)
# The declaration hooks of the first pass, and the type each returns.
_DECLARATIONS = {
    "quantities": ("flopsreg_register_quantities", Quantity),
    "slots": ("flopsreg_register_slots", Slot),
    "slot_groups": ("flopsreg_register_slot_groups", SlotGroup),
    "group_selectors": ("flopsreg_register_group_selectors", GroupSelector),
    "blocks": ("flopsreg_register_blocks", Block),
    "conventions": ("flopsreg_register_conventions", Convention),
    "hf_readers": ("flopsreg_register_hf_readers", HFReader),
    "hf_layer_types": ("flopsreg_register_hf_layer_types", HFLayerType),
    "megatron_readers": ("flopsreg_register_megatron_readers", MegatronReader),
}


def builtin_plugins(names: Iterable[str] | None = None) -> list[types.ModuleType]:
    """The modules :data:`flopsreg.patterns.BUILTIN` lists (or those of *names* among them), imported, in its order.

    They are imported with sympy's evaluation off: their formulas are built as written, without
    sympy's flattening and assumption queries (two thirds of their import), and each pattern's
    expressions are made canonical where they are first used (:func:`flopsreg.declarations.pattern.canonical`).
    tests/plugins/test_lazy_builtins.py checks that this gives every declaration exactly as an import
    with evaluation on does. Only while no other thread runs: the switch is per thread, but
    sympy's cache of built expressions is shared, so another thread could be handed one built
    unevaluated.
    """
    listed = builtins.builtin_names()
    wanted = listed if names is None else [name for name in listed if name in set(names)]
    alone = threading.active_count() == 1
    with sympy_evaluation(False) if alone else contextlib.nullcontext():
        return [importlib.import_module(f"{_BUILTIN_PACKAGE}{name}") for name in wanted]


def _plugin_name(plugin: object) -> str:
    """A module's name, a class's qualified name, or an instance's class's (by type(), which runs no plugin code)."""
    kind = type(plugin)
    if issubclass(kind, types.ModuleType):
        return plugin.__name__  # type: ignore[attr-defined]
    if issubclass(kind, type):
        return plugin.__qualname__  # type: ignore[attr-defined]
    return kind.__qualname__


def _described(exc: BaseException) -> str:
    """``Type: first line of its message`` of an exception a plugin raised; never raises itself."""
    try:
        lines = str(exc).strip().splitlines()
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - its __str__ is plugin code too
        lines = ["(its message cannot be printed)"]
    text = lines[0][:300] if lines else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextlib.contextmanager
def plugin_fault(name: str, what: str) -> Iterator[None]:
    """Run code of plugin *name*: anything it raises but Ctrl-C (SystemExit, RecursionError and
    MemoryError too) becomes the PluginError that skips it, saying *what* it was doing.

    Only a KeyboardInterrupt goes through, as pytest's plugin loader lets it; a PluginError
    naming another plugin is blamed on this one (a plugin cannot have another skipped).
    """
    try:
        yield
    except KeyboardInterrupt:
        raise
    except PluginError as error:
        if error.plugin != name:
            raise PluginError(name, f"{what} raised {_described(error)}") from error
        raise
    except BaseException as exc:  # noqa: BLE001 - SystemExit from a plugin must not end the program
        raise PluginError(name, f"{what} raised {_described(exc)}") from exc


@attrs.frozen
class Contribution:
    """What one plugin declared and registered."""

    declared: Mapping[str, tuple[Any, ...]]  # kind ("quantities", "slots", ...) -> declarations
    patterns: tuple[Pattern, ...] = ()


@attrs.frozen
class _Planned:
    """A built-in plugin not imported yet, as the manifest describes it: its plain-data
    declarations rebuilt, its patterns without formulas, its readers by name."""

    declared: Mapping[str, tuple[Any, ...]]
    patterns: tuple[PatternEntry, ...]
    hf_readers: Mapping[str, frozenset[str]]  # model_type -> the flags its reader gives
    megatron_readers: tuple[Claim, ...]  # by name, with the arguments each claims

    @classmethod
    def of(cls, declares: Mapping[str, Any], patterns: Sequence[Mapping[str, Any]]) -> _Planned:
        return cls(
            declared={kind: tuple(manifest.rebuilt(kind, item) for item in declares.get(kind, ())) for kind in manifest.DATA_KINDS},
            patterns=tuple(manifest.patterns_of(patterns)),
            hf_readers={r["name"]: frozenset(r["flags"]) for r in declares.get("hf_readers", ())},
            megatron_readers=tuple(Claim(r["name"], r["precedence"], tuple(r["arguments"])) for r in declares.get("megatron_readers", ())),
        )


def _planned_builtins() -> tuple[Mapping[str, Any], dict[str, _Planned]] | None:
    """The manifest and every built-in as it describes them, in BUILTIN order; None without a
    manifest that lists exactly the modules of BUILTIN (then every built-in is imported)."""
    data = builtins.planned_manifest()
    if data is None:
        return None
    planned = {}
    for name, entry in data["modules"].items():  # a registry needs every pattern's summary (its checks read them all)
        patterns = builtins.planned_patterns(name)
        if patterns is None:
            return None
        planned[name] = _Planned.of(entry["declares"], patterns)
    return data, planned


def _by_slot(pattern: Pattern) -> tuple[str, int, str]:
    """The order of :attr:`PluginLoader.patterns`: by slot, then precedence (highest first), then name."""
    return (pattern.slot, -pattern.precedence, pattern.name)


class _LazyReaders(Mapping[str, Any]):
    """The readers of one kind by name, some of them of built-ins not imported yet: reading one
    imports its module first."""

    def __init__(self, loader: PluginLoader, kind: str, pending: Mapping[str, str]) -> None:
        self._loader = loader
        self._kind = kind
        self._pending = pending  # reader name -> the built-in (BUILTIN name) declaring it
        self._names = sorted(set(loader._declared[kind]) | set(pending))

    def __getitem__(self, name: str) -> Any:
        if name in self._pending:
            self._loader._load_builtins([self._pending[name]])
        return self._loader._declared[self._kind][name][0]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._pending or name in self._loader._declared[self._kind]


class _Manager(pluggy.PluginManager):
    """pluggy's manager, looking in a built-in plugin only at names spelt as hooks.

    pluggy inspects every attribute of a plugin for a hookimpl marker (a tenth of loading the
    built-ins); the built-ins name their hooks as the hookspecs do, which the suite checks, while
    any other plugin is inspected in full (it may give ``specname``).
    """

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        if not name.startswith(_HOOK_PREFIX) and is_builtin(plugin):
            return None
        return super().parse_hookimpl_opts(plugin, name)


class PluginLoader:
    """Every loaded plugin's patterns and declarations, validated.

    Args:
        plugins: extra plugin objects (modules, classes or instances with hookimpls).
        builtins: register the built-in plugins of :mod:`flopsreg.patterns` first.
        load_entry_points: then load installed plugins of the entry-point group ``flopsreg``
            (skipped when the environment sets ``FLOPSREG_DISABLE_PLUGIN_AUTOLOAD=1``).
        trust_builtins: load the built-ins without the load-time checks (names, declarations,
            ties, symbols, trial evaluations), which the test suite runs over them with
            ``trust_builtins=False``; every other plugin is checked against everything loaded.
    """

    def __init__(
        self,
        plugins: Iterable[object] = (),
        *,
        builtins: bool = True,
        load_entry_points: bool = True,
        trust_builtins: bool = True,
    ) -> None:
        self._trust_builtins = trust_builtins
        self._pm = _Manager(hookspecs.PROJECT)
        self._pm.add_hookspecs(hookspecs)
        self._errors: list[PluginError] = []
        self._loaded: dict[str, Contribution] = {}  # plugin name -> what it contributed, in load order
        self._builtins: set[str] = set()  # names of the loaded plugins of flopsreg.patterns
        self._lock = threading.RLock()
        # Lazy loading: the built-ins not imported yet (names of BUILTIN), known from the manifest.
        self._manifest: Mapping[str, Any] = {"modules": {}}
        self._pending: dict[str, _Planned] = {}
        self._manifest_params: dict[str, Param] = {}  # the parameters of the built-ins, from the manifest
        others = [(_plugin_name(p), p) for p in plugins]
        if load_entry_points and os.environ.get("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD") != "1":
            others += self._entry_point_plugins()
        candidates: list[tuple[str, Any]] = []
        if builtins:
            # Alone and trusted, the built-ins are imported when a question needs them; a plugin
            # of another package is checked against every built-in, so then all are imported.
            planned = _planned_builtins() if trust_builtins and not others else None
            if planned is None:
                candidates += [(_plugin_name(m), m) for m in builtin_plugins()]
            else:
                self._manifest, self._pending = planned
                self._manifest_params = manifest.params(self._manifest)
                self._check_planned()
        candidates += others
        objects: dict[str, tuple[Any, bool, bool]] = {}  # name -> (plugin, built-in, trusted)
        for name, plugin in candidates:  # pass 1: declarations
            builtin = is_builtin(plugin)
            trusted = self._trust_builtins and builtin  # loaded without the checks the test suite runs over it
            if not trusted:  # its checks read what the plugins before it declared
                self._index()
            try:
                self._loaded[name] = Contribution(declared=self._declare(name, plugin, trusted))
            except PluginError as error:
                self._skip(error)
                continue
            objects[name] = (plugin, builtin, trusted)
        for name, (plugin, builtin, trusted) in objects.items():  # pass 2: patterns, against every declaration
            if not trusted:
                self._index()
            try:
                patterns = self._patterns(name, builtin, trusted)
            except PluginError as error:
                self._drop(name, error)
                continue
            self._loaded[name] = attrs.evolve(self._loaded[name], patterns=tuple(patterns))
            if builtin:
                self._builtins.add(name)
        trusted_builtins = [name for name, (_, builtin, trusted) in objects.items() if trusted and name in self._loaded]
        if trusted_builtins:
            self._check_trusted(trusted_builtins)
        self._index()
        if self._errors or not all(trusted for _, _, trusted in objects.values()):
            self._check_references()
        self._pm.check_pending()

    @classmethod
    def default(cls) -> PluginLoader:
        """The built-in plugins plus every installed plugin."""
        return cls()

    # -- loading -------------------------------------------------------------------------------

    def _entry_point_plugins(self) -> list[tuple[str, Any]]:
        if not may_declare_entry_points(ENTRY_POINT_GROUP):
            return []
        import importlib.metadata  # a tenth of a cold start: only where some distribution may declare the group

        loaded = []
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = ep.dist.name if ep.dist else "?"
            name = f"{ep.name} ({dist})"
            try:
                with plugin_fault(name, f"importing {ep.value!r}"):
                    loaded.append((name, ep.load()))
            except PluginError as error:  # one broken plugin must not stop the others
                self._skip(error)
        return loaded

    def _declare(self, name: str, plugin: Any, trusted: bool) -> dict[str, tuple[Any, ...]]:
        """Register one plugin and collect its declarations, checked against those loaded before."""
        if not trusted:
            with plugin_fault(name, "reading its attributes"):
                self._check_hook_names(name, plugin)
        self._register(name, plugin)
        try:
            declared = {kind: tuple(self._collect(name, hook, type_)) for kind, (hook, type_) in _DECLARATIONS.items()}
            if not trusted:
                with plugin_fault(name, "checking its declarations"):
                    self._check_declarations(name, declared)
        except PluginError:
            self._pm.unregister(name=name)
            raise
        return declared

    def _register(self, name: str, plugin: Any) -> None:
        """Register *plugin* with pluggy; if that fails part-way (a ``dir`` or attribute that raises),
        nothing of it stays registered."""
        taken = self._pm.has_plugin(name)
        try:
            with plugin_fault(name, "registering its hooks"):
                try:
                    self._pm.register(plugin, name=name)
                except (ValueError, pluggy.PluginValidationError) as exc:
                    raise PluginError(name, str(exc)) from exc
        except PluginError:
            if not taken and self._pm.has_plugin(name):
                self._pm.unregister(name=name)
            raise

    def _patterns(self, name: str, builtin: bool, trusted: bool) -> list[Pattern]:
        """Collect one plugin's patterns and check them against everything loaded so far."""
        patterns = self._collect(name, "flopsreg_register_patterns", Pattern)
        if trusted:  # checked by the test suite (Registry(trust_builtins=False)), not at every start
            return patterns
        with plugin_fault(name, "checking its patterns"):
            self._check_group_references(name, self._loaded[name].declared)
            for pattern in patterns:  # first: every later check recurses through the formulas
                check_depth(name, pattern)
            self._check_patterns(name, patterns)
            for pattern in patterns:
                check_exact(name, pattern)
            loaded = list(self._all_patterns())
            builtins = [p for n in self._builtins for p in self._loaded[n].patterns] + (list(patterns) if builtin else [])
            check_flagless_params(name, patterns, builtins, self._selected_slots())
            conventions = set(self.conventions)
            owner = {**self._owner, **{p.name: name for p in patterns}}
            check_ties(name, patterns, loaded, conventions, owner)
            check_compositions(name, patterns, loaded, conventions, owner, frozenset(self.quantities))
        return patterns

    def _skip(self, error: PluginError) -> None:
        self._errors.append(error)
        warnings.warn(str(error), PluginWarning, stacklevel=3)

    def _drop(self, name: str, error: PluginError) -> None:
        """Unload plugin *name* (declarations too) and report why."""
        self._pm.unregister(name=name)
        del self._loaded[name]
        self._builtins.discard(name)
        self._index()
        self._skip(error)

    def _all_patterns(self) -> Iterable[Pattern]:
        return (p for contribution in self._loaded.values() for p in contribution.patterns)

    def _index(self) -> None:
        """The lookup tables of the loaded plugins and the built-ins not imported yet (from the
        manifest), first declaration first, built-ins in BUILTIN order."""
        for cached in ("params", "conventions", "quantities", "slots", "slot_groups", "group_selectors", "slot_group_of", "blocks",
                       "hf_readers", "hf_layer_types", "megatron_readers", "flags", "layer_flags", "symbols", "patterns"):
            self.__dict__.pop(cached, None)
        self._applicable: dict[frozenset[str], tuple[Pattern, ...]] = {}
        self._owner: dict[str, str] = {}  # pattern name -> plugin name
        self._params: dict[str, tuple[Param, str]] = {}  # param name -> (param, pattern name)
        self._declared: dict[str, dict[str, tuple[Any, str]]] = {kind: {} for kind in _DECLARATIONS}
        planned = [(f"{_BUILTIN_PACKAGE}{name}", entry) for name, entry in self._pending.items()]
        order = {name: i for i, name in enumerate(f"{_BUILTIN_PACKAGE}{name}" for name in self._manifest["modules"])}
        sources = sorted([*self._loaded.items(), *planned], key=lambda item: order.get(item[0], len(order)))
        self._summaries: list[Pattern | PatternEntry] = []
        for name, contribution in sources:
            for pattern in contribution.patterns:
                self._summaries.append(pattern)
                self._owner[pattern.name] = name
                if isinstance(pattern, PatternEntry):
                    for param in pattern.param_names:
                        self._params.setdefault(param, (self._manifest_params[param], pattern.name))
                    continue
                for param in pattern.params:
                    self._params.setdefault(param.name, (param, pattern.name))
            for kind, items in contribution.declared.items():
                for item in items:
                    self._declared[kind].setdefault(item.name, (item, name))

    def _load_builtins(self, names: Iterable[str]) -> None:
        """Import and register the built-ins of *names* (names of BUILTIN) not imported yet, as
        the first pass and the second would have (trusted: the test suite checks them)."""
        with self._lock:
            wanted = [name for name in names if name in self._pending]
            if not wanted:
                return
            for module in builtin_plugins(wanted):
                name = module.__name__
                del self._pending[name.removeprefix(_BUILTIN_PACKAGE)]
                try:
                    self._loaded[name] = Contribution(declared=self._declare(name, module, True))
                    patterns = self._collect(name, "flopsreg_register_patterns", Pattern)
                except PluginError as error:
                    self._loaded.pop(name, None)
                    self._skip(error)
                    continue
                self._loaded[name] = attrs.evolve(self._loaded[name], patterns=tuple(patterns))
                self._builtins.add(name)
            order = {f"{_BUILTIN_PACKAGE}{name}": i for i, name in enumerate(self._manifest["modules"])}
            self._loaded = dict(sorted(self._loaded.items(), key=lambda item: order.get(item[0], len(order))))
            self._index()

    def applicable(self, flags: frozenset[str]) -> tuple[Pattern, ...]:
        """The patterns whose flags are all among *flags*, in the order of :attr:`patterns`:
        those a model with *flags* can select. Imports the built-ins that hold one first."""
        found = self._applicable.get(flags)
        if found is None:
            self._load_builtins([name for name, planned in self._pending.items() if any(p.flags <= flags for p in planned.patterns)])
            found = tuple(sorted((p for p in self._all_patterns() if p.flags <= flags), key=_by_slot))
            self._applicable[flags] = found
        return found

    def users_of(self, param: str) -> tuple[Pattern, ...]:
        """The patterns that declare parameter *param*, in the order of :attr:`patterns` (their built-ins imported first)."""
        self._load_builtins([name for name, planned in self._pending.items() if any(param in p.param_names for p in planned.patterns)])
        return tuple(sorted((p for p in self._all_patterns() if param in p.param_names), key=_by_slot))

    def _check_declarations(self, name: str, declared: Mapping[str, Sequence[Any]]) -> None:
        """Names are unique per kind (an identical redeclaration is fine); none shadows a shared symbol."""
        for kind, items in declared.items():
            seen: dict[str, Any] = {}
            for item in items:
                if kind == "conventions" and item.name == EXACT:
                    raise PluginError(name, f"convention name {EXACT!r} is reserved for flopsreg's own exact counting")
                if kind == "quantities" and item.name in SHARED:
                    raise PluginError(name, f"quantity {item.name!r} is a shared symbol ({SHARED[item.name].meaning})")
                known = self._declared[kind].get(item.name)
                previous = known[0] if known else seen.get(item.name)
                if previous is not None and (previous != item or kind == "conventions"):
                    by = known[1] if known else name
                    raise PluginError(
                        name,
                        f"{kind.rstrip('s').replace('_', ' ')} {item.name!r} is already declared by plugin {by!r}"
                        + ("" if kind == "conventions" else " differently; import and reuse that declaration"),
                    )
                seen[item.name] = item
        check_claims(name, declared["megatron_readers"], list(self._declared["megatron_readers"].values()))
        check_default_group(name, declared["slot_groups"], next((g.name for g, _ in self._declared["slot_groups"].values() if g.default), None))

    def _check_planned(self) -> None:
        """The checks that read declarations only, on the built-ins as the manifest describes them,
        without importing them; a built-in with a fault is skipped, named in a PluginWarning."""
        names = {f"{_BUILTIN_PACKAGE}{name}": name for name in self._pending}
        conventions = {c.name for planned in self._pending.values() for c in planned.declared["conventions"]}
        units = [(plugin, planned.patterns, planned.megatron_readers, planned.declared["slot_groups"]) for plugin, planned in
                 ((plugin, self._pending[name]) for plugin, name in names.items())]
        for error in declaration_faults(units, conventions):
            del self._pending[names[error.plugin]]
            self._skip(error)

    def _check_trusted(self, names: Sequence[str]) -> None:
        """The same checks on the built-ins of *names*, imported (trusted, so not checked one by one)."""
        conventions = {c.name for name in names for c in self._loaded[name].declared["conventions"]}
        units = [(name, self._loaded[name].patterns, self._loaded[name].declared["megatron_readers"],
                  self._loaded[name].declared["slot_groups"]) for name in names]
        for error in declaration_faults(units, conventions):
            self._drop(error.plugin, error)

    def _check_group_references(self, plugin: str, declared: Mapping[str, Sequence[Any]]) -> None:
        """Every slot group that plugin *plugin*'s group selectors and slot groups (``beside``) name is declared."""
        groups = self.slot_groups
        named = [(f"group selector {g.name!r}", g.group) for g in declared["group_selectors"]]
        named += [(f"slot group {g.name!r} (beside)", other) for g in declared["slot_groups"] for other in sorted(g.beside)]
        for what, group in named:
            if group not in groups:
                raise PluginError(
                    plugin,
                    f"{what} names slot group {group!r}, which no plugin declares{did_you_mean(group, groups)} "
                    "(declare it with flopsreg_register_slot_groups)",
                )

    def _check_hook_names(self, name: str, plugin: Any) -> None:
        for attr in dir(plugin):
            opts = pluggy.PluginManager.parse_hookimpl_opts(self._pm, plugin, attr)  # every attribute
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
            with plugin_fault(name, hook):
                returned = impl.function()
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
        declared = {scope: self._declared_symbols(scope) for scope in {p.scope for p in patterns}}
        for pattern in patterns:
            owner = self._owner.get(pattern.name) or seen.get(pattern.name)
            if owner is not None:
                raise PluginError(name, f"pattern name {pattern.name!r} is already registered by plugin {owner!r}")
            seen[pattern.name] = name
            check_params(name, pattern)
            for param in pattern.params:
                if param.name in SHARED or param.name in self.quantities:
                    raise PluginError(name, f"pattern {pattern.name!r} declares parameter {param.name!r}, which is a declared symbol")
                known = staged.get(param.name) or self._params.get(param.name)
                if known is not None and known[0] != param:
                    raise PluginError(
                        name,
                        f"pattern {pattern.name!r} declares parameter {param.name!r} differently from pattern "
                        f"{known[1]!r} (plugin {self._owner.get(known[1], name)!r}): {param} != {known[0]}; "
                        "import and reuse that Param",
                    )
                staged.setdefault(param.name, (param, pattern.name))
            self._check_references_of(name, pattern)
            check_symbols(name, pattern, declared[pattern.scope])

    def _check_references_of(self, plugin: str, pattern: Pattern) -> None:
        """The slot a pattern fills and the quantities it produces are declared, in its scope."""
        slot = self.slots.get(pattern.slot)
        if slot is None:
            raise PluginError(
                plugin,
                f"pattern {pattern.name!r} fills slot {pattern.slot!r}, which no plugin declares"
                f"{did_you_mean(pattern.slot, self.slots)} (declare it with flopsreg_register_slots)",
            )
        if slot.scope != pattern.scope:
            raise PluginError(
                plugin, f"pattern {pattern.name!r} has scope {pattern.scope!r} but slot {slot.name!r} is of scope {slot.scope!r}"
            )
        for quantity in pattern.quantities:
            if quantity != FLOPS and quantity not in self.quantities:
                raise PluginError(
                    plugin,
                    f"pattern {pattern.name!r} produces {quantity!r}, which no plugin declares as a quantity"
                    f"{did_you_mean(quantity, self.quantities)} (declare it with flopsreg_register_quantities)",
                )

    def _declared_symbols(self, scope: str) -> dict[sympy.Symbol, str]:
        """The symbols a pattern of *scope* may use besides its parameters."""
        declared = {info.symbol: info.meaning for info in SHARED.values()}
        declared |= {q.symbol: q.meaning for q in self.quantities.values()}
        if scope == "model":
            for block in self.blocks.values():
                declared |= {block.flops: f"FLOPs of the {block.name} layers", block.layers: f"{block.name} layers"}
        return declared

    def _check_references(self) -> None:
        """After loading: drop plugins whose patterns reference a declaration or a quantity provider
        that a dropped plugin took with it (built-in consumers load before their providers, and a
        dropped plugin may have declared what another used), until nothing changes."""
        while True:
            patterns = list(self._all_patterns())
            conventions = set(self.conventions)
            quantities = frozenset(self.quantities)
            declared = {scope: self._declared_symbols(scope) for scope in {p.scope for p in patterns}}
            for name, contribution in self._loaded.items():
                try:
                    with plugin_fault(name, "checking its patterns"):
                        self._check_group_references(name, contribution.declared)
                        for pattern in contribution.patterns:
                            self._check_references_of(name, pattern)
                            check_symbols(name, pattern, declared[pattern.scope])
                            problem = unprovided(pattern, patterns, conventions, quantities)
                            if problem:
                                raise PluginError(name, problem)
                except PluginError as error:
                    self._drop(name, error)
                    break
            else:
                return

    # -- queries -------------------------------------------------------------------------------

    @functools.cached_property
    def patterns(self) -> tuple[Pattern, ...]:
        """Every loaded pattern, by slot, then precedence (highest first), then name (every built-in imported first)."""
        self._load_builtins(list(self._pending))
        return tuple(sorted(self._all_patterns(), key=_by_slot))

    @property
    def errors(self) -> tuple[PluginError, ...]:
        """The plugins that were skipped, each with the reason."""
        return tuple(self._errors)

    @functools.cached_property
    def params(self) -> dict[str, Param]:
        """Every declared parameter by name."""
        return {name: param for name, (param, _) in sorted(self._params.items())}

    def _declarations(self, kind: str) -> dict[str, Any]:
        return {name: item for name, (item, _) in sorted(self._declared[kind].items())}

    @functools.cached_property
    def conventions(self) -> dict[str, Convention]:
        """Every registered convention by name (``"exact"``, the default, needs none)."""
        return self._declarations("conventions")

    @functools.cached_property
    def quantities(self) -> dict[str, Quantity]:
        """Every declared quantity by name."""
        return self._declarations("quantities")

    @functools.cached_property
    def slots(self) -> dict[str, Slot]:
        """Every declared slot by name, in declaration order: the forward pass, for the built-ins
        (the LaTeX prints terms in this order)."""
        return {name: item for name, (item, _) in self._declared["slots"].items()}

    @functools.cached_property
    def slot_groups(self) -> dict[str, SlotGroup]:
        """Every declared slot group (token mixer) by name."""
        return self._declarations("slot_groups")

    @functools.cached_property
    def group_selectors(self) -> tuple[GroupSelector, ...]:
        """Every declared rule selecting a layer's token mixer by its flags."""
        return tuple(self._declarations("group_selectors").values())

    @functools.cached_property
    def slot_group_of(self) -> dict[str, str]:
        """The slot group of each layer slot in one: the group its name's first part names
        (``attention.core``: ``attention``), where a group of that name is declared."""
        first = {slot.name: slot.name.partition(".")[0] for slot in self.slots.values() if slot.scope == "layer"}
        return {name: group for name, group in first.items() if group in self.slot_groups}

    def _selected_slots(self) -> frozenset[str]:
        """The slots of the groups that a layer has only where its flags select them (not the default)."""
        return frozenset(slot for slot, group in self.slot_group_of.items() if not self.slot_groups[group].default)

    @functools.cached_property
    def blocks(self) -> dict[str, Block]:
        """Every declared block (named group of extra layers) by name."""
        return self._declarations("blocks")

    @functools.cached_property
    def hf_readers(self) -> dict[str, HFReader]:
        """The Hugging Face reader of each model_type (a built-in's imported when it is read)."""
        return self._readers("hf_readers", {t: name for name, planned in self._pending.items() for t in planned.hf_readers})

    @functools.cached_property
    def hf_layer_types(self) -> dict[str, HFLayerType]:
        """Each declared Hugging Face ``layer_types`` string."""
        return self._declarations("hf_layer_types")

    @functools.cached_property
    def megatron_readers(self) -> dict[str, MegatronReader]:
        """Every Megatron-LM argument reader by name (a built-in's imported when it is read)."""
        return self._readers("megatron_readers", {r.name: name for name, planned in self._pending.items() for r in planned.megatron_readers})

    def _readers(self, kind: str, pending: Mapping[str, str]) -> Mapping[str, Any]:
        return _LazyReaders(self, kind, pending) if pending else self._declarations(kind)

    @functools.cached_property
    def flags(self) -> frozenset[str]:
        """Every flag some pattern or group selector reacts to or a Hugging Face reader gives its models (the family flag too)."""
        readers = [reader.flags for reader, _ in self._declared["hf_readers"].values()]
        readers += [flags for planned in self._pending.values() for flags in planned.hf_readers.values()]
        return frozenset().union(
            *(p.flags for p in self._summaries), *(g.flags for g in self.group_selectors), *readers, map(family_flag, self.hf_readers)
        )

    @functools.cached_property
    def layer_flags(self) -> frozenset[str]:
        """Every flag a layer-scope pattern or a group selector reacts to: the flags that do something on a layer kind."""
        return frozenset().union(*(p.flags for p in self._summaries if p.scope == "layer"), *(g.flags for g in self.group_selectors))

    @functools.cached_property
    def symbols(self) -> SymbolTable:
        """The LaTeX and meaning of every symbol a formula may use: what renderers are given."""
        infos = [*SHARED.values()]
        infos += [SymbolInfo(name=q.name, latex=q.latex, meaning=q.meaning, kind="quantity") for q in self.quantities.values()]
        infos += [SymbolInfo(name=p.name, latex=p.latex, meaning=p.meaning, kind="dimension") for p in self.params.values()]
        for block in self.blocks.values():
            infos += [
                SymbolInfo(name=block.flops.name, latex=block.flops.latex, meaning=f"FLOPs of the {block.meaning}", kind="structure"),
                SymbolInfo(name=block.layers.name, latex=block.layers.latex, meaning=f"number of {block.meaning}", kind="structure"),
            ]
        return SymbolTable(infos)

    def loaded_plugins(self) -> dict[str, object]:
        """Every loaded plugin object by name, built-ins first, in load order (every built-in imported first)."""
        self._load_builtins(list(self._pending))
        order = {name: i for i, name in enumerate(self._loaded)}
        return dict(sorted(self._pm.list_name_plugin(), key=lambda item: order.get(item[0], len(order))))

    def other_plugins(self) -> dict[str, object]:
        """Every loaded plugin that is not a built-in, by name, in load order (imports no built-in)."""
        return {name: plugin for name, plugin in self._pm.list_name_plugin() if name not in self._builtins}

    def contributions(self) -> dict[str, Contribution]:
        """What each loaded plugin declared and registered, built-ins first, in load order (every built-in imported first)."""
        self._load_builtins(list(self._pending))
        return dict(self._loaded)

    def plugin_of(self, item: Pattern | str) -> str:
        """The name of the plugin that registered *item* (a pattern, or a pattern's name)."""
        return self._owner[item if isinstance(item, str) else item.name]

    def pattern(self, name: str) -> Pattern:
        """The pattern called *name*."""
        for pattern in self.patterns:
            if pattern.name == name:
                return pattern
        raise KeyError(f"no pattern {name!r}{did_you_mean(name, (p.name for p in self.patterns))}")


@functools.lru_cache(maxsize=1)
def default_plugins() -> PluginLoader:
    """The built-in and installed plugins, loaded once per process: what the readers use when
    they are given no registry."""
    return PluginLoader()


def step_bytes_function(convention: Convention) -> Callable[..., Any] | None:
    """The function a convention's ``step_bytes`` names (``package.module:function``), imported
    when it is first asked for, as the loader imports plugins by name; None where it names none."""
    if convention.step_bytes is None:
        return None
    module, _, name = convention.step_bytes.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise PluginError(convention.name, f"step_bytes {convention.step_bytes!r}: cannot be imported ({_described(exc)})") from None
