"""The ``verl`` convention: verl's ``FlopsCounter.estimate_flops`` as formulas.

Reproduces ``verl/utils/flops_counter.py`` (verl-project/verl 1dda039b, 2026-08-22). verl picks
an estimator by ``config.model_type``; here the model's family flag (``hf_<model_type>``, set by
the Hugging Face readers and written in the bundled examples) picks the patterns. Every
estimator counts 6 x (its linear parameters) per token plus 6 n_h d per (query, key) position
over s^2 positions per layer: a causal s^2/2 pairs, with the input embedding and the logits as
two V x h matmuls whether or not they are tied, 3 FFN matmuls, and no MTP. ``gemma3_text`` and
``gpt_oss`` count a sliding layer as s min(s, W) positions, i.e. s W / 2 pairs once s > W (half
of what the window attends); every other type ignores windows (Mistral's ``sliding_window``
included). ``qwen2_moe``, ``qwen3_moe`` and ``qwen3_vl_moe`` count every layer as MoE, the dense
ones of ``mlp_only_layers`` and ``decoder_sparse_step`` included, and leave out shared experts;
``hy_v3`` counts every layer as MoE with its shared experts (a dense layer of ``mlp_layer_types``
is refused: its kind holds no expert widths). ``apertus`` counts its xIELU MLP as 2 matmuls and
its q_norm and k_norm as h + n_kv d weights applied like a matmul. ``seed_oss`` is the qwen2
estimator.
``qwen3_5`` and ``qwen3_5_moe`` count the Gated DeltaNet recurrence as 5 d_k d_v H_v per token
forward (the recurrent minimum is 6). ``qwen2_vl``, ``qwen2_5_vl`` and ``qwen3_vl`` (``_estimate_qwen3_vl_flops``)
take head_dim as hidden_size // num_attention_heads, whatever the config's head_dim
(``_estimate_qwen3_vl_moe_flops`` reads the config's); the vision tower of these four and of
``qwen3_5`` / ``qwen3_5_moe`` (``images_seqlens``, ``_estimate_qwen3_vit_flop``) is the image
rule's ``verl`` count (patterns/hf/_qwen_vit.py ``verl_vit_flops``). Qwen2-VL's images are refused,
as ``_estimate_qwen3_vit_flop`` reads ``vision_config.intermediate_size``, which Qwen2VLVisionConfig
has not (verl raises AttributeError), and so are videos: verl's images_seqlens come from
``image_grid_thw`` alone (each refusal says so: the rules' ``refusals``).
A model type verl has no estimator for gets 0 from verl: the convention refuses it, naming that.
"""

import attrs
import sympy

from flopsreg.patterns import gated_deltanet
from flopsreg.patterns.conventions._rules import BUILTIN_TERMS, PRECEDENCE, half_square_causal, not_counted
from flopsreg.patterns.gated_deltanet import H_v, d_k, d_v
from flopsreg.patterns.gqa_projection import GQA_PROJECTION, KV_HEADS, n_kv
from flopsreg.patterns.logits import VOCAB
from flopsreg.patterns.moe import EXPERT_HIDDEN, EXPERTS, TOP_K
from flopsreg.patterns.norms import QK_NORM
from flopsreg.patterns.quantities import d_qk, f
from flopsreg.patterns.sliding_window import WINDOW
from flopsreg.plugin import Convention, Pattern, h, hookimpl, n_h, s
from flopsreg.plugin import family_flag as family

SOURCE = "verl verl/utils/flops_counter.py, FlopsCounter.estimate_flops (verl-project/verl 1dda039b, 2026-08-22)"

