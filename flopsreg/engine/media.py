"""The media a request carries (images, videos, audio clips): each image planned by the model's
vision tower (its family's resizing and token-count rule), the tower's exact forward FLOPs for them
(its kind's closed forms, compiled once and summed over the images' grids), and the tokens they add
to each sequence of the language model (placed before the text, as chat templates place them).
Audio clips go the same way through the tower whose rule takes audio (given in seconds, exactly),
and videos through the tower's video rule (each given as frames x height x width), after the images."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import attrs

from flopsreg._deprecated import old_names
from flopsreg.declarations.pattern import EXACT
from flopsreg.declarations.towers import CROSS_ATTENTION, IMAGE_GRID, MediaPlan, MediaRule, TowerKind, where_symbol
from flopsreg.errors import FlopsregError, did_you_mean
from flopsreg.formula.exact import CompiledFormula, compile_exact

if TYPE_CHECKING:
    from flopsreg.declarations.readers import HFReader
    from flopsreg.model import Model

__all__ = [
    "Media", "as_runs", "bidirectional_pairs", "clip_samples", "closed_form_lines", "closed_form_rows", "grid_words", "plan_media",
    "sequence_flops", "sequence_form_lines", "sequence_form_rows", "tower_flops", "tower_kinds",
]


@attrs.frozen
class _Medium:
    """How a request's entries of one medium (MediaRule.takes) are named in its one-line errors."""

    whole: str  # the argument giving each entry whole ("images") and by its tokens ("image_tokens")
    by_tokens: str
    one: str  # one entry ("image", "audio clip"), several ("images", "audio")
    many: str
    given_as: str  # how each is given whole, and what its plan needs
    shape: str
    tower: str  # the tower that takes them


_MEDIA = {
    "image": _Medium("images", "image_tokens", "image", "images", "image in pixels", "height and width (give images=)", "vision"),
    "video": _Medium("videos", "video_tokens", "video", "videos", "video in frames and pixels",
                      "frames, height and width (give videos=)", "vision"),
    "audio": _Medium("audio", "audio_tokens", "audio clip", "audio", "audio clip in seconds", "length in seconds (give audio=)", "audio"),
}


def tower_kinds(model: Model, hf_readers: Mapping[str, HFReader]) -> dict[str, TowerKind]:
    """``{part: TowerKind}`` of *model*'s towers, the kinds its Hugging Face reader declares."""
    kinds = {}
    for flag in sorted(model.flags):
        if flag.startswith("hf_") and flag[3:] in hf_readers:
            reader = hf_readers[flag[3:]]
            inner = hf_readers[reader.inner[1]].towers if reader.inner else ()  # a wrapper around another: its towers too
            kinds.update({t.kind.name: t.kind for t in (*reader.towers, *inner)})
    return {part: kinds[tower.kind] for part, tower in model.towers.items() if tower.kind in kinds}


# Each kind's closed forms compiled to exact code, keyed by its forms (a kind holds mappings: it has
# no hash of its own); the handful of kinds a process meets each compile once.
_GRID_NAMES = tuple(symbol.name for symbol in IMAGE_GRID)
_CROSS_NAMES = tuple(symbol.name for symbol in CROSS_ATTENTION)
_COMPILED: dict[tuple[tuple[tuple[str, Any], ...], ...], tuple[tuple[str, CompiledFormula], ...]] = {}


def _compiled(kind: TowerKind) -> tuple[tuple[str, CompiledFormula], ...]:
    """``(piece, compiled closed form)`` of *kind*, its named parts written out: compiled on first use."""
    key = (tuple(kind.flops.items()), tuple(kind.flops_where.items()))
    if key not in _COMPILED:
        _COMPILED[key] = tuple((piece, compile_exact(form)) for piece, form in kind.closed_forms().items())
    return _COMPILED[key]


def _compiled_sequence(kind: TowerKind) -> tuple[tuple[str, CompiledFormula], ...]:
    """``(piece, compiled form)`` of *kind*'s :attr:`TowerKind.sequence_flops`: compiled on first use."""
    key = (tuple(kind.sequence_flops.items()),)
    if key not in _COMPILED:
        _COMPILED[key] = tuple((piece, compile_exact(form)) for piece, form in kind.sequence_flops.items())
    return _COMPILED[key]


