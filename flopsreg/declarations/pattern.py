"""Patterns: the declarative rules a plugin registers.

A :class:`Pattern` fills one *slot* of a layer (or of the model) where all its *flags* are set,
and declares a sympy *formula* for the quantity that slot produces. Its own parameters are
declared as :class:`Param`; everything else a formula uses comes from :mod:`flopsreg.declarations.symbols`.
The places patterns fill (:class:`Slot`), the quantities they pass each other
(:class:`Quantity`) and the blocks of extra layers a pattern may count (:class:`Block`) are
declared by plugins too, through the same kind of hook: the engine knows none of them by name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn

import attrs
import sympy
from sympy.core.parameters import evaluate as _evaluation
from sympy.core.parameters import global_parameters

from flopsreg.declarations.symbols import Symbol, block_flops, block_layers, integer_symbol
from flopsreg.errors import PatternError

__all__ = [
    "EXACT", "FLOPS", "Block", "Constraint", "Convention", "GroupSelector", "Param", "Pattern", "Quantity", "Slot", "SlotGroup",
    "canonical", "holds_weights_only",
]

_NAME = re.compile(r"[a-z][a-z0-9_]*")
_SLOT = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*")
EXACT = "exact"  # the default convention: the patterns that no convention flag selects
FLOPS = "flops"  # what a pattern produces when it counts matmuls itself, rather than a quantity
SCOPES = ("layer", "model")
CACHED_RULES = ("fixed", "difference", "rectangle")  # how a Quantity extends over a cached prefix
PER_WEIGHT_RULES = (None, "weights", "active_weights")  # what a per-weight Convention counts
_FORMULA = "a sympy expression built from flopsreg.declarations.symbols and Param.symbol (or an int)"


def canonical(expr: Any) -> Any:
    """*expr* as sympy builds it with evaluation on: every node rebuilt from its canonical arguments.

    The built-in plugins are imported with sympy's evaluation off (:func:`flopsreg.plugins.loader.builtin_plugins`:
    their formulas are then built without sympy's flattening and assumption queries, two thirds of
    their import), so a pattern's expressions are made canonical where they are first read, once per
    pattern. On an expression already built with evaluation on this returns an equal one.
    """
    if not isinstance(expr, sympy.Basic):
        return expr
    if global_parameters.evaluate:  # entering the context would clear sympy's cache
        return _rebuilt(expr, {})
    with _evaluation(True):
        return _rebuilt(expr, {})


def _rebuilt(expr: sympy.Basic, done: dict[sympy.Basic, sympy.Basic]) -> sympy.Basic:
    if not expr.args:
        return expr
    if expr not in done:
        done[expr] = expr.func(*(_rebuilt(arg, done) for arg in expr.args))
    return done[expr]


class _Canonical:
    """Reads the attrs field ``_<name>``: canonical (:func:`canonical`, once per instance) where
    sympy evaluates; as built where it does not, for a built-in module that builds on it while
    it is imported with evaluation off (its result is made canonical where it is read)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.field = name, f"_{name}"

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        built = getattr(instance, self.field)
        if not global_parameters.evaluate:
            return built
        read = instance._read
        if self.name not in read:
            read[self.name] = {k: canonical(v) for k, v in built.items()} if isinstance(built, Mapping) else canonical(built)
        return read[self.name]


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and bool(_NAME.fullmatch(value))


def _fail(instance: Any, field: str, value: Any, expected: str) -> NoReturn:
    """Raise the one-line PatternError naming the object (when its name is known), field and value."""
    kind = type(instance).__name__.lower()
    label = instance.message if isinstance(instance, Constraint) else getattr(instance, "name", None)
    known = _is_text(label) if isinstance(instance, Constraint) else _is_name(label)
    owner = f"{kind} {label!r}" if known else kind
    raise PatternError(f"{owner}: {field} = {value!r}: expected {expected}")


