"""The ``olmo_core`` convention: OLMo-core's ``Transformer.num_flops_per_token`` as formulas.

Reproduces allenai/OLMo-core at commit fa6c5014 (2026-06-22): ``Transformer.num_flops_per_token``
(src/olmo_core/nn/transformer/model.py) sums each block's ``num_flops_per_token`` and the LM
head's, which the speed monitor multiplies by the tokens of a step for its MFU. Training FLOPs per
token are 6 x the parameters of each attention module (q, k, v, out, their biases, the q/k norms,
the gate), 6 x those of each feed-forward (for MoE: the router whole, the shared MLP whole, the
routed experts at ``top_k / num_experts``) and 6 x the LM head's (its final norm and its V x h
matrix, counted even when tied to the embedding), plus ``12 n_heads head_dim min(W, s)`` per
attention layer: the full s x s square (no causal discount), a sliding layer's W keys per query.
The input embedding and the blocks' own norms are in no ``num_flops_per_token``. As formulas:
the convention counts per active weight (``Convention.per_weight``) and its own patterns give
the attention term and leave out the embedding and the block norms. What OLMo-core cannot build
(MLA, low-rank queries, q/k/v-only biases, non-gated MLPs, attention sinks, the shared-expert
gate, learned positions, MTP, linear-attention and SSM mixers) is refused by name.
"""

import sympy

from flopsreg.patterns.conventions._rules import PRECEDENCE, refuses_layers, refuses_mixers
from flopsreg.patterns.logits import VOCAB
from flopsreg.patterns.quantities import d_qk, d_v, pairs
from flopsreg.patterns.sliding_window import WINDOW
from flopsreg.plugin import Convention, Pattern, h, hookimpl, n_h, s

COMMIT = "fa6c5014"
SOURCE = (
    "allenai/OLMo-core src/olmo_core/nn/transformer/model.py Transformer.num_flops_per_token and the "
    f"num_flops_per_token of Attention, FeedForward, MoEBase, ParallelMLP and LMHead (commit {COMMIT}, 2026-06-22)"
)

# The exact patterns OLMo-core has a module for: Llama-style GQA attention (optional biases on all
# of q, k, v and out, per-head or full-width QK norm, a gate), full or sliding-window masks, gated
# feed-forwards with optional biases, MoE with shared experts, pre-norm blocks, a final norm and an
# LM head, tied or not. Everything else is refused by name (Convention.counts, and the refusals below).
TERMS = frozenset({
    "gqa_projection", "query_projection", "output_projection", "attention_core", "full_causal", "sliding_window",
    "qk_norm", "full_width_qk_norm", "attention_bias", "attention_output_gate",
    "dense_mlp", "moe", "gated_ffn", "mlp_bias", "shared_experts",
    "decoder_norms", "final_norm", "input_embedding", "logits", "tied_logits",
})

OLMO_CORE = Convention(
    name="olmo_core",
    summary="OLMo-core's num_flops_per_token: 6 x the attention, feed-forward and LM-head parameters (routed experts "
    "at top_k / num_experts) + 12 n_h d min(W, s): full s x s attention, windows as W keys",
    reference=SOURCE,
    per_weight="active_weights",  # MoEBase: router and shared MLP whole, experts at top_k / num_experts
    counts=TERMS,
)
NAME = OLMO_CORE.name
W = WINDOW.symbol
_WHY = f"OLMo-core's Transformer (commit {COMMIT}) cannot build this model"
_NO_MODULE = "{why}: it has no {what}, a refusal, not a guess"  # a model-level module OLMo-core does not have

PATTERNS = [
    Pattern(
        name="olmo_core_square",
        slot="attention.mask",
        flags={NAME},
        precedence=PRECEDENCE,
        produces="pairs",
        formula=s**2,
        summary="olmo_core: s x s pairs on every full-attention layer (effective_seq_len = seq_len: no causal discount)",
        reference=SOURCE,
    ),
    Pattern(
        name="olmo_core_sliding",
        slot="attention.mask",
        flags={NAME, "sliding_window"},
        precedence=PRECEDENCE + 10,
        produces="pairs",
        params=(WINDOW,),
        formula=sympy.Piecewise((s**2, s <= W), (s * W, True)),
        summary="olmo_core: s min(W, s) pairs on a sliding layer (effective_seq_len = min(window_size, seq_len))",
        reference=SOURCE,
    ),
    Pattern(
        name="olmo_core_core",
        slot="attention.core",
        flags={NAME},
        precedence=PRECEDENCE,
        # 12 n_heads head_dim effective_seq_len per token for training: 4 n_h head_dim per pair forward.
        formula=2 * n_h * (d_qk + d_v) * pairs,
        summary="olmo_core: QK^T and PV, 4 n_h head_dim FLOPs per pair forward (12 n_heads head_dim per position, training)",
        reference=SOURCE,
    ),
    Pattern(
        name="olmo_core_embedding",
        slot="embedding",
        flags={NAME, "lm_head"},
        precedence=PRECEDENCE,
        scope="model",
        formula=0,
        summary="olmo_core: the input embedding is in no num_flops_per_token",
        reference=SOURCE,
    ),
    Pattern(
        name="olmo_core_block_norms",
        slot="norms",
        flags={NAME, "norms"},
        precedence=PRECEDENCE,
        formula=0,
        summary="olmo_core: a block's attention_norm and feed_forward_norm are in neither module's num_flops_per_token",
        reference=SOURCE,
    ),
    Pattern(
        name="olmo_core_head",
        slot="head",
        flags={NAME, "lm_head"},
        precedence=PRECEDENCE,
        scope="model",
        params=(VOCAB,),
        formula=2 * s * h * VOCAB.symbol,
        summary="olmo_core: LMHead's V x h w_out, counted whether or not it is tied to the embedding",
        reference=SOURCE,
    ),
    *refuses_layers(
        NAME, ("mtp",), _WHY, SOURCE, what="multi-token-prediction module (num_nextn_predict_layers)", precedence=PRECEDENCE, slot="mtp",
        scope="model", name="{convention}_{flag}", summary="{convention}: no multi-token prediction", message=_NO_MODULE,
    ),
    *refuses_layers(
        NAME, ("learned_positions",), _WHY, SOURCE, what="learned position embedding (learned_positions)", precedence=PRECEDENCE,
        slot="position_embedding", scope="model", name="{convention}_{flag}", summary="{convention}: no learned position embedding",
        message=_NO_MODULE,
    ),
    *refuses_layers(NAME, ("mla",), _WHY, SOURCE, what="multi-head latent attention ({})", slot="attention.projection"),
    *refuses_layers(NAME, ("q_lora",), _WHY, SOURCE, what="a low-rank query ({})", slot="attention.query"),
    *refuses_layers(NAME, ("qkv_bias",), _WHY, SOURCE, what="biases on q, k and v only ({}; OLMo-core's bias is on all four projections)", slot="attention.bias"),
    *refuses_layers(NAME, ("sinks",), _WHY, SOURCE, what="attention sinks ({})", slot="attention.sinks"),
    *refuses_layers(NAME, ("shared_expert_gate",), _WHY, SOURCE, what="a shared-expert gate ({})", slot="mlp.shared_gate"),
    *refuses_mixers(NAME, f"{_WHY} as flopsreg reads it (its recurrent mixers are not reproduced here)", SOURCE),
]

@hookimpl
def flopsreg_register_conventions():
    return [OLMO_CORE]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
