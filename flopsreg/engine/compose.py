"""Closed forms per layer kind: the selected patterns' formulas with the quantities that other
slots produce substituted, every parameter checked, and unused parameters reported.

The result of selection and composition for a whole model is a :class:`ModelSelection`. Nothing
here knows a pattern, slot, quantity or block by name: they come from the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import sympy

from flopsreg.declarations.pattern import EXACT, FLOPS, Constraint, Convention, Pattern, Slot, holds_weights_only
from flopsreg.declarations.readers import HFReader
from flopsreg.declarations.symbols import SHARED, SymbolTable, cached, s
from flopsreg.engine.select import SlotSelection, select
from flopsreg.errors import WITHOUT_PLUGINS_HINT, ModelError, SelectionError, did_you_mean
from flopsreg.formula.cached_prefix import PrefixForms, prefix_forms
from flopsreg.formula.exact import CompiledFormula, compile_exact
from flopsreg.model import FrozenMap, Model, ranges_text, total_length

if TYPE_CHECKING:
    from flopsreg.engine.memory import Holdings
    from flopsreg.plugins.loader import PluginLoader

__all__ = [
    "KindSelection", "ModelLevelSelection", "ModelSelection", "SelectedUnits", "UnitSelection", "Unused", "check_constraint", "check_convention",
    "check_values", "compose", "holds_weights_only", "unused", "warning_texts",
]


@attrs.frozen(eq=False)
class UnitSelection:
    """The selection and formula for one layer kind (:class:`KindSelection`) or for the model-level
    slots (:class:`ModelLevelSelection`); compared by identity, as each belongs to one plan."""

    name: str
    flags: frozenset[str]
    params: Mapping[str, int]
    selections: tuple[SlotSelection, ...]
    terms: Mapping[str, sympy.Expr]  # slot -> FLOPs of one sequence
    quantities: Mapping[str, sympy.Expr]  # e.g. pairs, qk_dim
    prefix_source: Callable[[], PrefixForms] = attrs.field(repr=False)  # derives :attr:`prefix` on first use
    per_position: frozenset[str]  # slots whose work only the last position needs when serving

    @property
    def count(self) -> int:
        """How many times the model runs this unit per sequence."""
        raise NotImplementedError

    @property
    def where(self) -> str:
        """Where the unit sits, for messages."""
        raise NotImplementedError

    @property
    def patterns(self) -> dict[str, str]:
        """``{slot: pattern name}``."""
        return {sel.slot: sel.pattern.name for sel in self.selections}

    @cached_property
    def expression(self) -> sympy.Expr:
        """FLOPs of one sequence through this unit once: fully symbolic."""
        return sympy.Add(*self.terms.values())

    @cached_property
    def _compiled(self) -> dict[str, CompiledFormula]:
        return {slot: compile_exact(term) for slot, term in self.terms.items()}

    @cached_property
    def _compiled_total(self) -> CompiledFormula:
        return compile_exact(self.expression)

    def total(self, seq_len: int, cached: int = 0, logits: str = "all") -> int:
        """Exact FLOPs of one sequence of *seq_len* tokens (after *cached* cached ones) through
        this unit once, all slots."""
        if cached or logits != "all":
            return sum(self.flops(seq_len, cached, logits).values())
        return self._compiled_total({**self.params, "seq_len": seq_len})

    def flops(self, seq_len: int, cached: int = 0, logits: str = "all") -> dict[str, int]:
        """Exact FLOPs per slot of one sequence of *seq_len* tokens (after *cached* cached ones)
        through this unit once."""
        if cached or logits != "all":
            if logits not in self._serving_compiled:
                self._serving_compiled[logits] = {slot: compile_exact(term) for slot, term in self.serving_terms(logits).items()}
            values = {**self.params, "seq_len": seq_len, "cached": cached}
            return {slot: formula(values) for slot, formula in self._serving_compiled[logits].items()}
        values = {**self.params, "seq_len": seq_len}
        return {slot: formula(values) for slot, formula in self._compiled.items()}

    @cached_property
    def prefix(self) -> PrefixForms:
        """FLOPs per slot of ``seq_len`` new tokens after ``cached`` ones, or why there is no such
        form; derived on first use, so plans that never serve do not pay for it."""
        return self.prefix_source()

    def serving_terms(self, logits: str) -> dict[str, sympy.Expr]:
        """FLOPs per slot of ``seq_len`` new tokens after ``cached`` ones; with *logits* ``"last"``
        the per-position slots count one position. Raises ModelError where there is no such form."""
        if self.prefix.fault:
            raise ModelError(f"cached/logits: {self.prefix.fault}")
        if logits == "all":
            return dict(self.prefix.terms)
        terms = {}
        for slot, term in self.prefix.terms.items():
            if slot in self.per_position:
                if cached in term.free_symbols:
                    raise ModelError(f"logits: {self.where}, slot {slot}: its per-position work depends on the cached prefix")
                term = term.xreplace({s: sympy.Integer(1)})
            terms[slot] = term
        return terms

    @cached_property
    def _serving_compiled(self) -> dict[str, dict[str, CompiledFormula]]:
        """``{logits: {slot: compiled serving term}}``, filled per mode on first use."""
        return {}


@attrs.frozen(eq=False)
class KindSelection(UnitSelection):
    """One layer kind: its layers (as ranges of indices) and what fills each of its slots."""

    layers: tuple[range, ...]
    scope: ClassVar[str] = "layer"

    @property
    def count(self) -> int:
        return total_length(self.layers)

    @property
    def where(self) -> str:
        return _kind_where(self.name, self.layers)


@attrs.frozen(eq=False)
class ModelLevelSelection(UnitSelection):
    """The model-level slots (logits, ...): counted once per sequence."""

    scope: ClassVar[str] = "model"

    @property
    def count(self) -> int:
        return 1

    @property
    def where(self) -> str:
        return MODEL_LEVEL


MODEL_LEVEL = "model-level slots"


def _kind_where(name: str, layers: tuple[range, ...]) -> str:
    """``"layers 0-4, 6-10 (kind 'local')"``."""
    return f"{'layer' if total_length(layers) == 1 else 'layers'} {ranges_text(layers)} (kind {name!r})"


@attrs.frozen
class SelectedUnits:
    """A model's selected units (one per layer kind, and the model-level slots) and its warnings."""

    kinds: tuple[KindSelection, ...]
    head: ModelLevelSelection
    warnings: tuple[str, ...]