def _check(test: Callable[[Any], bool], expected: str) -> Callable[[Any, attrs.Attribute, Any], None]:
    """An attrs validator raising :func:`_fail` unless ``test(value)``."""

    def validate(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if not test(value):
            _fail(instance, attribute.alias, value, expected)

    return validate


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


_REFERENCE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")


def _is_reference(value: Any) -> bool:
    """A function named as an entry point names it: ``package.module:function``."""
    return isinstance(value, str) and bool(_REFERENCE.fullmatch(value))


def _expr(value: Any) -> Any:
    """Python ints become sympy Integers; anything else is left for the validator to judge."""
    return sympy.Integer(value) if _is_int(value) else value


def _is_expr(value: Any) -> bool:
    return isinstance(value, sympy.Expr)


def _expr_map(value: Any) -> Any:
    return {k: _expr(v) for k, v in value.items()} if isinstance(value, Mapping) else value


def _names(value: Any) -> Any:
    """A collection of flag names as a frozenset; a string or anything else is left to the validator."""
    if isinstance(value, str):
        return value
    try:
        return frozenset(value)
    except TypeError:
        return value


def _tuple(value: Any) -> Any:
    return value if isinstance(value, (str, Mapping)) else tuple(value) if isinstance(value, Iterable) else value


# An escaped character or line break (ignored), \left or \right, \begin{env} or \end{env}, a brace or a $.
_LATEX_TOKEN = re.compile(r"\\[\\{}$%&#_ ,;!]|\\(?:left|right)(?![A-Za-z])|\\(?:begin|end)\{[^{}]*\}|[{}$]")
_OPENER = {"}": "{", r"\right": r"\left"}


def _latex_fault(text: str) -> str | None:
    """Why *text* is not balanced math-mode LaTeX, or None: what a renderer would break on."""
    stack: list[str] = []
    for match in _LATEX_TOKEN.finditer(text):
        token = match.group()
        if token == "$":
            return f"a $ at character {match.start()}; the renderers put it in math mode"
        if token in ("{", r"\left") or token.startswith(r"\begin"):
            stack.append(token)
        elif token in _OPENER or token.startswith(r"\end"):
            opener = r"\begin" + token[len(r"\end"):] if token.startswith(r"\end") else _OPENER[token]
            if not stack or stack[-1] != opener:
                return f"unmatched {token} at character {match.start()}"
            stack.pop()
    return f"unclosed {stack[-1]}" if stack else None


@attrs.frozen(kw_only=True)
class Param:
    """A parameter a pattern needs, set on a model or layer kind (never defaulted).

    Attributes:
        name: the key in model files and ``Layer.params``, e.g. ``"window"``.
        latex: how formulas print it, e.g. ``"W"``.
        meaning: one line for legends and error messages.
        minimum: the smallest valid value (parameters are integers).
    """

    name: str = attrs.field(validator=_check(_is_name, "a lower_snake_case name"))
    latex: str = attrs.field(validator=_check(_is_text, "the LaTeX of its symbol, e.g. 'W'"))
    meaning: str = attrs.field(validator=_check(_is_text, "one line saying what it is"))
    minimum: int = attrs.field(
        default=1,
        validator=_check(lambda v: _is_int(v) and v >= 0, "an integer >= 0 (the smallest valid value)"),
    )

    @property
    def symbol(self) -> Symbol:
        """Its sympy symbol, printing as :attr:`latex`."""
        return integer_symbol(self.name, self.latex)


@attrs.frozen(kw_only=True)
class Constraint:
    """A condition on parameter values that must hold, with the message shown when it fails."""

    message: str = attrs.field(validator=_check(_is_text, "the one line shown when the condition fails"))
    _condition: sympy.Basic = attrs.field(alias="condition")
    _read: dict[str, Any] = attrs.field(init=False, factory=dict, eq=False, hash=False, repr=False)
    condition = _Canonical()  # canonical, as sympy builds it with evaluation on

    @property
    def free_symbols(self) -> set[sympy.Symbol]:
        """The symbols the condition reads."""
        return self._condition.free_symbols

    def holds(self, values: Mapping[sympy.Symbol, Any]) -> bool:
        """Whether the condition holds where each of its symbols has the number *values* gives it.

        Evaluated with the numbers in place, without building the condition's symbolic canonical
        form first (``Mod`` of two symbols asks sympy's assumptions much more than of two numbers).
        """
        return bool(canonical(self._condition.xreplace(values)))

    @_condition.validator
    def _check_condition(self, attribute: attrs.Attribute, value: Any) -> None:
        if isinstance(value, bool) or value in (sympy.true, sympy.false):
            raise PatternError(
                f"constraint {self.message!r} is always {value} for positive integers; "
                "it would never check anything"
            )
        if not isinstance(value, sympy.logic.boolalg.Boolean):
            _fail(self, "condition", value, "a sympy condition such as k <= E or sympy.Eq(sympy.Mod(n, m), 0)")


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
        produces: ``"flops"`` (summed into the layer) or a registered :class:`Quantity` such as
            ``"pairs"`` that other slots' formulas use.
        provides: further quantities, e.g. ``{"qk_dim": ..., "v_dim": ...}`` for projections.
        params: the parameters its formulas use besides the shared symbols.
        constraints: conditions on parameter values, checked before evaluation.
        scope: ``"layer"`` (once per layer) or ``"model"`` (once per model, e.g. a logits head).
        summary: one line saying what it counts.
        reference: the paper, model card or config it follows.
        latex: its formula as a paper writes it, in math-mode LaTeX (no ``$``), using the
            symbols' LaTeX names; the renderers print it instead of sympy's rendering of
            ``formula``. Checked for balanced braces, ``\\left``/``\\right`` and
            ``\\begin``/``\\end``. None: sympy's rendering, with every symbol's LaTeX name.
        weights: the parameters (weight elements) the unit it counts holds, once per layer
            (``scope="layer"``) or per model, as a closed form in the same symbols (quantities
            such as ``f`` included), as transformers' ``sum(p.numel())`` counts them, biases
            included; 0 for a rule that holds none (a mask, a quantity). What
            ``Registry.parameters`` adds up. A pattern with ``formula`` 0 and ``weights`` not 0
            (a norm, a bias, the embedding) only holds weights: it is never a FLOPs term.
        active_weights: the part of ``weights`` one token uses (routed experts at top-k);
            None: all of ``weights``. Checked at load: whole, >= 0 and at most ``weights``.
        cache: None (declares none), or the elements (numbers, before a dtype) the unit keeps
            for one sequence whose context is ``seq_len`` tokens, growing with it: a KV cache,
            e.g. ``2 * n_kv * d_h * kv_tokens`` (the ``kv_tokens`` quantity from the mask caps it
            by a window). ``Registry.memory`` multiplies it by the KV dtype's size.
        state: None (declares none), or the elements kept for one sequence whose number does not
            grow with the context (the recurrent and convolution states of linear-attention and
            SSM mixers); it may not use ``seq_len``. A token mixer whose layers keep memory
            (:attr:`SlotGroup.keeps_context`) and whose selected patterns declare neither is
            refused by name where bytes are asked for: 0 is a declaration, None is not.
        routed_weights: None, or the part of ``weights`` held in routed experts (which a
            checkpoint may store in another dtype: GPT-OSS ships them in MXFP4).
        refusal: None, or the one line a plan is refused with when this pattern wins its slot:
            how a convention says that the system it reproduces does not count such a model
            (its formula is then never used; write 0).
        no_prefix_form: None, or why a layer that selects this pattern has no cached-prefix form
            although its formula is a sum of seq_len-proportional terms: where earlier tokens'
            work changes with later tokens (bidirectional attention), new tokens after a cached
            prefix do not cost their share of a longer sequence, and ``cached=`` is refused with this.

    ``formula``, ``provides``, ``weights``, ``active_weights``, ``cache``, ``state`` and
    ``routed_weights`` read as sympy builds them with
    evaluation on (:func:`canonical`), whether or not evaluation was on where the plugin built
    them (read with evaluation off, they are as built); the values as built are kept
    (``attrs.evolve`` passes them on).
    """

    name: str = attrs.field(validator=_check(_is_name, "a lower_snake_case name"))
    slot: str = attrs.field(
        validator=_check(lambda v: isinstance(v, str) and bool(_SLOT.fullmatch(v)), "dotted lower_snake_case, e.g. 'attention.indexer'")
    )
    precedence: int = attrs.field(validator=_check(_is_int, "an integer (the highest applicable one wins its slot)"))
    _formula: sympy.Expr = attrs.field(alias="formula", converter=_expr, validator=_check(_is_expr, _FORMULA))
    summary: str = attrs.field(validator=_check(_is_text, "one line saying what it counts"))
    reference: str = attrs.field(validator=_check(_is_text, "the paper, model card or code it follows"))
    flags: frozenset[str] = attrs.field(default=(), converter=_names)
    produces: str = attrs.field(default="flops")
    _provides: Mapping[str, sympy.Expr] = attrs.field(alias="provides", factory=dict, converter=_expr_map, hash=False)
    params: tuple[Param, ...] = attrs.field(
        default=(), converter=_tuple, validator=_check(lambda v: isinstance(v, tuple) and all(isinstance(p, Param) for p in v), "a tuple of flopsreg.Param")
    )
    constraints: tuple[Constraint, ...] = attrs.field(
        default=(),
        converter=_tuple,
        validator=_check(lambda v: isinstance(v, tuple) and all(isinstance(c, Constraint) for c in v), "a tuple of flopsreg.Constraint"),
    )
    scope: str = attrs.field(default="layer", validator=_check(lambda v: v in SCOPES, "'layer' or 'model'"))
    latex: str | None = attrs.field(default=None)
    _weights: sympy.Expr = attrs.field(alias="weights", default=0, converter=_expr, validator=_check(_is_expr, _FORMULA))
    _active_weights: sympy.Expr | None = attrs.field(
        alias="active_weights", default=None, converter=_expr, validator=_check(lambda v: v is None or _is_expr(v), f"None or {_FORMULA}")
    )
    refusal: str | None = attrs.field(
        default=None, validator=_check(lambda v: v is None or _is_text(v), "None or the one line the plan is refused with")
    )
    no_prefix_form: str | None = attrs.field(
        default=None, validator=_check(lambda v: v is None or _is_text(v), "None or why the work after a cached prefix is not its share")
    )
    _cache: sympy.Expr | None = attrs.field(
        alias="cache", default=None, converter=_expr, validator=_check(lambda v: v is None or _is_expr(v), f"None or {_FORMULA}")
    )
    _state: sympy.Expr | None = attrs.field(
        alias="state", default=None, converter=_expr, validator=_check(lambda v: v is None or _is_expr(v), f"None or {_FORMULA}")
    )
    _routed_weights: sympy.Expr | None = attrs.field(
        alias="routed_weights", default=None, converter=_expr, validator=_check(lambda v: v is None or _is_expr(v), f"None or {_FORMULA}")
    )
    _read: dict[str, Any] = attrs.field(init=False, factory=dict, eq=False, hash=False, repr=False)  # canonical forms read

    @flags.validator
    def _check_flags(self, attribute: attrs.Attribute, value: Any) -> None:
        if not isinstance(value, frozenset):
            _fail(self, "flags", value, "a collection of flag names, e.g. {'my_flag'}")
        for flag in sorted(value, key=str):
            if not _is_name(flag):
                _fail(self, "flags", flag, "a lower_snake_case flag name")

    @produces.validator
    def _check_produces(self, attribute: attrs.Attribute, value: Any) -> None:
        if not _is_name(value):
            _fail(self, "produces", value, f"{FLOPS!r} or the name of a registered quantity, e.g. 'pairs'")

    @_provides.validator
    def _check_provides(self, attribute: attrs.Attribute, value: Any) -> None:
        if not isinstance(value, dict):
            _fail(self, "provides", value, "a mapping of quantity name to formula, e.g. {'qk_dim': d}")
        for quantity, expr in value.items():
            if not _is_name(quantity) or quantity == FLOPS:
                _fail(self, "provides", quantity, "the name of a registered quantity")
            if not _is_expr(expr):
                _fail(self, f"provides[{quantity!r}]", expr, _FORMULA)

    @latex.validator
    def _check_latex(self, attribute: attrs.Attribute, value: Any) -> None:
        if value is not None and not _is_text(value):
            _fail(self, "latex", value, "None or the LaTeX of its formula, as a paper writes it")
        fault = None if value is None else _latex_fault(value)
        if fault:
            _fail(self, "latex", value, f"math-mode LaTeX with balanced braces, \\left/\\right and \\begin/\\end, no $ ({fault})")

    # Each expression is stored as the plugin built it and read canonical (see _Canonical).
    formula = _Canonical()
    provides = _Canonical()
    weights = _Canonical()
    active_weights = _Canonical()
    cache = _Canonical()
    state = _Canonical()
    routed_weights = _Canonical()

    @property
    def formula_latex(self) -> str:
        """Its formula in LaTeX: its own :attr:`latex` if it gives one, else sympy's rendering."""
        return self.latex or sympy.latex(self.formula)

    def __repr__(self) -> str:
        """Short: what identifies the pattern (the attrs dump holds the whole formula)."""
        return f"Pattern(name={self.name!r}, slot={self.slot!r}, flags={sorted(self.flags)!r}, precedence={self.precedence})"

    def _repr_markdown_(self) -> str:
        """Jupyter: name, slot, flags, formula (MathJax) and source."""
        flags = ", ".join(f"`{flag}`" for flag in sorted(self.flags)) or "none (the slot's default)"
        return (
            f"**{self.name}** fills `{self.slot}` (flags: {flags}; precedence {self.precedence})\n\n"
            f"$${self.formula_latex}$$\n\n{self.summary}\n\nSource: {self.reference}"
        )

    def _repr_latex_(self) -> str:
        """Jupyter's LaTeX view: the formula alone, display math."""
        return f"$${self.formula_latex}$$"

    @property
    def quantities(self) -> dict[str, sympy.Expr]:
        """Every quantity this pattern defines: its formula under ``produces``, then ``provides``."""
        return {self.produces: self.formula, **self.provides}

    @property
    def param_names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.params)


