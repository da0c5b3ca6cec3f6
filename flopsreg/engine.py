"""Selection, composition and evaluation: the rules engine.

For every layer kind (and once for the model-level slots) the engine takes, per slot, the
registered patterns whose flags are all set, keeps the one with the highest precedence, and
records why. It then substitutes the quantities that slots produce for each other (pairs from
the mask, head widths from the projection) into the FLOPs formulas, checks the parameters,
and evaluates the result with compiled exact-integer code. No pattern is named here.
"""

from __future__ import annotations

from collections import Counter
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING, Any

import attrs
import sympy

from flopsreg.compile import CompiledFormula, compile_exact
from flopsreg.errors import WITHOUT_PLUGINS_HINT, ModelError, SelectionError, did_you_mean
from flopsreg.model import IndexedView, Model, ranges_text, total_length
from flopsreg.pattern import Pattern
from flopsreg.symbols import SHARED

if TYPE_CHECKING:
    from flopsreg.registry import Registry

__all__ = [
    "KindPlan",
    "LayerResult",
    "ModelLevelPlan",
    "ModelPlan",
    "Result",
    "Selection",
    "UnitPlan",
    "evaluate",
    "plan_model",
]

_QUANTITIES = {info.symbol: name for name, info in SHARED.items() if info.kind == "quantity"}
_DIMENSIONS = {name for name, info in SHARED.items() if info.kind == "dimension"}
TRAINING_PASSES = 3  # forward + backward (gradients w.r.t. inputs and weights)


@attrs.frozen
class Selection:
    """The pattern chosen for one slot, and the applicable patterns it beat (highest first)."""

    slot: str
    pattern: Pattern
    applicable: tuple[Pattern, ...]

    @property
    def reason(self) -> str:
        flags = sorted(set().union(*(p.flags for p in self.applicable)))
        if not flags:
            return "slot default, no flag needed"
        ranking = " > ".join(f"{p.name} {p.precedence}" for p in self.applicable)
        return f"flag{'s' if len(flags) > 1 else ''} {', '.join(flags)} set; {ranking}"


@attrs.frozen(eq=False)
class UnitPlan:
    """The selection and formula for one layer kind (:class:`KindPlan`) or for the model-level
    slots (:class:`ModelLevelPlan`); compared by identity, as each belongs to one plan."""

    name: str
    flags: frozenset[str]
    params: Mapping[str, int]
    selections: tuple[Selection, ...]
    terms: Mapping[str, sympy.Expr]  # slot -> FLOPs of one sequence
    quantities: Mapping[str, sympy.Expr]  # e.g. pairs, qk_dim

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

    def total(self, seq_len: int) -> int:
        """Exact FLOPs of one sequence of *seq_len* tokens through this unit once, all slots."""
        return self._compiled_total({**self.params, "seq_len": seq_len})

    def flops(self, seq_len: int) -> dict[str, int]:
        """Exact FLOPs per slot of one sequence of *seq_len* tokens through this unit once."""
        values = {**self.params, "seq_len": seq_len}
        return {slot: formula(values) for slot, formula in self._compiled.items()}


@attrs.frozen(eq=False)
class KindPlan(UnitPlan):
    """One layer kind: its layers (as ranges of indices) and what fills each of its slots."""

    layers: tuple[range, ...]

    @property
    def count(self) -> int:
        return total_length(self.layers)

    @property
    def where(self) -> str:
        return _kind_where(self.name, self.layers)


@attrs.frozen(eq=False)
class ModelLevelPlan(UnitPlan):
    """The model-level slots (logits, MTP, ...): counted once per sequence."""

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
class ModelPlan:
    """Every selection for a model, with warnings; evaluate it with :func:`evaluate`."""

    model: Model
    registry: Registry = attrs.field(eq=False, repr=False)
    convention: str
    kinds: tuple[KindPlan, ...]
    head: ModelLevelPlan
    warnings: tuple[str, ...]

    @property
    def units(self) -> tuple[UnitPlan, ...]:
        return self.kinds + ((self.head,) if self.head.selections else ())

    def kind(self, name: str) -> KindPlan:
        return next(unit for unit in self.kinds if unit.name == name)

    def explain(self) -> str:
        """The selection trace: one line per slot and layer kind, with the reason."""
        from flopsreg.render import explain_text

        return explain_text(self)

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

    @cached_property
    def _forward_function(self) -> Callable[[int], int | Fraction]:
        compiled = self.compiled
        if compiled.argnames == ("seq_len",):
            return compiled.function
        return lambda seq_len: compiled({"seq_len": seq_len})

    def forward(self, seq_len: int) -> int:
        """Exact forward FLOPs of one sequence of *seq_len* tokens."""
        flops = self._forward_function(seq_len)
        return flops if type(flops) is int else self.compiled({"seq_len": seq_len})


