"""Hugging Face readers of ``qwen2`` and ``qwen3``: Llama-like, sliding layers per
``use_sliding_window`` and ``max_window_layers`` (or ``layer_types``)."""

from flopsreg.patterns.biases import QKV_BIAS
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf.layer_types import FULL, SLIDING
from flopsreg.patterns.norms import QK_NORM
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, head_dim_of, hookimpl


def _attention(c: Fields, layers: int) -> Layers[str]:
    """Qwen2Config / Qwen3Config: ``layer_types``, else layer i slides iff use_sliding_window,
    sliding_window is not null and i >= max_window_layers."""
    given = c.layer_types(layers, (SLIDING, FULL))
    if given is not None:
        return Layers.of(given)
    # use_sliding_window defaults to false in both config classes; false switches nothing on.
    if not c.bool("use_sliding_window", default=False) or not c.given("sliding_window"):
        return Layers.uniform(FULL, layers)
    first = c.int("max_window_layers", minimum=0, why="use_sliding_window is true")
    return Layers.split(layers, FULL, SLIDING, first)


def _qwen(c: Fields, head_dim_default: int | None, weights: frozenset[str], *, derived_head_dim: bool = False) -> Decoder:
    layers = c.int("num_hidden_layers")
    attention = _attention(c, layers)
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    head_dim = hidden // heads if derived_head_dim else head_dim_of(c, hidden, heads, head_dim_default)
    return Decoder(
        params={**gqa_params(c, head_dim=head_dim), "vocab": c.int("vocab_size")},
        flags=silu_gated(c) | weights,
        attention=attention,
        mlps=Layers.uniform("dense", layers),
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


def qwen2(c: Fields) -> Decoder:
    """Qwen2Config: Llama-like; sliding layers per use_sliding_window / max_window_layers."""
    # Qwen2Attention: q/k/v_proj always have biases, o_proj none; tie_word_embeddings false by default.
    return _qwen(c, None, weight_flags(c, tied=False, extra=QKV_BIAS.flags))


def qwen2_5_vl_text(c: Fields) -> Decoder:
    """Qwen2_5_VLTextConfig and Qwen2VLTextConfig: as Qwen2, head_dim always hidden_size // num_attention_heads."""
    # Qwen2_5_VLAttention, Qwen2VLAttention: self.head_dim = self.hidden_size // self.num_heads (a head_dim field is not read).
    return _qwen(c, None, weight_flags(c, tied=False, extra=QKV_BIAS.flags), derived_head_dim=True)


def qwen3(c: Fields) -> Decoder:
    """Qwen3Config: as Qwen2, with head_dim defaulting to 128 (Qwen3Config.head_dim)."""
    # transformers models/qwen3/configuration_qwen3.py: head_dim: int = 128.
    # Qwen3Attention: q_norm and k_norm of head_dim; attention_bias and tie_word_embeddings false by default.
    return _qwen(c, 128, weight_flags(c, tied=False, biases={"attention_bias": False}, extra=QK_NORM.flags))


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="qwen2", title="Qwen2", read=qwen2, summary="Qwen2Config: sliding layers per use_sliding_window, max_window_layers"),
        HFReader(name="qwen3", title="Qwen3", read=qwen3, summary="Qwen3Config: as qwen2, head_dim default 128"),
    ]