def sequence_flops(kind: TowerKind, dims: Mapping[str, int], positions: int, keys: int, pairs: int) -> dict[str, int]:
    """``{piece: FLOPs}`` of *kind*'s :attr:`TowerKind.sequence_flops` (Mllama's cross-attention
    layers) for one sequence of *positions* language-model positions, *keys* vision tokens and
    *pairs* allowed (position, vision token) pairs: exact integers from code compiled once."""
    values = {**dims, **dict(zip(_CROSS_NAMES, (positions, keys, pairs), strict=True))}
    return {piece: form(values) for piece, form in _compiled_sequence(kind)}


def tower_flops(kind: TowerKind, dims: Mapping[str, int], grids: Sequence[tuple[int, ...]]) -> dict[str, int]:
    """``{piece: FLOPs}`` of *kind*'s closed forms (:attr:`TowerKind.flops`) for images of these
    patch *grids* (``(t, rows, columns)`` each) and the tower's *dims*, summed over the images:
    exact integers, from code compiled once per kind (floor, Mod and Min in integer arithmetic)."""
    values = [{**dims, **dict(zip(_GRID_NAMES, grid, strict=True))} for grid in grids]
    flops = {}
    for piece, form in _compiled(kind):
        try:
            total = sum(form(at) for at in values)
        except ArithmeticError as exc:  # a dim that makes a divisor 0 (a window narrower than a merged token)
            raise FlopsregError(f"{kind.title}: {piece} cannot be evaluated for the dims {dict(dims)}: {exc}") from None
        if total < 0:
            raise FlopsregError(f"{kind.title}: {piece} comes to {total} FLOPs, expected a whole number >= 0")
        flops[piece] = total
    return flops


def closed_form_rows(kind: TowerKind, dims: Mapping[str, int]) -> list[tuple[str, str, Any]]:
    """``(role, name, expr)`` of the tower kind's FLOPs for one image of ``t x rows x columns``
    patches: the named parts (role ``where``), each piece (``piece``), their sum with *dims*
    substituted (``total``) and the named parts with *dims* substituted (``where``)."""
    values = {dim.symbol: dims[dim.name] for dim in kind.dims}
    rows = [("where", name, expr) for name, expr in kind.flops_where.items()]
    rows += [("piece", piece, expr) for piece, expr in kind.flops.items()]
    rows.append(("total", "", sum(kind.flops.values()).subs(values)))
    for name, expr in kind.flops_where.items():  # each named part written out in the dims' values
        values[where_symbol(name)] = expr.subs(values)
        rows.append(("where", name, values[where_symbol(name)]))
    return rows


def grid_words(kind: TowerKind) -> str:
    """What one grid ``(t, rows, columns)`` of *kind*'s closed forms is, for output."""
    if kind.images is not None and kind.images.takes == "audio":
        what, rows, columns = kind.images.axes
        return f"one audio clip's {what} of rows real {rows} x columns {columns} (t = 1; the clips of a sequence sum it)"
    return f"one image of {' x '.join(map(str, IMAGE_GRID))} patches (the images of a sequence sum it)"


def closed_form_lines(part: str, kind: TowerKind, dims: Mapping[str, int]) -> list[str]:
    """The tower kind's FLOPs in closed form, one line a piece, then their sum with *dims*
    substituted: one image of ``t x rows x columns`` patches (a request's images sum it)."""
    grid = ", ".join(map(str, IMAGE_GRID))
    lines = [f"{part} tower ({kind.title}): forward FLOPs of {grid_words(kind)}"]
    for role, name, expr in closed_form_rows(kind, dims):
        lines.append(f"  F_{part}({grid}) = {expr}" if role == "total" else f"  {name} = {expr}")
    return lines


SEQUENCE_FORMS = ("forward FLOPs of one sequence with images, run only then: length = its positions, "
                  "keys = the images' vision tokens, pairs = the (position, vision token) pairs the mask allows")


def sequence_form_rows(kind: TowerKind, dims: Mapping[str, int]) -> list[tuple[str, str, Any]]:
    """``(role, name, expr)`` of a cross-attention tower's FLOPs for one sequence: each piece
    (``piece``), then their sum with *dims* substituted (``total``)."""
    values = {dim.symbol: dims[dim.name] for dim in kind.dims}
    rows = [("piece", piece, expr) for piece, expr in kind.sequence_flops.items()]
    return [*rows, ("total", "", sum(kind.sequence_flops.values()).subs(values))]


