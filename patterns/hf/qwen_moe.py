"""Hugging Face readers of ``qwen2_moe``, ``qwen3_moe`` and ``qwen3_vl_moe_text`` (and the decoder
of ``qwen3_omni_moe_text``, read by :mod:`flopsreg.patterns.hf.qwen3_omni`): sparse layers per
``decoder_sparse_step`` and ``mlp_only_layers``; Qwen2-MoE adds one gated shared expert per MoE layer."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf.layer_types import FULL, SLIDING
from flopsreg.patterns.moe import moe_mlp
from flopsreg.patterns.norms import QK_NORM
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl, layers_with

# Both config classes' attribute_map: transformers 5 saves num_local_experts (Qwen3MoeConfig).
ALIASES = {"num_local_experts": "num_experts"}


def _mlps(c: Fields, layers: int) -> Layers[str]:
    """Layer i is sparse iff i not in mlp_only_layers, num_experts > 0, (i + 1) % decoder_sparse_step == 0."""
    step = c.int("decoder_sparse_step")
    # Qwen2MoeConfig / Qwen3MoeConfig: mlp_only_layers None or absent -> [] (no layer forced dense).
    dense_only = set(c.int_list("mlp_only_layers", maximum=layers - 1) or [])
    experts = c.int("num_experts", minimum=0)
    if experts == 0:
        return Layers.uniform("dense", layers)
    start = max(dense_only, default=-1) + 1  # periodic after the last layer mlp_only_layers names
    return Layers.rule(layers, lambda i: "moe" if i not in dense_only and (i + 1) % step == 0 else "dense", period=step, start=start)


def _attention(c: Fields, layers: int) -> Layers[str]:
    given = c.layer_types(layers, (SLIDING, FULL))
    if given is not None:
        return Layers.of(given)
    if c.bool("use_sliding_window", default=False):
        # transformers versions disagree on which Qwen-MoE layers slide (>= max_window_layers in
        # older modeling code, even layers < max_window_layers in configuration_qwen2_moe.py).
        raise c.error(
            "use_sliding_window",
            f" = true: which layers slide differs between transformers versions for model_type "
            f"{c.model_type}; give layer_types explicitly",
        )
    return Layers.uniform(FULL, layers)


def _qwen_moe(c: Fields, *, shared: bool, weights: frozenset[str], sliding: bool = True) -> Decoder:
    layers = c.int("num_hidden_layers")
    attention = _attention(c, layers) if sliding else Layers.uniform(FULL, layers)
    mlps = _mlps(c, layers)
    kinds = {}
    if "dense" in mlps:
        kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        width = c.int("shared_expert_intermediate_size") if shared else 0
        kinds["moe"] = moe_mlp(
            c.int("num_experts"), c.int("num_experts_per_tok"), c.int("moe_intermediate_size"), width, gate=shared
        )
    # With dense layers too, the routed experts' sizes are also model-wide: verl and Megatron-Bridge's
    # Qwen3-MoE bridge count every layer as MoE, and their rules read them on the dense layers.
    routed = moe_mlp(c.int("num_experts"), c.int("num_experts_per_tok"), c.int("moe_intermediate_size"))[1] if len(kinds) == 2 else {}
    if SLIDING in attention and c.optional_int("sliding_window", minimum=0) == 0:
        # Qwen2MoeConfig writes sliding_window 0 when use_sliding_window is off: no window at all.
        raise c.error(
            "sliding_window",
            f" = 0: no window (as Qwen2MoeConfig writes it when use_sliding_window is off), but layer_types "
            f"marks layers {layers_with(attention, SLIDING)} sliding; expected a window >= 1",
        )
    return Decoder(
        params={**gqa_params(c), "vocab": c.int("vocab_size"), **routed},
        flags=silu_gated(c) | weights,
        attention=attention,
        mlps=mlps,
        mlp_kinds=kinds,
    )


def qwen2_moe(c: Fields) -> Decoder:
    """Qwen2MoeConfig: sparse layers per decoder_sparse_step; one gated shared expert per MoE layer."""
    # Qwen2MoeConfig: qkv_bias true and tie_word_embeddings false by default; the router has no bias.
    return _qwen_moe(c, shared=True, weights=weight_flags(c, tied=False, biases={"qkv_bias": True}))


def qwen3_moe(c: Fields) -> Decoder:
    """Qwen3MoeConfig: sparse layers per decoder_sparse_step; no shared expert."""
    # Qwen3MoeConfig: q_norm and k_norm of head_dim; attention_bias and tie_word_embeddings false by default.
    weights = weight_flags(c, tied=False, biases={"attention_bias": False}, extra=QK_NORM.flags)
    return _qwen_moe(c, shared=False, weights=weights)


def qwen3_vl_moe_text(c: Fields) -> Decoder:
    """Qwen3VLMoeTextConfig: Qwen3-MoE's decoder in every full-attention layer (its __post_init__
    sets sliding_window None; the attention takes no layer_types), tie_word_embeddings true by default."""
    # The router normalises its top-k weights (elementwise: no FLOPs a matmul counts).
    weights = weight_flags(c, tied=True, biases={"attention_bias": False}, extra=QK_NORM.flags)
    return _qwen_moe(c, shared=False, weights=weights, sliding=False)


def qwen3_omni_moe_text(c: Fields) -> Decoder:
    """Qwen3OmniMoeTextConfig: Qwen3-MoE's decoder in every full-attention layer (the attention sets
    no sliding window), head_dim = hidden // heads when absent; it declares no tie_word_embeddings
    (the thinker that holds the head ties by its own)."""
    weights = weight_flags(c, tied=False, biases={"attention_bias": False}, extra=QK_NORM.flags)
    return _qwen_moe(c, shared=False, weights=weights, sliding=False)


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="qwen2_moe",
            title="Qwen2-MoE",

            read=qwen2_moe,
            summary="Qwen2MoeConfig: MoE per decoder_sparse_step, one gated shared expert",
            aliases=ALIASES,
        ),
        HFReader(
            name="qwen3_moe",
            title="Qwen3-MoE",

            read=qwen3_moe,
            summary="Qwen3MoeConfig: MoE per decoder_sparse_step, no shared expert",
            aliases=ALIASES,
        ),
        HFReader(
            name="qwen3_vl_moe_text",
            title="Qwen3-VL-MoE",
            read=qwen3_vl_moe_text,
            summary="Qwen3VLMoeTextConfig: qwen3_moe's decoder without sliding layers, multimodal rotary positions",
            aliases=ALIASES,
        ),
    ]
