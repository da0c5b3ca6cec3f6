"""Qwen4-Exp's per-layer n-gram embeddings (PLE): on the layers listed, each token's hashed 2..m
-gram embeddings (a table of its own per layer) give a value and one key per residual stream;
each stream's normed state gates the value by a dot product with its key, and a dilated
depthwise convolution over the gated values adds local context, all added to the n streams."""

from flopsreg.patterns.hyper_connections import HC_MULT
from flopsreg.plugin import Param, Pattern, h, hookimpl, s

PLE_EMBED_DIM = Param(name="ple_embed_dim", latex=r"E", meaning="width of the concatenated n-gram embeddings of a PLE layer (ple_embed_dim)")
NGRAM_DIM = Param(name="ngram_dim", latex=r"d_{\mathrm{ng}}", meaning="width of each hashed n-gram head's embedding: ple_embed_dim / ((ngram_size - 1) heads_per_ngram)")
NGRAM_ROWS = Param(name="ngram_rows", latex=r"V_{\mathrm{ng}}", meaning="rows of this layer's n-gram table: its heads' prime sizes, summed and padded")
NGRAM_SIZE = Param(name="ngram_size", latex=r"m", meaning="largest n-gram of PLE, also its convolution's dilation (ngram_size)")
PLE_CONV_KERNEL = Param(name="ple_conv_kernel", latex=r"K_{\mathrm{ple}}", meaning="taps of the PLE dilated depthwise convolution (ple_conv_kernel_size)")
FLAG = "ngram_ple"
n, E, d, V, m, K = (p.symbol for p in (HC_MULT, PLE_EMBED_DIM, NGRAM_DIM, NGRAM_ROWS, NGRAM_SIZE, PLE_CONV_KERNEL))

NGRAM_PLE = Pattern(
    name="ngram_ple",
    slot="per_layer_input",
    flags={FLAG},
    precedence=20,
    params=(HC_MULT, PLE_EMBED_DIM, NGRAM_DIM, NGRAM_ROWS, NGRAM_SIZE, PLE_CONV_KERNEL),
    # key_proj E -> n h, value_proj E -> h; per stream the gate is a dot product of width h (key
    # times normed stream, summed: FlopCounterMode sees no matmul); the depthwise conv over the
    # n h channels has K taps per output (dilation m, zero-padded on the left). Hashing, the table
    # lookup, sigmoid gating and the norms are elementwise or gathers.
    formula=2 * s * E * n * h + 2 * s * E * h + 2 * s * n * h + 2 * s * n * h * K,
    # The n-gram table (V rows of d_ng = E / G for G heads), key_proj, value_proj, three grouped RMSNorms of n h, the conv (no bias).
    weights=V * d + E * n * h + E * h + 3 * n * h + n * h * K,
    state=n * h * (K - 1) * m,  # the conv's last (K - 1) m inputs per channel; the m - 1 context token ids are not counted
    summary="n-gram PLE: key (E -> n h) and value (E -> h) projections, per-stream gate dot products, a dilated depthwise conv",
    reference="transformers 5.24 models/qwen4_exp/modeling_qwen4_exp.py Qwen4ExpTextPLELayer, Qwen4ExpTextNGramEmbedding",
)


@hookimpl
def flopsreg_register_patterns():
    return [NGRAM_PLE]
