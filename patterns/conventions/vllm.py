"""The ``vllm`` convention: vLLM's ``--enable-mfu-metrics`` FLOPs estimate as formulas.

Reproduces ``vllm/v1/metrics/perf.py`` (vllm-project/vllm 00cee63e): ``AttentionMetrics``,
``MLAAttentionMetrics``, ``FfnMetrics`` and ``UnembedMetrics``, whose ``get_num_flops_breakdown``
vLLM sums per scheduled step (``ModelMetrics.get_step_perf_stats_per_gpu``; here the whole
model, ``per_gpu=False``). For each request of a step with ``n`` new tokens and ``c`` computed
ones, vLLM's ``context_len`` is ``c + n`` and its attention bills ``n x (c + n)`` (query, key)
pairs on every layer, ``n x min(c + n, W)`` on a sliding one: a full rectangle, where the causal
mask allows ``n c + n (n + 1) / 2``. So a decode step (n = 1) is counted exactly and a prefill of
n tokens about twice over in its attention core. Projections and the output projection count
as exact (no biases); every FFN, dense or expert, is 3 matmuls (SwiGLU); the router, the
shared-expert gate and any MTP layers are not counted; shared experts count as
``n_shared_experts x moe_intermediate_size`` (so not for Qwen2-MoE or Llama 4, whose configs
have no such field); the unembedding counts one position per prefill and every decode token,
which is ``logits="last"`` here; a DSA lightning indexer is not counted. vLLM bills every one of
``num_hidden_layers`` as softmax attention, so a layer with a linear-attention or SSM mixer is
refused, naming that, and so is a layer feature perf.py has no component for (compressed
attention, hyper-connections, AltUp, KV sharing, a parallel or latent MoE, ...).
"""

import attrs
import sympy

from flopsreg.patterns.conventions._rules import (
    BUILTIN_TERMS,
    MIXER_REFUSAL_PRECEDENCE,
    PRECEDENCE,
    not_counted,
    refuses_layers,
    refuses_mixers,
    routerless_moe,
)
from flopsreg.patterns.quantities import d_qk, d_v
from flopsreg.patterns.sliding_window import WINDOW
from flopsreg.patterns.window_compression import CSA, HCA
from flopsreg.plugin import Convention, Pattern, Quantity, hookimpl, n_h, s
from flopsreg.plugin import family_flag as family

COMMIT = "00cee63e"
SOURCE = (
    "vllm-project/vllm vllm/v1/metrics/perf.py, AttentionMetrics, MLAAttentionMetrics, FfnMetrics and "
    f"UnembedMetrics.get_num_flops_breakdown (commit {COMMIT})"
)
NAME = "vllm"

VLLM = Convention(
    name=NAME,
    summary="vLLM's MFU estimate: every new token against its whole context (n x context_len), 3-matmul FFNs, "
    "no router, logits per request",
    reference=SOURCE,
    counts=BUILTIN_TERMS,  # what it has no term for is refused below by name, or by Convention.counts
    # vLLM's read/write bytes of the step (its MBU's), reproduced term by term in the integrations
    step_bytes="flopsreg.integrations.vllm:vllm_step_bytes",
    step_bytes_summary="vLLM: every matmul's input activations read and output written (exact keeps activations on chip), "
    "a prefill's K and V read as activations over its whole context, KV written on sliding layers uncapped; no norms, "
    "biases, router or embedding row read",
)

CONTEXT_PAIRS = Quantity(
    name="context_pairs",
    latex=r"\hat{P}",  # a plain symbol: per-kind subscripts are added to it
    meaning="(query, key) pairs billed as each new token against the whole context (vLLM's num_tokens x context_len)",
    # s new rows, each as wide as the context c + s (or the window): s G(c + s) for F = s G.
    cached="rectangle",
)
P_CTX = CONTEXT_PAIRS.symbol
W = WINDOW.symbol

# Attention-layer features with no component in perf.py (DeepSeek-V4's compressed attention and
# hyper-connections, Gemma 3n's AltUp, LAuReL, per-layer inputs and KV sharing, Gemma 4's K = V,
# Qwen3-Next's output gate), and MLPs with none (Gemma 4's parallel dense MLP, Nemotron's latent experts).
UNMODELLED = (CSA, HCA, "mhc", "shared_kv", "grouped_output", "altup", "laurel", "per_layer_input", "kv_reuse", "k_eq_v", "output_gate")
UNMODELLED_MLP = ("parallel_moe", "latent_experts")

# Families whose dense layers vLLM bills as MoE: BaseFfnConfigParser makes every layer of a model with
# experts MoE, and only MoeLayerFreqParser (moe_layer_freq beside first_k_dense_replace, which these
# configs lack) or mlp_only_layers-free layouts undo it. Reproducing that needs the experts on a
# dense layer, which the model does not give it: such a dense layer is refused.
DENSE_AS_MOE = ("glm4_moe", "glm_moe_dsa", "mistral_large4", "mistral_large4_text", "qwen2_moe", "qwen3_moe")

# Qwen2-MoE's and Llama 4's shared experts have no n_shared_experts / num_shared_experts field in
# their configs, which is all BaseFfnConfigParser reads: vLLM counts them as 0.
NO_SHARED_FIELD = ("qwen2_moe", "llama4", "llama4_text")

