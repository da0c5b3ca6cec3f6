"""Start-up against the number of families: a cold Llama evaluation with the committed manifest,
and with 100 synthetic families added to it.

Target (issue 20): the 100 families move the cold `flopsreg eval llama-3-8b --seq-len 4096
--no-cache` by less than 3%. Each synthetic family is what a Hugging Face family module
declares: a reader of its model_type and three patterns that only its flag selects (with a
parameter of its own), at a precedence of its own above every built-in's (a family's patterns may
not tie with another's: the load-time checks, run on the manifest at every start, would skip
it); the modules are written to a temporary folder, listed in BUILTIN and in the manifest, and
never imported by a Llama evaluation. Both runs go through the same driver
(BUILTIN extended, the manifest read from the temporary folder), once with no family added.

    python benchmarks/startup_families.py [--runs 9] [--families 100]
    python benchmarks/startup_families.py --instructions    # valgrind's callgrind: stable counts
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import flopsreg
from flopsreg.plugins.loader import manifest_path
from flopsreg.plugins.manifest import load_whole, write

DRIVER = """
import sys
sys.path.insert(0, {folder!r})
import flopsreg.patterns, flopsreg.plugins.builtins as builtins
flopsreg.patterns.BUILTIN += tuple({names!r})
builtins.manifest_path = lambda: {manifest!r}
from flopsreg.cli import main
main(["eval", "llama-3-8b", "--seq-len", "4096", "--no-cache"])
"""

MODULE = '''"""Synthetic family {i} (benchmarks/startup_families.py): never imported by a Llama evaluation."""
import flopsreg
'''


def family(i: int, template: list[dict]) -> tuple[dict, dict]:
    """The manifest entry of synthetic family *i* and its parameter's declaration."""
    flag = f"synthetic{i}"
    param = {"name": f"synthetic{i}_width", "latex": f"w_{{{i}}}", "meaning": f"a width of synthetic family {i}", "minimum": 1}
    patterns = [
        {**p, "name": f"{p['name']}_synthetic{i}", "flags": sorted({*p["flags"], flag}), "precedence": 20000 + i,
         "params": [*p["params"], param["name"]]}
        for p in template
    ]
    entry = {"declares": {"hf_readers": [{"name": f"synthetic{i}", "flags": [flag]}]}, "patterns": patterns}
    return entry, param


def setup(folder: str, families: int) -> list[str]:
    """The driver's command: the committed manifest with *families* synthetic ones, written in *folder*."""
    manifest = load_whole(manifest_path())
    template = [p for name in ("attention_core", "dense_mlp", "norms") for p in manifest["modules"][name]["patterns"]][:3]
    names = []
    package = os.path.join(folder, "synthetic_families")
    os.makedirs(package, exist_ok=True)
    open(os.path.join(package, "__init__.py"), "w").close()
    for i in range(families):
        entry, param = family(i, template)
        name = f"synthetic_families.family{i}"
        manifest["modules"][name] = entry
        manifest["params"][param["name"]] = param
        names.append(name)
        with open(os.path.join(package, f"family{i}.py"), "w", encoding="utf-8") as file:
            file.write(MODULE.format(i=i))
    path = os.path.join(folder, "manifest.json")
    write(manifest, path)  # as make_manifest writes it: the index and one file per module
    return [sys.executable, "-c", DRIVER.format(folder=folder, names=names, manifest=path)]


def instructions(command: list[str]) -> int:
    log = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "0"},
    ).stderr
    return int(re.search(r"Collected : (\d+)", log).group(1))


def wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--families", type=int, default=100)
    parser.add_argument("--instructions", action="store_true", help="count instructions (callgrind) instead of timing")
    args = parser.parse_args()
    compileall.compile_dir(os.path.dirname(flopsreg.__file__), quiet=1)
    compileall.compile_dir(os.path.dirname(manifest_path()), quiet=1)
    with tempfile.TemporaryDirectory() as base, tempfile.TemporaryDirectory() as more:
        commands = {"committed manifest": setup(base, 0), f"+{args.families} families": setup(more, args.families)}
        if args.instructions:
            counts = {name: instructions(command) for name, command in commands.items()}
            unit = "instructions"
        else:
            times: dict[str, list[float]] = {name: [] for name in commands}
            for _ in range(args.runs):  # interleaved: both rows see the same load
                for name, command in commands.items():
                    times[name].append(wall(command))
            counts = {name: statistics.median(values) for name, values in times.items()}
            unit = f"s (median of {args.runs})"
    base_count, more_count = counts.values()
    for name, count in counts.items():
        print(f"{name:24} {count:,.4g} {unit}")
    print(f"ratio {more_count / base_count:.4f} (target: < 1.03)")


if __name__ == "__main__":
    main()