@attrs.frozen(eq=False)
class ModelSelection:
    """Every selection for a model, with warnings; evaluate it with :func:`evaluate`.

    Equal to another exactly when model, convention, units, blocks and warnings are (units
    compare by identity, as each belongs to one selection).
    """

    model: Model
    convention: str
    # the units and warnings, or what derives them on first use: a model rebound to a structure
    # (flopsreg.engine.structure) evaluates from compiled code and needs them only when asked
    units_source: SelectedUnits | Callable[[], SelectedUnits] = attrs.field(repr=False)
    # {block: its layers, one unit per kind, as the head's block quantity sums them}: for compare
    blocks: Mapping[str, tuple[KindSelection, ...]]
    symbols: SymbolTable = attrs.field(eq=False, repr=False)  # LaTeX and meaning of every symbol
    slots: Mapping[str, Slot] = attrs.field(eq=False, repr=False)  # the registry's slot declarations
    render: Any = attrs.field(eq=False, repr=False)  # the renderers (text, LaTeX): given, never imported
    # the registry's Hugging Face readers by model_type (a built-in's imported when read): the
    # display title of a model read from a config.json
    hf_readers: Mapping[str, HFReader] = attrs.field(factory=dict, eq=False, repr=False, kw_only=True)
    # forward FLOPs of one sequence from code compiled once per structure (flopsreg.engine.structure),
    # with this model's values as arguments; None: compile this model's own closed form
    bound_forward: Callable[[int], int | Fraction] | None = attrs.field(default=None, eq=False, repr=False, kw_only=True)
    # what a model holds, in elements (flopsreg.engine.holdings), from the composition cache that
    # made this selection (given, never imported); None: a selection read from the command line's cache
    held: Callable[[Model], Holdings] | None = attrs.field(default=None, eq=False, repr=False, kw_only=True)

    @cached_property
    def _units(self) -> SelectedUnits:
        source = self.units_source
        return source if isinstance(source, SelectedUnits) else source()

    @property
    def kinds(self) -> tuple[KindSelection, ...]:
        """The selection of each layer kind, in the plan's order."""
        return self._units.kinds

    @property
    def head(self) -> ModelLevelSelection:
        """The selection of the model-level slots (embedding, head, blocks of extra layers)."""
        return self._units.head

    @property
    def warnings(self) -> tuple[str, ...]:
        """One line per parameter set but used by no selected pattern."""
        return self._units.warnings

    def _compared(self) -> tuple[Any, ...]:
        return (self.model, self.convention, self.kinds, self.head, self.blocks, self.warnings)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._compared() == other._compared()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._compared())

    @property
    def units(self) -> tuple[UnitSelection, ...]:
        return self.kinds + ((self.head,) if self.head.selections else ())

    def kind(self, name: str) -> KindSelection:
        return next(unit for unit in self.kinds if unit.name == name)

    def __repr__(self) -> str:
        """Short: the model, the convention and the layer kinds."""
        return f"ModelSelection(model={self.model.name!r}, convention={self.convention!r}, kinds={[k.name for k in self.kinds]!r})"

    def _repr_markdown_(self) -> str:
        """Jupyter: the closed form, its symbols and the pattern of each slot."""
        return self.render.selection_markdown(self)

    def _repr_latex_(self) -> str:
        """Jupyter's LaTeX view: the equations, in what MathJax 3 renders."""
        return self.render.mathjax(self)

    def explain(self) -> str:
        """The selection trace: one line per slot and layer kind, with the reason."""
        return self.render.explain_text(self)

    @cached_property
    def expression(self) -> sympy.Expr:
        """Forward FLOPs of one sequence of ``seq_len`` tokens, model dimensions substituted."""
        total = sympy.Integer(0)
        for unit in self.units:
            total += unit.count * unit.expression.xreplace(_values(unit.expression, unit.params))
        return total

    @cached_property
    def compiled(self) -> CompiledFormula:
        """:attr:`expression` compiled once: the whole model in one exact-integer function."""
        return compile_exact(self.expression)

    def serving_expression(self, logits: str = "all") -> sympy.Expr:
        """Forward FLOPs of ``seq_len`` new tokens of one sequence after ``cached`` tokens in the
        KV cache, logits on every position (``"all"``) or the last (``"last"``)."""
        if logits not in self._serving:
            total = sympy.Integer(0)
            for unit in self.units:
                expr = sympy.Add(*unit.serving_terms(logits).values())
                total += unit.count * expr.xreplace(_values(expr, unit.params))
            self._serving[logits] = (total, compile_exact(total))
        return self._serving[logits][0]

    @cached_property
    def _serving(self) -> dict[str, tuple[sympy.Expr, CompiledFormula]]:
        """``{logits: (serving expression, compiled)}``, filled per mode on first use."""
        return {}

    def serving(self, seq_len: int, cached: int, logits: str) -> int:
        """Exact forward FLOPs of *seq_len* new tokens of one sequence after *cached* cached ones."""
        self.serving_expression(logits)
        return self._serving[logits][1]({"seq_len": seq_len, "cached": cached})

    @cached_property
    def _forward_function(self) -> Callable[[int], int | Fraction]:
        compiled = self.compiled
        if compiled.argnames == ("seq_len",):
            return compiled.function
        return lambda seq_len: compiled({"seq_len": seq_len})

    def forward(self, seq_len: int) -> int:
        """Exact forward FLOPs of one sequence of *seq_len* tokens."""
        flops = (self.bound_forward or self._forward_function)(seq_len)
        return flops if type(flops) is int else self.compiled({"seq_len": seq_len})

    def rebound(
        self, model: Model, units_source: Callable[[], SelectedUnits], bound_forward: Callable[[int], int | Fraction]
    ) -> ModelSelection:
        """This selection for *model*, another model of its structure (flopsreg.engine.structure):
        the same convention, blocks and registry tables, *model*'s units and forward. The fields
        are set one by one, as attrs' ``__init__`` would (there are no converters or validators):
        called by keyword it cost a third of a rebound evaluation."""
        selection = object.__new__(ModelSelection)
        shared = (model, self.convention, units_source, bound_forward, self.blocks, self.symbols, self.slots, self.render, self.hf_readers, self.held)
        for set_field, value in zip(_REBOUND_SETTERS, shared):
            set_field(selection, value)
        return selection


