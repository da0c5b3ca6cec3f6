"""Hugging Face reader of ``glm5_next`` (GLM-5.3-Flash), whose decoder is its ``glm5_next_text``
text_config: KDA on the linear_attention layers, NoPE MLA with k-pool DSA on the indexed_attention
ones, mHC around every sublayer, a dense SwiGLU MLP on the first layers and MoE on the others."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.dsa_indexer import DSA_INDEXER, INDEX_HEAD_DIM, INDEX_HEADS
from flopsreg.patterns.dsa_kpool import FLAG, INDEX_KPOOL, TAIL_FLAG
from flopsreg.patterns.dsa_topk import DSA_TOPK, INDEX_TOPK
from flopsreg.patterns.hf._common import mla, silu_gated, weight_flags
from flopsreg.patterns.hf._linear import refuse_unless, type_list
from flopsreg.patterns.hf.glm_moe_dsa import indexer_types
from flopsreg.patterns.hf.kimi_linear import kda_params, linear_attn_config
from flopsreg.patterns.hf.layer_types import KDA_LAYER
from flopsreg.patterns.hyper_connections import HC_MULT, MHC_MEAN_HEAD
from flopsreg.patterns.moe import moe_mlp
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl

# configuration_glm5_next.py: "full_attention" is remapped to "indexed_attention", and the base
# config remaps the legacy "deepseek_sparse_attention" so too.
_TYPES = ("linear_attention", "indexed_attention", "full_attention", "deepseek_sparse_attention")
_INDEXED, _SHARED = "kpool", "kpool_shared"
DENSE_LAYERS = 3  # Glm5NextTextConfig.__post_init__: mlp_layer_types defaults to 3 dense layers, hard-coded


def layer_types(c: Fields, layers: int) -> Layers[bool]:
    """Per layer: True for KDA (linear_attention); ``layer_types``, else KDA iff i % 4 != 3."""
    given = type_list(c, "layer_types", _TYPES, layers)
    if given is None:
        return Layers.rule(layers, lambda i: i % 4 != 3, period=4)
    return Layers.of(given).map(lambda t: t == "linear_attention")


def mlp_layer_types(c: Fields, layers: int) -> Layers[str]:
    """``mlp_layer_types``, else 3 dense layers then MoE, as the config class fills it in. That
    default ignores ``first_k_dense_replace``: a config giving another value (it would mean
    another plan to its writer) is refused rather than read either way."""
    given = type_list(c, "mlp_layer_types", ("dense", "sparse"), layers)
    if given is None:
        first = c.optional_int("first_k_dense_replace", minimum=0)
        if first not in (None, DENSE_LAYERS):
            raise c.error(
                "first_k_dense_replace",
                f" = {first}: Glm5NextTextConfig ignores it and makes the first {DENSE_LAYERS} layers dense; "
                "give mlp_layer_types to say which layers are dense",
            )
        given = Layers.split(layers, "dense", "sparse", DENSE_LAYERS)
    return Layers.of(given).map(lambda t: "moe" if t == "sparse" else "dense")


def _attention(c: Fields, kda: Layers[bool]) -> Layers[str]:
    """KDA, or MLA with k-pool DSA running its own indexer ('full') or the previous layer's top-k ('shared')."""
    modes = indexer_types(c, len(kda))
    both = Layers.zip(kda, modes)  # each layer's entry depends on the layer before too: periodic one layer later

    def attention_of(i: int) -> str:
        linear, mode = both[i]
        if linear:
            return KDA_LAYER.name
        if mode == "full":
            return _INDEXED
        if i and not kda[i - 1] and modes[i - 1] == "full":
            return _SHARED
        # modeling_glm5_next.py: only a full indexed layer hands its top-k to the next layer;
        # a shared layer after anything else raises at run time.
        raise c.error(f"indexer_types[{i}]", " = 'shared': the layer before is not an indexed_attention layer with indexer_types 'full'; expected 'full'")

    return Layers.rule(len(kda), attention_of, period=max(len(both.cycle), 1), start=len(both.first) + 1)


def glm5_next_text(c: Fields) -> Decoder:
    """Glm5NextTextConfig: KDA / MLA + k-pool DSA per layer_types, dense / MoE per mlp_layer_types, mHC."""
    layers = c.int("num_hidden_layers")
    attention = _attention(c, layer_types(c, layers))
    mlps = mlp_layer_types(c, layers)
    if not c.given("q_lora_rank"):
        raise c.error("q_lora_rank", ": missing or null: the DSA indexer reads the query latent (the config class requires it)")
    if c.int("num_key_value_heads") != c.int("num_attention_heads"):
        raise c.error("num_key_value_heads", f" = {c.int('num_key_value_heads')}: expected num_attention_heads = {c.int('num_attention_heads')} (MLA)")
    refuse_unless(c, "attention_bias", False, False, "the MLA patterns hold no q_a_proj, kv_a_proj or o_proj biases")
    attention_params, mla_flags = mla(c, nope=True)  # head_dim is forced to qk_rope_head_dim (0): never read
    pool, topk = c.int("index_kpool"), c.int("index_topk")
    if topk % pool:
        raise c.error("index_topk", f" = {topk}: expected a multiple of index_kpool = {pool}")
    params = {
        **attention_params,
        **kda_params(c, linear_attn_config(c)),
        INDEX_HEADS.name: c.int("index_n_heads"),
        INDEX_HEAD_DIM.name: c.int("index_head_dim"),
        INDEX_TOPK.name: topk,
        INDEX_KPOOL.name: pool,
        HC_MULT.name: c.int("hc_mult"),
    }
    pools = {FLAG} | ({TAIL_FLAG} if c.bool("index_kpool_always_select_tail", default=True) else set())
    # tie_word_embeddings false by default; the router's e_score_correction_bias is a buffer.
    flags = silu_gated(c) | weight_flags(c, tied=False) | mla_flags | MHC_MEAN_HEAD.flags
    kinds = {}
    if "dense" in mlps:
        kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        width = c.int("moe_intermediate_size")
        shared = c.int("n_shared_experts", minimum=0) * width
        kinds["moe"] = moe_mlp(c.int("n_routed_experts"), c.int("num_experts_per_tok"), width, shared)
    return Decoder(
        params=params,
        flags=flags,
        attention=attention,
        attention_kinds={
            _INDEXED: (DSA_TOPK.flags | DSA_INDEXER.flags | pools, {}),
            _SHARED: (DSA_TOPK.flags | pools, {}),
        },
        mlps=mlps,
        mlp_kinds=kinds,
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="glm5_next_text",
            title="GLM-5 Next",
            read=glm5_next_text,
            summary="Glm5NextTextConfig (GLM-5.3-Flash): KDA / NoPE MLA with k-pool DSA, mHC (mean head), dense then MoE",
            aliases={"num_local_experts": "n_routed_experts"},
        ),
        HFReader(name="glm5_next", title="GLM-5 Next", text_config="glm5_next_text", tied_by="wrapper",
                 flat_text=("*",),  # Glm5NextConfig.__post_init__: a flat config's keys it does not take are its text_config
                 summary="Glm5NextConfig: the decoder is its text_config"),
    ]
