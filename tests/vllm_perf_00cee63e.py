"""vLLM's FLOPs estimate for ``--enable-mfu-metrics``, copied verbatim from
``vllm/v1/metrics/perf.py`` at vllm-project/vllm 00cee63e: an oracle for the ``vllm`` convention.

Copied verbatim: ``ExecutionContext`` (add, total_num_tokens, total_token_context_product,
num_logits_tokens), ``AttentionMetrics._layer_counts`` and ``get_num_flops_breakdown``,
``MLAAttentionMetrics.get_num_flops_breakdown``, ``FfnMetrics.get_num_flops_breakdown``,
``UnembedMetrics.get_num_flops_breakdown``, and the step's request loop of
``ModelMetrics.get_step_perf_stats_per_gpu`` (context_len = num_computed_tokens + num_tokens).
The stand-ins: the metrics classes are plain classes (vLLM's are pydantic models) whose fields
:func:`metrics_from_config` sets from a config.json the way vLLM's parsers read it
(BaseConfigParser, BaseAttentionConfigParser, SlidingWindowAttentionParser, MLAConfigParser,
BaseFfnConfigParser, InterleaveMoeLayerStepParser, MoeLayerFreqParser: their logic restated
for a plain dict, with tp = pp = dp = 1 and no quantisation).
"""
# ruff: noqa
# fmt: off

from dataclasses import dataclass, field
from types import SimpleNamespace


@dataclass
class ExecutionContext:
    """Represents an execution context for a batch of requests."""

    # Prefill phase statistics
    num_prefill_requests: int = 0
    prefill_num_tokens: int = 0  # sum of num_tokens for prefill requests
    prefill_context_len: int = 0  # sum of context_len for prefill requests
    prefill_token_context_product: int = 0  # sum of (num_tokens * context_len)

    # Decode phase statistics
    num_decode_requests: int = 0
    decode_num_tokens: int = 0  # sum of num_tokens for decode requests
    decode_context_len: int = 0  # sum of context_len for decode requests
    decode_token_context_product: int = 0  # sum of (num_tokens * context_len)

    # Per-request records: (num_tokens, context_len, is_prefill)
    requests: list[tuple[int, int, bool]] = field(default_factory=list)

    def add(self, num_tokens: int, context_len: int, is_prefill: bool) -> None:
        """Add a single request's statistics to this batch context."""
        self.requests.append((num_tokens, context_len, is_prefill))
        if is_prefill:
            self.num_prefill_requests += 1
            self.prefill_num_tokens += num_tokens
            self.prefill_context_len += context_len
            self.prefill_token_context_product += num_tokens * context_len
        else:
            self.num_decode_requests += 1
            self.decode_num_tokens += num_tokens
            self.decode_context_len += context_len
            self.decode_token_context_product += num_tokens * context_len

    def total_num_tokens(self) -> int:
        """Total number of tokens across all requests in the batch."""
        return self.prefill_num_tokens + self.decode_num_tokens

    def total_token_context_product(self, sliding_window: int | None = None) -> int:
        """Total sum of (num_tokens * context_len) across all requests.

        If sliding_window is provided, context length per request is clamped to
        sliding_window.
        """
        if sliding_window is None:
            return (
                self.prefill_token_context_product + self.decode_token_context_product
            )
        return sum(
            num_tokens * min(context_len, sliding_window)
            for num_tokens, context_len, _ in self.requests
        )

    def num_logits_tokens(self) -> int:
        """Number of tokens that require logits computation (unembedding).

        For prefill, only the last token per request needs logits.
        For decode, all tokens need logits.
        """
        return self.num_prefill_requests + self.decode_num_tokens


