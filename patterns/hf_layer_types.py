"""The Hugging Face ``layer_types`` strings of the built-in families: full, sliding and chunked attention."""

from flopsreg import hookimpl
from flopsreg.patterns.chunked import CHUNK, CHUNKED
from flopsreg.patterns.sliding_window import SLIDING_WINDOW, WINDOW
from flopsreg.declare import HFLayerType

FULL_ATTENTION = HFLayerType(
    name="full_attention",
    flags=(),
    summary="full causal attention: no flag, the default mask",
)
SLIDING_ATTENTION = HFLayerType(
    name="sliding_attention",
    flags=SLIDING_WINDOW.flags,
    params={WINDOW.name: "sliding_window"},
    # HF sliding_window = W: query q sees keys q - W + 1 .. q, the query itself included, as ours.
    summary="sliding window of sliding_window keys, the query itself included (masking_utils)",
)
CHUNKED_ATTENTION = HFLayerType(
    name="chunked_attention",
    flags=CHUNKED.flags,
    params={CHUNK.name: "attention_chunk_size"},
    summary="causal within chunks of attention_chunk_size tokens aligned at 0 (Llama 4)",
)
FULL, SLIDING, CHUNKS = FULL_ATTENTION.name, SLIDING_ATTENTION.name, CHUNKED_ATTENTION.name


@hookimpl
def flopsreg_register_hf_layer_types():
    return [FULL_ATTENTION, SLIDING_ATTENTION, CHUNKED_ATTENTION]
