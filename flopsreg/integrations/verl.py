"""A drop-in for verl's ``FlopsCounter`` (``verl/utils/flops_counter.py``).

Replace ``from verl.utils.flops_counter import FlopsCounter`` with
``from flopsreg.integrations.verl import FlopsCounter``: same constructor (the model's Hugging
Face config), same ``estimate_flops(batch_seqlens, delta_time, images_seqlens=...)`` returning
(achieved TFLOP/s, promised TFLOP/s per device) as floats, the vision tower counted for the images
of ``images_seqlens`` (Qwen-VL types). ``convention="verl"`` reproduces verl's own number; the
default counts exactly. The training FLOPs behind the first value, an exact int, are
:meth:`FlopsCounter.training_flops`.

The promised figure is the dense BF16 peak of flopsreg's table (:mod:`flopsreg.engine.peaks`, each with
its datasheet) for the devices verl's table names and flopsreg's has (A100, H100, H200, B200,
GB200, MI300X, MI355X), found in the device name as verl finds it. For any other device it is
``inf``, verl's own answer for a device it does not know, so MFU reads 0 rather than a made-up
figure: pass ``peak=`` (a :mod:`flopsreg.engine.peaks` name or FLOP/s) to set it.
"""

from __future__ import annotations

import importlib.util
import json
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from flopsreg.declarations.pattern import EXACT
from flopsreg.engine.compose import ModelSelection
from flopsreg.engine.evaluate import evaluate, length_list
from flopsreg.engine.peaks import PEAKS, exact_number, peak_flops
from flopsreg.errors import ModelError
from flopsreg.integrations._shared import default_registry, implausible, keep_selection, time_problem
from flopsreg.model import Model
from flopsreg.patterns.conventions.verl import DENSE_AS_MOE
from flopsreg.registry import Registry

__all__ = ["FlopsCounter"]

# verl's device-table keys that flopsreg's peak table has, and that entry (dense BF16).
VERL_DEVICES = {
    "GB200": "gb200-bf16",
    "B200": "b200-bf16",
    "MI355X": "mi355x-bf16",
    "MI300X": "mi300x-bf16",
    "H200": "h200-bf16",
    "H100": "h100-sxm-bf16",
    "A100": "a100-sxm-bf16",
}
_TERA = 10**12


