"""Running compiled formulas without sympy: a formula is data (a small expression tree), and this
module writes the exact Python code for it, compiles that code and calls it.

A formula's tree is nested lists that JSON holds as they are: an ``int``, ``["arg", i]`` (the
formula's i-th argument) or ``[operation, operand, ...]`` with an operation from :data:`OPERATIONS`.
The code is written here from the tree alone, token by token: argument names never reach it
(``min``, ``lambda`` or ``_exdiv`` are fine parameter names) and a tree read from disk (the cache
of compiled models) cannot put anything into it but decimal integers. :func:`check_tree` refuses
any other shape, too deep a tree or too large a number before a line is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import Any

import attrs

from flopsreg.errors import WITHOUT_PLUGINS_HINT, PatternError

__all__ = ["MAX_TREE_DEPTH", "OPERATIONS", "Formula", "check_tree", "exdiv"]

# Operation -> (smallest, largest operand count; None: any).
OPERATIONS: dict[str, tuple[int, int | None]] = {
    "arg": (1, 1),  # the argument at an index (an int, not a tree)
    "add": (2, None),
    "mul": (2, None),
    "div": (2, 2),  # exact quotient: an int when it divides, else a Fraction
    "floordiv": (2, 2),
    "ceildiv": (2, 2),
    "mod": (2, 2),
    "pow": (2, 2),  # the exponent is an int >= 0, not a tree
    "min": (2, None),
    "max": (2, None),
    "abs": (1, 1),
    "if": (3, 3),  # condition, then, else
    "lt": (2, 2),
    "le": (2, 2),
    "gt": (2, 2),
    "ge": (2, 2),
    "eq": (2, 2),
    "ne": (2, 2),
    "and": (2, None),
    "or": (2, None),
    "not": (1, 1),
    "true": (0, 0),
    "false": (0, 0),
    "undefined": (0, 0),  # a Piecewise with no branch for these values: not an integer
}
# Python's parser allows 200 nested parentheses; each tree level writes at most two.
MAX_TREE_DEPTH = 90
MAX_TREE_NODES = 1 << 20
MAX_INT_BITS = 1 << 12  # constants of a formula: dimensions multiplied out, never this large

_INFIX = {"add": " + ", "mul": "*", "lt": " < ", "le": " <= ", "gt": " > ", "ge": " >= ", "eq": " == ", "ne": " != ",
          "and": " and ", "or": " or "}
_CALLS = {"div": "_exdiv", "min": "min", "max": "max", "abs": "abs"}
_CONSTANTS = {"true": "True", "false": "False", "undefined": "None"}


def exdiv(numerator: int | Fraction, denominator: int | Fraction) -> int | Fraction:
    """Exact quotient: an int when it divides evenly, else a Fraction."""
    if type(numerator) is int and type(denominator) is int:
        quotient, remainder = divmod(numerator, denominator)
        if not remainder:
            return quotient
    quotient = Fraction(numerator) / Fraction(denominator)
    return quotient.numerator if quotient.denominator == 1 else quotient


def check_tree(tree: Any, arguments: int) -> None:
    """Raise ValueError unless *tree* is a formula tree over *arguments* arguments, within the
    depth, size and constant bounds. Iterative: a tree of any depth is refused, never a RecursionError."""
    stack = [(tree, 1)]
    nodes = 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if depth > MAX_TREE_DEPTH or nodes > MAX_TREE_NODES:
            raise ValueError(f"formula tree deeper than {MAX_TREE_DEPTH} or larger than {MAX_TREE_NODES} nodes")
        if type(node) is int:
            if node.bit_length() > MAX_INT_BITS:
                raise ValueError(f"formula constant of {node.bit_length()} bits")
            continue
        if type(node) is not list or not node or type(node[0]) is not str or node[0] not in OPERATIONS:
            raise ValueError(f"not a formula node: {str(node)[:80]}")
        operation, operands = node[0], node[1:]
        fewest, most = OPERATIONS[operation]
        if len(operands) < fewest or (most is not None and len(operands) > most):
            raise ValueError(f"{operation} with {len(operands)} operands")
        if operation == "arg":
            if type(operands[0]) is not int or not 0 <= operands[0] < arguments:
                raise ValueError(f"argument index {operands[0]!r} of a formula with {arguments} arguments")
            continue
        if operation == "pow":
            if type(operands[1]) is not int or not 0 <= operands[1] <= 64:
                raise ValueError(f"power {operands[1]!r}: expected an integer from 0 to 64")
            operands = operands[:1]
        stack.extend((operand, depth + 1) for operand in operands)


def _code(tree: Any) -> str:
    """The Python expression of a checked *tree*: every node's code is one atom (a number, a name, a
    call or a parenthesised expression), so each tree level adds at most two parentheses and a tree
    of MAX_TREE_DEPTH stays within Python's 200 (its depth is bounded, so recursion is safe too)."""
    if type(tree) is int:
        return str(tree) if tree >= 0 else f"({tree})"
    operation, *operands = tree
    if operation == "arg":
        return f"a{operands[0]}"
    if operation in _CONSTANTS:
        return _CONSTANTS[operation]
    if operation == "pow":
        return f"({_code(operands[0])}**{operands[1]})"
    codes = [_code(operand) for operand in operands]
    if operation in _INFIX:
        return f"({_INFIX[operation].join(codes)})"
    if operation in _CALLS:
        return f"{_CALLS[operation]}({', '.join(codes)})"
    if operation == "floordiv":
        return f"({codes[0]} // {codes[1]})"
    if operation == "ceildiv":
        return f"(-(-{codes[0]} // {codes[1]}))"
    if operation == "mod":
        return f"({codes[0]} % {codes[1]})"
    if operation == "not":
        return f"(not {codes[0]})"
    condition, then, otherwise = codes  # "if"
    return f"({then} if {condition} else {otherwise})"


