"""Hugging Face ``config.json`` -> :class:`flopsreg.Model`: dispatch to the reader plugins.

A reader plugin claims a ``model_type`` with an :class:`~flopsreg.declarations.readers.HFReader` and
reads the config through the strict field accessor :class:`~flopsreg.readers.fields.Fields`
into a per-layer :class:`~flopsreg.readers.decoder.Decoder`; the ``layer_types`` strings it gives
get the flags and parameters their :class:`~flopsreg.declarations.readers.HFLayerType` declares. This
module only reads the file, finds the reader and builds the model: it names no model type.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from flopsreg.declarations.readers import TIED_HEAD_FLAG, HFLayerType, HFReader, family_flag
from flopsreg.errors import ModelError, did_you_mean
from flopsreg.model import Model, printable_name
from flopsreg.plugins.loader import PluginLoader, default_plugins
from flopsreg.readers.decoder import Decoder, TooManyListed, build_model, layers_with
from flopsreg.readers.fields import Fields
from flopsreg.readers.files import parse_json, read_text
from flopsreg.readers.towers import TOWER_PARAMETERS, read_towers, tower_parameters
from flopsreg.readers.transformers_types import unsupported_reason

__all__ = ["load_hf_config"]



def _read(config: str | Path | Mapping[str, Any]) -> tuple[Mapping[str, Any], str, str]:
    """(parsed config, label for errors, source)."""
    if isinstance(config, Mapping):
        return config, "config.json", ""
    if not isinstance(config, (str, Path)):
        raise ModelError(f"config: expected a path to config.json or a dict, got {type(config).__name__}")
    path = Path(config)
    data = parse_json(read_text(path, "config.json"), str(path))
    if not isinstance(data, dict):
        raise ModelError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data, str(path), str(path)


def _reader(data: Mapping[str, Any], where: str, readers: Mapping[str, HFReader]) -> HFReader:
    """The registered reader of the config's model_type."""
    supported = sorted(readers)
    if "model_type" not in data:
        raise ModelError(f"{where}: model_type: missing; supported: {', '.join(supported)}")
    value = data["model_type"]
    if not isinstance(value, str):
        raise ModelError(f"{where}: model_type = {value!r}: expected a string")
    if value not in readers:
        raise ModelError(f"{where}: model_type = {value!r}: unsupported{unsupported_reason(value, supported)}")
    return readers[value]


def _flat_text(data: Mapping[str, Any], reader: HFReader) -> dict[str, Any]:
    """The text_config a wrapper's class builds from a flat config (the Hub's, without one): the
    top-level keys its text config class takes (``reader.flat_text``)."""
    keys = [key for key in data if key != "model_type"] if reader.flat_text == ("*",) else reader.flat_text
    return {key: data[key] for key in keys if key in data}


def _within(data: Mapping[str, Any], where: str, reader: HFReader) -> tuple[Mapping[str, Any], str]:
    """The config that holds the wrapper's text_config, and its path for messages (``thinker_config.``):
    the wrapper's own, or the sub-config ``reader.within`` names (absent: the class default, empty)."""
    if not reader.within:
        return data, ""
    inner = data.get(reader.within)
    if inner is None:
        return {}, reader.within + "."
    if not isinstance(inner, Mapping):
        raise ModelError(f"{where}: {reader.within} = {inner!r:.60}: expected an object")
    return inner, reader.within + "."


def _fields(data: Mapping[str, Any], where: str, reader: HFReader, readers: Mapping[str, HFReader], at: str = "") -> tuple[HFReader, Fields]:
    """The reader that reads the decoder, and the fields it reads: the wrapper's text_config, if any
    (*at*: the path of the config *data* that holds it, for messages)."""
    if reader.text_config is None:
        return reader, Fields(data, where=where, model_type=reader.name, aliases=reader.aliases)
    expected = reader.text_config
    inner = readers.get(expected)
    if inner is None or inner.read is None:
        raise ModelError(
            f"{where}: model_type {reader.name} keeps its decoder in a text_config of model_type {expected!r}, "
            "which no plugin reads"
        )
    text = data.get("text_config")
    if text is None and reader.flat_text:  # errors name the fields where the flat config has them
        return inner, Fields(_flat_text(data, reader), where=where, model_type=expected, prefix=at, aliases=inner.aliases)
    if text is None:
        raise ModelError(f"{where}: {at}text_config: missing (model_type {reader.name} keeps its decoder there)")
    if not isinstance(text, Mapping):
        raise ModelError(f"{where}: {at}text_config = {text!r}: expected an object")
    # The wrapper config class builds its text config class from the dict whatever it says, so
    # an absent model_type is the expected one; a different one is refused.
    found = text.get("model_type", expected)
    if found != expected:
        raise ModelError(
            f"{where}: {at}text_config.model_type = {found!r}: unsupported for model_type {reader.name} "
            f"(expected {expected!r})"
        )
    return inner, Fields(text, where=where, model_type=expected, prefix=f"{at}text_config.", aliases=inner.aliases)


