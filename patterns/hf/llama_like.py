"""Hugging Face readers of the Llama-like families, each declared as a :class:`FamilyTraits`
record (patterns/hf/_traits.py): a family is what it changes from Llama.

Every record cites the transformers 5.24 files its traits come from
(``transformers/models/<type>/configuration_<type>.py`` and ``modeling_<type>.py``). Traits that
run no other matmul are noted, not declared: fused q/k/v or gate/up projections (Phi-3, GLM),
parallel attention and MLP (Phi, Cohere), partial rotary, NoPE layers (SmolLM3), logit
soft-capping (nanochat), embedding, attention and residual multipliers (Granite), ``clip_qkv``
(OLMo). tests/hf/test_families_forward.py checks every record against a recorded forward pass.
"""

from flopsreg.patterns.attention_output_gate import ATTENTION_OUTPUT_GATE_HEAD_BIAS
from flopsreg.patterns.attention_sinks import ATTENTION_SINKS
from flopsreg.patterns.biases import ATTENTION_BIAS, HEAD_BIAS, MLP_BIAS, QKV_BIAS, ROUTER_BIAS
from flopsreg.patterns.hf._traits import (
    Experts,
    FamilyTraits,
    Switch,
    dense_first,
    full,
    full_every,
    layer_types_or,
    window_everywhere,
)
from flopsreg.patterns.hf.layer_types import FULL, SLIDING
from flopsreg.patterns.moe import MOE
from flopsreg.patterns.norms import (
    DECODER_LAYERNORMS,
    FULL_WIDTH_QK_NORM,
    QK_LAYERNORM,
    QK_NORM,
    SANDWICH_NORMS,
    SINGLE_LAYERNORM,
    SINGLE_NORM,
    SUB_NORMS,
)
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl

ATTENTION = Switch("attention_bias", False, ATTENTION_BIAS.flags)  # q/k/v/o_proj bias (Llama's attention_bias)
MLP = Switch("mlp_bias", False, MLP_BIAS.flags)  # gate/up/down_proj bias (Llama's mlp_bias)
LLAMA_BIASES = (ATTENTION, MLP)


def _smollm3_attention(c: Fields, layers: int) -> Layers[str]:
    """SmolLM3Config.__post_init__: layer i slides iff use_sliding_window, sliding_window is set and
    layer i has no RoPE (no_rope_layers[i] == 0; default: every no_rope_layer_interval-th layer)."""
    if not (c.bool("use_sliding_window", default=False) and c.given("sliding_window")):
        return Layers.uniform(FULL, layers)
    listed = c.int_list("no_rope_layers", maximum=1)
    if listed is not None:
        if len(listed) != layers:
            raise c.error("no_rope_layers", f": {len(listed)} entries but num_hidden_layers = {layers}; expected one per layer")
        return Layers.of(SLIDING if not rope else FULL for rope in listed)
    interval = c.int_or_default("no_rope_layer_interval", 4)
    return Layers.rule(layers, lambda i: SLIDING if (i + 1) % interval == 0 else FULL, period=interval)


def _ernie_moe_layers(c: Fields, layers: int) -> Layers[str]:
    """Ernie4_5_MoeDecoderLayer: layer i is MoE iff (i + 1) % moe_layer_interval == 0 and
    moe_layer_start_index <= i <= moe_layer_end_index (class defaults 1, 1 and num_hidden_layers - 1)."""
    interval = c.int_or_default("moe_layer_interval", 1)
    start = c.int_or_default("moe_layer_start_index", 1, minimum=0)
    end = c.int_or_default("moe_layer_end_index", layers - 1, minimum=0)
    return Layers.rule(
        layers, lambda i: "moe" if (i + 1) % interval == 0 and start <= i <= end else "dense", period=interval, start=min(end + 1, layers)
    )


def _flint_attention(c: Fields, layers: int) -> Layers[str]:
    """FlintConfig.__post_init__: layer i is full iff i < 2, i % 4 == 1 or i is the last layer; else sliding."""
    rule = Layers.rule(layers, lambda i: FULL if i < 2 or i % 4 == 1 else SLIDING, period=4, start=min(2, layers))
    return rule.replaced(layers - 1, FULL) if layers else rule


