"""Hugging Face readers of ``gemma3n_text`` and the multimodal wrapper ``gemma3n`` (Gemma 3n):
4 sliding layers to 1 full, the last ``num_kv_shared_layers`` layers reusing earlier keys and
values, AltUp residual copies, a LAuReL branch, per-layer embeddings, per-layer MLP widths."""

from flopsreg.patterns.altup import ALTUP, ALTUP_INPUTS
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import GATED_LM, weight_flags
from flopsreg.patterns.hf._gemma3n_towers import (
    GEMMA3N_AUDIO,
    GEMMA3N_AUDIO_EMBEDDER,
    GEMMA3N_VISION,
    GEMMA3N_VISION_EMBEDDER,
    MOBILENETV5,
)
from flopsreg.patterns.hf.gemma4 import reusing
from flopsreg.patterns.hf.layer_types import FULL, SLIDING
from flopsreg.patterns.kv_reuse_projection import KV_REUSE_PROJECTION
from flopsreg.patterns.laurel import LAUREL, LAUREL_RANK
from flopsreg.patterns.norms import QK_NORM, SANDWICH_NORMS
from flopsreg.patterns.per_layer_input import PER_LAYER_INPUT, PLE_DIM, PLE_LAYERS, PLE_VOCAB
from flopsreg.patterns.sliding_window import SLIDING_WINDOW, WINDOW
from flopsreg.plugin import Decoder, Fields, HFReader, HFTower, Layers, gqa_params, head_dim_of, hookimpl


def mlp_widths(c: Fields, layers: int) -> Layers[int]:
    """``intermediate_size``: one width for every layer or a list of one per layer (Gemma3nTextConfig)."""
    value = c.data.get("intermediate_size")
    if isinstance(value, list):
        widths = c.int_list("intermediate_size", minimum=1)
        if len(widths) != layers:
            raise c.error("intermediate_size", f": {len(widths)} entries but num_hidden_layers = {layers}; expected one per layer")
        return Layers.of(widths)
    return Layers.uniform(c.int("intermediate_size"), layers)


def gemma3n_text(c: Fields) -> Decoder:
    """Gemma3nTextConfig: sliding and full GQA layers on the active AltUp copy, KV sharing, GeGLU MLPs."""
    layers = c.int("num_hidden_layers")
    given = c.layer_types(layers, (SLIDING, FULL))
    types = Layers.of(given) if given else Layers.rule(layers, lambda i: FULL if (i + 1) % 5 == 0 else SLIDING, period=5)
    if not c.has("num_kv_shared_layers"):
        # Gemma3nTextConfig defaults it to 15 (Gemma 4: 0): a sharing the config does not show.
        raise c.missing("num_kv_shared_layers", "Gemma3nTextConfig defaults it to 15 layers reusing keys and values; give 0 for none")
    reuse = reusing(c, types)
    if c.bool("attention_bias", default=False):  # Gemma3nTextConfig default false; the biases are not modelled
        raise c.error("attention_bias", " = true: the attention biases are not counted by flopsreg; expected false")
    # head_dim: Gemma3nTextConfig's default 256 when absent (not hidden / heads).
    head_dim = head_dim_of(c, c.int("hidden_size"), c.int("num_attention_heads"), class_default=256)
    params = {**gqa_params(c, head_dim=head_dim), "vocab": c.int("vocab_size")}
    window = {WINDOW.name: c.int("sliding_window", why="some layers slide")} if SLIDING in types else {}
    kinds = {}

    def attention_of(entry: tuple[str, bool]) -> str:
        kind, shared = entry
        # "_kv": keys and values from an earlier layer (Gemma 4's reader says "_reuse"; the shorter
        # name keeps the LaTeX of 35 layers within a column).
        name = ("sliding" if kind == SLIDING else "full") + ("_kv" if shared else "")
        flags = set(SLIDING_WINDOW.flags if kind == SLIDING else ()) | set(KV_REUSE_PROJECTION.flags if shared else ())
        kinds[name] = (frozenset(flags), window if kind == SLIDING else {})
        return name

    attention = Layers.zip(types, reuse).map(attention_of)
    widths = mlp_widths(c, layers)
    # activation_sparsity_pattern keeps a Gaussian top fraction of the gate's activations: an
    # elementwise mask after the gate projection, so every MLP matmul still runs in full.
    several = len(widths.distinct()) > 1
    mlps = widths.map(lambda width: f"dense_{width}" if several else "dense")
    if not c.has("hidden_size_per_layer_input"):
        raise c.missing("hidden_size_per_layer_input", "Gemma3nTextConfig defaults it to 256; give it")
    # Gemma 3n always builds the per-layer inputs (with 0, empty projections beside a norm that is
    # still there): only a width >= 1 is counted.
    ple = c.int("hidden_size_per_layer_input")
    # Four RMSNorms around attention and MLP, q/k norms, tie_word_embeddings (class default true).
    flags = set(GATED_LM | ALTUP.flags | LAUREL.flags | weight_flags(c, tied=True, extra=SANDWICH_NORMS.flags | QK_NORM.flags))
    # Class defaults cited: altup_num_inputs 4, laurel_rank 64 (Gemma3nTextConfig).
    params |= {ALTUP_INPUTS.name: c.int_or_default("altup_num_inputs", 4), LAUREL_RANK.name: c.int_or_default("laurel_rank", 64)}
    flags |= PER_LAYER_INPUT.flags  # with the RMSNorm after its projection, as Gemma 4's
    # vocab_size_per_layer_input only sizes the gathered table: Gemma3nTextConfig default 262144.
    params |= {PLE_DIM.name: ple, PLE_LAYERS.name: layers, PLE_VOCAB.name: c.int_or_default("vocab_size_per_layer_input", 262144)}
    return Decoder(
        params=params,
        flags=flags,
        attention=attention,
        attention_kinds=kinds,
        mlps=mlps,
        mlp_kinds={name: dense_mlp(width) for name, width in Layers.zip(mlps, widths).distinct()},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="gemma3n_text",
            title="Gemma 3n",
            read=gemma3n_text,
            summary="Gemma3nTextConfig: sliding and full layers, KV sharing, AltUp, LAuReL, per-layer embeddings and MLP widths",
        ),
        HFReader(
            name="gemma3n",
            title="Gemma 3n",
            text_config="gemma3n_text",
            tied_by="wrapper",
            tied_default=True,
            summary="Gemma3nConfig: the decoder is its gemma3n_text text_config",
            towers=(  # always built: an absent sub-config is its class default
                HFTower(part="vision", kind=GEMMA3N_VISION, config="vision_config", fixed={"architecture": MOBILENETV5, "model_args": None}),
                HFTower(part="vision_embedder", kind=GEMMA3N_VISION_EMBEDDER, config="vision_config"),
                HFTower(part="audio", kind=GEMMA3N_AUDIO, config="audio_config"),
                HFTower(part="audio_embedder", kind=GEMMA3N_AUDIO_EMBEDDER, config="audio_config"),
            ),
        ),
    ]
