"""Hugging Face reader of ``kimi_k25`` (Kimi-K2.5/K2.6): the decoder is a DeepSeek-V3
``text_config``, which the published configs call ``kimi_k2`` (transformers rewrites it)."""

import attrs

from flopsreg.patterns.hf._towers import KIMI_K25_PROJECTOR, KIMI_K25_VISION
from flopsreg.patterns.hf.deepseek import deepseek
from flopsreg.plugin import Decoder, Fields, HFReader, HFTower, hookimpl

# KimiK25Config.__post_init__: a text_config of model_type kimi_k2 becomes deepseek_v3; absent: deepseek_v3.
TEXT_TYPES = ("deepseek_v3", "kimi_k2")
TIED = "tied_embeddings"  # the flag of TIED_LOGITS that ties the head (its other, lm_head, is any head's)
ALIASES = {"num_local_experts": "n_routed_experts"}  # DeepseekV3Config's attribute_map


def kimi_k25(c: Fields) -> Decoder:
    """KimiK25Config: the vision tower aside, its text_config read as DeepseekV3Config."""
    text = c.data.get("text_config")
    if not isinstance(text, dict):
        raise c.missing("text_config", "model_type kimi_k25 keeps its decoder there") if text is None else c.error(
            "text_config", f" = {text!r}: expected an object"
        )
    found = text.get("model_type", "deepseek_v3")
    if found not in TEXT_TYPES:
        raise c.error("text_config.model_type", f" = {found!r}: unsupported for model_type kimi_k25 (expected one of: {', '.join(TEXT_TYPES)})")
    decoder = deepseek(Fields(text, where=c.where, model_type="deepseek_v3", prefix=f"{c.prefix}text_config.", aliases=ALIASES))
    # KimiK25ForConditionalGeneration ties its lm_head by the wrapper's tie_word_embeddings
    # (KimiK25Config default true), whatever the text_config says.
    tied = {TIED} if c.bool("tie_word_embeddings", default=True) else set()
    return attrs.evolve(decoder, flags=(decoder.flags - {TIED}) | tied)


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="kimi_k25",
            title="Kimi K2.5",
            read=kimi_k25,
            summary="KimiK25Config (Kimi-K2.5/K2.6): its text_config (deepseek_v3 or kimi_k2) read as DeepSeek-V3",
            towers=(
                HFTower(part="vision", kind=KIMI_K25_VISION, config="vision_config"),
                HFTower(part="projector", kind=KIMI_K25_PROJECTOR, config="vision_config"),
            ),
        ),
    ]
