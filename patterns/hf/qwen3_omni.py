"""Hugging Face readers of ``qwen3_omni_moe`` (Qwen3OmniMoeConfig) and its ``qwen3_omni_moe_thinker``
and ``qwen3_omni_moe_text`` configs: the thinker's Qwen3-MoE decoder, its vision encoder and audio
encoder (FLOPs for the images, videos and clips a request carries: text output, what fine-tuning,
RL and ``generate(..., return_audio=False)`` run). The talker and code2wav, which speak the answer
and which transformers builds when ``enable_audio_output`` is true, are towers whose parameters
``params`` counts and whose FLOPs are not counted (spoken output: docs/multimodal.md "Qwen3-Omni")."""

from flopsreg.patterns.hf._qwen3_omni_towers import (
    CODE2WAV_RATES,
    QWEN3_OMNI_AUDIO,
    QWEN3_OMNI_CODE2WAV,
    QWEN3_OMNI_TALKER,
    QWEN3_OMNI_VISION,
)
from flopsreg.patterns.hf.qwen_moe import ALIASES, qwen3_omni_moe_text
from flopsreg.plugin import HFReader, HFTower, hookimpl

THINKER_TOWERS = (
    HFTower(part="vision", kind=QWEN3_OMNI_VISION, config="vision_config"),
    HFTower(part="audio", kind=QWEN3_OMNI_AUDIO, config="audio_config"),
)
# Qwen3OmniMoeForConditionalGeneration builds the talker and code2wav only when enable_audio_output (default true).
SPEAKING_TOWERS = (
    HFTower(part="talker", kind=QWEN3_OMNI_TALKER, config="talker_config", when="enable_audio_output"),
    HFTower(part="code2wav", kind=QWEN3_OMNI_CODE2WAV, config="code2wav_config", when="enable_audio_output", fixed=CODE2WAV_RATES),
)


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="qwen3_omni_moe_text", title="Qwen3-Omni", read=qwen3_omni_moe_text, aliases=ALIASES,
                 summary="Qwen3OmniMoeTextConfig: qwen3_moe's decoder without sliding layers, multimodal rotary positions"),
        # Qwen3OmniMoeThinkerForConditionalGeneration: the head tied by the thinker config's own
        # tie_word_embeddings (default false; its text config declares none).
        HFReader(name="qwen3_omni_moe_thinker", title="Qwen3-Omni thinker", text_config="qwen3_omni_moe_text",
                 towers=THINKER_TOWERS, tied_by="wrapper",
                 summary="Qwen3OmniMoeThinkerConfig: the qwen3_omni_moe_text decoder, the ViT and the audio encoder "
                 "(FLOPs for the images, videos and clips given)"),
        HFReader(name="qwen3_omni_moe", title="Qwen3-Omni", inner=("thinker_config", "qwen3_omni_moe_thinker"),
                 towers=SPEAKING_TOWERS,
                 summary="Qwen3OmniMoeConfig: its thinker_config read as qwen3_omni_moe_thinker (text output); "
                 "the talker and code2wav (spoken output): parameters only"),
    ]