PATTERNS = [
    Pattern(
        name="vllm_context_rectangle",
        slot="attention.mask",
        flags={NAME},
        precedence=PRECEDENCE,
        produces="context_pairs",
        formula=s * s,
        summary="vLLM: each new token against the whole context, num_tokens x context_len pairs (a full rectangle, "
        "no causal discount; chunked attention counted as full)",
        reference=SOURCE + ", ExecutionContext.total_token_context_product",
    ),
    Pattern(
        name="vllm_sliding_rectangle",
        slot="attention.mask",
        flags={NAME, "sliding_window"},
        precedence=PRECEDENCE + 1,
        produces="context_pairs",
        params=(WINDOW,),
        formula=s * sympy.Piecewise((s, s <= W), (W, True)),
        summary="vLLM: a sliding layer's new tokens against min(context_len, W) keys each",
        reference=SOURCE + ", ExecutionContext.total_token_context_product(sliding_window)",
    ),
    Pattern(
        name="vllm_attention_core",
        slot="attention.core",
        flags={NAME},
        precedence=PRECEDENCE,
        formula=2 * n_h * (d_qk + d_v) * P_CTX,
        summary="vLLM: attn_qk and attn_av, 2 FLOPs per multiply-add over num_tokens x context_len pairs per head",
        reference=SOURCE,
    ),
    Pattern(
        name="vllm_ffn",
        slot="mlp.activation",
        flags={NAME},
        precedence=PRECEDENCE,
        produces="ffn_matrices",
        formula=3,
        summary="vLLM: 3 matmuls (up, gate, down) in every dense FFN and expert, gated or not",
        reference=SOURCE + ", FfnMetrics",
    ),
    routerless_moe(NAME, SOURCE + ", FfnMetrics (routed_ffn)"),
    not_counted(NAME, "shared_expert_gate", "mlp.shared_gate", {"shared_expert_gate"}, "vLLM: the shared-expert gate", SOURCE),
    *(
        attrs.evolve(not_counted(NAME, flag, slot, {flag}, f"vLLM: the {flag.replace('_', ' ')}", SOURCE), precedence=PRECEDENCE + i)
        for i, (flag, slot) in enumerate(
            (("qkv_bias", "attention.bias"), ("attention_bias", "attention.bias"), ("mlp_bias", "mlp.bias"),
             ("expert_bias", "mlp.bias"), ("router_bias", "mlp.router_bias"))
        )
    ),
    not_counted(NAME, "mtp", "mtp", {"mtp"}, "vLLM: multi-token prediction (outside num_hidden_layers)", SOURCE, scope="model"),
    # DeepSeek-V3.2 / GLM-5: MLAAttentionMetrics has no term for the lightning indexer (and bills the
    # full rectangle, not the top-k keys, through the rectangle mask above).
    not_counted(NAME, "dsa_indexer", "attention.topk_indexer", {"dsa_indexer"}, "vLLM: the DSA lightning indexer", SOURCE),
    *refuses_mixers(NAME, "vLLM's perf.py bills every one of num_hidden_layers as softmax attention", SOURCE),
    # Layer features perf.py has no component for: it bills such a layer as plain attention and FFN
    # from config fields this convention does not reproduce, so it refuses them rather than guess.
    *refuses_layers(
        NAME, UNMODELLED, "vLLM's perf.py has no term for this layer feature (it bills the layer as plain attention and "
        "FFN), which the vllm convention does not reproduce", SOURCE, what="a {} feature",
        precedence=MIXER_REFUSAL_PRECEDENCE, slot="attention.core",
    ),
    *refuses_layers(
        NAME, UNMODELLED_MLP, "vLLM's FfnMetrics has no term for this MLP (it bills a plain or routed SwiGLU FFN)",
        SOURCE, what="a {} MLP", precedence=MIXER_REFUSAL_PRECEDENCE, slot="mlp",
    ),
]
for _i, _type in enumerate(NO_SHARED_FIELD):
    _rule = not_counted(
        NAME, f"{_type}_shared_experts", "mlp.shared", {family(_type), "shared_experts"},
        f"vLLM ({_type}: no n_shared_experts field in the config): the shared experts", SOURCE,
    )
    PATTERNS.append(attrs.evolve(_rule, precedence=PRECEDENCE + 10 + _i))  # distinct: no two families' rules tie


PATTERNS += refuses_layers(
    NAME, {family(t): t for t in DENSE_AS_MOE},
    "vLLM's FfnMetrics bills every layer of a {flag} model as MoE (its config has no moe_layer_freq, and "
    "first_k_dense_replace, mlp_only_layers or decoder_sparse_step are not read without it), so this dense "
    "layer would need experts the model does not give it",
    SOURCE + ", BaseFfnConfigParser and MoeLayerFreqParser", precedence=MIXER_REFUSAL_PRECEDENCE + len(UNMODELLED_MLP), slot="mlp",
    also={"mlp"}, name="{convention}_{flag}_dense_layer", summary="{convention}: a dense layer of a {flag} model is refused",
    message="{why}: a refusal, not a guess",
)


@hookimpl
def flopsreg_register_conventions():
    return [VLLM]


@hookimpl
def flopsreg_register_quantities():
    return [CONTEXT_PAIRS]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
