"""What a reader plugin declares about a multimodal wrapper's other towers (vision encoder,
audio encoder, projector): the config values each reads and its parameters as a formula of them.

A :class:`TowerKind` is one kind of tower (a SigLIP ViT, Pixtral, Qwen3.5's ViT with its patch
merger...), declared once and used by every wrapper that builds it; an :class:`HFTower` places
one in a wrapper's config. flopsreg counts the FLOPs of the language model only: a tower's
parameters are counted so that ``params`` gives transformers' total of the whole model. A kind
holds its formulas as sympy expressions over its named dimensions; a kind that encodes images
declares its forward FLOPs the same way, per piece, over its dims and one image's patch grid
(:data:`IMAGE_GRID`): the one count of the tower (the engine compiles them once and sums them over
the images: ``flopsreg.engine.media.tower_flops``).

A kind that turns images into tokens declares a :class:`MediaRule`: the family's resizing and
token-count rule (an image in pixels -> a :class:`MediaPlan`), a function of the dims the tower
was read with, and the frameworks that count the tower their own way.
An audio encoder declares the same rule with ``takes="audio"``: a clip in samples -> a plan whose
grid is its spectrogram, ``(1, mel frames, mel bins)``, the symbols its closed forms are written over.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import sympy

from flopsreg._deprecated import old_names
from flopsreg.declarations.pattern import canonical

__all__ = [
    "CROSS_ATTENTION", "CROSS_ATTENTION_LATEX", "IMAGE_GRID", "IMAGE_GRID_LATEX", "MEDIA", "Dim", "HFTower", "MediaPlan", "MediaRule",
    "TowerKind", "where_symbol",
]

READS = ("int", "bool", "count", "product", "inverse_square", "choice", "from_end", "derived")  # how a Dim turns its config value into an int
# One image's patch grid (frames x rows x columns, MediaPlan.grid): the symbols a kind's FLOPs
# are written in beside its dims; the tower's FLOPs for several images are the sum over them.
IMAGE_GRID = sympy.symbols("t rows columns", integer=True, positive=True)
IMAGE_GRID_LATEX = ("t", "r", "c")  # how LaTeX writes them, beside a kind's short dims
# A cross-attention tower's work over one sequence (TowerKind.sequence_flops): the language model's
# positions in it (length), the vision tokens its images give as keys, and the (position, vision token)
# pairs its cross-attention mask allows.
CROSS_ATTENTION = sympy.symbols("length keys pairs", integer=True, nonnegative=True)
CROSS_ATTENTION_LATEX = (r"\ell", "v", "p")  # how LaTeX writes them: length, vision tokens, pairs
# What a rule takes (MediaRule.takes): images in pixels, videos in frames and pixels (a kind's
# TowerKind.videos rule), or audio clips in samples, whose grid is (1, real mel frames, mel bins)
# of the spectrogram the encoder runs over.
MEDIA = ("image", "audio", "video")


def _text(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{type(instance).__name__}.{attribute.name} = {value!r}: expected a non-empty string")


def _read(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value not in READS:
        raise ValueError(f"{type(instance).__name__}.{attribute.name} = {value!r}: expected one of {', '.join(READS)}")


@attrs.frozen
class Dim:
    """One config value a tower kind reads.

    Attributes:
        name: the symbol's name in the kind's formulas, e.g. ``"h"``.
        field: where it sits, relative to the wrapper's config: ``"vision_config.hidden_size"``,
            ``"text_config.hidden_size"``, or a top-level field such as ``"spatial_merge_size"``.
            ``{tower}`` stands for the tower's own sub-config (``vision_config``); a dotted path reads
            within nested sub-configs (``"{tower}.dit_config.hidden_size"``); a trailing
            ``[k]`` reads entry k of a list (``"{tower}.subsampling_conv_channels[1]"``), ``[k][j]``
            entry j of that (``"{tower}.sscp_conv_kernel_size[0][1]"``).
        default: the config class default, used when the field is absent (as transformers does).
        read: ``"int"`` an integer >= 0; ``"bool"`` true/false as 1/0; ``"count"`` an integer as
            1 and a list as its length (transformers' ``vision_feature_layer``); ``"product"`` a
            list of integers as their product (a merge kernel ``[2, 2]``); ``"inverse_square"`` a
            ratio r in (0, 1] as ``round(1 / r^2)`` (Llama 4's ``pixel_shuffle_ratio`` 0.5 as the
            4 patches each token takes, as Llama4Processor reads it); ``"choice"`` the
            value's index in ``choices`` (Gemma 4's ``use_bidirectional_attention``: null, "vision"); ``"from_end"`` a negative index counted from the end as its
            distance (``feature_layer = -2`` -> 2); ``"derived"`` computed by ``derive`` from the
            wrapper's config (a sum over the layers of a per-layer schedule, dots.3 note's experts).
        latex: how LaTeX writes its symbol (``"L"``, ``"n_{\\mathrm{ch}}"``); empty: its name,
            upright where it is longer than a letter.
        derive: with ``read="derived"``, ``derive(sub_config, wrapper_config) -> int`` (the tower's
            sub-config, or its ``absent`` values, and the whole wrapper config); it raises
            ``ValueError("field = value: why")`` for a config transformers refuses, which the
            reader reports under the sub-config's name. ``field`` and ``default`` then document
            the config value it mainly reads and its class-default result.
    """

    name: str = attrs.field(validator=_text)
    field: str = attrs.field(validator=_text)
    default: Any
    read: str = attrs.field(default="int", validator=_read)
    latex: str = ""
    choices: tuple[Any, ...] = attrs.field(default=(), converter=tuple)
    derive: Callable[[Mapping[str, Any], Mapping[str, Any]], int] | None = None

    def __attrs_post_init__(self) -> None:
        if bool(self.choices) != (self.read == "choice"):
            raise ValueError(f"Dim {self.name!r}: choices go with read='choice', and it needs them")
        if (self.derive is not None) != (self.read == "derived"):
            raise ValueError(f"Dim {self.name!r}: derive goes with read='derived', and it needs it")

    @property
    def symbol(self) -> sympy.Symbol:
        return sympy.Symbol(self.name, integer=True, nonnegative=True)


def where_symbol(name: str) -> sympy.Symbol:
    """The symbol of a named part of a tower kind's FLOPs (:attr:`TowerKind.flops_where`)."""
    return sympy.Symbol(name, integer=True, nonnegative=True)


