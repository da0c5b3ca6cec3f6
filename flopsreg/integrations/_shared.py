"""What the drop-ins share: one registry per process, and one model plan per argument set.

Training loops call a drop-in every logging step with the same arguments, so the model read
from them and its compiled plan are kept, keyed by the values of every argument (or config
field) the readers may read: a repeated call costs a few attribute reads and one
compiled-function call.
"""

from __future__ import annotations

import argparse
import functools
import marshal
import math
import operator
import types
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import sympy

from flopsreg.engine.compose import ModelSelection
from flopsreg.engine.peaks import STEP_TIME, exact_number
from flopsreg.errors import ModelError, PlausibilityWarning, did_you_mean
from flopsreg.model import Model, as_int, shown
from flopsreg.readers.megatron import read_arguments
from flopsreg.registry import Registry

__all__ = [
    "attribute", "default_registry", "implausible", "keep_selection", "linear_and_quadratic", "megatron_model", "megatron_plan",
    "packed_forward", "time_problem", "whole_number",
]

_PLANS_KEPT = 64  # distinct (registry, convention, argument values): bounded, oldest dropped first
_plans: dict[tuple[Any, ...], ModelSelection] = {}
_PLAIN_NAMESPACES = (argparse.Namespace, types.SimpleNamespace)
# The last plan per (registry, convention) with the values it was read from: a repeated call
# compares one encoding of them instead of hashing every value.
_recent: dict[tuple[Any, str], _Snapshot] = {}
_MARSHAL_FORMAT = 2  # the newest format without back-references, whose bytes depend on refcounts


@functools.lru_cache(maxsize=1)
def default_registry() -> Registry:
    """The registry the drop-ins use when none is passed (built once per process)."""
    return Registry.default()


def megatron_model(args: Any, registry: Registry) -> Model:
    """The model of a Megatron-LM argument namespace, read by *registry*'s Megatron-LM readers."""
    return Model.from_megatron_args(args, registry=registry)


def hf_selection(model: Any, registry: Registry, convention: str) -> ModelSelection:
    """The kept selection of *model* (a :class:`Model`, or a Hugging Face config.json mapping,
    read by *registry*'s readers) under *convention*, as the Hugging Face drop-ins take it."""
    if isinstance(model, Mapping):
        model = Model.from_hf_config(dict(model), registry=registry)
    elif not isinstance(model, Model):
        raise ModelError(
            f"model = {type(model).__name__} {model!r:.60}: expected a flopsreg.Model or a Hugging Face config.json mapping"
        )
    return keep_selection((registry, convention, model), lambda: registry.select(model, convention=convention))


def keep_selection(key: Any, build: Callable[[], ModelSelection]) -> ModelSelection:
    """The plan kept under *key*, else ``build()``'s, kept (the oldest dropped beyond the bound).

    *key* holds the registry, the convention and every value the reader reads; None: not kept.
    """
    plan = None if key is None else _plans.get(key)
    if plan is None:
        plan = build()
        if key is not None:
            if len(_plans) >= _PLANS_KEPT:
                del _plans[next(iter(_plans))]
            _plans[key] = plan
    return plan


def megatron_plan(args: Any, registry: Registry, convention: str) -> ModelSelection:
    """The plan of *args* under *convention*, reused while the arguments the readers read keep their values."""
    if args is None:
        raise ModelError("args = None: expected Megatron-LM's argument namespace (after validate_args)")
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
        hash(key)
    except TypeError:  # a list among the values (layer patterns, windows): as typed tuples, if hashable
        key = (registry, convention, tuple(map(_frozen, values)))
        try:
            hash(key)
        except TypeError:
            key = None
    plan = keep_selection(key, lambda: registry.select(megatron_model(args, registry), convention=convention))
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


