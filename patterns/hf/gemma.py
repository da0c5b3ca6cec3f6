"""Hugging Face readers of ``gemma2``, ``gemma3_text`` and the multimodal wrapper ``gemma3``:
interleaved sliding and full layers, GeGLU MLP, head_dim default 256."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import GATED_LM, alternating, weight_flags
from flopsreg.patterns.hf._towers import GEMMA3_PROJECTOR, SIGLIP_VISION
from flopsreg.patterns.hf.layer_types import FULL, SLIDING
from flopsreg.patterns.norms import QK_NORM, SANDWICH_NORMS
from flopsreg.patterns.sliding_window import WINDOW
from flopsreg.plugin import Decoder, Fields, HFReader, HFTower, Layers, gqa_params, head_dim_of, hookimpl


def _model_window(c: Fields, attention: list[str]) -> dict[str, int]:
    """The sliding layers' window, model-wide too: Megatron-Bridge counts every Gemma layer with it."""
    return {WINDOW.name: c.int("sliding_window")} if SLIDING in attention else {}


def gemma2(c: Fields) -> Decoder:
    """Gemma2Config: even layers slide (``layer_types`` if given); GeGLU MLP; head_dim default 256."""
    layers = c.int("num_hidden_layers")
    attention = alternating(c, layers)
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    return Decoder(
        # transformers models/gemma2/configuration_gemma2.py: head_dim defaults to 256.
        params={
            **gqa_params(c, head_dim=head_dim_of(c, hidden, heads, class_default=256)),
            "vocab": c.int("vocab_size"),
            **_model_window(c, attention),
        },
        # Gemma2Config: tie_word_embeddings true, attention_bias false by default; four norms per layer.
        flags=GATED_LM | weight_flags(c, tied=True, biases={"attention_bias": False}, extra=SANDWICH_NORMS.flags),
        attention=attention,
        mlps=Layers.uniform("dense", layers),
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


def gemma3_text(c: Fields) -> Decoder:
    """Gemma3TextConfig: layer i slides iff (i + 1) % sliding_window_pattern != 0 (or layer_types)."""
    layers = c.int("num_hidden_layers")
    if c.bool("use_bidirectional_attention", default=False):
        raise c.error("use_bidirectional_attention", " = true: bidirectional Gemma 3 attention is not supported")
    attention = c.layer_types(layers, (SLIDING, FULL))
    if attention is None:
        # Gemma3TextConfig reads kwargs.get("sliding_window_pattern", 6) when layer_types is absent
        # (its "BC" path): the published configs give neither, so HF uses 6.
        pattern = c.int_or_default("sliding_window_pattern", 6)
        attention = Layers.rule(layers, lambda i: SLIDING if (i + 1) % pattern != 0 else FULL, period=pattern)
    # Published Gemma 3 text_configs omit these; transformers models/gemma3/configuration_gemma3.py
    # (Gemma3TextConfig) defaults: num_attention_heads 8, num_key_value_heads 4, head_dim 256,
    # vocab_size 262208.
    heads = c.int_or_default("num_attention_heads", 8)
    kv_heads = c.int_or_default("num_key_value_heads", 4)
    hidden = c.int("hidden_size")
    return Decoder(
        params={
            **gqa_params(c, heads=heads, kv_heads=kv_heads, head_dim=head_dim_of(c, hidden, heads, class_default=256)),
            "vocab": c.int_or_default("vocab_size", 262208),
            **_model_window(c, attention),
        },
        # Gemma3TextConfig: tie_word_embeddings true, attention_bias false by default; four norms
        # per layer and q_norm, k_norm of head_dim.
        flags=GATED_LM
        | weight_flags(c, tied=True, biases={"attention_bias": False}, extra=SANDWICH_NORMS.flags | QK_NORM.flags),
        attention=attention,
        mlps=Layers.uniform("dense", layers),
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="gemma2", title="Gemma 2", read=gemma2, summary="Gemma2Config: even layers slide, GeGLU MLP"),
        HFReader(name="gemma3_text", title="Gemma 3", read=gemma3_text, summary="Gemma3TextConfig: 5 sliding layers to 1 full by default"),
        HFReader(
            name="gemma3", title="Gemma 3", text_config="gemma3_text", tied_by="wrapper", tied_default=True, summary="Gemma3Config: the decoder is its gemma3_text text_config",
            towers=(
                HFTower(part="vision", kind=SIGLIP_VISION, config="vision_config", model_type="siglip_vision_model"),
                HFTower(part="projector", kind=GEMMA3_PROJECTOR, config="vision_config", model_type="siglip_vision_model"),
            ),
        ),
    ]
