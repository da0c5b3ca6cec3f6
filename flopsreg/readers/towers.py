"""A multimodal wrapper's towers (vision and audio encoders, projectors) from its ``config.json``:
each declared :class:`~flopsreg.declarations.towers.HFTower` read into a :class:`~flopsreg.model.Tower`.

A sub-config that is absent is the class default, as transformers builds it (an optional tower,
such as Gemma 4's, is then not built); a field that is absent is the config class default its
:class:`~flopsreg.declarations.towers.Dim` gives. Counts are exact: the kind's formula with the
integers substituted must come to a whole number.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from flopsreg.errors import ModelError, did_you_mean
from flopsreg.model import Tower

if TYPE_CHECKING:
    from flopsreg.declarations.readers import HFReader
    from flopsreg.declarations.towers import Dim, HFTower

__all__ = ["TOWER_PARAMETERS", "read_towers", "tower_parameters"]

# The model parameter a wrapper with declared towers gets: the towers' weights outside
# nn.Embedding modules (what a convention counting per weight, such as transformers'
# Trainer, adds to the language model's).
TOWER_PARAMETERS = "vision_parameters"


def _holder(data: Mapping[str, Any], tower: HFTower, heads: list[str], where: str) -> Mapping[str, Any]:
    """The object at *heads* within *data* (``["token2wav_config", "dit_config"]``); an absent
    sub-config is the wrapper's own defaults for it (the tower's), else its class's (``{}``)."""
    holder = data
    for depth, head in enumerate(heads):
        inner = holder.get(head)
        if inner is None:
            inner = tower.absent if depth == 0 and head == tower.config else {}
        if not isinstance(inner, Mapping):
            raise ModelError(f"{where}: {'.'.join(heads[:depth + 1])} = {inner!r:.60}: expected an object")
        holder = inner
    return holder


def _value(data: Mapping[str, Any], tower: HFTower, dim: Dim, where: str) -> int:
    """The integer *dim* reads from the wrapper config *data* (its default when absent)."""
    if dim.derive is not None:  # computed from the tower's sub-config (its absent values) and the wrapper's
        sub = data.get(tower.config)
        if sub is not None and not isinstance(sub, Mapping):
            raise ModelError(f"{where}: {tower.config} = {sub!r:.60}: expected an object")
        try:
            return dim.derive(tower.absent if sub is None else sub, data)
        except ValueError as exc:
            raise ModelError(f"{where}: {tower.config}.{exc}") from None
    path = dim.field.replace("{tower}", tower.config)
    *heads, field = path.split(".")
    holder = _holder(data, tower, heads, where)
    shown = f"{where}: {path}"
    field, _, index = field.partition("[")  # "subsampling_conv_channels[1]": one entry of a list
    value = holder.get(field)
    if value is None and not (dim.read == "choice" and field in holder):  # a choice may be an explicit null
        value = dim.default
    for entry in index.removesuffix("]").split("][") if index else ():  # "kernel[0][1]": entry 1 of entry 0
        position = int(entry)
        if not isinstance(value, (list, tuple)) or len(value) <= position:
            raise ModelError(f"{where}: {path.partition('[')[0]} = {holder.get(field)!r:.60}: expected a list of more than {position} entries at [{entry}]")
        value = value[position]
    if dim.read == "choice":
        if value not in dim.choices:
            expected = ", ".join("null" if choice is None else repr(choice) for choice in dim.choices)
            names = [choice for choice in dim.choices if isinstance(choice, str)]
            hint = did_you_mean(value, names) if isinstance(value, str) else ""
            raise ModelError(f"{shown} = {value!r:.60}: expected one of {expected}{hint}")
        return dim.choices.index(value)
    if dim.read == "bool":
        if not isinstance(value, bool):
            raise ModelError(f"{shown} = {value!r}: expected true or false")
        return int(value)
    if dim.read == "count" and type(value) is int:
        return 1
    if dim.read == "count":
        if not isinstance(value, list) or not value:
            raise ModelError(f"{shown} = {value!r:.60}: expected an integer or a non-empty list")
        return len(value)
    if dim.read == "product":
        if not isinstance(value, list) or not value or not all(type(v) is int and v >= 1 for v in value):
            raise ModelError(f"{shown} = {value!r:.60}: expected a list of integers >= 1")
        product = 1
        for number in value:
            product *= number
        return product
    if dim.read == "inverse_square":
        if type(value) not in (int, float) or not 0 < value <= 1:
            raise ModelError(f"{shown} = {value!r:.60}: expected a ratio in (0, 1]")
        return int(round(1.0 / value**2))  # Llama4Processor's downsample_ratio, as it computes it
    if dim.read == "from_end":
        if type(value) is not int or value > -1:
            raise ModelError(f"{shown} = {value!r:.60}: expected a negative integer, an index counted from the end "
                             f"(read for the {tower.part} tower, {tower.kind.title})")
        return -value
    if type(value) is not int or value < 0:
        raise ModelError(f"{shown} = {value!r:.60}: expected an integer >= 0 (read for the {tower.part} tower, {tower.kind.title})")
    return value


