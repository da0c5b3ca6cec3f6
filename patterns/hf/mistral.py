"""Hugging Face readers of ``mistral`` and ``mixtral``: every layer slides over ``sliding_window``
keys unless it is null; Mixtral routes every layer to experts."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf.layer_types import FULL, SLIDING
from flopsreg.patterns.moe import moe_mlp
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl


def _attention(c: Fields, layers: int, class_default: str) -> Layers[str]:
    # Every layer uses config.sliding_window; null means no window (full causal).
    if not c.has("sliding_window"):
        raise c.missing("sliding_window", f"{class_default}; write null for no sliding window")
    return Layers.uniform(SLIDING if c.given("sliding_window") else FULL, layers)


def mistral(c: Fields) -> Decoder:
    """MistralConfig: every layer slides over ``sliding_window`` keys unless it is null."""
    layers = c.int("num_hidden_layers")
    attention = _attention(c, layers, "MistralConfig would default it to 4096")
    return Decoder(
        params={**gqa_params(c), "vocab": c.int("vocab_size")},
        # MistralConfig: tie_word_embeddings false by default; no biases (bias=False in the code).
        flags=silu_gated(c) | weight_flags(c, tied=False),
        attention=attention,
        mlps=Layers.uniform("dense", layers),
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


def mixtral(c: Fields) -> Decoder:
    """MixtralConfig: Mistral attention; every layer routes to num_experts_per_tok SwiGLU experts."""
    layers = c.int("num_hidden_layers")
    attention = _attention(c, layers, "MixtralConfig defaults it to null")
    moe = moe_mlp(c.int("num_local_experts"), c.int("num_experts_per_tok"), c.int("intermediate_size"))
    return Decoder(
        params={**gqa_params(c), "vocab": c.int("vocab_size")},
        # MixtralConfig: tie_word_embeddings false by default; no biases, router without bias.
        flags=silu_gated(c) | weight_flags(c, tied=False),
        attention=attention,
        mlps=Layers.uniform("moe", layers),
        mlp_kinds={"moe": moe},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="mistral", title="Mistral", read=mistral, summary="MistralConfig: sliding_window on every layer (null: none)"),
        HFReader(
            name="mixtral",
            title="Mixtral",

            read=mixtral,
            summary="MixtralConfig: Mistral attention, MoE in every layer",
            aliases={"num_experts": "num_local_experts"},
        ),
    ]
