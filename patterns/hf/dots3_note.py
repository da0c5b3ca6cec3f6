"""Hugging Face readers of ``dots3_note_text`` (dots.3 note preview) and its wrapper ``dots3_note``
(the decoder beside the MoE ViT and the audio encoder: :mod:`flopsreg.patterns.hf._dots3_towers`): MLA with a per-head sigmoid
gate on every layer, DSA (its own indexer) on the indexed layers and a sliding window on the others,
whose MLA widths come from ``per_layer_config`` (or the ``swa_*`` keys the class pops into it);
dense then MoE with shared experts by ``mlp_layer_types``."""

from flopsreg.patterns.attention_head_gate import ATTENTION_HEAD_GATE
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.dsa_indexer import DSA_INDEXER, INDEX_HEAD_DIM, INDEX_HEADS
from flopsreg.patterns.dsa_topk import DSA_TOPK, INDEX_TOPK
from flopsreg.patterns.hf._common import mla, silu_gated, weight_flags
from flopsreg.patterns.hf._dots3_towers import DOTS3_AUDIO, DOTS3_VISION
from flopsreg.patterns.hf._linear import type_list
from flopsreg.patterns.hf.axk1 import mlp_layer_types
from flopsreg.patterns.hf.layer_types import FULL, INDEXED, SLIDING
from flopsreg.patterns.mla_projection import K_ROPE_NORM
from flopsreg.patterns.moe import moe_mlp
from flopsreg.patterns.sliding_window import SLIDING_WINDOW, WINDOW
from flopsreg.plugin import Decoder, Fields, HFReader, HFTower, Layers, hookimpl

# Dots3NoteTextConfig.__post_init__: the sliding layers' MLA, from swa_<name> (default) when the
# config holds no per_layer_config; swa_qk_rope_head_dim defaults to head_dim - qk_nope_head_dim.
_SWA = {"num_attention_heads": 64, "q_lora_rank": 1024, "kv_lora_rank": 1024, "qk_nope_head_dim": 192, "v_head_dim": 128}
_PARAMS = {"num_attention_heads": "heads", "q_lora_rank": "q_lora_rank", "kv_lora_rank": "kv_lora_rank",
           "qk_nope_head_dim": "qk_nope_head_dim", "qk_rope_head_dim": "qk_rope_head_dim", "v_head_dim": "v_head_dim"}


def layer_types(c: Fields, layers: int) -> Layers[str]:
    """``layer_types``, else the class rule: layer i is full (indexed unless ``use_dsa`` is false)
    iff ``use_sliding_window`` is false or i < 2 or i % 4 == 1, else sliding; ``use_dsa`` (true
    unless a per_layer_config is given) renames full <-> indexed either way."""
    use_dsa = c.bool("use_dsa") if c.given("use_dsa") else None if c.given("per_layer_config") else True
    full = FULL if use_dsa is False else INDEXED
    given = type_list(c, "layer_types", (FULL, INDEXED, SLIDING), layers)
    if given is None:
        windowed = c.bool("use_sliding_window", default=True)
        kinds = Layers.rule(layers, lambda i: full if not windowed or i < 2 or i % 4 == 1 else SLIDING, period=4, start=min(2, layers))
    else:
        kinds = Layers.of(given)
    if use_dsa is None:
        return kinds
    old = INDEXED if use_dsa is False else FULL
    return kinds.map(lambda kind: full if kind == old else kind)


# The attention kinds are named short (they title the layer kinds: indexed_dense, sliding_moe ...).
_KIND = {INDEXED: "indexed", SLIDING: "sliding", FULL: "full"}


def _swa(c: Fields, params: dict[str, int]) -> dict[str, int]:
    """The sliding layers' MLA widths from the popped swa_* keys (no per_layer_config given)."""
    swa = {_PARAMS[name]: c.int_or_default(f"swa_{name}", default) for name, default in _SWA.items()}
    kv_heads = c.int_or_default("swa_num_key_value_heads", 64)
    if kv_heads != swa["heads"]:
        raise c.error("swa_num_key_value_heads", f" = {kv_heads}: Dots3NoteTextConfig requires it to equal swa_num_attention_heads = {swa['heads']}")
    head_dim = c.int_or_default("swa_head_dim", 256)
    swa["qk_rope_head_dim"] = c.int_or_default("swa_qk_rope_head_dim", head_dim - swa["qk_nope_head_dim"])
    if head_dim != swa["qk_nope_head_dim"] + swa["qk_rope_head_dim"]:
        raise c.error("swa_head_dim", f" = {head_dim}: Dots3NoteTextConfig requires swa_qk_nope_head_dim + swa_qk_rope_head_dim")
    return {**params, **swa}


