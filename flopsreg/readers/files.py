"""Reading a model description file as text: one clear line for a missing, unreadable or binary file,
and for JSON that is ambiguous (a key given twice) or nested deeper than any real config."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from flopsreg.errors import ModelError

__all__ = ["MAX_NESTING", "check_nesting", "parse_json", "read_text", "too_deep"]

MAX_NESTING = 64  # objects/tables and arrays inside each other; real configs and model files are under 10 deep


def read_text(path: Path, what: str) -> str:
    """The UTF-8 text of *path*; a ModelError naming the file and *what* it should be."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        shown = exc.object[exc.start : exc.start + 1]
        raise ModelError(f"{path}: not a UTF-8 text file (byte {exc.start} is {shown!r}); expected a {what}") from None


def too_deep(where: str) -> ModelError:
    """The one line for a document nested deeper than MAX_NESTING (or than the parser's recursion allows)."""
    return ModelError(
        f"{where}: nested more than {MAX_NESTING} levels deep (objects, tables or arrays inside each other); "
        "real configs and model files are under 10"
    )


def _path(parent: str, key: str | int) -> str:
    """``text_config.hidden_size``, ``layers[3]``: where a value sits, for messages."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key


def check_nesting(data: Any, where: str, *, duplicates: Mapping[int, tuple[str, list[Any]]] | None = None) -> None:
    """Refuse *data* (parsed JSON or TOML) nested deeper than MAX_NESTING, or holding an object whose
    ``id`` is in *duplicates* (the key given twice in it, and its values), naming the path. Walked with a stack, not
    recursion, so no depth crashes it."""
    duplicates = duplicates or {}
    stack: list[tuple[Any, str, int]] = [(data, "", 1)] if isinstance(data, (Mapping, list)) else []
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_NESTING:
            raise too_deep(where)
        if id(value) in duplicates:
            key, values = duplicates[id(value)]
            given = ", then ".join(f"{v!r:.40}" for v in values)
            raise ModelError(
                f"{where}: {_path(path, key)}: given {len(values)} times ({given}); JSON readers keep one silently, "
                "so the file is ambiguous: keep one"
            )
        items = value.items() if isinstance(value, Mapping) else enumerate(value)
        stack.extend((item, _path(path, key), depth + 1) for key, item in reversed(list(items)) if isinstance(item, (Mapping, list)))


def _repeated(keys: Iterable[str]) -> str:
    """The first key that comes a second time (the caller knows one does)."""
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            return key
        seen.add(key)
    raise AssertionError("no key repeats")  # pragma: no cover


def parse_json(text: str, where: str) -> Any:
    """The parsed JSON *text*, strictly: invalid JSON, a key given twice in one object (at any level)
    and nesting deeper than MAX_NESTING are each one line starting with *where*."""
    import json

    duplicates: dict[int, tuple[str, list[Any]]] = {}

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        data = dict(pairs)
        if len(data) != len(pairs):
            key = _repeated(k for k, _ in pairs)
            duplicates[id(data)] = (key, [value for k, value in pairs if k == key])
        return data

    try:
        data = json.loads(text, object_pairs_hook=unique)
    except json.JSONDecodeError as exc:
        raise ModelError(f"{where}: not valid JSON: {exc}") from exc
    except RecursionError:
        raise too_deep(where) from None
    check_nesting(data, where, duplicates=duplicates)
    return data
