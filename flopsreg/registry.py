"""The front end: :class:`Registry`, the loaded plugins together with selection, evaluation,
sweeps and comparisons.

It sits on top of every other module (registry -> select -> compose -> evaluate -> render) and
hands the renderers to the plans it makes, so that no lower module imports a higher one.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from flopsreg import render
from flopsreg._deprecated import old_names
from flopsreg.declarations.pattern import EXACT
from flopsreg.engine.compose import ModelSelection
from flopsreg.engine.evaluate import CompositionCache, Result, cached_list, evaluate, lengths_of, request_list
from flopsreg.engine.media import Media, pair_flops, plan_media, tower_kinds
from flopsreg.engine.placement import Placed, place, with_positions
from flopsreg.engine.sweep import grid_sweep, iter_grid, iter_sweep, sweep
from flopsreg.errors import FlopsregError, PluginError
from flopsreg.model import Model
from flopsreg.plugins.loader import PluginLoader

if TYPE_CHECKING:  # imported where used: an evaluation needs none of them
    from flopsreg.engine.compare import Comparison
    from flopsreg.engine.memory import Memory
    from flopsreg.engine.parameters import Parameters
    from flopsreg.engine.serving import Generation

__all__ = ["Registry"]


class Registry(PluginLoader):
    """All loaded plugins, and the entry point to evaluation.

    >>> reg = Registry.default()
    >>> [p.name for p in reg.patterns if p.slot == "attention.mask" and not p.flags & set(reg.conventions)]
    ['dynamic_mask_in_window', 'dynamic_mask', 'block_topk', 'dsa_kpool_topk_tail', 'dsa_kpool_topk', 'dsa_topk', 'chunked', 'sliding_window', 'hca_mask', 'csa_mask', 'local_chunks', 'full_bidirectional', 'full_causal']

    Args:
        plugins: extra plugin objects (modules, classes or instances with hookimpls).
        builtins: register the built-in plugins of :mod:`flopsreg.patterns` first.
        load_entry_points: then load installed plugins of the entry-point group ``flopsreg``
            (skipped when the environment sets ``FLOPSREG_DISABLE_PLUGIN_AUTOLOAD=1``).
        trust_builtins: skip the load-time checks for the built-ins (the test suite runs them
            with ``trust_builtins=False``); other plugins are always checked.
    """

    def __init__(
        self, plugins: Iterable[object] = (), *, builtins: bool = True, load_entry_points: bool = True, trust_builtins: bool = True
    ) -> None:
        _check_arguments(plugins, {"builtins": builtins, "load_entry_points": load_entry_points, "trust_builtins": trust_builtins})
        super().__init__(plugins, builtins=builtins, load_entry_points=load_entry_points, trust_builtins=trust_builtins)
        self._evaluator = CompositionCache(self, render)

    def __repr__(self) -> str:
        """Short: how many patterns and slots, and the conventions."""
        return f"Registry(patterns={len(self.patterns)}, slots={len(self.slots)}, conventions={list(self.conventions)!r})"

    def _repr_markdown_(self) -> str:
        """Jupyter: how many patterns fill each slot, in forward order (the list: :meth:`patterns_markdown`)."""
        return render.registry_markdown(self)

    def patterns_markdown(self) -> str:
        """Every registered pattern with its slot, flags, precedence and formula, as a Markdown table
        (in a notebook: ``IPython.display.Markdown(reg.patterns_markdown())``)."""
        return render.patterns_markdown(self)

    @classmethod
    def default(cls) -> Registry:
        """The built-in plugins plus every installed plugin."""
        return cls()

    def select(self, model: Model, *, convention: str = EXACT) -> ModelSelection:
        """Select a pattern for every slot of every layer kind of *model*, with the reasons, and
        compose the closed forms. Cached per (model, convention): both are immutable."""
        return self._evaluator.select(model, convention)

    def plan(self, model: Model, *, convention: str = EXACT) -> ModelSelection:
        """Deprecated (removed in 0.3): the earlier name of :meth:`select`."""
        warnings.warn("Registry.plan is deprecated and will be removed in 0.3: use Registry.select", DeprecationWarning, stacklevel=2)
        return self._evaluator.select(model, convention)

    def evaluate(
        self,
        model: Model,
        *,
        seq_len: int | None = None,
        seqlens: Sequence[int] | None = None,
        batch: int = 1,
        recompute: str = "none",
        convention: str = EXACT,
        cached: int | Sequence[int] = 0,
        logits: str | None = None,
        requests: Sequence[tuple[int, int]] | None = None,
        images: Sequence[tuple[int, int]] | None = None,
        image_tokens: Sequence[int] | None = None,
        image_positions: Sequence[int] | None = None,
        request_images: Sequence[Sequence[tuple[int, int]] | None] | None = None,
        audio: Sequence[Any] | None = None,
        audio_tokens: Sequence[int] | None = None,
        videos: Sequence[tuple[int, int, int]] | None = None,
        request_videos: Sequence[Sequence[tuple[int, int, int]] | None] | None = None,
        request_audio: Sequence[Sequence[Any] | None] | None = None,
        processor: Mapping[str, Any] | None = None,
        video_positions: Sequence[int] | None = None,
        audio_positions: Sequence[int] | None = None,
    ) -> Result:
        """Exact FLOPs of *model* for ``batch`` sequences of ``seq_len`` tokens, or a packed row.

        ``seqlens=[a, b, ...]`` is one packed row of independent sequences (attention does not
        cross them): it costs ``f(a) + f(b) + ...``; ``batch`` multiplies either form.
        ``recompute`` (``"none"``, ``"selective"``, ``"full"``) adds recomputed forward work to
        :attr:`Result.training`. ``convention`` counts the way another system does (see
        :attr:`conventions`); the default ``"exact"`` counts what the attention mask lets through.

        ``cached=P`` (an int, or one per entry of ``seqlens``): the sequences are ``seq_len`` new
        tokens after P tokens whose keys and values are in the KV cache (a decode step is
        ``seq_len=1``); attention covers the pairs the mask allows for the new queries against
        all P + N keys. ``logits="last"`` computes logits for the last position of each sequence
        only, as serving does; the default ``"all"`` is training's.

        ``requests=[(new_tokens, cached), ...]`` is one serving step of prefill chunks and decodes
        (instead of ``seq_len``, ``seqlens`` and ``cached``), each request with its own new tokens
        and cached context, logits at each one's last position unless ``logits`` says otherwise;
        :attr:`Result.per_request` gives each request's exact FLOPs.

        ``images=[(height, width), ...]`` (pixels) are the images every sequence holds, before its
        text: the vision tower encodes each (its family's resizing and token rule) and the language
        model runs over the text and image tokens; ``image_tokens=[n, ...]`` gives each image by
        the image tokens its processor expands it to instead (see docs/multimodal.md).
        :attr:`Result.images` says what each image became and what the tower spent.
        ``image_positions=[k, ...]`` places each image after k text tokens instead (one per
        image, in order). With ``cached=P`` the P cached tokens include the image tokens before
        them: an image whose first token is cached is not encoded again. ``request_images=[[(height,
        width), ...] or None, ...]`` gives each request of ``requests`` its own images, before
        its text; :attr:`Result.placed` says what each sequence's images add to the step.

        ``audio=[seconds, ...]`` are the audio clips every sequence holds, after its images and
        videos and before its text, each a length in seconds, exact (an int, a Fraction or a
        decimal string such as ``"2.5"``): the audio tower encodes each (its family's feature
        extractor and token rule) and the language model runs over their tokens too;
        ``audio_tokens=[n, ...]`` gives each clip by its audio tokens where that fixes the tower's
        FLOPs. :attr:`Result.audio`.

        ``videos=[(frames, height, width), ...]`` are the videos every sequence holds, after its
        images and before its audio clips and text, each frames as sampled (the processor pads
        them to whole temporal patches) in pixels: the vision tower encodes each by its family's
        video rule and the language model runs over their tokens too. :attr:`Result.videos`.
        Videos and clips ride the cache as images do: the P cached tokens include their tokens,
        and one whose first token is cached is not encoded again. ``request_videos=`` and
        ``request_audio=`` (one list or None per request, as ``request_images``) give each
        request of ``requests`` its own. ``video_positions=[k, ...]`` and ``audio_positions=[k, ...]``
        place each video (clip) after k text tokens, as ``image_positions`` places images (at one
        k: the images, then the videos, then the clips).

        ``processor={"max_pixels": 1003520}`` sets the options the family's processor was run
        with (its image rule's and video rule's ``options``: Qwen-VL's min_pixels and max_pixels,
        Gemma 4's max_soft_tokens...), the rest at their published defaults.
        """
        selection = self._evaluator.select(model, convention)
        if (images is None and image_tokens is None and image_positions is None and request_images is None
                and audio is None and audio_tokens is None and videos is None and request_videos is None
                and request_audio is None and processor is None and video_positions is None
                and audio_positions is None):  # text alone: the hot path, no tuple built
            return evaluate(selection, seq_len, seqlens, batch, recompute, cached, logits, requests)
        _processor_needs_media(processor, images, image_tokens, request_images, videos, request_videos)
        positions = (image_positions, video_positions, audio_positions)
        media = (images, image_tokens, positions, request_images, audio, audio_tokens, videos, request_videos, request_audio, processor)
        return self._evaluate_images(selection, seq_len, seqlens, batch, recompute, cached, logits, requests, *media)

    def image_towers(
        self, model: Model, takes: str = "image", kinds: Mapping[str, Any] | None = None,
    ) -> dict[str, tuple[str, Mapping[str, int], Any]]:
        """``{part: (title, dims, rule or None)}`` of *model*'s towers, the image rules (with
        ``takes="video"``, the video rules; ``"audio"``, the audio rules the kinds declare as their
        ``images``) found on the tower kinds its Hugging Face reader declares (*kinds*, when the
        caller has them already)."""
        kinds = tower_kinds(model, self.hf_readers) if kinds is None else kinds
        field = "videos" if takes == "video" else "images"
        return {part: (tower.title, tower.dims, getattr(kinds.get(part), field, None)) for part, tower in model.towers.items()}

    def _plan_media(self, model: Model, takes: str, given: Any, by_tokens: Any, convention: str, **options: Any) -> Media:
        """*model*'s images (videos, audio clips) of one sequence planned by :func:`plan_media`,
        its tower kinds looked up once for the towers and their closed forms."""
        kinds = tower_kinds(model, self.hf_readers)
        return plan_media(model.name, self.image_towers(model, takes, kinds), given, by_tokens, convention, kinds, takes=takes,
                           counts=lambda other: self._counts(model, other), **options)

    def _counts(self, model: Model, convention: str) -> bool:
        """Whether *convention* counts *model*'s language model (a refusal's suggestions name only those)."""
        try:
            self._evaluator.select(model, convention)
        except FlopsregError:
            return False
        return True

    def images(
        self, model: Model, *, images: Sequence[tuple[int, int]] | None = None, image_tokens: Sequence[int] | None = None,
        convention: str = EXACT, processor: Mapping[str, Any] | None = None,
    ) -> Media:
        """The images of one sequence as *model*'s vision tower takes them: each image's resized
        size, patch grid and tokens, and the tower's forward FLOPs per piece (exact, or as
        *convention* counts them; a convention with no term for the tower is refused), and the
        language model's work on the pairs its mask adds within each image (Gemma 3).
        *processor* sets the image processor's options (``{"max_pixels": 1003520}``)."""
        return self._plan_media(model, "image", images, image_tokens, convention, processor=processor,
                                pair=lambda slot, pairs: pair_flops(self._evaluator.select(model, convention).units, slot, pairs))

    def audio(
        self, model: Model, *, audio: Sequence[Any] | None = None, audio_tokens: Sequence[int] | None = None, convention: str = EXACT,
    ) -> Media:
        """The audio clips of one sequence as *model*'s audio tower takes them (each in seconds,
        or by its audio tokens): each clip's samples, spectrogram grid and tokens, and the tower's
        forward FLOPs per piece (exact; a convention with no term for the tower is refused)."""
        return self._plan_media(model, "audio", audio, audio_tokens, convention)

    def videos(
        self, model: Model, *, videos: Sequence[tuple[int, int, int]], convention: str = EXACT, processor: Mapping[str, Any] | None = None,
    ) -> Media:
        """The videos of one sequence as *model*'s vision tower takes them (each ``(frames, height,
        width)``): each video's resized size, patch grid and tokens, and the tower's forward FLOPs
        per piece (exact; a convention with no term for the tower is refused), and the language
        model's work on the pairs its mask adds within each frame's tokens (Gemma 4). *processor*
        sets the video processor's options."""
        return self._plan_media(model, "video", videos, None, convention, processor=processor,
                                pair=lambda slot, pairs: pair_flops(self._evaluator.select(model, convention).units, slot, pairs))

    def _evaluate_images(
        self, selection, seq_len, seqlens, batch, recompute, cached, logits, requests, images, image_tokens, positions, request_images,
        audio, audio_tokens, videos, request_videos, request_audio, processor,
    ) -> Result:
        """The language model over each sequence's text and new image, video and audio tokens, plus
        the towers for the images, videos and clips each sequence's step encodes (those not in its
        cached prefix), each sequence's media placed by :func:`~flopsreg.engine.placement.place`."""
        model, convention = selection.model, selection.convention
        shared = self._shared_media(model, convention, images, image_tokens, videos, audio, audio_tokens, processor, positions)
        own = {"request_images": request_images, "request_videos": request_videos, "request_audio": request_audio}
        if requests is not None:
            if seq_len is not None or seqlens is not None or not (type(cached) is int and cached == 0):
                raise FlopsregError("requests: give the (new_tokens, cached) pairs alone, without seq_len, seqlens or cached")
            lengths, prefixes = request_list(requests)
            held = list(zip(*(self._request_media(model, convention, name, given, len(lengths), planned, processor)
                              for (name, given), planned in zip(own.items(), shared))))
        else:
            for name, given in own.items():
                if given is not None:
                    raise FlopsregError(f"{name}: one list of {name[8:]} per request of requests=; give requests, or {name[8:]}= for every sequence")
            lengths = lengths_of(seq_len, seqlens)
            prefixes = cached_list(cached, lengths) or (0,) * len(lengths)
            held = [shared] * len(lengths)
        placed = tuple(place([each for each in media if each is not None], n, p) if any(media) else Placed(0, None)
                       for media, n, p in zip(held, lengths, prefixes))
        new = [n + p.tokens for n, p in zip(lengths, placed)]
        if requests is not None:
            result = evaluate(selection, batch=batch, recompute=recompute, logits=logits, requests=list(zip(new, prefixes)))
        else:
            one = seqlens is None
            result = evaluate(selection, new[0] if one else None, None if one else new, batch, recompute, cached, logits)
        extra = result.batch * sum(p.forward for p in placed)
        shown_images, shown_videos, shown_audio = shared
        if shown_images is not None and shown_images.cross is not None:  # the cross-attention layers over the row's sequences
            cross = {piece: sum(p.cross.get(piece, 0) for p in placed) for piece in placed[0].cross}
            shown_images = attrs.evolve(shown_images, cross_flops=cross)
        return attrs.evolve(result, forward=result.forward + extra, images=shown_images, placed=placed, videos=shown_videos, audio=shown_audio)

    def _shared_media(
        self, model: Model, convention: str, images: Any, image_tokens: Any, videos: Any, audio: Any, audio_tokens: Any,
        processor: Any, positions: tuple[Any, Any, Any] = (None, None, None),
    ) -> tuple[Media | None, Media | None, Media | None]:
        """The images, videos and audio clips every sequence holds, each planned once (None: none)
        and placed at its *positions* (image, video and audio positions; None: before the text)."""
        image_positions, video_positions, audio_positions = positions
        planned_images = planned_videos = planned_audio = None
        if images is not None or image_tokens is not None:
            planned_images = with_positions(self.images(model, images=images, image_tokens=image_tokens, convention=convention, processor=processor), image_positions)
        elif image_positions is not None:
            raise FlopsregError("image_positions: no images to place: give images= or image_tokens= beside it")
        if videos is not None:
            planned_videos = with_positions(self.videos(model, videos=videos, convention=convention, processor=processor), video_positions, "video_positions")
        elif video_positions is not None:
            raise FlopsregError("video_positions: no videos to place: give videos= beside it")
        if audio is not None or audio_tokens is not None:
            planned_audio = with_positions(self.audio(model, audio=audio, audio_tokens=audio_tokens, convention=convention), audio_positions, "audio_positions")
        elif audio_positions is not None:
            raise FlopsregError("audio_positions: no audio clips to place: give audio= or audio_tokens= beside it")
        return planned_images, planned_videos, planned_audio

    def _request_media(
        self, model: Model, convention: str, name: str, given: Any, requests: int, shared: Media | None, processor: Any,
    ) -> list[Media | None]:
        """The images (videos, audio clips) each request holds: *shared* (``images=``, ...) for
        every one, or each its own (*given*, the ``request_*=`` list named *name*)."""
        if given is None:
            return [shared] * requests
        medium = name[len("request_"):]
        if shared is not None:
            raise FlopsregError(f"{name}: give each request its {medium}, or {medium}= for every request, not both")
        shape = {"images": "(height, width) images", "videos": "(frames, height, width) videos", "audio": "audio clips in seconds"}[medium]
        if isinstance(given, (str, bytes)) or not isinstance(given, Sequence) or len(given) != requests:
            raise FlopsregError(f"{name} = {given!r:.60}: expected one list of {shape} per request ({requests})")
        plan = {"images": self.images, "videos": self.videos, "audio": self.audio}[medium]
        options = {} if medium == "audio" else {"processor": processor}  # the image and video processors' options
        return [None if not each else plan(model, convention=convention, **{medium: each}, **options) for each in given]

    def parameters(self, model: Model) -> Parameters:
        """Exact parameter counts of *model*: every weight its selected patterns hold (norms, biases,
        embedding and head included, a tied matrix once), the part a token uses, and by layer kind."""
        from flopsreg.engine.parameters import count_parameters

        return count_parameters(self, self._evaluator.select(model, EXACT))

    def memory(
        self,
        model: Model,
        *,
        seq_len: int,
        batch: int = 1,
        weights_dtype: str = "bf16",
        kv_dtype: str | None = None,
        state_dtype: str | None = None,
        experts_dtype: str | None = None,
    ) -> Memory:
        """Exact bytes *model* holds to serve ``batch`` sequences of ``seq_len`` tokens: weights, KV
        cache (each layer capped by its window) and recurrent states, by layer kind and in total.

        Dtypes: ``fp32``, ``bf16``, ``fp16``, ``fp8`` (``fp8_e4m3``, ``fp8_e5m2``), ``int8``,
        ``mxfp4``, ``nvfp4`` (docs/memory.md). ``kv_dtype`` and ``experts_dtype`` (the routed
        experts' weights) default to ``weights_dtype``; ``state_dtype`` to ``kv_dtype``."""
        from flopsreg.engine.memory import measure

        return measure(self._evaluator.holdings(model), seq_len, batch, weights_dtype, kv_dtype, state_dtype, experts_dtype)

    def generate(
        self,
        model: Model,
        *,
        prompt: int,
        new_tokens: int,
        batch: int = 1,
        convention: str = EXACT,
        images: Sequence[tuple[int, int]] | None = None,
        image_tokens: Sequence[int] | None = None,
        image_positions: Sequence[int] | None = None,
        videos: Sequence[tuple[int, int, int]] | None = None,
        audio: Sequence[Any] | None = None,
        audio_tokens: Sequence[int] | None = None,
        processor: Mapping[str, Any] | None = None,
        video_positions: Sequence[int] | None = None,
        audio_positions: Sequence[int] | None = None,
    ) -> Generation:
        """Exact FLOPs of generating *new_tokens* tokens after a *prompt*-token prompt: the prefill
        (logits at the last position) and the decode steps, per phase and per token. With
        ``images`` (or ``image_tokens``), ``videos`` or ``audio`` (``audio_tokens``), placed as
        :meth:`evaluate` places them (``image_positions``, ``video_positions``, ``audio_positions``), the prompt holds them: the prefill encodes them and runs over
        the prompt's text and media tokens, and each decode step attends to them in the cache;
        ``processor`` as :meth:`evaluate`'s."""
        from flopsreg.engine.serving import generate

        selection = self._evaluator.select(model, convention)
        given = {"images": images, "image_tokens": image_tokens, "image_positions": image_positions, "videos": videos, "audio": audio,
                 "audio_tokens": audio_tokens, "processor": processor, "video_positions": video_positions, "audio_positions": audio_positions}
        media = {key: value for key, value in given.items() if value is not None}
        if not media:
            return generate(selection, prompt, new_tokens, batch)
        return generate(selection, prompt, new_tokens, batch, step=lambda **phase: self.evaluate(model, convention=convention, **media, **phase))

    def sweep(
        self,
        model: Model,
        seq_len: Iterable[int] | int,
        *,
        batch: int = 1,
        convention: str = EXACT,
        dtype: type | None = None,
        params: Mapping[str, Iterable[int] | int] | None = None,
        images: Sequence[tuple[int, int]] | None = None,
        image_tokens: Sequence[int] | None = None,
        videos: Sequence[tuple[int, int, int]] | None = None,
        audio: Sequence[Any] | None = None,
        audio_tokens: Sequence[int] | None = None,
        processor: Mapping[str, Any] | None = None,
    ) -> Any:
        """Forward FLOPs of *model* for each sequence length in *seq_len* (a range, list, ...).

        Exact Python ints by default, from one compiled loop; ``dtype=float`` gives a numpy
        float64 array instead (needs numpy), for plotting: one vectorised expression, equal to the
        exact count wherever that is below 2**53, float64-rounded above. Training FLOPs are 3 x these.
        Every value is returned at once, so at most :data:`flopsreg.engine.sweep.MAX_SWEEP` (2**24)
        lengths are taken; more are refused with their number: stream them with :meth:`iter_sweep`.

        ``params={"hidden": [...], "heads": [...]}`` sweeps a grid: every combination of the
        values (the cartesian product, as ``itertools.product(*params.values(), lengths)``: the
        last parameter, then the length, varying fastest) of the parameters the model sets, each
        set wherever the model sets it (:meth:`Model.with_param`); *seq_len* may then be one int.
        Exact ints in that order (one flat list), or with ``dtype=float`` the exact values rounded
        to a float64 array shaped ``(len(values1), ..., len(valuesk))``, with a last axis for the
        lengths when *seq_len* is a list or range. Models of one structure are composed once and
        each point calls code compiled with the values as arguments; every point's values are
        checked as :meth:`evaluate` checks them. At most MAX_SWEEP points.

        ``images`` / ``image_tokens``, ``videos``, ``audio`` / ``audio_tokens`` (as :meth:`evaluate`
        takes them, planned once): each length is a sequence's text tokens, and every sequence
        holds the media before it. ``processor={"max_pixels": 1003520}`` (as :meth:`evaluate`'s)
        applies to every point: the media are planned once, with those options; a sweep over an
        option's values is one sweep per value.
        """
        if params is not None:
            self._no_grid_media(images, image_tokens, videos, audio, audio_tokens, processor)
            return grid_sweep(self._evaluator, model, convention, params, seq_len, batch=batch, dtype=dtype)
        planned = self.held_media(model, convention, images, image_tokens, videos, audio, audio_tokens, processor)
        return sweep(self._evaluator.select(model, convention), seq_len, batch=batch, dtype=dtype, media=planned)  # type: ignore[arg-type]

    def iter_sweep(
        self,
        model: Model,
        seq_len: Iterable[int] | int,
        *,
        batch: int = 1,
        convention: str = EXACT,
        params: Mapping[str, Iterable[int] | int] | None = None,
        images: Sequence[tuple[int, int]] | None = None,
        image_tokens: Sequence[int] | None = None,
        videos: Sequence[tuple[int, int, int]] | None = None,
        audio: Sequence[Any] | None = None,
        audio_tokens: Sequence[int] | None = None,
        processor: Mapping[str, Any] | None = None,
    ) -> Iterator[tuple[int, ...]]:
        """``(seq_len, forward FLOPs)`` rows of *model*, exact ints, computed a chunk of lengths at a
        time: memory stays flat whatever the number of lengths (a range of 10**12, an endless
        generator), and the first rows come at once. What ``flopsreg sweep`` streams.

        With ``params`` (see :meth:`sweep`): rows ``(value1, ..., valuek, seq_len, forward FLOPs)``
        over the grid, in :meth:`sweep`'s order, one parameter point at a time (no bound).
        ``images`` / ``image_tokens``, ``videos``, ``audio`` / ``audio_tokens`` and ``processor``: as
        :meth:`sweep`'s, planned once (memory stays flat)."""
        if params is not None:
            self._no_grid_media(images, image_tokens, videos, audio, audio_tokens, processor)
            return iter_grid(self._evaluator, model, convention, params, seq_len, batch)
        planned = self.held_media(model, convention, images, image_tokens, videos, audio, audio_tokens, processor)
        return iter_sweep(self._evaluator.select(model, convention), seq_len, batch=batch, media=planned)  # type: ignore[arg-type]

    def held_media(
        self, model: Model, convention: str, images: Any = None, image_tokens: Any = None, videos: Any = None, audio: Any = None,
        audio_tokens: Any = None, processor: Any = None,
    ) -> tuple[Media, ...]:
        """The images, videos and audio clips every sequence of a sweep holds, each planned once,
        in that order (empty: text alone); *processor* as :meth:`evaluate`'s."""
        _processor_needs_media(processor, images, image_tokens, videos)
        shared = self._shared_media(model, convention, images, image_tokens, videos, audio, audio_tokens, processor)
        return tuple(held for held in shared if held is not None)

    @staticmethod
    def _no_grid_media(*given: Any) -> None:
        """A grid over parameters changes the towers' dims too: its media (and their processor's
        options) are not swept yet."""
        *media, processor = given
        if all(value is None for value in media):
            _processor_needs_media(processor)
        if any(value is not None for value in given):
            raise FlopsregError("images: a sweep over params= takes no images, videos or audio (the towers' work depends on them); sweep lengths alone")

    def compare(
        self,
        model: Model,
        *,
        seq_len: int | None = None,
        seqlens: Sequence[int] | None = None,
        batch: int = 1,
        conventions: Sequence[str] | None = None,
        requests: Sequence[tuple[int, int]] | None = None,
        all_experts: bool = False,
        images: Sequence[tuple[int, int]] | None = None,
        image_tokens: Sequence[int] | None = None,
        image_positions: Sequence[int] | None = None,
        request_images: Sequence[Sequence[tuple[int, int]] | None] | None = None,
        videos: Sequence[tuple[int, int, int]] | None = None,
        audio: Sequence[Any] | None = None,
        audio_tokens: Sequence[int] | None = None,
        request_videos: Sequence[Sequence[tuple[int, int, int]] | None] | None = None,
        request_audio: Sequence[Sequence[Any] | None] | None = None,
        processor: Mapping[str, Any] | None = None,
        video_positions: Sequence[int] | None = None,
        audio_positions: Sequence[int] | None = None,
    ) -> Comparison:
        """*model* under exact and each convention (all registered ones by default), with the
        differences from exact traced to the slots and patterns that cause them; ``requests``
        (see :meth:`evaluate`) compares one serving step, and its bytes where a convention
        declares its framework's estimate (vLLM's) beside exact's least traffic (every routed
        expert read with ``all_experts``, see :meth:`~flopsreg.engine.evaluate.Result.traffic`).
        ``images``, ``videos``, ``audio`` and the other media keywords (see :meth:`evaluate`) ride
        every evaluation: a convention with no term for a tower shows its refusal line in the table."""
        from flopsreg.engine.compare import compare

        given = {"images": images, "image_tokens": image_tokens, "image_positions": image_positions, "request_images": request_images,
                 "videos": videos, "audio": audio, "audio_tokens": audio_tokens, "request_videos": request_videos, "request_audio": request_audio,
                 "processor": processor, "video_positions": video_positions, "audio_positions": audio_positions}
        media = {key: value for key, value in given.items() if value is not None}
        return compare(
            self, model, seq_len=seq_len, seqlens=seqlens, batch=batch, conventions=conventions, requests=requests, all_experts=all_experts,
            media=media,
        )


def _processor_needs_media(processor: Any, *media: Any) -> None:
    """The processor's options apply to images or videos: refused without any (*media*, the
    images, image tokens, videos... given)."""
    if processor is not None and all(given is None for given in media):
        raise FlopsregError(f"processor = {processor!r:.60}: no images or videos for the processor's options: give images= or videos= beside it")


def _check_arguments(plugins: object, switches: dict[str, object]) -> None:
    """The registry's arguments: a list of plugins (not one plugin alone) and switches that are
    True or False (``builtins="no"`` would count as true)."""
    if isinstance(plugins, (str, bytes)) or not isinstance(plugins, Iterable):
        name = getattr(plugins, "__name__", None) or f"{plugins!r:.60}"
        raise PluginError(name, f"passed alone as plugins ({type(plugins).__name__}): Registry takes a list of plugins, e.g. Registry([plugin])")
    for option, value in switches.items():
        if not isinstance(value, bool):
            raise FlopsregError(f"{option} = {value!r:.60}: expected True or False, got {type(value).__name__}")


__getattr__ = old_names(__name__)  # PluginRegistry and the loader functions this module held until 0.1