def plan_model(registry: Registry, model: Model, *, convention: str = "exact") -> ModelPlan:
    """Select patterns for every layer kind and the model-level slots, checking every input."""
    if not isinstance(model, Model):
        raise ModelError(
            f"model: expected a flopsreg.Model, got {type(model).__name__} {model!r:.60}; load one with "
            "Model.example(name), Model.from_toml(path) or Model.from_hf_config(path)"
        )
    if not isinstance(convention, str):
        raise ModelError(f"convention: expected a convention name (a string), got {type(convention).__name__} {convention!r:.60}")
    _check_names(registry, model)
    given = model
    if convention != "exact":
        if convention not in registry.conventions:
            known = ["exact", *registry.conventions]
            raise ModelError(
                f"convention: {convention!r} is not registered{did_you_mean(convention, known)} "
                f"(known: {', '.join(known)})"
            )
        model = attrs.evolve(model, flags=model.flags | {convention})
    structure = {"mtp_layers": len(model.plan.mtp)}
    kinds = []
    for name in model.plan.kinds():
        flags, params = model.merged(name)
        kinds.append(_plan_unit(registry, KindPlan, flags, params, name=name, layers=model.plan.indices(name)))
    mtp_block = sympy.Integer(0)
    for block in model.mtp_blocks:  # the decoder layers inside MTP modules, planned like any layer
        unit = _plan_unit(registry, KindPlan, block.flags, block.params, name=block.kind, layers=(range(block.index, block.index + 1),))
        mtp_block += unit.expression.xreplace(_values(unit.expression, unit.params))
    head = _plan_unit(
        registry,
        ModelLevelPlan,
        model.flags,
        {**model.params, **structure},
        name="model",
        engine_quantities={SHARED["mtp_block"].symbol: mtp_block},
    )
    # A convention may choose not to count MTP (slime), but some applicable pattern must know it.
    head_formulas = sympy.Add(*(p.formula for sel in head.selections for p in sel.applicable))
    if model.plan.mtp and not {"mtp_layers", "mtp_block"} & _symbol_names(head_formulas):
        raise ModelError(
            f"{model.name}: plan.mtp lists {len(model.plan.mtp)} MTP module(s), but no selected pattern "
            "counts them (set the flag of a pattern that uses mtp_block, such as mtp)"
        )
    return ModelPlan(
        model=given,
        registry=registry,
        convention=convention,
        kinds=tuple(kinds),
        head=head,
        warnings=_unused(registry, model, kinds, head),
    )


def _symbol_names(expr: sympy.Expr) -> set[str]:
    return {sym.name for sym in expr.free_symbols}


def _values(expr: sympy.Basic, params: Mapping[str, int]) -> dict[sympy.Symbol, sympy.Integer]:
    """Substitutions for the symbols of *expr* that *params* gives values to."""
    return {sym: sympy.Integer(params[sym.name]) for sym in expr.free_symbols if sym.name in params}


def _check_names(registry: Registry, model: Model) -> None:
    known_flags = registry.flags - set(registry.conventions)  # conventions are chosen per evaluation
    known_params = set(registry.params) | _DIMENSIONS
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
            param = registry.params.get(name)
            minimum, meaning = (param.minimum, param.meaning) if param else (1, SHARED[name].meaning)
            if value < minimum:
                raise ModelError(
                    f"{model.name}: {where}params.{name} = {value}: expected an integer >= {minimum} ({meaning})"
                )


