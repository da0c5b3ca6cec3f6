"""What a reader plugin declares: the Hugging Face model types, layer types and Megatron-LM
argument features it reads. The registry loads them like patterns; the readers dispatch to them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:  # its formulas are sympy's: not imported where a reader is only looked up
    from flopsreg.declarations.towers import HFTower

__all__ = ["TIED_BY", "TIED_HEAD_FLAG", "HFLayerType", "HFReader", "MegatronReader", "family_flag"]

# The flag of the built-in head pattern that computes the logits through the embedding matrix.
TIED_HEAD_FLAG = "tied_embeddings"
# Whose tie_word_embeddings ties a wrapper's head, as the model transformers builds reads it:
# its text_config's (the head lives in a text model built from it), the wrapper's own (the
# ...ForConditionalGeneration reads its own config), or either (the wrapper class forwards a true
# text_config value to its own, "pre-v5 saves placed tie_word_embeddings inside text_config").
TIED_BY = ("text_config", "wrapper", "either")


def _text(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{type(instance).__name__}.{attribute.name} = {value!r}: expected a non-empty string")


def _callable(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not callable(value):
        raise ValueError(f"{type(instance).__name__}.{attribute.name} = {value!r}: expected a function")


def _field_names(instance: Any, attribute: attrs.Attribute, value: Mapping[str, str]) -> None:
    for key, field in value.items():
        if not isinstance(key, str) or not isinstance(field, str) or not key or not field:
            raise ValueError(
                f"{type(instance).__name__}.{attribute.name} = {dict(value)!r}: expected names mapped to "
                "config field names (strings)"
            )


def _flag_names(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if isinstance(value, str) or not all(isinstance(flag, str) and flag.isidentifier() and flag.islower() for flag in value):
        raise ValueError(
            f"{type(instance).__name__}.{attribute.name} = {value!r}: expected a collection of lower_snake_case flag names"
        )


def _towers(instance: Any, attribute: attrs.Attribute, value: tuple[Any, ...]) -> None:
    parts = [getattr(tower, "part", None) for tower in value]
    if None in parts or len(set(parts)) != len(parts):
        raise ValueError(f"{type(instance).__name__}.{attribute.name} = {value!r:.80}: expected HFTower s of distinct parts")


def _names(instance: Any, attribute: attrs.Attribute, value: tuple[Any, ...]) -> None:
    if not all(isinstance(name, str) and name for name in value) or len(set(value)) != len(value):
        raise ValueError(f"{type(instance).__name__}.{attribute.name} = {value!r:.80}: expected distinct config field names")


def family_flag(model_type: str) -> str:
    """The flag every model read from a config.json of *model_type* carries (the outermost type,
    as the config states it): what conventions of systems that dispatch on ``config.model_type``
    (verl, torchtitan, Megatron-Bridge) select by."""
    return f"hf_{model_type}"


@attrs.frozen(kw_only=True)
class HFReader:
    """Reads the ``config.json`` of one Hugging Face ``model_type``.

    Attributes:
        name: the ``model_type``, e.g. ``"llama"``.
        summary: one line: which transformers config class, and what it decides.
        read: ``read(fields) -> Decoder``: given the strict field accessor
            :class:`flopsreg.readers.fields.Fields` of the config, the per-layer description
            (:class:`flopsreg.readers.decoder.Decoder`) whose ``attention`` entries are
            ``layer_types`` strings (see :class:`HFLayerType`).
        text_config: instead of ``read``, for a multimodal wrapper: the model_type of the
            ``text_config`` that holds its decoder; that type's reader reads it.
        aliases: the config class's ``attribute_map`` as ``{other name: field read}``: transformers
            accepts and may write either, so :class:`~flopsreg.readers.fields.Fields` reads both
            as one field.
        per_layer: the attributes a config of this type may set for single layers in
            transformers' ``per_layer_config`` (``{"05": {"head_dim": 512}}``), and the parameter
            each sets on those layers: ``{"head_dim": "head_dim"}``. Any other attribute there is
            refused by name: a reader that does not know it would count the layer wrongly.
        flags: further model-wide flags every model read under this ``model_type`` gets, beside
            its family flag (:func:`family_flag`), which every model read from a config.json
            carries. A wrapper's are given, not its text_config reader's: the wrapper is the type
            a system that dispatches on ``config.model_type`` sees.
        title: the family's name as people write it (``"GLM-5 Next"`` for ``glm5_next``): what a
            document about a model read under this ``model_type`` is titled when the config names
            no model (no ``_name_or_path``); None: the model_type, its underscores as spaces.
        flat_text: for a wrapper whose config class accepts a config without ``text_config`` (the
            Hub's flat configs: transformers builds the text config from the top-level keys its
            text config class takes), those keys, or ``("*",)``: every top-level key but
            ``model_type`` (a class that passes on all it does not take itself); empty: a config
            without ``text_config`` is refused.
        tied_by: for a wrapper, whose ``tie_word_embeddings`` ties the head (one of
            :data:`TIED_BY`): ``"text_config"``, the text_config reader decides; ``"wrapper"``, the
            wrapper's own (``tied_default`` when absent), whatever the text_config says;
            ``"either"``, tied when either is true.
        tied_default: the wrapper config class's default ``tie_word_embeddings``.
        within: for a wrapper whose language model and its text_config lie one level down, in
            a sub-config of another wrapper type (Qwen3-Omni's ``thinker_config``): that field.
            The text_config, ``flat_text`` and the tying are read there; ``towers`` give their
            paths from the top (``"thinker_config.vision_config"``). Empty: the text_config is
            the wrapper's own.
        towers: a multimodal wrapper's towers beside the language model
            (:class:`~flopsreg.declarations.towers.HFTower`), whose parameters ``params`` adds to
            the language model's; empty for a text-only model or a wrapper whose towers no
            plugin declares (its total is then the language model's, and says so).
    """

    name: str = attrs.field(validator=_text)
    summary: str = attrs.field(validator=_text)
    read: Callable[..., Any] | None = attrs.field(default=None, validator=attrs.validators.optional(_callable))
    text_config: str | None = attrs.field(default=None, validator=attrs.validators.optional(_text))
    aliases: Mapping[str, str] = attrs.field(factory=dict, validator=_field_names)
    per_layer: Mapping[str, str] = attrs.field(factory=dict, validator=_field_names)
    flags: frozenset[str] = attrs.field(default=(), converter=lambda v: v if isinstance(v, str) else frozenset(v), validator=_flag_names)
    title: str | None = attrs.field(default=None, validator=attrs.validators.optional(_text))
    towers: tuple[HFTower, ...] = attrs.field(default=(), converter=tuple, validator=_towers)
    flat_text: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=_names)
    tied_by: str = attrs.field(default="text_config", validator=attrs.validators.in_(TIED_BY))
    tied_default: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    within: str = ""

    def __attrs_post_init__(self) -> None:
        if (self.read is None) == (self.text_config is None):
            raise ValueError(
                f"HFReader {self.name!r}: give exactly one of read= (a reader) and text_config= (a wrapper)"
            )
        if self.text_config is None and (self.flat_text or self.tied_by != "text_config" or self.tied_default or self.within):
            raise ValueError(f"HFReader {self.name!r}: flat_text=, tied_by=, tied_default= and within= describe a wrapper; give text_config=")


@attrs.frozen(kw_only=True)
class HFLayerType:
    """A ``layer_types`` string and what it means for a layer: flags, and parameters read from
    config fields.

    Attributes:
        name: the string in ``layer_types``, e.g. ``"sliding_attention"``.
        flags: the flags a layer of this type gets, e.g. ``{"sliding_window"}``.
        params: its parameters and the config field each is read from, e.g.
            ``{"window": "sliding_window"}`` (a required integer >= 1 when a layer has this type).
        summary: one line.
        kind: the layer kinds' name for it when layers differ: ``name`` without ``_attention``
            (``sliding``).
    """

    name: str = attrs.field(validator=_text)
    flags: frozenset[str] = attrs.field(converter=lambda v: frozenset(v))  # not the builtin: see readers/decoder.py
    summary: str = attrs.field(validator=_text)
    params: Mapping[str, str] = attrs.field(factory=dict, validator=_field_names)
    kind: str = attrs.field(
        default=attrs.Factory(lambda self: self.name.removesuffix("_attention"), takes_self=True), validator=_text
    )


def _argument_names(value: Any) -> tuple[str, ...]:
    """One argument name or several, as a tuple (a bare string is one name, not its letters)."""
    return (value,) if isinstance(value, str) else tuple(value)


def _identifiers(instance: Any, attribute: attrs.Attribute, value: tuple[Any, ...]) -> None:
    bad = [name for name in value if not isinstance(name, str) or not name.isidentifier()]
    if not value or bad or len(set(value)) != len(value):
        raise ValueError(
            f"{type(instance).__name__}.{attribute.name} = {value!r}: expected distinct argparse destinations "
            "such as 'window_size' (args.<name>, underscores, not '--window-size')"
        )


def _integer(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if type(value) is not int:
        raise ValueError(f"{type(instance).__name__}.{attribute.name} = {value!r}: expected an integer")


@attrs.frozen(kw_only=True)
class MegatronReader:
    """Reads the Megatron-LM arguments it claims into the decoder description of a run.

    Each argument is read by the reader of highest precedence that claims it; two readers that
    claim one argument at equal precedence are a plugin fault. The readers run from the lowest
    precedence to the highest (by name within one precedence), each given the description the
    ones before it left, so a reader of higher precedence sees and may change what they read.

    Attributes:
        name: a unique name, e.g. ``"gated_delta_net"``.
        arguments: the argparse destinations it claims (``args.<name>``), e.g.
            ``("experimental_attention_variant", "linear_attention_freq")``.
        read: ``read(args, decoder) -> decoder``: *args* is a
            :class:`flopsreg.readers.megatron.Arguments` giving the arguments this reader won (one
            another reader won reads as unset); *decoder* the description so far (a
            :class:`flopsreg.readers.decoder.Decoder` with ``blocks``). Return it with the feature
            applied (``attrs.evolve``), or raise :class:`flopsreg.ModelError` in one line.
        summary: one line: which arguments, read as what.
        precedence: the highest claim on an argument wins it. The built-in readers claim theirs
            at 10 and refuse the variants flopsreg has no patterns for at 0.
    """

    name: str = attrs.field(validator=_text)
    arguments: tuple[str, ...] = attrs.field(converter=_argument_names, validator=_identifiers)
    read: Callable[..., Any] = attrs.field(validator=_callable)
    summary: str = attrs.field(validator=_text)
    precedence: int = attrs.field(default=0, validator=_integer)

    def clashes(self, other: MegatronReader) -> tuple[str, ...]:
        """The arguments this reader and *other* both claim at equal precedence: a tie no rule breaks."""
        if other.name == self.name or other.precedence != self.precedence:
            return ()
        return tuple(name for name in self.arguments if name in other.arguments)
