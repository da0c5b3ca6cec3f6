"""Hugging Face reader of ``reformer`` (Reformer) with local attention only: causal attention in
chunks that look back, on a reversible stream of two h-wide halves whose head reads 2h. An
``lsh`` layer (the class default) is refused: LSH attention buckets keys by hashing the data, so
which keys a query sees (and so the pairs) depends on the input, not on the config."""

from flopsreg.patterns.axial_positions import AXIAL_POSITION_WEIGHTS, AXIAL_POSITIONS
from flopsreg.patterns.biases import HEAD_BIAS, MLP_BIAS
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf.layer_types import FULL
from flopsreg.patterns.local_chunks import CHUNKS_BEFORE, LOCAL_CHUNK, LOCAL_CHUNKS
from flopsreg.patterns.norms import DECODER_LAYERNORMS
from flopsreg.patterns.position_embedding import LEARNED_POSITIONS, MAX_POSITIONS
from flopsreg.patterns.reversible import REVERSIBLE_LOGITS
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl

DEFAULT_LAYERS = ("local", "lsh", "local", "lsh", "local", "lsh")  # ReformerConfig.attn_layers


def reformer(c: Fields) -> Decoder:
    """ReformerConfig (modeling_reformer.py, transformers 5.24): one layer per ``attn_layers``
    entry; LayerNorms (scale, bias) before the attention and the FFN; query, key, value and
    output dense of num_attention_heads x attention_head_size without bias; a plain FFN of
    feed_forward_size with biases; axial position tables (axial_pos_embds, the default) or a
    learned table of max_position_embeddings; LayerNorm(2h) and the 2h -> V head after the last
    layer. tie_word_embeddings ties nothing (the model declares no tied weights)."""
    kinds = c.data.get("attn_layers", DEFAULT_LAYERS)
    if not isinstance(kinds, list | tuple) or not kinds or any(kind not in ("local", "lsh") for kind in kinds):
        raise c.error("attn_layers", f" = {kinds!r}: expected a non-empty list of 'local' and 'lsh'")
    if "lsh" in kinds:
        raise c.error(
            "attn_layers",
            f" = {list(kinds)!r}: an 'lsh' layer buckets keys by hashing the data, so the pairs it attends depend on the input, "
            "not on the config (only 'local' layers can be counted)",
        )
    if not c.bool("is_decoder", default=False):
        raise c.error("is_decoder", " = false: ReformerModelWithLMHead runs only as a causal decoder (expected true)")
    if c.int_or_default("local_num_chunks_after", 0, minimum=0):
        raise c.error("local_num_chunks_after", ": a causal Reformer looks at no later chunk (transformers asserts 0); expected 0")
    heads = c.int("num_attention_heads")
    params = {
        **gqa_params(c, kv_heads=heads, head_dim=c.int("attention_head_size")),
        "vocab": c.int("vocab_size"),
        LOCAL_CHUNK.name: c.int("local_attn_chunk_length"),
        CHUNKS_BEFORE.name: c.int("local_num_chunks_before", minimum=0),
    }
    flags = {"lm_head"} | DECODER_LAYERNORMS.flags | MLP_BIAS.flags | HEAD_BIAS.flags | REVERSIBLE_LOGITS.flags | LOCAL_CHUNKS.flags
    if c.bool("axial_pos_embds", default=True):
        shape, widths = c.int_list("axial_pos_shape", minimum=1), c.int_list("axial_pos_embds_dim", minimum=1)
        if shape is None or widths is None or len(shape) != len(widths) or sum(widths) != params["hidden"]:
            raise c.error("axial_pos_embds_dim", f" = {widths!r}: expected one width per axis of axial_pos_shape {shape!r}, adding up to hidden_size")
        flags |= AXIAL_POSITIONS.flags
        params[AXIAL_POSITION_WEIGHTS.name] = sum(n * w for n, w in zip(shape, widths))
    else:
        flags |= LEARNED_POSITIONS.flags
        params[MAX_POSITIONS.name] = c.int("max_position_embeddings")
    return Decoder(
        params=params,
        flags=flags,
        attention=Layers.uniform(FULL, len(kinds)),
        mlps=Layers.uniform("dense", len(kinds)),
        mlp_kinds={"dense": dense_mlp(c.int("feed_forward_size"))},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="reformer", title="Reformer", read=reformer,
                 summary="ReformerConfig with local layers only: causal chunks that look back, a reversible 2h stream; lsh refused"),
    ]
