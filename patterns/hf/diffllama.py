"""Hugging Face reader of ``diffllama`` (DiffLlama): Llama's layers with differential attention."""

import attrs

from flopsreg.patterns.differential_attention import FLAG
from flopsreg.patterns.hf.llama import llama
from flopsreg.plugin import Decoder, Fields, HFReader, hookimpl


def diffllama(c: Fields) -> Decoder:
    """DiffLlamaConfig: LlamaConfig's fields (no mlp_bias: the MLP has none), differential attention;
    DiffLlamaAttention refuses an odd num_key_value_heads and attention_dropout > 0, and so does this."""
    heads = c.int("num_attention_heads")
    kv_heads = c.optional_int("num_key_value_heads") or heads
    if kv_heads % 2:
        raise c.error("num_key_value_heads", f" = {kv_heads}: differential attention splits the value heads in two halves; expected an even number")
    if c.data.get("attention_dropout") not in (None, 0, 0.0):
        raise c.error("attention_dropout", f" = {c.data['attention_dropout']!r}: DiffLlama refuses attention dropout; expected 0")
    if c.bool("mlp_bias", default=False):
        raise c.error("mlp_bias", " = true: DiffLlamaMLP holds no biases; expected false")
    decoder = llama(c)
    return attrs.evolve(decoder, flags=decoder.flags | {FLAG})


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="diffllama", title="DiffLlama", read=diffllama,
                 summary="DiffLlamaConfig: Llama with differential attention (PV over both value halves per head)"),
    ]
