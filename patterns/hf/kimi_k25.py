"""Hugging Face reader of ``kimi_k25`` (Kimi-K2.5/K2.6): the decoder is a DeepSeek-V3
``text_config``, which the published configs call ``kimi_k2`` (transformers rewrites it)."""

from flopsreg.patterns.hf.deepseek import deepseek
from flopsreg.plugin import Decoder, Fields, HFReader, hookimpl

# KimiK25Config.__post_init__: a text_config of model_type kimi_k2 becomes deepseek_v3; absent: deepseek_v3.
TEXT_TYPES = ("deepseek_v3", "kimi_k2")
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
    return deepseek(Fields(text, where=c.where, model_type="deepseek_v3", prefix=f"{c.prefix}text_config.", aliases=ALIASES))


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="kimi_k25",
            title="Kimi K2.5",
            read=kimi_k25,
            summary="KimiK25Config (Kimi-K2.5/K2.6): its text_config (deepseek_v3 or kimi_k2) read as DeepSeek-V3",
        ),
    ]
