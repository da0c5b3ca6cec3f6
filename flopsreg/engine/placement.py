"""Where a sequence's images, videos and audio clips lie among its tokens, and what one step's
new tokens hold of them.

A sequence is its text with each image's, video's and audio clip's tokens inserted after
``positions[k]`` text tokens (by default every one before the text, as chat templates place them;
at one text position the images first, then the videos, then the clips). A step after a cached
prefix of P tokens (media tokens included) runs the language model over the tokens from P on,
and the towers encode the entries whose first token lies there: an entry whose first token is in
the cache was encoded by the step that first held it (vLLM's encoder cache), and attention from
new queries to its cached keys is causal (every key precedes the query).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from flopsreg.engine.media import Media, as_runs, sequence_flops
from flopsreg.errors import FlopsregError
from flopsreg.model import shown

__all__ = ["Placed", "place", "with_positions"]

# What a medium's entries are called in a position's error line: (one, several, with its article).
_WORDS = {"image": ("image", "images", "an image"), "video": ("video", "videos", "a video"), "audio": ("clip", "clips", "a clip")}


@attrs.frozen
class Placed:
    """What one sequence's media add to one step: the image, video and audio tokens among its new
    tokens, and the images (``encoded``), videos and clips it encodes (None: none), whose
    ``forward`` is the tower and their bidirectional pairs."""

    tokens: int
    encoded: Media | None
    # the language model's cross-attention layers over this step (Mllama's), per piece
    cross: dict[str, int] = attrs.field(factory=dict)
    # the videos and audio clips the step encodes (None: none), as ``encoded`` for the images
    videos: Media | None = None
    audio: Media | None = None
    # the language model's FLOPs for the bidirectional pairs of the blocks of a cut entry that lie
    # in this step (a video's frames after a cached prefix that ends between two of them)
    pairs: int = 0

    @property
    def media(self) -> tuple[Media, ...]:
        """The images, videos and audio clips this step encodes, in that order."""
        return tuple(held for held in (self.encoded, self.videos, self.audio) if held is not None)

    @property
    def forward(self) -> int:
        return sum(held.forward for held in self.media) + sum(self.cross.values()) + self.pairs


def with_positions(images: Media, positions: Any, field: str = "image_positions") -> Media:
    """*images* (videos, audio clips) placed after ``positions[k]`` text tokens each (one per
    entry, in order, not decreasing); None keeps every one before the text."""
    if positions is None:
        return images
    one, many, _ = _WORDS[images.rule.takes]
    if isinstance(positions, (str, bytes)) or not isinstance(positions, Iterable):
        raise FlopsregError(f"{field} = {shown(positions)}: expected one count of text tokens before each {one}")
    values = list(positions)
    if len(values) != len(images.plans):
        raise FlopsregError(f"{field}: {len(values)} positions for {len(images.plans)} {many}: expected one per {one}")
    for index, value in enumerate(values):
        if images.rule.first and value != 0:
            raise FlopsregError(f"{field}[{index}] = {shown(value)}: {images.title}'s {many} always come before the text (the model puts them there)")
        if type(value) is not int or value < 0:
            raise FlopsregError(f"{field}[{index}] = {shown(value)}: expected the text tokens before the {one}, an integer >= 0")
        if index and value < values[index - 1]:
            raise FlopsregError(
                f"{field}[{index}] = {value}: below the {one} before it ({values[index - 1]}): {many} are given in the order they appear"
            )
    return attrs.evolve(images, positions=tuple(values))


def place(media: Sequence[Media], text: int, cached: int) -> Placed:
    """The *media* of a sequence (its images, then its videos, then its audio clips; any may be
    absent) in a step that runs *text* new text tokens after *cached* tokens (media tokens
    included): the media tokens among the new tokens and the entries whose first token is new.
    An entry lies after ``positions[k]`` text tokens (none given: before the text); at one text
    position the images come first, then the videos, then the clips, each medium in its order. An entry of
    bidirectional tokens (Gemma 3's images) cut by the cache boundary is refused: its cached half
    was computed without the keys of the other half, which no count of one mask describes. An
    entry of several blocks (a Gemma 4 video's frames) may be cut between two of them or beside
    one (after a frame's ``<boi>``, before its ``<eoi>``): the step that held its first token
    encoded it whole (as any cut entry), this step adds its new blocks' pairs; a cut inside a
    block is refused. An entry whose runs hold no pair (bidirectional attention off) may be cut
    anywhere. A
    tower whose model puts its entries before the text itself (:attr:`MediaRule.first`, GIT's
    one ``pixel_values``, an image or a video) takes no other medium beside them."""
    first = next((held for held in media if held.rule.first), None)
    if first is not None and len(media) > 1:
        held = " and ".join(_WORDS[held.rule.takes][1] for held in media)
        raise FlopsregError(f"{first.title} takes its {_WORDS[first.rule.takes][1]} before the text from one input of the model: "
                            f"a sequence holds one medium there, not {held}")
    entries = sorted(
        ((images.positions[index] if images.positions else 0, medium, index, plan.tokens)
         for medium, images in enumerate(media) for index, plan in enumerate(images.plans)),
        key=lambda entry: entry[0],  # stable: images, videos, clips at one position, in order
    )
    spans: list[tuple[int, int, int]] = []  # (medium, start, end) in the order the sequence holds them
    before = 0
    for position, medium, _, tokens in entries:
        spans.append((medium, position + before, position + before + tokens))
        before += tokens
    in_cache = sum(min(max(cached - start, 0), end - start) for _, start, end in spans)
    total_text = cached - in_cache + text
    for images in media:
        for index, position in enumerate(images.positions):
            if position > total_text:
                raise FlopsregError(
                    f"{images.rule.takes}_positions[{index}] = {position}: after the sequence's {total_text} text tokens "
                    f"({cached - in_cache} cached, {text} new): {_WORDS[images.rule.takes][2]} lies within its sequence's text or at its end"
                )
    by_medium: list[list[tuple[int, int]]] = [[] for _ in media]
    pairs = 0
    for (_, _, index, _), (medium, start, end) in zip(entries, spans):
        by_medium[medium].append((start, end))  # entries of one medium keep their order (positions do not decrease)
        held = media[medium]
        if start < cached < end and held.rule.bidirectional is not None:
            pairs += held.run_pairs(_new_runs(held, index, start, end, cached))
    encoded: list[Media | None] = []
    for images, own in zip(media, by_medium):
        new = [index for index, (start, _) in enumerate(own) if start >= cached]
        encoded.append(None if not new else images if len(new) == len(own) else images.subset(new))
    step_end = cached + text + before - in_cache
    cross = {} if not media or media[0].rule.takes != "image" else _cross(media[0], by_medium[0], cached, step_end)
    taken = dict(zip((images.rule.takes for images in media), encoded))
    return Placed(tokens=before - in_cache, encoded=taken.get("image"), cross=cross, videos=taken.get("video"), audio=taken.get("audio"),
                  pairs=pairs)


def _new_runs(held: Media, index: int, start: int, end: int, cached: int) -> tuple[int, ...]:
    """The bidirectional runs of entry *index* (tokens *start* to *end*) that lie wholly after a
    cached prefix of *cached* tokens that cuts it: a cut may fall between two groups, or in a group
    before or after its run (:attr:`MediaRule.run_offset`); one inside a run of several tokens is
    refused (its cached part was computed without the keys of the rest). Runs of fewer than two
    tokens (use_bidirectional_attention off) add no pair: any cut is counted."""
    runs = held.rule.bidirectional(held.dims, held.plans[index])
    if all(n < 2 for n in as_runs(runs)):
        return ()
    group = (end - start) // len(runs) if isinstance(runs, tuple) and (end - start) % len(runs) == 0 else 0
    if group:
        whole, into = divmod(cached - start, group)
        offset = held.rule.run_offset
        if into <= offset:
            return runs[whole:]
        if into >= offset + runs[whole]:
            return runs[whole + 1:]
    between = (f", or outside its {len(runs)} blocks (every {group} tokens, each from token {held.rule.run_offset} of its group)"
               if group else "")
    raise FlopsregError(
        f"cached = {cached}: cuts {held.rule.takes} {index + 1} (tokens {start} to {end - 1}), whose tokens attend to each other "
        f"bidirectionally ({held.title}): give a cached prefix that ends before or after the {held.rule.takes}{between}"
    )


def _cross(images: Media, spans: list[tuple[int, int]], cached: int, end: int) -> dict[str, int]:
    """The cross-attention layers' FLOPs (Mllama's) for the step's positions ``cached`` to ``end``:
    processing_mllama's mask lets a position attend to the vision tokens of every image whose
    ``<|image|>`` token is at or before it; a position before the first image attends to none
    and its layer output is multiplied by 0 (not useful work); the keys and values of an image's
    vision tokens are computed by the step that encodes it (cached with the rest after)."""
    if images.cross is None:
        return {}
    _, kind, dims = images.cross
    queries = max(0, end - max(cached, spans[0][0]))
    pairs = sum(keys * max(0, end - max(cached, start)) for keys, (start, _) in zip(images.keys, spans))
    new = [keys for keys, (start, _) in zip(images.keys, spans) if start >= cached]
    return sequence_flops(kind, dims, queries, sum(new), pairs)

