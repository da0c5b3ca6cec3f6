"""vLLM's read and write bytes of a scheduled step, reproduced: what its MBU divides by.

``vllm/v1/metrics/perf.py`` (vllm-project/vllm 00cee63e) estimates, beside its FLOPs, the bytes
each component reads and writes (``get_read_bytes_breakdown`` / ``get_write_bytes_breakdown`` of
``AttentionMetrics``, ``MLAAttentionMetrics``, ``FfnMetrics`` and ``UnembedMetrics``): every
matmul's input activations and weights read and its output written, the attention inputs (a
prefill's K and V read as activations over its whole context, a decode's from the KV cache), the
new tokens' KV written to the cache, and the routed experts ``min(tokens x top_k, E)`` a step
touches. :func:`vllm_step_bytes` restates them per layer of a flopsreg model, keyed as vLLM's
``ModelMetrics`` keys them, for the whole model (``per_gpu=False``); it evaluates the step with
``convention="vllm"`` first, so what that convention refuses is refused here too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

import attrs

from flopsreg.engine.traffic import MemoryUtilisation, Traffic
from flopsreg.errors import ModelError
from flopsreg.model import Model, as_int, shown
from flopsreg.patterns.conventions.vllm import NAME, NO_SHARED_FIELD
from flopsreg.plugin import family_flag

if TYPE_CHECKING:
    from flopsreg.registry import Registry

__all__ = ["VllmStep", "vllm_step_bytes"]


@attrs.frozen(kw_only=True)
class VllmStep:
    """vLLM's estimate of one step: its FLOPs and its read and write bytes per component term
    (``"attn.qkv_weight"``, ``"ffn.routed_up_gate_weights"``, ... as vLLM's debug breakdown names them)."""

    flops: int
    read: dict[str, int]
    written: dict[str, int]

    @property
    def read_bytes(self) -> int:
        return sum(self.read.values())

    @property
    def written_bytes(self) -> int:
        return sum(self.written.values())

    @property
    def total(self) -> int:
        """Bytes read and written: what vLLM's GB/s per device (and so its MBU) counts."""
        return self.read_bytes + self.written_bytes

    def mbu(self, *, step_time: float | Fraction | str, bandwidth: int | float | Fraction | str, devices: int = 1) -> MemoryUtilisation:
        """vLLM's MBU of a step measured at *step_time*: :meth:`Traffic.mbu` over vLLM's bytes."""
        traffic = Traffic(flops=self.flops, weights_read=self.read_bytes, experts_read=0, kv_read=0, state_read=0,
                          kv_written=self.written_bytes, state_written=0)
        return traffic.mbu(step_time=step_time, bandwidth=bandwidth, devices=devices)


def _size(name: str, value: object) -> int | Fraction:
    """A byte size per element: a positive integer, or a fraction (vLLM's 0.5 for 4-bit weights)."""
    if isinstance(value, Fraction) and value > 0:
        return value
    number = as_int(value)
    if number is None or number < 1:
        raise ModelError(f"{name}: {shown(value)}: expected bytes per element, an integer >= 1 or a positive Fraction")
    return number


class _Needed(dict):  # type: ignore[type-arg]
    """A model's parameters, where one vLLM's formulas read and the model lacks is one line naming it."""

    def __init__(self, params: Mapping[str, int], where: str) -> None:
        super().__init__(params)
        self.where = where

    def __missing__(self, key: str) -> int:
        raise ModelError(f"{self.where}: parameter {key!r}: missing; vLLM's byte estimate reads it (see docs/conventions.md, vllm)")


def _add(into: dict[str, Fraction], key: str, value: int | Fraction) -> None:
    """Sum a term over layers exactly; vLLM truncates each term's model total once, with int()."""
    into[key] = into.get(key, 0) + value


def vllm_step_bytes(
    registry: Registry,
    model: Model,
    requests: Sequence[tuple[int, int]],
    *,
    weight_bytes: int | Fraction = 2,
    activation_bytes: int = 2,
    cache_bytes: int | None = None,
) -> VllmStep:
    """vLLM's FLOPs and read/write bytes of the step *requests* ((new tokens, cached tokens) each),
    with vLLM's byte sizes per element: weights (its quantisation's, e.g. 0.5 as Fraction(1, 2)),
    activations (the model dtype) and KV cache (``--kv-cache-dtype``; the activations' by default)."""
    flops = registry.evaluate(model, requests=requests, convention=NAME).forward
    wb, ab = _size("weight_bytes", weight_bytes), _size("activation_bytes", activation_bytes)
    cb = ab if cache_bytes is None else _size("cache_bytes", cache_bytes)
    reqs = [(new, cached + new, cached == 0 or new > 1) for new, cached in requests]
    T = sum(n for n, _, _ in reqs)
    prefill_tokens = sum(n for n, _, p in reqs if p)
    decode_tokens = T - prefill_tokens
    logits_tokens = sum(1 for _, _, p in reqs if p) + decode_tokens
    no_shared = any(family_flag(t) in model.flags for t in NO_SHARED_FIELD)
    read: dict[str, Fraction] = {}
    written: dict[str, Fraction] = {}
    for layer in model.layers:
        p = _Needed(layer.params, f"layer {layer.index}")
        D, q = p["hidden"], p["heads"]
        window = p["window"] if "sliding_window" in layer.flags else None

        def context(prefill: bool, window: int | None = window) -> int:
            return sum(c if window is None else min(c, window) for _, c, pre in reqs if pre == prefill)

        if "kv_lora_rank" in p:
            c, r, nope, v = p["kv_lora_rank"], p["qk_rope_head_dim"], p["qk_nope_head_dim"], p["v_head_dim"]
            qk, q_rank = nope + r, p.get("q_lora_rank")
            if q_rank is not None:
                for key, value in (("q_a_input", T * D * ab), ("q_a_weight", D * q_rank * wb), ("q_b_input", T * q_rank * ab),
                                   ("q_b_weight", q_rank * q * qk * wb)):
                    _add(read, f"mla_attn.{key}", value)
                _add(written, "mla_attn.q_a_output", T * q_rank * ab)
                _add(written, "mla_attn.q_b_output", T * q * qk * ab)
            else:
                _add(read, "mla_attn.q_input", T * D * ab)
                _add(read, "mla_attn.q_weight", D * q * qk * wb)
                _add(written, "mla_attn.q_output", T * q * qk * ab)
            for key, value in (("kv_a_input", T * D * ab), ("kv_a_weight", D * (c + r) * wb), ("kv_b_input", T * c * ab),
                               ("kv_b_weight", c * q * (nope + v) * wb)):
                _add(read, f"mla_attn.{key}", value)
            if T:
                attn = prefill_tokens * q * qk * ab + context(True, None) * q * (qk + v) * ab if prefill_tokens else 0
                if decode_tokens:
                    attn += decode_tokens * q * qk * ab + context(False, None) * (c + r) * cb
                _add(read, "mla_attn.attn_input", attn)
            _add(read, "mla_attn.out_input", T * q * v * ab)
            _add(read, "mla_attn.out_weight", q * v * D * wb)
            for key, value in (("kv_a_output", T * (c + r) * ab), ("kv_b_output", T * q * (nope + v) * ab),
                               ("kv_cache", T * (c + r) * cb), ("out_output", T * D * ab)):
                _add(written, f"mla_attn.{key}", value)
        else:
            kv, d = p["kv_heads"], p["head_dim"]
            _add(read, "attn.qkv_input", T * D * ab)
            _add(read, "attn.qkv_weight", D * (q + 2 * kv) * d * wb)
            if T:
                attn = (prefill_tokens * q + 2 * context(True) * kv) * d * ab if prefill_tokens else 0
                if decode_tokens:
                    attn += decode_tokens * q * d * ab + 2 * context(False) * kv * d * cb
                _add(read, "attn.attn_input", attn)
            _add(read, "attn.out_input", T * q * d * ab)
            _add(read, "attn.out_weight", q * d * D * wb)
            _add(written, "attn.qkv_output", T * (q + 2 * kv) * d * ab)
            _add(written, "attn.kv_cache", 2 * T * kv * d * cb)
            _add(written, "attn.out_output", T * D * ab)
        if "moe" in layer.flags:
            MI, E, k = p["expert_hidden"], p["experts"], p["top_k"]
            S = 0 if no_shared or "shared_experts" not in layer.flags else p["shared_hidden"] // MI
            tokens, experts = T * k, min(T * k, E)
            for key, value in (("routed_up_gate_input", tokens * D * ab), ("routed_up_gate_weights", 2 * D * MI * experts * wb),
                               ("routed_silu_input", 2 * tokens * MI * ab), ("routed_down_input", tokens * MI * ab),
                               ("routed_down_weights", D * MI * experts * wb)):
                _add(read, f"ffn.{key}", value)
            for key, value in (("routed_up_gate_output", 2 * tokens * MI * ab), ("routed_silu_output", tokens * MI * ab),
                               ("routed_down_output", tokens * D * ab)):
                _add(written, f"ffn.{key}", value)
            if S:
                # vLLM's shared_down_input is T x MI, not T x MI x S (as at 00cee63e)
                for key, value in (("shared_up_gate_input", T * D * ab), ("shared_up_gate_weights", 2 * D * MI * S * wb),
                                   ("shared_silu_input", 2 * T * MI * S * ab), ("shared_down_input", T * MI * ab),
                                   ("shared_down_weights", D * MI * S * wb)):
                    _add(read, f"ffn.{key}", value)
                for key, value in (("shared_up_gate_output", 2 * T * S * MI * ab), ("shared_silu_output", T * S * MI * ab),
                                   ("shared_down_output", T * S * D * ab)):
                    _add(written, f"ffn.{key}", value)
        else:
            DI = p["ffn_hidden"]
            for key, value in (("dense_up_gate_input", T * D * ab), ("dense_up_gate_weights", 2 * D * DI * wb),
                               ("dense_silu_input", 2 * T * DI * ab), ("dense_down_input", T * DI * ab),
                               ("dense_down_weights", D * DI * wb)):
                _add(read, f"ffn.{key}", value)
            for key, value in (("dense_up_gate_output", 2 * T * DI * ab), ("dense_silu_output", T * DI * ab),
                               ("dense_down_output", T * D * ab)):
                _add(written, f"ffn.{key}", value)
    top = _Needed(model.params, "model")
    D, V = top["hidden"], top["vocab"]
    read.update({"unembed.input": logits_tokens * D * ab, "unembed.weight": D * V * wb})
    written["unembed.output"] = logits_tokens * V * ab
    return VllmStep(flops=flops, read={k: int(v) for k, v in read.items()}, written={k: int(v) for k, v in written.items()})
