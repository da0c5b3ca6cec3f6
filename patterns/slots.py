"""The slots of the built-in patterns, declared like any plugin's: the places in a decoder
layer (and in the model) that exactly one pattern fills, and which ones selective activation
recomputation repeats. Some hold weights and do no matmul (norms, biases, sinks, the embedding):
``Registry.parameters`` counts them, FLOPs never see them.

Every built-in slot is declared here, in the order a forward pass runs them (the embedding, then
a layer's residual mixing and norms, its token mixer -- attention, or a linear-attention / SSM
mixer --, its MLP, then the final norm and the head): the order of ``Registry.slots``, which every
output that lists slots follows (explain, LaTeX, formula text, JSON, plots). A third-party
plugin's slots come after these, in load order.

So are the slot groups, the token mixers a layer may have: the attention slots form the group
``attention``, a layer's token mixer unless its flags select another (:mod:`flopsreg.patterns.token_mixers`
declares which flags select which); the ``mixer.*`` slots form ``mixer``; ``no_mixer`` has none."""

from flopsreg.plugin import Slot, SlotGroup, hookimpl

ATTENTION = SlotGroup(
    name="attention",
    summary="softmax attention: a layer's token mixer unless its flags select another (every attention.* slot)",
    default=True,
    keeps_context=True,
)
MIXER = SlotGroup(
    name="mixer",
    summary="a linear-attention or state-space mixer (Gated DeltaNet, KDA, Mamba, short convolutions, lightning attention, RWKV time mix)",
    beside={ATTENTION.name},
    keeps_context=True,
)
NO_MIXER = SlotGroup(name="no_mixer", summary="no token mixer: a feed-forward-only layer (its MLP or MoE alone)")

