"""Hugging Face reader of ``glm_moe_dsa`` (GLM-5): DeepSeek-V3.2's decoder, where
``indexer_types`` lets a layer reuse the previous full layer's top-k instead of running an indexer."""

from flopsreg.patterns.hf.deepseek_v32 import dsa
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl

_MODES = {"full": True, "shared": False}
_PATTERN = {"F": "full", "S": "shared"}


def indexer_types(c: Fields, layers: int) -> Layers[str]:
    """GlmMoeDsaConfig.__post_init__: ``indexer_types``, else the popped ``index_topk_pattern``
    ("F"/"S" per layer), else layer i is full iff max(i - offset + 1, 0) % freq == 0 with the
    popped ``index_topk_freq`` (default 1: every layer) and ``index_skip_topk_offset`` (default 2)."""
    given = c.data.get("indexer_types")
    field = "indexer_types"
    if given is None and c.given("index_topk_pattern"):
        field, pattern = "index_topk_pattern", c.data["index_topk_pattern"]
        given = [_PATTERN.get(ch, ch) for ch in pattern] if isinstance(pattern, str) else pattern
    if given is None:
        freq = max(c.int_or_default("index_topk_freq", 1, minimum=0), 1)
        offset = c.int_or_default("index_skip_topk_offset", 2, minimum=0)
        return Layers.rule(layers, lambda i: "full" if max(i - offset + 1, 0) % freq == 0 else "shared", period=freq, start=max(offset - 1, 0))
    if not isinstance(given, list) or len(given) != layers:
        raise c.error(field, f" = {given!r}: expected one of 'full'/'shared' per layer ({layers} layers)")
    for i, mode in enumerate(given):
        if mode not in _MODES:
            raise c.error(f"{field}[{i}]", f" = {mode!r}: expected 'full' or 'shared'")
    return Layers.of(given)


def glm_moe_dsa(c: Fields) -> Decoder:
    """GlmMoeDsaConfig: DSA on every layer; layers whose indexer_types is 'shared' build no indexer."""
    modes = indexer_types(c, c.int("num_hidden_layers"))
    if modes and modes[0] == "shared":
        # modeling_glm_moe_dsa.py raises at run time: a shared layer needs an earlier full one.
        raise c.error("indexer_types[0]", " = 'shared': the first layer has no earlier indexer to share; expected 'full'")
    return dsa(c, modes.map(_MODES.__getitem__))


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="glm_moe_dsa",
            title="GLM-5",
            read=glm_moe_dsa,
            summary="GlmMoeDsaConfig (GLM-5): DeepSeek-V3.2's DSA decoder; indexer_types 'shared' layers reuse a top-k, no indexer",
            aliases={"num_local_experts": "n_routed_experts"},
        ),
    ]
