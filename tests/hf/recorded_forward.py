"""What the family records (tests/data/hf_forward/forward_<name>.json) are compared on, computed
one way for every family module: flopsreg's forward FLOPs at each recorded length (the eager
convention, as transformers' eager modules run), the attention pairs of each layer and each
layer's MLP FLOPs (dense, or router, experts and shared experts)."""

from __future__ import annotations

from collections.abc import Iterable

import flopsreg
from flopsreg.formula.exact import compile_exact


def forward_at(eager_registry: flopsreg.Registry, model: flopsreg.Model, lengths: Iterable[str]) -> dict[str, int]:
    """Forward FLOPs of one sequence at each length (a record's keys are the lengths as strings)."""
    return {length: eager_registry.evaluate(model, seq_len=int(length), convention="eager").forward for length in lengths}


def pairs_per_layer(registry: flopsreg.Registry, model: flopsreg.Model, seq_len: int) -> list[int]:
    """The (query, key) pairs each layer's mask lets through at *seq_len*, in layer order."""
    plan = registry.select(model)
    units = {unit.name: unit for unit in plan.kinds}
    return [compile_exact(units[layer.kind].quantities["pairs"])({**layer.params, "seq_len": seq_len}) for layer in plan.model.layers]


def mlp_per_layer(
    eager_registry: flopsreg.Registry, model: flopsreg.Model, seq_len: int, slots: tuple[str, ...] = ("mlp", "mlp.shared")
) -> list[int]:
    """Each layer's MLP FLOPs (its mlp slot and shared experts; *slots* where a family's MLP module
    holds more, such as experts beside it) at *seq_len*, in layer order."""
    units = {unit.name: unit for unit in eager_registry.select(model, convention="eager").kinds}
    flops = {name: unit.flops(seq_len) for name, unit in units.items()}
    return [sum(flops[layer.kind].get(slot, 0) for slot in slots) for layer in model.layers]