def _select(registry: Registry, scope: str, flags: frozenset[str], where: str) -> list[Selection]:
    by_slot: dict[str, list[Pattern]] = {}
    for pattern in registry.patterns:  # sorted by slot, then precedence (highest first), then name
        if pattern.scope == scope and pattern.flags <= flags:
            by_slot.setdefault(pattern.slot, []).append(pattern)
    selections = []
    for slot, applicable in by_slot.items():
        ties = [(a, b) for a, b in zip(applicable, applicable[1:]) if a.precedence == b.precedence]
        if ties:  # even below the winner: equal precedence means nobody decided, never a coin toss
            a, b = ties[0]
            raise SelectionError(
                f"{where}, slot {slot}: patterns {a.name!r} (plugin {registry.plugin_of(a)!r}) and {b.name!r} "
                f"(plugin {registry.plugin_of(b)!r}) both apply with precedence {a.precedence}; give them "
                f"different precedences ({WITHOUT_PLUGINS_HINT})"
            )
        selections.append(Selection(slot=slot, pattern=applicable[0], applicable=tuple(applicable)))
    return selections


_SCOPES = {KindPlan: "layer", ModelLevelPlan: "model"}  # which patterns each unit type takes


def _plan_unit(
    registry: Registry,
    unit_type: type[UnitPlan],
    flags: frozenset[str],
    params: Mapping[str, int],
    *,
    name: str,
    layers: tuple[range, ...] | None = None,
    engine_quantities: Mapping[sympy.Symbol, sympy.Expr] | None = None,
) -> UnitPlan:
    where = MODEL_LEVEL if layers is None else _kind_where(name, layers)
    selections = _select(registry, _SCOPES[unit_type], flags, where)
    quantities: dict[sympy.Symbol, sympy.Expr] = dict(engine_quantities or {})
    source: dict[str, str] = {}
    for sel in selections:
        for quantity, expr in sel.pattern.quantities.items():
            if quantity == "flops":
                continue
            if quantity in source:
                raise SelectionError(
                    f"{where}: quantity {quantity!r} is produced by both {source[quantity]!r} and {sel.pattern.name!r}"
                )
            source[quantity] = sel.pattern.name
            quantities[SHARED[quantity].symbol] = expr
    selections = _needed(selections)
    needed = {q for sel in selections for q in sel.pattern.quantities}
    quantities = {k: v for k, v in quantities.items() if k.name in needed or k not in _QUANTITIES}
    terms = {}
    for sel in selections:
        if sel.pattern.produces != "flops":
            continue
        expr = sel.pattern.formula
        for _ in range(len(quantities) + 1):
            expr = expr.xreplace(quantities)
        missing = sorted(_QUANTITIES[q] for q in expr.free_symbols if q in _QUANTITIES)
        if missing:
            raise SelectionError(
                f"{where}, slot {sel.slot}: pattern {sel.pattern.name!r} needs {', '.join(map(repr, missing))}, "
                f"which no selected pattern of this layer produces ({WITHOUT_PLUGINS_HINT})"
            )
        terms[sel.slot] = expr
    unit = unit_type(
        name=name,
        flags=flags,
        params=params,
        selections=tuple(selections),
        terms=terms,
        quantities={_QUANTITIES[k]: v for k, v in quantities.items() if k in _QUANTITIES},
        **({} if layers is None else {"layers": layers}),
    )
    _check_params(registry, unit, where)
    return unit


def _needed(selections: list[Selection]) -> list[Selection]:
    """FLOPs-producing selections, and those producing a quantity one of them uses (transitively).

    A layer without an MLP has no use for the MLP's matmul count, so that slot is not reported.
    """
    needed: set[str] = set()
    frontier = [sel.pattern.formula for sel in selections if sel.pattern.produces == "flops"]
    providers = {q: sel for sel in selections for q in sel.pattern.quantities if q != "flops"}
    while frontier:
        for name in _symbol_names(frontier.pop()) & set(providers) - needed:
            needed.add(name)
            frontier.extend(providers[name].pattern.quantities.values())
    kept = {id(providers[q]) for q in needed}
    return [sel for sel in selections if sel.pattern.produces == "flops" or id(sel) in kept]


def _check_params(registry: Registry, unit: UnitPlan, where: str) -> None:
    needed = _symbol_names(unit.expression) - {"seq_len"}
    for sel in unit.selections:
        for constraint in sel.pattern.constraints:
            needed |= {sym.name for sym in constraint.condition.free_symbols}
    for name in sorted(needed - set(unit.params)):
        users = [sel.pattern.name for sel in unit.selections if name in sel.pattern.param_names] or ["shared dimension"]
        param = registry.params.get(name)
        meaning = param.meaning if param else SHARED[name].meaning
        raise ModelError(f"{where}: parameter {name!r} ({meaning}) is needed by {', '.join(users)} but not set")
    for sel in unit.selections:
        for constraint in sel.pattern.constraints:
            if not bool(constraint.condition.xreplace(_values(constraint.condition, unit.params))):
                shown = ", ".join(f"{s.name} = {unit.params[s.name]}" for s in sorted(constraint.condition.free_symbols, key=str))
                raise ModelError(f"{where}: {shown}: {constraint.message} (pattern {sel.pattern.name})")


