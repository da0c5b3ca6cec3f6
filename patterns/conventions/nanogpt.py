"""The ``nanogpt`` convention: nanoGPT's ``GPT.estimate_mfu`` as formulas.

Reproduces karpathy/nanoGPT ``model.py`` at commit 3adf61e1 (2025-11-12), the PaLM formula
(Chowdhery et al. 2022, appendix B): training FLOPs per token ``6 N + 12 L H Q T`` with
``N = get_num_params()`` (every parameter but the learned position embedding ``wpe``; the token
embedding kept, as nanoGPT ties it to ``lm_head``), ``Q = n_embd // n_head`` and ``T`` the
sequence length. As formulas: the convention counts per weight (``Convention.per_weight``), so
every weight a pattern holds costs 2 FLOPs per token forward, norms, biases, all routed experts
and the embedding included, and every layer attends over the full s x s square (no causal
discount, windows and chunks ignored) at width ``H Q``, whatever its head dimensions.
"""

import sympy

from flopsreg.patterns.conventions._rules import BUILTIN_TERMS, PRECEDENCE, not_counted, refuses_mixers
from flopsreg.patterns.quantities import pairs
from flopsreg.plugin import Convention, Pattern, h, hookimpl, n_h, s

SOURCE = "karpathy/nanoGPT model.py, GPT.estimate_mfu and get_num_params (commit 3adf61e1, 2025-11-12)"

NANOGPT = Convention(
    name="nanogpt",
    summary="nanoGPT's PaLM formula 6N + 12 L H Q T: 2 FLOPs per weight per token (all experts), full s x s attention",
    reference=SOURCE,
    counts=BUILTIN_TERMS,  # every built-in exact pattern at this commit (_rules.BUILTIN_TERMS)
    per_weight="weights",  # every weight N counts, whichever pattern holds it (plugins' too)
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
    # get_num_params(non_embedding=True) subtracts the learned position embedding wpe from N.
    not_counted(
        NANOGPT.name, "learned_positions", "position_embedding", {"learned_positions"}, "the learned position embedding",
        SOURCE, scope="model",
    ),
    *refuses_mixers(
        NANOGPT.name, "nanoGPT's GPT has softmax attention and an MLP in every layer, and its 12 L H Q T term assumes it", SOURCE
    ),
]


@hookimpl
def flopsreg_register_conventions():
    return [NANOGPT]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
