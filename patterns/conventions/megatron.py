"""The ``megatron`` convention: Megatron-LM's ``num_floating_point_operations`` as formulas.

Reproduces ``megatron/training/training.py`` (2026): a causal core of s^2/2 pairs on every layer
(windows and chunks ignored), 3 FFN matmuls only with ``--swiglu``, no router matmul, MLA's
q and kv norms counted as a "+1" column of the low-rank products, logits over the padded
vocabulary, and per MTP depth the eh norms (3h) and projection (2h^2) plus the logits again.
Everything else is the exact patterns' own formula, which Megatron-LM shares.

The padded vocabulary is ``padded_vocab`` where the model says it has one (flag
``padded_vocab_given``, set by the Megatron-LM reader from ``padded_vocab_size``); otherwise
Megatron-LM's own rule with its defaults, ``vocab`` rounded up to a multiple of
``make_vocab_size_divisible_by`` x TP = 128 x 1 (``vocab_size_with_padding``).
"""

import sympy

from flopsreg.patterns.conventions._rules import BUILTIN_TERMS, PRECEDENCE, half_square_causal, not_counted, routerless_moe
from flopsreg.patterns.logits import VOCAB
from flopsreg.patterns.low_rank_query import Q_LORA_RANK
from flopsreg.patterns.megatron.vocab import GIVEN
from flopsreg.patterns.mla_projection import KV_LORA_RANK, QK_NOPE_HEAD_DIM, QK_ROPE_HEAD_DIM, V_HEAD_DIM
from flopsreg.patterns.mtp import mtp_block, mtp_layers
from flopsreg.patterns.quantities import d_qk
from flopsreg.plugin import Convention, Param, Pattern, h, hookimpl, n_h, s

SOURCE = "Megatron-LM megatron/training/training.py, num_floating_point_operations (2026)"
PADDING_SOURCE = (
    "Megatron-LM megatron/core/tokenizers/utils/build_tokenizer.py, vocab_size_with_padding; defaults "
    "--make-vocab-size-divisible-by 128 (megatron/training/arguments.py), tensor_model_parallel_size 1 (d98e8a64)"
)

PADDED_VOCAB = Param(
    name="padded_vocab",
    latex=r"V_{\mathrm{pad}}",
    meaning="vocabulary padded to a multiple of make_vocab_size_divisible_by x TP (Megatron padded_vocab_size)",
)
VOCAB_MULTIPLE = 128  # make_vocab_size_divisible_by (default 128) x tensor-parallel size (default 1)
DEFAULT_PADDED_VOCAB = sympy.ceiling(VOCAB.symbol / VOCAB_MULTIPLE) * VOCAB_MULTIPLE
DEFAULT_PADDING = (
    f"vocabulary padded to a multiple of {VOCAB_MULTIPLE} (Megatron-LM's make_vocab_size_divisible_by x TP, defaults)"
)
r_q, r_kv = Q_LORA_RANK.symbol, KV_LORA_RANK.symbol
d_nope, d_rope, d_vh = QK_NOPE_HEAD_DIM.symbol, QK_ROPE_HEAD_DIM.symbol, V_HEAD_DIM.symbol

MEGATRON = Convention(
    name="megatron",
    summary="Megatron-LM's MFU count: causal s^2/2 everywhere, SwiGLU-only 3x FFN, no router, padded vocab",
    reference=SOURCE,
    counts=BUILTIN_TERMS,  # every built-in exact pattern at this commit (_rules.BUILTIN_TERMS)
)

