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


# -- read and write bytes (same file and commit): get_read_bytes_breakdown / get_write_bytes_breakdown,
# copied verbatim as functions of self and set on the classes above, with ExecutionContext's
# prefill_context_len_for_window and decode_context_len_for_window -----------------------------------


def prefill_context_len_for_window(self, sliding_window: int | None = None) -> int:
    """Sum of context_len for prefill requests, clamped to sliding_window if set."""
    if sliding_window is None:
        return self.prefill_context_len
    return sum(
        min(context_len, sliding_window)
        for _, context_len, is_prefill in self.requests
        if is_prefill
    )


def decode_context_len_for_window(self, sliding_window: int | None = None) -> int:
    """Sum of context_len for decode requests, clamped to sliding_window if set."""
    if sliding_window is None:
        return self.decode_context_len
    return sum(
        min(context_len, sliding_window)
        for _, context_len, is_prefill in self.requests
        if not is_prefill
    )


def attention_read_bytes(
    self, ctx: ExecutionContext, per_gpu: bool = True
) -> dict[str, int]:
    D, q, kv, d = (
        self.hidden_size,
        self.num_attention_heads,
        self.num_key_value_heads,
        self.head_dim,
    )
    T = ctx.total_num_tokens()

    L, L_full, L_swa = self._layer_counts(per_gpu)

    if per_gpu:
        # tensor parallel along heads
        q = max(1, q // self.tp_size)
        kv = max(1, kv // self.tp_size)

    read_bytes = {}

    read_bytes["qkv_input"] = int(T * D * self.activation_byte_size * L)
    read_bytes["qkv_weight"] = int(D * (q + 2 * kv) * d * self.weight_byte_size * L)

    attn_input = 0.0

    # Full attention layers
    if L_full > 0:
        if ctx.prefill_num_tokens > 0:
            attn_input += (
                (ctx.prefill_num_tokens * q + 2 * ctx.prefill_context_len * kv)
                * d
                * self.activation_byte_size
                * L_full
            )
        if ctx.decode_num_tokens > 0:
            attn_input += (
                ctx.decode_num_tokens * q * d * self.activation_byte_size * L_full
                + 2
                * ctx.decode_context_len
                * kv
                * d
                * self.cache_byte_size
                * L_full
            )

    # Sliding window attention layers
    if L_swa > 0:
        sw = self.sliding_window
        prefill_sw_len = ctx.prefill_context_len_for_window(sw)
        decode_sw_len = ctx.decode_context_len_for_window(sw)

        if ctx.prefill_num_tokens > 0:
            attn_input += (
                (ctx.prefill_num_tokens * q + 2 * prefill_sw_len * kv)
                * d
                * self.activation_byte_size
                * L_swa
            )
        if ctx.decode_num_tokens > 0:
            attn_input += (
                ctx.decode_num_tokens * q * d * self.activation_byte_size * L_swa
                + 2 * decode_sw_len * kv * d * self.cache_byte_size * L_swa
            )

    if ctx.prefill_num_tokens > 0 or ctx.decode_num_tokens > 0:
        read_bytes["attn_input"] = int(attn_input)

    read_bytes["out_input"] = int(T * q * d * self.activation_byte_size * L)
    read_bytes["out_weight"] = int(q * d * D * self.weight_byte_size * L)

    return read_bytes


def attention_write_bytes(
    self, ctx: ExecutionContext, per_gpu: bool = True
) -> dict[str, int]:
    D, q, kv, d = (
        self.hidden_size,
        self.num_attention_heads,
        self.num_key_value_heads,
        self.head_dim,
    )
    T = ctx.total_num_tokens()

    L, _, _ = self._layer_counts(per_gpu)

    if per_gpu:
        # tensor parallel along heads
        q = max(1, q // self.tp_size)
        kv = max(1, kv // self.tp_size)

    return {
        "qkv_output": int(T * (q + 2 * kv) * d * self.activation_byte_size * L),
        "kv_cache": int(2 * T * kv * d * self.cache_byte_size * L),
        "out_output": int(T * D * self.activation_byte_size * L),
    }


def mla_read_bytes(
    self, ctx: ExecutionContext, per_gpu: bool = True
) -> dict[str, int]:
    """Calculate read memory traffic for MLA attention layers."""
    L = self.num_hidden_layers
    D = self.hidden_size
    q = self.num_attention_heads
    qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
    v_d = self.v_head_dim
    c = self.kv_lora_rank
    r = self.qk_rope_head_dim
    q_rank = self.q_lora_rank

    T = ctx.total_num_tokens()
    # Compressed KV cache size per token
    kv_compressed_dim = c + r

    if per_gpu:
        L //= self.pp_size
        q = max(1, q // self.tp_size)

    read_bytes: dict[str, int] = {}

    # Q projection weight + input reads
    if q_rank is not None:
        read_bytes["q_a_input"] = T * D * self.activation_byte_size * L
        read_bytes["q_a_weight"] = int(D * q_rank * self.weight_byte_size * L)
        read_bytes["q_b_input"] = T * q_rank * self.activation_byte_size * L
        read_bytes["q_b_weight"] = int(
            q_rank * q * qk_head_dim * self.weight_byte_size * L
        )
    else:
        read_bytes["q_input"] = T * D * self.activation_byte_size * L
        read_bytes["q_weight"] = int(
            D * q * qk_head_dim * self.weight_byte_size * L
        )

    # KV projection weight + input reads
    # kv_a is replicated (not TP-sharded)
    read_bytes["kv_a_input"] = T * D * self.activation_byte_size * L
    read_bytes["kv_a_weight"] = int(
        D * kv_compressed_dim * self.weight_byte_size * L
    )
    # kv_b is TP-sharded along heads
    read_bytes["kv_b_input"] = T * c * self.activation_byte_size * L
    read_bytes["kv_b_weight"] = int(
        c * q * (self.qk_nope_head_dim + v_d) * self.weight_byte_size * L
    )

    # Attention input reads
    # Prefill: read Q activations + K,V from kv_b_proj output
    if ctx.prefill_num_tokens > 0:
        read_bytes["attn_input"] = (
            ctx.prefill_num_tokens * q * qk_head_dim * self.activation_byte_size * L
            + ctx.prefill_context_len
            * q
            * (qk_head_dim + v_d)
            * self.activation_byte_size
            * L
        )

    # Decode: read Q activations + read compressed KV from cache
    if ctx.decode_num_tokens > 0:
        read_bytes["attn_input"] = read_bytes.get("attn_input", 0) + (
            ctx.decode_num_tokens * q * qk_head_dim * self.activation_byte_size * L
            + ctx.decode_context_len * kv_compressed_dim * self.cache_byte_size * L
        )

    # Output projection reads
    read_bytes["out_input"] = T * q * v_d * self.activation_byte_size * L
    read_bytes["out_weight"] = int(q * v_d * D * self.weight_byte_size * L)

    return read_bytes


def mla_write_bytes(
    self, ctx: ExecutionContext, per_gpu: bool = True
) -> dict[str, int]:
    """Calculate write memory traffic for MLA attention layers."""
    L = self.num_hidden_layers
    D = self.hidden_size
    q = self.num_attention_heads
    qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
    v_d = self.v_head_dim
    c = self.kv_lora_rank
    r = self.qk_rope_head_dim
    q_rank = self.q_lora_rank

    T = ctx.total_num_tokens()
    kv_compressed_dim = c + r

    if per_gpu:
        L //= self.pp_size
        q = max(1, q // self.tp_size)

    write_bytes: dict[str, int] = {}

    # Q projection outputs
    if q_rank is not None:
        write_bytes["q_a_output"] = T * q_rank * self.activation_byte_size * L
        write_bytes["q_b_output"] = (
            T * q * qk_head_dim * self.activation_byte_size * L
        )
    else:
        write_bytes["q_output"] = (
            T * q * qk_head_dim * self.activation_byte_size * L
        )

    # KV projection outputs
    write_bytes["kv_a_output"] = (
        T * kv_compressed_dim * self.activation_byte_size * L
    )
    write_bytes["kv_b_output"] = (
        T * q * (self.qk_nope_head_dim + v_d) * self.activation_byte_size * L
    )

    # KV cache write: one compressed vector per token
    # (kv_lora_rank + qk_rope_head_dim) instead of
    # 2 * num_kv_heads * head_dim in standard MHA
    write_bytes["kv_cache"] = T * kv_compressed_dim * self.cache_byte_size * L

    # Output projection
    write_bytes["out_output"] = T * D * self.activation_byte_size * L

    return write_bytes


def ffn_read_bytes(
    self, ctx: ExecutionContext, per_gpu: bool = True
) -> dict[str, int]:
    """Calculate read memory traffic for FFN layers."""
    L, D, DI = self.num_hidden_layers, self.hidden_size, self.intermediate_size
    Lm, E, MI, S = (
        self.num_moe_layers,
        self.num_experts_per_tok,
        self.moe_intermediate_size,
        self.num_shared_experts,
    )
    T = ctx.total_num_tokens()
    num_experts = self.num_experts

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
        if num_experts is not None:
            num_experts //= self.ffn_ep_size

    read_bytes = {}

    # Dense FFN layers (3 GEMMs: up, gate, down projections + SiLU activation)
    if Ld:
        read_bytes["dense_up_gate_input"] = int(
            T * D * self.activation_byte_size * Ld
        )
        read_bytes["dense_up_gate_weights"] = int(
            2 * D * DI * self.weight_byte_size * Ld
        )
        read_bytes["dense_silu_input"] = int(
            2 * T * DI * self.activation_byte_size * Ld
        )
        read_bytes["dense_down_input"] = int(
            T * DI * self.activation_byte_size * Ld
        )
        read_bytes["dense_down_weights"] = int(D * DI * self.weight_byte_size * Ld)

    if Lm:
        # MoE routed expert reads
        if E:
            # FIXME: Assume perfect load balancing for now.
            num_activated_experts = min(num_activated_tokens, num_experts)

            read_bytes["routed_up_gate_input"] = int(
                num_activated_tokens * D * self.activation_byte_size * Lm
            )
            read_bytes["routed_up_gate_weights"] = int(
                2 * D * MI * num_activated_experts * self.weight_byte_size * Lm
            )
            read_bytes["routed_silu_input"] = int(
                2 * num_activated_tokens * MI * self.activation_byte_size * Lm
            )
            read_bytes["routed_down_input"] = int(
                num_activated_tokens * MI * self.activation_byte_size * Lm
            )
            read_bytes["routed_down_weights"] = int(
                D * MI * num_activated_experts * self.weight_byte_size * Lm
            )

        # MoE shared expert reads
        if S:
            read_bytes["shared_up_gate_input"] = int(
                T * D * self.activation_byte_size * Lm
            )
            read_bytes["shared_up_gate_weights"] = int(
                2 * D * MI * S * self.weight_byte_size * Lm
            )
            read_bytes["shared_silu_input"] = int(
                2 * T * MI * S * self.activation_byte_size * Lm
            )
            read_bytes["shared_down_input"] = int(
                T * MI * self.activation_byte_size * Lm
            )
            read_bytes["shared_down_weights"] = int(
                D * MI * S * self.weight_byte_size * Lm
            )

    return read_bytes


def ffn_write_bytes(
    self, ctx: ExecutionContext, per_gpu: bool = True
) -> dict[str, int]:
    """Calculate write memory traffic for FFN layers."""
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

    write_bytes = {}

    # Dense FFN layers
    if Ld:
        write_bytes["dense_up_gate_output"] = int(
            2 * T * DI * self.activation_byte_size * Ld
        )
        write_bytes["dense_silu_output"] = int(
            T * DI * self.activation_byte_size * Ld
        )
        write_bytes["dense_down_output"] = int(
            T * D * self.activation_byte_size * Ld
        )

    # MoE outputs
    if Lm:
        if E:
            write_bytes["routed_up_gate_output"] = int(
                2 * num_activated_tokens * MI * self.activation_byte_size * Lm
            )
            write_bytes["routed_silu_output"] = int(
                num_activated_tokens * MI * self.activation_byte_size * Lm
            )
            write_bytes["routed_down_output"] = int(
                num_activated_tokens * D * self.activation_byte_size * Lm
            )
        if S:
            write_bytes["shared_up_gate_output"] = int(
                2 * T * S * MI * self.activation_byte_size * Lm
            )
            write_bytes["shared_silu_output"] = int(
                T * S * MI * self.activation_byte_size * Lm
            )
            write_bytes["shared_down_output"] = int(
                T * S * D * self.activation_byte_size * Lm
            )

    return write_bytes


def unembed_read_bytes(
    self, ctx: ExecutionContext, per_gpu: bool = True
) -> dict[str, int]:
    """Calculate read memory traffic for unembedding layer."""
    D, V = self.hidden_size, self.vocab_size
    T = ctx.num_logits_tokens()

    if per_gpu:
        V //= self.tp_size

    return {
        "input": T * D * self.activation_byte_size,
        "weight": D * V * self.weight_byte_size,
    }


def unembed_write_bytes(
    self, ctx: ExecutionContext, per_gpu: bool = True
) -> dict[str, int]:
    """Calculate write memory traffic for unembedding layer."""
    V = self.vocab_size
    T = ctx.num_logits_tokens()

    if per_gpu:
        V //= self.tp_size

    return {
        "output": T * V * self.activation_byte_size,
    }


ExecutionContext.prefill_context_len_for_window = prefill_context_len_for_window
ExecutionContext.decode_context_len_for_window = decode_context_len_for_window
for _cls, _read, _write, _type in (
    (AttentionMetrics, attention_read_bytes, attention_write_bytes, "attn"),
    (MLAAttentionMetrics, mla_read_bytes, mla_write_bytes, "mla_attn"),
    (FfnMetrics, ffn_read_bytes, ffn_write_bytes, "ffn"),
    (UnembedMetrics, unembed_read_bytes, unembed_write_bytes, "unembed"),
):
    _cls.get_read_bytes_breakdown, _cls.get_write_bytes_breakdown, _cls.component_type = _read, _write, _type


def step_bytes(cfg: dict, requests, weight_byte_size=2, activation_byte_size=2, cache_byte_size=None):
    """vLLM's (read, write) breakdowns of one step, keyed "component.term" as ModelMetrics keys
    them; the byte sizes as BaseConfigParser, BaseAttentionConfigParser and the quantisation
    parsers set them (one weight size for every component, as vLLM has)."""
    ctx = ExecutionContext()
    for num_tokens, num_computed_tokens, new in requests:
        context_len = num_computed_tokens + num_tokens
        ctx.add(num_tokens, context_len, is_prefill=True if new else num_tokens > 1)
    sizes = {"weight_byte_size": weight_byte_size, "activation_byte_size": activation_byte_size,
             "cache_byte_size": activation_byte_size if cache_byte_size is None else cache_byte_size}
    read, write = {}, {}
    for m in metrics_from_config(cfg):
        _set(m, sizes)
        read.update({f"{m.component_type}.{k}": v for k, v in m.get_read_bytes_breakdown(ctx, per_gpu=False).items()})
        write.update({f"{m.component_type}.{k}": v for k, v in m.get_write_bytes_breakdown(ctx, per_gpu=False).items()})
    return read, write
