"""Evaluation: exact FLOPs of a composed model for concrete sequence lengths, and the result types.

The :class:`CompositionCache` owns the one cache of composed models (selection and composition are
pure, so each (model, convention) is composed once) and evaluates them with compiled
exact-integer code.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING, Any

import attrs

from flopsreg._deprecated import old_names
from flopsreg.errors import ModelError, PatternError, did_you_mean
from flopsreg.model import IndexedView, Model, as_int, kind_of, shown

if TYPE_CHECKING:  # sympy and composition are imported only when a model is composed (not from the cache)
    import sympy

    from flopsreg.engine.compose import ModelSelection, UnitSelection
    from flopsreg.engine.media import Media
    from flopsreg.engine.memory import Holdings
    from flopsreg.engine.placement import Placed
    from flopsreg.engine.structure import Structure
    from flopsreg.engine.traffic import MemoryUtilisation, Roofline, StepBytes, Traffic
    from flopsreg.engine.utilisation import StepUtilisation, Utilisation
    from flopsreg.plugins.loader import PluginLoader

__all__ = [
    "LOGITS_MODES",
    "CompositionCache",
    "LayerResult",
    "RECOMPUTE",
    "Result",
    "cached_list",
    "evaluate",
    "length_list",
    "lengths_of",
    "positive_int",
    "request_list",
    "sequence_lengths",
    "structure_key",
]

LOGITS_MODES = ("all", "last")  # every position (training), or the last one of each sequence (serving)

TRAINING_PASSES = 3  # forward + backward (gradients w.r.t. inputs and weights)
_PLAN_CACHE_SIZE = 1024


@attrs.frozen
class LayerResult:
    """One layer's exact FLOPs for the whole batch, and the pattern chosen for each slot."""

    index: int
    kind: str
    patterns: Mapping[str, str] = attrs.field(hash=False)
    flops: int


RECOMPUTE = {
    "none": "no activation recomputation: training = 3 x forward",
    "selective": "the slots declared for selective recomputation (the attention core) are recomputed in the backward pass",
    "full": "every decoder layer's forward is recomputed in the backward pass (not the model-level slots)",
}