def _with_tying(decoder: Decoder, data: Mapping[str, Any], where: str, claimed: HFReader, fields: Fields) -> Decoder:
    """*decoder* with its head tied as the model transformers builds for the wrapper *claimed*
    ties it: by the text_config's ``tie_word_embeddings`` (as read), the wrapper's own, or either."""
    if claimed.text_config is None or claimed.tied_by == "text_config":
        return decoder
    at = f"{claimed.within}." if claimed.within else ""  # *data* is the sub-config holding the text_config
    tied = Fields(data, where=where, model_type=claimed.name, prefix=at).bool("tie_word_embeddings", default=claimed.tied_default)
    if claimed.tied_by == "either":
        tied = tied or fields.bool("tie_word_embeddings", default=False)
    return attrs.evolve(decoder, flags=(decoder.flags - {TIED_HEAD_FLAG}) | ({TIED_HEAD_FLAG} if tied else set()))


def _with_layer_types(decoder: Decoder, fields: Fields, layer_types: Mapping[str, HFLayerType]) -> Decoder:
    """*decoder* with its ``layer_types`` strings replaced by their declared kinds, flags and
    parameters, each parameter read from its config field; the kinds the reader defines itself
    in ``attention_kinds`` (a layer that no ``layer_types`` string describes alone) kept as they are."""
    kinds: dict[str, tuple[frozenset[str], dict[str, int]]] = {}
    named_by: dict[str, str] = {}  # kind -> the layer type that named it
    entries = decoder.attention.distinct()
    own = {entry: decoder.attention_kinds[entry] for entry in entries if entry in decoder.attention_kinds}
    named = {}  # entry -> the kind it names
    for entry in entries:
        declared = None if entry in own else layer_types.get(entry)
        if declared is None and entry not in own:
            raise ModelError(
                f"{fields.where}: model_type {fields.model_type}'s reader gives layer type {entry!r}, which no "
                f"plugin declares{did_you_mean(entry, layer_types)} (declare it with flopsreg_register_hf_layer_types)"
            )
        named[entry] = entry if declared is None else declared.kind
        other = named_by.setdefault(named[entry], entry)
        if other != entry:
            raise ModelError(
                f"{fields.where}: layer types {other!r} and {entry!r} both name layer kind {named[entry]!r}; "
                "give one HFLayerType another kind="
            )
        if declared is None:
            kinds[entry] = own[entry]
            continue
        why = f"layers {layers_with(decoder.attention, entry)} are {entry}"
        kinds[declared.kind] = (declared.flags, {param: fields.int(field, why=why) for param, field in declared.params.items()})
    return attrs.evolve(decoder, attention=decoder.attention.map(named.__getitem__), attention_kinds=kinds)


def _with_per_layer_config(decoder: Decoder, fields: Fields, reader: HFReader) -> Decoder:
    """*decoder* with transformers' ``per_layer_config`` applied: each layer it names gets the
    parameters the reader maps its attributes to, as a layer kind of its own where they differ."""
    value = fields.data.get("per_layer_config")
    if not value:
        return decoder
    where = f"{fields.where}: {fields.prefix}per_layer_config"
    if not isinstance(value, Mapping):
        raise ModelError(f"{where} = {value!r}: expected an object of layer index -> attributes")
    layers = len(decoder.attention)
    overrides: dict[int, dict[str, int]] = {}
    for key, entries in value.items():
        index = int(key) if isinstance(key, str) and key.isdigit() else None
        if index is None or index >= layers:
            raise ModelError(f"{where}: key {key!r}: expected a layer index below num_hidden_layers = {layers}")
        if not isinstance(entries, Mapping):
            raise ModelError(f"{where}[{key!r}] = {entries!r}: expected an object of attribute -> value")
        for attribute, number in entries.items():
            if attribute not in reader.per_layer:
                known = ", ".join(reader.per_layer) or "none"
                raise ModelError(
                    f"{where}[{key!r}].{attribute}: not read per layer by the {fields.model_type} reader"
                    f"{did_you_mean(str(attribute), reader.per_layer)} (it reads: {known})"
                )
            inner = Fields(entries, where=fields.where, model_type=fields.model_type, prefix=f"{fields.prefix}per_layer_config[{key!r}].")
            overrides.setdefault(index, {})[reader.per_layer[attribute]] = inner.int(attribute)
    attention, kinds = decoder.attention, dict(decoder.attention_kinds)
    for index, params in sorted(overrides.items()):
        base = attention[index]
        named = base + "".join(f"_{param}{number}" for param, number in sorted(params.items()))
        flags, own = kinds[base]
        kinds[named] = (flags, {**own, **params})
        try:
            attention = attention.replaced(index, named)
        except ModelError as exc:
            raise ModelError(f"{where}[{index!r}]: {exc}") from None
    return attrs.evolve(decoder, attention=attention, attention_kinds=kinds)