# the field of each value ModelSelection.rebound sets, in its order (tests check it covers every field)
REBOUND_FIELDS = ("model", "convention", "units_source", "bound_forward", "blocks", "symbols", "slots", "render", "hf_readers", "held")
_REBOUND_SETTERS = tuple(getattr(ModelSelection, name).__set__ for name in REBOUND_FIELDS)


def check_convention(registry: PluginLoader, convention: Any) -> None:
    """*convention* is ``"exact"`` or a registered convention's name; else one line with the closest."""
    if not isinstance(convention, str):
        raise ModelError(f"convention: expected a convention name (a string), got {type(convention).__name__} {convention!r:.60}")
    if convention != EXACT and convention not in registry.conventions:
        known = [EXACT, *registry.conventions]
        raise ModelError(f"convention: {convention!r} is not registered{did_you_mean(convention, known)} (known: {', '.join(known)})")


def compose(
    registry: PluginLoader, model: Model, *, convention: str = EXACT, render: Any = None, held: Callable[[Model], Holdings] | None = None
) -> ModelSelection:
    """Select patterns for every layer kind and the model-level slots, checking every input, and
    compose each unit's closed form; *render* is handed to the plan for its text and LaTeX, *held*
    for what a model holds (its step traffic)."""
    if not isinstance(model, Model):
        raise ModelError(
            f"model: expected a flopsreg.Model, got {type(model).__name__} {model!r:.60}; load one with "
            "Model.example(name), Model.from_toml(path) or Model.from_hf_config(path)"
        )
    check_convention(registry, convention)
    _check_names(registry, model)
    given = model
    if convention != EXACT:
        model = attrs.evolve(model, flags=model.flags | {convention})
    quantities = {q.symbol: name for name, q in registry.quantities.items()}
    declared = registry.conventions[convention] if convention != EXACT else None
    kinds = []
    for name in model.plan.kinds():
        flags, params = model.merged(name)
        kinds.append(_plan_unit(registry, quantities, KindSelection, flags, params, name=name, layers=model.plan.indices(name), convention=declared))
    structure: dict[str, int] = {}
    blocks: dict[sympy.Symbol, sympy.Expr] = {}
    block_units: dict[sympy.Symbol, tuple[KindSelection, ...]] = {}
    for block in registry.blocks.values():  # extra layers, planned like decoder layers (once per kind), counted by a pattern
        units = []
        for kind, where in model.block_kinds(block.name).items():
            flags, params = model.merged(kind)
            units.append(
                _plan_unit(registry, quantities, KindSelection, flags | block.layer_flags, params, name=kind, layers=where, convention=declared)
            )
        block_units[block.flops] = tuple(units)
        blocks[block.flops] = sympy.Add(*(unit.count * unit.expression.xreplace(_values(unit.expression, unit.params)) for unit in units))
        structure[block.layers.name] = len(model.plan.blocks.get(block.name, ()))
    head = _plan_unit(
        registry,
        quantities,
        ModelLevelSelection,
        model.flags,
        {**model.params, **structure},
        name="model",
        engine_quantities=blocks,
        engine_prefix=lambda: _blocks_prefix(block_units),
        convention=declared,
    )
    _check_blocks(registry, model, head)
    return ModelSelection(
        model=given,
        convention=convention,
        units_source=SelectedUnits(tuple(kinds), head, warning_texts(given, unused(registry, model, kinds, head))),
        blocks=FrozenMap((block.name, block_units[block.flops]) for block in registry.blocks.values() if block_units[block.flops]),
        symbols=registry.symbols,
        slots=registry.slots,
        render=render,
        hf_readers=registry.hf_readers,
        held=held,
    )


