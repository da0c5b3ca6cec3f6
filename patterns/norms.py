"""Normalisation weights: per-layer norms, per-head query/key norms and the final norm.

Norms hold a scale vector and do no matmul (elementwise work is not counted), so these
patterns hold weights only: ``Registry.parameters`` adds them up, FLOPs are unchanged. The
Hugging Face families use RMSNorm (one scale of the normalised width); with the flag
``norm_bias`` every norm is a LayerNorm with a bias as well (Megatron-LM's default).
"""

from flopsreg.patterns.dense_mlp import FFN_HIDDEN
from flopsreg.patterns.gqa_projection import KV_HEADS
from flopsreg.patterns.parallel_experts import PARALLEL_EXPERTS
from flopsreg.patterns.quantities import d_qk
from flopsreg.plugin import Pattern, h, hookimpl, n_h

DECODER_NORMS = Pattern(
    name="decoder_norms",
    slot="norms",
    flags={"norms"},
    precedence=10,
    formula=0,
    weights=2 * h,
    summary="two RMSNorms of width h per layer, before attention and before the MLP (no FLOPs counted)",
    reference="Zhang and Sennrich 2019, RMSNorm; Hugging Face input_layernorm, post_attention_layernorm",
)
SANDWICH_NORMS = Pattern(
    name="sandwich_norms",
    slot="norms",
    flags={"norms", "sandwich_norms"},
    precedence=20,
    formula=0,
    weights=4 * h,
    summary="four RMSNorms of width h per layer: before and after attention and the MLP (Gemma 2, Gemma 3)",
    reference="Gemma Team 2024, 'Gemma 2' (arXiv:2408.00118); Hugging Face pre/post_feedforward_layernorm",
)
SINGLE_NORM = Pattern(
    name="single_norm",
    slot="norms",
    flags={"norms", "single_norm"},
    precedence=25,
    formula=0,
    weights=h,
    summary="one RMSNorm of width h per layer, before its one mixer or MLP (Nemotron-H blocks; no FLOPs counted)",
    reference="Hugging Face NemotronHBlock.norm (modeling_nemotron_h.py)",
)
SANDWICH_PARALLEL_NORMS = Pattern(
    name="sandwich_parallel_norms",
    slot="norms",
    flags={"norms", "sandwich_norms", *PARALLEL_EXPERTS.flags},
    precedence=40,
    formula=0,
    weights=7 * h,
    summary="seven RMSNorms of width h per layer: the four sandwich norms, and before the experts, after them and after the dense MLP (Gemma 4)",
    reference="Hugging Face Gemma4TextDecoderLayer with enable_moe_block: pre_feedforward_layernorm_2, post_feedforward_layernorm_1 and _2",
)
MOE_OUTPUT_NORMS = Pattern(
    name="moe_output_norms",
    slot="norms",
    flags={"norms", "moe_output_norm"},
    precedence=12,
    formula=0,
    weights=3 * h,
    summary="three RMSNorms of width h per MoE layer: before attention, before the MLP and on the experts' output (no FLOPs counted)",
    reference="Hugging Face AXK1MoE.post_mlp_layernorm (modeling_axk1.py), only in the MoE layers",
)
SUB_NORMS = Pattern(
    name="sub_norms",
    slot="norms",
    flags={"norms", "sub_norms"},
    precedence=50,
    params=(FFN_HIDDEN,),
    formula=0,
    weights=3 * h + FFN_HIDDEN.symbol,
    summary="four RMSNorms per layer: two of width h before the sublayers, one of h on the attention's output before "
    "its output projection and one of the FFN width F before the down projection (no FLOPs counted)",
    reference="Ma et al. 2024, 'The Era of 1-bit LLMs' (arXiv:2402.17764), SubLN; Hugging Face BitNet attn_sub_norm, ffn_sub_norm",
)
QK_NORM = Pattern(
    name="qk_norm",
    slot="attention.qk_norm",
    flags={"qk_norm"},
    precedence=10,
    formula=0,
    weights=2 * d_qk,
    summary="an RMSNorm of the head width on queries and one on keys, shared by all heads (no FLOPs counted)",
    reference="Dehghani et al. 2023, 'Scaling Vision Transformers to 22B' (QK-norm); Hugging Face q_norm, k_norm (Qwen3, Gemma 3)",
)
FULL_WIDTH_QK_NORM = Pattern(
    name="full_width_qk_norm",
    slot="attention.qk_norm",
    flags={"qk_norm", "full_width_qk_norm"},
    precedence=30,
    params=(KV_HEADS,),
    formula=0,
    weights=(n_h + KV_HEADS.symbol) * d_qk,
    summary="an RMSNorm over all query heads at once (n_h d_qk) and one over all key heads (n_kv d_qk), no FLOPs counted",
    reference="OLMo 2 (arXiv:2501.00656), QK-norm over the full projections; Hugging Face OlmoHybridAttention q_norm, k_norm",
)
FINAL_NORM = Pattern(
    name="final_norm",
    slot="final_norm",
    flags={"norms"},
    precedence=10,
    scope="model",
    formula=0,
    weights=h,
    summary="the RMSNorm of width h after the last decoder layer (no FLOPs counted)",
    reference="Hugging Face model.norm of every decoder-only family",
)


