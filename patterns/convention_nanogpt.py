"""The ``nanogpt`` convention: nanoGPT's ``GPT.estimate_mfu`` as formulas.

Reproduces karpathy/nanoGPT ``model.py`` at commit 3adf61e1 (2025-11-12), the PaLM formula
(Chowdhery et al. 2022, appendix B): training FLOPs per token ``6 N + 12 L H Q T`` with
``N = get_num_params()`` (every parameter but the learned position embedding ``wpe``; the token
embedding kept, as nanoGPT ties it to ``lm_head``), ``Q = n_embd // n_head`` and ``T`` the
sequence length. As formulas: every weight a pattern holds costs 2 FLOPs per token forward,
norms, biases, all routed experts and the embedding included, and every layer attends over the
full s x s square (no causal discount, windows and chunks ignored) at width ``H Q``, whatever
its head dimensions.
"""

import sympy

from flopsreg import Convention, Pattern, hookimpl
from flopsreg.patterns._convention_rules import PRECEDENCE, not_counted
from flopsreg.patterns.attention_output_gate import ATTENTION_OUTPUT_GATE
from flopsreg.patterns.attention_sinks import ATTENTION_SINKS
from flopsreg.patterns.biases import ATTENTION_BIAS, EXPERT_BIAS, MLP_BIAS, QKV_BIAS, ROUTER_BIAS
from flopsreg.patterns.dense_mlp import DENSE_MLP
from flopsreg.patterns.embedding import INPUT_EMBEDDING, TIED_LOGITS
from flopsreg.patterns.gqa_projection import GQA_PROJECTION
from flopsreg.patterns.logits import LOGITS
from flopsreg.patterns.low_rank_query import LOW_RANK_QUERY
from flopsreg.patterns.mla_projection import MLA_PROJECTION
from flopsreg.patterns.moe import MOE
from flopsreg.patterns.norms import (
    DECODER_LAYERNORMS, DECODER_NORMS, FINAL_LAYERNORM, FINAL_NORM, QK_LAYERNORM, QK_NORM, SANDWICH_LAYERNORMS, SANDWICH_NORMS,
)
from flopsreg.patterns.output_projection import OUTPUT_PROJECTION
from flopsreg.patterns.quantities import pairs
from flopsreg.patterns.query_projection import QUERY_PROJECTION
from flopsreg.patterns.shared_expert_gate import SHARED_EXPERT_GATE
from flopsreg.patterns.shared_experts import SHARED_EXPERTS
from flopsreg.symbols import h, n_h, s

SOURCE = "karpathy/nanoGPT model.py, GPT.estimate_mfu and get_num_params (commit 3adf61e1, 2025-11-12)"

NANOGPT = Convention(
    name="nanogpt",
    summary="nanoGPT's PaLM formula 6N + 12 L H Q T: 2 FLOPs per weight per token (all experts), full s x s attention",
    reference=SOURCE,
)

# Every exact pattern that holds weights nanoGPT's N counts. The learned position embedding is
# the one weight get_num_params leaves out; MTP modules are not part of nanoGPT's model.
COUNTED = (
    QUERY_PROJECTION, GQA_PROJECTION, OUTPUT_PROJECTION, ATTENTION_OUTPUT_GATE, LOW_RANK_QUERY, MLA_PROJECTION,
    DENSE_MLP, MOE, SHARED_EXPERTS, SHARED_EXPERT_GATE, LOGITS, INPUT_EMBEDDING, TIED_LOGITS,
    DECODER_NORMS, DECODER_LAYERNORMS, SANDWICH_NORMS, SANDWICH_LAYERNORMS, QK_NORM, QK_LAYERNORM, FINAL_NORM, FINAL_LAYERNORM,
    QKV_BIAS, ATTENTION_BIAS, MLP_BIAS, EXPERT_BIAS, ROUTER_BIAS, ATTENTION_SINKS,
)


def per_weight(pattern: Pattern) -> Pattern:
    """*pattern*'s slot under nanogpt: 2 FLOPs per token for every weight it holds (N's share)."""
    return Pattern(
        name=f"nanogpt_{pattern.name}",
        slot=pattern.slot,
        flags=pattern.flags | {NANOGPT.name},
        precedence=PRECEDENCE + pattern.precedence,  # above every exact pattern, in the exact order
        scope=pattern.scope,
        params=pattern.params,
        constraints=pattern.constraints,
        formula=2 * s * pattern.weights,
        provides=pattern.provides,  # the head widths a projection gives the core
        weights=pattern.weights,
        summary=f"2 FLOPs per token for each of the {pattern.name} weights (all of them: nanoGPT's N)",
        reference=SOURCE,
    )


PATTERNS = [
    Pattern(
        name="nanogpt_square",
        slot="attention.mask",
        flags={NANOGPT.name},
        precedence=PRECEDENCE,
        produces="pairs",
        formula=s**2,
        summary="s^2 pairs on every layer: no causal discount, sliding windows and chunks counted as full",
        reference=SOURCE,
    ),
    Pattern(
        name="nanogpt_core",
        slot="attention.core",
        flags={NANOGPT.name},
        precedence=PRECEDENCE,
        # 12 L H Q T per token for training is 4 H Q per pair forward, Q = n_embd // n_head.
        formula=4 * n_h * sympy.floor(h / n_h) * pairs,
        summary="QK^T and PV at width H Q = n_head x (n_embd // n_head), whatever the head dimensions",
        reference=SOURCE,
    ),
    not_counted(NANOGPT.name, "mtp", "mtp", {"mtp"}, "multi-token prediction", SOURCE, scope="model"),
    *(per_weight(pattern) for pattern in COUNTED),
]


@hookimpl
def flopsreg_register_conventions():
    return [NANOGPT]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
