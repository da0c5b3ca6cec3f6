"""Generation: a prefill of the prompt and one-token decode steps, by closed form.

As vLLM runs it: the prefill computes the prompt's keys and values and the logits of its last
position, which give the first new token; each further token is one decode step over the token
before it, with the prompt and earlier new tokens in the KV cache. So ``new_tokens = T`` costs
the prefill plus T - 1 decode steps, and the decode steps together equal one pass of T - 1 new
tokens after the prompt (each step's logits are its only position's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from fractions import Fraction
from functools import partial
from typing import Any

import attrs

from flopsreg.engine.compose import ModelSelection
from flopsreg.engine.evaluate import Result, evaluate, positive_int
from flopsreg.engine.peaks import PEAKS, bandwidth_bytes, peak_flops
from flopsreg.engine.traffic import Roofline, Traffic
from flopsreg.errors import ModelError
from flopsreg.model import shown

__all__ = ["Generation", "GenerationBounds", "generate"]


@attrs.frozen
class Generation:
    """Exact FLOPs of generating ``new_tokens`` tokens after a ``prompt``-token prompt, per phase."""

    prompt: int
    new_tokens: int
    batch: int
    prefill: Result  # the prompt, logits at its last position
    decode: Result | None  # the T - 1 decode steps together (None when T = 1)

    @property
    def decode_steps(self) -> int:
        return self.new_tokens - 1

    @property
    def prefill_flops(self) -> int:
        return self.prefill.forward

    @property
    def decode_flops(self) -> int:
        return 0 if self.decode is None else self.decode.forward

    @property
    def total(self) -> int:
        return self.prefill_flops + self.decode_flops

    @property
    def per_token(self) -> Fraction:
        """FLOPs per generated token, prefill included."""
        return Fraction(self.total, self.batch * self.new_tokens)

    @property
    def decode_per_token(self) -> Fraction | None:
        """FLOPs per decode step and sequence, averaged over the steps (None without decode steps)."""
        return None if self.decode is None else Fraction(self.decode_flops, self.batch * self.decode_steps)

    def steps(self) -> Iterator[Result]:
        """Each decode step as the serving step it is: ``batch`` requests of one new token after
        the prompt and the tokens generated before it."""
        plan, prompt = self.prefill.selection, self.prefill.seqlens[0]  # the prompt's positions, image tokens included
        for generated in range(1, self.new_tokens):
            yield evaluate(plan, requests=[(1, prompt + generated - 1)], batch=self.batch)

    def bounds(
        self,
        *,
        peak: str | int | float | Fraction,
        bandwidth: str | int | float | Fraction | None = None,
        devices: int = 1,
        all_experts: bool = False,
        **formats: Any,
    ) -> GenerationBounds:
        """Each phase's bytes (:meth:`Result.traffic`, *formats* its dtype options, every routed
        expert read with *all_experts*) and roofline bound on *devices* devices of *peak* FLOP/s
        and *bandwidth* bytes/s each (numbers or names from ``flopsreg peaks``; by default the
        bandwidth of the device *peak* names). The decode steps' traffic is their sum, each step
        reading the weights again; their bound is the larger of their summed compute and memory
        times (a lower bound on the sum of each step's)."""
        if bandwidth is None:
            if not (isinstance(peak, str) and peak.strip().lower() in PEAKS):
                raise ModelError(f"bandwidth: none given, and peak {shown(peak)} names no device: give the memory bytes/s per device")
            bandwidth = peak
        declared = self.prefill.step_bytes(**formats)
        prefill = self.prefill.traffic(declared, all_experts=all_experts)
        decode = None
        for step in self.steps():
            traffic = step.traffic(declared, all_experts=all_experts)
            decode = traffic if decode is None else decode + traffic
        hardware = {"peak": peak, "bandwidth": bandwidth, "devices": devices}
        return GenerationBounds(
            generation=self, devices=devices, peak=peak_flops(peak), bandwidth=bandwidth_bytes(bandwidth),
            prefill=prefill, prefill_roofline=prefill.roofline(**hardware),
            decode=decode, decode_roofline=None if decode is None else decode.roofline(**hardware),
        )

    def to_text(self) -> str:
        return self.prefill.selection.render.generation_text(self)

    def to_dict(self) -> dict:
        return self.prefill.selection.render.generation_json(self)

    def __repr__(self) -> str:
        """Short: the model, the lengths and the total (the attrs dump holds two whole results)."""
        return f"Generation(model={self.prefill.model.name!r}, prompt={self.prompt}, new_tokens={self.new_tokens}, batch={self.batch}, total={self.total})"

    def _repr_markdown_(self) -> str:
        """Jupyter: prefill, decode, total and FLOPs per generated token."""
        return self.prefill.selection.render.generation_markdown(self)


@attrs.frozen(kw_only=True)
class GenerationBounds:
    """A generation's bytes and roofline bound per phase (see :meth:`Generation.bounds`)."""

    generation: Generation
    devices: int
    peak: Fraction  # FLOP/s per device
    bandwidth: Fraction  # bytes/s per device
    prefill: Traffic
    prefill_roofline: Roofline
    decode: Traffic | None  # every decode step's together (None when T = 1)
    decode_roofline: Roofline | None

    def to_text(self) -> str:
        return self.generation.prefill.selection.render.generation_bounds_text(self)

    def to_dict(self) -> dict[str, Any]:
        """Equal to ``flopsreg generate --peak ... --format json`` for the same model and numbers."""
        return self.generation.prefill.selection.render.generation_bounds_json(self)

    def __str__(self) -> str:
        return self.to_text()

    def _repr_markdown_(self) -> str:
        """Jupyter: each phase's FLOPs, bytes, intensity and roofline bound."""
        return self.generation.prefill.selection.render.generation_bounds_markdown(self)

    def __repr__(self) -> str:
        return f"GenerationBounds(model={self.generation.prefill.model.name!r}, prompt={self.generation.prompt}, new_tokens={self.generation.new_tokens})"


def generate(plan: ModelSelection, prompt: int, new_tokens: int, batch: int = 1, step: Callable[..., Result] | None = None) -> Generation:
    """Exact FLOPs of generating *new_tokens* tokens after a *prompt*-token prompt (see module);
    *step* evaluates each phase in place of :func:`evaluate` on *plan* (the registry's, with the
    prompt's images: the prefill encodes them, the decode steps find them in the cache)."""
    prompt = positive_int("prompt", prompt, "a prompt length in tokens")
    new_tokens = positive_int("new_tokens", new_tokens, "a number of tokens to generate")
    batch = positive_int("batch", batch, "a batch size")
    run = step or partial(evaluate, plan)
    prefill = run(seq_len=prompt, batch=batch, logits="last")
    decode = None if new_tokens == 1 else run(seq_len=new_tokens - 1, cached=prefill.seqlens[0], batch=batch)
    return Generation(prompt=prompt, new_tokens=new_tokens, batch=batch, prefill=prefill, decode=decode)
