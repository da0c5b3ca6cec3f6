"""Hugging Face readers of ``gemma4_text`` and the multimodal wrapper ``gemma4`` (Gemma 4):
5 sliding layers to 1 full by default, full layers with their own head width (and, with
``attention_k_eq_v``, keys as values), the last ``num_kv_shared_layers`` layers reusing earlier
keys and values, per-layer embeddings, and experts beside the dense MLP; and of the encoder-free
``gemma4_unified_text`` and its wrapper ``gemma4_unified``: the same decoder without per-layer
embeddings or experts."""

import attrs

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.gqa_projection import HEAD_DIM, KV_HEADS
from flopsreg.patterns.hf._common import GATED_LM, weight_flags
from flopsreg.patterns.hf._linear import refuse_unless
from flopsreg.patterns.hf._towers import (
    GEMMA4_AUDIO,
    GEMMA4_AUDIO_EMBEDDER,
    GEMMA4_UNIFIED_AUDIO_EMBEDDER,
    GEMMA4_UNIFIED_VISION_EMBEDDER,
    GEMMA4_VISION,
    GEMMA4_VISION_EMBEDDER,
)
from flopsreg.patterns.hf.layer_types import FULL, SLIDING
from flopsreg.patterns.k_eq_v_projection import K_EQ_V_PROJECTION
from flopsreg.patterns.kv_reuse_projection import KV_REUSE_PROJECTION
from flopsreg.patterns.moe import EXPERT_HIDDEN, EXPERTS, TOP_K
from flopsreg.patterns.norms import QK_NORM, SANDWICH_NORMS
from flopsreg.patterns.parallel_experts import PARALLEL_EXPERTS
from flopsreg.patterns.per_layer_input import PER_LAYER_INPUT, PLE_DIM, PLE_LAYERS, PLE_VOCAB
from flopsreg.patterns.sliding_window import SLIDING_WINDOW, WINDOW
from flopsreg.plugin import Decoder, Fields, HFReader, HFTower, Layers, gqa_params, head_dim_of, hookimpl


def layer_types(c: Fields, layers: int) -> Layers[str]:
    """Gemma4TextConfig: ``layer_types``, else layer i slides iff (i + 1) % 6 != 0; the last layer is forced full."""
    given = c.layer_types(layers, (SLIDING, FULL))
    types = Layers.of(given) if given else Layers.rule(layers, lambda i: SLIDING if (i + 1) % 6 else FULL, period=6)
    return types.replaced(layers - 1, FULL)


def reusing(c: Fields, types: Layers[str]) -> Layers[bool]:
    """Gemma4TextConfig.kv_sharing_modes: the last num_kv_shared_layers layers reuse an earlier
    layer's keys and values, which needs a producing layer of every type before them."""
    shared = c.int_or_default("num_kv_shared_layers", 0, minimum=0)  # Gemma4TextConfig default 0
    first = len(types) - shared
    if first < 0 or (0 < first and set(types.head(first).distinct()) != set(types.distinct())):
        raise c.error(
            "num_kv_shared_layers",
            f" = {shared}: the layers before the sharing ones must include every layer type to share from "
            f"(transformers raises); expected at most {len(types)} and a producer of each type",
        )
    return Layers.split(len(types), False, True, first)


def full_layer_params(c: Fields, k_eq_v: bool) -> dict[str, int]:
    """The head width (and key/value heads) of full layers when no ``per_layer_config`` gives them."""
    if c.given("per_layer_config"):
        return {}  # read per layer by the loader, as transformers does
    if not c.given("global_head_dim"):
        # Gemma4TextConfig pops global_head_dim with a default of 512 for every full layer: a
        # default the config does not show, so it is not guessed.
        raise c.missing("global_head_dim", "the head width of the full layers; transformers would use 512; give it or per_layer_config")
    params = {HEAD_DIM.name: c.int("global_head_dim")}
    # num_global_key_value_heads applies only with attention_k_eq_v (configuration_gemma4.py).
    if k_eq_v and c.given("num_global_key_value_heads"):
        params[KV_HEADS.name] = c.int("num_global_key_value_heads")
    return params