PATTERNS = [
    half_square_causal("megatron", SOURCE),
    Pattern(
        name="megatron_ffn",
        slot="mlp.activation",
        flags={"megatron"},
        precedence=PRECEDENCE,
        produces="ffn_matrices",
        formula=2,
        summary="2 FFN matmuls unless --swiglu (other gated units such as --quick-geglu count 2)",
        reference=SOURCE,
    ),
    Pattern(
        name="megatron_swiglu_ffn",
        slot="mlp.activation",
        flags={"megatron", "swiglu"},
        precedence=PRECEDENCE + 10,
        produces="ffn_matrices",
        formula=3,
        summary="3 FFN matmuls with --swiglu",
        reference=SOURCE,
    ),
    routerless_moe("megatron", SOURCE),
    not_counted("megatron", "shared_expert_gate", "mlp.shared_gate", {"shared_expert_gate"}, "the shared-expert gate", SOURCE),
    # Megatron-LM's main branch has no DSA term: the top-k mask is its s^2/2 causal core, the indexer 0.
    not_counted("megatron", "dsa_indexer", "attention.topk_indexer", {"dsa_indexer"}, "the DSA lightning indexer", SOURCE),
    Pattern(
        name="megatron_low_rank_query",
        slot="attention.query",
        flags={"megatron", "q_lora"},
        precedence=PRECEDENCE,
        params=(Q_LORA_RANK,),
        formula=2 * s * r_q * (h + n_h * d_qk + 1),
        weights=r_q * (h + n_h * d_qk + 1),
        summary="MLA low-rank query with the q norm counted as a +1 column: r_q (h + n_h d_qk + 1)",
        reference=SOURCE,
    ),
    Pattern(
        name="megatron_mla_projection",
        slot="attention.projection",
        flags={"megatron", "mla"},
        precedence=PRECEDENCE,
        params=(KV_LORA_RANK, QK_NOPE_HEAD_DIM, QK_ROPE_HEAD_DIM, V_HEAD_DIM),
        formula=2 * s * (r_kv * (h + n_h * (d_nope + d_vh) + 1) + h * d_rope),
        weights=r_kv * (h + n_h * (d_nope + d_vh) + 1) + h * d_rope,
        provides={"qk_dim": d_nope + d_rope, "v_dim": d_vh},
        summary="MLA keys and values with the kv norm counted as a +1 column",
        reference=SOURCE,
    ),
    not_counted(
        "megatron", "mla_output_gate", "attention.gate", {"mla", "output_gate"}, "an output gate on MLA", SOURCE
    ),
    Pattern(
        name="megatron_logits",
        slot="head",
        flags={"megatron", "lm_head", GIVEN},
        precedence=PRECEDENCE + 10,
        scope="model",
        params=(PADDED_VOCAB,),
        formula=2 * s * h * PADDED_VOCAB.symbol,
        weights=h * PADDED_VOCAB.symbol,
        summary="logits over the padded vocabulary the model gives (which depends on the tensor-parallel size)",
        reference=SOURCE,
    ),
    Pattern(
        name="megatron_default_padded_logits",
        slot="head",
        flags={"megatron", "lm_head"},
        precedence=PRECEDENCE,
        scope="model",
        params=(VOCAB,),
        formula=2 * s * h * DEFAULT_PADDED_VOCAB,
        weights=h * DEFAULT_PADDED_VOCAB,
        summary=f"logits over the {DEFAULT_PADDING}: ceiling(V/{VOCAB_MULTIPLE}) {VOCAB_MULTIPLE} rows",
        reference=PADDING_SOURCE,
    ),
    Pattern(
        name="megatron_mtp",
        slot="mtp",
        flags={"megatron", "mtp", GIVEN},
        precedence=PRECEDENCE + 10,
        scope="model",
        params=(PADDED_VOCAB,),
        formula=mtp_block + mtp_layers * (2 * s * (3 * h + 2 * h**2) + 2 * s * h * PADDED_VOCAB.symbol),
        summary="per MTP depth: its layer, eh norms counted as 3h, eh projection 2h^2, logits again",
        weights=mtp_layers * (2 * h**2 + 3 * h),
        reference=SOURCE,
    ),
    Pattern(
        name="megatron_default_padded_mtp",
        slot="mtp",
        flags={"megatron", "mtp"},
        precedence=PRECEDENCE,
        scope="model",
        params=(VOCAB,),
        # written as a sum of the depths' terms, so LaTeX breaks it into rows that fit a column
        formula=mtp_block + mtp_layers * 2 * s * (3 * h + 2 * h**2) + mtp_layers * 2 * s * h * DEFAULT_PADDED_VOCAB,
        summary=f"per MTP depth: its layer, eh norms as 3h, eh projection 2h^2, logits again over the {DEFAULT_PADDING}",
        weights=mtp_layers * (2 * h**2 + 3 * h),
        reference=PADDING_SOURCE,
    ),
]


@hookimpl
def flopsreg_register_conventions():
    return [MEGATRON]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
