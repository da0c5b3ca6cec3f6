"""Hugging Face reader of ``inkling_text`` (Inkling's text decoder): GQA attention with per-head
q/k RMSNorms, short causal convs over the keys and values, a relative position bias computed from
the hidden states, full (``hybrid``) or sliding (``hybrid_sliding``, with heads, kv heads and head
width of their own) per ``layer_types``; a short causal conv on each sublayer's output; dense or
MoE MLPs per ``mlp_layer_types``, the router scoring the shared experts beside the routed ones.

Read from transformers 5.24 ``models/inkling/{configuration,modeling}_inkling.py``."""

from flopsreg.patterns._mixer_common import CONV_KERNEL
from flopsreg.patterns.attention_convs import KV_CONV, SUBLAYER_CONV
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf._linear import type_list
from flopsreg.patterns.moe import moe_mlp
from flopsreg.patterns.norms import EMBEDDING_NORM, QK_NORM
from flopsreg.patterns.relative_logits import REL_DIM, REL_EXTENT, RELATIVE_LOGITS
from flopsreg.patterns.shared_expert_sink import MLP_GLOBAL_SCALE, SHARED_COUNT, SHARED_EXPERT_SINK
from flopsreg.patterns.sliding_window import SLIDING_WINDOW, WINDOW
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl

FULL, SLIDING = "hybrid", "hybrid_sliding"
MLP_TYPES = {"dense": "dense", "sparse": "moe"}
# InklingTextConfig's class defaults (a saved config writes every field; a hand-written one may not).
DEFAULTS = {
    "vocab_size": 201024, "hidden_size": 6144, "num_hidden_layers": 66, "num_attention_heads": 64, "num_key_value_heads": 8,
    "head_dim": 128, "swa_num_attention_heads": 64, "swa_num_key_value_heads": 16, "swa_head_dim": 128,
    "sliding_window_size": 512, "d_rel": 16, "rel_extent": 1024, "conv_kernel_size": 4, "intermediate_size": 24576,
    "moe_intermediate_size": 3072, "n_routed_experts": 256, "num_experts_per_tok": 6, "n_shared_experts": 2,
}


def _int(c: Fields, field: str) -> int:
    """A width of the config, its InklingTextConfig class default when absent."""
    return c.int_or_default(field, DEFAULTS[field])


def _attention_types(c: Fields, layers: int) -> Layers[str]:
    """layer_types; else local_layer_ids slide; else layer i slides iff (i + 1) % 6 != 0
    (InklingTextConfig.__post_init__)."""
    given = type_list(c, "layer_types", (FULL, SLIDING), layers)
    if given is not None:
        return Layers.of(given)
    local = c.int_list("local_layer_ids", maximum=layers - 1)
    if local is not None:
        return Layers.chosen(layers, local, SLIDING, FULL)
    return Layers.rule(layers, lambda i: SLIDING if (i + 1) % 6 else FULL, period=6)


def _attention_kinds(c: Fields, types: Layers[str]) -> dict:
    """InklingAttention: full layers num_attention_heads / num_key_value_heads / head_dim with a bias
    over rel_extent distances; sliding ones the swa_* widths, a window of sliding_window_size and
    a bias over as many distances."""
    kinds = {}
    if FULL in types:
        kinds[FULL] = (frozenset(), {
            "heads": _int(c, "num_attention_heads"), "kv_heads": _int(c, "num_key_value_heads"),
            "head_dim": _int(c, "head_dim"), REL_EXTENT.name: _int(c, "rel_extent"),
        })
    if SLIDING in types:
        window = _int(c, "sliding_window_size")
        kinds[SLIDING] = (SLIDING_WINDOW.flags, {
            "heads": _int(c, "swa_num_attention_heads"), "kv_heads": _int(c, "swa_num_key_value_heads"),
            "head_dim": _int(c, "swa_head_dim"), REL_EXTENT.name: window, WINDOW.name: window,
        })
    for kind, (_, params) in kinds.items():
        if params["heads"] % params["kv_heads"]:
            field = "num_attention_heads" if kind == FULL else "swa_num_attention_heads"
            raise c.error(field, f" = {params['heads']}: expected a multiple of its key/value heads ({params['kv_heads']})")
    return kinds


def _widths(c: Fields) -> tuple[int, int]:
    """(dense MLP width, expert width): intermediate_size and moe_intermediate_size, unless the
    legacy kwarg dense_intermediate_size is given (then intermediate_size is the experts' width)."""
    dense = c.optional_int("dense_intermediate_size")
    if dense is not None:
        return dense, _int(c, "intermediate_size")
    return _int(c, "intermediate_size"), _int(c, "moe_intermediate_size")


def _mlps(c: Fields, layers: int) -> Layers[str]:
    """mlp_layer_types; else the first dense_mlp_idx layers (a legacy kwarg, default 0) dense, the rest MoE."""
    given = type_list(c, "mlp_layer_types", MLP_TYPES, layers)
    if given is not None:
        return Layers.of(given).map(MLP_TYPES.__getitem__)
    return Layers.split(layers, "dense", "moe", c.int_or_default("dense_mlp_idx", 0, minimum=0))


def inkling_text(c: Fields) -> Decoder:
    """InklingTextConfig: no tied head (embed and unembed are separate tensors), an RMSNorm on the
    embedding; the MTP layers num_mtp_layers describes are not built (their checkpoint keys are
    ignored on load), unpadded_vocab_size only slices the logits."""
    layers = _int(c, "num_hidden_layers")
    types = _attention_types(c, layers)
    mlps = _mlps(c, layers)
    dense, expert = _widths(c)
    kinds = {}
    if "dense" in mlps:
        kinds["dense"] = dense_mlp(dense)
    if "moe" in mlps:
        # InklingSharedExperts: n_shared_experts gated experts of moe_intermediate_size, each token
        # through all of them; the router holds a row per shared expert (InklingTopkRouter).
        shared = c.int_or_default("n_shared_experts", DEFAULTS["n_shared_experts"])
        flags, params = moe_mlp(_int(c, "n_routed_experts"), _int(c, "num_experts_per_tok"), expert, shared * expert)
        kinds["moe"] = (flags | SHARED_EXPERT_SINK.flags, {**params, SHARED_COUNT.name: shared})
    extra = QK_NORM.flags | EMBEDDING_NORM.flags | MLP_GLOBAL_SCALE.flags | RELATIVE_LOGITS.flags | {KV_CONV, SUBLAYER_CONV}
    params = {
        "hidden": _int(c, "hidden_size"), "vocab": _int(c, "vocab_size"),
        CONV_KERNEL.name: _int(c, "conv_kernel_size"), REL_DIM.name: _int(c, "d_rel"),
    }
    return Decoder(
        params=params, flags=silu_gated(c) | weight_flags(c, tied=False, extra=frozenset(extra)),
        attention=types, attention_kinds=_attention_kinds(c, types), mlps=mlps, mlp_kinds=kinds,
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="inkling_text", title="Inkling (text)", read=inkling_text,
            aliases={"sliding_window": "sliding_window_size", "num_local_experts": "n_routed_experts", "sconv_kernel_size": "conv_kernel_size"},
            summary="InklingTextConfig: GQA with k/v short convs and a hidden-state relative bias, full or sliding (own widths), "
                    "sublayer short convs, dense or MoE MLPs whose router scores the shared experts",
        ),
    ]
