"""The images a request carries: each planned by the model's vision tower (its family's resizing
and token-count rule), the tower's exact forward FLOPs for them (its kind's closed forms, compiled
once and summed over the images' grids), and the tokens they add to each sequence of the language
model (placed before the text, as chat templates place them). Videos go the same way through the
tower's video rule (each given as frames x height x width), after the images."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from flopsreg.declarations.pattern import EXACT
from flopsreg.declarations.towers import IMAGE_GRID, ImagePlan, ImageRule, TowerKind, where_symbol
from flopsreg.errors import FlopsregError
from flopsreg.formula.exact import CompiledFormula, compile_exact

if TYPE_CHECKING:
    from flopsreg.declarations.readers import HFReader
    from flopsreg.model import Model

__all__ = [
    "Images", "bidirectional_pairs", "closed_form_lines", "closed_form_rows", "plan_images", "tower_flops", "tower_kinds",
]


@attrs.frozen
class _Medium:
    """How a request's entries of one medium (images, videos) are named in its one-line errors."""

    whole: str  # the argument giving each entry whole ("images") and by its tokens ("image_tokens")
    by_tokens: str
    one: str  # one entry ("image"), several ("images")
    many: str
    given_as: str  # how each is given whole, and what its plan needs
    shape: str


_MEDIA = {
    "image": _Medium("images", "image_tokens", "image", "images", "image in pixels", "height and width (give images=)"),
    "video": _Medium("videos", "video_tokens", "video", "videos", "video in frames and pixels", "frames, height and width (give videos=)"),
}


def tower_kinds(model: Model, hf_readers: Mapping[str, HFReader]) -> dict[str, TowerKind]:
    """``{part: TowerKind}`` of *model*'s towers, the kinds its Hugging Face reader declares."""
    kinds = {}
    for flag in sorted(model.flags):
        if flag.startswith("hf_") and flag[3:] in hf_readers:
            kinds.update({t.kind.name: t.kind for t in hf_readers[flag[3:]].towers})
    return {part: kinds[tower.kind] for part, tower in model.towers.items() if tower.kind in kinds}


# Each kind's closed forms compiled to exact code, keyed by its forms (a kind holds mappings: it has
# no hash of its own); the handful of kinds a process meets each compile once.
_GRID_NAMES = tuple(symbol.name for symbol in IMAGE_GRID)
_COMPILED: dict[tuple[tuple[tuple[str, Any], ...], ...], tuple[tuple[str, CompiledFormula], ...]] = {}


def _compiled(kind: TowerKind) -> tuple[tuple[str, CompiledFormula], ...]:
    """``(piece, compiled closed form)`` of *kind*, its named parts written out: compiled on first use."""
    key = (tuple(kind.flops.items()), tuple(kind.flops_where.items()))
    if key not in _COMPILED:
        _COMPILED[key] = tuple((piece, compile_exact(form)) for piece, form in kind.closed_forms().items())
    return _COMPILED[key]


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


def closed_form_lines(part: str, kind: TowerKind, dims: Mapping[str, int]) -> list[str]:
    """The tower kind's FLOPs in closed form, one line a piece, then their sum with *dims*
    substituted: one image of ``t x rows x columns`` patches (a request's images sum it)."""
    grid = ", ".join(map(str, IMAGE_GRID))
    lines = [f"{part} tower ({kind.title}): forward FLOPs of one image of {' x '.join(map(str, IMAGE_GRID))} patches "
             "(the images of a sequence sum it)"]
    for role, name, expr in closed_form_rows(kind, dims):
        lines.append(f"  F_{part}({grid}) = {expr}" if role == "total" else f"  {name} = {expr}")
    return lines


