"""Doge's cross-domain mixture of experts (DogeCDMoE): beside a dense gated MLP, each token goes
through k single-neuron experts picked from E by product keys.

The router projects hidden -> 2 x n_keys (n_keys = floor(sqrt(E))), takes the top n_keys of each
half and the top k of their n_keys^2 sums (adds and top-k: no matmul). Expert e is a row of
down_embed and a row of up_embed (E x h each, gathered): per token, k dot products of h, an
activation, and a k -> h weighted sum of the k up rows. Lample et al. 2019 (product keys), He 2024
(PEER); see docs/hf-configs.md, "Product-key experts"."""

from flopsreg.patterns.moe import EXPERTS, TOP_K, E, k
from flopsreg.plugin import Constraint, Param, Pattern, h, hookimpl, s

FLAG = "product_key_experts"
EXPERT_KEYS = Param(name="expert_keys", latex=r"n_{\mathrm{key}}", meaning="product keys per half of the router (floor(sqrt(num_experts)), DogeCDMoE.num_keys)")
n_key = EXPERT_KEYS.symbol

PRODUCT_KEY_EXPERTS = Pattern(
    name="product_key_experts",
    slot="mlp.parallel_experts",
    flags={FLAG},
    precedence=20,
    params=(EXPERTS, TOP_K, EXPERT_KEYS),
    # router hidden -> 2 n_key; k dot products with down_embed rows; k up_embed rows summed with weights
    formula=2 * s * h * 2 * n_key + 2 * s * k * h + 2 * s * k * h,
    constraints=(
        Constraint(condition=k <= n_key**2, message="top_k must not exceed expert_keys^2 (the product-key candidates)"),
        Constraint(condition=n_key**2 <= E, message="expert_keys^2 must not exceed experts"),
    ),
    summary="router hidden -> 2 n_key (product keys), then k single-neuron experts per token: h -> 1 -> h each, added to the dense MLP",
    reference="Lample et al. 2019, 'Large Memory Layers with Product Keys'; He 2024, 'Mixture of A Million Experts'; Hugging Face DogeCDMoE (modeling_doge.py)",
    weights=2 * n_key * h + 2 * E * h,
    active_weights=2 * n_key * h + 2 * k * h,
)


@hookimpl
def flopsreg_register_patterns():
    return [PRODUCT_KEY_EXPERTS]