def _blocks_prefix(block_units: Mapping[sympy.Symbol, Sequence[KindSelection]]) -> tuple[dict[sympy.Symbol, sympy.Expr], str | None]:
    """The cached-prefix FLOPs of each block's layers, and the first reason one has none."""
    forms: dict[sympy.Symbol, sympy.Expr] = {}
    for symbol, units in block_units.items():
        total = sympy.Integer(0)
        for unit in units:
            if unit.prefix.fault:
                return {}, unit.prefix.fault
            expr = sympy.Add(*unit.prefix.terms.values())
            total += unit.count * expr.xreplace(_values(expr, unit.params))
        forms[symbol] = total
    return forms, None


def _check_blocks(registry: PluginLoader, model: Model, head: ModelLevelSelection) -> None:
    """Every block the plan lists is declared, and some applicable model-level pattern counts it
    (a convention may choose not to count it, but must know it)."""
    formulas = sympy.Add(*(p.formula for sel in head.selections for p in sel.applicable))
    for name, kinds in model.plan.blocks.items():
        block = registry.blocks.get(name)
        if block is None:
            raise ModelError(
                f"{model.name}: plan.{name}: no plugin declares a block {name!r}{did_you_mean(name, registry.blocks)} "
                f"(declared blocks: {', '.join(registry.blocks) or 'none'})"
            )
        if not {block.flops, block.layers} & formulas.free_symbols:
            users = [p.name for p in registry.patterns if {block.flops, block.layers} & p.formula.free_symbols]
            raise ModelError(
                f"{model.name}: plan.{name} lists {len(kinds)} layer(s), but no selected pattern counts them "
                f"(set the flag of a pattern that does: {', '.join(users) or 'none is registered'})"
            )