def gemma4_decoder(c: Fields) -> Decoder:
    """The decoder both Gemma 4 text configs share (Gemma4TextConfig, Gemma4UnifiedTextConfig):
    the attention of each layer from its type, head width and sharing, a GeGLU MLP, sandwich and
    q/k norms. Gemma4UnifiedTextConfig deletes the per-layer embedding and expert fields
    (Gemma4UnifiedTextModel builds neither): it is this decoder alone."""
    # use_bidirectional_attention: null (Gemma4TextConfig's default), "vision" (Gemma4UnifiedTextConfig's:
    # only image tokens attend both ways, text stays causal) or "all".
    if c.given("use_bidirectional_attention") and c.string("use_bidirectional_attention", "") == "all":
        raise c.error("use_bidirectional_attention", " = 'all': bidirectional Gemma 4 attention is not supported")
    layers = c.int("num_hidden_layers")
    refuse_unless(c, "attention_bias", False, False, "the attention patterns hold no biases")
    types = layer_types(c, layers)
    reuse = reusing(c, types)
    k_eq_v = c.bool("attention_k_eq_v", default=False)  # Gemma4TextConfig default False
    full = full_layer_params(c, k_eq_v) if FULL in types else {}
    window = {WINDOW.name: c.int("sliding_window", why="some layers slide")} if SLIDING in types else {}
    # Head width and key/value heads are set on every kind (the full ones override them), so no
    # model-wide value stands beside the per-kind ones.
    # Gemma4(Unified)TextConfig.head_dim: 256 when absent (Gemma4TextAttention reads config.head_dim).
    head_dim = head_dim_of(c, c.int("hidden_size"), c.int("num_attention_heads"), class_default=256)
    params = {**gqa_params(c, head_dim=head_dim), "vocab": c.int("vocab_size")}
    local = {name: params.pop(name) for name in (HEAD_DIM.name, KV_HEADS.name)}
    kinds = {}

    def attention_of(entry: tuple[str, bool]) -> str:
        kind, shared = entry
        name = ("sliding" if kind == SLIDING else "full") + ("_reuse" if shared else "")
        flags = set(SLIDING_WINDOW.flags) if kind == SLIDING else set(K_EQ_V_PROJECTION.flags if k_eq_v else ())
        flags |= KV_REUSE_PROJECTION.flags if shared else set()
        kinds[name] = (frozenset(flags), {**local, **(window if kind == SLIDING else full)})
        return name

    attention = Layers.zip(types, reuse).map(attention_of)
    width = c.int("intermediate_size")
    # The MLP is twice as wide on the KV-sharing layers iff use_double_wide_mlp (Gemma4TextMLP).
    wide = c.bool("use_double_wide_mlp", default=False)
    mlps = reuse.map(lambda shared: "dense_wide" if wide and shared else "dense")
    mlp_kinds = {"dense": dense_mlp(width), "dense_wide": dense_mlp(2 * width)}
    # Sandwich norms (three more with the experts), q/k norms of each layer's head width (the
    # v_norm has no scale); tie_word_embeddings true by default.
    flags = set(GATED_LM | weight_flags(c, tied=True, extra=SANDWICH_NORMS.flags | QK_NORM.flags))
    return Decoder(
        params=params,
        flags=flags,
        attention=attention,
        attention_kinds=kinds,
        mlps=mlps,
        mlp_kinds={name: mlp_kinds[name] for name in mlps.distinct()},
    )


def gemma4_text(c: Fields) -> Decoder:
    """Gemma4TextConfig: :func:`gemma4_decoder`, experts beside the MLP, per-layer embeddings."""
    decoder = gemma4_decoder(c)
    flags, params, layers = set(decoder.flags), dict(decoder.params), len(decoder.attention)
    if c.bool("enable_moe_block", default=False):
        flags |= PARALLEL_EXPERTS.flags
        params |= {EXPERTS.name: c.int("num_experts"), TOP_K.name: c.int("top_k_experts"), EXPERT_HIDDEN.name: c.int("moe_intermediate_size")}
    if not c.has("hidden_size_per_layer_input"):
        # The class default is 256, which turns the per-layer embeddings on: not guessed.
        raise c.missing("hidden_size_per_layer_input", "Gemma4TextConfig defaults it to 256, turning per-layer embeddings on; give 0 for none")
    ple = c.optional_int("hidden_size_per_layer_input", minimum=0) or 0
    if ple:
        flags |= PER_LAYER_INPUT.flags
        # vocab_size_per_layer_input only sizes the gathered table: Gemma4TextConfig default 262144.
        params |= {PLE_DIM.name: ple, PLE_LAYERS.name: layers, PLE_VOCAB.name: c.int_or_default("vocab_size_per_layer_input", 262144)}
    return attrs.evolve(decoder, params=params, flags=flags)


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="gemma4_text",
            title="Gemma 4",
            read=gemma4_text,
            summary="Gemma4TextConfig: sliding and full layers of their own head widths, K=V, KV sharing, per-layer embeddings, experts beside the MLP",
            per_layer={"head_dim": HEAD_DIM.name, "num_key_value_heads": KV_HEADS.name},
        ),
        HFReader(
            name="gemma4", title="Gemma 4", text_config="gemma4_text", tied_by="wrapper", tied_default=True, summary="Gemma4Config: the decoder is its gemma4_text text_config",
            towers=(  # built only when the config sets their sub-config
                HFTower(part="vision", kind=GEMMA4_VISION, config="vision_config", optional=True),
                HFTower(part="vision_embedder", kind=GEMMA4_VISION_EMBEDDER, config="vision_config", optional=True),
                HFTower(part="audio", kind=GEMMA4_AUDIO, config="audio_config", optional=True),
                HFTower(part="audio_embedder", kind=GEMMA4_AUDIO_EMBEDDER, config="audio_config", optional=True),
            ),
        ),
        HFReader(
            name="gemma4_unified_text",
            title="Gemma 4 unified",
            read=gemma4_decoder,
            summary="Gemma4UnifiedTextConfig: the Gemma 4 decoder without per-layer embeddings or experts",
            per_layer={"head_dim": HEAD_DIM.name, "num_key_value_heads": KV_HEADS.name},
        ),
        HFReader(
            name="gemma4_unified", title="Gemma 4 unified", text_config="gemma4_unified_text", tied_by="wrapper", tied_default=True,
            summary="Gemma4UnifiedConfig: the decoder is its gemma4_unified_text text_config; images and audio enter through embedders, no encoder",
            towers=(  # built only when the config sets their sub-config
                HFTower(part="vision_embedder", kind=GEMMA4_UNIFIED_VISION_EMBEDDER, config="vision_config", optional=True),
                HFTower(part="audio_embedder", kind=GEMMA4_UNIFIED_AUDIO_EMBEDDER, config="audio_config", optional=True),
            ),
        ),
    ]
