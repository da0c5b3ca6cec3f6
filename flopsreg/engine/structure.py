"""Models that differ only in parameter values: composed once, evaluated with values as arguments.

Flags select, values never do: the patterns, quantities and closed forms of a model depend on its
*structure* (:func:`~flopsreg.engine.evaluate.structure_key`: convention, flags, plan, and the names of the parameters set
model-wide and per layer kind), not on the numbers. A :class:`Structure` holds one composed model
of a structure and the whole model's forward FLOPs compiled once with every parameter value as an
argument; :meth:`Structure.rebind` gives another model of that structure its own
:class:`~flopsreg.engine.compose.ModelSelection` without selecting or composing again: its values are
checked (ranges and pattern constraints, with compose's messages) and its ``forward`` calls the
compiled code. Its symbolic parts (expression, LaTeX, per-slot detail) are derived on first use.

Layer counts are part of the plan, hence of the structure: a model with more layers is composed
again (once per plan). A model whose plan lists blocks of extra layers (multi-token prediction)
is not rebound: its model-level formula holds the blocks' FLOPs with their values substituted.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from functools import partial
from typing import TYPE_CHECKING, Any

import attrs
import sympy

from flopsreg.declarations.pattern import EXACT, Constraint, Pattern
from flopsreg.engine.compose import (
    KindSelection,
    ModelSelection,
    SelectedUnits,
    UnitSelection,
    Unused,
    check_constraint,
    check_values,
    unused,
    warning_texts,
)
from flopsreg.errors import PatternError
from flopsreg.formula.exact import compile_exact, trial_function
from flopsreg.model import FrozenMap, Model

if TYPE_CHECKING:
    from flopsreg.formula.exact import CompiledFormula
    from flopsreg.plugins.loader import PluginLoader

__all__ = ["Structure", "rebindable"]

SEQ_LEN = "seq_len"


def rebindable(selection: ModelSelection) -> bool:
    """Whether other models can share *selection*'s structure (no blocks of extra layers)."""
    return not selection.blocks


Place = tuple[str | None, str]  # where a model sets a value: (layer kind, or None for model-wide; parameter)


@attrs.frozen
class _CheckedConstraint:
    """A constraint of a selected pattern, compiled to read the model's values directly."""

    constraint: Constraint
    pattern: Pattern
    kind: str | None  # the unit's layer kind; None: the model-level slots
    where: str
    reads: tuple[int, ...]  # the index in :attr:`Structure.places` of each argument of *function*
    function: Callable[..., Any] | None  # None: no exact compiled form, ask sympy every time


