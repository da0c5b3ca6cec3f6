"""Check that a built wheel holds every module and data file of the source tree, where it belongs.

Usage: python .ci/check_wheel.py WHEEL SOURCE_TREE. Prints what is missing or unexpected and
exits 1; the installed-package tests cannot see a module the wheel left out.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

# source folder -> folder in the wheel, as pyproject.toml's package-dir maps them
LAYOUT = {"flopsreg": "flopsreg", "patterns": "flopsreg/patterns", "examples": "flopsreg/examples"}
SHIPPED = ("*.py", "*.toml", "py.typed", "manifest.json", "manifest/*.json", "transformers_types.json")
LICENSE = "flopsreg-{version}.dist-info/licenses/LICENSE"


def expected_files(source: Path) -> set[str]:
    """Every shipped file of the source tree, named as the wheel must name it."""
    return {
        f"{target}/{path.relative_to(source / folder).as_posix()}"
        for folder, target in LAYOUT.items()
        for pattern in SHIPPED
        for path in (source / folder).rglob(pattern)
        if "__pycache__" not in path.parts
    }


def problems(wheel: Path, expected: set[str]) -> list[str]:
    """One line per file the wheel lacks or should not have."""
    version = wheel.name.split("-")[1]
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    shipped = {name for name in names if ".dist-info/" not in name}
    lines = [f"missing from the wheel: {name}" for name in sorted(expected - shipped)]
    lines += [f"unexpected in the wheel: {name}" for name in sorted(shipped - expected)]
    if LICENSE.format(version=version) not in names:
        lines.append(f"missing from the wheel: {LICENSE.format(version=version)}")
    return lines


def main(argv: list[str]) -> int:
    wheel, expected = Path(argv[0]), expected_files(Path(argv[1]))
    lines = problems(wheel, expected)
    for line in lines:
        print(line)
    if not lines:
        print(f"{wheel.name}: the {len(expected)} files of the source tree, and the license")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
