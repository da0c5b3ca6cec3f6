"""flopsreg model files: strict TOML in, canonical TOML out.

Every table accepts only its known keys; an unknown key is an error naming the closest valid
one. Numbers must be TOML integers (``1024``, never ``1e3`` or ``1024.0``).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flopsreg.errors import ModelError, did_you_mean
from flopsreg.model import LayerKind, Model, Plan, Repeated, Tower, check_flags, check_int, check_params
from flopsreg.readers.files import check_nesting, read_text, too_deep

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["dump_model", "load_model", "parse_model"]

TOP_KEYS = ("name", "source", "flags", "params", "kinds", "plan", "towers")
KIND_KEYS = ("flags", "params", "weight_copies")
TOWER_KEYS = ("kind", "title", "parameters", "embeddings", "dims")
PLAN_KEYS = ("layers", "uniform", "cycle", "list", "first")  # any other key names a block of extra layers
REPEATED_KEYS = ("kinds", "depth")  # a block as the kinds of one depth and the number of depths


def load_model(path: str | Path) -> Model:
    """Read the model file at *path*."""
    path = Path(path)
    text = read_text(path, "model file")
    return parse_model(text, where=str(path))


def parse_model(text: str, *, where: str = "<string>") -> Model:
    """Parse model-file text; errors start with *where* and name the offending key."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ModelError(f"{where}: not valid TOML: {exc}") from exc
    except RecursionError:  # arrays or inline tables nested thousands deep: the parser recurses
        raise too_deep(where) from None
    check_nesting(data, where)
    try:
        return _model(data)
    except ModelError as exc:
        raise ModelError(f"{where}: {exc}") from None