def _unused(registry: Registry, model: Model, kinds: Sequence[UnitPlan], head: UnitPlan) -> tuple[str, ...]:
    """Parameters that are set but that no selected pattern uses: the slime MLA bug, made visible.

    Under a convention, parameters of the exact patterns it displaces count as used: ignoring
    them is the convention's rule, not a mistake in the model.
    """
    conventions = set(registry.conventions)

    def used(unit: UnitPlan) -> set[str]:
        names = _symbol_names(unit.expression)
        for sel in unit.selections:
            names |= sel.pattern.param_names
            if sel.pattern.flags & conventions:
                names |= set().union(*(p.param_names for p in sel.applicable))
        return names

    def users(name: str) -> list[Pattern]:
        return [p for p in registry.patterns if name in p.param_names]

    def hint(name: str) -> str:
        shown = ", ".join(f"{p.name} (flags: {', '.join(sorted(p.flags)) or 'none'})" for p in users(name))
        return f"; it is used by {shown}" if shown else ""

    def other_conventions_only(name: str) -> bool:
        """Declared only by patterns of conventions not in use (e.g. Megatron's padded_vocab)."""
        declaring = users(name)
        return bool(declaring) and all((p.flags & conventions) - model.flags for p in declaring)

    warnings = []
    layer_flags = frozenset().union(*(p.flags for p in registry.patterns if p.scope == "layer"))
    for name, kind in model.kinds.items():
        for flag in sorted(kind.flags - layer_flags):
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
                    f"kinds.{unit.name}.params.{name} = {value} is set but no pattern selected for "
                    f"{unit.where} uses it{hint(name)}"
                )
    return tuple(warnings)


# -- evaluation ------------------------------------------------------------------------------


@attrs.frozen
class LayerResult:
    """One layer's exact FLOPs for the whole batch, and the pattern chosen for each slot."""

    index: int
    kind: str
    patterns: Mapping[str, str] = attrs.field(hash=False)
    flops: int


RECOMPUTE = {
    "none": "no activation recomputation: training = 3 x forward",
    "selective": "the attention core (QK^T and PV) of every layer is recomputed in the backward pass",
    "full": "every decoder layer's forward is recomputed in the backward pass (not the logits head)",
}
SELECTIVE_SLOTS = ("attention.core",)


