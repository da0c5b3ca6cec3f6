"""Hugging Face reader of ``nemotron_h`` (Nemotron-H, Nemotron 3): one mixer per block of
``layers_block_type`` (or the legacy ``hybrid_override_pattern``): Mamba2, GQA attention, a
non-gated relu^2 MLP, or a MoE of non-gated experts with a shared MLP, optionally latent."""

from flopsreg.patterns._mixer_common import CONV_KERNEL, SCAN_CHUNK
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import weight_flags
from flopsreg.patterns.hf._linear import refuse_unless, type_list
from flopsreg.patterns.hf.layer_types import FULL, MAMBA2_LAYER, NO_ATTENTION_LAYER
from flopsreg.patterns.latent_moe import FLAG as LATENT_FLAG
from flopsreg.patterns.latent_moe import LATENT
from flopsreg.patterns.mamba2 import GROUPS, HEAD_DIM, HEADS, STATE
from flopsreg.patterns.moe import moe_mlp
from flopsreg.patterns.norms import SINGLE_NORM
from flopsreg.plugin import Decoder, Fields, HFReader, gqa_params, head_dim_of, hookimpl

BLOCKS = ("linear_attention", "full_attention", "moe", "mlp")
PATTERN = {"M": "linear_attention", "E": "moe", "*": "full_attention", "-": "mlp"}  # NemotronHConfig._pattern_to_list
MIXER = {"linear_attention": MAMBA2_LAYER.name, "full_attention": FULL, "moe": NO_ATTENTION_LAYER.name, "mlp": NO_ATTENTION_LAYER.name}
MLP = {"linear_attention": "only", "full_attention": "only", "moe": "moe", "mlp": "dense"}  # "only": no MLP
# attribute_map, and the legacy mamba_* names __post_init__ pops into the fields it reads.
ALIASES = {
    "layer_types": "layers_block_type",
    "num_local_experts": "n_routed_experts",
    "mamba_n_groups": "n_groups",
    "mamba_d_conv": "conv_kernel",
    "mamba_chunk_size": "chunk_size",
    "mamba_conv_bias": "use_conv_bias",
}


def _blocks(c: Fields) -> list[str]:
    """layers_block_type > hybrid_override_pattern > the class default [M, E, *, -];
    num_hidden_layers is derived from it (an explicit one is ignored, as transformers does)."""
    types = type_list(c, "layers_block_type", BLOCKS)
    if types is not None:
        if not types:
            raise c.error("layers_block_type", " = []: expected at least one block")
        return types
    pattern = c.data.get("hybrid_override_pattern")
    if pattern is None:
        return ["linear_attention", "moe", "full_attention", "mlp"]
    if not isinstance(pattern, str) or not pattern or set(pattern) - set(PATTERN):
        raise c.error("hybrid_override_pattern", f" = {pattern!r}: expected a string of M, E, * and -")
    return [PATTERN[char] for char in pattern]


def _mamba(c: Fields) -> dict[str, int]:
    """I = mamba_num_heads x mamba_head_dim (NemotronHMamba2Mixer): expand is never read."""
    refuse_unless(c, "use_bias", False, False, "in_proj and out_proj biases are not in the mamba2 patterns' weights")
    refuse_unless(c, "use_conv_bias", True, True, "the mamba2 conv patterns hold a bias per channel")
    return {
        HEADS.name: c.int("mamba_num_heads"),
        HEAD_DIM.name: c.int("mamba_head_dim"),
        STATE.name: c.int("ssm_state_size"),
        GROUPS.name: c.int("n_groups"),
        CONV_KERNEL.name: c.int("conv_kernel"),
        SCAN_CHUNK.name: c.int("chunk_size"),
    }


def nemotron_h(c: Fields) -> Decoder:
    """NemotronHConfig: one mixer per block; MoE shared width moe_shared_expert_intermediate_size
    (n_shared_experts is not read by the modeling code), latent experts with moe_latent_size."""
    blocks = _blocks(c)
    for key in ("attention_bias", "mlp_bias"):
        refuse_unless(c, key, False, False, "the attention and MLP patterns hold no biases")
    params = {"hidden": c.int("hidden_size"), "vocab": c.int("vocab_size")}
    if "full_attention" in blocks:
        hidden, heads = params["hidden"], c.int("num_attention_heads")
        params.update(gqa_params(c, head_dim=head_dim_of(c, hidden, heads, class_default=128)))
    if "linear_attention" in blocks:
        params.update(_mamba(c))
    kinds = {"only": (frozenset(), {})}
    if "mlp" in blocks:
        kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some blocks are mlp"))
    if "moe" in blocks:
        flags, moe = moe_mlp(
            c.int("n_routed_experts"), c.int("num_experts_per_tok"), c.int("moe_intermediate_size"),
            c.int("moe_shared_expert_intermediate_size", minimum=0),
        )
        latent = c.optional_int("moe_latent_size")
        if latent is not None:
            flags, moe = flags | {LATENT_FLAG}, {**moe, LATENT.name: latent}
        kinds["moe"] = (flags, moe)
    # relu^2 MLPs and experts: up and down only (no "gated" flag). One norm per block, the final
    # norm_f; tie_word_embeddings false by default.
    return Decoder(
        params=params, flags=weight_flags(c, tied=False, extra=SINGLE_NORM.flags | {"lm_head"}), attention=[MIXER[b] for b in blocks], mlps=[MLP[b] for b in blocks], mlp_kinds=kinds,
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="nemotron_h", title="Nemotron-H", read=nemotron_h, aliases=ALIASES,
                 summary="NemotronHConfig: Mamba2 / attention / MLP / MoE blocks per layers_block_type or hybrid_override_pattern, latent MoE"),
    ]