def _formula(value: Any) -> sympy.Expr:
    """*value* as sympy builds it with evaluation on (the built-ins are imported with it off)."""
    return canonical(sympy.sympify(value))


def _dims(value: Any) -> tuple[Dim, ...]:
    dims = tuple(value)
    names = [dim.name for dim in dims]
    if len(set(names)) != len(names):
        raise ValueError(f"TowerKind dims: names {names!r} repeat one")
    for symbols, what in ((IMAGE_GRID, "the image grid's symbols"), (CROSS_ATTENTION, "the cross-attention's symbols")):
        taken = sorted(set(names) & {str(symbol) for symbol in symbols})
        if taken:
            raise ValueError(f"TowerKind dims: {taken} name {what}; rename the dim")
    return dims


def _formulas(value: Mapping[str, Any]) -> dict[str, sympy.Expr]:
    return {str(piece): _formula(expr) for piece, expr in dict(value).items()}


@attrs.frozen(kw_only=True)
class MediaPlan:
    """One image (or audio clip) as a family's processor turns it into tokens.

    Attributes:
        height, width: the image as given, in pixels (0, 0 when only its token count was given,
            and for a clip).
        resized: (height, width) after the processor's resizing ((0, 0) for a clip).
        grid: the patch grid the tower runs over, ``(frames, rows, columns)``; for a clip, its
            spectrogram ``(1, real mel frames, mel bins)``.
        tokens: the tokens it adds to the language model's sequence, the processor's wrapper
            tokens (begin and end of image or audio) included.
        samples: a clip's length in samples as the encoder takes it (after the processor's
            truncation); 0 for an image, or a clip given by its token count.
        frames: a video's frames as given (before the processor pads them to whole temporal
            patches); 0 for an image.
        grids: where the tower takes the plan as several clips, each its own attention span, the
            grid of each (Kimi K2.5's video chunks of up to ``temporal_patch_size`` frames); the
            closed forms are summed over them. Empty: the tower takes ``grid`` alone.
    """

    height: int
    width: int
    resized: tuple[int, int]
    grid: tuple[int, ...]
    tokens: int
    samples: int = 0
    frames: int = 0
    grids: tuple[tuple[int, ...], ...] = ()


