"""The shared symbols: what every formula may use without declaring it, and the symbol table.

Sympy symbols with different assumptions are different symbols, so plugins take symbols from
here (``s``, ``h``, ``n_h``), from their :class:`~flopsreg.Param` and :class:`~flopsreg.Quantity`
declarations, and from :class:`~flopsreg.Block` (``block.flops``, ``block.layers``). Which
quantities, blocks and parameters exist is declared by plugins; this module names none of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

import attrs
import sympy

__all__ = [
    "SHARED",
    "SymbolInfo",
    "SymbolTable",
    "block_flops",
    "block_layers",
    "h",
    "integer_symbol",
    "n_h",
    "s",
]


def integer_symbol(name: str) -> sympy.Symbol:
    """The sympy symbol flopsreg uses for *name*: a positive integer."""
    return sympy.Symbol(name, integer=True, positive=True)


def block_flops(block: str) -> sympy.Symbol:
    """FLOPs of one sequence through the layers a model's plan lists in *block* (0 if none)."""
    return sympy.Symbol(f"{block}_block", integer=True, nonnegative=True)


def block_layers(block: str) -> sympy.Symbol:
    """How many layers a model's plan lists in *block* (0 if none)."""
    return sympy.Symbol(f"{block}_layers", integer=True, nonnegative=True)


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

    @property
    def symbol(self) -> sympy.Symbol:
        if self.kind == "structure":  # counted from the plan, so it may be 0
            return sympy.Symbol(self.name, integer=True, nonnegative=True)
        return integer_symbol(self.name)


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
        SymbolInfo(name="seq_len", latex="s", meaning="tokens in one sequence", kind="sequence"),
        SymbolInfo(name="hidden", latex="h", meaning="hidden size (model width)", kind="dimension"),
        SymbolInfo(name="heads", latex=r"n_{\mathrm{h}}", meaning="query heads", kind="dimension"),
    )
}

s = SHARED["seq_len"].symbol
h = SHARED["hidden"].symbol
n_h = SHARED["heads"].symbol