# model_type -> verl's estimator (ESTIMATE_FUNC), for the types flopsreg reads.
ESTIMATORS = {
    "llama": "_estimate_qwen2_flops",
    "qwen2": "_estimate_qwen2_flops",
    "qwen3": "_estimate_qwen2_flops",
    "mistral": "_estimate_qwen2_flops",
    "qwen2_moe": "_estimate_qwen2_moe_flops",
    "qwen3_moe": "_estimate_qwen2_moe_flops",
    "deepseek_v3": "_estimate_deepseek_v3_flops",
    "gemma3_text": "_estimate_gemma3_flops",
    "gpt_oss": "_estimate_gpt_oss_flops",
    "qwen3_5": "_estimate_qwen3_5_flops",
    "qwen3_5_moe": "_estimate_qwen3_5_flops",
    "qwen2_5_vl": "_estimate_qwen3_vl_flops",
    "qwen3_vl": "_estimate_qwen3_vl_flops",
    "qwen2_vl": "_estimate_qwen3_vl_flops",
    "qwen3_vl_moe": "_estimate_qwen3_vl_moe_flops",
    "seed_oss": "_estimate_qwen2_flops",
    "apertus": "_estimate_apertus_flops",
    "hy_v3": "_estimate_hy_v3_flops",
}
# Read by flopsreg; verl has no estimator for them (its _estimate_unknown_flops returns 0).
UNSUPPORTED = (
    "mixtral", "gemma2", "gemma3", "deepseek_v2", "llama4_text", "llama4",
    "qwen3_next", "olmo_hybrid", "kimi_linear", "nemotron_h", "falcon_h1", "granitemoehybrid", "jamba", "lfm2",
    "minimax", "deepseek_v32", "glm_moe_dsa", "mistral_large4", "mistral_large4_text", "kimi_k25", "gemma4",
    "gemma4_text", "glm4_moe", "mistral4", "minimax_m2", "starcoder2",
    "qwen3_5_text", "qwen3_5_moe_text",  # verl's qwen3_5 estimator is keyed by the multimodal wrappers' types
    "deepseek_v4", "gemma3n", "gemma3n_text", "glm5_next", "glm5_next_text",
    "qwen2_5_vl_text", "qwen3_vl_text", "qwen2_vl_text",  # verl's qwen3_vl estimator is keyed by the multimodal wrappers' types
    "qwen3_vl_moe_text",  # and its qwen3_vl_moe estimator too
)
SLIDING = ("gemma3_text", "gpt_oss")  # the estimators that read layer_types and sliding_window
QWEN_MOE = ("qwen2_moe", "qwen3_moe", "qwen3_vl_moe")  # the estimators that count every layer as MoE
DENSE_AS_MOE = "_dense_layer_as_moe"  # the rules' name suffix: a dense layer verl counts as MoE


def family_precedence(model_type: str) -> int:
    """Above the convention-wide rules, and distinct per type: no two families' rules tie."""
    return PRECEDENCE + 10 + [*ESTIMATORS, *UNSUPPORTED].index(model_type)


VERL = Convention(
    name="verl",
    summary="verl's MFU count: by model_type; causal s^2/2, windows as s*W/2, embedding counted as a matmul",
    reference=SOURCE,
    counts=BUILTIN_TERMS,  # every built-in exact pattern at this commit (_rules.BUILTIN_TERMS)
)

W = WINDOW.symbol

PATTERNS = [
    attrs.evolve(
        half_square_causal("verl", SOURCE),
        summary="verl: causal s^2/2 pairs on every layer but the gemma3_text and gpt_oss sliding ones "
        "(Mistral's and Qwen2's windows ignored)",
    ),
    Pattern(
        name="verl_ffn",
        slot="mlp.activation",
        flags={"verl"},
        precedence=PRECEDENCE,
        produces="ffn_matrices",
        formula=3,
        summary="verl: 3 FFN matmuls in every estimator flopsreg maps but apertus's (SwiGLU/GeGLU written into each)",
        reference=SOURCE,
    ),
    not_counted("verl", "mtp", "mtp", {"mtp"}, "verl: multi-token prediction (num_nextn_predict_layers)", SOURCE, scope="model"),
    Pattern(
        name="verl_unknown_family",
        slot="head",
        flags={"verl"},
        precedence=PRECEDENCE,
        scope="model",
        formula=0,
        summary="verl: no model_type, no count",
        reference=SOURCE,
        refusal=(
            "verl's FlopsCounter picks its formula by config.model_type, and none of this model's flags is the family flag "
            f"of a model_type verl has an estimator for ({', '.join(family(t) for t in ESTIMATORS)}): verl counts 0 "
            "for any other model_type (_estimate_unknown_flops); a model written by hand needs the flag of its model_type"
        ),
    ),
]
for _type, _estimator in ESTIMATORS.items():
    PATTERNS.append(
        Pattern(
            name=f"verl_{_type}_head",
            slot="head",
            flags={"verl", family(_type)},
            precedence=family_precedence(_type),
            scope="model",
            params=(VOCAB,),
            formula=2 * s * h * 2 * VOCAB.symbol,
            summary=f"verl ({_estimator}): the input embedding and the logits as two V x h matmuls, "
            "tie_word_embeddings ignored",
            reference=SOURCE,
        )
    )
