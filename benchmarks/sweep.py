"""Registry.sweep over 1,000,000 sequence lengths of Gemma-3-27B, exact and as floats.

The plain-Python reference is a hand-written exact function of the same model (62 layers, 52
sliding-window of 1024 keys and 10 global) called in a list comprehension; the float reference
is the same arithmetic in numpy. Targets on a 2-core machine: exact <= 2 s, floats <= 0.2 s.

    python benchmarks/sweep.py
"""

from __future__ import annotations

import time

import numpy

import flopsreg

N = 1_000_000
H, HEADS, KV, D, F, V, W = 5376, 32, 16, 128, 21504, 262208, 1024
LOCAL, GLOBAL = 52, 10


def reference(s: int) -> int:
    """Gemma-3-27B forward FLOPs of one sequence, written out."""
    linear = 2 * s * H * HEADS * D + 2 * 2 * s * H * KV * D + 2 * s * HEADS * D * H + 3 * 2 * s * H * F
    full = s * (s + 1) // 2
    window = full if s <= W else W * (W + 1) // 2 + (s - W) * W
    core = 2 * HEADS * (D + D)
    return (LOCAL + GLOBAL) * linear + core * (LOCAL * window + GLOBAL * full) + 2 * s * H * V


def reference_float(s: numpy.ndarray) -> numpy.ndarray:
    linear = 2 * s * H * HEADS * D + 2 * 2 * s * H * KV * D + 2 * s * HEADS * D * H + 3 * 2 * s * H * F
    full = s * (s + 1) / 2
    window = numpy.where(s <= W, full, W * (W + 1) / 2 + (s - W) * W)
    return (LOCAL + GLOBAL) * linear + 2 * HEADS * (D + D) * (LOCAL * window + GLOBAL * full) + 2 * s * H * V


def best_of(repeats: int, function) -> tuple[float, object]:
    times, value = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        value = function()
        times.append(time.perf_counter() - start)
    return min(times), value


def main() -> None:
    registry = flopsreg.Registry(load_entry_points=False)
    model = flopsreg.Model.from_toml("examples/gemma-3-27b.toml")
    lengths = range(1, N + 1)
    registry.sweep(model, range(1, 10))  # plan and compile outside the timing
    registry.sweep(model, range(1, 10), dtype=float)

    exact_time, exact = best_of(3, lambda: registry.sweep(model, lengths))
    ref_time, ref = best_of(3, lambda: [reference(s) for s in lengths])
    assert exact == ref, "sweep differs from the hand-written reference"
    float_time, floats = best_of(5, lambda: registry.sweep(model, lengths, dtype=float))
    array = numpy.arange(1, N + 1, dtype=numpy.float64)
    ref_float_time, ref_floats = best_of(5, lambda: reference_float(array))
    assert numpy.allclose(floats, ref_floats, rtol=1e-12)

    print(f"exact, {N:,} lengths:  flopsreg {exact_time:.3f} s   plain Python {ref_time:.3f} s   "
          f"ratio {exact_time / ref_time:.2f}   (target <= 2 s: {'ok' if exact_time <= 2 else 'MISSED'})")
    print(f"floats, {N:,} lengths: flopsreg {float_time:.3f} s   numpy by hand {ref_float_time:.3f} s   "
          f"ratio {float_time / ref_float_time:.2f}   (target <= 0.2 s: {'ok' if float_time <= 0.2 else 'MISSED'})")


if __name__ == "__main__":
    main()
