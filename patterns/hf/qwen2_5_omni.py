"""Hugging Face readers of ``qwen2_5_omni`` (Qwen2_5OmniForConditionalGeneration: the thinker, and the
talker and token2wav that speak when ``enable_audio_output``), ``qwen2_5_omni_thinker`` (the thinker
alone) and ``qwen2_5_omni_text`` (its decoder). FLOPs are the thinker's, for text output (what
``generate(..., return_audio=False)`` and fine-tuning runs run): its Qwen2 decoder, Qwen2.5-VL's ViT for
images and videos, the audio encoder for clips (:mod:`flopsreg.patterns.hf._qwen2_5_omni_audio`).
Spoken output (the talker's codec tokens, token2wav's waveform) is not counted: its towers count
parameters only."""

from flopsreg.patterns.hf._qwen2_5_omni_towers import (
    QWEN2_5_OMNI_AUDIO,
    QWEN2_5_OMNI_TALKER,
    QWEN2_5_OMNI_TOKEN2WAV,
    TOKEN2WAV_FIXED,
)
from flopsreg.patterns.hf._towers import QWEN2_5_VL_VISION
from flopsreg.patterns.hf.qwen import qwen2
from flopsreg.plugin import HFReader, HFTower, hookimpl

THINKER_TOWERS = (
    HFTower(part="vision", kind=QWEN2_5_VL_VISION, config="vision_config"),
    HFTower(part="audio", kind=QWEN2_5_OMNI_AUDIO, config="audio_config"),
)
# Qwen2_5OmniForConditionalGeneration builds the talker and token2wav only when enable_audio_output (default true).
SPEAKING_TOWERS = (
    HFTower(part="talker", kind=QWEN2_5_OMNI_TALKER, config="talker_config", when="enable_audio_output"),
    HFTower(part="token2wav", kind=QWEN2_5_OMNI_TOKEN2WAV, config="token2wav_config", when="enable_audio_output", fixed=TOKEN2WAV_FIXED),
)


@hookimpl
def flopsreg_register_hf_readers():
    return [
        # Qwen2_5OmniAttention: head_dim = getattr(config, "head_dim", hidden // heads), q/k/v biased, o not: Qwen2's.
        HFReader(name="qwen2_5_omni_text", title="Qwen2.5-Omni", read=qwen2,
                 summary="Qwen2_5OmniTextConfig: the qwen2 decoder (q/k/v biases), multimodal rotary positions"),
        # Qwen2_5OmniThinkerForConditionalGeneration ties lm_head by its own tie_word_embeddings (default false), whatever
        # its text_config's says (PreTrainedModel reads self.config's).
        HFReader(name="qwen2_5_omni_thinker", title="Qwen2.5-Omni thinker", text_config="qwen2_5_omni_text", towers=THINKER_TOWERS,
                 tied_by="wrapper",
                 summary="Qwen2_5OmniThinkerConfig: the qwen2_5_omni_text decoder, Qwen2.5-VL's ViT and the audio encoder "
                 "(FLOPs for the images, videos and clips given)"),
        HFReader(name="qwen2_5_omni", title="Qwen2.5-Omni", inner=("thinker_config", "qwen2_5_omni_thinker"), towers=SPEAKING_TOWERS,
                 summary="Qwen2_5OmniConfig: the thinker (FLOPs for text output), the talker and token2wav when enable_audio_output "
                 "(parameters only: spoken output is not counted)"),
    ]
