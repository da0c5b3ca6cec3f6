"""Hugging Face readers of the pure state-space stacks ``mamba``, ``falcon_mamba`` (Mamba1) and
``mamba2`` (Mamba2): every layer one RMSNorm and one mixer, no attention and no MLP, then the
final norm ``norm_f`` and the logits head."""

import math

from flopsreg.patterns._mixer_common import CONV_KERNEL, SCAN_CHUNK
from flopsreg.patterns.hf._common import weight_flags
from flopsreg.patterns.hf._linear import refuse_unless
from flopsreg.patterns.hf.layer_types import MAMBA1_LAYER, MAMBA2_LAYER
from flopsreg.patterns.mamba1 import DT_RANK, INNER, NO_NORM_WEIGHTS
from flopsreg.patterns.mamba2 import GROUPS, HEAD_DIM, HEADS, STATE
from flopsreg.patterns.norms import SINGLE_NORM
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl

# MambaBlock / Mamba2Block: norm, then the mixer, residual; no MLP ("only": no flags, no width).
ONLY = {"only": (frozenset(), {})}
FLAGS = SINGLE_NORM.flags | {"lm_head"}


def _biases(c: Fields, conv: str) -> None:
    """use_bias (in_proj and out_proj) false, use_conv_bias true: what the mixer patterns hold."""
    refuse_unless(c, "use_bias", False, False, f"in_proj and out_proj biases are not in the {conv} patterns' weights")
    refuse_unless(c, "use_conv_bias", True, True, f"the {conv} conv patterns hold a bias per channel")


def mamba(c: Fields) -> Decoder:
    """MambaConfig / FalconMambaConfig: inner width expand x hidden_size (__post_init__), time_step_rank
    "auto" is ceil(hidden / 16); tie_word_embeddings true by default."""
    layers, hidden = c.int("num_hidden_layers"), c.int("hidden_size")
    _biases(c, "mamba1")
    rank = c.data.get("time_step_rank", "auto")
    params = {
        "hidden": hidden,
        "vocab": c.int("vocab_size"),
        INNER.name: c.int("expand") * hidden,
        DT_RANK.name: math.ceil(hidden / 16) if rank == "auto" else c.int("time_step_rank"),
        STATE.name: c.int("state_size"),
        CONV_KERNEL.name: c.int("conv_kernel"),
    }
    return Decoder(
        params=params,
        flags=weight_flags(c, tied=True, extra=FLAGS | {NO_NORM_WEIGHTS}),
        attention=Layers.uniform(MAMBA1_LAYER.name, layers),
        mlps=Layers.uniform("only", layers),
        mlp_kinds=ONLY,
    )


def mamba2(c: Fields) -> Decoder:
    """Mamba2Config: num_heads x head_dim must equal expand x hidden_size (validate_architecture);
    tie_word_embeddings false by default."""
    layers, hidden = c.int("num_hidden_layers"), c.int("hidden_size")
    _biases(c, "mamba2")
    heads, head_dim, inner = c.int("num_heads"), c.int("head_dim"), c.int("expand") * hidden
    if heads * head_dim != inner:
        raise c.error("head_dim", f" = {head_dim}: num_heads x head_dim = {heads * head_dim}, expected expand x hidden_size = {inner}")
    params = {
        "hidden": hidden,
        "vocab": c.int("vocab_size"),
        HEADS.name: heads,
        HEAD_DIM.name: head_dim,
        STATE.name: c.int("state_size"),
        GROUPS.name: c.int("n_groups"),
        CONV_KERNEL.name: c.int("conv_kernel"),
        SCAN_CHUNK.name: c.int("chunk_size"),
    }
    return Decoder(
        params=params,
        flags=weight_flags(c, tied=False, extra=FLAGS),
        attention=Layers.uniform(MAMBA2_LAYER.name, layers),
        mlps=Layers.uniform("only", layers),
        mlp_kinds=ONLY,
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="mamba", title="Mamba", read=mamba,
                 summary="MambaConfig: a Mamba1 mixer on every layer, no attention, no MLP"),
        HFReader(name="falcon_mamba", title="Falcon-Mamba", read=mamba,
                 summary="FalconMambaConfig: Mamba's layers, with weightless RMSNorms on dt, B and C"),
        HFReader(name="mamba2", title="Mamba2", read=mamba2,
                 summary="Mamba2Config: a Mamba2 mixer on every layer, no attention, no MLP"),
    ]