for _type in UNSUPPORTED:
    PATTERNS.append(
        Pattern(
            name=f"verl_{_type}_unsupported",
            slot="head",
            flags={"verl", family(_type)},
            precedence=family_precedence(_type),
            scope="model",
            formula=0,
            summary=f"verl: no estimator for model_type {_type}",
            reference=SOURCE,
            refusal=(
                f"verl has no FLOPs estimator for model_type {_type!r}: its FlopsCounter returns 0 "
                "(_estimate_unknown_flops), so verl reports 0 TFLOP/s and MFU 0"
            ),
        )
    )
# _estimate_qwen3_5_flops: every projection, the conv and the MLPs as their weights (so as exact),
# and the Gated DeltaNet recurrence as 15 d_k d_v H_v per token for training: 5 forward, where
# the recurrent minimum is 6.
PATTERNS.append(
    Pattern(
        name="verl_gated_deltanet_core",
        slot="mixer.core",
        flags={"verl", gated_deltanet.FLAG},
        precedence=PRECEDENCE,
        params=gated_deltanet.CORE.params,
        formula=5 * s * H_v * d_k * d_v,
        weights=gated_deltanet.CORE.weights,
        summary="verl (_compute_qwen3_5_gdn_recurrence_flops): the Gated DeltaNet recurrence as 5 d_k d_v H_v per token forward (15 for training)",
        reference=SOURCE,
    )
)
for _type in SLIDING:
    PATTERNS.append(
        Pattern(
            name=f"verl_{_type}_sliding",
            slot="attention.mask",
            flags={"verl", family(_type), "sliding_window"},
            precedence=family_precedence(_type),
            produces="pairs",
            params=(WINDOW,),
            # 6 n_h d s min(s, W) training FLOPs, the factor of a causal s^2/2 layer: s min(s, W)/2 pairs.
            formula=sympy.Piecewise((s**2 / 2, s <= W), (s * W / 2, True)),
            summary="verl: sliding layers as s*W/2 pairs (s*min(s, W) halved like a causal layer): "
            "about half the s*W the window attends",
            reference=SOURCE,
        )
    )
