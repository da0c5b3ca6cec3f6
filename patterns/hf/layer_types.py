"""The Hugging Face ``layer_types`` strings of the built-in families: full, sliding and chunked
attention, DeepSeek sparse attention with its own indexer or a shared top-k, and the layer types
the readers of the linear-attention / SSM hybrids give their layers."""

from flopsreg.patterns import gated_deltanet, kda, lightning, mamba1, mamba2, short_conv, token_mixers
from flopsreg.patterns.chunked import CHUNK, CHUNKED
from flopsreg.patterns.dsa_indexer import DSA_INDEXER
from flopsreg.patterns.dsa_topk import DSA_TOPK, INDEX_TOPK
from flopsreg.patterns.sliding_window import SLIDING_WINDOW, WINDOW
from flopsreg.plugin import HFLayerType, hookimpl

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
    return [FULL_ATTENTION, SLIDING_ATTENTION, CHUNKED_ATTENTION, INDEXED_ATTENTION, INDEXED_SHARED_ATTENTION, *MIXER_LAYER_TYPES]


# -- the non-attention mixers (issue 10) -----------------------------------------------------
# A family reader gives these names for its layers (it maps the config's own linear_attention,
# mamba, conv, moe and mlp strings to them); their flags select the mixer.* patterns and empty
# the attention.* slots. The mixers' dimensions are model parameters the family reader sets.
GATED_DELTANET_LAYER = HFLayerType(
    name="gated_deltanet",
    flags={gated_deltanet.FLAG},
    summary="Gated DeltaNet (a linear_attention layer of Qwen3-Next, Qwen3.5, OLMo-Hybrid): no softmax attention",
)
KDA_LAYER = HFLayerType(
    name="kda",
    flags={kda.FLAG},
    summary="Kimi Delta Attention (a linear_attention layer of Kimi Linear): no softmax attention",
)
MAMBA2_LAYER = HFLayerType(
    name="mamba2",
    flags={mamba2.FLAG},
    kind="mamba",
    summary="Mamba2 (a linear_attention / mamba layer of Nemotron-H, Granite 4.0-H): no softmax attention",
)
MAMBA1_LAYER = HFLayerType(
    name="mamba1",
    flags={mamba1.FLAG},
    summary="Mamba1's selective scan (a mamba layer of Jamba): no softmax attention",
)
SHORT_CONV_LAYER = HFLayerType(
    name="short_conv",
    flags={short_conv.FLAG},
    kind="conv",
    summary="LFM2's gated short convolution (a conv layer): no softmax attention",
)
NO_ATTENTION_LAYER = HFLayerType(
    name="no_attention",
    flags={token_mixers.NO_ATTENTION},
    kind="ffn",
    summary="a layer with only its MLP or MoE (Nemotron-H mlp and moe blocks): no attention at all",
)
ATTENTION_MAMBA2_LAYER = HFLayerType(
    name="attention_mamba2",
    flags={mamba2.FLAG, token_mixers.PARALLEL_ATTENTION},
    kind="hybrid",
    summary="full causal GQA attention and Mamba2 in parallel on the same input (Falcon-H1 hybrid layers)",
)
LIGHTNING_LAYER = HFLayerType(
    name="lightning",
    flags={lightning.FLAG},
    summary="MiniMax-01's lightning attention (a linear_attention layer of MiniMax-Text-01 / M1): no softmax attention",
)
MIXER_LAYER_TYPES = [
    GATED_DELTANET_LAYER, KDA_LAYER, MAMBA1_LAYER, MAMBA2_LAYER, SHORT_CONV_LAYER, NO_ATTENTION_LAYER, ATTENTION_MAMBA2_LAYER,
    LIGHTNING_LAYER,
]

