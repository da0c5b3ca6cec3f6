"""The one symbol table: every sympy symbol a formula may use without declaring it.

Sympy symbols with different assumptions are different symbols, so plugins import the shared
symbols from here and get their own parameters' symbols from :class:`flopsreg.Param`. Each
entry carries its LaTeX name and meaning, which the renderers use for legends.
"""

from __future__ import annotations

import attrs
import sympy

__all__ = [
    "SHARED",
    "SymbolInfo",
    "d_qk",
    "d_v",
    "f",
    "h",
    "integer_symbol",
    "n_h",
    "pairs",
    "mtp_block",
    "mtp_layers",
    "s",
]


def integer_symbol(name: str) -> sympy.Symbol:
    """The sympy symbol flopsreg uses for *name*: a positive integer."""
    return sympy.Symbol(name, integer=True, positive=True)


@attrs.frozen(kw_only=True)
class SymbolInfo:
    """A named symbol with its LaTeX form and meaning.

    ``kind`` says where its value comes from: ``"sequence"`` (the engine, per sequence),
    ``"dimension"`` (a parameter every model sets), ``"structure"`` (counted from the model's
    plan), or ``"quantity"`` (produced by the pattern that fills another slot of the same layer).
    """

    name: str
    latex: str
    meaning: str
    kind: str = attrs.field(
        validator=attrs.validators.in_({"sequence", "dimension", "structure", "quantity"})
    )

    @property
    def symbol(self) -> sympy.Symbol:
        if self.kind == "structure":  # counted from the plan, so it may be 0
            return sympy.Symbol(self.name, integer=True, nonnegative=True)
        return integer_symbol(self.name)


SHARED: dict[str, SymbolInfo] = {
    info.name: info
    for info in (
        SymbolInfo(name="seq_len", latex="s", meaning="tokens in one sequence", kind="sequence"),
        SymbolInfo(name="hidden", latex="h", meaning="hidden size (model width)", kind="dimension"),
        SymbolInfo(name="heads", latex=r"n_{\mathrm{h}}", meaning="query heads", kind="dimension"),
        SymbolInfo(
            name="pairs",
            latex="P",
            meaning="attended (query, key) pairs of one sequence, from the attention.mask slot",
            kind="quantity",
        ),
        SymbolInfo(
            name="qk_dim",
            latex=r"d_{qk}",
            meaning="per-head query/key width of the attention core, from attention.projection",
            kind="quantity",
        ),
        SymbolInfo(
            name="mtp_layers",
            latex=r"D_{\mathrm{mtp}}",
            meaning="multi-token-prediction depths: the layers listed in the plan's mtp entry",
            kind="structure",
        ),
        SymbolInfo(
            name="mtp_block",
            latex=r"F_{\mathrm{mtp\,layers}}",
            meaning="FLOPs of the decoder layers inside the MTP modules (the kinds in plan.mtp)",
            kind="structure",
        ),
        SymbolInfo(
            name="ffn_matrices",
            latex="f",
            meaning="hidden-width matmuls per feed-forward network: 2, or 3 when gated (SwiGLU, GeGLU)",
            kind="quantity",
        ),
        SymbolInfo(
            name="v_dim",
            latex=r"d_{v}",
            meaning="per-head value width of the attention core, from attention.projection",
            kind="quantity",
        ),
    )
}

s = SHARED["seq_len"].symbol
h = SHARED["hidden"].symbol
n_h = SHARED["heads"].symbol
pairs = SHARED["pairs"].symbol
d_qk = SHARED["qk_dim"].symbol
d_v = SHARED["v_dim"].symbol
f = SHARED["ffn_matrices"].symbol
mtp_layers = SHARED["mtp_layers"].symbol
mtp_block = SHARED["mtp_block"].symbol
