"""Hugging Face reader of ``mpt`` (MPT): as transformers' MptModel builds it, a :class:`FamilyTraits`
record (bias-free LayerNorms, no biases, a plain GELU MLP of 4 x hidden, ALiBi); configurations
whose model transformers does not build are refused by name."""

from collections.abc import Mapping

from flopsreg.patterns.hf._traits import FamilyTraits, Width
from flopsreg.plugin import Decoder, Fields, HFReader, hookimpl

# modeling_mpt.py: wte; norm_1, norm_2 and norm_f are LayerNorms whose bias is set to None (a
# scale of hidden each, as an RMSNorm's); Wqkv (3 x hidden) and out_proj without bias; up_proj
# GELU down_proj without bias, 4 x hidden always; ALiBi always (build_mpt_alibi_tensor: added to
# the scores, no weight, no matmul), no position table; lm_head tied by default.
MPT = FamilyTraits(
    name="mpt", title="MPT", summary="MptConfig: bias-free LayerNorms, no biases, plain GELU MLP of 4 x hidden, ALiBi",
    aliases={"d_model": "hidden_size", "n_heads": "num_attention_heads", "n_layers": "num_hidden_layers"},
    tied=True, gated=False, activation=("hidden_act", "gelu"), width=Width(None, 4), heads_only=True,
)
WHY = "transformers' MptModel builds"


def _attn_config(c: Fields) -> Fields:
    value = c.data.get("attn_config") or {}
    if not isinstance(value, Mapping):
        raise c.error("attn_config", f" = {value!r}: expected an object of attention settings (MptAttentionConfig)")
    return Fields(value, where=c.where, model_type=c.model_type, prefix=f"{c.prefix}attn_config.")


def mpt(c: Fields) -> Decoder:
    """MptConfig read by the MPT record. Refused, since transformers builds another model than
    the config describes (it reads none of these keys): ``expansion_ratio`` other than 4,
    ``no_bias`` false, ``attn_config.attn_type`` other than multi-head, ``attn_config.qk_ln``,
    ``attn_config.prefix_lm`` true and ``attn_config.alibi`` false."""
    ratio = c.int_or_default("expansion_ratio", 4)
    if ratio != 4:
        raise c.error("expansion_ratio", f" = {ratio}: {WHY} an MLP of 4 x d_model whatever it says; expected 4")
    if not c.bool("no_bias", default=True):
        raise c.error("no_bias", f" = false: {WHY} no bias at all whatever it says; expected true")
    attn = _attn_config(c)
    kind = attn.string("attn_type", "multihead_attention")
    if kind != "multihead_attention":
        raise attn.error("attn_type", f" = {kind!r}: {WHY} multi-head attention (Wqkv of 3 x d_model) whatever it says; expected 'multihead_attention'")
    for key, default, builds in (("qk_ln", False, "no query/key LayerNorms"), ("prefix_lm", False, "a causal mask"), ("alibi", True, "ALiBi and no position table")):
        if attn.bool(key, default=default) != default:
            raise attn.error(key, f" = {str(not default).lower()}: {WHY} {builds} whatever it says; expected {str(default).lower()}")
    return MPT(c)


@hookimpl
def flopsreg_register_hf_readers():
    return [HFReader(name="mpt", title=MPT.title, summary=MPT.summary, read=mpt, aliases=MPT.aliases)]
