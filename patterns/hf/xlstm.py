"""Hugging Face reader of ``xlstm`` (xLSTM 7B): every block an RMSNorm, an mLSTM layer, an RMSNorm and
a SwiGLU feed-forward of width round_up(hidden x ffn_proj_factor); the final RMSNorm, the head."""

from flopsreg.patterns._mixer_common import SCAN_CHUNK
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import GATED_LM
from flopsreg.patterns.hf._linear import refuse_unless
from flopsreg.patterns.mlstm import FLAG, HEADS, PIECE, QK_DIM, V_DIM
from flopsreg.patterns.norms import DECODER_NORMS
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl

MODES = ("inference",)


def _round_up(x: float, multiple: int) -> int:
    """configuration_xlstm.round_up_to_next_multiple_of, on the same float."""
    return int(((x + multiple - 1) // multiple) * multiple)


def _factor(c: Fields, field: str, default: float) -> float:
    """A positive number field (class default *default* when absent), used as transformers uses it."""
    value = c.data.get(field, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise c.error(field, f" = {value!r}: expected a positive number")
    return value


def _head_width(c: Fields, field: str, width: int, heads: int) -> int:
    if width % heads:
        raise c.error(field, f": int(hidden_size x {field}) = {width} is not a multiple of num_heads = {heads}")
    return width // heads


def xlstm(c: Fields) -> Decoder:
    """xLSTMConfig: hidden_size null is embedding_dim (and the other way round), num_hidden_layers
    null is num_blocks; the layer's q and k are int(hidden x qk_dim_factor) wide, v int(hidden x
    v_dim_factor) (xLSTMLayer: not rounded, unlike the config's qk_dim property); weight_mode
    single or fused holds and computes the same; the head is never tied."""
    hidden = c.optional_int("hidden_size") or c.int("embedding_dim")
    embedding = c.optional_int("embedding_dim") or hidden
    if embedding != hidden:
        raise c.error("embedding_dim", f" = {embedding}: the blocks are hidden_size = {hidden} wide, so the embedding must be too")
    layers = c.optional_int("num_hidden_layers") or c.int("num_blocks")
    refuse_unless(c, "use_bias", False, False, "the projection, norm and feed-forward biases are in no pattern")
    mode = c.string("mode", "inference")
    if mode not in MODES:
        raise c.error("mode", f" = {mode!r}: the chunked form counted is inference mode's (training modes chunk or pad the whole sequence); expected 'inference'")
    heads = c.int("num_heads")
    ffn = _round_up(hidden * _factor(c, "ffn_proj_factor", 2.667), c.int_or_default("ffn_round_up_to_multiple_of", 64))
    params = {
        "hidden": hidden,
        "vocab": c.int("vocab_size"),
        HEADS.name: heads,
        QK_DIM.name: _head_width(c, "qk_dim_factor", int(hidden * _factor(c, "qk_dim_factor", 0.5)), heads),
        V_DIM.name: _head_width(c, "v_dim_factor", int(hidden * _factor(c, "v_dim_factor", 1.0)), heads),
        SCAN_CHUNK.name: c.int_or_default("chunk_size", 64),
        PIECE.name: c.int_or_default("max_inference_chunksize", 16384),
    }
    return Decoder(
        params=params,
        # xLSTMForCausalLM declares no tied weights: its lm_head is its own whatever tie_word_embeddings says
        flags=DECODER_NORMS.flags | GATED_LM | {"swiglu"},  # xLSTMFeedForward: SiLU(up_gate) x up
        attention=Layers.uniform("mlstm", layers),
        attention_kinds={"mlstm": (frozenset({FLAG}), {})},
        mlps=Layers.uniform("dense", layers),
        mlp_kinds={"dense": dense_mlp(ffn)},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="xlstm", title="xLSTM", read=xlstm,
                 summary="xLSTMConfig (xLSTM 7B): an mLSTM layer and a SwiGLU feed-forward per block"),
    ]
