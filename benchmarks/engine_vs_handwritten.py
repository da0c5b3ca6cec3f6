"""reg.evaluate(model, seq_len=s).forward against hand-written plain-Python FLOPs functions.

Two references for DeepSeek-V3 with MTP (61 MLA + MoE layers), both checked equal to flopsreg:
- ``from_args``: the way training frameworks write it, reading dimensions from a config object;
- ``folded``: every dimension typed in as a constant, the fastest a hand-written one can be.
Lengths cycle over 1,000 values so nothing is cached per length. Prints microseconds per call and
the ratios flopsreg / reference (target: at most 2 against each).

    python benchmarks/engine_vs_handwritten.py
"""

from __future__ import annotations

import timeit
from types import SimpleNamespace

import attrs

import flopsreg

CONFIG = SimpleNamespace(
    hidden=7168, heads=128, q_lora_rank=1536, kv_lora_rank=512, qk_nope=128, qk_rope=64, v_head=128,
    ffn=18432, dense_layers=3, moe_layers=58, experts=256, top_k=8, expert_ffn=2048, shared_ffn=2048,
    vocab=129280, mtp=1,
)


def from_args(s: int, c: SimpleNamespace = CONFIG) -> int:
    """A framework-style function: every term from the config, 2 FLOPs per multiply-add."""
    qk = c.qk_nope + c.qk_rope
    attention = (
        2 * s * (c.hidden * c.q_lora_rank + c.q_lora_rank * c.heads * qk)
        + 2 * s * (c.hidden * (c.kv_lora_rank + c.qk_rope) + c.kv_lora_rank * c.heads * (c.qk_nope + c.v_head))
        + 2 * c.heads * (qk + c.v_head) * (s * (s + 1) // 2)
        + 2 * s * c.heads * c.v_head * c.hidden
    )
    dense = 2 * s * c.hidden * c.ffn * 3
    moe = 2 * s * c.hidden * c.experts + 2 * s * c.top_k * c.hidden * c.expert_ffn * 3 + 2 * s * c.hidden * c.shared_ffn * 3
    head = 2 * s * c.hidden * c.vocab
    mtp = c.mtp * (attention + moe + 2 * s * 2 * c.hidden * c.hidden + head)
    return (c.dense_layers + c.moe_layers) * attention + c.dense_layers * dense + c.moe_layers * moe + head + mtp


def folded(s: int) -> int:
    """The same count with every dimension folded into constants."""
    attention = 2 * s * 48_758_784 + 2 * s * 20_905_984 + 81_920 * (s * (s + 1) // 2) + 2 * s * 117_440_512
    moe = 2 * s * 1_835_008 + 2 * s * 352_321_536 + 2 * s * 44_040_192
    head = 2 * s * 926_679_040
    return 61 * attention + 3 * 2 * s * 396_361_728 + 58 * moe + head + attention + moe + 2 * s * 102_760_448 + head


def main() -> None:
    registry = flopsreg.Registry(load_entry_points=False)
    model = flopsreg.Model.from_toml("examples/deepseek-v3.toml")
    model = attrs.evolve(model, flags=model.flags | {"mtp"}, plan=attrs.evolve(model.plan, mtp=("moe",)))
    lengths = list(range(1, 1001))
    for n in lengths:
        expected = from_args(n)
        assert folded(n) == expected == registry.evaluate(model, seq_len=n).forward, n

    def run(function) -> float:
        it = iter(lengths * 100)
        best = min(timeit.repeat(lambda: function(next(it)), number=10_000, repeat=7))
        return best / 10_000 * 1e6

    evaluate = lambda n: registry.evaluate(model, seq_len=n).forward  # noqa: E731
    times = {"flopsreg": run(evaluate), "from_args": run(from_args), "folded": run(folded)}
    for name, micros in times.items():
        print(f"{name:>10}: {micros:6.2f} us per call")
    print(f"ratio flopsreg / from_args: {times['flopsreg'] / times['from_args']:.2f} (target <= 2)")
    print(f"ratio flopsreg / folded:    {times['flopsreg'] / times['folded']:.2f} (target <= 2)")


if __name__ == "__main__":
    main()