@attrs.frozen(kw_only=True)
class MediaRule:
    """How a vision (or audio) tower kind turns images (clips) into tokens (what it costs to
    encode them is the kind's closed forms, :attr:`TowerKind.flops`).

    Attributes:
        summary: one line: the processor's resizing rule and where the rule comes from.
        plan: ``plan(dims, height, width) -> MediaPlan``; raises ``ValueError`` with the reason
            for an image the processor refuses. A rule that takes audio: ``plan(dims, samples)``.
        rules: lines for ``explain``: the tower's pieces and what each costs, in closed form.
        from_tokens: ``from_tokens(dims, n) -> MediaPlan`` of an image known by the number *n* of
            image tokens the processor expands it to (wrapper tokens not included), where that
            fixes the tower's FLOPs; None where they depend on the image's shape.
        shape_note: why the shape is needed, where ``from_tokens`` is None.
        bidirectional: ``bidirectional(dims, plan) -> n``, the run of *plan*'s tokens the language
            model attends to bidirectionally on top of its causal and sliding masks (Gemma 3's
            soft tokens), or a tuple of runs where a plan holds several blocks (each frame of a
            Gemma 4 video), its tokens then one equal group per run (the frame's wrappers and
            its run), so that a cached prefix may end between two groups or in a group outside its
            run; None: the image's tokens are causal like text.
        run_offset: with a tuple of runs, where each run begins within its group (Gemma 4: 1, after
            the frame's ``<boi>``), so that a cut in a group before or after its run is counted.
        pair_slot: with ``bidirectional``, the slot whose FLOPs are those of the attended pairs
            (linear in them): its cost at a one-token sequence is one more pair's, in each layer.
        layer_pairs: with ``bidirectional``, ``layer_pairs(dims, runs, flags, params) -> pairs``
            the mask adds to one layer of a layer kind (its pattern flags and params, e.g. its
            window) for the images' runs; None: ``n(n-1)/2`` per run on every layer (Gemma 3).
        conventions: ``{convention: flops}`` for the conventions that count the tower their own
            way (verl's estimator): ``flops(dims, plans) -> {piece: forward FLOPs}`` over the
            images of one sequence; under any other convention but the exact one a request with
            images is refused, naming the convention.
        refusals: ``{convention: why}`` for a convention without a term for the tower, where what
            that framework really does is worth saying (it raises, or counts only the tokens):
            said in the refusal.
        cross_part: the tower whose cross-attention layers inside the language model attend to
            the images' vision tokens (Mllama's ``cross_attention``), counted by its kind's
            :attr:`TowerKind.sequence_flops`; empty: the language model takes image tokens only.
        cross_keys: with ``cross_part``, ``cross_keys(dims, plan) -> n``, the vision tokens of
            *plan* the cross-attention layers take as keys (its real tiles' patches).
        most: the most images one sequence can carry (GIT's one image, its tokens a single
            bidirectional block); a request with more is refused. 0: any number.
        first: the model itself puts the images before the text (GitModel concatenates them):
            ``image_positions`` other than 0 are refused.
        takes: ``"image"`` (images in pixels) or ``"audio"`` (clips, given in seconds or by
            their tokens; ``plan`` takes the clip's samples).
        sampling_rate: for audio, the samples per second the feature extractor takes (a clip
            of s seconds is ``s x sampling_rate`` samples).
        axes: for audio, what the grid is and what its rows and columns are, for output:
            ``("spectrogram", "mel frames", "mel bins")``, or Gemma 4 unified's raw samples
            ``("grid", "frames", "samples a frame")``.
        options: ``{name: default}``, the options the family's processor takes that change its
            plan (Qwen-VL's ``min_pixels``, ``max_pixels``): a request's ``processor=`` values, else
            these defaults, are merged into the dims ``plan`` and ``from_tokens`` receive. An int
            default takes an integer >= 1, a bool default true or false; a str default names the
            kind's dim whose value is the default (Pixtral's ``longest_edge`` is the tower's
            ``image_size``, as the published processors set it) and takes an integer >= 1. The
            plan refuses (a ``ValueError``) a value its processor refuses or flopsreg does not count.
    """

    summary: str = attrs.field(validator=_text)
    plan: Callable[[Mapping[str, int], int, int], MediaPlan]
    rules: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    from_tokens: Callable[[Mapping[str, int], int], MediaPlan] | None = None
    shape_note: str = ""
    bidirectional: Callable[[Mapping[str, int], MediaPlan], int | tuple[int, ...]] | None = None
    pair_slot: str = ""
    run_offset: int = 0
    layer_pairs: Callable[[Mapping[str, int], Sequence[int], frozenset[str], Mapping[str, int]], int] | None = None
    conventions: Mapping[str, Callable[[Mapping[str, int], Sequence[MediaPlan]], dict[str, int]]] = attrs.field(factory=dict)
    refusals: Mapping[str, str] = attrs.field(factory=dict)
    cross_part: str = ""
    cross_keys: Callable[[Mapping[str, int], MediaPlan], int] | None = None
    most: int = 0
    first: bool = False
    takes: str = attrs.field(default="image", validator=attrs.validators.in_(MEDIA))
    sampling_rate: int = 0
    axes: tuple[str, str, str] = ("spectrogram", "mel frames", "mel bins")
    options: Mapping[str, int | bool | str] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        for name, default in self.options.items():
            if isinstance(default, str) and default.strip():
                continue  # a dim's name: TowerKind checks that it declares it
            if not isinstance(default, int) or not isinstance(default, bool) and default < 1:
                raise ValueError(f"MediaRule.options[{name!r}] = {default!r}: expected an int >= 1 or a bool default")
        if self.bidirectional is not None and not self.pair_slot:
            raise ValueError("MediaRule.bidirectional needs pair_slot: the slot that costs the language model's attended pairs")
        if bool(self.cross_part) != (self.cross_keys is not None):
            raise ValueError("MediaRule.cross_part and cross_keys go together: the cross-attention tower and the keys of each image")
        if self.layer_pairs is not None and self.bidirectional is None:
            raise ValueError("MediaRule.layer_pairs needs bidirectional: the runs of tokens whose pairs it counts")
        if self.run_offset and (self.bidirectional is None or self.run_offset < 0):
            raise ValueError(f"MediaRule.run_offset = {self.run_offset}: expected >= 0, with bidirectional (where its runs sit in their groups)")
        if (self.takes == "audio") != (self.sampling_rate > 0):
            raise ValueError(f"MediaRule.sampling_rate = {self.sampling_rate}: expected > 0 exactly for a rule that takes audio")

    def planning(self, dims: Mapping[str, int], options: Mapping[str, int | bool] | None = None) -> dict[str, int | bool]:
        """What ``plan`` and ``from_tokens`` read: the tower's *dims*, each option at its default (a
        str default: that dim's value) and the *options* a request set over them."""
        defaults = {name: dims[default] if isinstance(default, str) else default for name, default in self.options.items()}
        return {**dims, **defaults, **(options or {})}