def _symbol_names(expr: sympy.Expr) -> set[str]:
    return {sym.name for sym in expr.free_symbols}


def _values(expr: sympy.Basic | Constraint, params: Mapping[str, int]) -> dict[sympy.Symbol, sympy.Integer]:
    """Substitutions for the symbols of *expr* that *params* gives values to."""
    return {sym: sympy.Integer(params[sym.name]) for sym in expr.free_symbols if sym.name in params}


def _check_names(registry: PluginLoader, model: Model) -> None:
    known_flags = registry.flags - set(registry.conventions)  # conventions are chosen per evaluation
    known_params = set(registry.params) | {name for name, info in SHARED.items() if info.kind == "dimension"}
    places = [("", model.flags, model.params)] + [
        (f"kinds.{name}.", kind.flags, kind.params) for name, kind in model.kinds.items()
    ]
    for where, flags, params in places:
        for flag in sorted(flags & set(registry.conventions)):
            raise ModelError(
                f"{model.name}: {where}flags: {flag!r} is a convention, not a model property; "
                f"choose it with evaluate(..., convention={flag!r}) or --convention {flag}"
            )
        for flag in sorted(flags - known_flags):
            raise ModelError(
                f"{model.name}: {where}flags: unknown flag {flag!r}{did_you_mean(flag, known_flags)} "
                f"(known flags: {', '.join(sorted(known_flags))})"
            )
        for name, value in params.items():
            if name not in known_params:
                raise ModelError(
                    f"{model.name}: {where}params.{name}: unknown parameter{did_you_mean(name, known_params)} "
                    f"(no registered pattern declares it)"
                )
            _check_value(registry, model, where, name, value)


def check_values(registry: PluginLoader, model: Model) -> None:
    """The checks of :func:`compose` that read parameter values (each within its declared
    range), for a model whose flags and parameter names are known to be valid: a model of a
    structure already composed (:mod:`flopsreg.engine.structure`) is refused with the same message."""
    _check_value_list(registry, model, "", model.params)
    for name, kind in model.kinds.items():
        _check_value_list(registry, model, f"kinds.{name}.", kind.params)


def _check_value_list(registry: PluginLoader, model: Model, where: str, params: Mapping[str, int]) -> None:
    for name, value in params.items():
        _check_value(registry, model, where, name, value)


def _check_value(registry: PluginLoader, model: Model, where: str, name: str, value: int) -> None:
    """Parameter *name* = *value* (a declared or shared parameter) lies in its range."""
    param = registry.params.get(name)
    minimum = param.minimum if param else 1
    if value < minimum:
        meaning = param.meaning if param else SHARED[name].meaning
        raise ModelError(f"{model.name}: {where}params.{name} = {value}: expected an integer >= {minimum} ({meaning})")