def _blocks(asked: Iterable[str], named: Mapping[str, bool], registry: PluginLoader) -> frozenset[str]:
    """The block names asked for, each declared by a plugin; ``NAME=True`` is deprecated."""
    asked = list(asked)
    for block, wanted in named.items():
        warnings.warn(
            f"load_hf_config({block}=...) is deprecated; use blocks=({block!r},)", DeprecationWarning, stacklevel=4
        )
        asked += [block] if wanted else []
    for block in asked:
        if block not in registry.blocks:
            raise ModelError(
                f"blocks: {block!r}: no plugin declares that block{did_you_mean(block, registry.blocks)} "
                f"(declared: {', '.join(registry.blocks) or 'none'})"
            )
    return frozenset(asked)


def load_hf_config(
    config: str | Path | Mapping[str, Any],
    *,
    registry: PluginLoader | None = None,
    blocks: Iterable[str] = (),
    name: str | None = None,
    **named_blocks: bool,
) -> Model:
    """A :class:`Model` from a Hugging Face ``config.json`` path or its parsed dict.

    Args:
        config: the path, or the parsed JSON object.
        registry: the plugins whose readers and layer types are used; default
            :func:`flopsreg.plugins.loader.default_plugins` (the built-in and installed plugins).
        blocks: the blocks of extra layers to count that the config declares but the Hugging Face
            forward pass does not run, e.g. ``("mtp",)`` for DeepSeek-V3's multi-token-prediction
            layers (``num_nextn_predict_layers``); a block the config does not declare adds nothing.
        name: the model name; default the config's ``_name_or_path``, else its model_type.
        named_blocks: the earlier spelling, deprecated (one release): ``NAME=True`` is
            ``blocks=(NAME,)``, e.g. ``mtp=True``.
    """
    registry = registry or default_plugins()
    asked = _blocks(blocks, named_blocks, registry)
    data, where, source = _read(config)
    claimed = _reader(data, where, registry.hf_readers)
    holder, at = _within(data, where, claimed)
    reader, fields = _fields(holder, where, claimed, registry.hf_readers, at)
    try:
        decoder = reader.read(fields)
    except TooManyListed as exc:  # raised where the layers are built, which knows no file or field
        raise ModelError(f"{where}: model_type {fields.model_type}: {exc} (a plan lists a prefix of layers, then repeats a cycle)") from None
    if not isinstance(decoder, Decoder):
        raise ModelError(
            f"{where}: model_type {fields.model_type}'s reader returned {type(decoder).__name__}, not a "
            "flopsreg.readers.decoder.Decoder"
        )
    decoder = _with_tying(decoder, holder, where, claimed, fields)
    # the type as the config states it (a wrapper's, not its text_config's)
    decoder = attrs.evolve(decoder, flags=decoder.flags | claimed.flags | {family_flag(claimed.name)})
    decoder = _with_layer_types(decoder, fields, registry.hf_layer_types)
    decoder = _with_per_layer_config(decoder, fields, reader)
    if name is None:
        # transformers writes _name_or_path as a string (the hub id or the local path it loaded): any
        # path, so characters a name may not hold are escaped rather than the file refused.
        top = Fields(data, where=where, model_type=claimed.name)
        name = printable_name(top.string("_name_or_path", "") if top.given("_name_or_path") else "", claimed.name)
    kept = {block: depth for block, depth in decoder.blocks.items() if block in asked}
    # a declared block not asked for: its plugin's flag says so, for conventions that always count it
    unasked = {
        registry.blocks[block].unasked_flag
        for block, depth in decoder.blocks.items()
        if depth > 0 and block not in asked and block in registry.blocks and registry.blocks[block].unasked_flag
    }
    decoder = attrs.evolve(decoder, flags=decoder.flags | unasked)
    model = build_model(decoder, name=name, source=source, blocks=kept)
    if not claimed.towers:
        return model
    if claimed.flat_text and not claimed.within and data.get("text_config") is None:  # a tower may read the text_config (its width)
        data = {**data, "text_config": _flat_text(data, claimed)}
    towers = read_towers(data, where, claimed)
    return attrs.evolve(model, towers=towers, params={**model.params, TOWER_PARAMETERS: tower_parameters(towers)})
