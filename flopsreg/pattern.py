"""Patterns: the declarative rules a plugin registers.

A :class:`Pattern` fills one *slot* of a layer (or of the model) where all its *flags* are set,
and declares a sympy *formula* for the quantity that slot produces. Its own parameters are
declared as :class:`Param`; everything else a formula uses comes from :mod:`flopsreg.symbols`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs
import sympy

from flopsreg.symbols import SHARED, integer_symbol

__all__ = ["Constraint", "Convention", "Param", "Pattern"]

_NAME = re.compile(r"[a-z][a-z0-9_]*")
_SLOT = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*")
QUANTITIES = frozenset({"flops"} | {n for n, info in SHARED.items() if info.kind == "quantity"})


def _expr(value: Any) -> sympy.Expr:
    """Accept sympy expressions and Python ints; refuse strings (they would lose assumptions)."""
    if isinstance(value, bool) or not isinstance(value, (int, sympy.Basic)):
        raise TypeError(
            f"a formula must be a sympy expression built from flopsreg.symbols and Param.symbol, "
            f"got {type(value).__name__} {value!r}"
        )
    return sympy.sympify(value)


def _expr_map(value: Mapping[str, Any]) -> dict[str, sympy.Expr]:
    return {str(k): _expr(v) for k, v in dict(value).items()}


def _names(value: Any) -> frozenset[str]:
    if isinstance(value, str):
        raise TypeError(f"flags must be a collection of names, not the string {value!r}")
    return frozenset(value)


def _each_name(instance: Any, attribute: attrs.Attribute, value: frozenset[str]) -> None:
    for name in value:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(f"{attribute.name}: {name!r} is not a lower_snake_case name")


@attrs.frozen(kw_only=True)
class Param:
    """A parameter a pattern needs, set on a model or layer kind (never defaulted).

    Attributes:
        name: the key in model files and ``Layer.params``, e.g. ``"window"``.
        latex: how formulas print it, e.g. ``"W"``.
        meaning: one line for legends and error messages.
        minimum: the smallest valid value (parameters are integers).
    """

    name: str = attrs.field(validator=attrs.validators.matches_re(_NAME))
    latex: str
    meaning: str
    minimum: int = attrs.field(default=1, validator=attrs.validators.instance_of(int))

    @property
    def symbol(self) -> sympy.Symbol:
        return integer_symbol(self.name)


@attrs.frozen(kw_only=True)
class Constraint:
    """A condition on parameter values that must hold, with the message shown when it fails."""

    condition: sympy.Basic = attrs.field()
    message: str

    @condition.validator
    def _check_condition(self, attribute: attrs.Attribute, value: sympy.Basic) -> None:
        if value in (sympy.true, sympy.false):
            raise ValueError(
                f"constraint {self.message!r} is always {value} for positive integers; "
                "it would never check anything"
            )


@attrs.frozen(kw_only=True)
class Pattern:
    """A rule that fills one slot where all its flags are set; the highest precedence wins.

    Attributes:
        name: unique across all plugins, e.g. ``"sliding_window"``.
        slot: the place it fills, e.g. ``"attention.mask"``.
        flags: the explicit flags that must all be set for it to apply; none = slot default.
        precedence: among applicable patterns of one slot the highest wins; ties are errors.
        formula: sympy expression of the quantity named by ``produces``, for one sequence of
            ``seq_len`` tokens.
        produces: ``"flops"`` (summed into the layer) or a quantity such as ``"pairs"`` that
            other slots' formulas use.
        provides: further quantities, e.g. ``{"qk_dim": ..., "v_dim": ...}`` for projections.
        params: the parameters its formulas use besides the shared symbols.
        constraints: conditions on parameter values, checked before evaluation.
        scope: ``"layer"`` (once per layer) or ``"model"`` (once per model, e.g. a logits head).
        summary: one line saying what it counts.
        reference: the paper, model card or config it follows.
    """

    name: str = attrs.field(validator=attrs.validators.matches_re(_NAME))
    slot: str = attrs.field(validator=attrs.validators.matches_re(_SLOT))
    precedence: int = attrs.field(validator=attrs.validators.instance_of(int))
    formula: sympy.Expr = attrs.field(converter=_expr)
    summary: str = attrs.field(validator=attrs.validators.min_len(1))
    reference: str = attrs.field(validator=attrs.validators.min_len(1))
    flags: frozenset[str] = attrs.field(default=(), converter=_names, validator=_each_name)
    produces: str = attrs.field(default="flops", validator=attrs.validators.in_(QUANTITIES))
    provides: Mapping[str, sympy.Expr] = attrs.field(factory=dict, converter=_expr_map, hash=False)
    params: tuple[Param, ...] = attrs.field(default=(), converter=tuple)
    constraints: tuple[Constraint, ...] = attrs.field(default=(), converter=tuple)
    scope: str = attrs.field(default="layer", validator=attrs.validators.in_({"layer", "model"}))

    @provides.validator
    def _check_provides(self, attribute: attrs.Attribute, value: Mapping[str, sympy.Expr]) -> None:
        unknown = set(value) - (QUANTITIES - {"flops"})
        if unknown:
            raise ValueError(
                f"pattern {self.name!r}: provides unknown quantities {sorted(unknown)}; "
                f"known: {sorted(QUANTITIES - {'flops'})}"
            )

    @property
    def quantities(self) -> dict[str, sympy.Expr]:
        """Every quantity this pattern defines: its formula under ``produces``, then ``provides``."""
        return {self.produces: self.formula, **self.provides}

    @property
    def param_names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.params)


@attrs.frozen(kw_only=True)
class Convention:
    """A named way of counting that other systems use, selected by an explicit flag.

    ``evaluate(model, convention=name)`` sets the flag ``name`` everywhere; patterns that
    require it (with precedence above the exact ones) then replace the exact rules.
    """

    name: str = attrs.field(validator=attrs.validators.matches_re(_NAME))
    summary: str = attrs.field(validator=attrs.validators.min_len(1))
    reference: str = attrs.field(validator=attrs.validators.min_len(1))
