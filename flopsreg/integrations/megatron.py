"""A drop-in for Megatron-LM's ``num_floating_point_operations``.

Replace ``from megatron.training.training import num_floating_point_operations`` with
``from flopsreg.integrations.megatron import num_floating_point_operations``: same arguments,
same meaning (training FLOPs of one global batch), exact integers. ``convention="megatron"``
reproduces Megatron-LM's own number (which it computes in floating point, so it agrees to the
last digit wherever Megatron's float is exact, and to float precision beyond that).
"""

from __future__ import annotations

from typing import Any

from flopsreg.declarations.pattern import EXACT
from flopsreg.engine.evaluate import TRAINING_PASSES, evaluate
from flopsreg.errors import ModelError
from flopsreg.integrations._shared import default_registry, megatron_plan, packed_forward, whole_number
from flopsreg.registry import Registry

__all__ = ["num_floating_point_operations"]


def num_floating_point_operations(
    args: Any,
    batch_size: int,
    seqlen_squared_sum_in_batch: float | None = None,
    total_real_tokens_in_batch: float | None = None,
    *,
    convention: str = EXACT,
    registry: Registry | None = None,
) -> int:
    """Training FLOPs (forward + backward) of one global batch of *batch_size* sequences.

    Without the packed-sequence statistics every sequence has ``args.seq_length`` tokens. With
    them (Megatron's THD path), token-linear terms use *total_real_tokens_in_batch* (default
    ``batch_size * seq_length``) and attention uses *seqlen_squared_sum_in_batch*. Megatron-LM
    passes both as floats; any whole number is taken exactly, a fractional one is an error.
    """
    registry = registry or default_registry()
    plan = megatron_plan(args, registry, convention)
    seq_length = getattr(args, "seq_length", None)
    if type(batch_size) is not int:
        batch_size = whole_number("batch_size", batch_size)
    if batch_size < 1:
        raise ModelError(f"batch_size = {batch_size}: expected an integer >= 1 (sequences per global batch)")
    if seqlen_squared_sum_in_batch is None and total_real_tokens_in_batch is None:
        if seq_length is None:
            raise ModelError("args.seq_length: missing; Megatron-LM counts every sequence at seq_length tokens")
        if type(seq_length) is int and seq_length >= 1:  # the training-loop case: no Result to build
            return TRAINING_PASSES * batch_size * plan.forward(seq_length)
        return evaluate(plan, seq_length, None, batch_size).training
    if seq_length is None and (seqlen_squared_sum_in_batch is None or total_real_tokens_in_batch is None):
        raise ModelError("args.seq_length: missing; needed for the statistic that was not given")
    tokens = (
        batch_size * seq_length
        if total_real_tokens_in_batch is None
        else whole_number("total_real_tokens_in_batch", total_real_tokens_in_batch)
    )
    squares = (
        batch_size * seq_length**2
        if seqlen_squared_sum_in_batch is None
        else whole_number("seqlen_squared_sum_in_batch", seqlen_squared_sum_in_batch)
    )
    return 3 * packed_forward(plan, tokens, squares, ("total_real_tokens_in_batch", "seqlen_squared_sum_in_batch"))
