"""What a reader plugin declares: the Hugging Face model types, layer types and Megatron-LM
argument features it reads. The registry loads them like patterns; the readers dispatch to them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

__all__ = ["HFLayerType", "HFReader", "MegatronReader"]


def _text(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{type(instance).__name__}.{attribute.name} = {value!r}: expected a non-empty string")


def _callable(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not callable(value):
        raise ValueError(f"{type(instance).__name__}.{attribute.name} = {value!r}: expected a function")


@attrs.frozen(kw_only=True)
class HFReader:
    """Reads the ``config.json`` of one Hugging Face ``model_type``.

    Attributes:
        name: the ``model_type``, e.g. ``"llama"``.
        read: ``read(fields) -> Decoder`` (see :mod:`flopsreg.readers.decoder`), given the strict
            field accessor :class:`flopsreg.readers.fields.Fields` of the config (or of its
            ``text_config`` for a wrapper).
        summary: one line: which transformers config class, and what it decides.
        text_config: for a multimodal wrapper: the model_type of the ``text_config`` that holds
            its decoder (then ``read`` is that type's reader's).
    """

    name: str = attrs.field(validator=_text)
    read: Callable[..., Any] = attrs.field(validator=_callable)
    summary: str = attrs.field(validator=_text)
    text_config: str | None = None


@attrs.frozen(kw_only=True)
class HFLayerType:
    """A ``layer_types`` string and what it means for a layer: flags, and parameters read from
    config fields (``{"window": "sliding_window"}``)."""

    name: str = attrs.field(validator=_text)
    flags: frozenset[str] = attrs.field(converter=frozenset)
    params: Mapping[str, str] = attrs.field(factory=dict)
    summary: str = attrs.field(validator=_text)


@attrs.frozen(kw_only=True)
class MegatronReader:
    """Reads one feature of Megatron-LM's arguments (e.g. a layer variant) into a model.

    Attributes:
        name: a unique name, e.g. ``"gated_delta_net"``.
        arguments: the argument names whose set value this reader handles; a run that sets an
            argument no reader claims is refused.
        read: ``read(args, decoder) -> decoder``: the decoder description with the feature applied.
        summary: one line.
    """

    name: str = attrs.field(validator=_text)
    arguments: tuple[str, ...] = attrs.field(converter=tuple)
    read: Callable[..., Any] = attrs.field(validator=_callable)
    summary: str = attrs.field(validator=_text)
