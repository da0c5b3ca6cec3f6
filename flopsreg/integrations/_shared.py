"""What the drop-ins share: one registry per process, and one model plan per argument set."""

from __future__ import annotations

import functools
from typing import Any

import sympy

from flopsreg.compose import ModelSelection
from flopsreg.errors import ModelError
from flopsreg.model import Model
from flopsreg.api import Registry

__all__ = ["default_registry", "linear_and_quadratic", "megatron_model"]


@functools.lru_cache(maxsize=1)
def default_registry() -> Registry:
    """The registry the drop-ins use when none is passed (built once per process)."""
    return Registry.default()


def megatron_model(args: Any, registry: Registry) -> Model:
    """The model of a Megatron-LM argument namespace, read by *registry*'s Megatron-LM readers."""
    return Model.from_megatron_args(args, registry=registry)


def linear_and_quadratic(plan: ModelSelection) -> tuple[sympy.Rational, sympy.Rational]:
    """``(a, b)`` with forward FLOPs of one sequence = a*s + b*s**2, if the plan has that form.

    Megatron-LM's packed-sequence path only knows the total tokens and the sum of squared
    lengths, which determine the count only when every layer is linear-plus-quadratic in s.
    """
    s = sympy.Symbol("seq_len", integer=True, positive=True)
    expression = sympy.expand(sympy.piecewise_fold(plan.expression))
    if expression.has(sympy.Piecewise, sympy.floor, sympy.Mod) or not expression.is_polynomial(s):
        raise ModelError(
            f"{plan.model.name}: under convention {plan.convention!r} the FLOPs of a sequence are not "
            "a*s + b*s^2 (sliding-window or chunked layers), so the sum of squared lengths does not "
            "determine them: pass the sequence lengths instead"
        )
    poly = sympy.Poly(expression, s)
    if poly.degree() > 2 or poly.coeff_monomial(1) != 0:
        raise ModelError(f"{plan.model.name}: FLOPs per sequence {expression} are not of the form a*s + b*s^2")
    return poly.coeff_monomial(s), poly.coeff_monomial(s**2)