def _beam_attention(c: Fields, layers: int) -> Layers[str]:
    """BeamConfig.__post_init__: layer i slides iff (i + 1) % 6 != 0, and the last layer is full."""
    rule = full_every(6, 1)(c, layers)
    return rule.replaced(layers - 1, FULL) if layers else rule


def _flint_moe_layers(c: Fields, layers: int) -> Layers[str]:
    """FlintDecoderLayer: layer i is MoE iff i not in mlp_only_layers (default [0, 1]), num_experts > 0
    and (i + 1) % decoder_sparse_step == 0 (default 1); else a dense MLP of intermediate_size."""
    step = c.int_or_default("decoder_sparse_step", 1)
    listed = c.int_list("mlp_only_layers", maximum=layers - 1)
    dense_only = {0, 1} if listed is None else set(listed)
    if c.int("num_experts", minimum=0) == 0:
        return Layers.uniform("dense", layers)
    start = max(dense_only, default=-1) + 1
    return Layers.rule(layers, lambda i: "moe" if i not in dense_only and (i + 1) % step == 0 else "dense", period=step, start=min(start, layers))


def _dots1_attention(c: Fields, layers: int) -> Layers[str]:
    """Dots1Config.__post_init__: layer i slides iff sliding_window is set and i >= max_window_layers (62)."""
    if not c.given("sliding_window"):
        return Layers.uniform(FULL, layers)
    return Layers.split(layers, FULL, SLIDING, c.int_or_default("max_window_layers", 62, minimum=0))


def _olmo2(name: str, title: str, summary: str, **traits) -> FamilyTraits:
    # modeling_olmo2.py: post_attention_layernorm and post_feedforward_layernorm after the sublayers
    # (2 RMSNorms of h: the weights of two pre-norms); q_norm over all heads (n_h d), k_norm over
    # the key heads (n_kv d).
    return FamilyTraits(name=name, title=title, summary=summary, flags=FULL_WIDTH_QK_NORM.flags, switches=(ATTENTION,), **traits)


def _cohere(name: str, title: str, summary: str, **traits) -> FamilyTraits:
    # modeling_cohere.py: attention and MLP in parallel on one CohereLayerNorm (a scale, no bias);
    # logit_scale multiplies the logits (no matmul); tie_word_embeddings true by default.
    return FamilyTraits(name=name, title=title, summary=summary, tied=True, norms=SINGLE_NORM.flags, **traits)