def _check_per_layer(c: Fields) -> None:
    """Dots3NoteTextConfig.validate_architecture on each per_layer_config entry: num_key_value_heads
    equal to num_attention_heads (the shared reader maps both to the heads; a head_dim there is
    refused by name by it, as an attribute no pattern reads)."""
    for key, entry in (c.data.get("per_layer_config") or {}).items():
        if not isinstance(entry, dict):
            continue  # the shared reader refuses it by name
        heads = entry.get("num_attention_heads", c.int("num_attention_heads"))
        if entry.get("num_key_value_heads", heads) != heads:
            raise c.error(f"per_layer_config[{key!r}].num_key_value_heads", f" = {entry['num_key_value_heads']}: Dots3NoteTextConfig requires num_attention_heads = {heads}")


def dots3_note_text(c: Fields) -> Decoder:
    """Dots3NoteTextConfig: MLA (q_a_proj always; k_rope_only_layernorm; g_proj h -> heads, sigmoid)
    per layer type; the indexed layers' DSA indexer reads the query latent; experts and the shared
    MLP (shared_experts_intermediate_size x n_shared_experts) the same on every sparse layer."""
    layers = c.int("num_hidden_layers")
    if not c.given("q_lora_rank"):
        raise c.error("q_lora_rank", " = null: Dots3NoteTextConfig requires q_lora_rank for MLA queries; expected an integer >= 1")
    if c.bool("attention_bias", default=False):
        raise c.error("attention_bias", " = true: the biases it adds to the MLA projections are not counted by flopsreg; expected false")
    if c.int_or_default("num_key_value_heads", 128) != c.int("num_attention_heads"):
        raise c.error("num_key_value_heads", f" = {c.int('num_key_value_heads')}: Dots3NoteTextConfig requires num_attention_heads = {c.int('num_attention_heads')}")
    params, mla_flags = mla(c)
    _check_per_layer(c)
    attention = layer_types(c, layers).map(_KIND.__getitem__)
    kinds = {
        "indexed": (DSA_TOPK.flags | DSA_INDEXER.flags,
                  {INDEX_TOPK.name: c.int("index_topk"), INDEX_HEADS.name: c.int("index_n_heads"), INDEX_HEAD_DIM.name: c.int("index_head_dim")}),
        "full": (frozenset(), {}),
        "sliding": (SLIDING_WINDOW.flags, {WINDOW.name: c.int_or_default("sliding_window", c.int_or_default("sliding_window_size", 512))}),
    }
    if "sliding" in attention and not c.given("per_layer_config"):
        flags, own = kinds["sliding"]
        kinds["sliding"] = (flags, _swa(c, own))
    mlps = mlp_layer_types(c, layers)
    mlp_kinds = {}
    if "dense" in mlps:
        mlp_kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        shared = c.int_or_default("n_shared_experts", 1, minimum=1) * c.int_or_default("shared_experts_intermediate_size", 1536)
        mlp_kinds["moe"] = moe_mlp(c.int("n_routed_experts"), c.int("num_experts_per_tok"), c.int("moe_intermediate_size"), shared)
    flags = silu_gated(c) | weight_flags(c, tied=False) | mla_flags | ATTENTION_HEAD_GATE.flags | K_ROPE_NORM.flags
    return Decoder(params=params, flags=flags, attention=attention, attention_kinds={k: v for k, v in kinds.items() if k in attention},
                   mlps=mlps, mlp_kinds=mlp_kinds)


# Dots3NoteModel always builds both towers (an absent sub-config is its class default).
VISION = HFTower(part="vision", kind=DOTS3_VISION, config="vision_config")
AUDIO = HFTower(part="audio", kind=DOTS3_AUDIO, config="audio_config")


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="dots3_note_text",
            title="dots.3 note",
            read=dots3_note_text,
            summary="Dots3NoteTextConfig: MLA with a per-head gate, DSA and sliding layers of their own MLA widths (per_layer_config), dense then MoE",
            aliases={"num_local_experts": "n_routed_experts"},
            # num_key_value_heads must equal num_attention_heads there too (checked by the reader)
            per_layer={**_PARAMS, "num_key_value_heads": "heads"},
        ),
        # Dots3NoteConfig: a flat config (no text_config) is the text config, every key but model_type
        # passed on; the head is tied by the wrapper's tie_word_embeddings (default false).
        HFReader(
            name="dots3_note",
            title="dots.3 note",
            text_config="dots3_note_text",
            towers=(VISION, AUDIO),
            flat_text=("*",),
            tied_by="wrapper",
            summary="Dots3NoteConfig: the dots3_note_text decoder, the MoE ViT and the audio encoder (FLOPs for the images and clips given)",
        ),
    ]
