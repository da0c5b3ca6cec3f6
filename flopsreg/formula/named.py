"""Formula trees by name, without sympy: what composition from the manifest works on.

A named tree is a formula tree (:mod:`flopsreg.formula.tree`) in which ``["sym", name]`` stands
for a symbol instead of ``["arg", index]``: trees of different formulas can then be substituted
into one another, as composition substitutes quantities into formulas and values into symbols.
:func:`formula` turns one back into a :class:`~flopsreg.formula.tree.Formula` over its symbols.
Substitution is exact: nothing is simplified, so a tree evaluates to what the sympy expression
it was written from evaluates to wherever its symbols have the same values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flopsreg.formula.tree import Formula

__all__ = ["formula", "named", "replaced", "sum_of", "symbols", "substitute"]


def named(argnames: Sequence[str], tree: Any) -> Any:
    """*tree* (over arguments *argnames*) with each argument written as its name."""
    if type(tree) is int:
        return tree
    if tree[0] == "arg":
        return ["sym", argnames[tree[1]]]
    if tree[0] == "pow":
        return ["pow", named(argnames, tree[1]), tree[2]]
    return [tree[0], *(named(argnames, operand) for operand in tree[1:])]


def symbols(tree: Any) -> set[str]:
    """The names *tree* reads."""
    found: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if type(node) is int:
            continue
        if node[0] == "sym":
            found.add(node[1])
        elif node[0] == "pow":
            stack.append(node[1])
        else:
            stack.extend(node[1:])
    return found


def substitute(tree: Any, values: Mapping[str, Any]) -> Any:
    """*tree* with each name that *values* gives a tree (or an int) for replaced by it, again
    within what is put in (a quantity defined by other quantities), as often as names remain."""

    def walk(node: Any, depth: int) -> Any:
        if type(node) is int:
            return node
        if node[0] == "sym":
            if node[1] not in values:
                return node
            if depth > len(values):
                raise ValueError(f"quantity {node[1]!r} is defined by itself")
            return walk(values[node[1]], depth + 1)
        if node[0] == "pow":
            return ["pow", walk(node[1], depth), node[2]]
        return [node[0], *(walk(operand, depth) for operand in node[1:])]

    return walk(tree, 0)


def replaced(tree: Any, name: str, by: Any) -> Any:
    """*tree* with each ``["sym", name]`` replaced by *by* once (*by* may read *name* itself, as
    the positions a layer runs over read seq_len: its own symbols are left as they are)."""
    if type(tree) is int:
        return tree
    if tree[0] == "sym":
        return by if tree[1] == name else tree
    if tree[0] == "pow":
        return ["pow", replaced(tree[1], name, by), tree[2]]
    return [tree[0], *(replaced(operand, name, by) for operand in tree[1:])]


def sum_of(trees: Sequence[Any]) -> Any:
    """The tree of the sum of *trees* (0 for none; one tree as it is)."""
    if not trees:
        return 0
    return trees[0] if len(trees) == 1 else ["add", *trees]


def _indexed(tree: Any, index: Mapping[str, int]) -> Any:
    if type(tree) is int:
        return tree
    if tree[0] == "sym":
        return ["arg", index[tree[1]]]
    if tree[0] == "pow":
        return ["pow", _indexed(tree[1], index), tree[2]]
    return [tree[0], *(_indexed(operand, index) for operand in tree[1:])]


def formula(text: str, tree: Any) -> Formula:
    """The compiled :class:`Formula` of named *tree*, its arguments its names in sorted order (as
    :func:`flopsreg.formula.exact.compile_exact` orders a sympy expression's symbols); *text*
    names it in messages. ValueError where the tree is beyond what a formula may be."""
    argnames = tuple(sorted(symbols(tree)))
    return Formula.from_tree(text, argnames, _indexed(tree, {name: i for i, name in enumerate(argnames)}))