@attrs.frozen
class Result:
    """Exact FLOPs of a model for a batch; see :meth:`flopsreg.Registry.evaluate`."""

    selection: ModelSelection
    seqlens: tuple[int, ...]
    batch: int
    recompute: str
    forward: int  # exact forward FLOPs of the whole batch
    cached: tuple[int, ...] = ()  # tokens already in the KV cache, per sequence (empty: none)
    logits: str = "all"  # logits on every position, or on the "last" of each sequence
    # The images every sequence holds and the vision tower's FLOPs for them (counted in forward;
    # the seqlens are the language model's, image tokens included). None: text alone.
    images: Media | None = None
    # what each sequence's media add to this step (its new image, video and audio tokens, the
    # images, videos and clips it encodes), in the order of seqlens; empty for text alone
    placed: tuple[Placed, ...] = ()
    # The audio clips every sequence holds (after its images and videos) and the audio tower's FLOPs for them.
    audio: Media | None = None
    # The videos every sequence holds (after its images) and the vision tower's FLOPs for them.
    videos: Media | None = None

    @property
    def serving(self) -> bool:
        """Whether this counts a serving step (a cached prefix or last-position logits)."""
        return bool(self.cached) or self.logits != "all"

    def _per_length(self, function: Callable[[int, int, str], Any]) -> Any:
        """``batch * sum(count * function(length, cached, logits))`` over the distinct (length,
        cached) pairs, dicts added per key."""
        total: Any = None
        cached = self.cached or (0,) * len(self.seqlens)
        for (length, prefix), count in Counter(zip(self.seqlens, cached)).items():
            value = function(length, prefix, self.logits)
            if isinstance(value, dict):
                total = dict.fromkeys(value, 0) if total is None else total
                for key, flops in value.items():
                    total[key] += self.batch * count * flops
            else:
                total = (total or 0) + self.batch * count * value
        return total

    @property
    def requests(self) -> tuple[tuple[int, int], ...]:
        """``(new_tokens, cached)`` of each sequence, in the order given (cached 0 without a prefix)."""
        return tuple(zip(self.seqlens, self.cached or (0,) * len(self.seqlens)))

    @cached_property
    def per_request(self) -> tuple[int, ...]:
        """Exact forward FLOPs of each sequence (each request of a serving step), ``batch`` times
        over: they add up to :attr:`forward`."""
        exact = {pair: self.selection.serving(*pair, self.logits) if self.serving else self.selection.forward(pair[0]) for pair in set(self.requests)}
        media = [placed.forward for placed in self.placed] or [0] * len(self.seqlens)
        return tuple(self.batch * (exact[pair] + extra) for pair, extra in zip(self.requests, media))

    @cached_property
    def unit_totals(self) -> dict[UnitSelection, int]:
        """FLOPs for the whole batch through each unit of the plan once (one layer of a kind)."""
        return {unit: self._per_length(unit.total) for unit in self.selection.units}

    @cached_property
    def unit_flops(self) -> dict[UnitSelection, dict[str, int]]:
        """FLOPs per slot for the whole batch through each unit of the plan once.

        Computed on first use, so a caller that needs only the total does not pay for it.
        """
        return {unit: self.flops_through(unit) for unit in self.selection.units}

    def flops_through(self, unit: UnitSelection) -> dict[str, int]:
        """FLOPs per slot for the whole batch through *unit* once: a unit of the plan, or one of
        the block layers that a model-level slot counts (``selection.blocks``)."""
        return self._per_length(unit.flops)

    @property
    def plan(self) -> ModelSelection:
        """Deprecated (removed in 0.3): the earlier name of :attr:`selection`."""
        import warnings

        warnings.warn("Result.plan is deprecated and will be removed in 0.3: use Result.selection", DeprecationWarning, stacklevel=2)
        return self.selection

    @property
    def model(self) -> Model:
        return self.selection.model

    @property
    def convention(self) -> str:
        return self.selection.convention

    @property
    def layers(self) -> Sequence[LayerResult]:
        """Every decoder layer with its patterns and exact FLOPs for the batch, computed on access."""
        by_kind = {unit.name: unit for unit in self.selection.kinds}
        kind_at = self.model.plan.kind_at

        def layer(index: int) -> LayerResult:
            unit = by_kind[kind_at(index)]
            return LayerResult(index=index, kind=unit.name, patterns=unit.patterns, flops=self.unit_totals[unit])

        return IndexedView(self.model.plan.layers, layer)

    @cached_property
    def slot_flops(self) -> dict[str, int]:
        """Forward FLOPs of the batch per slot, summed over the model: where the work goes."""
        totals: dict[str, int] = {}
        for unit in self.selection.units:
            for slot, flops in self.unit_flops[unit].items():
                totals[slot] = totals.get(slot, 0) + unit.count * flops
        return totals

    @property
    def recomputed(self) -> int:
        """Forward FLOPs repeated in the backward pass by activation recomputation."""
        if self.recompute == "none":
            return 0
        if self.recompute == "full":
            return sum(unit.count * self.unit_totals[unit] for unit in self.selection.kinds)
        return sum(
            unit.count * flops
            for unit in self.selection.kinds
            for slot, flops in self.unit_flops[unit].items()
            if self.selection.slots[slot].selective_recompute
        )

    @property
    def training(self) -> int:
        """Forward plus backward (3 x forward), plus recomputed forward work if asked for."""
        return TRAINING_PASSES * self.forward + self.recomputed

    @property
    def tokens(self) -> int:
        """Tokens processed (new ones, not the cached prefix): batch x the sequence lengths."""
        return self.batch * sum(self.seqlens)

    @property
    def forward_per_token(self) -> Fraction:
        """Forward FLOPs per processed token, exact (for a decode step: per generated token)."""
        return Fraction(self.forward, self.tokens)

    @property
    def training_per_token(self) -> Fraction:
        """Training FLOPs (with any recomputation) per token, exact."""
        return Fraction(self.training, self.tokens)

    def mfu(
        self,
        *,
        peak: str | int | float | Fraction,
        devices: int = 1,
        step_time: float | None = None,
        tokens_per_second: float | None = None,
    ) -> Utilisation:
        """Model FLOPs utilisation of one step that processed this batch: training FLOPs without
        recomputation (forward only for a serving step) over ``step_time x devices x peak``.

        ``peak`` is FLOP/s per device or a name from :data:`flopsreg.engine.peaks.PEAKS` (e.g.
        ``"h100-sxm-bf16"``); ``tokens_per_second`` (per device) may replace ``step_time``. Each
        must lie in its range (:mod:`flopsreg.engine.peaks`), and an MFU above 1 is a ModelError naming
        the likely unit mistake.
        """
        flops = self.forward if self.serving else TRAINING_PASSES * self.forward
        return self._utilisation("MFU", flops, peak=peak, devices=devices, step_time=step_time, tokens_per_second=tokens_per_second)

    def hfu(
        self,
        *,
        peak: str | int | float | Fraction,
        devices: int = 1,
        step_time: float | None = None,
        tokens_per_second: float | None = None,
    ) -> Utilisation:
        """Hardware FLOPs utilisation: as :meth:`mfu`, counting recomputed forward work too."""
        flops = self.forward if self.serving else self.training
        return self._utilisation("HFU", flops, peak=peak, devices=devices, step_time=step_time, tokens_per_second=tokens_per_second)

    def _utilisation(self, name: str, flops: int, **speed: Any) -> Utilisation:
        """*flops* of this step against the devices' peak, as :meth:`mfu` and :meth:`hfu` count them."""
        from flopsreg.engine.utilisation import utilisation  # only for MFU

        return utilisation(flops, self.tokens, name=name, render=self.selection.render, **speed)

    def utilisation(
        self,
        *,
        peak: str | int | float | Fraction,
        devices: int = 1,
        step_time: float | None = None,
        tokens_per_second: float | None = None,
        bandwidth: str | int | float | Fraction | None = None,
        **formats: Any,
    ) -> StepUtilisation:
        """:meth:`mfu` and :meth:`hfu` of one step together, as ``flopsreg mfu`` prints them
        (``.to_dict()`` is its ``--format json``); for a serving step also its :meth:`traffic`
        (*formats*: the dtype options) and, given the devices' memory *bandwidth* (bytes/s per
        device or a name from ``flopsreg peaks``; by default the bandwidth of the device *peak*
        names, if it names one), its MBU and roofline bound."""
        from flopsreg.engine.peaks import PEAKS  # only for MFU
        from flopsreg.engine.utilisation import StepUtilisation

        speed = {"peak": peak, "devices": devices, "step_time": step_time, "tokens_per_second": tokens_per_second}
        mfu = self.mfu(**speed)
        if not self.serving:
            given = ["bandwidth"] * (bandwidth is not None) + list(formats)
            if given:
                raise ModelError(f"{given[0]}: MBU and the roofline bound are a serving step's (requests=, cached= or logits='last'), not a training step's")
            return StepUtilisation(self, mfu, self.hfu(**speed))
        traffic = self.traffic(**formats)
        if bandwidth is None and isinstance(peak, str) and peak.strip().lower() in PEAKS:
            bandwidth = peak  # its device's bandwidth
        if bandwidth is None:
            return StepUtilisation(self, mfu, self.hfu(**speed), traffic=traffic)
        return StepUtilisation(
            self, mfu, self.hfu(**speed), traffic=traffic,
            mbu=traffic.mbu(step_time=mfu.seconds, bandwidth=bandwidth, devices=mfu.devices),
            roofline=traffic.roofline(peak=mfu.peak, bandwidth=bandwidth, devices=mfu.devices),
        )

    def traffic(
        self,
        step_bytes: StepBytes | None = None,
        *,
        weights_dtype: str = "bf16",
        kv_dtype: str | None = None,
        state_dtype: str | None = None,
        experts_dtype: str | None = None,
        all_experts: bool = False,
    ) -> Traffic:
        """The bytes this step must read and write at least (weights once, each request's cached
        KV or state, the new tokens' KV), with ``intensity``, ``roofline(...)`` and ``mbu(...)``.

        The model's bytes are what its patterns declare, in the given formats (defaults as
        :meth:`flopsreg.Registry.memory`'s), or *step_bytes*
        (:class:`flopsreg.engine.traffic.StepBytes`) when given. A MoE layer reads the experts its
        tokens can reach, min(E, tokens x top_k), or all with *all_experts*."""
        from flopsreg.engine.traffic import step_traffic  # only for traffic

        if step_bytes is None:
            step_bytes = self.step_bytes(weights_dtype=weights_dtype, kv_dtype=kv_dtype, state_dtype=state_dtype, experts_dtype=experts_dtype)
        elif not (weights_dtype == "bf16" and kv_dtype is state_dtype is experts_dtype is None):
            raise ModelError("step_bytes: give the model's bytes or the dtypes they are stored in, not both")
        return step_traffic(self, step_bytes, all_experts=all_experts)

    def step_bytes(
        self, *, weights_dtype: str = "bf16", kv_dtype: str | None = None, state_dtype: str | None = None, experts_dtype: str | None = None
    ) -> StepBytes:
        """The model's :class:`~flopsreg.engine.traffic.StepBytes` as its patterns declare them, in
        the given formats (defaults as :meth:`flopsreg.Registry.memory`'s)."""
        from flopsreg.engine.traffic import step_bytes  # only for traffic

        if self.selection.held is None:
            raise ModelError(
                f"{self.model.name}: this result was evaluated from the command line's cache, which keeps no bytes; "
                "evaluate it with Registry.evaluate, or give step_bytes"
            )
        return step_bytes(self.selection.held(self.model), weights_dtype, kv_dtype, state_dtype, experts_dtype)

    def roofline(
        self, *, peak: str | int | float | Fraction, bandwidth: str | int | float | Fraction, devices: int = 1, **formats: Any
    ) -> Roofline:
        """The least time this step can take on *devices* devices of *peak* FLOP/s and *bandwidth*
        bytes/s each (numbers, or names from ``flopsreg peaks``): the larger of compute time and the
        time to move :meth:`traffic`'s bytes (*formats*: its dtype options), and which bounds it."""
        return self.traffic(**formats).roofline(peak=peak, bandwidth=bandwidth, devices=devices)

    def mbu(
        self, *, step_time: float | Fraction | str, bandwidth: str | int | float | Fraction, devices: int = 1, **formats: Any
    ) -> MemoryUtilisation:
        """Memory-bandwidth utilisation of one step that processed this batch in *step_time* seconds:
        :meth:`traffic`'s bytes (*formats*: its dtype options) over ``step_time x devices x bandwidth``."""
        return self.traffic(**formats).mbu(step_time=step_time, bandwidth=bandwidth, devices=devices)

    def to_dict(self, *, per_layer: bool = False) -> dict[str, Any]:
        """Equal to ``flopsreg eval --format json`` for the same call (exact totals as decimal
        strings); ``per_layer=True`` adds the ``layers`` list of ``--per-layer``."""
        fields = self.selection.render.result_json(self)
        if per_layer:
            fields["layers"] = list(self.selection.render.layers_json(self))
        return fields

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.selection.warnings

    @property
    def expression(self) -> sympy.Expr:
        """Forward FLOPs of one sequence, closed form in ``seq_len`` (and ``cached`` for a
        serving step), dimensions substituted."""
        return self.selection.serving_expression(self.logits) if self.serving else self.selection.expression

    def explain(self) -> str:
        return self.selection.explain()

    def latex(self, *, document: bool = False, numbered: bool = True, annotate: bool = False) -> str:
        """Paste-ready LaTeX: the closed form, this result's totals and FLOPs per token, and a
        legend; a fragment that needs only amsmath, or with ``document=True`` a whole document."""
        return self.selection.render.latex(self.selection, result=self, document=document, numbered=numbered, annotate=annotate)

    def __repr__(self) -> str:
        """Short: the model, the lengths and the forward total (the attrs dump is the whole plan)."""
        lengths = f"seq_len={self.seqlens[0]}" if len(self.seqlens) == 1 else f"seqlens=<{len(self.seqlens)} sequences>"
        return f"Result(model={self.model.name!r}, {lengths}, batch={self.batch}, convention={self.convention!r}, forward={self.forward})"

    def _repr_markdown_(self) -> str:
        """Jupyter: totals, FLOPs per layer kind, the closed form and its symbols."""
        return self.selection.render.result_markdown(self)

    def _repr_latex_(self) -> str:
        """The equations for Jupyter, in what MathJax 3 renders (no tabular, no comments)."""
        return self.selection.render.mathjax(self.selection, result=self)