@attrs.frozen
class Images:
    """The images of every sequence of a batch, and what the vision tower spends on them.

    Attributes:
        part, title: the tower that encodes them (``"vision"``, ``"Qwen3-VL ViT"``).
        plans: each image, as the processor turns it into tokens, in the order given.
        flops: the tower's forward FLOPs per piece for the images of one sequence.
        rule: the tower kind's image rule (for ``explain``).
        bidirectional: the language model's FLOPs for the pairs its mask adds within each image's
            tokens beyond causal and sliding (Gemma 3's soft tokens), per sequence; 0 where the
            image tokens are causal like text.
        kind, dims: the tower kind and the dims it was read with, for the closed forms in
            ``explain`` (None where the images were counted under a convention).
    """

    part: str
    title: str
    plans: tuple[ImagePlan, ...]
    flops: Mapping[str, int]
    rule: ImageRule = attrs.field(eq=False, repr=False)
    bidirectional: int = 0
    kind: TowerKind | None = attrs.field(default=None, eq=False, repr=False)
    dims: Mapping[str, int] = attrs.field(factory=dict, eq=False, repr=False)

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
        tokens: the tower, and the language model's bidirectional pairs within each image."""
        return self.tower + self.bidirectional

    def text(self, *, rules: bool = False) -> list[str]:
        """Lines for output: the tower's resizing rule, each image, the FLOPs per piece (and with
        *rules*, what each piece costs and the kind's closed forms)."""
        video = any(plan.frames for plan in self.plans)
        lines = [f"{'videos' if video else 'images'} through the {self.part} tower ({self.title}): {self.rule.summary}"]
        for number, plan in enumerate(self.plans, 1):
            if plan.frames:
                grid = "x".join(map(str, plan.grid))
                given = (f"{plan.frames} frames of {plan.height}x{plan.width} -> {plan.resized[0]}x{plan.resized[1]}, "
                         f"patch grid {grid} (t x h x w)")
                lines.append(f"  video {number}: {given}, {plan.tokens} tokens")
                continue
            if plan.height:
                grid = "x".join(map(str, plan.grid))
                given = f"{plan.height}x{plan.width} -> {plan.resized[0]}x{plan.resized[1]}, patch grid {grid} (t x h x w)"
            else:
                given = f"given by its image tokens: {_product(plan.grid)} patches"
            lines.append(f"  image {number}: {given}, {plan.tokens} tokens")
        lines += [f"  {piece}: {flops:,} FLOPs per sequence" for piece, flops in self.flops.items()]
        lines.append(f"  tower: {self.tower:,} FLOPs per sequence; {self.tokens} {'video' if video else 'image'} tokens per sequence")
        if self.bidirectional:
            lines.append(f"  language model, bidirectional pairs within each image: {self.bidirectional:,} FLOPs per sequence")
        if not rules:
            return lines
        lines += [f"  rule: {rule}" for rule in self.rule.rules]
        if self.kind is not None and self.kind.flops:
            lines += ["  " + line for line in closed_form_lines(self.part, self.kind, self.dims)]
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "tower": self.part,
            "title": self.title,
            "images": [
                {**({"frames": p.frames} if p.frames else {}), "height": p.height, "width": p.width, "resized": list(p.resized),
                 "grid": list(p.grid), "tokens": p.tokens}
                for p in self.plans
            ],
            "tokens_per_sequence": self.tokens,
            "tower_flops_per_sequence": {piece: str(flops) for piece, flops in self.flops.items()},
            **({"bidirectional_flops_per_sequence": str(self.bidirectional)} if self.bidirectional else {}),
        }


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


def _video(entry: Any, index: int) -> tuple[int, int, int]:
    if (not isinstance(entry, Sequence) or isinstance(entry, str) or len(entry) != 3
            or not all(type(v) is int and v >= 1 for v in entry)):
        raise FlopsregError(f"videos[{index}] = {entry!r:.60}: expected (frames, height, width), three integers >= 1 (frames, pixels)")
    return entry[0], entry[1], entry[2]