def holds_weights_only(pattern: Pattern) -> bool:
    """A pattern that does no work but holds weights (a norm, a bias, an embedding lookup)."""
    return pattern.produces == FLOPS and pattern.formula == 0 and pattern.weights != 0


@attrs.frozen(kw_only=True)
class Convention:
    """A named way of counting that other systems use, selected by an explicit flag.

    ``evaluate(model, convention=name)`` sets the flag ``name`` everywhere; patterns that
    require it (with precedence above the exact ones) then replace the exact rules.

    ``per_weight`` is the "6N" rule of PaLM-style counts: every selected FLOPs pattern, where
    no pattern of this convention fills its slot, counts 2 FLOPs per token for each of its
    ``weights`` (all of them) or ``active_weights`` (what a token uses: routed experts at
    top-k), whatever its own formula, and a pattern holding none counts nothing; the
    convention's own patterns add the rest (its attention term). So a plugin's new pattern is
    counted that way with no convention twin.

    ``counts`` names the patterns (or whole slots) the framework has terms for: under the
    convention, a layer whose exact pattern of some slot is none of them (a plugin's new
    attention core, say) is refused by name, so no convention mixes in a term it does not have;
    ``None`` declares nothing and refuses nothing.

    ``step_bytes`` names (``"package.module:function"``) the framework's own estimate of the
    bytes a serving step reads and writes, called as ``function(registry, model, requests)`` and
    returning an object with ``read_bytes`` and ``written_bytes``; ``step_bytes_summary`` says in
    one line what that estimate assumes that exact's least traffic does not. ``compare`` shows
    them beside exact's traffic. A name, not a function: declarations stay plain data.
    """

    name: str = attrs.field(validator=_check(_is_name, "a lower_snake_case name"))
    summary: str = attrs.field(validator=_check(_is_text, "one line saying how it counts"))
    reference: str = attrs.field(validator=_check(_is_text, "the code or paper it reproduces"))
    per_weight: str | None = attrs.field(
        default=None,
        validator=_check(lambda v: v in PER_WEIGHT_RULES, "None, 'weights' or 'active_weights'"),
    )
    counts: frozenset[str] | None = attrs.field(
        default=None,
        converter=lambda v: v if v is None else _names(v),
        validator=_check(
            lambda v: v is None or (isinstance(v, frozenset) and all(_is_text(n) for n in v)),
            "None or a collection of the pattern and slot names it has terms for",
        ),
    )
    step_bytes: str | None = attrs.field(
        default=None, validator=_check(lambda v: v is None or _is_reference(v), "None or 'package.module:function'")
    )
    step_bytes_summary: str | None = attrs.field(default=None)

    @step_bytes_summary.validator
    def _summary_with_bytes(self, attribute: attrs.Attribute, value: Any) -> None:
        if (value is None) != (self.step_bytes is None) or not (value is None or _is_text(value)):
            _fail(self, attribute.alias, value, "one line of what step_bytes assumes that exact does not, given with step_bytes only")