class Structure:
    """One composed model of a structure, and its forward FLOPs with values as arguments.

    A model's values are read as one list, in the order of :attr:`places` (every value the
    template sets: model-wide, then per layer kind); the checks and the compiled forward read
    that list by index.
    """

    def __init__(self, registry: PluginLoader, template: ModelSelection) -> None:
        self._registry = registry
        self.template = template
        model = template.model
        self.places: tuple[Place, ...] = (*((None, name) for name in model.params),) + tuple(
            (kind, name) for kind, layer_kind in model.kinds.items() for name in layer_kind.params
        )
        self._index = {place: i for i, place in enumerate(self.places)}
        self._minimums = tuple(registry.params[name].minimum if name in registry.params else 1 for _, name in self.places)
        # values the plan gives the model-level slots (each block's layer count), as compose sets them
        self._plan_given = {block.layers.name: template.head.params[block.layers.name] for block in registry.blocks.values()}
        self._unused = self._unused_templates()
        self.formula, self.reads = self._compile_forward()
        self._every_place = self.reads == (*range(len(self.places)), None)
        self._constraints = tuple(self._compiled_constraints())

    def _unused_templates(self) -> tuple[Unused, ...]:
        """The warnings of the template, without values (see :func:`flopsreg.engine.compose.unused`)."""
        template = self.template
        model = template.model
        if template.convention != EXACT:
            model = attrs.evolve(model, flags=model.flags | {template.convention})
        return unused(self._registry, model, template.kinds, template.head)

    def _place(self, kind: str | None, name: str) -> Place | None:
        """Where a unit's parameter *name* comes from: the kind's params, the model's, or (None) the plan."""
        model = self.template.model
        if kind is not None and name in model.kinds[kind].params:
            return (kind, name)
        if kind is None and name in self._plan_given:
            return None
        return (None, name) if name in model.params else None

    def _compile_forward(self) -> tuple[CompiledFormula, tuple[int | None, ...]]:
        """The whole model's forward FLOPs of one sequence, every value an argument, compiled
        once; and the index in :attr:`places` each argument reads (None: the sequence length).

        The value at place *i* is the argument ``_i`` (zero-padded), so the arguments come in
        the order of :attr:`places` and the length, sorted after them, comes last: binding a
        model's values is one :func:`functools.partial`.
        """
        total = sympy.Integer(0)
        width = len(str(len(self.places)))
        for unit in self.template.units:
            kind = unit.name if isinstance(unit, KindSelection) else None
            replace = {}
            for symbol in unit.expression.free_symbols:
                if symbol.name == SEQ_LEN:
                    continue
                place = self._place(kind, symbol.name)
                if place is None:  # given by the plan: the same for every model of the structure
                    replace[symbol] = sympy.Integer(unit.params[symbol.name])
                else:
                    replace[symbol] = sympy.Symbol(f"_{self._index[place]:0{width}d}", **symbol.assumptions0)
            total += unit.count * unit.expression.xreplace(replace)
        formula = compile_exact(total)
        return formula, tuple(None if name == SEQ_LEN else int(name[1:]) for name in formula.argnames)

    def _compiled_constraints(self) -> list[_CheckedConstraint]:
        checked = []
        for unit in self.template.units:
            kind = unit.name if isinstance(unit, KindSelection) else None
            for selection in unit.selections:
                for constraint in selection.pattern.constraints:
                    try:
                        names, function = trial_function(constraint.condition)
                        places = [self._place(kind, name) for name in names]
                    except PatternError:
                        function, places = None, []
                    if None in places:  # reads a value the plan gives: ask sympy
                        function, places = None, []
                    reads = tuple(self._index[place] for place in places)  # type: ignore[index]
                    checked.append(_CheckedConstraint(constraint, selection.pattern, kind, unit.where, reads, function))
        return checked

    def values(self, model: Model) -> list[int]:
        """*model*'s value at each of :attr:`places` (a model of this structure sets the same
        names in the same order: :func:`~flopsreg.engine.evaluate.structure_key` holds them)."""
        values = list(model.params.values())
        for kind in model.kinds.values():
            values += kind.params.values()
        return values

    def forward_function(self, values: Sequence[int]) -> Callable[[int], int | Fraction]:
        """Forward FLOPs of one sequence for *values* (see :meth:`values`) as a function of the length."""
        function = self.formula.function
        if self._every_place:  # every value is an argument, in order, and the length comes last
            return partial(function, *values)
        if self.reads[-1:] == (None,):  # the length is the last argument
            return partial(function, *[values[read] for read in self.reads[:-1]])
        arguments = [values[read] for read in self.reads]  # type: ignore[index]
        return lambda seq_len: function(*arguments)  # the FLOPs do not depend on the length

    def holds(self, values: Sequence[int]) -> bool:
        """Whether *values* (see :meth:`values`) pass every check the cheap way (False also where
        a constraint has no compiled form: :meth:`refuse` asks sympy)."""
        if not all(map(operator.ge, values, self._minimums)):
            return False
        for item in self._constraints:
            if item.function is None or not item.function(*[values[i] for i in item.reads]):
                return False
        return True

    def refuse(self, model: Model) -> None:
        """Raise compose's message for the first check *model*'s values fail; return if none does."""
        check_values(self._registry, model)
        for item in self._constraints:
            check_constraint(item.constraint, item.pattern, self._unit_params(model, item.kind), item.where)

    def _unit_params(self, model: Model, kind: str | None) -> Mapping[str, int]:
        return model.merged(kind)[1] if kind is not None else {**model.params, **self._plan_given}

    def rebind(self, model: Model) -> ModelSelection:
        """*model* (of this structure) selected and composed as the template is, checked, with
        its own values: the forward FLOPs come from the compiled code; its units and warnings
        are derived on first use (:meth:`units_of`)."""
        values = self.values(model)
        if not self.holds(values):
            self.refuse(model)
        return self.template.rebound(model, partial(self.units_of, model), self.forward_function(values))

    def units_of(self, model: Model) -> SelectedUnits:
        """*model*'s units and warnings: the template's selections and symbolic terms with *model*'s values."""
        template, params = self.template, model.params
        return SelectedUnits(
            tuple(_with_params(unit, FrozenMap({**params, **model.kinds[unit.name].params})) for unit in template.kinds),
            _with_params(template.head, {**params, **self._plan_given}),
            warning_texts(model, self._unused) if self._unused else (),
        )


def _with_params(unit: UnitSelection, params: Mapping[str, int]) -> Any:
    """*unit* with another model's *params*: the same selections and symbolic terms (as
    ``attrs.evolve``, written out: it runs once per model of a sweep)."""
    fields = {
        "name": unit.name, "flags": unit.flags, "params": params, "selections": unit.selections, "terms": unit.terms,
        "quantities": unit.quantities, "prefix_source": unit.prefix_source, "per_position": unit.per_position,
    }
    return KindSelection(**fields, layers=unit.layers) if isinstance(unit, KindSelection) else type(unit)(**fields)