def sequence_form_lines(part: str, kind: TowerKind, dims: Mapping[str, int]) -> list[str]:
    """A cross-attention tower's FLOPs for one sequence in closed form, one line a piece, then their
    sum with *dims* substituted, over its length, keys and allowed pairs."""
    over = ", ".join(map(str, CROSS_ATTENTION))
    return [f"{part} tower ({kind.title}): {SEQUENCE_FORMS}"] + [
        f"  F_{part}({over}) = {expr}" if role == "total" else f"  {name} = {expr}" for role, name, expr in sequence_form_rows(kind, dims)
    ]


@attrs.frozen
class Media:
    """The images (or videos, or audio clips) of every sequence of a batch, and what the tower
    that encodes them spends on them.

    Attributes:
        part, title: the tower that encodes them (``"vision"``, ``"Qwen3-VL ViT"``).
        plans: each image, as the processor turns it into tokens, in the order given.
        flops: the tower's forward FLOPs per piece for the images of one sequence.
        rule: the tower kind's rule for this medium, image, video or audio (for ``explain``).
        bidirectional: the language model's FLOPs for the pairs its mask adds within each image's
            tokens beyond causal and sliding (Gemma 3's soft tokens), per sequence; 0 where the
            image tokens are causal like text.
        kind, dims: the tower kind and the dims it was read with, for the closed forms in
            ``explain`` (None where the images were counted under a convention).
        cross: where the language model cross-attends to the images (Mllama), the tower holding
            those layers: ``(part, kind, dims)``; None where it takes image tokens only.
        keys: with ``cross``, the vision tokens of each image the cross-attention layers attend to.
        cross_flops: the cross-attention layers' FLOPs per piece over the sequences of one batch
            row, once each sequence's step is placed (:func:`flopsreg.engine.placement.place`).
        options: the processor options the request set (``processor=``, :attr:`MediaRule.options`),
            the others at their defaults; empty where none was given.
    """

    part: str
    title: str
    plans: tuple[MediaPlan, ...]
    flops: Mapping[str, int]
    rule: MediaRule = attrs.field(eq=False, repr=False)
    bidirectional: int = 0
    kind: TowerKind | None = attrs.field(default=None, eq=False, repr=False)
    dims: Mapping[str, int] = attrs.field(factory=dict, eq=False, repr=False)
    cross: tuple[str, TowerKind, Mapping[str, int]] | None = attrs.field(default=None, eq=False, repr=False)
    keys: tuple[int, ...] = ()
    # the cross-attention layers' FLOPs per piece over the sequences of one batch row (set by the registry)
    cross_flops: Mapping[str, int] = attrs.field(factory=dict)
    # where each image lies: the text tokens before it (empty: every image before the text)
    positions: tuple[int, ...] = ()
    # the tower's FLOPs per piece for some of the plans, and the language model's FLOPs for the
    # pairs its mask adds within their tokens (a bidirectional rule's): what :meth:`subset` counts again
    encode: Callable[[Sequence[MediaPlan]], Mapping[str, int]] | None = attrs.field(default=None, eq=False, repr=False)
    lm_pairs: Callable[[Sequence[MediaPlan]], int] = attrs.field(default=lambda plans: 0, eq=False, repr=False)
    # the same for some runs of tokens (a video's frames after a cached prefix that ends between them)
    run_pairs: Callable[[Sequence[int]], int] = attrs.field(default=lambda runs: 0, eq=False, repr=False)
    options: Mapping[str, int | bool] = attrs.field(factory=dict)

    def subset(self, indices: Sequence[int]) -> Media:
        """These images' *indices* alone (those a step encodes after a cached prefix), with the
        tower and the bidirectional pairs counted for them."""
        plans = [self.plans[i] for i in indices]
        assert self.encode is not None, "a planned Media knows how to count a subset"
        return attrs.evolve(self, plans=tuple(plans), flops=self.encode(plans), bidirectional=self.lm_pairs(plans),
                            positions=tuple(self.positions[i] for i in indices) if self.positions else ())

    @property
    def tokens(self) -> int:
        """Tokens the images add to each sequence of the language model (wrapper tokens included)."""
        return sum(plan.tokens for plan in self.plans)

    @property
    def tower(self) -> int:
        """The tower's forward FLOPs for the images of one sequence."""
        return sum(self.flops.values())

    @property
    def forward(self) -> int:
        """What the images add to one sequence's forward beside the language model over their
        tokens: the tower, and the language model's bidirectional pairs within each image (the
        cross-attention layers, which depend on each sequence's length, are ``cross_flops``)."""
        return self.tower + self.bidirectional

    def text(self, *, rules: bool = False) -> list[str]:
        """Lines for output: the tower's resizing rule, each image, the FLOPs per piece (and with
        *rules*, what each piece costs and the kind's closed forms)."""
        audio = self.rule.takes == "audio"
        lines = [f"{_MEDIA[self.rule.takes].many} through the {self.part} tower ({self.title}): {self.rule.summary}"]
        if self.options:
            lines.append("  processor options: " + ", ".join(f"{name}={_option_text(value)}" for name, value in self.options.items())
                         + " (the rest at their defaults)")
        for number, plan in enumerate(self.plans, 1):
            if audio:
                seconds = Fraction(plan.samples, self.rule.sampling_rate)
                given = (f"{_decimal(seconds)} s = {plan.samples} samples at {self.rule.sampling_rate} Hz, "
                         f"{plan.grid[1]} {self.rule.axes[1]} x {plan.grid[2]} {self.rule.axes[2]}" if plan.samples else
                         f"given by its audio tokens: {plan.grid[1]} {self.rule.axes[1]} x {plan.grid[2]} {self.rule.axes[2]}")
                if plan.grids:
                    given += f", run as {len(plan.grids)} chunks of {' + '.join(str(clip[1]) for clip in plan.grids)} {self.rule.axes[1]}"
                lines.append(f"  clip {number}: {given}, {plan.tokens} tokens")
                continue
            if plan.frames:
                grid = "x".join(map(str, plan.grid))
                given = (f"{plan.frames} frames of {plan.height}x{plan.width} -> {plan.resized[0]}x{plan.resized[1]}, "
                         f"patch grid {grid} (t x h x w)")
                if plan.grids:
                    given += f", encoded as {len(plan.grids)} clips of {' + '.join(str(clip[0]) for clip in plan.grids)} frames"
                lines.append(f"  video {number}: {given}, {plan.tokens} tokens")
                continue
            if plan.height:
                grid = "x".join(map(str, plan.grid))
                given = f"{plan.height}x{plan.width} -> {plan.resized[0]}x{plan.resized[1]}, patch grid {grid} (t x h x w)"
            else:
                given = f"given by its image tokens: {_product(plan.grid)} patches"
            where = f", after {self.positions[number - 1]} text tokens" if self.positions else ""
            lines.append(f"  image {number}: {given}, {plan.tokens} tokens{where}")
        lines += [f"  {piece}: {flops:,} FLOPs per sequence" for piece, flops in self.flops.items()]
        lines.append(f"  tower: {self.tower:,} FLOPs per sequence; {self.tokens} {self.rule.takes} tokens per sequence")
        if self.bidirectional:
            lines.append(f"  language model, bidirectional pairs within each image: {self.bidirectional:,} FLOPs per sequence")
        if self.cross is not None:
            lines.append(f"  {self.cross[1].title} ({self.cross[0]}): vision tokens each image gives as keys: {', '.join(map(str, self.keys))}")
            lines += [f"  {self.cross[0]}.{piece}: {flops:,} FLOPs per batch row" for piece, flops in self.cross_flops.items()]
        if not rules:
            return lines
        lines += [f"  rule: {rule}" for rule in self.rule.rules]
        if self.kind is not None and self.kind.flops:
            lines += ["  " + line for line in closed_form_lines(self.part, self.kind, self.dims)]
        if self.cross is not None:
            lines += ["  " + line for line in sequence_form_lines(*self.cross)]
        return lines

    def to_dict(self) -> dict[str, Any]:
        if self.rule.takes == "audio":
            return {
                "tower": self.part,
                "title": self.title,
                "clips": [{"samples": p.samples, "seconds": _decimal(Fraction(p.samples, self.rule.sampling_rate)),
                           "grid": list(p.grid), "tokens": p.tokens} for p in self.plans],
                "tokens_per_sequence": self.tokens,
                "tower_flops_per_sequence": {piece: str(flops) for piece, flops in self.flops.items()},
            }
        return {
            "tower": self.part,
            "title": self.title,
            "images": [
                {**({"frames": p.frames} if p.frames else {}), "height": p.height, "width": p.width, "resized": list(p.resized),
                 "grid": list(p.grid), **({"clips": [list(clip) for clip in p.grids]} if p.grids else {}), "tokens": p.tokens, **({"text_tokens_before": self.positions[i]} if self.positions else {})}
                for i, p in enumerate(self.plans)
            ],
            **({"processor": dict(self.options)} if self.options else {}),
            "tokens_per_sequence": self.tokens,
            "tower_flops_per_sequence": {piece: str(flops) for piece, flops in self.flops.items()},
            **({"bidirectional_flops_per_sequence": str(self.bidirectional)} if self.bidirectional else {}),
            **({"cross_attention": {"tower": self.cross[0], "keys": list(self.keys),
                                    "flops_per_batch_row": {piece: str(flops) for piece, flops in self.cross_flops.items()}}}
               if self.cross is not None else {}),
        }


