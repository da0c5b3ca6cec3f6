"""The ``torchtitan`` convention: torchtitan's ``get_nparams_and_flops`` as formulas.

Reproduces pytorch/torchtitan ``torchtitan/models/utils.py`` at commit b5bcd76c (2026-08-21):
``get_dense_model_nparams_and_flops`` (llama3) and ``get_moe_model_nparams_and_flops`` (qwen3,
deepseek_v3, gpt_oss), called by each model's ``Config.get_nparams_and_flops(model, seq_len)``.
Training FLOPs per token are ``6 N + 6 L n_h d seq_len``: ``N`` every parameter of the model
(norms, biases, sinks, the router and shared experts included) with the routed experts at
``top_k / num_experts``, less the input embedding unless it is tied to the head; ``L`` the
layers with attention, ``n_h`` and ``d`` (the qk plus v head widths) those of layer 0. So every
layer attends over the full s x s square: no causal discount, GPT-OSS's 128-token windows
ignored. Multi-token-prediction layers (deepseek_v3's MTPDecoder) count their weights only. As
formulas: the convention counts per active weight (``Convention.per_weight``), and its own
patterns give the attention term, drop the embedding and keep the head. Only the model types
torchtitan has a model for are counted; the others are refused, naming why.
"""

import sympy

from flopsreg.patterns.conventions._rules import BUILTIN_TERMS, PRECEDENCE
from flopsreg.patterns.logits import VOCAB
from flopsreg.patterns.mtp import MTP, MTP_BLOCK, mtp_block, mtp_layers
from flopsreg.patterns.quantities import d_qk, d_v, pairs
from flopsreg.plugin import Convention, Pattern, h, hookimpl, n_h, s
from flopsreg.plugin import family_flag as family

COMMIT = "b5bcd76c"
SOURCE = (
    "pytorch/torchtitan torchtitan/models/utils.py, get_dense_model_nparams_and_flops and "
    f"get_moe_model_nparams_and_flops, and each model's get_nparams_and_flops (commit {COMMIT}, 2026-08-21)"
)

# Hugging Face model_type -> the torchtitan model that trains it at the pinned commit.
MODELS = {
    "llama": "llama3",
    "qwen3": "qwen3",
    "qwen3_moe": "qwen3",
    "deepseek_v3": "deepseek_v3",
    "deepseek_v2": "deepseek_v3",  # its 16B and 236B flavors are DeepSeek-V2-Lite and DeepSeek-V2
    "gpt_oss": "gpt_oss",
}
# model_types flopsreg reads that torchtitan has no model for, and why.
NO_MODEL = {
    "llama4": "torchtitan removed its llama4 model (PR #3573) before commit",
    "llama4_text": "torchtitan removed its llama4 model (PR #3573) before commit",
    **{
        t: f"torchtitan has no model for model_type {t!r} at commit"
        for t in ("mistral", "mixtral", "gemma2", "gemma3", "gemma3_text", "qwen2", "qwen2_moe")
    },
}


def family_precedence(model_type: str) -> int:
    """Above the convention-wide rules, and distinct per type: no two families' rules tie."""
    return PRECEDENCE + 10 + [*MODELS, *NO_MODEL].index(model_type)


MTP_PRECEDENCE = PRECEDENCE + 10 + len(MODELS) + len(NO_MODEL)  # above every family's rule
(MTP_LAYER,) = MTP_BLOCK.layer_flags

TORCHTITAN = Convention(
    name="torchtitan",
    summary="torchtitan's 6N + 6 L n_h d s: 2 FLOPs per active weight per token (no input embedding "
    "unless tied), full s x s attention, windows ignored",
    reference=SOURCE,
    counts=BUILTIN_TERMS,  # every built-in exact pattern at this commit (_rules.BUILTIN_TERMS)
    per_weight="active_weights",  # routed experts at top_k / num_experts, router and shared experts whole
)
NAME = TORCHTITAN.name

