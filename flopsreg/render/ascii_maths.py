"""ASCII maths in plugins' one-line summaries (``QK^T``, ``s^2/2 pairs``, ``n_head x (n_embd //
n_head)``, ``floor((t + 1)/m)``) written as LaTeX in ``$...$`` for Markdown displays.

Summaries stay plain text for the command line; this reads them with a small recursive-descent
parser of products and operators. A span becomes maths only if it says so: a power, a function, a
subscripted symbol, an operator between symbols, or single letters side by side (``4 s h``);
words, acronyms and config names (``GLM-5``, ``TP``, ``head_dim``) stay words.
"""

from __future__ import annotations

import re

__all__ = ["maths_text"]

_TOKEN = re.compile(r"\s+|//|->|<=|>=|[A-Za-z]'(?![A-Za-z])|[A-Za-z][A-Za-z0-9_]*(?:\^(?:T|\d+))?|\d+(?:\^\d+)?|.", re.S)
_FUNCTIONS = {"min": r"\min", "max": r"\max", "floor": None, "exp": r"\exp", "sqrt": None}
_OPERATORS = {"+": "+", "-": "-", "*": r"\,", "/": "/", "x": r"\times", "=": "=", "<": "<", ">": ">", "<=": r"\le", ">=": r"\ge", "mod": r"\bmod", "//": "//"}
_CODE_TAILS = {"proj", "norm"}  # v_proj, k_norm: module names, not subscripted symbols
_NOT_TIMES = {"with", "and", "of", "the", "to", "per", "by"}  # "its product with x per chunk": x is a variable
_STRONG, _SYMBOL, _ACRONYM = "strong", "symbol", "acronym"  # kinds of factor: see _Parser.factor
_WORD = re.compile(r"[a-z]{2,}")  # an English word: two or more lowercase letters, no digit or underscore


def _identifier(token: str) -> str | None:
    """*token* as LaTeX if it reads as a maths symbol (``s``, ``d_qk``, ``QK^T``, ``2``), else None."""
    base, _, power = token.partition("^")
    if re.fullmatch(r"[A-Za-z]'", base):  # a primed symbol: m'
        return base
    if not re.fullmatch(r"[A-Za-z0-9_]+", base):
        return None
    if base.isdigit():
        latex = base
    elif "_" in base:
        head, _, tail = base.partition("_")
        if len(head) > 1 or not tail or "_" in tail or tail in _CODE_TAILS:  # a config name: head_dim, q_lora_rank, v_proj
            latex = _upright(base)
        else:  # a symbol with a subscript: d_qk, F_e
            latex = f"{head}_{{{tail if len(tail) == 1 else _upright(tail)}}}"
    elif len(base) == 1 and base not in "ax" or (base.isupper() and len(base) <= 3) or (power and len(base) <= 4):
        latex = base
    else:
        return None
    return latex + ("" if not power else "^{\\top}" if power == "T" else f"^{{{power}}}")


def _upright(name: str) -> str:
    return r"\mathrm{" + name.replace("_", r"\_") + "}"


def _kind(token: str, latex: str) -> str:
    """How much a symbol alone says it is maths: a power or a subscripted symbol (``d_qk``) does;
    a single letter or number does beside another; an acronym or config name (``TP``,
    ``head_dim``) only with an operator."""
    if "^" in token or "_{" in latex:
        return _STRONG
    if latex.startswith(r"\mathrm") or len(token) > 1 and not token.isdigit() and not token.endswith("'"):
        return _ACRONYM
    return _SYMBOL