def bidirectional_pairs(runs: Sequence[int]) -> int:
    """Pairs a language model's mask adds per layer when each run of *runs* tokens (one image's)
    attends bidirectionally on top of a causal mask: the n(n-1)/2 above the diagonal of each run.
    A sliding layer adds the same: transformers ANDs ``kv > q - window`` with the OR of causal
    and the image block, which every later key of the run satisfies."""
    return sum(n * (n - 1) // 2 for n in runs)


def pair_flops(units: Iterable[Any], slot: str) -> int:
    """The language model's FLOPs for one more (query, key) pair in every layer: each layer unit's
    *slot* (the one linear in the pairs) at a one-token sequence (one pair), times its layers."""
    return sum(unit.count * unit.flops(1).get(slot, 0) for unit in units)


def plan_images(
    model_name: str,
    towers: Mapping[str, tuple[str, Mapping[str, int], ImageRule | None]],
    images: Sequence[tuple[int, int]] | None,
    image_tokens: Sequence[int] | None,
    convention: str = EXACT,
    kinds: Mapping[str, TowerKind] | None = None,
    pair: Callable[[str], int] = lambda slot: 0,
    takes: str = "image",
) -> Images:
    """The images of one sequence planned by the one vision tower of *towers* (``{part: (title,
    dims, rule)}``): given in pixels (*images*) or by their token counts (*image_tokens*), the
    tower counted exactly (its kind's closed forms, *kinds* ``{part: TowerKind}``, which ``explain``
    shows too) or as *convention* counts it; ``pair(slot)`` gives the language model's
    FLOPs for one more attended pair in every layer, for a tower whose image tokens are bidirectional.
    With ``takes="video"``, *towers* hold the video rules and *images* the videos of one sequence,
    each ``(frames, height, width)``."""
    medium = _MEDIA[takes]
    if images is not None and image_tokens is not None:
        raise FlopsregError(f"{medium.whole} and {medium.by_tokens}: give one (each {medium.given_as}, or the tokens of each)")
    given = medium.whole if images is not None else medium.by_tokens
    entries = list(images if images is not None else image_tokens or ())
    if not entries:
        raise FlopsregError(f"{given} = {entries!r}: expected at least one {medium.one}")
    encoders = {part: tower for part, tower in towers.items() if tower[2] is not None}
    if not encoders:
        held = ", ".join(f"{part} ({title})" for part, (title, _, _) in towers.items())
        what = f"its towers ({held}) have no {takes} rule in flopsreg" if towers else "it has no vision tower"
        raise FlopsregError(f"{given}: {model_name} takes no {medium.many} here: {what}")
    (part, (title, dims, rule)), *others = encoders.items()
    if others:
        raise FlopsregError(f"{given}: {model_name} has several {takes} towers ({', '.join(encoders)}); flopsreg plans one")
    assert rule is not None
    if convention != EXACT and convention not in rule.conventions:
        raise FlopsregError(
            f"{given}: convention {convention!r} has no term for the {part} tower ({title}): "
            f"count {medium.many} with the exact convention" + (f" or {', '.join(rule.conventions)}" if rule.conventions else "")
        )
    plans = []
    for index, entry in enumerate(entries):
        if images is not None:
            size = _video(entry, index) if takes == "video" else _size(entry, index)
        elif type(entry) is not int or entry < 1:
            raise FlopsregError(f"{given}[{index}] = {entry!r:.60}: expected an integer >= 1")
        elif rule.from_tokens is None:
            raise FlopsregError(f"{given}: {title} needs each {medium.one}'s {medium.shape}: {rule.shape_note}")
        try:  # the family's processor refuses an image with a ValueError saying why
            plans.append(rule.plan(dims, *size) if images is not None else rule.from_tokens(dims, entry))
        except ValueError as exc:
            raise FlopsregError(f"{given}[{index}] = {entry!r}: {exc} ({title})") from None
    extra = 0
    if rule.bidirectional is not None:
        extra = pair(rule.pair_slot) * bidirectional_pairs([rule.bidirectional(dims, plan) for plan in plans])
    kind = (kinds or {}).get(part) if convention == EXACT else None
    if convention != EXACT:
        flops = rule.conventions[convention](dims, plans)
    elif kind is not None and kind.flops:
        flops = tower_flops(kind, dims, [plan.grid for plan in plans])
    else:
        raise FlopsregError(f"{given}: {title} declares no FLOPs for its {medium.many} (TowerKind.flops)")
    return Images(part=part, title=title, plans=tuple(plans), flops=flops, rule=rule, kind=kind, dims=dims,
                  bidirectional=extra)
