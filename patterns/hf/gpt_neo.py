"""Hugging Face reader of ``gpt_neo`` (GPT-Neo): GPT-2 era blocks as a :class:`FamilyTraits` record,
with each layer's attention, global or local, read from ``attention_types``."""

import attrs

from flopsreg.patterns.biases import MLP_BIAS, OUTPUT_BIAS
from flopsreg.patterns.hf._traits import FamilyTraits, Positions, Width
from flopsreg.patterns.hf.layer_types import FULL
from flopsreg.patterns.norms import DECODER_LAYERNORMS
from flopsreg.patterns.sliding_window import SLIDING_WINDOW, WINDOW
from flopsreg.plugin import Decoder, Fields, HFReader, hookimpl

# modeling_gpt_neo.py: wte and wpe (max_position_embeddings, learned); ln_1, ln_2 and ln_f are
# nn.LayerNorm; q/k/v_proj without bias, out_proj with one; c_fc activation_function c_proj
# (plain, biased) of intermediate_size, 4 x hidden when null; lm_head tied by default.
GPT_NEO = FamilyTraits(
    name="gpt_neo", title="GPT-Neo", summary="GPTNeoConfig: GPT-2 blocks with an output bias alone, global and local (windowed) layers",
    aliases={"num_heads": "num_attention_heads", "num_layers": "num_hidden_layers"}, tied=True, gated=False,
    activation=("activation_function", "gelu_new"), norms=DECODER_LAYERNORMS.flags, flags=OUTPUT_BIAS.flags | MLP_BIAS.flags,
    width=Width("intermediate_size", 4), positions=Positions(), heads_only=True,
)
LOCAL = "local"
# GPTNeoConfig.attention_types default: [[["global", "local"], 12]] (24 layers alternating).
DEFAULT_TYPES = [[["global", "local"], 12]]


def _attention_types(c: Fields, layers: int) -> list[str]:
    """``attention_types`` expanded as GPTNeoConfig.expand_attention_types_params does: each
    ``[pattern, n]`` is *pattern* n times; one ``global`` or ``local`` per layer."""
    value = c.data.get("attention_types") or DEFAULT_TYPES
    expected = 'a list of [["global" or "local", ...], repeats]'
    kinds: list[str] = []
    for i, item in enumerate(value if isinstance(value, list) else [None]):
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], list) and isinstance(item[1], int) and not isinstance(item[1], bool)):
            raise c.error(f"attention_types[{i}]", f" = {item!r}: expected {expected}")
        for name in item[0]:
            if name not in ("global", LOCAL):
                raise c.error(f"attention_types[{i}]", f": {name!r} is not a GPT-Neo attention type; expected 'global' or 'local'")
        kinds.extend(item[0] * item[1])
    if len(kinds) != layers:
        raise c.error("attention_types", f" expands to {len(kinds)} layers but num_layers = {layers}; expected one type per layer (transformers refuses it)")
    return kinds


def gpt_neo(c: Fields) -> Decoder:
    """GPTNeoConfig read by the GPT-Neo record; ``local`` layers slide over ``window_size`` keys
    (GPTNeoSelfAttention's mask keeps key k for query q iff 0 <= q - k < window_size)."""
    decoder = GPT_NEO(c)
    kinds = _attention_types(c, len(decoder.attention))
    attention = [LOCAL if kind == LOCAL else FULL for kind in kinds]
    own = {}
    if LOCAL in attention:
        own[LOCAL] = (SLIDING_WINDOW.flags, {WINDOW.name: c.int_or_default("window_size", 256)})  # GPTNeoConfig.window_size default
    return attrs.evolve(decoder, attention=attention, attention_kinds=own)


@hookimpl
def flopsreg_register_hf_readers():
    return [HFReader(name="gpt_neo", title=GPT_NEO.title, summary=GPT_NEO.summary, read=gpt_neo, aliases=GPT_NEO.aliases)]
