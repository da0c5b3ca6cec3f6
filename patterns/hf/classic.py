"""Hugging Face readers of the GPT-2 era families, each declared as a :class:`FamilyTraits` record
(patterns/hf/_traits.py), as the Llama-like families of llama_like.py are.

What they share: learned absolute positions (GPT-2, GPT-BigCode), LayerNorms with biases, a plain
(non-gated) GELU MLP of 4 x hidden by default, biased projections, parallel attention and MLP on one
LayerNorm (GPT-J, CodeGen: the same matmuls), multi-query attention (GPT-BigCode), fused q/k/v and
partial rotary, ALiBi (a bias added to the scores: no matmul, no weight; BLOOM) (no other
matmul); sinusoidal positions (XGLM, CTRL) are buffers, not weights. Their attention runs heads of
hidden / heads, and every record but GPT-BigCode's and StableLM's runs as many key/value heads as
query heads (``heads_only``): a config carrying ``num_key_value_heads`` or ``head_dim`` runs the
same model in transformers (``self.head_dim = self.embed_dim // self.num_heads`` in every modeling
file); GPT-BigCode (``multi_query``) and StableLM (``num_key_value_heads``) read their key/value
heads but no ``head_dim`` (``heads_of_hidden``). Every record cites the transformers 5.24 modeling file its traits
come from; tests/hf/test_classic_forward.py and test_r5classic_forward.py check every record against a
recorded forward pass.
"""

from flopsreg.patterns.biases import ATTENTION_BIAS, HEAD_BIAS, MLP_BIAS, QKV_BIAS
from flopsreg.patterns.hf._traits import FamilyTraits, Positions, Switch, Width
from flopsreg.patterns.norms import (
    DECODER_LAYERNORMS,
    EMBEDDING_LAYERNORM,
    FULL_WIDTH_QK_NORM,
    NO_FINAL_NORM,
    QK_LAYERNORM,
    SINGLE_LAYERNORM,
)
from flopsreg.plugin import hookimpl

# GPT2Config, GPTJConfig, CodeGenConfig, GPTBigCodeConfig: attribute_map (read the other way round).
GPT2_NAMES = {"n_embd": "hidden_size", "n_head": "num_attention_heads", "n_layer": "num_hidden_layers", "n_positions": "max_position_embeddings"}
# GPT2Block, GPTBigCodeBlock: add_cross_attention adds a cross-attention and its LayerNorm to every block.
NO_CROSS_ATTENTION = (("add_cross_attention", False, "cross-attention blocks (an encoder's states) are in no decoder pattern"),)


def _gpt2(name: str, title: str, summary: str) -> FamilyTraits:
    # modeling_gpt2.py: wte and wpe (n_positions x n_embd, learned); ln_1, ln_2 and ln_f are
    # nn.LayerNorm (scale, bias); c_attn (fused q/k/v) and c_proj are Conv1D with biases; the MLP
    # c_fc activation_function c_proj (plain, biased) of n_inner, 4 x n_embd when null; lm_head tied.
    return FamilyTraits(
        name=name, title=title, summary=summary, aliases=GPT2_NAMES, tied=True, gated=False,
        activation=("activation_function", "gelu_new"), norms=DECODER_LAYERNORMS.flags, flags=ATTENTION_BIAS.flags | MLP_BIAS.flags,
        width=Width("n_inner", 4), positions=Positions(), refused=NO_CROSS_ATTENTION, heads_only=True,
    )


def _gptj(name: str, title: str, summary: str) -> FamilyTraits:
    # modeling_gptj.py, modeling_codegen.py: one LayerNorm (ln_1, scale and bias) before attention
    # and the MLP in parallel; q/k/v (fused in CodeGen) and out_proj without bias; fc_in
    # activation_function fc_out biased, of n_inner (4 x n_embd when null); lm_head has a bias;
    # rotary on rotary_dim of each head (no matmul).
    return FamilyTraits(
        name=name, title=title, summary=summary, aliases=GPT2_NAMES, gated=False, activation=("activation_function", "gelu_new"),
        norms=SINGLE_LAYERNORM.flags, flags=MLP_BIAS.flags | HEAD_BIAS.flags, width=Width("n_inner", 4), heads_only=True,
    )


