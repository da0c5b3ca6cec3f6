"""A drop-in for OLMo-core's ``Transformer.num_flops_per_token(seq_len)``.

OLMo-core (allenai/OLMo-core at commit fa6c5014) sums the ``num_flops_per_token`` of its blocks
and LM head, which its speed monitor multiplies by a step's tokens for MFU. This drop-in needs
no torch and no module: it takes the model as flopsreg reads it (a :class:`~flopsreg.Model`, or
the model's Hugging Face ``config.json`` as a mapping). In a training script replace
``model.num_flops_per_token(seq_len)`` with ``num_flops_per_token(model_or_config, seq_len)``
from this module: the same number in the same unit, training FLOPs (forward + backward) per token
of a ``seq_len``-token sequence. By default it is exact (causal pairs, real windows, the experts
a token uses); ``convention="olmo_core"`` reproduces OLMo-core's own count to the digit. An exact
count per token that is not a whole number is returned as a :class:`fractions.Fraction`.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from flopsreg.declarations.pattern import EXACT
from flopsreg.engine.evaluate import TRAINING_PASSES
from flopsreg.errors import ModelError
from flopsreg.integrations._shared import default_registry, hf_selection
from flopsreg.model import Model, as_int, shown
from flopsreg.registry import Registry

__all__ = ["num_flops_per_token"]


def num_flops_per_token(
    model: Model | Mapping[str, Any], seq_len: int, *, convention: str = EXACT, registry: Registry | None = None
) -> int | Fraction:
    """Training FLOPs (forward + backward) per token of *model* on sequences of *seq_len* tokens,
    as ``Transformer.num_flops_per_token`` returns them (``convention="olmo_core"``) or exactly."""
    length = as_int(seq_len)  # numpy integers too
    if length is None or length < 1:
        raise ModelError(f"seq_len = {shown(seq_len)}: expected an integer >= 1 (the training sequence length)")
    registry = registry or default_registry()
    plan = hf_selection(model, registry, convention)
    per_token = Fraction(TRAINING_PASSES * plan.forward(length), length)
    return int(per_token) if per_token.denominator == 1 else per_token