_LAYER_OR_MODEL = "'layer' (once per layer) or 'model' (once per model)"


@attrs.frozen(kw_only=True)
class Quantity:
    """A value one slot's pattern produces for the formulas of other slots (e.g. attended pairs).

    Attributes:
        name: the name patterns produce and use it by, e.g. ``"pairs"``.
        latex: how formulas print it, e.g. ``"P"``.
        meaning: one line for legends and error messages.
        cached: how it extends over a cached prefix of ``cached`` tokens when ``seq_len`` new
            ones are processed: ``"fixed"`` (it does not depend on the sequence, e.g. head
            widths) or ``"difference"`` (the new tokens' share is F(cached + seq_len) - F(cached),
            e.g. the attended pairs of a query-local mask, whose queries see the same keys
            whether or not earlier tokens were computed in the same pass), or ``"rectangle"``
            (F is ``seq_len`` rows times the keys of a row, every row as wide as the last one: the
            new rows' share is ``seq_len x G(cached + seq_len)`` with ``G = F / seq_len``, as
            counts that bill each new token against the whole context do, e.g. vLLM's).
        replaces_seq_len: it is the positions its unit runs over for ``seq_len`` input tokens (a
            formula of ``seq_len`` and parameters, e.g. ``seq_len + prompt_length`` where a
            model prepends a prompt): the engine counts every slot of a unit that produces it
            over it in place of ``seq_len``, and such a unit has no cached-prefix form.
    """

    name: str = attrs.field(validator=_check(lambda v: _is_name(v) and v != FLOPS, "a lower_snake_case name other than 'flops'"))
    latex: str = attrs.field(validator=_check(_is_text, "the LaTeX of its symbol, e.g. 'P'"))
    meaning: str = attrs.field(validator=_check(_is_text, "one line saying what it is"))
    cached: str = attrs.field(default="fixed", validator=_check(lambda v: v in CACHED_RULES, "'fixed', 'difference' or 'rectangle'"))
    replaces_seq_len: bool = attrs.field(default=False, validator=_check(lambda v: isinstance(v, bool), "True or False"))

    @property
    def symbol(self) -> Symbol:
        """Its sympy symbol, printing as :attr:`latex`."""
        return integer_symbol(self.name, self.latex)