def _option_text(value: int | bool) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _processor_options(rule: MediaRule, title: str, processor: Mapping[str, Any] | None) -> dict[str, int | bool]:
    """The *processor* options a request gives *rule* (its :attr:`MediaRule.options`), checked:
    each a name the rule takes, an int default given an integer >= 1, a bool default a bool."""
    if processor is None:
        return {}
    if not isinstance(processor, Mapping):
        raise FlopsregError(f"processor = {processor!r:.60}: expected a mapping of the processor's options, e.g. {{'max_pixels': 1003520}}")
    taken = ", ".join(rule.options) or "none"
    options: dict[str, int | bool] = {}
    for name, value in processor.items():
        if name not in rule.options:
            raise FlopsregError(f"processor: {name!r} is not an option of {title}'s processor (it takes {taken})"
                                + did_you_mean(str(name), rule.options))
        default = rule.options[name]  # a str default names the dim it defaults to: an integer too
        if isinstance(default, bool) and not isinstance(value, bool):
            raise FlopsregError(f"processor: {name} = {value!r:.60}: expected true or false")
        if not isinstance(default, bool) and (type(value) is not int or value < 1):
            raise FlopsregError(f"processor: {name} = {value!r:.60}: expected an integer >= 1")
        options[name] = value
    return options