@attrs.frozen(kw_only=True)
class TowerKind:
    """One kind of non-text tower, its parameters a formula of the config values it reads.

    Attributes:
        name: a unique name, e.g. ``"siglip_vision"``.
        title: for output, e.g. ``"SigLIP ViT"``.
        summary: one line: which transformers module, and what it holds.
        dims: the config values read (:class:`Dim`), the formulas' only symbols.
        parameters: ``sum(p.numel())`` of the module as a formula of the dims.
        embeddings: the part of it held in ``nn.Embedding`` weights (what
            ``num_parameters(exclude_embeddings=True)`` leaves out); 0 when there is none.
        reference: the transformers module it counts (file and class).
        images: how it encodes images (:class:`MediaRule`); None: its FLOPs are not counted,
            and a request with images is refused for it.
        videos: how it encodes videos, the family's video processor rule (a :class:`MediaRule`
            whose ``plan`` is ``plan(dims, frames, height, width)``), counted by the same closed
            forms over the video's grid; None: a request with videos is refused for it.
        flops: the forward FLOPs of one image per piece (``patch_embed``, ``blocks.attention``...),
            closed forms over the dims and the image's patch grid (:data:`IMAGE_GRID`): the count
            of the tower for a request's images (their sum over the images); empty where the kind
            has none.
        flops_where: named parts of those forms (``{"k": floor(window / (merge patch))}``), each
            over the dims, the grid and the names before it, so that a form reads as it is
            derived; the named symbols are integers >= 0.
        sequence_flops: a cross-attention tower's forward FLOPs for one sequence per piece, closed
            forms over the dims and :data:`CROSS_ATTENTION` (length, keys, pairs); empty
            where the kind has none.
    """

    name: str = attrs.field(validator=_text)
    title: str = attrs.field(validator=_text)
    summary: str = attrs.field(validator=_text)
    dims: tuple[Dim, ...] = attrs.field(converter=_dims)
    parameters: sympy.Expr = attrs.field(converter=_formula)
    embeddings: sympy.Expr = attrs.field(default=0, converter=_formula)
    reference: str = attrs.field(validator=_text)
    images: MediaRule | None = None
    videos: MediaRule | None = None
    flops: Mapping[str, sympy.Expr] = attrs.field(factory=dict, converter=_formulas)
    flops_where: Mapping[str, sympy.Expr] = attrs.field(factory=dict, converter=_formulas)
    sequence_flops: Mapping[str, sympy.Expr] = attrs.field(factory=dict, converter=_formulas)

    def __attrs_post_init__(self) -> None:
        known = {dim.symbol for dim in self.dims}
        for name in ("parameters", "embeddings"):
            extra = getattr(self, name).free_symbols - known
            if extra:
                raise ValueError(f"TowerKind {self.name!r}: {name} uses {sorted(map(str, extra))}, which no dim declares")
        names = {dim.name for dim in self.dims}
        for field in ("images", "videos"):
            rule = getattr(self, field)
            for option, default in (rule.options.items() if rule is not None else ()):
                if isinstance(default, str) and default not in names:
                    raise ValueError(f"TowerKind {self.name!r}: {field}.options[{option!r}] = {default!r} names no dim of the kind")
        for piece, expr in self.sequence_flops.items():
            self._check(f"sequence_flops[{piece!r}]", expr, known | set(CROSS_ATTENTION))
        known |= set(IMAGE_GRID)
        for name, expr in self.flops_where.items():
            self._check(f"flops_where[{name!r}]", expr, known)
            known.add(where_symbol(name))
        for piece, expr in self.flops.items():
            self._check(f"flops[{piece!r}]", expr, known)

    def _check(self, where: str, expr: sympy.Expr, known: set[sympy.Symbol]) -> None:
        extra = expr.free_symbols - known
        if extra:
            raise ValueError(f"TowerKind {self.name!r}: {where} uses {sorted(map(str, extra))}, which no dim declares")

    def closed_forms(self) -> dict[str, sympy.Expr]:
        """``flops`` with the named parts of ``flops_where`` written out: over the dims and the grid."""
        forms = dict(self.flops)
        for name, expr in reversed(self.flops_where.items()):
            forms = {piece: form.subs(where_symbol(name), expr) for piece, form in forms.items()}
        return forms

    def dim(self, name: str) -> sympy.Symbol:
        """The symbol of the dim *name*, for writing the formulas."""
        return next(dim.symbol for dim in self.dims if dim.name == name)


