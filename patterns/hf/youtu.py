"""Hugging Face reader of ``youtu`` (Youtu-LLM): DeepSeek-V3's multi-head latent attention (a
low-rank query when ``q_lora_rank`` is set) with a dense SwiGLU MLP on every layer.

Read from transformers 5.24 ``models/youtu/{configuration,modeling}_youtu.py``."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import mla, silu_gated, weight_flags
from flopsreg.patterns.hf._linear import refuse_unless
from flopsreg.patterns.hf.layer_types import FULL
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl


def youtu(c: Fields) -> Decoder:
    """YoutuConfig: q_lora_rank 1536 by default (null: a direct q_proj), tie_word_embeddings true;
    head_dim is set to qk_rope_head_dim by the class and never read here."""
    layers = c.int("num_hidden_layers")
    if not c.has("q_lora_rank"):
        raise c.missing("q_lora_rank", "null for a direct q_proj; YoutuConfig defaults it to 1536")
    refuse_unless(c, "attention_bias", False, False, "the biases it adds to q_a_proj, kv_a_proj_with_mqa and o_proj are in no MLA pattern")
    params, mla_flags = mla(c)
    # Two RMSNorms per layer; q_a_layernorm and kv_a_layernorm are the MLA patterns' own weights.
    return Decoder(
        params=params, flags=silu_gated(c) | weight_flags(c, tied=True) | mla_flags,
        attention=Layers.uniform(FULL, layers), mlps=Layers.uniform("dense", layers),
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [HFReader(name="youtu", title="Youtu-LLM", read=youtu, summary="YoutuConfig: MLA attention, a dense SwiGLU MLP on every layer")]
