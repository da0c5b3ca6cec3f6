"""Where a sequence's images lie among its tokens, and what one step's new tokens hold of them.

A sequence is its text with each image's tokens inserted after ``positions[k]`` text tokens
(by default every image before the text, as chat templates place them). A step after a cached
prefix of P tokens (image tokens included) runs the language model over the tokens from P on,
and the tower encodes the images whose first token lies there: an image whose first token is in
the cache was encoded by the step that first held it (vLLM's encoder cache), and attention from
new queries to its cached keys is causal (every key precedes the query).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from flopsreg.engine.images import Images, sequence_flops
from flopsreg.errors import FlopsregError
from flopsreg.model import shown

__all__ = ["Placed", "place", "with_positions"]

@attrs.frozen
class Placed:
    """What one sequence's images add to one step: the image tokens among its new tokens, and the
    images it encodes (None: none), whose ``forward`` is the tower and their bidirectional pairs."""

    tokens: int
    encoded: Images | None
    # the language model's cross-attention layers over this step (Mllama's), per piece
    cross: dict[str, int] = attrs.field(factory=dict)

    @property
    def forward(self) -> int:
        return (0 if self.encoded is None else self.encoded.forward) + sum(self.cross.values())

def with_positions(images: Images, positions: Any, field: str = "image_positions") -> Images:
    """*images* placed after ``positions[k]`` text tokens each (one per image, in order, not
    decreasing); None keeps every image before the text."""
    if positions is None:
        return images
    if isinstance(positions, (str, bytes)) or not isinstance(positions, Iterable):
        raise FlopsregError(f"{field} = {shown(positions)}: expected one count of text tokens before each image")
    values = list(positions)
    if len(values) != len(images.plans):
        raise FlopsregError(f"{field}: {len(values)} positions for {len(images.plans)} images: expected one per image")
    for index, value in enumerate(values):
        if images.rule.first and value != 0:
            raise FlopsregError(f"{field}[{index}] = {shown(value)}: {images.title}'s images always come before the text (the model puts them there)")
        if type(value) is not int or value < 0:
            raise FlopsregError(f"{field}[{index}] = {shown(value)}: expected the text tokens before the image, an integer >= 0")
        if index and value < values[index - 1]:
            raise FlopsregError(
                f"{field}[{index}] = {value}: below the image before it ({values[index - 1]}): images are given in the order they appear"
            )
    return attrs.evolve(images, positions=tuple(values))

def place(images: Images, text: int, cached: int) -> Placed:
    """*images* in a sequence whose step runs *text* new text tokens after *cached* tokens (image
    tokens included): the image tokens among the new tokens and the images whose first token is new.
    An image of bidirectional tokens (Gemma 3's) cut by the cache boundary is refused: its cached
    half was computed without the keys of the other half, which no count of one mask describes."""
    positions = images.positions or (0,) * len(images.plans)
    spans, before = [], 0
    for position, plan in zip(positions, images.plans):
        spans.append((position + before, position + before + plan.tokens))
        before += plan.tokens
    in_cache = sum(min(max(cached - start, 0), end - start) for start, end in spans)
    total_text = cached - in_cache + text
    for index, position in enumerate(positions):
        if position > total_text:
            raise FlopsregError(
                f"image_positions[{index}] = {position}: after the sequence's {total_text} text tokens "
                f"({cached - in_cache} cached, {text} new): an image lies within its sequence's text or at its end"
            )
    for index, (start, end) in enumerate(spans):
        if start < cached < end and images.rule.bidirectional is not None:
            raise FlopsregError(
                f"cached = {cached}: cuts image {index + 1} (tokens {start} to {end - 1}), whose tokens attend to each other "
                f"bidirectionally ({images.title}): give a cached prefix that ends before or after the image"
            )
    new = [index for index, (start, _) in enumerate(spans) if start >= cached]
    encoded = None if not new else images if len(new) == len(spans) else images.subset(new)
    return Placed(tokens=before - in_cache, encoded=encoded, cross=_cross(images, spans, cached, cached + text + before - in_cache, new))


def _cross(images: Images, spans: list[tuple[int, int]], cached: int, end: int, new: list[int]) -> dict[str, int]:
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
    return sequence_flops(kind, dims, queries, sum(images.keys[i] for i in new), pairs)

