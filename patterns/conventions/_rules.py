"""Rules that several conventions share: written once, named per convention.

Not a plugin itself (the leading underscore keeps it out of the built-in plugin list); the
convention modules call these factories with their own flag and source.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from flopsreg.patterns.moe import EXPERT_HIDDEN, EXPERTS, MOE, TOP_K
from flopsreg.patterns.quantities import f
from flopsreg.plugin import Pattern, h, s

PRECEDENCE = 100  # above every exact pattern of the same slot


# Every exact pattern of the built-ins at this commit, by slot: the terms the built-in conventions
# were written and tested against (their numbers are pinned on every bundled example). A convention
# declares them, less what it has no term for, as Convention.counts: a pattern outside its set (a
# plugin's new attention core, a built-in added later) is refused by name under it until someone
# decides how that framework counts it. tests/conventions/test_terms.py keeps this list honest.
BUILTIN_TERMS = frozenset({
    # residual_mixer
    'altup', 'mhc', 'ihc',
    # residual_mixer.head
    'altup_head', 'mhc_head', 'mhc_mean_head',
    # attention.core
    'attention_core', 'mla_absorbed_core',
    # attention.gate
    'attention_output_gate', 'attention_output_gate_head_bias',
    # attention.sinks
    'attention_sinks',
    # attention.bias
    'qkv_bias', 'output_bias', 'attention_bias',
    # mlp.bias
    'mlp_bias', 'expert_bias', 'moe_output_bias',
    # residual_scales (a weight only)
    'residual_scales',
    # mlp.router_bias
    'router_bias',
    # attention.mask
    'chunked', 'dsa_kpool_topk', 'dsa_kpool_topk_tail', 'dsa_topk', 'full_causal', 'sliding_window', 'csa_mask', 'hca_mask',
    # mlp
    'dense_mlp', 'latent_experts', 'moe',
    # attention.topk_indexer
    'dsa_indexer', 'dsa_indexer_from_hidden', 'dsa_kpool_indexer', 'csa_indexer',
    # embedding
    'input_embedding', 'prompt_embeddings',
    # head
    'tied_logits', 'logits',
    # head.bias (a weight only)
    'head_bias',
    # head.scale (a weight only)
    'logit_scale',
    # mlp.activation
    'plain_ffn', 'gated_ffn',
    # mlp.learned_activation (a weight only)
    'xielu',
    # mlp.scale (a weight only)
    'mlp_global_scale',
    # mixer.projection
    'gated_deltanet_projection', 'gated_deltanet2_projection', 'gated_delta_product_projection', 'kda_projection', 'kda_full_rank_projection',
    'lightning_projection',
    'mamba1_projection', 'mamba1_projection_without_norm_weights', 'mamba2_projection', 'short_conv_projection',
    # mixer.conv
    'gated_deltanet_conv', 'gated_deltanet_padded_conv', 'gated_delta_product_conv', 'gated_delta_product_padded_conv', 'kda_conv', 'kda_padded_conv', 'mamba1_conv', 'mamba1_padded_conv', 'mamba2_conv', 'mamba2_padded_conv', 'short_conv_conv', 'short_conv_padded_conv',
    # mixer.core
    'gated_deltanet_core', 'gated_deltanet2_core', 'gated_delta_product_core', 'kda_core', 'lightning_core', 'mamba1_core', 'mamba2_core',
    # mixer.output
    'gated_deltanet_output', 'gated_delta_product_output', 'kda_output', 'lightning_output', 'mamba1_output', 'mamba2_output', 'mamba2_output_without_norm', 'short_conv_output',
    # attention.qk_norm
    'reused_kv_q_norm', 'qk_norm', 'qk_layernorm', 'full_width_qk_norm', 'k_rope_norm',
    # attention.projection
    'gqa_projection', 'k_eq_v_projection', 'kv_reuse_projection', 'mla_absorbed_projection', 'mla_latent_reuse_projection', 'mla_projection', 'shared_kv_projection',
    # attention.output
    'grouped_output', 'output_projection',
    # mlp.latent
    'latent_projection',
    # residual_branch
    'laurel',
    # mtp
    'layered_mtp', 'mtp',
    # attention.query
    'low_rank_query', 'query_projection',
    # norms
    'decoder_norms', 'decoder_layernorms', 'moe_output_norms', 'sandwich_norms', 'sandwich_layernorms', 'sandwich_parallel_norms', 'single_norm', 'single_layernorm', 'sub_norms',
    'concat_input_norms', 'ngpt_scales',
    # final_norm
    'final_norm', 'final_layernorm', 'no_final_norm', 'reversible_final_layernorm',
    # embedding_norm (a weight only)
    'embedding_norm', 'embedding_layernorm',
    # head.transform_bias (a weight only)
    'head_transform_bias',
    # mlp.parallel_experts
    'parallel_experts',
    # per_layer_input
    'per_layer_input',
    # initial_state (a weight only)
    'initial_state',
    # per_layer_embedding
    'per_layer_embedding',
    # position_embedding
    'learned_positions', 'segment_position_bias', 'axial_positions',
    # mlp.shared_gate
    'shared_expert_gate',
    # mlp.shared
    'shared_experts',
    # attention.softmax_scaling
    'softmax_scaling',
    # rope_scaling
    'rope_alpha',
    # attention.index_mask
    'csa_index_mask',
    # attention.compressor
    'csa_compressor', 'hca_compressor',
})

# Built-in exact patterns that no framework's convention has a term for: each is refused by name
# under every built-in convention (Convention.counts leaves it out), like a plugin's new pattern.
NO_FRAMEWORK_TERM = frozenset({
    'differential_attention_core',  # DiffLlama's two attention maps: no framework counts them
    'rwkv4_projection', 'rwkv4_wkv', 'rwkv4_output', 'rwkv4_channel_mix', 'rwkv4_first_layernorms',  # RWKV-4 blocks
    'attention_head_gate',  # Laguna's and LFM3's one-scalar-per-head output gate: no framework has it
    'kv_sconv_conv', 'kv_sconv_padded_conv', 'sublayer_sconv_conv', 'sublayer_sconv_padded_conv',  # Inkling's convs beside attention
    'relative_logits', 'shared_expert_sink',  # Inkling's hidden-state relative bias and its router's shared-expert rows
    'concat_input_query', 'concat_input_projection', 'shared_block_output',  # Zamba's shared block on [residual, embedding]
    'head_transform', 'head_transform_layernorm',  # ModernBERT-decoder's dense + norm before the logits: no framework counts it
    'shared_block_mlp_adapter', 'shared_block_qkv_adapters',  # Zamba2's per-use low-rank adapters in its shared blocks
    'rglru_projection', 'rglru_conv', 'rglru_padded_conv', 'rglru_core', 'rglru_output',  # Griffin's recurrent block (RecurrentGemma)
    'mlstm_projection', 'mlstm_core', 'mlstm_output',  # xLSTM's mLSTM layer
    'gqa_value_head_dim_projection',  # MiMo-V2-Flash's value heads narrower than its keys: no framework's GQA term has a value width
    'dynamic_mask', 'dynamic_mask_in_window', 'dynamic_mask_scores', 'dynamic_mask_scores_biased',  # Doge's dynamic mask attention
    'product_key_experts',  # Doge's single-neuron experts by product keys
    'moa_query', 'moa_output',  # JetMoE's mixture of attention heads: no framework counts its routed query/output experts
    'latent_gate_query', 'latent_output_gate',  # A.X K2's q_gate_proj over [norm(latent), latent]: no framework has it
    'input_norm_gate', 'both_norm_gates',  # A.X K2's gated RMSNorms (low-rank gate MLPs): no framework counts them
    'block_topk', 'block_indexer',  # MiniMax-M3's block-sparse attention and its indexer: no framework counts them
    'prompt_prefix', 'full_bidirectional',  # CPM-Ant's layers over a prepended prompt, every pair attended: no framework counts them
    'local_chunks', 'reversible_logits',  # Reformer's look-back chunks and its head over two streams
    'qsa_indexer', 'lowrank_hc', 'lowrank_hc_head', 'ngram_ple',  # Qwen4-Exp's QSA indexer, low-rank gated residuals and n-gram PLE
})


def half_square_causal(convention: str, source: str) -> Pattern:
    """s^2/2 pairs on every layer, as "causal" counts usually write it; windows ignored."""
    return Pattern(
        name=f"{convention}_causal",
        slot="attention.mask",
        flags={convention},
        precedence=PRECEDENCE,
        produces="pairs",
        formula=s**2 / 2,
        summary="s^2/2 pairs on every layer: sliding windows and chunks are counted as full causal",
        reference=source,
    )


def routerless_moe(convention: str, source: str) -> Pattern:
    """Top-k routed experts without the router matmul."""
    return Pattern(
        name=f"{convention}_moe",
        slot="mlp",
        flags={convention, "moe"},
        precedence=PRECEDENCE,
        params=(EXPERTS, TOP_K, EXPERT_HIDDEN),
        constraints=MOE.constraints,  # top_k <= experts, as for the exact rule
        formula=2 * s * TOP_K.symbol * h * EXPERT_HIDDEN.symbol * f,
        summary="top-k routed experts; the router matmul hidden -> experts is not counted",
        reference=source,
        # What the rule counts: the experts, not the router (which the model still holds).
        weights=EXPERTS.symbol * f * h * EXPERT_HIDDEN.symbol,
        active_weights=TOP_K.symbol * f * h * EXPERT_HIDDEN.symbol,
    )


def not_counted(
    convention: str, name: str, slot: str, flags: Iterable[str], what: str, source: str, scope: str = "layer"
) -> Pattern:
    """A slot the convention leaves out: zero FLOPs where *flags* are set."""
    return Pattern(
        name=f"{convention}_{name}",
        slot=slot,
        flags={convention, *flags},
        precedence=PRECEDENCE,
        scope=scope,
        formula=0,
        summary=f"{what} is not counted",
        reference=source,
    )


# The mixer layers of the 2026 architectures (Gated DeltaNet, KDA, Mamba, short convolutions, lightning attention,
# Gated Delta Product).
# A convention whose framework counts every layer as softmax attention refuses them, naming it.
MIXER_FLAGS = ("gated_deltanet", "kda", "mamba1", "mamba2", "short_conv", "lightning", "gated_delta_product")
MIXER_REFUSAL_PRECEDENCE = 10_000  # above every mixer pattern of the mixer.projection slot


def refuses_layers(
    convention: str,
    flags: Iterable[str] | Mapping[str, str],
    why: str,
    source: str,
    *,
    what: str = "{}",
    precedence: int = MIXER_REFUSAL_PRECEDENCE,
    slot: str = "mixer.projection",
    scope: str = "layer",
    also: Iterable[str] = (),
    name: str = "{convention}_{flag}_layers",
    summary: str = "{convention}: {flag} layers are not counted",
    message: str = "{why}; this layer has {what}, which it never counts: a refusal, not a guess",
) -> list[Pattern]:
    """One refusal per flag: a layer with it (*what*, e.g. ``"a {} mixer"``) cannot be counted
    *convention*'s way (*why*); precedences from *precedence* up, distinct, so a layer with two is refused once.
    They fill *slot*, which such a layer must have (a mixer's layers have the mixer slots), at *scope*,
    where the unit also has the flags *also*. *flags* may map each flag to the label its texts give it
    (a family flag to its model_type); *name*, *summary* and *message* are formatted with ``convention``,
    ``flag`` (the label), ``what`` (*what* with the label) and ``why`` (*why* with ``{flag}``, the label)."""
    labels = flags if isinstance(flags, Mapping) else {flag: flag for flag in flags}
    patterns = []
    for i, (flag, label) in enumerate(labels.items()):
        fields = {"convention": convention, "flag": label, "what": what.format(label), "why": why.format(flag=label)}
        patterns.append(
            Pattern(
                name=name.format(**fields),
                slot=slot,
                scope=scope,
                flags={convention, flag, *also},
                precedence=precedence + i,
                formula=0,
                summary=summary.format(**fields),
                reference=source,
                refusal=message.format(**fields),
            )
        )
    return patterns


def refuses_mixers(convention: str, why: str, source: str) -> list[Pattern]:
    """:func:`refuses_layers` for the linear-attention and SSM mixers."""
    return refuses_layers(convention, MIXER_FLAGS, why, source, what="a {} mixer")
