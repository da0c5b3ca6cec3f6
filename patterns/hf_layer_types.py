"""The Hugging Face ``layer_types`` strings of the built-in families: full, sliding and chunked
attention, and DeepSeek sparse attention with its own indexer or a shared top-k."""

from flopsreg import hookimpl
from flopsreg.patterns.chunked import CHUNK, CHUNKED
from flopsreg.patterns.dsa_indexer import DSA_INDEXER
from flopsreg.patterns.dsa_topk import DSA_TOPK, INDEX_TOPK
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
INDEXED_ATTENTION = HFLayerType(
    name="indexed_attention",
    flags=DSA_TOPK.flags | DSA_INDEXER.flags,
    params={INDEX_TOPK.name: "index_topk"},
    summary="DeepSeek sparse attention running its own lightning indexer (indexer_types 'full', or none given)",
)
# Not a layer_types string of its own: transformers says "indexed_attention" and decides per layer
# with indexer_types[i] == "shared" (GLM-5, Mistral Large 4) that the layer reuses the previous
# full layer's top-k and builds no indexer; the readers name that combination so.
INDEXED_SHARED_ATTENTION = HFLayerType(
    name="indexed_attention_shared",
    flags=DSA_TOPK.flags,
    params={INDEX_TOPK.name: "index_topk"},
    kind="indexed_shared",
    summary="DeepSeek sparse attention over the top-k of an earlier layer's indexer (indexer_types 'shared'): no indexer",
)
FULL, SLIDING, CHUNKS = FULL_ATTENTION.name, SLIDING_ATTENTION.name, CHUNKED_ATTENTION.name
INDEXED, INDEXED_SHARED = INDEXED_ATTENTION.name, INDEXED_SHARED_ATTENTION.name


@hookimpl
def flopsreg_register_hf_layer_types():
    return [FULL_ATTENTION, SLIDING_ATTENTION, CHUNKED_ATTENTION, INDEXED_ATTENTION, INDEXED_SHARED_ATTENTION]
