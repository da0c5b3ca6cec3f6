"""Strict reading of Hugging Face ``config.json`` fields: one clear error per bad field.

A :class:`Fields` wraps one config mapping (or its ``text_config``) and reads typed values
from it; it is what a Hugging Face reader plugin is given (see ``docs/hf-configs.md``). Every
error names the file, the field, the value and what was expected, e.g.
``config.json: hidden_size: missing (needed for model_type llama)``. :func:`gqa_params` and
:func:`head_dim_of` read the attention dimensions most decoder configs share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flopsreg.errors import MAX_INT, ModelError, did_you_mean

__all__ = ["Fields", "gqa_params", "head_dim_of"]


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


class Fields:
    """Typed access to the fields of one config mapping: a reader plugin reads the config only
    through it, so every bad value is one line naming the file, the field and the expectation.

    Args:
        data: the parsed config (or its ``text_config``).
        where: the file name shown first in errors (``config.json`` for a dict).
        model_type: the model_type whose reader asks, shown in "missing" errors.
        prefix: shown before field names, e.g. ``"text_config."``.
        aliases: the config class's ``attribute_map`` as ``{other name: name the reader reads}``;
            transformers accepts and may write either, so both are read as one field.
    """

    def __init__(
        self,
        data: Mapping[str, Any],
        *,
        where: str,
        model_type: str,
        prefix: str = "",
        aliases: Mapping[str, str] | None = None,
    ) -> None:
        self.where = where
        self.model_type = model_type
        self.prefix = prefix
        self.data = self._resolve(data, aliases or {})

    def _resolve(self, data: Mapping[str, Any], aliases: Mapping[str, str]) -> Mapping[str, Any]:
        """*data* with each alias stored under the name the reader reads; both and different: error."""
        resolved = dict(data)
        for alias, field in aliases.items():
            if alias not in resolved:
                continue
            value = resolved.pop(alias)
            if field in resolved and resolved[field] != value:
                raise self.error(
                    field,
                    f" = {resolved[field]!r} but {self.prefix}{alias} = {value!r}: the config class reads "
                    f"{alias} as {field} (attribute_map), so they must agree; keep one",
                )
            resolved[field] = value
        return resolved

    def error(self, field: str, message: str) -> ModelError:
        """A one-line error about *field*: ``<file>: <prefix><field><message>``."""
        return ModelError(f"{self.where}: {self.prefix}{field}{message}")

    def has(self, field: str) -> bool:
        """True if the config names *field* (even as null)."""
        return field in self.data

    def given(self, field: str) -> bool:
        """True if the config names *field* with a value other than null."""
        return self.data.get(field) is not None

    def string(self, field: str, default: str) -> str:
        """A string field; absent means the config class default *default* (cite it at the call)."""
        if field not in self.data:
            return default
        value = self.data[field]
        if not isinstance(value, str):
            raise self.error(field, f" = {value!r}: expected a string, got {_type_name(value)}")
        return value

    def missing(self, field: str, why: str = "") -> ModelError:
        """The error for an absent *field*, saying *why* it is needed (default: the model_type)."""
        why = why or f"needed for model_type {self.model_type}"
        return self.error(field, f": missing ({why})")

    def _check_int(self, field: str, value: Any, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(field, f" = {value!r}: expected an integer, got {_type_name(value)}")
        if value < minimum:
            raise self.error(field, f" = {value}: expected an integer >= {minimum}")
        if value > MAX_INT:
            raise self.error(field, f" = {value}: expected an integer <= 2^63 - 1 (a larger one is a typo)")
        return value

    def int(self, field: str, *, minimum: int = 1, why: str = "") -> int:
        """A required integer field (absent or null is an error)."""
        if self.data.get(field) is None:
            if field in self.data:
                raise self.error(field, f" = null: expected an integer >= {minimum} ({why or f'needed for model_type {self.model_type}'})")
            raise self.missing(field, why)
        return self._check_int(field, self.data[field], minimum)

    def optional_int(self, field: str, *, minimum: int = 1) -> int | None:
        """An integer field that may be absent or null (then None)."""
        value = self.data.get(field)
        return None if value is None else self._check_int(field, value, minimum)

    def int_or_default(self, field: str, default: int, *, minimum: int = 1) -> int:
        """An integer field; absent means the config class default *default* (cite it at the call)."""
        if field not in self.data:
            return default
        return self.int(field, minimum=minimum)

    def bool(self, field: str, *, default: bool | None = None) -> bool:
        """A boolean field; absent means *default* (None: required)."""
        if field not in self.data:
            if default is None:
                raise self.missing(field)
            return default
        value = self.data[field]
        if not isinstance(value, bool):
            raise self.error(field, f" = {value!r}: expected true or false, got {_type_name(value)}")
        return value

    def int_list(self, field: str, *, minimum: int = 0, maximum: int | None = None) -> list[int] | None:
        """A list of integers, or None when absent or null."""
        value = self.data.get(field)
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.error(field, f" = {value!r}: expected a list of integers, got {_type_name(value)}")
        for i, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, int) or item < minimum or (maximum is not None and item > maximum):
                bound = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
                raise self.error(f"{field}[{i}]", f" = {item!r}: expected an integer {bound}")
        return list(value)

    def layer_types(self, layers: int, allowed: tuple[str, ...]) -> list[str] | None:
        """``layer_types``: one string of *allowed* per layer, or None when absent or null.

        What each string means (flags, parameters) is declared by an
        :class:`~flopsreg.declarations.readers.HFLayerType` plugin; *allowed* are those this
        model_type's modeling code runs.
        """
        value = self.data.get("layer_types")
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.error("layer_types", f" = {value!r}: expected a list of strings, got {_type_name(value)}")
        if len(value) != layers:
            raise self.error(
                "layer_types", f": {len(value)} entries but num_hidden_layers = {layers}; expected one per layer"
            )
        for i, item in enumerate(value):
            if item not in allowed:
                raise self.error(
                    f"layer_types[{i}]",
                    f" = {item!r}: unsupported for model_type {self.model_type}"
                    f"{did_you_mean(str(item), allowed)} (expected one of: {', '.join(allowed)})",
                )
        return list(value)


def head_dim_of(fields: Fields, hidden: int, heads: int, class_default: int | None = None) -> int:
    """``head_dim`` if given; else the config class default *class_default* if the class has one
    (absent, not null); else ``hidden // heads``."""
    if fields.given("head_dim"):
        return fields.int("head_dim")
    if class_default is not None and not fields.has("head_dim"):
        return class_default
    return hidden // heads


def gqa_params(
    fields: Fields, *, heads: int | None = None, kv_heads: int | None = None, head_dim: int | None = None
) -> dict[str, int]:
    """The ``hidden``, ``heads``, ``kv_heads`` and ``head_dim`` parameters of grouped-query attention
    from ``hidden_size``, ``num_attention_heads``, ``num_key_value_heads`` and ``head_dim``;
    explicit arguments (class defaults the reader applies) override the config."""
    hidden = fields.int("hidden_size")
    heads = heads if heads is not None else fields.int("num_attention_heads")
    if kv_heads is None:
        # num_key_value_heads absent or null means multi-head attention (every config class).
        kv_heads = fields.optional_int("num_key_value_heads") or heads
    if head_dim is None:
        head_dim = head_dim_of(fields, hidden, heads)
    return {"hidden": hidden, "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim}
