"""A drop-in for nanoGPT's ``GPT.estimate_mfu(fwdbwd_per_iter, dt)``.

In nanoGPT's ``train.py`` replace ``raw_model.estimate_mfu(batch_size * gradient_accumulation_steps, dt)``
with ``estimate_mfu(raw_model, batch_size * gradient_accumulation_steps, dt)`` from this module:
the same arguments and the same unit (a fraction of the A100's 312 TFLOP/s bfloat16 peak). By
default the FLOPs are exact (causal pairs, the k routed experts, no FLOPs for weights without
matmuls); ``convention="nanogpt"`` reproduces nanoGPT's own ``6N + 12 L H Q T`` to the digit.
"""

from __future__ import annotations

from typing import Any

from flopsreg.declarations.pattern import EXACT
from flopsreg.errors import ModelError
from flopsreg.integrations._shared import attribute, default_registry, implausible, time_problem
from flopsreg.model import Model, as_int, shown
from flopsreg.registry import Registry

__all__ = ["A100_BF16_PEAK", "estimate_mfu", "gpt_model"]

A100_BF16_PEAK = 312e12  # FLOP/s, the peak nanoGPT divides by


def _field(config: Any, name: str) -> int:
    value = attribute(config, "config", name, f" (nanoGPT GPTConfig.{name})")
    number = as_int(value)  # numpy integers too
    if number is None or number < 1:
        raise ModelError(f"config.{name} = {shown(value)}: expected an integer >= 1 (nanoGPT GPTConfig.{name})")
    return number


def _config(model: Any) -> Any:
    """The GPTConfig of a GPT (its ``.config``), or *model* itself when it is one."""
    if model is None:
        raise ModelError("model = None: expected nanoGPT's GPT, or its GPTConfig")
    return getattr(model, "config", model)


def gpt_model(config: Any) -> Model:
    """nanoGPT's GPT as a flopsreg model, from its ``GPTConfig`` (or a GPT holding one as ``.config``):
    LayerNorms and biases when ``bias`` is true (a LayerNorm without bias otherwise), multi-head
    attention through one fused qkv projection, a 4 x n_embd GELU MLP, learned positions of
    ``block_size``, and a head tied to the token embedding."""
    config = _config(config)
    hidden, heads = _field(config, "n_embd"), _field(config, "n_head")
    if hidden % heads:
        raise ModelError(f"config.n_embd = {hidden}: not a multiple of config.n_head = {heads} (nanoGPT asserts it)")
    bias = attribute(config, "config", "bias", " (nanoGPT GPTConfig.bias)")
    if not isinstance(bias, bool):
        raise ModelError(f"config.bias = {bias!r}: expected True or False (nanoGPT GPTConfig.bias)")
    flags = {"lm_head", "mlp", "norms", "tied_embeddings", "learned_positions"}
    if bias:
        flags |= {"norm_bias", "attention_bias", "mlp_bias"}
    return Model.uniform(
        "nanogpt",
        layers=_field(config, "n_layer"),
        flags=flags,
        hidden=hidden,
        heads=heads,
        kv_heads=heads,
        head_dim=hidden // heads,
        ffn_hidden=4 * hidden,
        vocab=_field(config, "vocab_size"),
        max_positions=_field(config, "block_size"),
    )


def estimate_mfu(
    model: Any, fwdbwd_per_iter: int, dt: float, *, convention: str = EXACT, registry: Registry | None = None
) -> float:
    """Model FLOPs utilisation of one iteration of *fwdbwd_per_iter* sequences of ``block_size``
    tokens that took *dt* seconds, as a fraction of the A100 bfloat16 peak (312 TFLOP/s).

    A *dt* no iteration takes (negative, nan, infinite, outside 1 ns to 1e7 s) is warned about
    once (:class:`flopsreg.errors.PlausibilityWarning`) and gives nanoGPT's own value for it;
    ``dt = 0``, where nanoGPT divides by zero, is a :class:`~flopsreg.ModelError` naming ``dt``.
    """
    batch = as_int(fwdbwd_per_iter)  # numpy integers too
    if batch is None or batch < 1:
        raise ModelError(f"fwdbwd_per_iter = {shown(fwdbwd_per_iter)}: expected an integer >= 1 (sequences per iteration)")
    problem = time_problem("dt", dt)
    config = _config(model)
    flops = (registry or default_registry()).evaluate(
        gpt_model(config), seq_len=_field(config, "block_size"), batch=batch, convention=convention
    ).training
    try:  # nanoGPT's own order of operations, so that convention="nanogpt" gives its float to the last bit
        mfu = flops * (1.0 / dt) / A100_BF16_PEAK
    except ZeroDivisionError:
        raise ModelError(f"dt = {dt!r}: expected the iteration time in seconds, > 0 (nanoGPT divides by it)") from None
    if problem is not None:
        implausible(f"nanoGPT estimate_mfu: {problem}, which no iteration takes", stacklevel=2)
    return mfu
