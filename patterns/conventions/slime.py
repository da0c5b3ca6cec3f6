"""The ``slime`` convention: slime's ``calculate_fwd_flops(seqlens, args)`` as formulas.

Reproduces ``slime/utils/flops_utils.py`` (2026, after PR #1980): forward only, per sequence,
a causal core of s^2/2 pairs on every layer, the output projection as 2 s h^2 whatever the
head count, 3 FFN matmuls always, no router, no MTP, no attention output gate, and MLA only with
``multi_latent_attention``, as in the exact patterns. Two rules read Megatron-LM's arguments as
given, where the exact patterns read what runs: keys and values with ``args.num_query_groups``
even when ``group_query_attention`` is off (flag ``megatron_mha``), and the logits over
``args.vocab_size`` rather than the padded rows (flag ``vocab_padding``).
"""

from flopsreg.patterns.conventions._rules import (
    BUILTIN_TERMS,
    PRECEDENCE,
    half_square_causal,
    not_counted,
    refuses_mixers,
    routerless_moe,
)
from flopsreg.patterns.gqa_projection import HEAD_DIM
from flopsreg.plugin import Convention, Param, Pattern, h, hookimpl, s

SOURCE = "slime slime/utils/flops_utils.py, calculate_fwd_flops (2026, after PR #1980)"

SLIME = Convention(
    name="slime",
    summary="slime's RL-training count: causal s^2/2, o-proj 2sh^2, always 3 FFN matmuls, no router, no MTP",
    reference=SOURCE,
    counts=BUILTIN_TERMS,  # every built-in exact pattern at this commit (_rules.BUILTIN_TERMS)
)

QUERY_GROUPS = Param(
    name="num_query_groups",
    latex=r"g_{\mathrm{arg}}",
    meaning="Megatron-LM args.num_query_groups as given (argparse default 1 when group_query_attention is off)",
)
UNPADDED_VOCAB = Param(
    name="unpadded_vocab",
    latex=r"V_{\mathrm{tok}}",
    meaning="the tokenizer's vocabulary without padding rows (Megatron-LM args.vocab_size)",
)

PATTERNS = [
    half_square_causal("slime", SOURCE),
    Pattern(
        name="slime_output_projection",
        slot="attention.output",
        flags={"slime"},
        precedence=PRECEDENCE,
        formula=2 * s * h * h,
        weights=h * h,
        summary="output projection as 2 s h^2, as if heads x v width were always hidden",
        reference=SOURCE,
    ),
    Pattern(
        name="slime_ffn",
        slot="mlp.activation",
        flags={"slime"},
        precedence=PRECEDENCE,
        produces="ffn_matrices",
        formula=3,
        summary="3 FFN matmuls whether the MLP is gated or not",
        reference=SOURCE,
    ),
    routerless_moe("slime", SOURCE),
    not_counted("slime", "shared_expert_gate", "mlp.shared_gate", {"shared_expert_gate"}, "the shared-expert gate", SOURCE),
    not_counted("slime", "output_gate", "attention.gate", {"output_gate"}, "the attention output gate", SOURCE),
    not_counted("slime", "mtp", "mtp", {"mtp"}, "multi-token prediction", SOURCE, scope="model"),
    not_counted("slime", "dsa_indexer", "attention.topk_indexer", {"dsa_indexer"}, "the DSA lightning indexer", SOURCE),
    Pattern(
        name="slime_kv_projection",
        slot="attention.projection",
        flags={"slime", "megatron_mha"},
        precedence=PRECEDENCE,
        params=(QUERY_GROUPS, HEAD_DIM),
        formula=2 * s * h * 2 * QUERY_GROUPS.symbol * HEAD_DIM.symbol,
        weights=2 * h * QUERY_GROUPS.symbol * HEAD_DIM.symbol,
        provides={"qk_dim": HEAD_DIM.symbol, "v_dim": HEAD_DIM.symbol},
        summary="k/v projection 4 s h g d with g = args.num_query_groups as given, even when "
        "group_query_attention is off (Megatron's default 1 on MHA runs)",
        reference=SOURCE,
    ),
    Pattern(
        name="slime_logits",
        slot="head",
        flags={"slime", "lm_head", "vocab_padding"},
        precedence=PRECEDENCE,
        scope="model",
        params=(UNPADDED_VOCAB,),
        formula=2 * s * h * UNPADDED_VOCAB.symbol,
        weights=h * UNPADDED_VOCAB.symbol,
        summary="logits over args.vocab_size, without the padding rows the output layer runs",
        reference=SOURCE,
    ),
    *refuses_mixers("slime", "slime's calculate_fwd_flops has no linear-attention or Mamba branch: it counts every layer as softmax attention", SOURCE),
]


@hookimpl
def flopsreg_register_conventions():
    return [SLIME]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