class AttentionMetrics:
    def _layer_counts(self, per_gpu: bool) -> tuple[float, float, float]:
        L = float(self.num_hidden_layers)
        L_swa = float(self.num_swa_layers)
        L_full = L - L_swa

        if per_gpu:
            L /= self.pp_size
            L_swa /= self.pp_size
            L_full /= self.pp_size

        return L, L_full, L_swa

    def get_num_flops_breakdown(
        self, ctx: ExecutionContext, per_gpu: bool = True
    ) -> dict[str, int]:
        D, q, kv, d = (
            self.hidden_size,
            self.num_attention_heads,
            self.num_key_value_heads,
            self.head_dim,
        )
        T = ctx.total_num_tokens()
        TC_full = ctx.total_token_context_product()

        L, L_full, L_swa = self._layer_counts(per_gpu)

        if per_gpu:
            # tensor parallel along heads
            q = max(1, q // self.tp_size)
            kv = max(1, kv // self.tp_size)

        flops = {
            "qkv_proj": int(2 * T * D * (q + 2 * kv) * d * L),
            "out_proj": int(2 * T * D * q * d * L),
        }

        attn_qk = 0.0
        attn_av = 0.0
        if L_full > 0:
            attn_qk += 2 * q * TC_full * d * L_full
            attn_av += 2 * q * TC_full * d * L_full

        if L_swa > 0 and self.sliding_window is not None:
            TC_swa = ctx.total_token_context_product(self.sliding_window)
            attn_qk += 2 * q * TC_swa * d * L_swa
            attn_av += 2 * q * TC_swa * d * L_swa

        flops["attn_qk"] = int(attn_qk)
        flops["attn_av"] = int(attn_av)

        return flops


class MLAAttentionMetrics:
    def get_num_flops_breakdown(
        self, ctx: ExecutionContext, per_gpu: bool = True
    ) -> dict[str, int]:
        L = self.num_hidden_layers
        D = self.hidden_size
        q = self.num_attention_heads
        qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
        v_d = self.v_head_dim
        c = self.kv_lora_rank
        r = self.qk_rope_head_dim
        q_rank = self.q_lora_rank

        T = ctx.total_num_tokens()
        TC = ctx.total_token_context_product()

        if per_gpu:
            L //= self.pp_size
            q = max(1, q // self.tp_size)

        flops: dict[str, int] = {}

        # Q projection
        if q_rank is not None:
            # Two-stage: h -> q_lora_rank -> num_heads * qk_head_dim
            flops["q_a_proj"] = 2 * T * D * q_rank * L
            flops["q_b_proj"] = 2 * T * q_rank * q * qk_head_dim * L
        else:
            # Direct: h -> num_heads * qk_head_dim
            flops["q_proj"] = 2 * T * D * q * qk_head_dim * L

        # KV projection (always compressed, shared across heads)
        # kv_a: h -> (kv_lora_rank + qk_rope_head_dim)  [replicated]
        flops["kv_a_proj"] = 2 * T * D * (c + r) * L
        # kv_b: kv_lora_rank -> num_heads * (qk_nope + v_head_dim)
        flops["kv_b_proj"] = 2 * T * c * q * (self.qk_nope_head_dim + v_d) * L

        # Attention core
        flops["attn_qk"] = 2 * q * TC * qk_head_dim * L
        flops["attn_av"] = 2 * q * TC * v_d * L

        # Output projection: num_heads * v_head_dim -> h
        flops["out_proj"] = 2 * T * q * v_d * D * L

        return flops


class FfnMetrics:
    def get_num_flops_breakdown(
        self, ctx: ExecutionContext, per_gpu: bool = True
    ) -> dict[str, int]:
        """Calculate flops breakdown for FFN layers."""
        L, D, DI = self.num_hidden_layers, self.hidden_size, self.intermediate_size
        Lm, E, MI, S = (
            self.num_moe_layers,
            self.num_experts_per_tok,
            self.moe_intermediate_size,
            self.num_shared_experts,
        )
        T = ctx.total_num_tokens()

        Ld = L - Lm

        num_activated_tokens = T * E if E else 0

        if per_gpu:
            Ld //= self.pp_size
            Lm //= self.pp_size

            DI //= self.ffn_tp_size
            if MI is not None:
                MI //= self.ffn_tp_size
            if E:
                num_activated_tokens //= self.ffn_ep_size

        flops = {}

        # Dense FFN layers (SwiGLU: 3 linear layers: up, gate, down)
        if Ld:
            flops["dense_ffn"] = 2 * D * 3 * DI * T * Ld

        # MoE routed experts (each token activates E experts)
        if Lm and E:
            flops["routed_ffn"] = 2 * D * 3 * MI * num_activated_tokens * Lm

        # MoE shared experts (all S shared experts run for every token)
        if Lm and S:
            flops["shared_ffn"] = 2 * D * 3 * MI * S * T * Lm

        return flops


class UnembedMetrics:
    def get_num_flops_breakdown(
        self, ctx: ExecutionContext, per_gpu: bool = True
    ) -> dict[str, int]:
        """Calculate flops breakdown for unembedding layer."""
        D, V = self.hidden_size, self.vocab_size
        T = ctx.num_logits_tokens()

        if per_gpu:
            V //= self.tp_size

        return {
            "unembed": 2 * T * D * V,
        }


# -- stand-ins: the parsers' reading of a config.json, and the scheduler's requests ---------------


def _set(metric, fields):
    for name, value in fields.items():
        setattr(metric, name, value)
    return metric


def metrics_from_config(cfg: dict) -> list:
    """The component metrics vLLM instantiates for *cfg* (a text config.json as a dict)."""
    L = cfg["num_hidden_layers"]
    heads = cfg["num_attention_heads"]
    base = {"vocab_size": cfg["vocab_size"], "hidden_size": cfg["hidden_size"], "num_attention_heads": heads,
            "num_hidden_layers": L, "tp_size": 1, "pp_size": 1}
    is_mla = "kv_lora_rank" in cfg  # ModelConfig.is_deepseek_mla
    metrics = []
    if is_mla:
        metrics.append(_set(MLAAttentionMetrics(), {**base, **{k: cfg[k] for k in (
            "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")}, "q_lora_rank": cfg.get("q_lora_rank")}))
    else:
        window = cfg.get("sliding_window")
        swa = 0
        if window is not None and window > 0:
            layer_types = cfg.get("layer_types")
            if isinstance(layer_types, list):
                swa = sum(1 for lt in layer_types[:L] if "sliding" in lt.lower())
            elif cfg.get("model_type") == "gemma2":
                swa = (L + 1) // 2  # Gemma 2 alternates sliding window: even layers (0, 2, ...) are sliding
            else:
                swa = L
        metrics.append(_set(AttentionMetrics(), {
            **base, "num_key_value_heads": cfg.get("num_key_value_heads", heads),
            "head_dim": cfg.get("head_dim") or cfg["hidden_size"] // heads, "sliding_window": window, "num_swa_layers": swa}))
    experts = cfg.get("n_routed_experts") or cfg.get("num_experts") or cfg.get("num_local_experts") or 0
    moe_layers = L if experts else 0
    if cfg.get("interleave_moe_layer_step", 0) > 0:
        moe_layers = len([layer for layer in range(L) if (layer + 1) % cfg["interleave_moe_layer_step"] == 0])
    if "moe_layer_freq" in cfg and "first_k_dense_replace" in cfg:
        moe_layers = len([layer for layer in range(L) if layer >= cfg["first_k_dense_replace"] and layer % cfg["moe_layer_freq"] == 0])
    metrics.append(_set(FfnMetrics(), {
        **base, "intermediate_size": cfg.get("intermediate_size", cfg["hidden_size"] * 4), "num_experts": experts,
        "num_experts_per_tok": cfg.get("num_experts_per_tok", 0) if experts else 0,
        "moe_intermediate_size": cfg.get("moe_intermediate_size", cfg.get("intermediate_size", 0)),
        "num_shared_experts": cfg.get("n_shared_experts", cfg.get("num_shared_experts", 0)) or 0,
        "num_moe_layers": moe_layers, "ffn_tp_size": 1, "ffn_ep_size": 1}))
    metrics.append(_set(UnembedMetrics(), base))
    return metrics


def step_flops(cfg: dict, requests) -> int:
    """vLLM's FLOPs for one scheduled step: *requests* as (num_tokens, num_computed_tokens,
    is_new_request) in the order of get_step_perf_stats_per_gpu's two loops."""
    ctx = ExecutionContext()
    for num_tokens, num_computed_tokens, new in requests:
        context_len = num_computed_tokens + num_tokens
        ctx.add(num_tokens, context_len, is_prefill=True if new else num_tokens > 1)
    return sum(sum(m.get_num_flops_breakdown(ctx, per_gpu=False).values()) for m in metrics_from_config(cfg))