def lengths_of(seq_len: int | None, seqlens: Sequence[int] | None) -> tuple[int, ...]:
    """The sequence lengths of one of *seq_len* (every sequence alike) or *seqlens* (a packed row), checked."""
    if (seq_len is None) == (seqlens is None):
        raise ModelError("give exactly one of seq_len (every sequence alike) or seqlens (one packed row)")
    if seqlens is None:
        return (positive_int("seq_len", seq_len, "a sequence length"),)
    return tuple(length_list("seqlens", seqlens, "a list of sequence lengths"))


def length_list(field: str, values: Any, expected: str) -> list[int]:
    """*values* (a list, tuple or 1-D array; not a string) as sequence lengths, at least one."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable) or len(getattr(values, "shape", (0,))) != 1:
        raise ModelError(f"{field} = {shown(values)}: expected {expected}, got {kind_of(values)}")
    lengths = list(sequence_lengths(field, values))
    if not lengths:
        raise ModelError(f"{field}: empty; give at least one sequence length")
    return lengths


def request_list(requests: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """*requests*, a list of ``(new_tokens, cached)`` pairs, as the new tokens and the cached
    prefix of each (a serving step of prefill chunks and decodes); the error names ``requests``."""
    if isinstance(requests, (str, bytes)) or not isinstance(requests, Iterable):
        raise ModelError(f"requests = {shown(requests)}: expected a list of (new_tokens, cached) pairs, got {kind_of(requests)}")
    lengths, prefixes = [], []
    for i, request in enumerate(requests):
        if isinstance(request, (str, bytes)) or not isinstance(request, Iterable) or len(pair := tuple(request)) != 2:
            raise ModelError(f"requests[{i}] = {shown(request)}: expected a (new_tokens, cached) pair, e.g. (512, 0) or (1, 4096)")
        lengths.append(positive_int(f"requests[{i}] new_tokens", pair[0], "a count of new tokens"))
        prefixes.append(nonnegative_int(f"requests[{i}] cached", pair[1], "a count of cached tokens"))
    if not lengths:
        raise ModelError("requests: empty; give at least one (new_tokens, cached) pair")
    return tuple(lengths), tuple(prefixes)


def cached_list(cached: int | Sequence[int], lengths: tuple[int, ...]) -> tuple[int, ...]:
    """The cached prefix of each sequence (empty when none has one); the error names ``cached``."""
    if isinstance(cached, (str, bytes)) or not isinstance(cached, Iterable) or getattr(cached, "shape", None) == ():
        values = (cached,) * len(lengths)  # one count for every sequence (a 0-d array too)
    elif len(getattr(cached, "shape", (0,))) != 1:
        raise ModelError(f"cached = {shown(cached)}: expected one int, or a list with one per sequence, got {kind_of(cached)}")
    else:
        values = tuple(cached)
        if len(values) != len(lengths):
            raise ModelError(
                f"cached: {len(values)} entries for {len(lengths)} sequences: expected one int, or one per entry of seqlens"
            )
    checked = tuple(nonnegative_int("cached", value, "a count of cached tokens") for value in values)
    return checked if any(checked) else ()


def nonnegative_int(field: str, value: Any, what: str) -> int:
    """*value* as a Python int >= 0 (numpy integers and 0-d arrays accepted, bools, floats and other shapes refused)."""
    return _at_least(0, field, value, what)


def positive_int(field: str, value: Any, what: str) -> int:
    """*value* as a Python int >= 1 (numpy integers and 0-d arrays accepted, bools, floats and other shapes refused)."""
    if type(value) is int and value >= 1:
        return value
    return _at_least(1, field, value, what)


def _at_least(minimum: int, field: str, value: Any, what: str) -> int:
    number = as_int(value)
    if number is None or number < minimum:
        got = "" if number is not None or type(value) in (int, float) else f", got {kind_of(value)}"
        raise ModelError(f"{field}: {shown(value)} is not {what}: expected an integer >= {minimum}{got}")
    return number


def sequence_lengths(field: str, lengths: Iterable[Any]) -> Iterator[int]:
    """Each entry of *lengths* as a sequence length (an int >= 1); the error names *field*."""
    for value in lengths:
        yield positive_int(field, value, "a sequence length")


def evaluate(
    plan: ModelSelection,
    seq_len: int | None = None,
    seqlens: Sequence[int] | None = None,
    batch: int = 1,
    recompute: str = "none",
    cached: int | Sequence[int] = 0,
    logits: str | None = None,
    requests: Sequence[tuple[int, int]] | None = None,
) -> Result:
    """Exact FLOPs of *plan* over ``batch`` copies of the given sequences (see Registry.evaluate)."""
    if requests is not None:
        if seq_len is not None or seqlens is not None or not (type(cached) is int and cached == 0):
            raise ModelError("requests: give the (new_tokens, cached) pairs alone, without seq_len, seqlens or cached")
        seqlens, cached = request_list(requests)
        logits = "last" if logits is None else logits  # a serving step: logits at each request's last position
    logits = "all" if logits is None else logits
    if seqlens is None and type(seq_len) is int and seq_len >= 1:  # the common case, checked fast
        lengths: tuple[int, ...] = (seq_len,)
    else:
        lengths = lengths_of(seq_len, seqlens)
    if type(batch) is not int or batch < 1:
        batch = positive_int("batch", batch, "a batch size")
    if recompute not in RECOMPUTE if isinstance(recompute, str) else True:
        raise ModelError(
            f"recompute: {recompute!r} is not a recomputation mode{did_you_mean(str(recompute), RECOMPUTE)} "
            f"(expected one of: {', '.join(RECOMPUTE)})"
        )
    if type(cached) is int and cached == 0 and logits == "all":
        if len(lengths) == 1:
            forward = batch * plan.forward(lengths[0])
        else:
            forward = batch * sum(count * plan.forward(length) for length, count in Counter(lengths).items())
        return Result(plan, lengths, batch, recompute, forward)  # positional: measurably cheaper
    if logits not in LOGITS_MODES:
        raise ModelError(f"logits: {logits!r}: expected one of {', '.join(map(repr, LOGITS_MODES))} (every position, or the last)")
    prefix = cached_list(cached, lengths)
    pairs = Counter(zip(lengths, prefix or (0,) * len(lengths)))
    forward = batch * sum(count * plan.serving(length, c, logits) for (length, c), count in pairs.items())
    return Result(plan, lengths, batch, recompute, forward, prefix, logits)


def structure_key(model: Model, convention: str) -> Hashable:
    """What decides selection and composition, without the values: the convention, the flags,
    the plan (kinds, their order and layer counts, blocks) and the parameter names set where
    (see :mod:`flopsreg.engine.structure`)."""
    return (
        convention,
        model.flags,
        model.plan,
        tuple(model.params),
        tuple((name, kind.flags, tuple(kind.params)) for name, kind in model.kinds.items()),
    )


class CompositionCache:
    """Composes each (model, convention) once and evaluates it: the one cache of composed models.

    SlotSelection and composition are pure and models are values, so a cached plan can never be
    another model's. A model that differs from a composed one only in parameter values is not
    composed again: it is rebound to their shared :class:`~flopsreg.engine.structure.Structure` (the
    second such model compiles the structure's forward FLOPs with values as arguments). Every
    cache is bounded, so sweeps over many architectures stay bounded.
    """

    def __init__(self, registry: PluginLoader, render: Any) -> None:
        self._registry = registry
        self._render = render
        self._plans: dict[tuple[Model, str], ModelSelection] = {}
        # per structure: the selection of its first model, compiled into a Structure by the second
        self._templates: dict[Hashable, ModelSelection] = {}
        # per compiled structure: its Structure, or None where it has none (each model is composed)
        self._structures: dict[Hashable, Structure | None] = {}
        self._held: dict[Model, Holdings] = {}  # what each model holds, in elements (memory, traffic)
        # the last structure a model was rebound to, with the very objects (kinds, flags, plan) of
        # that model and its parameter names: a model sharing them (Model.with_param's copies do)
        # has its structure key, which is then neither built nor hashed
        self._last: tuple[Any, ...] = ()

    def holdings(self, model: Model) -> Holdings:
        """What *model*'s exact selection holds, in elements (weights, KV cache, states): from the cache if there."""
        try:
            held = self._held.get(model)
        except TypeError:  # unhashable: not a Model; compose says what was expected
            held = None
        if held is None:
            from flopsreg.declarations.pattern import EXACT  # only for bytes (it imports sympy)
            from flopsreg.engine.holdings import holdings

            held = holdings(self._registry, self.select(model, EXACT))
            _bounded_put(self._held, model, held)
        return held

    def select(self, model: Model, convention: str) -> ModelSelection:
        """The composed :class:`ModelSelection` of *model* under *convention*, from the cache if there."""
        try:
            plan = self._plans.get((model, convention))
        except TypeError:  # unhashable: not a Model; compose says what was expected
            plan = None
        if plan is None:
            plan = self._compose(model, convention)
            _bounded_put(self._plans, (model, convention), plan)
        return plan

    def structure(self, model: Model, convention: str) -> Structure | None:
        """The :class:`~flopsreg.engine.structure.Structure` *model* shares with every model that differs
        from it only in values (compiled on first use); None where it has none (blocks of extra layers)."""
        from flopsreg.engine.structure import rebindable

        plan = self.select(model, convention)
        key = structure_key(model, convention)
        if key in self._structures:
            return self._structures[key]
        return self._compiled(key, self._templates.get(key, plan)) if rebindable(plan) else None

    def _compose(self, model: Model, convention: str) -> ModelSelection:
        """*model* rebound to the structure of a model composed before, or composed."""
        if not isinstance(model, Model) or not isinstance(convention, str):
            key = None
        else:
            last = self._last
            if last and model.kinds is last[0] and model.flags is last[1] and model.plan is last[2] and convention == last[3] and model.params.keys() == last[4]:
                return last[5].rebind(model)  # parameter names are sorted (check_params): equal sets, same order
            key = structure_key(model, convention)
        if key is not None:
            structure = self._structures.get(key)
            if structure is None and key not in self._structures and key in self._templates:
                structure = self._compiled(key, self._templates[key])  # the second model of a structure compiles it once
            if structure is not None:
                self._last = (model.kinds, model.flags, model.plan, convention, model.params.keys(), structure)
                return structure.rebind(model)
        from flopsreg.engine.compose import compose
        from flopsreg.engine.structure import rebindable

        plan = compose(self._registry, model, convention=convention, render=self._render, held=self.holdings)  # says what was expected of a non-Model
        if key is not None and key not in self._templates and rebindable(plan):
            _bounded_put(self._templates, key, plan)
        return plan

    def _compiled(self, key: Hashable, template: ModelSelection) -> Structure | None:
        """The Structure of *key*, compiled from its first model's selection *template*; None where
        its closed form has no exact compiled form with values as arguments (then each model is composed)."""
        from flopsreg.engine.structure import Structure

        try:
            structure: Structure | None = Structure(self._registry, template)
        except PatternError:
            structure = None
        _bounded_put(self._structures, key, structure)
        return structure


def _bounded_put(cache: dict[Any, Any], key: Any, value: Any) -> None:
    """``cache[key] = value``, dropping the oldest entry when a new key finds the cache full."""
    if key not in cache and len(cache) >= _PLAN_CACHE_SIZE:
        del cache[next(iter(cache))]
    cache[key] = value


__getattr__ = old_names(__name__)  # Evaluator, this cache's name until 0.1
