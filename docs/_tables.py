"""What the scripts that write parts of docs/ share: exact decimal cells, the replacement of a
generated block between two marker comments, and ``--check``.

Not a page: Sphinx reads only the Markdown files of docs/.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import flopsreg


def fixed(numerator: int, denominator: int, places: int) -> str:
    """numerator / denominator with *places* decimals, rounded half up, in exact arithmetic."""
    scaled = (2 * numerator * 10**places + denominator) // (2 * denominator)
    whole, frac = divmod(scaled, 10**places)
    return f"{whole:,}.{frac:0{places}d}"


def replace_block(text: str, table: str, start: str, end: str, target: Path) -> str:
    """*text* with the block between the markers *start* and *end* replaced by *table*."""
    before, found_start, rest = text.partition(start)
    _, found_end, after = rest.partition(end)
    if not found_start or not found_end:
        raise SystemExit(f"{target}: markers not found; it needs the lines\n{start}\n{end}")
    return f"{before}{start}\n{table}\n{end}{after}"


def is_current(target: Path, rewrite: Callable[[str, flopsreg.Registry], str], registry: flopsreg.Registry | None = None) -> bool:
    """Whether *target* holds what *rewrite* makes of it with the current examples and plugins."""
    registry = registry or flopsreg.Registry(load_entry_points=False)
    text = target.read_text(encoding="utf-8")
    return rewrite(text, registry) == text


def run(argv: list[str], target: Path, rewrite: Callable[[str, flopsreg.Registry], str], script: str) -> int:
    """Rewrite *target*'s generated blocks, or with ``--check`` exit 1 where they are stale."""
    registry = flopsreg.Registry(load_entry_points=False)
    if "--check" in argv:
        if not is_current(target, rewrite, registry):
            print(f"{target} is stale: run python docs/{script}", file=sys.stderr)
            return 1
        return 0
    target.write_text(rewrite(target.read_text(encoding="utf-8"), registry), encoding="utf-8")
    return 0