def packed_forward(plan: ModelSelection, tokens: int, squares: int, names: tuple[str, str]) -> int:
    """Forward FLOPs of sequences known by their total *tokens* and sum of *squares* only.

    *names* are the caller's names of the two statistics, for the messages. Statistics no set of
    sequences has are warned about (:class:`PlausibilityWarning`) and counted by the same
    formula, as the replaced function counts them, rounded to an int where it gives a fraction.
    """
    tokens_name, squares_name = names
    linear, quadratic = linear_and_quadratic(plan)
    forward = linear * tokens + quadratic * squares
    if not real_statistics(tokens, squares):
        implausible(
            f"{tokens_name}, {squares_name}: no set of sequences of s_i >= 1 tokens has these sums "
            "(0 <= sum s_i <= sum s_i^2 <= (sum s_i)^2, and the two of equal parity)",
            stacklevel=3,
        )
        return round(forward)
    if not forward.is_integer:
        raise ModelError(
            f"{tokens_name} = {tokens}, {squares_name} = {squares}: the FLOPs "
            f"{forward} are not an integer, so these statistics cannot come from real sequences"
        )
    return int(forward)


def real_statistics(tokens: int, squares: int) -> bool:
    """Whether some sequences of s_i >= 1 tokens have sum s_i = *tokens* and sum s_i^2 = *squares*
    (s_i <= s_i^2, the square of the sum bounds the sum of squares, and s^2 - s is even)."""
    return 0 <= tokens <= squares <= tokens**2 and (squares - tokens) % 2 == 0


def implausible(message: str, *, stacklevel: int) -> None:
    """Warn that a drop-in was given what no real run produces. *message* is fixed per case (no
    values in it), so the default filter warns once per calling line of a training loop;
    *stacklevel* counts from the caller of this function, as :func:`warnings.warn` does."""
    warnings.warn(f"{message}; returning what the replaced function returns for it", PlausibilityWarning, stacklevel=stacklevel + 1)


def time_problem(name: str, value: Any) -> str | None:
    """What no real step has about the step time *value* (negative, 0, nan, infinite, or outside
    :data:`flopsreg.engine.peaks.STEP_TIME`), or None; a value that is no number is an error naming *name*."""
    if isinstance(value, (bool, str, bytes)) or getattr(value, "shape", ()) != ():
        raise ModelError(f"{name} = {shown(value)}: expected the step time in seconds, one number")
    try:
        seconds = float(value)
    except OverflowError:  # an int beyond a float
        seconds = math.inf
    except (TypeError, ValueError):
        raise ModelError(f"{name} = {shown(value)}: expected the step time in seconds, one number") from None
    if math.isnan(seconds) or math.isinf(seconds):
        return f"{name} is nan or infinite"
    if seconds <= 0:
        return f"{name} is {'0' if seconds == 0 else 'negative'}"
    if not float(STEP_TIME.low) <= seconds <= float(STEP_TIME.high):
        return f"{name} is outside {STEP_TIME.low} to {STEP_TIME.high} seconds"
    return None


def attribute(obj: Any, path: str, name: str, hint: str = "") -> Any:
    """``obj.name``, or one line naming ``path.name`` (and the closest attribute *obj* has) when it is missing."""
    try:
        return getattr(obj, name)
    except AttributeError:
        close = did_you_mean(name, {key for key in dir(obj) if not key.startswith("_")})
        raise ModelError(f"{path}.{name}: missing{hint}{close}") from None


def whole_number(name: str, value: Any) -> int:
    """*value* as an exact int: Megatron-LM and Bridge pass batch statistics as whole-number floats.

    Their training loops all-reduce them as tensors and pass ``.item()``; ints and numpy
    integer or float scalars are accepted too, but only when whole and finite.

    >>> whole_number("total_real_tokens_in_batch", 4096.0)
    4096
    """
    integer = as_int(value)  # ints, numpy integers, 0-d integer arrays
    if integer is not None:
        return integer
    number = exact_number(value)  # floats, numpy floats, 0-d float arrays
    if number is not None and number.denominator == 1:
        return int(number)
    raise ModelError(f"{name} = {value!r}: expected a whole number (an int, or a float with no fractional part)")