# The 2026 types: hy_v3, hyperclovax, jais2, kolibri1, flint, cohere_compass_text, beam (tests/hf/test_fam2026a_forward.py).
FAMILIES_2026: tuple[FamilyTraits, ...] = (
    # hy_v3: ApertusAttention (q_norm/k_norm of head_dim; attention_bias on q/k/v/o_proj); layer i is a
    # dense MLP or MoE by mlp_layer_types (default: layer 0 dense); num_shared_experts shared experts of
    # moe_intermediate_size; the router a weight of E x h, e_score_correction_bias a buffer. mlp_bias
    # would bias the dense and the shared experts' projections: refused (no pattern holds the latter).
    FamilyTraits(name="hy_v3", title="Hy3", summary="HYV3Config: QK-norm, MoE with shared experts after a dense first layer",
                 head_dim=128, flags=QK_NORM.flags, switches=(ATTENTION,), aliases={"num_local_experts": "num_experts"},
                 refused=(("mlp_bias", False, "the shared experts' biases are in no pattern"),),
                 experts=Experts(experts="num_experts", shared_count="num_shared_experts", layers=dense_first(1, listed="mlp_layer_types", key=None))),
    # hyperclovax: Granite (multipliers: no matmul) with post_norm1/post_norm2 after attention and MLP
    # when use_post_norm (default true): four RMSNorms per layer.
    FamilyTraits(name="hyperclovax", title="HyperCLOVA X", summary="HyperCLOVAXConfig: Granite with post-norms",
                 switches=(*LLAMA_BIASES, Switch("use_post_norm", True, SANDWICH_NORMS.flags))),
    # jais2: Llama with nn.LayerNorm (scale and bias) norms and Nemotron's plain MLP (up_proj relu2
    # down_proj); attention_bias and mlp_bias true by default.
    FamilyTraits(name="jais2", title="Jais 2", summary="Jais2Config: LayerNorms, plain relu^2 MLP, biases by default",
                 norms=DECODER_LAYERNORMS.flags, gated=False, activation=("hidden_act", "relu2"),
                 switches=(Switch("attention_bias", True, ATTENTION_BIAS.flags), Switch("mlp_bias", True, MLP_BIAS.flags))),
    # kolibri1: GLM-4's four norms per layer, EXAONE 4's attention (q_norm/k_norm of head_dim, no
    # biases); layer i full iff (i + 1) % 5 == 0, else sliding; every layer MoE with a shared expert of
    # shared_expert_intermediate_size; the router a weight of E x h, e_score_correction_bias a buffer.
    FamilyTraits(name="kolibri1", title="Kolibri 1", summary="Kolibri1Config: sandwich norms, 4 sliding layers to 1 full, MoE",
                 head_dim=128, norms=SANDWICH_NORMS.flags, flags=QK_NORM.flags, attention=layer_types_or(full_every(5, 1)),
                 aliases={"num_local_experts": "num_experts"},
                 experts=Experts(experts="num_experts", shared_width="shared_expert_intermediate_size")),
    # flint: Qwen3-MoE attention with a sink logit per head (RoPE on sliding layers only: no matmul);
    # layer types and dense layers by FlintConfig's rules; an ungated shared expert per MoE layer.
    FamilyTraits(name="flint", title="Flint", summary="FlintConfig: sinks, QK-norm, full layers by rule, MoE with a shared expert",
                 head_dim=128, flags=QK_NORM.flags | ATTENTION_SINKS.flags, switches=(ATTENTION,), attention=layer_types_or(_flint_attention),
                 aliases={"num_local_experts": "num_experts"},
                 experts=Experts(experts="num_experts", shared_width="shared_expert_intermediate_size", layers=_flint_moe_layers)),
    # cohere_compass_text: Cohere 2's decoder (parallel attention and MLP on one LayerNorm without
    # bias, tied head) under a Qwen3-VL text model; layer_types default all full; RoPE per layer type
    # (NoPE where rope_parameters names none) and the vision wrapper's DeepStack adds run no matmul.
    _cohere("cohere_compass_text", "North (Cohere Compass) text", "CohereCompassTextConfig: Cohere 2's block, every layer full unless layer_types says",
            switches=(ATTENTION,), attention=layer_types_or(full)),
    # beam: Qwen3-MoE attention (q_norm/k_norm of head_dim) with an elementwise sigmoid gate, gate_proj
    # (h -> H d, no bias) plus gate_bias (one per head); four RMSNorms per layer (DeepSeek-V3.2's two,
    # pre/post_feedforward_layernorm); depth-scaled residual adds, NoPE full layers with a
    # position-dependent query scale, group-limited routing and routed_scaling_factor run no matmul.
    # Dense MLP or MoE by mlp_layer_types (default: 3 dense layers); no shared experts; the router a
    # weight of E x h, its e_score_correction_bias a buffer.
    FamilyTraits(name="beam", title="Beam", summary="BeamConfig: gated attention, sandwich norms, 5 sliding layers to 1 full, MoE after 3 dense",
                 head_dim=128, norms=SANDWICH_NORMS.flags, flags=QK_NORM.flags | ATTENTION_OUTPUT_GATE_HEAD_BIAS.flags, switches=(ATTENTION,),
                 attention=layer_types_or(_beam_attention), experts=Experts(experts="num_experts", layers=dense_first(3, listed="mlp_layer_types", key=None))),
)