def _plan_unit(
    registry: PluginLoader,
    quantity_names: Mapping[sympy.Symbol, str],
    unit_type: type[UnitSelection],
    flags: frozenset[str],
    params: Mapping[str, int],
    *,
    name: str,
    layers: tuple[range, ...] | None = None,
    engine_quantities: Mapping[sympy.Symbol, sympy.Expr] | None = None,
    engine_prefix: Callable[[], tuple[Mapping[sympy.Symbol, sympy.Expr], str | None]] | None = None,
    convention: Convention | None = None,
) -> UnitSelection:
    where = MODEL_LEVEL if layers is None else _kind_where(name, layers)
    selections = chosen = select(registry, unit_type.scope, flags, where)
    if convention is not None and convention.per_weight:
        selections = [_counted_per_weight(sel, convention) for sel in selections]
    refusals = [sel for sel in selections if sel.pattern.refusal is not None]  # rules that won say this model cannot be counted so
    if refusals:  # the highest one speaks, in whichever slot the layer has it
        sel = max(refusals, key=lambda sel: sel.pattern.precedence)
        raise ModelError(f"{where}, slot {sel.slot}: {sel.pattern.refusal} (pattern {sel.pattern.name!r})")
    kept = frozenset(q for sel in selections for q in sel.pattern.quantities if q != FLOPS and registry.quantities[q].replaces_seq_len)
    if len(kept) > 1:
        raise SelectionError(f"{where}: quantities {', '.join(map(repr, sorted(kept)))} both replace seq_len: a layer runs over one length")
    if convention is not None and convention.counts is not None:
        _check_terms(registry, convention, chosen if convention.per_weight else _needed(chosen, kept), where)
    quantities: dict[sympy.Symbol, sympy.Expr] = dict(engine_quantities or {})
    source: dict[str, str] = {}
    for sel in selections:
        for quantity, expr in sel.pattern.quantities.items():
            if quantity == FLOPS:
                continue
            if quantity in source:
                raise SelectionError(
                    f"{where}: quantity {quantity!r} is produced by both {source[quantity]!r} and {sel.pattern.name!r}"
                )
            source[quantity] = sel.pattern.name
            quantities[registry.quantities[quantity].symbol] = expr
    lengths = [(name, quantities[registry.quantities[name].symbol]) for name in sorted(kept)]
    selections = _needed(selections, kept)
    needed = {q for sel in selections for q in sel.pattern.quantities}
    quantities = {k: v for k, v in quantities.items() if k.name in needed or k not in quantity_names}
    # A unit that runs over other positions than the s input tokens counts every slot over them.
    over = {s: lengths[0][1]} if lengths else {}
    terms = {}
    for sel in selections:
        if sel.pattern.produces != FLOPS:
            continue
        expr = sel.pattern.formula
        for _ in range(len(quantities) + 1):
            expr = expr.xreplace(quantities)
        missing = sorted(quantity_names[q] for q in expr.free_symbols if q in quantity_names)
        if missing:
            raise SelectionError(
                f"{where}, slot {sel.slot}: pattern {sel.pattern.name!r} needs {', '.join(map(repr, missing))}, "
                f"which no selected pattern of this layer produces ({WITHOUT_PLUGINS_HINT})"
            )
        terms[sel.slot] = expr.xreplace(over)
    produced = {registry.quantities[q].symbol: registry.quantities[q] for q in source}
    formulas = {sel.slot: (sel.pattern.name, sel.pattern.formula) for sel in selections if sel.pattern.produces == FLOPS}
    rules = {sym: (q.name, q.cached, quantities[sym]) for sym, q in produced.items() if sym in quantities}

    def prefix() -> PrefixForms:
        if lengths:
            return PrefixForms({}, f"{where}: its layers run over {lengths[0][0]} = {lengths[0][1]}, not over the seq_len input tokens, "
                               "so new tokens after a cached prefix do not cost what they add to a longer sequence")
        blocking = next((sel for sel in selections if sel.pattern.no_prefix_form), None)
        if blocking is not None:
            return PrefixForms({}, f"{where}, slot {blocking.slot}: pattern {blocking.pattern.name!r}: {blocking.pattern.no_prefix_form}")
        engine, fault = engine_prefix() if engine_prefix else ({}, None)
        return PrefixForms({}, fault) if fault else prefix_forms(where, formulas, rules, engine)
    unit = unit_type(
        name=name,
        flags=flags,
        params=params,
        selections=tuple(selections),
        terms=terms,
        quantities={quantity_names[k]: v if quantity_names[k] in kept else v.xreplace(over) for k, v in quantities.items() if k in quantity_names},
        prefix_source=prefix,
        per_position=frozenset(sel.slot for sel in selections if registry.slots[sel.slot].per_position),
        **({} if layers is None else {"layers": layers}),
    )
    _check_params(registry, unit, where)
    return unit