# _estimate_qwen3_vl_flops: head_dim = hidden_size // num_attention_heads for q, k, v, o and the
# attention (Qwen3-VL-4B: 80, where its layers are 128 wide).
_VERL_HEAD_DIM = sympy.floor(h / n_h)
PATTERNS.append(
    attrs.evolve(
        GQA_PROJECTION,
        name="verl_qwen3_vl_head_dim",
        flags={"verl", family("qwen3_vl")},
        precedence=family_precedence("qwen3_vl"),
        formula=2 * s * h * 2 * n_kv * _VERL_HEAD_DIM,
        provides={"qk_dim": _VERL_HEAD_DIM, "v_dim": _VERL_HEAD_DIM},
        summary="verl (_estimate_qwen3_vl_flops): K and V (and q, o and the attention) with head_dim = hidden // heads, "
        "the config's head_dim ignored",
        reference=SOURCE,
    )
)
# Qwen2-MoE's shared expert and its gate: _estimate_qwen2_moe_flops counts neither (Qwen3-MoE has none).
PATTERNS += [
    Pattern(
        name="verl_qwen2_moe_shared_experts",
        slot="mlp.shared",
        flags={"verl", family("qwen2_moe"), "shared_experts"},
        precedence=family_precedence("qwen2_moe"),
        formula=0,
        summary="verl (_estimate_qwen2_moe_flops): the shared experts are not counted",
        reference=SOURCE,
    ),
    Pattern(
        name="verl_qwen2_moe_shared_expert_gate",
        slot="mlp.shared_gate",
        flags={"verl", family("qwen2_moe"), "shared_expert_gate"},
        precedence=family_precedence("qwen2_moe"),
        formula=0,
        summary="verl (_estimate_qwen2_moe_flops): the shared-expert gate is not counted",
        reference=SOURCE,
    ),
]
# _estimate_qwen2_moe_flops and _estimate_qwen3_vl_moe_flops count num_hidden_layers MoE layers (router
# h x E and top-k experts) and read neither mlp_only_layers nor decoder_sparse_step: a dense layer is
# counted as a MoE one.
for _type in QWEN_MOE:
    PATTERNS.append(
        Pattern(
            name=f"verl_{_type}{DENSE_AS_MOE}",
            slot="mlp",
            flags={"verl", family(_type), "mlp"},
            precedence=family_precedence(_type),
            params=(EXPERTS, TOP_K, EXPERT_HIDDEN),
            formula=2 * s * h * (TOP_K.symbol * f * EXPERT_HIDDEN.symbol + EXPERTS.symbol),
            summary=f"verl ({ESTIMATORS[_type]}) ignores the dense layers (mlp_only_layers, decoder_sparse_step): "
            "a dense layer counted as MoE, router h x E and top-k experts",
            reference=SOURCE,
        )
    )
# _estimate_hy_v3_flops counts num_hidden_layers MoE layers with the shared experts
# (3 h F_e (k + num_shared_experts) + h E) and reads no mlp_layer_types: its dense first layer too. A
# dense layer's kind holds no expert widths to count it so: refused, saying what verl counts.
PATTERNS.append(
    Pattern(
        name="verl_hy_v3_dense_layer_refused",
        slot="mlp",
        flags={"verl", family("hy_v3"), "mlp"},
        precedence=family_precedence("hy_v3"),
        formula=0,
        summary="verl (_estimate_hy_v3_flops) ignores the dense layers (mlp_layer_types): a dense layer counted as MoE",
        reference=SOURCE,
        refusal=(
            "verl's _estimate_hy_v3_flops reads no mlp_layer_types and counts every layer as MoE (router h x E, top-k and "
            "shared experts), this dense one too; flopsreg does not reproduce that for a dense layer (it holds no expert "
            "widths): count a model whose every layer is MoE, or use the exact convention"
        ),
    )
)
# _estimate_apertus_flops: a plain MLP of 2 matmuls (xIELU), and q_norm and k_norm counted as h + n_kv d
# weights applied like a matmul to every token (qk_norm_params_per_layer), in every layer.
PATTERNS += [
    Pattern(
        name="verl_apertus_ffn",
        slot="mlp.activation",
        flags={"verl", family("apertus")},
        precedence=family_precedence("apertus"),
        produces="ffn_matrices",
        formula=2,
        summary="verl (_estimate_apertus_flops): 2 FFN matmuls (up_proj, down_proj; xIELU has no gate)",
        reference=SOURCE,
    ),
    attrs.evolve(
        QK_NORM,
        name="verl_apertus_qk_norm",
        flags={"verl", family("apertus"), "qk_norm"},
        precedence=family_precedence("apertus"),
        params=(KV_HEADS,),
        formula=2 * s * (h + KV_HEADS.symbol * d_qk),
        summary="verl (_estimate_apertus_flops): q_norm and k_norm as h + n_kv d weights applied like a matmul "
        "to every token (the norms are elementwise, of width d each)",
        reference=SOURCE,
    ),
]


@hookimpl
def flopsreg_register_conventions():
    return [VERL]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
