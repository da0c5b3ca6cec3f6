"""Hugging Face readers of mixture-of-experts families that differ from Llama in traits only,
declared as :class:`FamilyTraits` records (patterns/hf/_traits.py) as the families of
patterns/hf/llama_like.py are: Cohere 2 MoE and AFMoE.

Every record cites the transformers 5.24 files its traits come from; tests/hf/test_r5moe_forward.py
checks each against a recorded forward pass and transformers' parameter counts.
"""

from flopsreg.patterns.attention_output_gate import ATTENTION_OUTPUT_GATE
from flopsreg.patterns.biases import ROUTER_BIAS
from flopsreg.patterns.hf._traits import Experts, FamilyTraits, Width, dense_first, full_every, layer_types_or
from flopsreg.patterns.hf.layer_types import FULL, SLIDING
from flopsreg.patterns.hf.llama_like import ATTENTION
from flopsreg.patterns.moe import MOE
from flopsreg.patterns.norms import QK_NORM, SANDWICH_NORMS, SINGLE_NORM
from flopsreg.plugin import Fields, Layers, hookimpl


def _cohere2_moe_attention(c: Fields, layers: int) -> Layers[str]:
    """Cohere2MoeConfig.__post_init__ without layer_types: the first ``first_k_dense_replace`` layers
    (a kwarg it pops, default 0) slide iff (i + 1) % prefix_dense_sliding_window_pattern != 0 (1),
    the others iff (j + 1) % sliding_window_pattern != 0 (4), j counted from the first of them."""
    given = c.layer_types(layers, (SLIDING, FULL))
    if given is not None:
        return Layers.of(given)
    if not c.given("sliding_window"):
        raise c.error("sliding_window", f" = null and no layer_types: model_type {c.model_type}'s class marks layers sliding by a pattern "
                      "with no window to slide; give layer_types")
    first = min(c.int_or_default("first_k_dense_replace", 0, minimum=0), layers)
    prefix = c.int_or_default("prefix_dense_sliding_window_pattern", 1)
    every = c.int_or_default("sliding_window_pattern", 4)

    def entry(i: int) -> str:
        position, period = (i, prefix) if i < first else (i - first, every)
        return SLIDING if (position + 1) % period else FULL

    return Layers.rule(layers, entry, period=every, start=first)


FAMILIES_MOE: tuple[FamilyTraits, ...] = (
    # cohere2_moe: Cohere 2's parallel block (attention and MLP on one input_layernorm: an RMSNorm when
    # rms_norm_eps is set, else a LayerNorm without bias; h weights either way), tied head, logit_scale
    # (no matmul); attention_bias biases q/k/v/o_proj. mlp_layer_types (default: dense below the popped
    # first_k_dense_replace, 0) picks a dense MLP of prefix_dense_intermediate_size (null:
    # intermediate_size) or num_experts experts of intermediate_size (Mixtral's experts) routed by a
    # bias-free E x h weight (top-k, then softmax or sigmoid), plus num_shared_experts shared experts as
    # one MLP of intermediate_size x num_shared_experts, averaged or summed with the experts (no matmul)
    # (configuration_cohere2_moe.py, modeling_cohere2_moe.py).
    FamilyTraits(name="cohere2_moe", title="Cohere 2 MoE", summary="Cohere2MoeConfig: Cohere 2's parallel block, dense prefix then MoE with shared experts",
                 tied=True, norms=SINGLE_NORM.flags, switches=(ATTENTION,), attention=_cohere2_moe_attention,
                 width=Width("prefix_dense_intermediate_size", fallback="intermediate_size"),
                 experts=Experts(experts="num_experts", width="intermediate_size", shared_count="num_shared_experts",
                                 layers=dense_first(0, listed="mlp_layer_types"))),
    # afmoe: Llama's attention (attention_bias on q/k/v/o_proj) with q_norm/k_norm of head_dim and an
    # elementwise sigmoid gate gate_proj (h -> H d, no bias) on its output; four RMSNorms per layer
    # (pre and post each sublayer); RoPE on sliding layers only and mup_enabled's embedding scale (no
    # matmul); layer i full iff (i + 1) % global_attn_every_n_layers == 0 (4) unless layer_types says.
    # Layers below num_dense_layers (1) are dense MLPs of intermediate_size, the others a sigmoid router
    # (gate, E x h, no bias) with expert_bias (an nn.Parameter of E), num_experts experts of
    # moe_intermediate_size and shared experts as one MLP of moe_intermediate_size x num_shared_experts
    # (configuration_afmoe.py, modeling_afmoe.py).
    FamilyTraits(name="afmoe", title="AFMoE", summary="AfmoeConfig: gated attention, QK-norm, sandwich norms, MoE with shared experts after dense layers",
                 head_dim=128, norms=SANDWICH_NORMS.flags, flags=QK_NORM.flags | ATTENTION_OUTPUT_GATE.flags | (ROUTER_BIAS.flags - MOE.flags),
                 switches=(ATTENTION,), attention=layer_types_or(full_every(4, 1, key="global_attn_every_n_layers")),
                 experts=Experts(experts="num_experts", shared_count="num_shared_experts", layers=dense_first(1, key="num_dense_layers"))),
)


@hookimpl
def flopsreg_register_hf_readers():
    return [family.reader() for family in FAMILIES_MOE]