def _check_terms(registry: PluginLoader, convention: Convention, selections: Sequence[SlotSelection], where: str) -> None:
    """Each counted slot's exact pattern (the one selected without a convention, which the
    convention's own pattern may have displaced) is one *convention* declares a term for
    (``Convention.counts``, by pattern or slot name); else one line naming it. Under a per-weight
    convention every selection counts (norms and biases by their weights), and a FLOPs pattern it
    did not displace is its term already: 2 FLOPs per weight held."""
    conventions = set(registry.conventions)
    for sel in selections:
        exact = next((p for p in sel.applicable if not p.flags & conventions), None)
        per_weight = convention.per_weight and exact is sel.pattern and exact.produces == FLOPS
        if exact is None or per_weight or exact.name in convention.counts or sel.slot in convention.counts:
            continue
        raise ModelError(
            f"{where}, slot {sel.slot}: {convention.name} has no term for {exact.name} (plugin {registry.plugin_of(exact)!r}): "
            f"its count would mix in a term the framework does not have, so it cannot count this model "
            f"(Convention.counts names the patterns it has terms for)"
        )


def _counted_per_weight(selection: SlotSelection, convention: Convention) -> SlotSelection:
    """*selection* under a per-weight convention: a FLOPs pattern that none of the convention's
    own patterns replaced counts 2 FLOPs per token per weight it holds (or uses), and nothing else
    (a tied head holds none: its matrix is the embedding's)."""
    pattern = selection.pattern
    if convention.name in pattern.flags or pattern.produces != FLOPS:
        return selection
    active = convention.per_weight == "active_weights" and pattern.active_weights is not None
    held = pattern.active_weights if active else pattern.weights
    counted = attrs.evolve(
        pattern,
        name=f"{convention.name}_{pattern.name}",
        flags=pattern.flags | {convention.name},
        formula=sympy.Add(*(2 * s * term for term in sympy.Add.make_args(held))),  # a term per weight group: rendered lines can break between them
        latex=None,
        summary=f"2 FLOPs per token for each {'active ' if active else ''}weight of {pattern.name} ({convention.name}: {convention.summary})",
        reference=convention.reference,
    )
    return SlotSelection(slot=selection.slot, pattern=counted, applicable=(counted, *selection.applicable))


def _needed(selections: list[SlotSelection], kept: frozenset[str] = frozenset()) -> list[SlotSelection]:
    """FLOPs-producing selections, and those producing a quantity one of them uses (transitively)
    or one of *kept* (the positions the unit runs over, which the engine uses).

    A layer without an MLP has no use for the MLP's matmul count, so that slot is not reported;
    nor is a pattern that only holds weights (a norm, a bias: FLOPs 0, weights not 0), which
    ``Registry.parameters`` counts and FLOPs do not.
    """
    selections = [sel for sel in selections if not holds_weights_only(sel.pattern)]
    providers = {q: sel for sel in selections for q in sel.pattern.quantities if q != FLOPS}
    needed: set[str] = set(kept & set(providers))
    frontier = [sel.pattern.formula for sel in selections if sel.pattern.produces == FLOPS]
    frontier += [providers[q].pattern.quantities[q] for q in needed]
    while frontier:
        for name in _symbol_names(frontier.pop()) & set(providers) - needed:
            needed.add(name)
            frontier.extend(providers[name].pattern.quantities.values())
    kept = {id(providers[q]) for q in needed}
    return [sel for sel in selections if sel.pattern.produces == FLOPS or id(sel) in kept]


def _check_params(registry: PluginLoader, unit: UnitSelection, where: str) -> None:
    needed = _symbol_names(unit.expression) - {"seq_len", "cached"}
    for sel in unit.selections:
        for constraint in sel.pattern.constraints:
            needed |= {sym.name for sym in constraint.free_symbols}
    for name in sorted(needed - set(unit.params)):
        users = [sel.pattern.name for sel in unit.selections if name in sel.pattern.param_names] or ["shared dimension"]
        meaning = registry.symbols[name].meaning if name in registry.symbols else "undeclared"
        raise ModelError(f"{where}: parameter {name!r} ({meaning}) is needed by {', '.join(users)} but not set")
    for sel in unit.selections:
        for constraint in sel.pattern.constraints:
            check_constraint(constraint, sel.pattern, unit.params, where)