SLOTS = [
    Slot(name="embedding", scope="model", summary="the input token embedding (weights only, a gather)"),
    Slot(name="position_embedding", scope="model", summary="a learned position embedding (weights only, a gather)"),
    Slot(name="embedding_norm", scope="model", summary="a norm on the embedding before the first layer (weights only, no matmul)"),
    Slot(name="rope_scaling", scope="model", summary="learned exponents of the RoPE frequencies (weights only)"),
    Slot(name="initial_state", scope="model", summary="a learned initial state of a recurrent stack (weights only)"),
    Slot(name="per_layer_embedding", scope="model", summary="the projection giving every layer its per-layer input"),
    Slot(name="residual_mixer.head", scope="model", summary="making the widened streams from the embedding and collapsing them to one after the last layer"),
    Slot(name="layer_positions", scope="layer", summary="the positions a layer runs over when they are not the s input tokens: produces layer_positions"),
    Slot(name="residual_mixer", scope="layer", summary="hyper-connections or AltUp mixing widened residual streams around each sublayer"),
    Slot(name="shared_block.adapters", scope="layer", summary="each use's own low-rank adapters on a shared block's projections (Zamba2)"),
    Slot(name="shared_block.output", scope="layer", summary="each use's own projection of a shared block's output into the layer's input (Zamba's linear)"),
    Slot(name="norms", scope="layer", summary="the norms of a decoder layer (weights only, no matmul)"),
    Slot(name="norms.gate", scope="layer", summary="the low-rank gate MLPs of gated norms (A.X K2): hidden -> rank -> hidden on the normed input"),
    Slot(name="residual_scales", scope="layer", summary="learned per-channel scales of the residual stream (weights only)"),
    Slot(name="attention.mask", scope="layer", summary="which (query, key) pairs attend: produces pairs"),
    Slot(name="attention.query", scope="layer", summary="the query projection"),
    Slot(name="attention.projection", scope="layer", summary="the key and value projections: produces the head widths"),
    Slot(name="attention.kv_conv", scope="layer", summary="short causal depthwise convs over the projected keys and values (Inkling)"),
    Slot(
        name="attention.position_bias",
        scope="layer",
        summary="a relative position bias computed from the hidden states: its projection and its profiles per distance (Inkling)",
    ),
    Slot(name="attention.qk_norm", scope="layer", summary="per-head norms of queries and keys (weights only)"),
    Slot(name="attention.bias", scope="layer", summary="biases of the attention projections (weights only)"),
    Slot(
        name="attention.compressor",
        scope="layer",
        summary="projections pooling raw keys into compressed key/value entries (DeepSeek-V4 CSA, HCA)",
    ),
    Slot(
        name="attention.topk_indexer",
        scope="layer",
        summary="a key selector beside the attention (DSA lightning indexer): its projections and scores",
    ),
    Slot(
        name="attention.index_mask",
        scope="layer",
        summary="which (query, compressed entry) pairs an indexer scores (DeepSeek-V4 CSA): produces compressed_index_pairs",
    ),
    Slot(name="attention.softmax_scaling", scope="layer", summary="a learned scale and bias per head on the attention logits (weights only)"),
    Slot(
        name="attention.core",
        scope="layer",
        summary="QK^T and PV over the attended pairs",
        # Korthikanti et al. 2022, 'Reducing Activation Recomputation in Large Transformer Models'.
        selective_recompute=True,
    ),
    Slot(name="attention.sinks", scope="layer", summary="learned per-head sink logits (weights only)"),
    Slot(name="attention.gate", scope="layer", summary="an output gate on the attention"),
    Slot(name="attention.output", scope="layer", summary="the output projection"),
    Slot(name="mixer.projection", scope="layer", summary="a linear-attention / SSM mixer's input projections and gates"),
    Slot(name="mixer.conv", scope="layer", summary="the mixer's short causal depthwise convolution"),
    Slot(name="mixer.core", scope="layer", summary="the mixer's recurrence: its recurrent minimum, or a chunked scan"),
    Slot(name="mixer.output", scope="layer", summary="the mixer's output projection"),
    Slot(name="residual_branch", scope="layer", summary="a learned low-rank branch beside the attention (Gemma 3n LAuReL)"),
    Slot(name="mlp.latent", scope="layer", summary="latent MoE: hidden -> latent before the routed experts, latent -> hidden after"),
    Slot(name="mlp.router_bias", scope="layer", summary="a bias on the router's logits (weights only)"),
    Slot(name="mlp", scope="layer", summary="the feed-forward network: dense or mixture of experts"),
    Slot(name="mlp.activation", scope="layer", summary="how many hidden-width matmuls an FFN has: produces ffn_matrices"),
    Slot(name="mlp.learned_activation", scope="layer", summary="learned scalars of the MLP's activation (weights only; xIELU)"),
    Slot(name="mlp.bias", scope="layer", summary="biases of the MLP or of every routed expert (weights only)"),
    Slot(name="mlp.shared", scope="layer", summary="shared experts beside the routed ones"),
    Slot(name="mlp.shared_gate", scope="layer", summary="a gate on the shared experts"),
    Slot(name="mlp.scale", scope="layer", summary="a learned scalar on the MLP's output or on its router's weights (weights only)"),
    Slot(name="mlp.parallel_experts", scope="layer", summary="experts beside the dense MLP, their outputs added (Gemma 4)"),
    Slot(name="per_layer_input", scope="layer", summary="a layer's per-layer input projected into the residual stream"),
    Slot(name="sublayer_conv", scope="layer", summary="short causal depthwise convs on the attention's and the MLP's outputs, before each residual add (Inkling)"),
    Slot(name="final_norm", scope="model", summary="the norm after the last decoder layer (weights only)"),
    Slot(name="head.transform", scope="model", summary="a hidden -> hidden dense layer, activation and norm before the logits", per_position=True),
    Slot(name="head.transform_bias", scope="model", summary="the bias of that dense layer (weights only)", per_position=True),
    Slot(name="head", scope="model", summary="the logits head", per_position=True),
    Slot(name="head.bias", scope="model", summary="a bias on the logits (weights only), part of the head", per_position=True),
    Slot(name="head.scale", scope="model", summary="a learned scale on the logits (weights only), part of the head", per_position=True),
    Slot(name="mtp", scope="model", summary="multi-token-prediction modules"),
]


@hookimpl
def flopsreg_register_slot_groups():
    return [ATTENTION, MIXER, NO_MIXER]


@hookimpl
def flopsreg_register_slots():
    return SLOTS