_LAYERNORM = "Ba et al. 2016, 'Layer Normalization' (scale and bias); Megatron-LM --normalization LayerNorm"
DECODER_LAYERNORMS = Pattern(
    name="decoder_layernorms",
    slot="norms",
    flags={"norms", "norm_bias"},
    precedence=15,
    formula=0,
    weights=4 * h,
    summary="two LayerNorms of width h per layer, each a scale and a bias (no FLOPs counted)",
    reference=_LAYERNORM,
)
SINGLE_LAYERNORM = Pattern(
    name="single_layernorm",
    slot="norms",
    flags={"norms", "norm_bias", "single_norm"},
    precedence=35,
    formula=0,
    weights=2 * h,
    summary="one LayerNorm of width h per layer, a scale and a bias, before its one mixer or MLP (no FLOPs counted)",
    reference=_LAYERNORM + "; one per layer of a Megatron-LM hybrid stack",
)
SANDWICH_LAYERNORMS = Pattern(
    name="sandwich_layernorms",
    slot="norms",
    flags={"norms", "sandwich_norms", "norm_bias"},
    precedence=30,
    formula=0,
    weights=8 * h,
    summary="four LayerNorms of width h per layer, each a scale and a bias (no FLOPs counted)",
    reference=_LAYERNORM,
)
QK_LAYERNORM = Pattern(
    name="qk_layernorm",
    slot="attention.qk_norm",
    flags={"qk_norm", "norm_bias"},
    precedence=20,
    formula=0,
    weights=4 * d_qk,
    summary="a LayerNorm of the head width on queries and one on keys, scale and bias (Megatron-LM --qk-layernorm)",
    reference=_LAYERNORM,
)
FINAL_LAYERNORM = Pattern(
    name="final_layernorm",
    slot="final_norm",
    flags={"norms", "norm_bias"},
    precedence=20,
    scope="model",
    formula=0,
    weights=2 * h,
    summary="the LayerNorm of width h after the last decoder layer: scale and bias (no FLOPs counted)",
    reference=_LAYERNORM,
)

NO_FINAL_NORM = Pattern(
    name="no_final_norm",
    slot="final_norm",
    flags={"norms", "no_final_norm"},
    precedence=30,
    scope="model",
    formula=0,
    weights=0,
    summary="no norm after the last decoder layer: post-norm blocks end in their own LayerNorm (OpenAI GPT)",
    reference="Radford et al. 2018, 'Improving Language Understanding by Generative Pre-Training'; Hugging Face OpenAIGPTModel (no ln_f)",
)
EMBEDDING_NORM = Pattern(
    name="embedding_norm",
    slot="embedding_norm",
    flags={"embedding_norm"},
    precedence=10,
    scope="model",
    formula=0,
    weights=h,
    summary="a norm of width h on the token embedding, before the first layer: a scale (no FLOPs counted)",
    reference="Hugging Face ModernBertDecoderEmbeddings.norm (nn.LayerNorm with norm_bias false: no bias)",
)
EMBEDDING_LAYERNORM = Pattern(
    name="embedding_layernorm",
    slot="embedding_norm",
    flags={"embedding_norm", "norm_bias"},
    precedence=20,
    scope="model",
    formula=0,
    weights=2 * h,
    summary="a LayerNorm of width h on the token embedding, before the first layer: scale and bias (no FLOPs counted)",
    reference="Dettmers et al. 2022 (StableEmbedding); BigScience 2022, 'BLOOM' (arXiv:2211.05100); Hugging Face word_embeddings_layernorm",
)

@hookimpl
def flopsreg_register_patterns():
    return [DECODER_NORMS, DECODER_LAYERNORMS, MOE_OUTPUT_NORMS, SANDWICH_NORMS, SUB_NORMS, SANDWICH_LAYERNORMS, SANDWICH_PARALLEL_NORMS, SINGLE_NORM, SINGLE_LAYERNORM, QK_NORM, QK_LAYERNORM, FULL_WIDTH_QK_NORM, FINAL_NORM, FINAL_LAYERNORM, NO_FINAL_NORM, EMBEDDING_NORM, EMBEDDING_LAYERNORM]