CLASSIC: tuple[FamilyTraits, ...] = (
    _gpt2("gpt2", "GPT-2", "GPT2Config: learned positions, LayerNorms, biased fused q/k/v and GELU MLP, tied head"),
    # gpt-sw3: GPT2LMHeadModel built from a GPT2Config (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES).
    _gpt2("gpt-sw3", "GPT-SW3", "GPT2Config under model_type gpt-sw3: GPT-2"),
    _gptj("gptj", "GPT-J", "GPTJConfig: parallel attention and GELU MLP on one LayerNorm, partial rotary, biased head"),
    _gptj("codegen", "CodeGen", "CodeGenConfig: GPT-J with a fused q/k/v projection"),
    # gpt_neox: modeling_gpt_neox.py: input_layernorm and post_attention_layernorm (nn.LayerNorm)
    # in every layer, parallel or not (use_parallel_residual: no matmul); query_key_value and dense
    # biased iff attention_bias (default true); dense_h_to_4h hidden_act dense_4h_to_h biased;
    # partial rotary (rotary_pct); embed_out untied by default.
    FamilyTraits(name="gpt_neox", title="GPT-NeoX", summary="GPTNeoXConfig: LayerNorms, biased fused q/k/v and GELU MLP, partial rotary",
                 gated=False, activation=("hidden_act", "gelu"), norms=DECODER_LAYERNORMS.flags, flags=MLP_BIAS.flags,
                 switches=(Switch("attention_bias", True, ATTENTION_BIAS.flags),), heads_only=True),
    # gpt_bigcode: modeling_gpt_bigcode.py: GPT-2's blocks (learned positions, LayerNorms, biased
    # c_attn/c_proj/c_fc) with one key/value head when multi_query (default true), else n_head.
    FamilyTraits(name="gpt_bigcode", title="GPT-BigCode", summary="GPTBigCodeConfig: GPT-2 with multi-query attention",
                 aliases=GPT2_NAMES, tied=True, gated=False, activation=("activation_function", "gelu_pytorch_tanh"),
                 norms=DECODER_LAYERNORMS.flags, flags=ATTENTION_BIAS.flags | MLP_BIAS.flags, width=Width("n_inner", 4),
                 positions=Positions(), multi_query=("multi_query", True), refused=NO_CROSS_ATTENTION, heads_of_hidden=True),
    # stablelm: modeling_stablelm.py: nn.LayerNorm input_layernorm, and post_attention_layernorm
    # only when not use_parallel_residual (then one LayerNorm before both); q/k/v_proj biased iff
    # use_qkv_bias, o_proj never; qk_layernorm: one LayerNorm (no bias) of head_dim per query head
    # and per key head (StableLmLayerNormPerHead: (n_h + n_kv) d weights); gated SiLU MLP; partial rotary.
    FamilyTraits(name="stablelm", title="StableLM", summary="StableLmConfig: LayerNorms, optional parallel block, per-head QK LayerNorms",
                 norms=DECODER_LAYERNORMS.flags, heads_of_hidden=True,
                 switches=(Switch("use_qkv_bias", False, QKV_BIAS.flags), Switch("qk_layernorm", False, FULL_WIDTH_QK_NORM.flags),
                           Switch("use_parallel_residual", False, SINGLE_LAYERNORM.flags))),
    # persimmon: modeling_persimmon.py: nn.LayerNorm input/post_attention/final norms;
    # query_key_value and dense biased; dense_h_to_4h relu2 dense_4h_to_h biased (plain);
    # qk_layernorm (default true): q/k LayerNorms of head_dim with bias, shared by the heads;
    # query_key_value is hidden -> 3 x hidden, heads of hidden / heads (PersimmonConfig has no
    # num_key_value_heads or head_dim: a config carrying them runs multi-head all the same).
    FamilyTraits(name="persimmon", title="Persimmon", summary="PersimmonConfig: LayerNorms, biases, plain relu^2 MLP, QK LayerNorms",
                 gated=False, activation=("hidden_act", "relu2"), norms=DECODER_LAYERNORMS.flags, flags=ATTENTION_BIAS.flags | MLP_BIAS.flags,
                 heads_only=True,
                 switches=(Switch("qk_layernorm", True, QK_LAYERNORM.flags),)),
    # biogpt: modeling_biogpt.py: BioGptLearnedPositionalEmbedding holds max_position_embeddings + 2
    # rows (offset 2); q/k/v/out_proj and fc1/fc2 biased; nn.LayerNorm norms and final layer_norm;
    # output_projection tied; scale_embedding multiplies by sqrt(h) (no matmul).
    FamilyTraits(name="biogpt", title="BioGPT", summary="BioGptConfig: learned positions (+2 rows), LayerNorms, biases, plain GELU MLP",
                 tied=True, gated=False, activation=("hidden_act", "gelu"), norms=DECODER_LAYERNORMS.flags,
                 flags=ATTENTION_BIAS.flags | MLP_BIAS.flags, positions=Positions(offset=2), heads_only=True),
    # xglm: modeling_xglm.py: sinusoidal positions (a buffer); q/k/v/out_proj and fc1/fc2 (ffn_dim)
    # biased; nn.LayerNorm norms and final layer_norm; lm_head tied; add_cross_attention adds encoder_attn.
    FamilyTraits(name="xglm", title="XGLM", summary="XGLMConfig: sinusoidal positions, LayerNorms, biases, plain GELU MLP of ffn_dim",
                 aliases={"attention_heads": "num_attention_heads", "d_model": "hidden_size", "num_layers": "num_hidden_layers"},
                 tied=True, gated=False, activation=("activation_function", "gelu"), norms=DECODER_LAYERNORMS.flags,
                 flags=ATTENTION_BIAS.flags | MLP_BIAS.flags, width=Width("ffn_dim"), refused=NO_CROSS_ATTENTION, heads_only=True),
    # ctrl: modeling_ctrl.py: sinusoidal positions (a buffer); Wq/Wk/Wv/dense biased; the FFN
    # Linear(h, dff) ReLU Linear(dff, h) biased; layernorm1/2 and the final layernorm; lm_head tied,
    # with a bias of vocab_size.
    FamilyTraits(name="ctrl", title="CTRL", summary="CTRLConfig: sinusoidal positions, LayerNorms, biases, plain ReLU MLP of dff, biased head",
                 aliases=GPT2_NAMES, tied=True, gated=False, norms=DECODER_LAYERNORMS.flags,
                 flags=ATTENTION_BIAS.flags | MLP_BIAS.flags | HEAD_BIAS.flags, width=Width("dff"), heads_only=True),
    # openai-gpt: modeling_openai.py: tokens_embed and positions_embed (n_positions, learned);
    # post-norm Blocks (ln_1 after attention, ln_2 after the MLP, nn.LayerNorm) and no final norm;
    # c_attn (fused q/k/v) and c_proj Conv1D with biases; MLP c_fc afn c_proj of 4 x n_embd
    # always (no width key), biased; lm_head tied.
    FamilyTraits(name="openai-gpt", title="OpenAI GPT", summary="OpenAIGPTConfig: post-norm LayerNorm blocks, no final norm, learned positions, tied head",
                 aliases=GPT2_NAMES, tied=True, gated=False, activation=("afn", "gelu"), norms=DECODER_LAYERNORMS.flags | NO_FINAL_NORM.flags,
                 flags=ATTENTION_BIAS.flags | MLP_BIAS.flags, width=Width(None, 4), positions=Positions(), heads_only=True),
    # bloom: modeling_bloom.py: word_embeddings then word_embeddings_layernorm (LayerNorm);
    # input_layernorm and post_attention_layernorm, ln_f (LayerNorm); query_key_value and dense
    # biased; dense_h_to_4h GELU dense_4h_to_h biased, 4 x hidden always; ALiBi (alibi.baddbmm adds
    # the bias to Q K^T: the same matmul, no weight); pretraining_tp slices with slow_but_exact
    # split the same matmuls; lm_head tied.
    FamilyTraits(name="bloom", title="BLOOM", summary="BloomConfig: LayerNorm on the embedding, LayerNorms, biases, plain GELU MLP of 4 x hidden, ALiBi",
                 aliases={"n_layer": "num_hidden_layers", "n_head": "num_attention_heads", "n_embed": "hidden_size"}, tied=True, gated=False,
                 activation=("hidden_act", "gelu"), norms=DECODER_LAYERNORMS.flags, flags=ATTENTION_BIAS.flags | MLP_BIAS.flags | EMBEDDING_LAYERNORM.flags,
                 width=Width(None, 4), heads_only=True),
)


@hookimpl
def flopsreg_register_hf_readers():
    return [family.reader() for family in CLASSIC]