@attrs.frozen(kw_only=True)
class Slot:
    """A place in a layer (or the model) that exactly one pattern fills.

    Attributes:
        name: dotted lower_snake_case, e.g. ``"attention.core"``.
        scope: ``"layer"`` or ``"model"``; the patterns of the slot have the same.
        summary: one line saying what fills it.
        selective_recompute: whether selective activation recomputation repeats this slot's
            forward work in the backward pass (Korthikanti et al. 2022: the attention core).
        per_position: whether its work is done once per output position and is only needed
            at the last one when serving (a logits head): ``evaluate(..., logits="last")``
            counts it for one position per sequence.

    A layer slot whose name's first part names a declared :class:`SlotGroup` (``attention.core``:
    ``attention``) belongs to that group and exists only on layers that have it; any other slot
    (``mlp``, ``norms``, ...) exists on every layer.
    """

    name: str = attrs.field(
        validator=_check(lambda v: isinstance(v, str) and bool(_SLOT.fullmatch(v)), "dotted lower_snake_case, e.g. 'attention.indexer'")
    )
    scope: str = attrs.field(validator=_check(lambda v: v in SCOPES, _LAYER_OR_MODEL))
    summary: str = attrs.field(validator=_check(_is_text, "one line saying what fills it"))
    selective_recompute: bool = attrs.field(default=False, validator=_check(lambda v: isinstance(v, bool), "True or False"))
    per_position: bool = attrs.field(default=False, validator=_check(lambda v: isinstance(v, bool), "True or False"))


