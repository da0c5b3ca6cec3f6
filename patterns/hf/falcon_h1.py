"""Hugging Face reader of ``falcon_h1`` (Falcon-H1): on every layer GQA attention and a Mamba2
mixer in parallel on the same input, then a gated MLP. The Mamba2 inner width is ``mamba_d_ssm``
when set (class default 1024, which overrides ``mamba_expand``), else ``mamba_expand`` x hidden."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf._linear import mamba_params, refuse_unless
from flopsreg.patterns.hf.layer_types import ATTENTION_MAMBA2_LAYER
from flopsreg.patterns.mamba2 import NO_NORM
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl


def _inner(c: Fields, hidden: int) -> int:
    if not c.has("mamba_d_ssm"):
        raise c.missing(
            "mamba_d_ssm",
            "FalconH1Config then uses 1024 whatever mamba_expand says; give it, or null for mamba_expand x hidden_size",
        )
    return c.optional_int("mamba_d_ssm") or c.int("mamba_expand") * hidden


def falcon_h1(c: Fields) -> Decoder:
    """FalconH1Config: every layer "hybrid" (layers_block_type is a property)."""
    layers, hidden = c.int("num_hidden_layers"), c.int("hidden_size")
    for key in ("attention_bias", "mlp_bias", "projectors_bias"):
        refuse_unless(c, key, False, False, "the attention and MLP patterns hold no biases")
    params = {**gqa_params(c), **mamba_params(c, _inner(c, hidden)), "vocab": c.int("vocab_size")}
    # mamba_rms_norm (default false): a gated RMSNorm with a weight of the inner width, or none.
    norm = c.bool("mamba_rms_norm", default=False)
    return Decoder(
        params=params,
        flags=silu_gated(c) | weight_flags(c, tied=False) | (set() if norm else {NO_NORM}),
        attention=Layers.uniform(ATTENTION_MAMBA2_LAYER.name, layers),
        mlps=Layers.uniform("dense", layers),
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="falcon_h1", title="Falcon-H1", read=falcon_h1,
                 summary="FalconH1Config: GQA attention and Mamba2 in parallel on every layer (mamba_d_ssm must be given), gated MLPs"),
    ]
