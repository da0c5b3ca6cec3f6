"""The ``eager`` convention the recorded-forward tests count with: transformers' eager attention
computes every (query, key) pair of the rectangle and masks afterwards, which is what torch's
FlopCounterMode sees. Each test adds the other masks and indexers its family's eager path runs."""

from __future__ import annotations

import flopsreg
from flopsreg.declarations.symbols import s

EAGER = flopsreg.Convention(name="eager", summary="full s x s scores", reference="transformers eager attention")
RECTANGLE = flopsreg.Pattern(
    name="eager_rectangle",
    slot="attention.mask",
    flags={EAGER.name},
    precedence=1000,
    produces="pairs",
    formula=s**2,
    summary="every (query, key) pair is computed, then masked",
    reference="transformers eager_attention_forward",
)


class _EagerPlugin:
    def __init__(self, patterns: list[flopsreg.Pattern]) -> None:
        self._patterns = patterns

    @flopsreg.hookimpl
    def flopsreg_register_conventions(self):
        return [EAGER]

    @flopsreg.hookimpl
    def flopsreg_register_patterns(self):
        return self._patterns


def eager_registry(*patterns: flopsreg.Pattern) -> flopsreg.Registry:
    """The built-ins and the ``eager`` convention: the full rectangle, and *patterns*."""
    return flopsreg.Registry(plugins=[_EagerPlugin([RECTANGLE, *patterns])], load_entry_points=False)
