"""Hugging Face reader of ``falcon`` (Falcon): a :class:`FamilyTraits` record whose key/value heads
and norms follow its four attention switches, ``new_decoder_architecture``, ``multi_query``,
``num_kv_heads`` and ``parallel_attn``; the combinations transformers cannot run are refused."""

import attrs

from flopsreg.patterns.biases import ATTENTION_BIAS, MLP_BIAS
from flopsreg.patterns.hf._traits import FamilyTraits, Switch, Width
from flopsreg.patterns.norms import DECODER_LAYERNORMS, SINGLE_LAYERNORM
from flopsreg.plugin import Decoder, Fields, HFReader, hookimpl

# modeling_falcon.py: word_embeddings; query_key_value of (n_h + 2 n_kv) head_dim outputs
# (new_decoder_architecture: num_kv_heads; multi_query: 1; else n_h) and dense, biased iff bias;
# head_dim = hidden // n_h (FalconConfig.head_dim); dense_h_to_4h activation dense_4h_to_h of
# ffn_hidden_size (4 x hidden when null), biased iff bias; the new architecture broadcasts each
# key/value head to its query heads (the same matmuls as grouped-query attention); rotary, or
# ALiBi (alibi: added to the scores, no matmul, no weight); ln_f; lm_head tied by default.
FALCON = FamilyTraits(
    name="falcon", title="Falcon", summary="FalconConfig: multi-query, grouped (new architecture) or multi-head attention, parallel or sequential blocks",
    aliases={"n_embed": "hidden_size"}, tied=True, gated=False, activation=("activation", "gelu"), norms=DECODER_LAYERNORMS.flags,
    switches=(Switch("bias", False, ATTENTION_BIAS.flags | MLP_BIAS.flags),), width=Width("ffn_hidden_size", 4),
)
ONE_LAYERNORM = attrs.evolve(FALCON, norms=SINGLE_LAYERNORM.flags)


def _kv_heads(c: Fields, heads: int, new: bool) -> int:
    """num_kv_heads (null: n_h) in the new architecture; else 1 when multi_query, n_h when not
    (the fused projection then holds 3 x hidden, so another num_kv_heads cannot run)."""
    if new:
        return c.optional_int("num_kv_heads") or heads
    if c.bool("multi_query", default=True):
        return 1
    given = c.optional_int("num_kv_heads")
    if given is not None and given != heads:
        raise c.error("num_kv_heads", f" = {given} with multi_query false and new_decoder_architecture false: FalconAttention then "
                      f"splits a 3 x hidden projection into num_attention_heads = {heads} key/value heads and cannot run another count; "
                      "expected null or num_attention_heads")
    return heads


def falcon(c: Fields) -> Decoder:
    """FalconConfig read by the Falcon record. Norms per layer: input_layernorm and
    post_attention_layernorm when not parallel_attn; ln_attn and ln_mlp when parallel in the new
    architecture with num_ln_in_parallel_attn 2 (its default there); one input_layernorm when
    parallel otherwise. Refused: new_decoder_architecture with parallel_attn false, and
    num_ln_in_parallel_attn 2 outside the new architecture (FalconDecoderLayer fails to run both)."""
    new = c.bool("new_decoder_architecture", default=False)
    parallel = c.bool("parallel_attn", default=True)
    norms = c.optional_int("num_ln_in_parallel_attn") or (2 if new else None)  # FalconDecoderLayer.__init__
    if new and not parallel:
        raise c.error("parallel_attn", " = false with new_decoder_architecture true: FalconDecoderLayer then reads a norm it did not "
                      "build and fails; expected parallel_attn true")
    if not new and parallel and norms == 2:
        raise c.error("num_ln_in_parallel_attn", " = 2 with new_decoder_architecture false: FalconDecoderLayer builds ln_attn and "
                      "ln_mlp but reads input_layernorm and fails; expected null or 1")
    traits = FALCON if not parallel or norms == 2 else ONE_LAYERNORM
    decoder = traits(c)
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    params = {**decoder.params, "kv_heads": _kv_heads(c, heads, new), "head_dim": hidden // heads}
    return attrs.evolve(decoder, params=params)


@hookimpl
def flopsreg_register_hf_readers():
    return [HFReader(name="falcon", title=FALCON.title, summary=FALCON.summary, read=falcon, aliases=FALCON.aliases)]