def _known(table: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in table:
        if key not in allowed:
            raise ModelError(
                f"{where}{key}: unknown key{did_you_mean(key, allowed)} (valid keys: {', '.join(allowed)})"
            )


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ModelError(f"{where} = {value!r}: expected a string")
    return value


def _names(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ModelError(f"{where} = {value!r}: expected a list of layer-kind names")
    return tuple(value)


def _table(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ModelError(f"{where}: expected a table, got {value!r}")
    return value


def _model(data: Mapping[str, Any]) -> Model:
    _known(data, TOP_KEYS, "")
    if "name" not in data:
        raise ModelError("name: missing; every model file names its model")
    if "plan" not in data:
        raise ModelError("plan: missing; say which kind each layer is, e.g. plan = { layers = 32, uniform = \"dense\" }")
    if "kinds" not in data:
        raise ModelError("kinds: missing; define at least one layer kind, e.g. [kinds.dense]")
    kinds = {}
    for name, table in _table(data["kinds"], "kinds").items():
        table = _table(table, f"kinds.{name}")
        _known(table, KIND_KEYS, f"kinds.{name}.")
        kinds[name] = LayerKind(
            flags=check_flags(f"kinds.{name}.flags", table.get("flags", [])),
            params=check_params(f"kinds.{name}.params", table.get("params", {})),
            weight_copies=table.get("weight_copies"),
        )
    return Model(
        name=_string(data["name"], "name"),
        source=_string(data.get("source", ""), "source"),
        flags=check_flags("flags", data.get("flags", [])),
        params=check_params("params", data.get("params", {})),
        kinds=kinds,
        plan=_plan(_table(data["plan"], "plan")),
        towers={part: _tower(_table(table, f"towers.{part}"), f"towers.{part}") for part, table in _table(data.get("towers", {}), "towers").items()},
    )


def _tower(table: Mapping[str, Any], where: str) -> Tower:
    """A multimodal wrapper's tower: its kind, title and parameters (FLOPs are not counted)."""
    _known(table, TOWER_KEYS, f"{where}.")
    for key in ("kind", "title", "parameters"):
        if key not in table:
            raise ModelError(f"{where}.{key}: missing; a tower gives kind, title and parameters")
    return Tower(
        kind=_string(table["kind"], f"{where}.kind"),
        title=_string(table["title"], f"{where}.title"),
        parameters=check_int(f"{where}.parameters", table["parameters"], 0),
        embeddings=check_int(f"{where}.embeddings", table.get("embeddings", 0), 0),
        dims=check_params(f"{where}.dims", table.get("dims", {})),
    )


def _plan(table: Mapping[str, Any]) -> Plan:
    blocks = {}
    for key, value in table.items():
        if key not in PLAN_KEYS and isinstance(value, Mapping):
            blocks[key] = _repeated(value, f"plan.{key}")
        elif key not in PLAN_KEYS:
            if not isinstance(value, list):  # a block lists layer kinds; anything else is a typo
                raise ModelError(
                    f"plan.{key} = {value!r}: unknown key{did_you_mean(key, PLAN_KEYS)} (valid keys: "
                    f"{', '.join(PLAN_KEYS)}, or a block of extra layers as a list of kinds, e.g. draft = [\"dense\"])"
                )
            blocks[key] = _names(value, f"plan.{key}")
    shapes = [key for key in ("uniform", "cycle", "list") if key in table]
    if len(shapes) != 1:
        raise ModelError(
            f"plan: give exactly one of uniform, cycle or list (found {', '.join(shapes) or 'none'})"
        )
    shape = shapes[0]
    if shape == "list":
        if "first" in table or "layers" in table:
            raise ModelError("plan.list: a list names every layer, so it takes no 'first' or 'layers'")
        kinds = _names(table["list"], "plan.list")
        return Plan(layers=len(kinds), first=kinds, blocks=blocks)
    if "layers" not in table:
        raise ModelError(f"plan.layers: missing; how many layers does the {shape} plan fill?")
    cycle = (_string(table["uniform"], "plan.uniform"),) if shape == "uniform" else _names(table["cycle"], "plan.cycle")
    if not cycle:
        raise ModelError("plan.cycle: empty; name at least one layer kind")
    return Plan(
        layers=table["layers"],
        first=_names(table.get("first", []), "plan.first"),
        cycle=cycle,
        blocks=blocks,
    )


def _repeated(table: Mapping[str, Any], where: str) -> Repeated:
    """A block written ``{ kinds = [...], depth = N }``: the kinds of one depth, N depths."""
    _known(table, REPEATED_KEYS, f"{where}.")
    for key in REPEATED_KEYS:
        if key not in table:
            raise ModelError(f"{where}.{key}: missing; a repeated block is {{ kinds = [KIND, ...], depth = N }}")
    return Repeated(_names(table["kinds"], f"{where}.kinds"), check_int(f"{where}.depth", table["depth"], minimum=1))


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _quoted(text: str) -> str:
    """A TOML basic string: quotes, backslashes and every control character (DEL too) escaped."""
    escaped = "".join(
        f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F else "\\" + c if c in '"\\' else c
        for c in text
    )
    return f'"{escaped}"'


def _value(value: Any) -> str:
    if isinstance(value, str):
        return _quoted(value)
    if isinstance(value, (list, tuple, frozenset)):
        items = sorted(value) if isinstance(value, frozenset) else value
        return "[" + ", ".join(_value(v) for v in items) + "]"
    return str(value)


def _key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else _quoted(name)


def dump_model(model: Model) -> str:
    """The canonical model file of *model*."""
    lines = [f"name = {_value(model.name)}"]
    if model.source:
        lines.append(f"source = {_value(model.source)}")
    if model.flags:
        lines.append(f"flags = {_value(model.flags)}")
    lines += ["", "[params]"] + [f"{_key(k)} = {v}" for k, v in model.params.items()]
    plan = model.plan
    lines += ["", "[plan]"]
    if not plan.cycle:
        lines.append(f"list = {_value(plan.first)}")
    else:
        lines.append(f"layers = {plan.layers}")
        if plan.first:
            lines.append(f"first = {_value(plan.first)}")
        if len(plan.cycle) == 1:
            lines.append(f"uniform = {_value(plan.cycle[0])}")
        else:
            lines.append(f"cycle = {_value(plan.cycle)}")
    for block, kinds in plan.blocks.items():
        shown = f"{{ kinds = {_value(kinds.unit)}, depth = {kinds.times} }}" if isinstance(kinds, Repeated) else _value(kinds)
        lines.append(f"{_key(block)} = {shown}")
    for name, kind in model.kinds.items():
        lines += ["", f"[kinds.{_key(name)}]"]
        if kind.flags:
            lines.append(f"flags = {_value(kind.flags)}")
        if kind.params:
            params = ", ".join(f"{_key(k)} = {v}" for k, v in kind.params.items())
            lines.append(f"params = {{ {params} }}")
        if kind.weight_copies is not None:
            lines.append(f"weight_copies = {kind.weight_copies}")
    for part, tower in model.towers.items():
        lines += ["", f"[towers.{_key(part)}]", f"kind = {_value(tower.kind)}", f"title = {_value(tower.title)}"]
        lines += [f"parameters = {tower.parameters}", f"embeddings = {tower.embeddings}"]
        if tower.dims:
            lines.append("dims = { " + ", ".join(f"{_key(k)} = {v}" for k, v in tower.dims.items()) + " }")
    return "\n".join(lines) + "\n"