@attrs.frozen
class Result:
    """Exact FLOPs of a model for a batch; see :meth:`flopsreg.Registry.evaluate`."""

    plan: ModelPlan
    seqlens: tuple[int, ...]
    batch: int
    recompute: str
    forward: int  # exact forward FLOPs of the whole batch

    def _per_length(self, function: Callable[[int], Any]) -> Any:
        """``batch * sum(count * function(length))`` over the distinct lengths, dicts added per key."""
        total: Any = None
        for length, count in Counter(self.seqlens).items():
            value = function(length)
            if isinstance(value, dict):
                total = dict.fromkeys(value, 0) if total is None else total
                for key, flops in value.items():
                    total[key] += self.batch * count * flops
            else:
                total = (total or 0) + self.batch * count * value
        return total

    @cached_property
    def unit_totals(self) -> dict[UnitPlan, int]:
        """FLOPs for the whole batch through each unit of the plan once (one layer of a kind)."""
        return {unit: self._per_length(unit.total) for unit in self.plan.units}

    @cached_property
    def unit_flops(self) -> dict[UnitPlan, dict[str, int]]:
        """FLOPs per slot for the whole batch through each unit of the plan once.

        Computed on first use, so a caller that needs only the total does not pay for it.
        """
        return {unit: self._per_length(unit.flops) for unit in self.plan.units}

    @property
    def model(self) -> Model:
        return self.plan.model

    @property
    def convention(self) -> str:
        return self.plan.convention

    @property
    def layers(self) -> Sequence[LayerResult]:
        """Every decoder layer with its patterns and exact FLOPs for the batch, computed on access."""
        by_kind = {unit.name: unit for unit in self.plan.kinds}
        kind_at = self.model.plan.kind_at

        def layer(index: int) -> LayerResult:
            unit = by_kind[kind_at(index)]
            return LayerResult(index=index, kind=unit.name, patterns=unit.patterns, flops=self.unit_totals[unit])

        return IndexedView(self.model.plan.layers, layer)

    @cached_property
    def slot_flops(self) -> dict[str, int]:
        """Forward FLOPs of the batch per slot, summed over the model: where the work goes."""
        totals: dict[str, int] = {}
        for unit in self.plan.units:
            for slot, flops in self.unit_flops[unit].items():
                totals[slot] = totals.get(slot, 0) + unit.count * flops
        return totals

    @property
    def recomputed(self) -> int:
        """Forward FLOPs repeated in the backward pass by activation recomputation."""
        if self.recompute == "none":
            return 0
        if self.recompute == "full":
            return sum(unit.count * self.unit_totals[unit] for unit in self.plan.kinds)
        return sum(
            unit.count * flops
            for unit in self.plan.kinds
            for slot, flops in self.unit_flops[unit].items()
            if slot in SELECTIVE_SLOTS
        )

    @property
    def training(self) -> int:
        """Forward plus backward (3 x forward), plus recomputed forward work if asked for."""
        return TRAINING_PASSES * self.forward + self.recomputed

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.plan.warnings

    @property
    def expression(self) -> sympy.Expr:
        """Forward FLOPs of one sequence, closed form in ``seq_len``, dimensions substituted."""
        return self.plan.expression

    def explain(self) -> str:
        return self.plan.explain()

    def latex(self) -> str:
        """An ``align`` environment: one row per term, per layer kind, and the model total."""
        from flopsreg.render import latex

        return latex(self.plan, result=self)

    def _repr_latex_(self) -> str:
        return self.latex()


def _lengths(seq_len: int | None, seqlens: Sequence[int] | None) -> tuple[int, ...]:
    if (seq_len is None) == (seqlens is None):
        raise ModelError("give exactly one of seq_len (every sequence alike) or seqlens (one packed row)")
    if seqlens is None:
        return (positive_int("seq_len", seq_len, "a sequence length"),)
    if isinstance(seqlens, (str, bytes)) or not isinstance(seqlens, Iterable):
        raise ModelError(f"seqlens = {seqlens!r}: expected a list of sequence lengths")
    lengths = tuple(sequence_lengths("seqlens", seqlens))
    if not lengths:
        raise ModelError("seqlens: empty; give at least one sequence length")
    return lengths


def positive_int(field: str, value: Any, what: str) -> int:
    """*value* as a Python int >= 1 (numpy integers accepted, bools and floats refused)."""
    if type(value) is int and value >= 1:
        return value
    if isinstance(value, bool) or not hasattr(value, "__index__") or operator.index(value) < 1:
        raise ModelError(f"{field}: {value!r} is not {what}: expected an integer >= 1")
    return operator.index(value)


def sequence_lengths(field: str, lengths: Iterable[Any]) -> Iterator[int]:
    """Each entry of *lengths* as a sequence length (an int >= 1); the error names *field*."""
    for value in lengths:
        yield positive_int(field, value, "a sequence length")


def evaluate(
    plan: ModelPlan,
    seq_len: int | None = None,
    seqlens: Sequence[int] | None = None,
    batch: int = 1,
    recompute: str = "none",
) -> Result:
    """Exact FLOPs of *plan* over ``batch`` copies of the given sequences (see Registry.evaluate)."""
    if seqlens is None and type(seq_len) is int and seq_len >= 1:  # the common case, checked fast
        lengths: tuple[int, ...] = (seq_len,)
    else:
        lengths = _lengths(seq_len, seqlens)
    if type(batch) is not int or batch < 1:
        batch = positive_int("batch", batch, "a batch size")
    if recompute not in RECOMPUTE if isinstance(recompute, str) else True:
        raise ModelError(
            f"recompute: {recompute!r} is not a recomputation mode{did_you_mean(str(recompute), RECOMPUTE)} "
            f"(expected one of: {', '.join(RECOMPUTE)})"
        )
    if len(lengths) == 1:
        forward = batch * plan.forward(lengths[0])
    else:
        forward = batch * sum(count * plan.forward(length) for length, count in Counter(lengths).items())
    return Result(plan, lengths, batch, recompute, forward)  # positional: measurably cheaper
