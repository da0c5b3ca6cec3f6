"""Hugging Face readers of ``mistral_large4_text`` and the multimodal wrapper ``mistral_large4``
(Mistral Large 4): MLA without a query latent, DSA whose indexer reads the hidden state, NoPE
layers (``no_rope_layers``), layers reusing an earlier layer's latent (``kv_source_layers``)
and GLM-5's shared top-k (``indexer_types``)."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.dsa_indexer import DSA_INDEXER_FROM_HIDDEN, INDEX_HEAD_DIM, INDEX_HEADS
from flopsreg.patterns.dsa_topk import DSA_TOPK, INDEX_TOPK
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf._linear import refuse_unless
from flopsreg.patterns.hf._towers import MISTRAL_LARGE4_PROJECTOR, PIXTRAL_VISION
from flopsreg.patterns.hf.glm_moe_dsa import indexer_types
from flopsreg.patterns.kv_reuse_projection import KV_REUSE_PROJECTION
from flopsreg.patterns.mla_projection import QK_NOPE_HEAD_DIM, QK_ROPE_HEAD_DIM
from flopsreg.patterns.moe import moe_mlp
from flopsreg.patterns.softmax_scaling import ROPE_ALPHA, ROTARY_DIM, SOFTMAX_SCALING
from flopsreg.plugin import Decoder, Fields, HFReader, HFTower, Layers, hookimpl


def rope_layers(c: Fields, layers: int) -> Layers[bool]:
    """``no_rope_layers`` (1: the layer uses RoPE), else layer i uses RoPE iff (i + 1) % N != 0
    with the popped ``no_rope_layer_interval`` N; neither given is refused (the class would use 4)."""
    given = c.int_list("no_rope_layers", maximum=1)
    if given is not None:
        if len(given) != layers:
            raise c.error("no_rope_layers", f": {len(given)} entries but num_hidden_layers = {layers}; expected one per layer")
        return Layers.of(given).map(bool)
    if not c.given("no_rope_layer_interval"):
        raise c.missing("no_rope_layers", "which layers are NoPE; MistralLarge4TextConfig would make every 4th layer NoPE; give it or no_rope_layer_interval")
    interval = c.int("no_rope_layer_interval")
    return Layers.rule(layers, lambda i: (i + 1) % interval != 0, period=interval)


def kv_reuse(c: Fields, layers: int) -> Layers[bool]:
    """Per layer: its latent comes from an earlier layer, by ``kv_source_layers`` (absent: every layer its own),
    each an earlier layer that owns its latent."""
    given = c.int_list("kv_source_layers", maximum=layers - 1)
    if given is None:
        return Layers.uniform(False, layers)
    if len(given) != layers:
        raise c.error("kv_source_layers", f": {len(given)} entries but num_hidden_layers = {layers}; expected one per layer")
    for i, source in enumerate(given):
        if source > i or given[source] != source:
            raise c.error(f"kv_source_layers[{i}]", f" = {source}: expected an earlier layer that owns its latent (transformers raises)")
    return Layers.of(source != i for i, source in enumerate(given))


def mlp_plan(c: Fields, layers: int) -> Layers[str]:
    """``mlp_layer_types`` ("dense"/"sparse"), else the first ``first_k_dense_replace`` (default 1) dense."""
    given = c.data.get("mlp_layer_types")
    if given is None:
        first = c.int_or_default("first_k_dense_replace", 1, minimum=0)  # MistralLarge4TextConfig default
        return Layers.split(layers, "dense", "moe", first)
    if not isinstance(given, list) or len(given) != layers or any(t not in ("dense", "sparse") for t in given):
        raise c.error("mlp_layer_types", f" = {given!r}: expected 'dense' or 'sparse' for each of the {layers} layers")
    return Layers.of(given).map(lambda t: "moe" if t == "sparse" else "dense")


def mistral_large4_text(c: Fields) -> Decoder:
    """MistralLarge4TextConfig: every layer DSA; each layer's rope, latent and indexer from its lists."""
    layers = c.int("num_hidden_layers")
    refuse_unless(c, "attention_bias", False, False, "the MLA patterns hold no biases")
    if c.given("q_lora_rank"):
        raise c.error("q_lora_rank", ": MistralLarge4's attention has no query latent (q_proj from hidden); remove it")
    given = c.data.get("layer_types")
    if given is not None and (not isinstance(given, list) or set(given) - {"indexed_attention", "deepseek_sparse_attention"}):
        raise c.error("layer_types", f" = {given!r}: model_type {c.model_type} runs DeepSeek sparse attention on every layer")
    modes, rope, reuse = indexer_types(c, layers), rope_layers(c, layers), kv_reuse(c, layers)
    if modes[0] == "shared":
        raise c.error("indexer_types[0]", " = 'shared': the first layer has no earlier indexer to share; expected 'full'")
    topk = {INDEX_TOPK.name: c.int("index_topk")}
    nope, rope_dim = c.int("qk_nope_head_dim"), c.int("qk_rope_head_dim")
    # A NoPE layer is MLA without the shared rope key: its latent gives every head all
    # nope + rope key dims (MistralLarge4TextAttention sets qk_rope_head_dim 0, qk_nope_head_dim nope + rope).
    widths = {True: {QK_NOPE_HEAD_DIM.name: nope, QK_ROPE_HEAD_DIM.name: rope_dim}, False: {QK_NOPE_HEAD_DIM.name: nope + rope_dim, QK_ROPE_HEAD_DIM.name: 0}}
    kinds = {}

    def attention_of(entry: tuple[tuple[str, bool], bool]) -> str:
        (mode, rotary), reused = entry
        flags = set(DSA_TOPK.flags)
        flags |= DSA_INDEXER_FROM_HIDDEN.flags if mode == "full" else set()
        flags |= KV_REUSE_PROJECTION.flags if reused else set()
        name = ("rope" if rotary else "nope") + ("_kv_reuse" if reused else "") + ("" if mode == "full" else "_shared_topk")
        kinds[name] = (frozenset(flags), {**topk, **widths[rotary]})
        return name

    attention = Layers.zip(Layers.zip(modes, rope), reuse).map(attention_of)
    mlps = mlp_plan(c, layers)
    mlp_kinds = {}
    if "dense" in mlps:
        mlp_kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        width = c.int("moe_intermediate_size")
        shared = c.int_or_default("n_shared_experts", 1, minimum=0) * width  # MistralLarge4TextMoE
        mlp_kinds["moe"] = moe_mlp(c.int("n_routed_experts"), c.int("num_experts_per_tok"), width, shared)
    params = {
        "hidden": c.int("hidden_size"),
        "heads": c.int("num_attention_heads"),
        "kv_lora_rank": c.int("kv_lora_rank"),
        "v_head_dim": c.int("v_head_dim"),
        INDEX_HEADS.name: c.int("index_n_heads"),
        INDEX_HEAD_DIM.name: c.int("index_head_dim"),
        "vocab": c.int("vocab_size"),
        # MistralLarge4TextConfig points head_dim at qk_rope_head_dim: the rotary embedding's width.
        ROTARY_DIM.name: rope_dim,
    }
    # Two norms per layer and the final norm; every attention scales its queries by a learned
    # scale and bias per head; the rotary embedding learns an exponent per frequency (alpha);
    # tie_word_embeddings false by default. (The indexer's own norms are in its pattern.)
    flags = weight_flags(c, tied=False, extra=SOFTMAX_SCALING.flags | ROPE_ALPHA.flags)
    return Decoder(params=params, flags=silu_gated(c) | flags | {"mla"}, attention=attention, attention_kinds=kinds, mlps=mlps, mlp_kinds=mlp_kinds)

# MistralLarge4Config's vision_config when absent (SubConfigSpec init_kwargs): Mistral Small 3.1's tower.
PIXTRAL_DEFAULTS = {"hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 30, "patch_size": 14, "image_size": 1540}


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="mistral_large4_text",
            title="Mistral Large 4",
            read=mistral_large4_text,
            summary="MistralLarge4TextConfig: MLA without q-LoRA, DSA (indexer from hidden), NoPE and latent-sharing layers",
            aliases={"num_local_experts": "n_routed_experts"},
        ),
        HFReader(
            name="mistral_large4", title="Mistral Large 4", text_config="mistral_large4_text", tied_by="wrapper", summary="MistralLarge4Config: the decoder is its text_config",
            towers=(
                HFTower(part="vision", kind=PIXTRAL_VISION, config="vision_config", model_type="pixtral", absent=PIXTRAL_DEFAULTS),
                HFTower(part="projector", kind=MISTRAL_LARGE4_PROJECTOR, config="vision_config", model_type="pixtral", absent=PIXTRAL_DEFAULTS),
            ),
        ),
    ]
