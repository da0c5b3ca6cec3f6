"""Hugging Face readers of ``llama4_text`` and the multimodal wrapper ``llama4``: chunked RoPE
layers, full NoPE layers; MoE layers with one shared expert."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf._towers import LLAMA4_PROJECTOR, LLAMA4_VISION
from flopsreg.patterns.hf.layer_types import CHUNKS, FULL
from flopsreg.patterns.moe import moe_mlp
from flopsreg.plugin import Decoder, Fields, HFReader, HFTower, Layers, gqa_params, head_dim_of, hookimpl


def _attention(c: Fields, layers: int) -> Layers[str]:
    given = c.layer_types(layers, (CHUNKS, FULL))
    if c.has("attention_chunk_size") and not c.given("attention_chunk_size"):
        # modeling_llama4: a layer is chunked only if it uses RoPE and a chunk size is set, so
        # attention_chunk_size null makes every layer full causal, whatever layer_types says.
        return Layers.uniform(FULL, layers)
    if given is not None:
        return Layers.of(given)
    # no_rope_layers[i] == 1: the layer uses RoPE and chunked attention; 0: NoPE, full causal.
    # An empty or absent list falls back to no_rope_layer_interval (Llama4TextConfig.__post_init__).
    rope = c.int_list("no_rope_layers", minimum=0, maximum=1)
    if rope:
        if len(rope) != layers:
            raise c.error("no_rope_layers", f": {len(rope)} entries but num_hidden_layers = {layers}")
    elif c.given("no_rope_layer_interval"):
        interval = c.int("no_rope_layer_interval")
        rope = Layers.rule(layers, lambda i: int((i + 1) % interval != 0), period=interval)
    else:
        raise c.missing(
            "no_rope_layers",
            "no layer_types, no_rope_layers or no_rope_layer_interval says which layers are chunked; "
            "Llama4TextConfig would assume no_rope_layer_interval = 4",
        )
    return Layers.of(rope).map(lambda flag: CHUNKS if flag else FULL)


def _mlps(c: Fields, layers: int) -> Layers[str]:
    moe_layers = c.int_list("moe_layers", minimum=0, maximum=layers - 1)
    if moe_layers is None:
        if not c.given("interleave_moe_layer_step"):
            raise c.missing(
                "moe_layers", "neither moe_layers nor interleave_moe_layer_step says which layers are MoE"
            )
        step = c.int("interleave_moe_layer_step")
        return Layers.rule(layers, lambda i: "moe" if (i + 1) % step == 0 else "dense", period=step)
    return Layers.chosen(layers, moe_layers, "moe", "dense")


def llama4_text(c: Fields) -> Decoder:
    """Llama4TextConfig: chunked RoPE layers, full NoPE layers; MoE layers with one shared expert."""
    layers = c.int("num_hidden_layers")
    attention = _attention(c, layers)
    mlps = _mlps(c, layers)
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    kinds = {}
    if "dense" in mlps:  # dense layers are Llama4TextMLP(intermediate_size=intermediate_size_mlp)
        kinds["dense"] = dense_mlp(c.int("intermediate_size_mlp", why="some layers are dense"))
    if "moe" in mlps:  # experts and the one shared expert are both intermediate_size wide
        width = c.int("intermediate_size")
        kinds["moe"] = moe_mlp(c.int("num_local_experts"), c.int("num_experts_per_tok"), width, shared=width)
    return Decoder(
        # transformers models/llama4/configuration_llama4.py: Llama4TextConfig.head_dim = 128.
        params={**gqa_params(c, head_dim=head_dim_of(c, hidden, heads, class_default=128)), "vocab": c.int("vocab_size")},
        # Llama4TextConfig: tie_word_embeddings and attention_bias false by default; the q/k norm
        # (use_qk_norm) is an L2 norm without weights; the router has no bias.
        flags=silu_gated(c) | weight_flags(c, tied=False, biases={"attention_bias": False}),
        attention=attention,
        mlps=mlps,
        mlp_kinds=kinds,
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="llama4_text", title="Llama 4", read=llama4_text, summary="Llama4TextConfig: chunked RoPE and full NoPE layers, MoE"),
        HFReader(
            name="llama4", title="Llama 4", text_config="llama4_text", summary="Llama4Config: the decoder is its llama4_text text_config",
            towers=(
                HFTower(part="vision", kind=LLAMA4_VISION, config="vision_config"),
                HFTower(part="projector", kind=LLAMA4_PROJECTOR, config="vision_config"),
            ),
        ),
    ]