def _source(tree: Any, arguments: int) -> str:
    """``_formula(a0, a1, ...)`` and ``_sweep(index, values, a0, a1, ...)``: the second loops over
    *values* of argument *index* in one list comprehension (far less call overhead per value)."""
    body = _code(tree)
    args = ", ".join(f"a{i}" for i in range(arguments))
    loops = "".join(f"    if _index == {i}:\n        return [{body} for a{i} in _values]\n" for i in range(arguments))
    return f"def _formula({args}):\n    return {body}\n\ndef _sweep(_index, _values{', ' if args else ''}{args}):\n{loops}    return []\n"


@attrs.frozen
class Formula:
    """One formula as data (:attr:`tree`) and as the exact code written for it; call with a mapping
    holding a value for each of :attr:`argnames`."""

    text: str  # the formula as written, for messages
    argnames: tuple[str, ...]
    tree: Any = attrs.field(repr=False)
    source: str = attrs.field(repr=False)  # the code written for it (for reading; never stored)
    function: Callable[..., int | Fraction] = attrs.field(repr=False)
    sweep_function: Callable[..., list[int | Fraction]] = attrs.field(repr=False)

    @classmethod
    def from_tree(cls, text: str, argnames: tuple[str, ...], tree: Any, **extra: Any) -> Formula:
        """The formula of *tree*, checked (ValueError when it is no formula tree) and compiled."""
        check_tree(tree, len(argnames))
        source = _source(tree, len(argnames))
        namespace: dict[str, object] = {"_exdiv": exdiv, "__builtins__": {"min": min, "max": max, "abs": abs}}
        try:
            code = compile(source, "<flopsreg formula>", "exec")
        except (SyntaxError, RecursionError, MemoryError) as exc:  # beyond what Python compiles, even within the bounds
            raise ValueError(f"formula code does not compile: {type(exc).__name__}: {exc}") from None
        exec(code, namespace)  # noqa: S102 - written by _source from a checked tree
        return cls(text, argnames, tree, source, namespace["_formula"], namespace["_sweep"], **extra)  # type: ignore[arg-type]

    def __call__(self, values: Mapping[str, int]) -> int:
        """The exact integer value for *values* (a superset of :attr:`argnames` is fine)."""
        result = self.function(*(values[name] for name in self.argnames))
        return result if type(result) is int else self._as_int(result, values)

    def sweep(self, name: str, values: Iterable[int], fixed: Mapping[str, int]) -> list[int]:
        """Exact values for each of *values* of the symbol *name*, the others from *fixed*.

        One generated loop for all values: several times faster than calling per value.
        """
        if name not in self.argnames:  # a constant: the same value for every entry
            return [self(fixed)] * len(values := list(values))
        index = self.argnames.index(name)
        values = values if isinstance(values, (range, list, tuple)) else list(values)
        results = self.sweep_function(index, values, *(None if i == index else fixed[arg] for i, arg in enumerate(self.argnames)))
        if any(type(r) is not int for r in results):
            others = {arg: fixed[arg] for arg in self.argnames if arg != name}
            results = [self._as_int(r, {**others, name: v}) for r, v in zip(results, values)]
        return results

    def _as_int(self, value: int | Fraction | None, at: Mapping[str, int]) -> int:
        """*value* as an int: a Fraction n/1 (e.g. x**2/2 + x/2) is fine, anything else an error."""
        if isinstance(value, Fraction) and value.denominator == 1:
            return value.numerator
        if type(value) is not int:
            shown = {name: at[name] for name in self.argnames}
            raise PatternError(
                f"formula {self.text} is not an integer at {shown}: {value}; a pattern's formula is wrong "
                f"({WITHOUT_PLUGINS_HINT})"
            )
        return value