FAMILIES: tuple[FamilyTraits, ...] = (
    # olmo: OlmoLayerNorm has no weight and no bias (norms without weights); attention_bias false.
    FamilyTraits(name="olmo", title="OLMo", summary="OlmoConfig: Llama with weightless LayerNorms", norms=(), switches=(ATTENTION,)),
    _olmo2("olmo2", "OLMo 2", "Olmo2Config: post-norms, QK-norm over all heads"),
    # olmo3: configuration_olmo3.py builds layer_types: layer i slides iff (i + 1) % 4 != 0.
    _olmo2("olmo3", "OLMo 3", "Olmo3Config: OLMo 2 with 3 sliding layers to 1 full", attention=layer_types_or(full_every(4, 1))),
    # phi: modeling_phi.py: one LayerNorm (scale, bias) before attention and fc1/fc2 in parallel;
    # q/k/v_proj and dense biased, fc1/fc2 biased (gelu_new, not gated); lm_head has a bias;
    # qk_layernorm: LayerNorms of head_dim on queries and keys; final_layernorm with a bias.
    FamilyTraits(
        name="phi", title="Phi", summary="PhiConfig: parallel attention and GELU MLP, LayerNorms, biases everywhere",
        gated=False, activation=("hidden_act", "gelu_new"), norms=SINGLE_LAYERNORM.flags,
        flags=ATTENTION_BIAS.flags | MLP_BIAS.flags | HEAD_BIAS.flags, switches=(Switch("qk_layernorm", False, QK_LAYERNORM.flags),),
    ),
    # phi3: qkv_proj and gate_up_proj are fused (the same matmuls); no biases; every layer slides
    # when sliding_window is set (modeling_phi3.py).
    FamilyTraits(name="phi3", title="Phi-3", summary="Phi3Config: fused projections; sliding_window on every layer when set", attention=window_everywhere),
    _cohere("cohere", "Command R", "CohereConfig: parallel attention and MLP, one norm per layer",
            switches=(ATTENTION, Switch("use_qk_norm", False, FULL_WIDTH_QK_NORM.flags))),
    # cohere2: configuration_cohere2.py: layer i slides iff (i + 1) % sliding_window_pattern != 0 (4).
    _cohere("cohere2", "Command R7B", "Cohere2Config: Cohere with 3 sliding layers to 1 full",
            switches=(ATTENTION,), attention=layer_types_or(full_every(4, 1, key="sliding_window_pattern"))),
    # glm: gate_up_proj fused; attention_bias (default true) biases q/k/v_proj only, never o_proj;
    # head_dim 128 by default; partial rotary.
    FamilyTraits(name="glm", title="GLM", summary="GlmConfig: q/k/v biases, fused gate_up, head_dim 128",
                 head_dim=128, switches=(Switch("attention_bias", True, QKV_BIAS.flags),)),
    # glm4: GLM with post_self_attn_layernorm and post_mlp_layernorm: four RMSNorms per layer.
    FamilyTraits(name="glm4", title="GLM-4", summary="Glm4Config: GLM with four norms per layer",
                 head_dim=128, norms=SANDWICH_NORMS.flags, switches=(Switch("attention_bias", True, QKV_BIAS.flags),)),
    # granite: Llama with embedding/attention/residual multipliers and logits_scaling (no matmul).
    FamilyTraits(name="granite", title="Granite", summary="GraniteConfig: Llama with scaling multipliers", switches=LLAMA_BIASES),
    # granite_swa: a sink logit per head on every layer; layer i is full iff i % 4 == 0;
    # tie_word_embeddings true by default.
    FamilyTraits(name="granite_swa", title="Granite SWA", summary="GraniteSWAConfig: sinks, 1 full layer to 3 sliding",
                 tied=True, flags=ATTENTION_SINKS.flags, switches=LLAMA_BIASES, attention=layer_types_or(full_every(4, 0))),
    # ernie4_5: use_bias (default false) biases q/k/v/o_proj and the MLP; head_dim 128; tied.
    FamilyTraits(name="ernie4_5", title="ERNIE 4.5", summary="Ernie4_5Config: use_bias for every projection, head_dim 128",
                 tied=True, head_dim=128, switches=(Switch("use_bias", False, ATTENTION_BIAS.flags | MLP_BIAS.flags),)),
    # exaone: built as LlamaForCausalLM; ExaoneConfig.attribute_map renames three keys.
    FamilyTraits(name="exaone", title="EXAONE", summary="ExaoneConfig: Llama under other key names", switches=LLAMA_BIASES,
                 aliases={"num_layers": "num_hidden_layers", "activation_function": "hidden_act"}),
    # exaone4: post-norms (2 per layer), q_norm/k_norm of head_dim; layer i slides iff
    # (i + 1) % sliding_window_pattern != 0 (4).
    FamilyTraits(name="exaone4", title="EXAONE 4", summary="Exaone4Config: post-norms, QK-norm, 3 sliding layers to 1 full",
                 flags=QK_NORM.flags, attention=layer_types_or(full_every(4, 1, key="sliding_window_pattern"))),
    # seed_oss: attention_bias (default true) biases q/k/v_proj, attention_out_bias (default false) o_proj.
    FamilyTraits(name="seed_oss", title="Seed-OSS", summary="SeedOssConfig: q/k/v biases, head_dim 128", head_dim=128,
                 switches=(Switch("attention_bias", True, QKV_BIAS.flags), Switch("attention_out_bias", False, ATTENTION_BIAS.flags, needs="attention_bias"), MLP)),
    # smollm3: NoPE layers (no matmul); tie_word_embeddings true by default.
    FamilyTraits(name="smollm3", title="SmolLM3", summary="SmolLM3Config: NoPE layers; sliding on them if use_sliding_window",
                 tied=True, switches=LLAMA_BIASES, attention=_smollm3_attention),
    # ministral: layer_types, default sliding on every layer iff sliding_window is set;
    # MinistralAttention reads config.head_dim (class default null) as it is.
    FamilyTraits(name="ministral", title="Ministral", summary="MinistralConfig: layer_types, sliding by default",
                 head_dim_required=True, attention=layer_types_or(window_everywhere)),
    # ministral3: Mistral attention (sliding on every layer iff sliding_window), head_dim 128.
    FamilyTraits(name="ministral3", title="Ministral 3", summary="Ministral3Config: sliding_window on every layer when set",
                 head_dim=128, attention=window_everywhere),
    # apertus: up_proj, xIELU, down_proj (plain); attention_layernorm and feedforward_layernorm
    # before the sublayers; q_norm/k_norm of head_dim; attention_bias biases q/k/v/o_proj; the
    # xIELU module holds alpha_p and alpha_n (read_family adds them for hidden_act "xielu").
    FamilyTraits(name="apertus", title="Apertus", summary="ApertusConfig: a plain xIELU MLP, QK-norm",
                 gated=False, activation=("hidden_act", "xielu"), flags=QK_NORM.flags, switches=(ATTENTION,)),
    # bitnet: gate/up/down_proj with relu2 (gated); attn_sub_norm (width hidden_size) on the
    # attention's output before o_proj and ffn_sub_norm (intermediate_size) before down_proj, beside
    # the two pre-norms; the weights are plain nn.Linear (ternary only when quantized).
    FamilyTraits(name="bitnet", title="BitNet", summary="BitNetConfig: SubLN norms inside attention and MLP, relu^2 gate",
                 activation=("hidden_act", "relu2"), norms=SUB_NORMS.flags, switches=(ATTENTION,)),
    # arcee: up_proj then down_proj with relu2 between: a plain MLP of 2 matmuls.
    FamilyTraits(name="arcee", title="Arcee", summary="ArceeConfig: Llama with a plain relu^2 MLP",
                 gated=False, activation=("hidden_act", "relu2"), switches=LLAMA_BIASES),
    FamilyTraits(name="helium", title="Helium", summary="HeliumConfig: Llama, head_dim 128", head_dim=128, switches=LLAMA_BIASES),
    # internlm3: built as LlamaForCausalLM; attribute_map qkv_bias -> attention_bias, bias -> mlp_bias.
    FamilyTraits(name="internlm3", title="InternLM3", summary="InternLM3Config: Llama, head_dim 128", head_dim=128,
                 switches=LLAMA_BIASES, aliases={"qkv_bias": "attention_bias", "bias": "mlp_bias"}),
    # gemma: GeGLU (gelu_pytorch_tanh gate); head_dim 256; tied; embeddings scaled by sqrt(h) (no matmul).
    FamilyTraits(name="gemma", title="Gemma", summary="GemmaConfig: GeGLU MLP, head_dim 256, tied head",
                 tied=True, activation=("hidden_act", "gelu_pytorch_tanh"), head_dim=256, switches=(ATTENTION,)),
    # vaultgemma: input_layernorm and pre_feedforward_layernorm (2 per layer); even layers slide;
    # attention and final logit soft-capping (no matmul).
    FamilyTraits(name="vaultgemma", title="VaultGemma", summary="VaultGemmaConfig: Gemma with even layers sliding",
                 tied=True, activation=("hidden_activation", "gelu_pytorch_tanh"), head_dim=256, switches=(ATTENTION,),
                 attention=layer_types_or(full_every(2, 1))),
    # hunyuan_v1_dense: query_layernorm and key_layernorm of head_dim in every layer; the
    # attention reads config.head_dim (class default null) as it is.
    FamilyTraits(name="hunyuan_v1_dense", title="Hunyuan V1 Dense", summary="HunYuanDenseV1Config: Llama with QK-norm",
                 head_dim_required=True, flags=QK_NORM.flags, switches=(ATTENTION,)),
    # iquestcoder: built as LlamaForCausalLM, head_dim 128.
    FamilyTraits(name="iquestcoder", title="IQuest-Coder", summary="IQuestCoderConfig: Llama, head_dim 128", head_dim=128, switches=LLAMA_BIASES),
    # cwm: no attention biases (bias=False in modeling_cwm.py); layer i is full iff i % 4 == 0.
    FamilyTraits(name="cwm", title="CWM", summary="CwmConfig: 1 full layer to 3 sliding, head_dim 128",
                 head_dim=128, switches=(MLP,), attention=layer_types_or(full_every(4, 0))),
    # nanochat: weightless RMSNorms (and q/k norms), fc1 relu2 fc2 (plain); final logit soft-capping.
    FamilyTraits(name="nanochat", title="nanochat", summary="NanoChatConfig: weightless norms, plain relu^2 MLP",
                 norms=(), gated=False, activation=("hidden_act", "relu2"), switches=(ATTENTION,)),
    # nemotron: LayerNorm1P (scale and bias) norms; up_proj relu2 down_proj (plain); partial rotary.
    FamilyTraits(name="nemotron", title="Nemotron", summary="NemotronConfig: LayerNorms with bias, plain relu^2 MLP",
                 norms=DECODER_LAYERNORMS.flags, gated=False, activation=("hidden_act", "relu2"), switches=LLAMA_BIASES),
    # olmoe: every layer routes to num_experts experts of intermediate_size (modeling_olmoe.py);
    # QK-norm over all heads, as OLMo 2; the router has no bias.
    FamilyTraits(name="olmoe", title="OLMoE", summary="OlmoeConfig: MoE in every layer, QK-norm over all heads",
                 flags=FULL_WIDTH_QK_NORM.flags, switches=(ATTENTION,), aliases={"num_local_experts": "num_experts"},
                 experts=Experts(experts="num_experts", width="intermediate_size")),
    # granitemoe: Granite with every layer MoE of intermediate_size (block_sparse_moe).
    FamilyTraits(name="granitemoe", title="Granite MoE", summary="GraniteMoeConfig: Granite, MoE in every layer",
                 switches=(ATTENTION,), experts=Experts(experts="num_local_experts", width="intermediate_size")),
    # granitemoeshared: plus a gated shared MLP of shared_intermediate_size (0: none).
    FamilyTraits(name="granitemoeshared", title="Granite MoE Shared", summary="GraniteMoeSharedConfig: Granite MoE with a shared expert",
                 switches=(ATTENTION,),
                 experts=Experts(experts="num_local_experts", width="intermediate_size", shared_width="shared_intermediate_size")),
    # flex_olmo: OLMo 2's attention and norms; every layer routes to num_experts experts of
    # intermediate_size (gate_up_proj fused).
    _olmo2("flex_olmo", "FlexOlmo", "FlexOlmoConfig: OLMo 2 with MoE in every layer", aliases={"num_local_experts": "num_experts"},
           experts=Experts(experts="num_experts", width="intermediate_size")),
    # phimoe: nn.LayerNorm (scale and bias) norms; every layer routes to num_local_experts experts of
    # intermediate_size; lm_head_bias biases the logits; sliding_window on every layer when set.
    FamilyTraits(name="phimoe", title="Phi-3.5-MoE", summary="PhimoeConfig: LayerNorms, MoE in every layer",
                 norms=DECODER_LAYERNORMS.flags, switches=(ATTENTION, Switch("lm_head_bias", False, HEAD_BIAS.flags)),
                 attention=window_everywhere, experts=Experts(experts="num_local_experts", width="intermediate_size")),
    # ernie4_5_moe: ERNIE 4.5's attention; MoE layers per moe_layer_start/end_index and interval,
    # with moe_num_shared_experts shared experts of moe_intermediate_size and a gate-score bias
    # (moe_statics.e_score_correction_bias, a parameter of E); use_bias would bias the dense and
    # shared MLPs and lm_head but not the experts: refused (no pattern holds the shared experts' biases).
    FamilyTraits(name="ernie4_5_moe", title="ERNIE 4.5 MoE", summary="Ernie4_5_MoeConfig: MoE between start and end layers, shared experts",
                 tied=True, flags=ROUTER_BIAS.flags - MOE.flags, aliases={"num_experts": "moe_num_experts", "num_experts_per_tok": "moe_k"},
                 refused=(("use_bias", False, "the shared experts' biases are in no pattern"),),
                 experts=Experts(experts="moe_num_experts", top_k="moe_k", shared_count="moe_num_shared_experts", layers=_ernie_moe_layers)),
    # solar_open: every layer MoE with n_shared_experts of moe_intermediate_size (the gate-score
    # bias a buffer); attention_bias biases q/k/v_proj only; head_dim 128.
    FamilyTraits(name="solar_open", title="Solar Open", summary="SolarOpenConfig: MoE in every layer with shared experts", head_dim=128,
                 switches=(Switch("attention_bias", False, QKV_BIAS.flags),), aliases={"num_local_experts": "n_routed_experts"},
                 experts=Experts(experts="n_routed_experts", shared_count="n_shared_experts")),
    # granitemoe_swa: Granite MoE Shared with Granite SWA's sinks and layer rule.
    FamilyTraits(name="granitemoe_swa", title="Granite MoE SWA", summary="GraniteMoeSWAConfig: sinks, 1 full layer to 3 sliding, MoE",
                 flags=ATTENTION_SINKS.flags, switches=(ATTENTION,), attention=layer_types_or(full_every(4, 0)),
                 experts=Experts(experts="num_local_experts", width="intermediate_size", shared_width="shared_intermediate_size")),
    # exaone_moe: EXAONE 4's attention (q_norm/k_norm of head_dim, 3 sliding layers to 1 full,
    # a null sliding_window makes the pattern 0: ZeroDivisionError) with pre-norms; mlp_layer_types
    # (default: dense below first_k_dense_replace, 1) picks a dense MLP or num_experts experts of
    # moe_intermediate_size plus one shared MLP of num_shared_experts of them; the router has no
    # bias (e_score_correction_bias is a buffer) (configuration_exaone_moe.py, modeling_exaone_moe.py).
    FamilyTraits(name="exaone_moe", title="EXAONE MoE", summary="ExaoneMoeConfig: EXAONE 4's attention, shared experts after dense layers",
                 flags=QK_NORM.flags, attention=layer_types_or(full_every(4, 1, key="sliding_window_pattern")),
                 experts=Experts(experts="num_experts", shared_count="num_shared_experts", layers=dense_first(1, listed="mlp_layer_types"))),
    # dots1: q_norm/k_norm of head_dim; layers below first_k_dense_replace (default 0) dense, the
    # others n_routed_experts experts of moe_intermediate_size plus one shared MLP of
    # n_shared_experts of them; the router has no bias (e_score_correction_bias is a buffer);
    # attention_bias biases q/k/v/o_proj (configuration_dots1.py, modeling_dots1.py).
    FamilyTraits(name="dots1", title="dots.llm1", summary="Dots1Config: QK-norm, shared experts after dense layers",
                 flags=QK_NORM.flags, switches=(ATTENTION,), aliases={"num_local_experts": "n_routed_experts"},
                 attention=layer_types_or(_dots1_attention),
                 experts=Experts(experts="n_routed_experts", shared_count="n_shared_experts", layers=dense_first(0))),
    # hunyuan_v1_moe: Hunyuan V1 Dense's attention (query_layernorm/key_layernorm of head_dim,
    # config.head_dim read as it is); every layer: a router (wg, no bias), num_experts experts of
    # intermediate_size and a shared MLP of intermediate_size (shared_mlp). A per-layer list of
    # num_experts or moe_topk is refused (expected an integer).
    FamilyTraits(name="hunyuan_v1_moe", title="Hunyuan V1 MoE", summary="HunYuanMoEV1Config: QK-norm, MoE with a shared MLP in every layer",
                 head_dim_required=True, flags=QK_NORM.flags, switches=(ATTENTION,),
                 aliases={"num_experts_per_tok": "moe_topk", "num_local_experts": "num_experts"},
                 experts=Experts(experts="num_experts", width="intermediate_size", top_k="moe_topk", shared_width="intermediate_size")),
    # mellum: every layer MoE of moe_intermediate_size; q_norm/k_norm of head_dim; head_dim 128.
    FamilyTraits(name="mellum", title="Mellum", summary="MellumConfig: MoE in every layer, QK-norm", head_dim=128,
                 flags=QK_NORM.flags, switches=(ATTENTION,), aliases={"num_local_experts": "num_experts"}, experts=Experts(experts="num_experts")),
    # aria_text (AriaTextForCausalLM, the text model of Aria): Llama's attention; every layer MoE:
    # moe_num_experts routed experts of intermediate_size (grouped gate_up/down, no bias; a
    # bias-free router, top-k of the logits then a softmax over them) and moe_num_shared_experts
    # shared experts as one gated MLP of their summed width; mlp_bias biases that shared MLP only:
    # refused (no pattern holds the shared experts' biases).
    FamilyTraits(name="aria_text", title="Aria", summary="AriaTextConfig: MoE in every layer with shared experts",
                 switches=(ATTENTION,), refused=(("mlp_bias", False, "the shared experts' biases are in no pattern"),),
                 experts=Experts(experts="moe_num_experts", width="intermediate_size", top_k="moe_topk", shared_count="moe_num_shared_experts")),
    # emu3_text_model (Emu3TextConfig, Emu3's text model): Llama; attention_bias and mlp_bias are
    # class attributes a config may set; head_dim = getattr(config, "head_dim", hidden / heads).
    FamilyTraits(name="emu3_text_model", title="Emu3", summary="Emu3TextConfig: Llama", switches=LLAMA_BIASES),
)
# Multimodal configs whose causal LM is their text_config's model: AutoModelForCausalLM builds
# Emu3ForCausalLM from an emu3 config's text_config alone (no VQ-VAE image tokenizer).
WRAPPERS = (
    HFReader(name="emu3", title="Emu3", text_config="emu3_text_model",
             summary="Emu3Config: its emu3_text_model text_config (Emu3ForCausalLM builds no VQ-VAE)"),
)


