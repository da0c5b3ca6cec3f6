"""Hugging Face readers of ``sarvam_mla`` (Sarvam-105B) and ``sarvam_moe`` (Sarvam-30B): config
classes of their own that transformers runs as DeepseekV3ForCausalLM and Glm4MoeForCausalLM
(models/auto/modeling_auto.py), read by those readers with the Sarvam classes' defaults."""

from flopsreg.patterns.hf.deepseek import deepseek
from flopsreg.patterns.hf.glm4_moe import glm4_moe
from flopsreg.plugin import Decoder, Fields, HFReader, hookimpl

# SarvamMLAConfig's defaults for the fields the DeepSeek reader requires (configuration_sarvam_mla.py);
# its head_dim (a legacy kv_lora_rank + rope width) is dropped by __post_init__ and never read.
MLA_DEFAULTS = {"first_k_dense_replace": 1, "q_lora_rank": None, "n_shared_experts": 1, "num_experts_per_tok": 8, "v_head_dim": 128}
# SarvamMoEConfig's defaults where Glm4MoeConfig's differ: QK-norm on, head_dim 64 (configuration_sarvam_moe.py).
MOE_DEFAULTS = {"use_qk_norm": True, "head_dim": 64}
# Both classes' attribute_map: the names of the original Sarvam configs.
ALIASES = {
    "num_local_experts": "n_routed_experts", "num_experts": "n_routed_experts", "num_shared_experts": "n_shared_experts",
    "num_mtp_layers": "num_nextn_predict_layers",
}


def _filled(c: Fields, defaults: dict) -> Fields:
    return Fields({**defaults, **c.data}, where=c.where, model_type=c.model_type, prefix=c.prefix)


def sarvam_mla(c: Fields) -> Decoder:
    """SarvamMLAConfig: DeepSeek-V3's MLA and MoE (q_lora_rank null by default: a direct q_proj)."""
    return deepseek(_filled(c, MLA_DEFAULTS))


def sarvam_moe(c: Fields) -> Decoder:
    """SarvamMoEConfig: GLM-4.5's GQA with QK-norm and MoE with shared experts after first_k_dense_replace."""
    return glm4_moe(_filled(c, MOE_DEFAULTS))


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="sarvam_mla", title="Sarvam MLA", read=sarvam_mla, aliases=ALIASES,
                 summary="SarvamMLAConfig (Sarvam-105B): run as DeepSeek-V3, MLA and MoE with shared experts"),
        HFReader(name="sarvam_moe", title="Sarvam MoE", read=sarvam_moe, aliases={**ALIASES, "use_qkv_bias": "attention_bias"},
                 summary="SarvamMoEConfig (Sarvam-30B): run as GLM-4.5, QK-norm and MoE with shared experts"),
    ]
