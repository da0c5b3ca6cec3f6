"""A drop-in for transformers' ``Trainer.floating_point_ops(inputs)``.

transformers 5.24.0 counts ``6 * inputs["input_ids"].numel() * model.num_parameters(exclude_embeddings=True)``
per training step and adds it to ``state.total_flos``. This drop-in needs no torch and no module:
it takes the model as flopsreg reads it (a :class:`~flopsreg.Model`, or its Hugging Face
``config.json`` as a mapping) and the step's ``inputs`` (anything whose ``"input_ids"`` has a
``.shape`` of (batch, sequence length), as the Trainer's collated batch does). In a ``Trainer``
subclass, override ``floating_point_ops(self, inputs)`` to return
``floating_point_ops(model_or_config, inputs)``: the same unit, training FLOPs (forward + backward)
of the batch. By default it is exact (causal attention included, the experts a token uses);
``convention="hf_trainer"`` reproduces the Trainer's own number to the digit (a multimodal
model's vision tower then needs the model parameter ``vision_parameters``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flopsreg.declarations.pattern import EXACT
from flopsreg.engine.evaluate import TRAINING_PASSES
from flopsreg.errors import ModelError
from flopsreg.integrations._shared import default_registry, hf_selection
from flopsreg.model import Model, as_int
from flopsreg.registry import Registry

__all__ = ["floating_point_ops"]


def _shape(inputs: Any) -> tuple[int, int]:
    """(batch, sequence length) of ``inputs["input_ids"]``, or one line naming what is wrong."""
    try:
        ids = inputs["input_ids"]
    except (KeyError, TypeError):
        raise ModelError(f"inputs = {type(inputs).__name__}: expected the Trainer's batch, a mapping with 'input_ids'") from None
    shape = tuple(getattr(ids, "shape", ()))
    dims = [as_int(d) for d in shape]
    if len(dims) != 2 or any(d is None or d < 1 for d in dims):
        raise ModelError(f"inputs['input_ids'].shape = {shape!r}: expected (batch, sequence length), both integers >= 1")
    return dims[0], dims[1]


def floating_point_ops(
    model: Model | Mapping[str, Any], inputs: Any, *, convention: str = EXACT, registry: Registry | None = None
) -> int:
    """Training FLOPs (forward + backward) of the batch *inputs* of *model*, as
    ``Trainer.floating_point_ops`` returns them (``convention="hf_trainer"``) or exactly."""
    batch, length = _shape(inputs)
    registry = registry or default_registry()
    plan = hf_selection(model, registry, convention)
    return TRAINING_PASSES * batch * plan.forward(length)