# apertus1p5_text: Apertus 1.5's language model (Apertus1p5TextForCausalLM, modeling_apertus1p5.py):
# Apertus's layers; lm_head has output_vocab_size outputs when set (a pruned head), read below.
APERTUS1P5_TEXT = FamilyTraits(name="apertus1p5_text", title="Apertus 1.5", summary="Apertus1p5TextConfig: Apertus's layers",
                               gated=False, activation=("hidden_act", "xielu"), flags=QK_NORM.flags, switches=(ATTENTION,))


def apertus1p5_text(c: Fields) -> Decoder:
    """Apertus1p5TextConfig: Apertus's decoder; an output_vocab_size below vocab_size (a head
    narrower than the embedding, which no pattern holds) is refused."""
    pruned = c.optional_int("output_vocab_size")
    if pruned is not None and pruned != c.int("vocab_size"):
        raise c.error("output_vocab_size", f" = {pruned}: a head narrower than the embedding is in no pattern; expected null or vocab_size")
    return APERTUS1P5_TEXT(c)


@hookimpl
def flopsreg_register_hf_readers():
    return [*(family.reader() for family in (*FAMILIES, *FAMILIES_2026)), *WRAPPERS,
            HFReader(name=APERTUS1P5_TEXT.name, title=APERTUS1P5_TEXT.title, summary=APERTUS1P5_TEXT.summary + ", a full-width head",
                     read=apertus1p5_text)]
