"""Bias vectors of projections, MLPs, experts and routers: weights only.

A bias add is elementwise (not counted), so these patterns hold weights and no FLOPs. Each is
chosen by an explicit flag that a reader sets from the config (``attention_bias``, ``qkv_bias``,
``mlp_bias``, ...), never guessed from a parameter.
"""

from flopsreg.patterns.dense_mlp import FFN_HIDDEN
from flopsreg.patterns.gqa_projection import KV_HEADS
from flopsreg.patterns.logits import VOCAB
from flopsreg.patterns.moe import EXPERT_HIDDEN, EXPERTS, MOE, TOP_K
from flopsreg.patterns.quantities import d_qk, d_v, f
from flopsreg.plugin import Pattern, h, hookimpl, n_h

n_kv, E, k, F_e = KV_HEADS.symbol, EXPERTS.symbol, TOP_K.symbol, EXPERT_HIDDEN.symbol
_QKV = n_h * d_qk + n_kv * (d_qk + d_v)

QKV_BIAS = Pattern(
    name="qkv_bias",
    slot="attention.bias",
    flags={"qkv_bias"},
    precedence=10,
    params=(KV_HEADS,),
    formula=0,
    weights=_QKV,
    summary="biases of the query, key and value projections, none on the output (Qwen2)",
    reference="Hugging Face Qwen2Attention (q/k/v_proj bias=True, o_proj bias=False); Qwen2MoeConfig.qkv_bias",
)
ATTENTION_BIAS = Pattern(
    name="attention_bias",
    slot="attention.bias",
    flags={"attention_bias"},
    precedence=20,
    params=(KV_HEADS,),
    formula=0,
    weights=_QKV + h,
    summary="biases of the query, key, value and output projections (attention_bias = true)",
    reference="Hugging Face LlamaConfig.attention_bias (q/k/v/o_proj bias); GPT-OSS",
)
OUTPUT_BIAS = Pattern(
    name="output_bias",
    slot="attention.bias",
    flags={"output_bias"},
    precedence=15,
    formula=0,
    weights=h,
    summary="a bias of h on the attention's output projection alone, none on q/k/v (GPT-Neo's out_proj, RecurrentGemma's o_proj)",
    reference="Hugging Face GPTNeoSelfAttention (q/k/v_proj bias=False, out_proj bias=True); GPTNeoXJapaneseAttention.dense_bias; RecurrentGemmaAttention (o_proj bias=True, q/k/v_proj bias=attention_bias)",
)
MLP_BIAS = Pattern(
    name="mlp_bias",
    slot="mlp.bias",
    flags={"mlp", "mlp_bias"},
    precedence=10,
    params=(FFN_HIDDEN,),
    formula=0,
    # One bias of width F per up (and gate) matrix, one of width h on the down projection.
    weights=(f - 1) * FFN_HIDDEN.symbol + h,
    summary="biases of a dense MLP: F per up/gate matrix, h on the down projection (mlp_bias = true)",
    reference="Hugging Face LlamaConfig.mlp_bias (gate/up/down_proj bias)",
)
EXPERT_BIAS = Pattern(
    name="expert_bias",
    slot="mlp.bias",
    flags={"moe", "expert_bias"},
    precedence=20,
    params=(EXPERTS, TOP_K, EXPERT_HIDDEN),
    constraints=MOE.constraints,
    formula=0,
    weights=E * ((f - 1) * F_e + h),
    active_weights=k * ((f - 1) * F_e + h),
    routed_weights=0,  # biases stay in the weights' format (GPT-OSS ships its MXFP4 experts' biases in bf16)
    summary="biases of every routed expert: F_e per up/gate matrix, h on the down projection (GPT-OSS)",
    reference="Hugging Face GptOssExperts (gate_up_proj_bias, down_proj_bias)",
)
MOE_OUTPUT_BIAS = Pattern(
    name="moe_output_bias",
    slot="mlp.bias",
    flags={"moe", "moe_output_bias"},
    precedence=15,
    formula=0,
    weights=h,
    summary="one bias of h added to a MoE block's combined output (not one per expert: JetMoE)",
    reference="Hugging Face JetMoeMoE.bias (modeling_jetmoe.py)",
)
ROUTER_BIAS = Pattern(
    name="router_bias",
    slot="mlp.router_bias",
    flags={"moe", "router_bias"},
    precedence=10,
    params=(EXPERTS,),
    formula=0,
    weights=E,
    summary="a bias of E on the router's logits (GPT-OSS router.bias)",
    reference="Hugging Face GptOssTopKRouter (bias of num_local_experts)",
)
HEAD_BIAS = Pattern(
    name="head_bias",
    slot="head.bias",
    flags={"lm_head", "head_bias"},
    precedence=10,
    scope="model",
    params=(VOCAB,),
    formula=0,
    weights=VOCAB.symbol,
    summary="a bias of V on the logits (Phi's lm_head)",
    reference="Hugging Face PhiForCausalLM.lm_head (nn.Linear(hidden_size, vocab_size, bias=True))",
)


@hookimpl
def flopsreg_register_patterns():
    return [QKV_BIAS, OUTPUT_BIAS, ATTENTION_BIAS, MLP_BIAS, EXPERT_BIAS, MOE_OUTPUT_BIAS, ROUTER_BIAS, HEAD_BIAS]