@attrs.frozen(kw_only=True)
class SlotGroup:
    """The slots of one token mixer (softmax attention, a linear-attention or SSM mixer, ...): a
    layer has all of them or none. A layer has the groups its flags select (:class:`GroupSelector`),
    else the default one; the slots of every other group do not exist on it (no pattern fills them).

    Attributes:
        name: the first part of its slots' names: group ``attention`` holds ``attention.core``,
            ``attention.mask`` and every other layer slot named ``attention.*``, a plugin's too.
        summary: one line saying what token mixer it is.
        default: the token mixer of a layer whose flags select none (softmax attention); at most
            one group is the default.
        beside: the groups it may share a layer with (Falcon-H1 runs attention beside Mamba2):
            a layer whose flags select two groups, neither naming the other here, is an error.
        keeps_context: whether its layers keep memory per sequence between steps (a KV cache, a
            recurrent state): ``Registry.memory`` then refuses a layer whose selected patterns
            of this group declare neither ``cache`` nor ``state``, rather than count 0.
    """

    name: str = attrs.field(validator=_check(_is_name, "a lower_snake_case name"))
    summary: str = attrs.field(validator=_check(_is_text, "one line saying what token mixer it is"))
    default: bool = attrs.field(default=False, validator=_check(lambda v: isinstance(v, bool), "True or False"))
    beside: frozenset[str] = attrs.field(
        default=(),
        converter=_names,
        validator=_check(lambda v: isinstance(v, frozenset) and all(map(_is_name, v)), "a set of slot group names"),
    )
    keeps_context: bool = attrs.field(default=False, validator=_check(lambda v: isinstance(v, bool), "True or False"))