def _product(numbers: Sequence[int]) -> int:
    total = 1
    for number in numbers:
        total *= number
    return total


def _size(entry: Any, index: int) -> tuple[int, int]:
    if (not isinstance(entry, Sequence) or isinstance(entry, str) or len(entry) != 2
            or not all(type(v) is int and v >= 1 for v in entry)):
        raise FlopsregError(f"images[{index}] = {entry!r:.60}: expected (height, width), two integers >= 1 (pixels)")
    return entry[0], entry[1]


def _decimal(value: Fraction) -> str:
    """*value* in decimals where it has a finite expansion (2.5), else as a fraction (1/3)."""
    if value.denominator == 1:
        return str(value.numerator)
    try:
        text = str(Decimal(value.numerator) / Decimal(value.denominator))
    except InvalidOperation:
        return str(value)
    return text if Fraction(text) == value else str(value)


def clip_samples(entry: Any, index: int, rate: int) -> int:
    """An audio clip's length in seconds (an int, a Fraction, a Decimal, a decimal or fraction
    string such as ``"2.5"`` or ``"5/2"``, or a float taken at its exact binary value) as the
    samples the feature extractor takes at *rate* Hz: a whole number > 0, else one line why."""
    where = f"audio[{index}] = {entry!r:.60}"
    if isinstance(entry, bool) or not isinstance(entry, (int, float, str, Fraction, Decimal)):
        raise FlopsregError(f"{where}: expected a length in seconds (an int, a Fraction or a decimal string such as '2.5')")
    try:
        seconds = Fraction(entry.strip() if isinstance(entry, str) else entry)
    except (ValueError, ZeroDivisionError, OverflowError):
        raise FlopsregError(f"{where}: expected a length in seconds (an int, a Fraction or a decimal string such as '2.5')") from None
    if seconds <= 0:
        raise FlopsregError(f"{where}: expected a length > 0 seconds")
    samples = seconds * rate
    if samples.denominator != 1:
        hint = " (a float is taken at its binary value: give the decimal as a string, '0.1')" if isinstance(entry, float) else ""
        raise FlopsregError(f"{where}: {_decimal(seconds)} s is not a whole number of samples at {rate} Hz{hint}")
    return samples.numerator


