"""Small model builders and slot readers shared by the attention test files.

Nothing here computes an expected number: these helpers only build models and read what the
registry computed, so the tests can compare it with their own oracles.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import flopsreg
from flopsreg.formula.exact import compile_exact


def gemma_like() -> flopsreg.Model:
    """The README's Gemma-3-4B-like attention: 5 sliding-window layers then 1 global, 34 layers."""
    return flopsreg.Model(
        name="gemma-like",
        params={"hidden": 2560, "heads": 8, "kv_heads": 4, "head_dim": 256},
        kinds={
            "local": flopsreg.LayerKind(flags={"sliding_window"}, params={"window": 1024}),
            "global": flopsreg.LayerKind(),
        },
        plan=flopsreg.Plan(layers=34, cycle=["local"] * 5 + ["global"]),
    )


def one_kind_model(
    *,
    layers: int = 1,
    flags: Iterable[str] = (),
    params: Mapping[str, int] | None = None,
    kind_params: Mapping[str, int] | None = None,
    name: str = "test-model",
) -> flopsreg.Model:
    """A model whose layers all share one kind ``"k"`` with *flags* and *kind_params*.

    *params* are model-level (dimensions); *kind_params* sit on the kind (e.g. ``window``).
    """
    return flopsreg.Model(
        name=name,
        params=dict(params or {}),
        kinds={"k": flopsreg.LayerKind(flags=frozenset(flags), params=dict(kind_params or {}))},
        plan=flopsreg.Plan.uniform("k", layers),
    )


def gqa_model(
    *,
    hidden: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    layers: int = 1,
    flags: Iterable[str] = (),
    **kind_params: int,
) -> flopsreg.Model:
    """A uniform GQA attention model; mask parameters (``window``, ``chunk``) go on the kind."""
    return one_kind_model(
        layers=layers,
        flags=flags,
        params={"hidden": hidden, "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim},
        kind_params=kind_params,
    )


def unit_of(registry: flopsreg.Registry, model: flopsreg.Model, kind: str | None = None):
    """The plan of one layer kind (the first kind when *kind* is None)."""
    plan = registry.select(model)
    return plan.kinds[0] if kind is None else plan.kind(kind)


def unit_slot_flops(unit, slot: str, seq_len: int) -> int:
    """FLOPs of one slot (e.g. ``"attention.core"``) of one layer of a planned kind."""
    return compile_exact(unit.terms[slot])({**unit.params, "seq_len": seq_len})


def unit_pairs(unit, seq_len: int) -> int:
    """The ``pairs`` quantity of a planned kind's selected mask pattern, for one sequence."""
    return compile_exact(unit.quantities["pairs"])({**unit.params, "seq_len": seq_len})


def slot_flops(
    registry: flopsreg.Registry, model: flopsreg.Model, slot: str, seq_len: int, kind: str | None = None
) -> int:
    """FLOPs of one slot (e.g. ``"attention.core"``) of one layer, for one sequence of *seq_len*."""
    return unit_slot_flops(unit_of(registry, model, kind), slot, seq_len)


def mask_pairs(registry: flopsreg.Registry, model: flopsreg.Model, seq_len: int, kind: str | None = None) -> int:
    """The ``pairs`` quantity the selected mask pattern gives for one sequence of *seq_len*."""
    return unit_pairs(unit_of(registry, model, kind), seq_len)