@attrs.frozen(kw_only=True)
class GroupSelector:
    """A rule: a layer whose flags include all of :attr:`flags` has the token mixer :attr:`group`
    (instead of the default one), e.g. ``GroupSelector(group="mixer", flags={"mamba2"}, summary=...)``.

    Attributes:
        group: the :class:`SlotGroup` it gives the layer.
        flags: the flags that must all be set.
        summary: one line saying why such a layer has that token mixer (``compare`` shows it
            where a convention's flags take a layer's slots away).
    """

    group: str = attrs.field(validator=_check(_is_name, "the name of a SlotGroup"))
    flags: frozenset[str] = attrs.field(
        converter=_names,
        validator=_check(lambda v: isinstance(v, frozenset) and bool(v) and all(map(_is_name, v)), "a non-empty set of flag names"),
    )
    summary: str = attrs.field(validator=_check(_is_text, "one line saying why such a layer has that token mixer"))

    @property
    def name(self) -> str:
        """What identifies it among declarations: its group and flags."""
        return f"{self.group}:{'+'.join(sorted(self.flags))}"


@attrs.frozen(kw_only=True)
class Block:
    r"""A named group of extra layers outside the decoder stack, listed in a model's plan
    (``plan.blocks``, or in model files ``plan.<name> = [kinds]``) and counted by a model-level
    pattern through :attr:`flops` and :attr:`layers` (e.g. multi-token-prediction modules).

    Attributes:
        name: the plan key, e.g. ``"mtp"``.
        latex: the LaTeX of the block's name in symbols, e.g. ``r"\mathrm{mtp}"``.
        meaning: one line saying what the layers are.
        layer_flags: flags set on the block's layers (beside their kind's) when they are planned,
            so that a pattern may count a layer differently inside the block, e.g. a convention
            that leaves out the attention of MTP layers; none by default.
        unasked_flag: a model-wide flag a reader sets where the model's description declares the
            block (depth > 0) but it was not asked for, so that a convention whose framework always
            counts the block can refuse rather than undercount; none by default.
    """

    name: str = attrs.field(validator=_check(_is_name, "a lower_snake_case name"))
    latex: str = attrs.field(validator=_check(_is_text, "the LaTeX of its name, e.g. '\\mathrm{draft}'"))
    meaning: str = attrs.field(validator=_check(_is_text, "one line saying what the layers are"))
    layer_flags: frozenset[str] = attrs.field(
        default=(),
        converter=_names,
        validator=_check(lambda v: isinstance(v, frozenset) and all(map(_is_name, v)), "a set of lower_snake_case flag names"),
    )
    unasked_flag: str | None = attrs.field(default=None, validator=_check(lambda v: v is None or _is_name(v), "None or a lower_snake_case flag name"))

    @property
    def flops(self) -> Symbol:
        """FLOPs of one sequence through the block's layers, each planned like a decoder layer."""
        return block_flops(self.name, self.latex)

    @property
    def layers(self) -> Symbol:
        """How many layers the model's plan lists in the block (0 where it lists none)."""
        return block_layers(self.name, self.latex)
