"""A drop-in for slime's ``calculate_fwd_flops(seqlens, args)``.

Replace ``from slime.utils.flops_utils import calculate_fwd_flops`` with
``from flopsreg.integrations.slime import calculate_fwd_flops``: same arguments (the lengths of
the sequences processed and Megatron-LM's argument namespace), forward FLOPs as an exact int.
``convention="slime"`` reproduces slime's own number.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flopsreg.declarations.pattern import EXACT
from flopsreg.engine.evaluate import evaluate, length_list
from flopsreg.integrations._shared import default_registry, megatron_plan
from flopsreg.registry import Registry

__all__ = ["calculate_fwd_flops"]

_INT_ONLY = {int}


def calculate_fwd_flops(
    seqlens: Sequence[int], args: Any, *, convention: str = EXACT, registry: Registry | None = None
) -> int:
    """Forward FLOPs of the sequences *seqlens*, each attending only within itself."""
    registry = registry or default_registry()
    plan = megatron_plan(args, registry, convention)
    if type(seqlens) in (list, tuple) and seqlens and set(map(type, seqlens)) == _INT_ONLY and min(seqlens) >= 1:  # the training-loop case
        return sum(map(plan.forward, seqlens))  # no Result to build
    return evaluate(plan, None, length_list("seqlens", seqlens, "a list of sequence lengths")).forward
