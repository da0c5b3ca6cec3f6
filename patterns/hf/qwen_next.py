"""Hugging Face readers of ``qwen3_next``, ``qwen3_5`` and ``qwen3_5_moe`` (and their
``*_text`` decoders): Gated DeltaNet in the linear_attention layers, gated GQA attention
(``output_gate``) in the full_attention ones, dense or MoE MLPs with a gated shared expert."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf._linear import gdn_params, refuse_unless, renamed, type_list
from flopsreg.patterns.hf._towers import QWEN3_5_VISION
from flopsreg.patterns.hf.layer_types import FULL, GATED_DELTANET_LAYER
from flopsreg.patterns.hf.qwen_moe import _mlps
from flopsreg.patterns.moe import moe_mlp
from flopsreg.patterns.norms import QK_NORM
from flopsreg.plugin import Decoder, Fields, HFReader, HFTower, Layers, gqa_params, head_dim_of, hookimpl

GATED_ATTENTION = frozenset({"output_gate"})  # q_proj outputs 2 x heads x head_dim: query and gate
NAMES = {"linear_attention": GATED_DELTANET_LAYER.name, "full_attention": FULL}


def _layers(c: Fields) -> tuple[int, Layers[str]]:
    """layer_types, else the rule of __post_init__: linear_attention unless (i + 1) % full_attention_interval == 0."""
    layers = c.int("num_hidden_layers")
    types = type_list(c, "layer_types", NAMES, layers)
    if types is None:
        # full_attention_interval is popped from the kwargs (default 4); only layer_types is saved.
        interval = c.int_or_default("full_attention_interval", 4)
        types = Layers.rule(layers, lambda i: "linear_attention" if (i + 1) % interval else "full_attention", period=interval)
    return layers, renamed(types, NAMES)


def _params(c: Fields) -> dict[str, int]:
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    # head_dim: a dataclass field with default 256 in all three config classes.
    head_dim = head_dim_of(c, hidden, heads, class_default=256)
    return {**gqa_params(c, head_dim=head_dim), **gdn_params(c), "vocab": c.int("vocab_size")}


def _moe(c: Fields):
    return moe_mlp(
        c.int("num_experts"), c.int("num_experts_per_tok"), c.int("moe_intermediate_size"),
        c.int("shared_expert_intermediate_size"), gate=True,
    )


def _flags(c: Fields) -> frozenset[str]:
    """Gated attention, two norms per layer, q/k norms of the head width; tie_word_embeddings
    false by default (Qwen3NextConfig, Qwen3_5TextConfig, Qwen3_5MoeTextConfig); attention_bias refused."""
    refuse_unless(c, "attention_bias", False, False, "the gated attention patterns hold no biases")
    return silu_gated(c) | GATED_ATTENTION | weight_flags(c, tied=False, extra=QK_NORM.flags)


def qwen3_next(c: Fields) -> Decoder:
    """Qwen3NextConfig: MoE per decoder_sparse_step and mlp_only_layers, as Qwen2-MoE."""
    layers, attention = _layers(c)
    mlps = _mlps(c, layers)
    kinds = {}
    if "dense" in mlps:
        # intermediate_size (default 5632) is read only where some layer is dense.
        kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        kinds["moe"] = _moe(c)
    return Decoder(params=_params(c), flags=_flags(c), attention=attention, mlps=mlps, mlp_kinds=kinds)


def qwen3_5_text(c: Fields) -> Decoder:
    """Qwen3_5TextConfig: a dense SwiGLU MLP of intermediate_size on every layer."""
    layers, attention = _layers(c)
    return Decoder(
        params=_params(c), flags=_flags(c), attention=attention,
        mlps=Layers.uniform("dense", layers), mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


def qwen3_5_moe_text(c: Fields) -> Decoder:
    """Qwen3_5MoeTextConfig: a MoE block with a gated shared expert on every layer."""
    layers, attention = _layers(c)
    return Decoder(
        params=_params(c), flags=_flags(c), attention=attention,
        mlps=Layers.uniform("moe", layers), mlp_kinds={"moe": _moe(c)},
    )

# Qwen3_5VisionModel and Qwen3_5MoeVisionModel are one module with one set of defaults.
VISION = HFTower(part="vision", kind=QWEN3_5_VISION, config="vision_config")


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="qwen3_next", title="Qwen3-Next", read=qwen3_next,
                 summary="Qwen3NextConfig: Gated DeltaNet / gated attention per layer_types, MoE with a gated shared expert"),
        HFReader(name="qwen3_5_text", title="Qwen3.5", read=qwen3_5_text,
                 summary="Qwen3_5TextConfig: Gated DeltaNet / gated attention per layer_types, dense SwiGLU MLPs"),
        HFReader(name="qwen3_5", title="Qwen3.5", text_config="qwen3_5_text", towers=(VISION,), tied_by="wrapper",
                 summary="Qwen3_5Config: the qwen3_5_text decoder (the ViT: FLOPs for the images given)"),
        HFReader(name="qwen3_5_moe_text", title="Qwen3.5-MoE", read=qwen3_5_moe_text,
                 summary="Qwen3_5MoeTextConfig: Gated DeltaNet / gated attention per layer_types, MoE with a gated shared expert on every layer"),
        HFReader(name="qwen3_5_moe", title="Qwen3.5-MoE", text_config="qwen3_5_moe_text", towers=(VISION,), tied_by="wrapper",
                 summary="Qwen3_5MoeConfig: the qwen3_5_moe_text decoder (the ViT: FLOPs for the images given)"),
    ]
