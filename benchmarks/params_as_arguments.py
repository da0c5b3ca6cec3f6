"""Models that differ only in parameter values, against hand-written arithmetic.

500 hidden sizes of Llama-3-8B at 8,192 tokens, each counted three ways in one run:
- ``hand``: a plain-Python Llama-3-8B forward-FLOPs function of the hidden size (the reference);
- ``evaluate``: ``reg.evaluate(model, seq_len=8192).forward`` for 500 prebuilt models
  (``Model.with_param``, built before the clock starts: building a model is not evaluating it),
  each new to a registry that has evaluated Llama-3-8B: each is rebound to that structure (checked,
  its own ModelSelection) and calls code compiled once with its values as arguments;
- ``grid``: ``reg.sweep(model, seq_len=8192, params={"hidden": [...]})``, all 500 in one call.
Every number is checked equal to ``hand`` first. Prints microseconds per evaluation and the
ratios to ``hand`` (target for ``evaluate``: at most 20), best of 7 runs, and the same 500
through a new registry (``cold``: the first model composed, the structure compiled once).

    python benchmarks/params_as_arguments.py
"""

from __future__ import annotations

import time

import flopsreg

SEQ_LEN = 8192
HIDDEN = [2048 + 16 * i for i in range(500)]


def hand(hidden: int, s: int = SEQ_LEN) -> int:
    """Llama-3-8B forward FLOPs of one sequence: GQA projections, causal attention, SwiGLU, head."""
    heads, kv_heads, head_dim, ffn, vocab, layers = 32, 8, 128, 14336, 128256, 32
    attention = (
        2 * s * hidden * heads * head_dim  # query
        + 2 * 2 * s * hidden * kv_heads * head_dim  # key and value
        + 2 * 2 * heads * head_dim * (s * (s + 1) // 2)  # scores and weighted values, causal pairs
        + 2 * s * heads * head_dim * hidden  # output
    )
    mlp = 3 * 2 * s * hidden * ffn
    return layers * (attention + mlp) + 2 * s * hidden * vocab


def best(run, repeat: int = 7) -> float:
    """Seconds of the fastest of *repeat* calls of *run* (each builds what it needs first)."""
    times = []
    for _ in range(repeat):
        prepared = run()
        start = time.perf_counter()
        prepared()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    base = flopsreg.Model.example("llama-3-8b")
    registry = flopsreg.Registry(load_entry_points=False)
    assert [registry.evaluate(base.with_param("hidden", h), seq_len=SEQ_LEN).forward for h in HIDDEN] == list(map(hand, HIDDEN))
    assert registry.sweep(base, seq_len=SEQ_LEN, params={"hidden": HIDDEN}) == list(map(hand, HIDDEN))

    def by_hand():
        return lambda: [hand(h) for h in HIDDEN]

    def warm() -> flopsreg.Registry:
        """A registry that has evaluated Llama-3-8B and one model of its structure with other
        values (which compiles the structure once): nothing of the 500 models is cached."""
        reg = flopsreg.Registry(load_entry_points=False)
        reg.evaluate(base, seq_len=SEQ_LEN)
        reg.evaluate(base.with_param("hidden", 1024), seq_len=SEQ_LEN)
        return reg

    def by_evaluate():
        reg, models = warm(), [base.with_param("hidden", h) for h in HIDDEN]
        return lambda: [reg.evaluate(m, seq_len=SEQ_LEN).forward for m in models]

    def by_grid():
        reg = warm()
        return lambda: reg.sweep(base, seq_len=SEQ_LEN, params={"hidden": HIDDEN})

    def cold():
        """A new registry: the first model composed, the second compiles the structure."""
        reg, models = flopsreg.Registry(load_entry_points=False), [base.with_param("hidden", h) for h in HIDDEN]
        return lambda: [reg.evaluate(m, seq_len=SEQ_LEN).forward for m in models]

    n = len(HIDDEN)
    runs = (("hand", by_hand), ("evaluate", by_evaluate), ("grid", by_grid), ("cold", cold))
    micros = {name: best(run) / n * 1e6 for name, run in runs}
    for name, value in micros.items():
        print(f"{name:>9}: {value:8.2f} us per evaluation")
    print(f"ratio evaluate / hand: {micros['evaluate'] / micros['hand']:.1f} (target <= 20)")
    print(f"ratio grid / hand:     {micros['grid'] / micros['hand']:.1f}")
    print(f"ratio cold / hand:     {micros['cold'] / micros['hand']:.1f} (a new registry: one composition and one compilation for the 500)")


if __name__ == "__main__":
    main()
