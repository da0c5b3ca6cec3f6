"""Megatron-LM's sliding windows: ``window_size`` and ``window_attn_skip_freq``.

``window_size`` is flash-attention's inclusive ``(left, right)``, so ``(127, 0)`` is 128 keys.
``window_attn_skip_freq`` N makes 1-based layer l slide iff l % N != 0; a 0/1 list marks the
sliding layers with 1; unset, every layer slides (``is_layer_window_attention``).
"""

import attrs

from flopsreg.patterns.sliding_window import SLIDING_WINDOW, WINDOW
from flopsreg.plugin import MegatronReader, ModelError, hookimpl, window_keys


def slides(args, layers: int) -> list[bool]:
    """Which of *layers* layers (1-based layer l at index l - 1) slide: ``is_layer_window_attention``."""
    skip = args.get("window_attn_skip_freq")
    if isinstance(skip, int) and not isinstance(skip, bool):
        if skip < 1:
            raise ModelError(f"args.window_attn_skip_freq = {skip}: expected an integer >= 1 or a list of 0/1")
        return [(i + 1) % skip != 0 for i in range(layers)]
    return args.layer_pattern("window_attn_skip_freq", layers, default_every=None)


def read(args, decoder):
    """The sliding layers and their window, when a finite window is set."""
    keys = window_keys(args.get("window_size"))
    if keys is None:
        return decoder
    attention = ["sliding" if slide else kind for slide, kind in zip(slides(args, len(decoder.attention)), decoder.attention)]
    kinds = {**decoder.attention_kinds, "sliding": (SLIDING_WINDOW.flags, {WINDOW.name: keys})}
    return attrs.evolve(decoder, attention=attention, attention_kinds=kinds)


READER = MegatronReader(
    name="window",
    arguments=("window_size", "window_attn_skip_freq"),
    read=read,
    precedence=10,
    summary="window_size (left, right) as left + 1 keys, on the layers window_attn_skip_freq leaves sliding",
)


@hookimpl
def flopsreg_register_megatron_readers():
    return [READER]
