"""Generation: a prefill of the prompt and one-token decode steps, by closed form.

As vLLM runs it: the prefill computes the prompt's keys and values and the logits of its last
position, which give the first new token; each further token is one decode step over the token
before it, with the prompt and earlier new tokens in the KV cache. So ``new_tokens = T`` costs
the prefill plus T - 1 decode steps, and the decode steps together equal one pass of T - 1 new
tokens after the prompt (each step's logits are its only position's).
"""

from __future__ import annotations

from fractions import Fraction

import attrs

from flopsreg.engine.compose import ModelSelection
from flopsreg.engine.evaluate import Result, evaluate, positive_int

__all__ = ["Generation", "generate"]


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


def generate(plan: ModelSelection, prompt: int, new_tokens: int, batch: int = 1) -> Generation:
    """Exact FLOPs of generating *new_tokens* tokens after a *prompt*-token prompt (see module)."""
    prompt = positive_int("prompt", prompt, "a prompt length in tokens")
    new_tokens = positive_int("new_tokens", new_tokens, "a number of tokens to generate")
    batch = positive_int("batch", batch, "a batch size")
    prefill = evaluate(plan, seq_len=prompt, batch=batch, logits="last")
    decode = None if new_tokens == 1 else evaluate(plan, seq_len=new_tokens - 1, cached=prompt, batch=batch)
    return Generation(prompt=prompt, new_tokens=new_tokens, batch=batch, prefill=prefill, decode=decode)
