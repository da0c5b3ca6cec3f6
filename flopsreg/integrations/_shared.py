"""What the drop-ins share: one registry per process, and one model plan per argument set.

Training loops call a drop-in every logging step with the same arguments, so the model read
from them and its compiled plan are kept, keyed by the values of every argument the Megatron-LM
readers may read: a repeated call costs a few attribute reads and one compiled-function call.
"""

from __future__ import annotations

import argparse
import functools
import marshal
import operator
import types
from collections.abc import Callable
from typing import Any

import attrs
import sympy

from flopsreg.compose import ModelSelection
from flopsreg.errors import ModelError
from flopsreg.model import Model
from flopsreg.api import Registry
from flopsreg.readers.megatron import read_arguments

__all__ = ["default_registry", "linear_and_quadratic", "megatron_model", "megatron_plan"]

_PLANS_KEPT = 64  # distinct (registry, convention, argument values): bounded, oldest dropped first
_plans: dict[tuple[Any, ...], ModelSelection] = {}
# The last plan per (registry, convention) with the values it was read from: a repeated call
# compares one encoding of them instead of hashing every value.
_recent: dict[tuple[Any, str], _Snapshot] = {}
_MARSHAL_FORMAT = 2  # the newest format without back-references, whose bytes depend on refcounts
_PLAIN_NAMESPACES = (argparse.Namespace, types.SimpleNamespace)


@functools.lru_cache(maxsize=1)
def default_registry() -> Registry:
    """The registry the drop-ins use when none is passed (built once per process)."""
    return Registry.default()


def megatron_model(args: Any, registry: Registry) -> Model:
    """The model of a Megatron-LM argument namespace, read by *registry*'s Megatron-LM readers."""
    return Model.from_megatron_args(args, registry=registry)


def megatron_plan(args: Any, registry: Registry, convention: str) -> ModelSelection:
    """The plan of *args* under *convention*, reused while the arguments the readers read keep their values."""
    recent = _recent.get((registry, convention))
    if recent is not None and type(args) in _PLAIN_NAMESPACES:  # the training-loop call, checked in C
        namespace = args.__dict__
        try:
            if recent.absent.isdisjoint(namespace) and marshal.dumps(recent.present(namespace), _MARSHAL_FORMAT) == recent.encoded:
                return recent.plan  # the same values, of the same types, as last time
        except (KeyError, ValueError):  # an argument deleted, or a value marshal cannot encode
            pass
    values = _argument_values(args, registry)
    key: tuple[Any, ...] | None = (registry, convention, values, tuple(map(type, values)))  # 1, 1.0, True differ
    try:
        plan = _plans.get(key)
    except TypeError:  # a list among the values (layer patterns, windows): as typed tuples, if hashable
        key = (registry, convention, tuple(map(_frozen, values)))
        try:
            plan = _plans.get(key)
        except TypeError:
            key, plan = None, None
    if plan is None:
        plan = registry.plan(megatron_model(args, registry), convention=convention)
        if key is not None:
            if len(_plans) >= _PLANS_KEPT:
                del _plans[next(iter(_plans))]
            _plans[key] = plan
    snapshot = _Snapshot.of(args, _read_names(registry), plan)
    if snapshot is not None:
        if len(_recent) >= _PLANS_KEPT:
            _recent.clear()
        _recent[registry, convention] = snapshot
    return plan


@functools.lru_cache(maxsize=16)
def _read_names(registry: Registry) -> tuple[str, ...]:
    return read_arguments(registry)


def _argument_values(args: Any, registry: Registry) -> tuple[Any, ...]:
    """Every value the readers may read (None where an argument is missing)."""
    names = _read_names(registry)
    if type(args) in _PLAIN_NAMESPACES:  # the usual case, read straight from the instance dict
        return tuple(map(args.__dict__.get, names))
    return tuple(getattr(args, name, None) for name in names)


@attrs.frozen
class _Snapshot:
    """The values a plan was read from, in a form a repeated call checks in a few C calls.

    ``marshal`` (format 2, which has no back-references) encodes a value with its exact type,
    so 1, 1.0 and True differ, and refuses any other type (then there is no snapshot).
    """

    present: Callable[[dict[str, Any]], Any]  # reads the arguments the namespace had
    absent: frozenset[str]  # the arguments it did not have
    encoded: bytes
    plan: ModelSelection

    @classmethod
    def of(cls, args: Any, names: tuple[str, ...], plan: ModelSelection) -> _Snapshot | None:
        """The snapshot of a plain namespace's values, or None where one cannot be taken."""
        if type(args) not in _PLAIN_NAMESPACES:
            return None
        present = tuple(name for name in names if name in args.__dict__)
        if not present:
            return None
        getter = operator.itemgetter(*present)
        try:
            encoded = marshal.dumps(getter(args.__dict__), _MARSHAL_FORMAT)
        except ValueError:  # a value of another type (numpy, enum, ...): read every call
            return None
        return cls(getter, frozenset(names) - set(present), encoded, plan)


def _frozen(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return (type(value), tuple(_frozen(item) for item in value))
    return (type(value), value)


@functools.lru_cache(maxsize=_PLANS_KEPT)
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