def _video(entry: Any, index: int) -> tuple[int, int, int]:
    if (not isinstance(entry, Sequence) or isinstance(entry, str) or len(entry) != 3
            or not all(type(v) is int and v >= 1 for v in entry)):
        raise FlopsregError(f"videos[{index}] = {entry!r:.60}: expected (frames, height, width), three integers >= 1 (frames, pixels)")
    return entry[0], entry[1], entry[2]


def as_runs(runs: int | Sequence[int]) -> Sequence[int]:
    """A bidirectional rule's runs of one plan as a sequence: one run (an image), or several (a video's frames)."""
    return (runs,) if isinstance(runs, int) else runs


def bidirectional_pairs(runs: Sequence[int]) -> int:
    """Pairs a language model's mask adds per layer when each run of *runs* tokens (one image's)
    attends bidirectionally on top of a causal mask: the n(n-1)/2 above the diagonal of each run.
    A sliding layer adds the same: transformers ANDs ``kv > q - window`` with the OR of causal
    and the image block, which every later key of the run satisfies."""
    return sum(n * (n - 1) // 2 for n in runs)


def pair_flops(units: Iterable[Any], slot: str, pairs: Callable[[frozenset[str], Mapping[str, int]], int]) -> int:
    """The language model's FLOPs for the pairs its mask adds: each layer unit's *slot* (the one
    linear in the pairs) at a one-token sequence (one pair), times ``pairs(flags, params)``, the
    pairs added to one of its layers, times its layers."""
    return sum(unit.count * unit.flops(1).get(slot, 0) * pairs(unit.flags, unit.params) for unit in units)


def plan_media(
    model_name: str,
    towers: Mapping[str, tuple[str, Mapping[str, int], MediaRule | None]],
    images: Sequence[Any] | None,
    image_tokens: Sequence[int] | None,
    convention: str = EXACT,
    kinds: Mapping[str, TowerKind] | None = None,
    pair: Callable[[str, Callable[[frozenset[str], Mapping[str, int]], int]], int] = lambda slot, pairs: 0,
    takes: str = "image",
    processor: Mapping[str, Any] | None = None,
    counts: Callable[[str], bool] = lambda convention: True,
) -> Media:
    """The images of one sequence planned by the one vision tower of *towers* (``{part: (title,
    dims, rule)}``): given in pixels (*images*) or by their token counts (*image_tokens*), the
    tower counted exactly (its kind's closed forms, *kinds* ``{part: TowerKind}``, which ``explain``
    shows too) or as *convention* counts it; ``pair(slot, pairs)`` gives the language model's
    FLOPs for the pairs ``pairs(flags, params)`` adds to each layer of each layer kind, for a tower
    whose image tokens are bidirectional. With ``takes="audio"``, the audio clips of one sequence
    (in seconds, or by their audio tokens) through the one tower whose rule takes audio; with ``takes="video"``, *images* are the
    videos of one sequence, each ``(frames, height, width)``. *processor* sets the rule's
    processor options (:attr:`MediaRule.options`: ``{"max_pixels": 1003520}``), the rest at
    their defaults. ``counts(convention)`` says whether a convention counts the model at all: a
    refusal suggests only those that do."""
    medium = _MEDIA[takes]
    if images is not None and image_tokens is not None:
        raise FlopsregError(f"{medium.whole} and {medium.by_tokens}: give one (each {medium.given_as}, or the tokens of each)")
    given = medium.whole if images is not None else medium.by_tokens
    entries = list(images if images is not None else image_tokens or ())
    if not entries:
        raise FlopsregError(f"{given} = {entries!r}: expected at least one {medium.one}")
    encoders = {part: tower for part, tower in towers.items() if tower[2] is not None and tower[2].takes == takes}
    kinds = kinds or {}
    if not encoders:
        held = ", ".join(f"{part} ({title})" for part, (title, _, _) in towers.items())
        what = f"its towers ({held}) have no {takes} rule in flopsreg" if towers else f"it has no {medium.tower} tower"
        raise FlopsregError(f"{given}: {model_name} takes no {medium.many} here: {what}")
    (part, (title, dims, rule)), *others = encoders.items()
    if others:
        raise FlopsregError(f"{given}: {model_name} has several {takes} towers ({', '.join(encoders)}); flopsreg plans one")
    assert rule is not None
    if rule.most and len(entries) > rule.most:
        raise FlopsregError(f"{given}: {len(entries)} {medium.many}, but {title} takes at most {rule.most} per sequence")
    if convention != EXACT and convention not in rule.conventions:
        raise FlopsregError(
            f"{given}: convention {convention!r} has no term for the {part} tower ({title}): "
            + (f"{rule.refusals[convention]}; " if convention in rule.refusals else "")
            + f"count {medium.many} with the exact convention"
            + "".join(f" or {name}" for name in rule.conventions if counts(name))
        )
    options = _processor_options(rule, title, processor)
    planning = rule.planning(dims, options)  # what the rule's plan reads: the dims and the processor's options
    plans = []
    for index, entry in enumerate(entries):
        if images is not None:
            if takes == "audio":
                size: tuple[int, ...] = (clip_samples(entry, index, rule.sampling_rate),)
            else:
                size = _video(entry, index) if takes == "video" else _size(entry, index)
        elif type(entry) is not int or entry < 1:
            raise FlopsregError(f"{given}[{index}] = {entry!r:.60}: expected an integer >= 1")
        elif rule.from_tokens is None:
            raise FlopsregError(f"{given}: {title} needs each {medium.one}'s {medium.shape}: {rule.shape_note}")
        try:  # the family's processor refuses an image with a ValueError saying why
            plans.append(rule.plan(planning, *size) if images is not None else rule.from_tokens(planning, entry))
        except ValueError as exc:
            raise FlopsregError(f"{given}[{index}] = {entry!r}: {exc} ({title})") from None

    def run_pairs(runs: Sequence[int]) -> int:
        """The language model's FLOPs for the pairs its mask adds within *runs* of tokens (each one block)."""
        layer_pairs = rule.layer_pairs
        return pair(rule.pair_slot, lambda flags, params: (
            bidirectional_pairs(runs) if layer_pairs is None else layer_pairs(dims, runs, flags, params)))

    def lm_pairs(plans: Sequence[MediaPlan]) -> int:
        """The language model's FLOPs for the pairs its mask adds within *plans*' tokens."""
        if rule.bidirectional is None:
            return 0
        return run_pairs([run for plan in plans for run in as_runs(rule.bidirectional(dims, plan))])

    kind = kinds.get(part) if convention == EXACT else None

    def encode(plans: Sequence[MediaPlan]) -> Mapping[str, int]:
        """The tower's FLOPs per piece for *plans*, exact or as the convention counts them."""
        if convention != EXACT:
            return rule.conventions[convention](dims, plans)
        if kind is not None and kind.flops:
            return tower_flops(kind, dims, [grid for plan in plans for grid in plan.grids or (plan.grid,)])
        raise FlopsregError(f"{given}: {title} declares no FLOPs for its {medium.many} (TowerKind.flops)")

    cross, keys = None, ()
    if rule.cross_part:
        if rule.cross_part not in kinds or rule.cross_part not in towers:
            raise FlopsregError(f"{given}: {model_name} has no {rule.cross_part} tower, which {title}'s images are attended through")
        cross = (rule.cross_part, kinds[rule.cross_part], towers[rule.cross_part][1])
        keys = tuple(rule.cross_keys(dims, plan) for plan in plans)  # type: ignore[misc]
    return Media(part=part, title=title, plans=tuple(plans), flops=encode(plans), rule=rule, kind=kind, dims=dims,
                 bidirectional=lm_pairs(plans), cross=cross, keys=keys, encode=encode, lm_pairs=lm_pairs, run_pairs=run_pairs,
                 options=options)


__getattr__ = old_names(__name__)  # Images and plan_images, the earlier names (the module was engine/images.py)