def _count(expr: Any, dims: Mapping[str, int], tower: HFTower, where: str) -> int:
    """*expr* of the kind with the dims substituted: a whole number >= 0."""
    value = expr.subs({dim.symbol: dims[dim.name] for dim in tower.kind.dims})
    if not (value.is_Integer and value >= 0):
        raise ModelError(f"{where}: the {tower.part} tower ({tower.kind.title}) comes to {value} parameters, not a whole number >= 0")
    return int(value)


def _switch(data: Mapping[str, Any], tower: HFTower, where: str) -> bool:
    """The wrapper's boolean ``tower.when`` (its class default when absent): whether it builds *tower*."""
    value = data.get(tower.when, tower.when_default)
    if not isinstance(value, bool):
        raise ModelError(f"{where}: {tower.when} = {value!r:.60}: expected true or false")
    return value


def read_towers(data: Mapping[str, Any], where: str, reader: HFReader) -> dict[str, Tower]:
    """``{part: Tower}`` of every tower *reader* declares that the config *data* builds."""
    towers = {}
    for tower in reader.towers:
        sub = data.get(tower.config)
        if tower.optional and sub is None:
            continue
        if tower.when and not _switch(data, tower, where):
            continue
        found = sub.get("model_type", tower.model_type) if isinstance(sub, Mapping) else tower.model_type
        if tower.model_type is not None and found != tower.model_type:
            raise ModelError(
                f"{where}: {tower.config}.model_type = {found!r}: unsupported for model_type {reader.name}'s "
                f"{tower.part} tower (flopsreg counts {tower.model_type!r}, {tower.kind.title})"
            )
        for field, fixed in tower.fixed.items():
            *heads, name = f"{tower.config}.{field}".split(".")
            value = _holder(data, tower, heads, where).get(name, fixed)
            if value != fixed:
                raise ModelError(
                    f"{where}: {tower.config}.{field} = {value!r:.60}: unsupported for model_type {reader.name}'s "
                    f"{tower.part} tower (flopsreg counts {fixed!r}, {tower.kind.title})"
                )
        dims = {dim.name: _value(data, tower, dim, where) for dim in tower.kind.dims}
        towers[tower.part] = Tower(
            kind=tower.kind.name,
            title=tower.kind.title,
            dims=dims,
            parameters=_count(tower.kind.parameters, dims, tower, where),
            embeddings=_count(tower.kind.embeddings, dims, tower, where),
        )
    return towers


def tower_parameters(towers: Mapping[str, Tower]) -> int:
    """The towers' weights outside ``nn.Embedding`` modules (:data:`TOWER_PARAMETERS`)."""
    return sum(tower.parameters - tower.embeddings for tower in towers.values())
