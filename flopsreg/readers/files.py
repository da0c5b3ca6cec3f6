"""Reading a model description file as text: one clear line for a missing, unreadable or binary file."""

from __future__ import annotations

from pathlib import Path

from flopsreg.errors import ModelError

__all__ = ["read_text"]


def read_text(path: Path, what: str) -> str:
    """The UTF-8 text of *path*; a ModelError naming the file and *what* it should be."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        shown = exc.object[exc.start : exc.start + 1]
        raise ModelError(f"{path}: not a UTF-8 text file (byte {exc.start} is {shown!r}); expected a {what}") from None