def check_constraint(constraint: Constraint, pattern: Pattern, params: Mapping[str, int], where: str) -> None:
    """*constraint* of the selected *pattern* holds for the unit's *params*; else one line naming the values."""
    if not constraint.holds(_values(constraint, params)):
        shown = ", ".join(f"{s.name} = {params[s.name]}" for s in sorted(constraint.free_symbols, key=str))
        raise ModelError(f"{where}: {shown}: {constraint.message} (pattern {pattern.name})")


@attrs.frozen
class Unused:
    """One warning of :func:`unused`, without the value: ``before + str(value) + after``, where the
    value is ``params[name]`` of the model (*kind* None) or of layer kind *kind*; a warning that
    reads no value has *name* None. Models of one structure share these, with their own values."""

    kind: str | None
    name: str | None
    before: str
    after: str = ""


def warning_texts(model: Model, templates: Sequence[Unused]) -> tuple[str, ...]:
    """The warnings of *templates* with *model*'s values filled in."""
    texts = []
    for item in templates:
        if item.name is None:
            texts.append(item.before)
        else:
            params = model.params if item.kind is None else model.kinds[item.kind].params
            texts.append(f"{item.before}{params[item.name]}{item.after}")
    return tuple(texts)


def unused(registry: PluginLoader, model: Model, kinds: Sequence[UnitSelection], head: UnitSelection) -> tuple[Unused, ...]:
    """Parameters that are set but that no selected pattern uses: the slime MLA bug, made visible.

    Under a convention, parameters of the exact patterns it displaces count as used: ignoring
    them is the convention's rule, not a mistake in the model. Which ones depends on names and
    flags only, never on values (see :class:`Unused`).
    """
    conventions = set(registry.conventions)

    def used(unit: UnitSelection) -> set[str]:
        names = _symbol_names(unit.expression)
        # The parameters of applicable weight-only patterns size weights: used. (Flags first: a
        # pattern's formula is made canonical where it is first read.)
        names |= {
            name for p in registry.applicable(unit.flags)
            if p.scope == unit.scope and holds_weights_only(p) for name in p.param_names
        }
        for sel in unit.selections:
            names |= sel.pattern.param_names
            if sel.pattern.flags & conventions:
                names |= set().union(*(p.param_names for p in sel.applicable))
        return names

    def users(name: str) -> list[Pattern]:
        return list(registry.users_of(name))

    def hint(name: str) -> str:
        reachable = [p for p in users(name) if not (p.flags & conventions) - model.flags]  # under this convention
        shown = ", ".join(f"{p.name} (flags: {', '.join(sorted(p.flags)) or 'none'})" for p in reachable)
        return f"; it is used by {shown}" if shown else ""

    def other_conventions_only(name: str) -> bool:
        """Declared only by patterns of conventions not in use (e.g. Megatron's padded_vocab)."""
        declaring = users(name)
        return bool(declaring) and all((p.flags & conventions) - model.flags for p in declaring)

    warnings = []
    layer_flags = registry.layer_flags
    for name, kind in model.kinds.items():
        for flag in sorted(kind.flags - layer_flags):
            warnings.append(Unused(None, None,
                f"kinds.{name}.flags: {flag!r} selects only model-level patterns, so on a layer kind it "
                "does nothing; set it in the model's flags"
            ))
    used_anywhere = set().union(used(head), *(used(k) for k in kinds))
    for name in model.params:
        if name not in used_anywhere and not other_conventions_only(name):
            warnings.append(Unused(None, name, f"params.{name} = ", f" is set but no selected pattern uses it{hint(name)}"))
    for unit in kinds:
        for name in model.kinds[unit.name].params:
            if name not in used(unit) and not other_conventions_only(name):
                warnings.append(Unused(
                    unit.name, name, f"kinds.{unit.name}.params.{name} = ",
                    f" is set but no pattern selected for {unit.where} uses it{hint(name)}",
                ))
    return tuple(warnings)