def config_dict(config: Any) -> dict[str, Any]:
    """The config as the JSON object transformers saves: a dict, a PretrainedConfig or any attribute bag."""
    if isinstance(config, Mapping):
        return dict(config)
    to_dict = getattr(config, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    try:
        fields = vars(config)
    except TypeError:
        raise ModelError(
            f"config = {config!r:.60}: expected a transformers PretrainedConfig, a dict or an object with attributes"
        ) from None
    return {key: value if isinstance(value, (str, int, float, bool, list, type(None))) else config_dict(value)
            for key, value in fields.items() if not key.startswith("_") or key == "_name_or_path"}


def device_peak(device_name: str) -> float:
    """FLOP/s per device for a device name, matched as verl matches it; inf where flopsreg has no figure."""
    for key in sorted(VERL_DEVICES, reverse=True):  # verl's order: 'GB200' before 'B200', 'H200' before 'H100'
        if key in device_name:
            return float(PEAKS[VERL_DEVICES[key]].flops)
    return float("inf")


def _current_device_name() -> str:
    """verl's device: the current CUDA device's name where torch and a GPU are there, else "CPU"."""
    if importlib.util.find_spec("torch") is None:
        return "CPU"
    import torch  # an optional dependency: verl runs with torch, flopsreg does not need it

    return torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU"


class FlopsCounter:
    """Counts the FLOPs of a training step of the model whose Hugging Face *config* it is given.

    Args:
        config: a transformers ``PretrainedConfig``, its ``to_dict()``, or an object whose
            attributes are the config fields (verl's own tests use one).
        convention: ``"exact"`` (the default) or a registered convention such as ``"verl"``.
        registry: the plugins to read and count with; default the built-in and installed ones.
        peak: the promised FLOP/s per device (a :mod:`flopsreg.engine.peaks` name or a number); default
            the current device's, as the module docstring says.
        device_name: the device name to look the peak up by (verl's testing hook); default the
            current device's.
    """

    def __init__(
        self,
        config: Any,
        *,
        convention: str = EXACT,
        registry: Registry | None = None,
        peak: str | float | None = None,
        device_name: str | None = None,
    ) -> None:
        self.config = config
        self.convention = convention
        self.registry = registry or default_registry()
        if peak is not None:
            self.peak = float(peak_flops(peak))
        else:
            self.peak = device_peak(device_name if device_name is not None else _current_device_name())
        self._plan = self._read_plan()  # read now: a config flopsreg cannot count fails here, not mid-training
        dense = [unit.where for unit in self._plan.kinds for sel in unit.selections if sel.pattern.name.endswith(DENSE_AS_MOE)]
        if dense:
            warnings.warn(f"verl counts {', '.join(dense)} as MoE: its estimator ignores the dense layers "
                          "(mlp_only_layers, decoder_sparse_step)", UserWarning, stacklevel=2)

    def _read_plan(self) -> ModelSelection:
        data = config_dict(self.config)
        key = (self.registry, self.convention, json.dumps(data, sort_keys=True, default=repr))
        return keep_selection(key, lambda: self.registry.select(Model.from_hf_config(data, registry=self.registry), convention=self.convention))

    def training_flops(self, batch_seqlens: Sequence[int]) -> int:
        """Exact training FLOPs (forward + backward) of sequences of these valid-token lengths."""
        if type(batch_seqlens) in (list, tuple) and batch_seqlens and all(type(n) is int and n >= 1 for n in batch_seqlens):
            return 3 * sum(map(self._plan.forward, batch_seqlens))  # the training-loop case
        return evaluate(self._plan, None, length_list("batch_seqlens", batch_seqlens, "a list of sequence lengths")).training

    def tower_flops(self, images_seqlens: Sequence[int]) -> int:
        """Training FLOPs of the vision tower over verl's *images_seqlens* (each image's patches,
        h x w of its ``image_grid_thw``), exact or as the convention counts them; 0 for none. The
        images' tokens are in ``batch_seqlens`` already, as verl's trainer counts them."""
        if not images_seqlens:
            return 0
        model = self._plan.model
        merges = [dims["merge"] for _, dims, rule in self.registry.image_towers(model).values() if rule is not None and "merge" in dims]
        if not merges:
            raise ModelError(f"images_seqlens: not counted by flopsreg for {model.name}: it has no vision tower whose patches "
                             "image_grid_thw counts (verl's own estimator ignores them for such a type)")
        groups = merges[0] ** 2
        tokens = []
        for index, patches in enumerate(images_seqlens):
            if type(patches) is not int or patches < 1 or patches % groups:
                raise ModelError(f"images_seqlens[{index}] = {patches!r:.40}: expected the patches of one image, a multiple of "
                                 f"{groups} (h x w of its image_grid_thw, merged {merges[0]} x {merges[0]})")
            tokens.append(patches // groups)
        return 3 * self.registry.images(model, image_tokens=tokens, convention=self.convention).forward

    def estimate_flops(self, batch_seqlens: Sequence[int], delta_time: float, **kwargs: Any) -> tuple[float, float]:
        """(achieved TFLOP/s, promised TFLOP/s per device) for a step of *delta_time* seconds.

        *batch_seqlens* are the valid tokens of each sequence of the step; each attends within
        itself. verl's ``images_seqlens`` (the patches of each image of the step) add the vision
        tower (:meth:`tower_flops`; none or an empty list: no images); other keywords are refused
        when set. A *delta_time* no step takes (negative, nan, infinite, outside 1 ns to 1e7 s) is
        warned about once (:class:`flopsreg.errors.PlausibilityWarning`) and gives verl's own value
        for it; 0, where verl divides by zero, is an error.
        """
        images_seqlens = kwargs.pop("images_seqlens", None)
        extra = {name: value for name, value in kwargs.items() if value is not None}
        if extra:
            raise ModelError(f"{', '.join(extra)}: not counted by flopsreg; leave unset")
        problem = time_problem("delta_time", delta_time)
        flops = self.training_flops(batch_seqlens) + self.tower_flops(images_seqlens or ())
        if problem is None:
            return float(flops / exact_number(delta_time) / _TERA), self.peak / _TERA
        try:
            achieved = flops * (1.0 / delta_time) / 1e12  # verl's own arithmetic
        except ZeroDivisionError:
            raise ModelError(f"delta_time = {delta_time!r}: expected the step time in seconds, > 0 (verl divides by it)") from None
        implausible(f"verl FlopsCounter.estimate_flops: {problem}, which no step takes", stacklevel=2)
        return achieved, self.peak / _TERA
