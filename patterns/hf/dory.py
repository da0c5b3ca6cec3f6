"""Hugging Face reader of ``dory`` (Nemotron-Labs Dory): a looped nGPT decoder. The input layers
run once, the recurrent layers ``n_recurrent_loops`` times with the same weights, then the output
layers once; so FLOPs follow the unrolled run and parameters the distinct layers (the recurrent
layers are shared blocks: weights held once, FLOPs per run)."""

from flopsreg.patterns.attention_output_gate import ATTENTION_OUTPUT_GATE
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.embedding import TIED_LOGITS
from flopsreg.patterns.hf._common import silu_gated
from flopsreg.patterns.hf._linear import type_list
from flopsreg.patterns.hf.layer_types import FULL, SLIDING
from flopsreg.patterns.ngpt import LOGIT_SCALE, NGPT_SCALES
from flopsreg.patterns.sliding_window import SLIDING_WINDOW, WINDOW
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl

MLP_ENTRY = "mlp"  # DoryConfig.to_dict writes an "mlp" entry after each layer type and doubles the counts
# The attention entries: a layer run once, and a recurrent layer (its weights held once per distinct layer).
ONCE = {FULL: "full", SLIDING: "sliding"}
LOOPED = {FULL: "loop_full", SLIDING: "loop_sliding"}


def _sections(c: Fields) -> tuple[list[str], int, int, int]:
    """Layer types and the input, recurrent and output layer counts, as DoryConfig.__post_init__
    reads them: a saved config (``layer_types`` with an ``mlp`` entry after each layer type) has
    every count doubled, and the class halves them on loading; no layer_types means layer i is
    full iff (i + 1) % 4 == 0; n_recurrent_layers null means the layers the other two leave."""
    given = type_list(c, "layer_types", (SLIDING, FULL, MLP_ENTRY))
    saved = given is not None and MLP_ENTRY in given
    if saved and (given[1::2] != [MLP_ENTRY] * (len(given) // 2) or MLP_ENTRY in given[::2]):
        raise c.error("layer_types", ": a saved Dory config alternates a layer type and 'mlp'; expected that or no 'mlp' at all")
    halve = 2 if saved else 1
    layers = c.int("num_hidden_layers") // halve
    first = c.int_or_default("n_input_layers", 8, minimum=0) // halve
    last = c.int_or_default("n_output_layers", 8, minimum=0) // halve
    recurrent = c.optional_int("n_recurrent_layers", minimum=0)
    recurrent = layers - first - last if recurrent is None else recurrent // halve
    if first + recurrent + last != layers or layers < 1:
        raise c.error(
            "n_recurrent_layers",
            f" = {recurrent}: n_input_layers ({first}) + n_recurrent_layers + n_output_layers ({last}) must equal num_hidden_layers ({layers})",
        )
    types = given[::2] if saved else given
    if types is None:
        types = [FULL if (i + 1) % 4 == 0 else SLIDING for i in range(layers)]
    if len(types) != layers:
        raise c.error("layer_types", f": {len(types)} layer types but num_hidden_layers = {layers}; expected one per layer")
    return types, first, recurrent, last


def dory(c: Fields) -> Decoder:
    """DoryConfig: AFMoE's gated attention (L2-normalised q and k, no norm weights), SwiGLU MLPs,
    sandwich L2 norms, layer i full iff (i + 1) % 4 == 0 unless layer_types says, sliding over
    sliding_window (default 1024) otherwise; head_dim 256 and tie_word_embeddings false by default."""
    types, first, recurrent, last = _sections(c)
    loops = c.int_or_default("n_recurrent_loops", 2)
    looped = [LOOPED[t] for t in types[first : first + recurrent]]
    run = [ONCE[t] for t in types[:first]] + looped * loops + [ONCE[t] for t in types[first + recurrent :]]
    window = {WINDOW.name: c.int_or_default("sliding_window", 1024)}
    params = {**gqa_params(c, head_dim=c.int_or_default("head_dim", 256)), "vocab": c.int("vocab_size")}
    flags = silu_gated(c) | ATTENTION_OUTPUT_GATE.flags | NGPT_SCALES.flags | LOGIT_SCALE.flags
    if c.bool("tie_word_embeddings", default=False):
        flags |= TIED_LOGITS.flags
    flags |= {key for key in ("attention_bias", "mlp_bias") if c.bool(key, default=False)}
    return Decoder(
        params=params,
        flags=flags,
        attention=Layers.of(run),
        attention_kinds={
            LOOPED[FULL]: (frozenset(), {}),
            LOOPED[SLIDING]: (SLIDING_WINDOW.flags, window),
            ONCE[SLIDING]: (SLIDING_WINDOW.flags, window),
            ONCE[FULL]: (frozenset(), {}),
        },
        mlps=Layers.uniform("dense", len(run)),
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
        weight_copies={LOOPED[t]: looped.count(LOOPED[t]) for t in set(types[first : first + recurrent])},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="dory", title="Dory", read=dory,
                 summary="DoryConfig: a looped nGPT decoder; input layers, the recurrent layers n_recurrent_loops times (weights held once), output layers"),
    ]
