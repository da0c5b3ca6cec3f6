"""Per-layer embeddings (Gemma 3n and Gemma 4 ``hidden_size_per_layer_input``): a second
embedding gives every layer a small input, projected into the residual stream at each layer."""

from flopsreg.plugin import Param, Pattern, h, hookimpl, s

PLE_DIM = Param(name="ple_dim", latex=r"d_{\mathrm{ple}}", meaning="width of each layer's per-layer input (hidden_size_per_layer_input)")
PLE_LAYERS = Param(name="ple_layers", latex=r"L_{\mathrm{ple}}", meaning="layers given a per-layer input (num_hidden_layers)")
PLE_VOCAB = Param(name="ple_vocab", latex=r"V_{\mathrm{ple}}", meaning="vocabulary of the per-layer embedding (vocab_size_per_layer_input)")
p, L, V_p = PLE_DIM.symbol, PLE_LAYERS.symbol, PLE_VOCAB.symbol
_REFERENCE = "Google 2025/2026, Gemma 3n and Gemma 4; transformers models/gemma4/modeling_gemma4.py (per_layer_input_gate, per_layer_projection, per_layer_model_projection)"

PER_LAYER_INPUT = Pattern(
    name="per_layer_input",
    slot="per_layer_input",
    flags={"per_layer_input"},
    precedence=10,
    params=(PLE_DIM,),
    # per_layer_input_gate: hidden -> d_ple; per_layer_projection: d_ple -> hidden.
    formula=2 * s * h * p + 2 * s * p * h,
    # The two matrices and post_per_layer_input_norm's h scale.
    weights=2 * h * p + h,
    summary="each layer: gate hidden -> d_ple, times its per-layer input, projected d_ple -> hidden",
    reference=_REFERENCE,
)

PER_LAYER_EMBEDDING = Pattern(
    name="per_layer_embedding",
    slot="per_layer_embedding",
    flags={"per_layer_input"},
    precedence=10,
    scope="model",
    params=(PLE_DIM, PLE_LAYERS, PLE_VOCAB),
    # per_layer_model_projection: the token embedding -> every layer's input at once; the
    # per-layer embedding itself is a gather (0 FLOPs).
    formula=2 * s * h * L * p,
    # The packed embedding table (V_ple x L d_ple), the projection, and its norm's d_ple scale.
    weights=V_p * L * p + h * L * p + p,
    summary="once per token: the embedding projected hidden -> L x d_ple beside the gathered per-layer embedding",
    reference=_REFERENCE,
)


@hookimpl
def flopsreg_register_patterns():
    return [PER_LAYER_INPUT, PER_LAYER_EMBEDDING]
