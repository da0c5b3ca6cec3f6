"""Hugging Face reader of ``mistral4`` (Mistral Small/Medium 4): DeepSeek-V3's MLA and MoE with
Mistral4Config's own defaults (every layer MoE unless first_k_dense_replace says otherwise)."""

from flopsreg.patterns.hf.deepseek import deepseek
from flopsreg.plugin import Decoder, Fields, HFReader, hookimpl

# Mistral4Config's class defaults for the fields the DeepSeek reader requires (configuration_mistral4.py).
DEFAULTS = {"first_k_dense_replace": 0, "q_lora_rank": 1024, "n_shared_experts": 1}


def mistral4(c: Fields) -> Decoder:
    """Mistral4Config: MLA (q_lora_rank null -> q_proj), MoE from first_k_dense_replace (default 0)."""
    if c.has("first_k_dense_replace") and not c.given("first_k_dense_replace"):
        raise c.error("first_k_dense_replace", " = null: Mistral4's modeling compares layer indices with it; expected an integer >= 0")
    # config.head_dim is nope + rope here (unlike DeepSeek's rope width): not read, as for DeepSeek.
    filled = Fields({**DEFAULTS, **c.data}, where=c.where, model_type=c.model_type, prefix=c.prefix)
    return deepseek(filled)


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="mistral4",
            title="Mistral Small 4",
            read=mistral4,
            summary="Mistral4Config: DeepSeek-V3-style MLA and MoE with shared experts; every layer MoE by default",
            aliases={"num_local_experts": "n_routed_experts"},
        ),
    ]
