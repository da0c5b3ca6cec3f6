"""``flopsreg sweep llama-3-8b --seq-len 1:2000000`` to /dev/null, against a plain Python loop.

The reference is what one writes by hand: a loop over the lengths computing Llama-3-8B's forward
FLOPs by its closed form (32 layers of GQA, full causal, SwiGLU; untied logits), training = 3x,
and the per-token values as reduced fractions ``n/d`` or integers as the CLI prints them (reduced
with ``math.gcd``: ``fractions.Fraction`` would make the loop three times slower, an easy target),
one ``print`` per row in the format's own line (CSV, a JSON array, JSON lines).
Both run as separate processes writing to /dev/null (the CLI's time includes its start-up and the
cache hit); the script checks first that both print the same bytes for the first 3,000 lengths.
Target: each format within 1.3x of the loop.

    python benchmarks/sweep_stream.py [N]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

N = 2_000_000
FORMATS = ("csv", "json", "jsonl")
COLUMNS = ("seq_len", "forward_flops", "training_flops", "forward_per_token", "training_per_token")


def reference(n: int, form: str) -> None:
    """Print the sweep of lengths 1..n in *form*, written out by hand."""
    from math import gcd

    h, heads, kv, d, f, v = 4096, 32, 8, 128, 14336, 128256
    if form == "csv":
        print(",".join(COLUMNS))
    elif form == "json":
        print("[")
    for s in range(1, n + 1):
        linear = 2 * s * h * heads * d + 2 * 2 * s * h * kv * d + 2 * s * heads * d * h + 3 * 2 * s * h * f
        forward = 32 * (linear + 2 * heads * (d + d) * (s * (s + 1) // 2)) + 2 * s * h * v
        g = gcd(forward, s)
        per_token = f"{forward // g}/{s // g}" if s != g else f"{forward // g}"
        g = gcd(3 * forward, s)
        training = f"{3 * forward // g}/{s // g}" if s != g else f"{3 * forward // g}"
        if form == "csv":
            print(f"{s},{forward},{3 * forward},{per_token},{training}")
            continue
        line = (
            f'{{"seq_len": {s}, "forward_flops": "{forward}", "training_flops": "{3 * forward}", '
            f'"forward_per_token": "{per_token}", "training_per_token": "{training}"}}'
        )
        print(f"  {line}," if form == "json" and s < n else f"  {line}" if form == "json" else line)
    if form == "json":
        print("]")


def _commands(n: int, form: str) -> dict[str, list[str]]:
    return {
        "flopsreg": [sys.executable, "-m", "flopsreg", "sweep", "llama-3-8b", "--seq-len", f"1:{n}", "--format", form],
        "loop": [sys.executable, __file__, "--reference", str(n), form],
    }


def _best(command: list[str], env: dict[str, str], repeats: int = 3) -> float:
    times = []
    with open(os.devnull, "w") as sink:
        for _ in range(repeats):
            start = time.perf_counter()
            subprocess.run(command, stdout=sink, env=env, check=True)
            times.append(time.perf_counter() - start)
    return min(times)


def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "FLOPSREG_CACHE_DIR": cache}
        for form in FORMATS:  # same bytes first (this also fills the cache)
            outputs = {name: subprocess.run(cmd, capture_output=True, env=env, check=True).stdout for name, cmd in _commands(3000, form).items()}
            assert outputs["flopsreg"] == outputs["loop"], f"{form}: flopsreg and the loop print different bytes"
        for form in FORMATS:
            times = {name: _best(cmd, env) for name, cmd in _commands(n, form).items()}
            ratio = times["flopsreg"] / times["loop"]
            print(f"{form:>5}: flopsreg {times['flopsreg']:.2f} s, loop {times['loop']:.2f} s, ratio {ratio:.2f} (target <= 1.3)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--reference"]:
        reference(int(sys.argv[2]), sys.argv[3])
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else N)