@attrs.frozen(kw_only=True)
class HFTower:
    """A tower a multimodal wrapper builds beside its language model.

    Attributes:
        part: its name in the output, e.g. ``"vision"``, ``"projector"``.
        kind: what it is (:class:`TowerKind`).
        config: the wrapper's field holding the tower's own sub-config (``"vision_config"``):
            ``{tower}`` in the kind's fields stands for it.
        model_type: where the wrapper's config class picks the sub-config's class by its
            ``model_type`` (``AutoConfig``), the one the kind counts (``"siglip_vision_model"``):
            a sub-config naming another is refused by name. None: the class is fixed, whatever
            the sub-config says, as transformers builds it.
        absent: the values the wrapper's config class gives an absent sub-config (its
            ``SubConfigSpec.init_kwargs``); a sub-config that is given takes the class defaults
            of the kind's dims for the fields it leaves out, as transformers does.
        optional: transformers builds the tower only when ``config`` is set (Gemma 4's
            vision and audio towers); otherwise an absent sub-config is the class default.
        fixed: fields of the sub-config that choose the module itself, each with the one value
            the kind counts, its class default (Gemma 3n's timm ``architecture``; a dotted path within
            a nested sub-config, ``"dit_config.enc_kernel_sizes"``); another value is refused by name.
        when: a boolean field of the wrapper's config that builds the tower when true, its class
            default ``when_default`` when absent (Qwen2.5-Omni's ``enable_audio_output`` builds the
            talker and token2wav); empty: the tower is built whatever the config says.
    """

    part: str = attrs.field(validator=_text)
    kind: TowerKind
    config: str = attrs.field(validator=_text)
    model_type: str | None = attrs.field(default=None, validator=attrs.validators.optional(_text))
    absent: Mapping[str, Any] = attrs.field(factory=dict)
    optional: bool = False
    fixed: Mapping[str, Any] = attrs.field(factory=dict)
    when: str = ""
    when_default: bool = True


__getattr__ = old_names(__name__)  # ImageRule and ImagePlan, these classes' earlier names