class _Parser:
    """A small recursive-descent reader of the ASCII expressions summaries write."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens

    def _skip(self, i: int) -> int:
        return i + 1 if i < len(self.tokens) and self.tokens[i].isspace() else i

    def factor(self, i: int) -> tuple[int, str, str] | None:
        """``(next index, LaTeX, kind)`` of one factor at *i*: kind ``_STRONG`` (a power, a function,
        a bracket), ``_SYMBOL`` (a letter, number or subscripted name) or ``_ACRONYM`` (``TP``, ``CSA``)."""
        if i >= len(self.tokens):
            return None
        token = self.tokens[i]
        if token in _FUNCTIONS and i + 1 < len(self.tokens) and self.tokens[i + 1] == "(":
            args = self.arguments(i + 2)
            if args is None:
                return None
            end, parts, _ = args
            if token == "floor":
                return end, r"\left\lfloor " + ", ".join(parts) + r" \right\rfloor", _STRONG
            if token == "sqrt":
                return end, r"\sqrt{" + ", ".join(parts) + "}", _STRONG
            return end, _FUNCTIONS[token] + r"\left(" + ", ".join(parts) + r"\right)", _STRONG
        if token.startswith("sum_") and len(token) <= 6:
            body = self.product(self._skip(i + 1))
            if body is None:
                return None
            return body[0], rf"\sum_{{{token[4:]}}} {body[1]}", _STRONG
        if token == "(":
            args = self.arguments(i + 1)
            if args is None or len(args[1]) != 1:
                return None
            end, (inner,), maths = args
            if inner.startswith(r"\left\lfloor"):
                return end, inner, _STRONG
            if self.tokens[end : end + 1] == ["^"] and re.fullmatch(r"T|\d+", "".join(self.tokens[end + 1 : end + 2])):
                power = self.tokens[end + 1]  # (b k)^T
                return end + 2, r"\left(" + inner + r"\right)^{" + (r"\top" if power == "T" else power) + "}", _STRONG
            return end, r"\left(" + inner + r"\right)", _STRONG if maths else _ACRONYM  # "(gpt_oss)": words
        latex = _identifier(token)
        if token == "a" and self.tokens[i + 1 : i + 2] == ["("]:
            latex = "a"  # a coefficient applied to a bracket: a(I - b K K^T)
        if latex is None and _WORD.fullmatch(token) and "//" in (self.tokens[self._skip(i + 1)] if self._skip(i + 1) < len(self.tokens) else "", self.tokens[i - 2] if i > 1 else ""):
            latex = _upright(token)  # a config name divided: (dim // n_heads)
        if latex is None:
            return None
        return i + 1, latex, _kind(token, latex)

    def arguments(self, i: int) -> tuple[int, list[str], bool] | None:
        """``(index after the closing bracket, each argument's LaTeX, whether any is maths)``."""
        parts, maths = [], False
        while True:
            found = self.expression(self._skip(i))
            if found is None:
                return None
            i, latex, more = found
            parts.append(latex)
            maths = maths or more
            i = self._skip(i)
            if i < len(self.tokens) and self.tokens[i] == ",":
                i += 1
                continue
            if i < len(self.tokens) and self.tokens[i] == ")":
                return i + 1, parts, maths
            return None

    def product(self, i: int) -> tuple[int, str, bool] | None:
        """Factors side by side (``2 s h^2``)."""
        first = self.factor(i)
        if first is None:
            return None
        i, latex, kind = first
        pieces, maths, spaced = [latex], kind == _STRONG, kind == _SYMBOL
        while True:
            j = self._skip(i)
            touching = j < len(self.tokens) and (self.tokens[j] == "(" or self.tokens[i - 1] == ")" or self.tokens[i - 1].isdigit())
            nxt = self.factor(j) if j > i or touching else None
            if nxt is None:
                break
            spaced = spaced and nxt[2] == _SYMBOL and j > i  # "4 s h": maths; "V4 CSA", "3n": words
            i, piece, kind = nxt
            pieces.append(piece)
            maths = maths or kind == _STRONG
        return i, " ".join(pieces), maths or spaced and len(pieces) > 1

    def expression(self, i: int) -> tuple[int, str, bool] | None:
        """Products joined by operators; ``a // b`` (alone) is written as a floor."""
        first = self.product(i)
        if first is None:
            return None
        i, latex, maths = first
        operands, operators = [latex], []
        while True:
            j = self._skip(i)
            if j >= len(self.tokens) or self.tokens[j] not in _OPERATORS:
                break
            operand = self.product(self._skip(j + 1))
            if operand is None:
                break
            spaced = self.tokens[j - 1].isspace() and self.tokens[j + 1].isspace()
            operators.append(self.tokens[j])
            operands.append(operand[1])
            maths = maths or operand[2] or self.tokens[j] not in "-/" or spaced  # "0-28", "GLM-5", "k/v": words
            i = operand[0]
        if operators == ["//"]:
            return i, rf"\left\lfloor {operands[0]}/{operands[1]} \right\rfloor", True
        if "//" in operators:
            return None
        text = operands[0] + "".join(f" {_OPERATORS[op]} {operand}" for op, operand in zip(operators, operands[1:]))
        return i, text, maths


def maths_text(text: str) -> str:
    """*text* for Markdown with its ASCII maths (``QK^T``, ``s^2/2 pairs``, ``n_head x (n_embd //
    n_head)``, ``floor((t + 1)/m)``) as LaTeX in ``$...$``, and ``->`` as an arrow; words stay words."""
    tokens = _TOKEN.findall(text)
    parser, out, i = _Parser(tokens), [], 0
    while i < len(tokens):
        starts_word = i == 0 or not re.match(r"[A-Za-z0-9_.']", tokens[i - 1][-1:])
        found = parser.expression(i) if starts_word else None
        if found is not None and found[2]:
            end, latex, _ = found
            out.append(f"${latex}$")
            i = end
            continue
        times = tokens[i] == "x" and 1 < i < len(tokens) - 2 and tokens[i - 1].isspace() and tokens[i + 1].isspace()
        times = times and tokens[i - 2] not in _NOT_TIMES and tokens[i + 2] not in _NOT_TIMES
        variable = tokens[i] == "x" and not times and 0 < i < len(tokens) - 1 and tokens[i - 1].isspace() and tokens[i + 1].isspace()
        out.append("→" if tokens[i] == "->" else "×" if times else "$x$" if variable else tokens[i])
        i += 1
    return "".join(out)
