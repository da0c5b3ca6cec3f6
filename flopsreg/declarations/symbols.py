"""The shared symbols: what every formula may use without declaring it, and the symbol table.

Sympy symbols with different assumptions are different symbols, so plugins take symbols from
here (``s``, ``h``, ``n_h``), from their :class:`~flopsreg.Param` and :class:`~flopsreg.Quantity`
declarations, and from :class:`~flopsreg.Block` (``block.flops``, ``block.layers``). Which
quantities, blocks and parameters exist is declared by plugins; this module names none of them.

Every flopsreg symbol is a :class:`Symbol` made by :func:`integer_symbol`: it carries its LaTeX
name, so every sympy printer (``sympy.latex``, Jupyter) prints ``s`` rather than ``seq_{len}``,
while its identity stays its name and assumptions.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import attrs
import sympy

__all__ = [
    "SHARED",
    "Symbol",
    "SymbolInfo",
    "SymbolTable",
    "block_flops",
    "block_layers",
    "cached",
    "h",
    "integer_symbol",
    "n_h",
    "s",
]


class Symbol(sympy.Symbol):
    """A sympy symbol that prints as its own LaTeX name in every sympy LaTeX printer.

    It equals, and hashes like, a plain ``sympy.Symbol`` of the same name and assumptions, so
    substitution, compilation by name, caches and ``sympy.Symbol("seq_len", integer=True,
    positive=True)`` in user code keep working; only printing differs. It is named ``Symbol``
    because sympy's hashing and canonical ordering of terms go by class name: any other name
    would reorder printed sums. Make it with :func:`integer_symbol`.
    """

    __slots__ = ("latex",)
    latex: str | None

    def __new__(cls, name: str, latex: str | None = None, **assumptions: Any) -> Symbol:
        cls._sanitize(assumptions, cls)
        symbol = sympy.Symbol.__xnew__(cls, name, **assumptions)  # uncached: the LaTeX is ours alone
        symbol.latex = latex
        return symbol

    def __getnewargs_ex__(self) -> tuple[tuple[str, str | None], dict[str, bool]]:
        """Pickle the LaTeX along with the name and assumptions."""
        return (self.name, self.latex), self._assumptions_orig

    def __eq__(self, other: object) -> bool:
        """Equal to a plain sympy Symbol with the same name and assumptions (not to a Dummy or Wild)."""
        if type(other) is sympy.Symbol or type(other) is Symbol:
            return self is other or self._hashable_content() == other._hashable_content()
        return super().__eq__(other)

    __hash__ = sympy.Symbol.__hash__  # by class name "Symbol", name and assumptions: as sympy's

    def _eval_subs(self, old: Any, new: Any) -> Any:
        """``subs`` of an equal plain Symbol replaces this one (sympy's own test also compares classes)."""
        return new if self == old else super()._eval_subs(old, new)

    def _latex(self, printer: Any, **kwargs: Any) -> str:
        """Its LaTeX name, unless the caller's ``symbol_names`` says otherwise."""
        name = printer._settings.get("symbol_names", {}).get(self)
        if name is None and self.latex is None:
            return printer._print_Symbol(self, **kwargs)
        return name if name is not None else self.latex


@functools.lru_cache(maxsize=None)
def integer_symbol(name: str, latex: str | None = None, *, zero: bool = False) -> Symbol:
    """The sympy symbol flopsreg uses for *name*: a positive integer (nonnegative with *zero*)
    that prints as *latex* (default: sympy's rendering of the name); every flopsreg symbol is
    made here."""
    if zero:
        return Symbol(name, latex, integer=True, nonnegative=True)
    return Symbol(name, latex, integer=True, positive=True)


def block_flops(block: str, latex: str) -> Symbol:
    """FLOPs of one sequence through the layers a model's plan lists in *block* (0 if none);
    *latex* is the block's name in LaTeX."""
    return integer_symbol(f"{block}_block", rf"F_{{{latex}}}", zero=True)


def block_layers(block: str, latex: str) -> Symbol:
    """How many layers a model's plan lists in *block* (0 if none); *latex* is the block's name in LaTeX."""
    return integer_symbol(f"{block}_layers", rf"D_{{{latex}}}", zero=True)


@attrs.frozen(kw_only=True)
class SymbolInfo:
    """A named symbol with its LaTeX form and meaning.

    ``kind`` says where its value comes from: ``"sequence"`` (the engine, per sequence),
    ``"dimension"`` (a parameter the model sets), ``"structure"`` (counted from the model's
    plan), or ``"quantity"`` (produced by the pattern that fills another slot of the same layer).
    """

    name: str
    latex: str
    meaning: str
    kind: str = attrs.field(validator=attrs.validators.in_({"sequence", "dimension", "structure", "quantity"}))
    minimum: int = 1  # 0 for counts that may be empty (structure, the cached prefix)

    @property
    def symbol(self) -> Symbol:
        return integer_symbol(self.name, self.latex, zero=self.kind == "structure" or self.minimum == 0)


class SymbolTable(Mapping[str, SymbolInfo]):
    """Every symbol a registry's formulas use, by name: what renderers are given to print them."""

    def __init__(self, infos: Iterable[SymbolInfo]) -> None:
        self._infos = {info.name: info for info in infos}

    def __getitem__(self, name: str) -> SymbolInfo:
        return self._infos[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._infos)

    def __len__(self) -> int:
        return len(self._infos)

    def latex_names(self) -> dict[sympy.Symbol, str]:
        """``{symbol: LaTeX}`` for ``sympy.latex(expr, symbol_names=...)``."""
        return {info.symbol: info.latex for info in self._infos.values()}


SHARED: dict[str, SymbolInfo] = {
    info.name: info
    for info in (
        SymbolInfo(name="seq_len", latex="s", meaning="tokens in one sequence; after a cached prefix, the new ones", kind="sequence"),
        SymbolInfo(
            name="cached", latex="c", meaning="tokens already in the KV cache before the new ones", kind="sequence", minimum=0
        ),
        SymbolInfo(name="hidden", latex="h", meaning="hidden size (model width)", kind="dimension"),
        SymbolInfo(name="heads", latex=r"n_{\mathrm{h}}", meaning="query heads", kind="dimension"),
    )
}

s = SHARED["seq_len"].symbol
h = SHARED["hidden"].symbol
n_h = SHARED["heads"].symbol
cached = SHARED["cached"].symbol
