"""Wall time of flopsreg commands against `python -c "import sympy"`, median of interleaved runs.

Target: `flopsreg patterns` and `flopsreg eval MODEL --seq-len S` each at most 1.5x the time of
importing sympy, which every command that builds a formula needs.

    python benchmarks/cli_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c 'import sympy'": [sys.executable, "-c", "import sympy"],
    "flopsreg patterns": [sys.executable, "-m", "flopsreg", "patterns"],
    "flopsreg eval gemma-3-27b --seq-len 32768": [
        sys.executable, "-m", "flopsreg", "eval", "gemma-3-27b", "--seq-len", "32768",
    ],
    "flopsreg eval deepseek-v3 --seq-len 4096": [
        sys.executable, "-m", "flopsreg", "eval", "deepseek-v3", "--seq-len", "4096",
    ],
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(runs):  # interleaved, so load changes hit every command alike
        for name, command in COMMANDS.items():
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            times[name].append(time.perf_counter() - start)
    baseline = statistics.median(times["python -c 'import sympy'"])
    for name, values in times.items():
        median = statistics.median(values)
        verdict = "" if name.startswith("python") else f"  (target <= 1.5: {'ok' if median / baseline <= 1.5 else 'MISSED'})"
        print(f"{name:<45} {median * 1000:7.0f} ms   ratio {median / baseline:.2f}{verdict}")


if __name__ == "__main__":
    main()