PATTERNS = [
    Pattern(
        name="torchtitan_square",
        slot="attention.mask",
        flags={NAME},
        precedence=PRECEDENCE,
        produces="pairs",
        formula=s**2,
        summary="torchtitan: s^2 pairs on every layer ('we do not account for sparsity in causal attention'); "
        "sliding windows counted as full",
        reference=SOURCE,
    ),
    Pattern(
        name="torchtitan_core",
        slot="attention.core",
        flags={NAME},
        precedence=PRECEDENCE,
        # 6 n_h head_dims seq_len per token for training: 2 n_h (d_qk + d_v) per pair forward.
        formula=2 * n_h * (d_qk + d_v) * pairs,
        summary="torchtitan: QK^T and PV at head_dims = d_qk + d_v per head (qwen3, gpt_oss: 2 head_dim; "
        "deepseek_v3: qk_nope + qk_rope + v)",
        reference=SOURCE,
    ),
    Pattern(
        name="torchtitan_llama3_core",
        slot="attention.core",
        flags={NAME, family("llama")},
        precedence=family_precedence("llama"),
        formula=4 * n_h * sympy.floor(h / n_h) * pairs,
        summary="torchtitan (llama3): QK^T and PV at head_dims = 2 (dim // n_heads), whatever head_dim is",
        reference=SOURCE,
    ),
    Pattern(
        name="torchtitan_embedding",
        slot="embedding",
        flags={NAME, "lm_head"},
        precedence=PRECEDENCE,
        scope="model",
        formula=0,
        summary="torchtitan: the input embedding is left out of N (a tied one is counted once, by the head)",
        reference=SOURCE,
    ),
    Pattern(
        name="torchtitan_mtp",
        slot="mtp",
        flags={NAME, "mtp"},
        precedence=PRECEDENCE,
        scope="model",
        # The MTP layers' parameters are in N; their attention is not in the quadratic term (they are
        # not in model_config.layers) and their logits reuse lm_head, counted once.
        formula=mtp_block + mtp_layers * 2 * s * (2 * h * h + 3 * h),
        weights=MTP.weights,
        summary="torchtitan (MTPDecoder): per MTP depth 2 FLOPs per token per weight of its layer, eh projection "
        "2h -> h and three norms; no attention term, no second logits",
        reference=SOURCE,
    ),
    Pattern(
        name="torchtitan_mtp_attention",
        slot="attention.core",
        flags={NAME, MTP_LAYER},
        precedence=MTP_PRECEDENCE,
        formula=0,
        summary="torchtitan: an MTP layer's attention gets no quadratic term (only model_config.layers are summed)",
        reference=SOURCE,
    ),
    Pattern(
        name="torchtitan_unknown_family",
        slot="head",
        flags={NAME},
        precedence=PRECEDENCE,
        scope="model",
        formula=0,
        summary="torchtitan: no model type it has a model for, no count",
        reference=SOURCE,
        refusal=(
            "torchtitan counts only the models it builds, and none of this model's flags is the family flag of one "
            f"({', '.join(family(t) for t in MODELS)}): torchtitan has no such model, so it reports no MFU for it; "
            "a model written by hand needs the flag of its model_type"
        ),
    ),
]
for _type, _model in MODELS.items():
    PATTERNS.append(
        Pattern(
            name=f"torchtitan_{_type}_head",
            slot="head",
            flags={NAME, family(_type), "lm_head"},
            precedence=family_precedence(_type),
            scope="model",
            params=(VOCAB,),
            formula=2 * s * h * VOCAB.symbol,  # lm_head once, tied or not
            summary=f"torchtitan ({_model}): the lm_head's V x h weights, counted once whether tied or not",
            reference=SOURCE,
        )
    )
for _type, _why in NO_MODEL.items():
    PATTERNS.append(
        Pattern(
            name=f"torchtitan_{_type}_unsupported",
            slot="head",
            flags={NAME, family(_type)},
            precedence=family_precedence(_type),
            scope="model",
            formula=0,
            summary=f"torchtitan: no model for model_type {_type}",
            reference=SOURCE,
            refusal=f"{_why} {COMMIT}: it cannot build or train this model, so it reports no MFU for it",
        )
    )


@hookimpl
def flopsreg_register_conventions():
    return [TORCHTITAN]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
