"""Hugging Face readers of multimodal wrappers whose language model is a family read elsewhere,
with their towers (patterns/hf/_towers.py) counted beside it: what runs on text-only input is the
language model alone, and ``params`` adds the towers to give transformers' total of the whole model.

``fuyu``: FuyuForCausalLM, a Persimmon language model (its ``text_config``) whose image patches
enter through one linear projection (no image encoder) and an lm_head of its own, untied by default.

``phi4_multimodal``: Phi4MultimodalForCausalLM, a Phi-3 decoder whose config keeps the text fields at
its top level, with an image and an audio embedding (encoders and projections) that run only when
the input holds images or audio. transformers 5.24 builds no LoRA adapter: the vision and speech
LoRA weights of the published checkpoint are applied by PEFT, outside the model class, so they are
neither counted nor run.
"""

import attrs

from flopsreg.patterns.hf._towers import FUYU_PROJECTOR, PHI4_MULTIMODAL_AUDIO, PHI4_MULTIMODAL_VISION
from flopsreg.patterns.hf._traits import FamilyTraits, window_everywhere
from flopsreg.plugin import HFReader, HFTower, hookimpl

# modeling_phi4_multimodal.py: Phi-3's decoder (fused qkv_proj and gate_up_proj, no biases,
# RMSNorms; every layer slides when sliding_window is set), lm_head untied by default.
PHI4_MULTIMODAL = FamilyTraits(
    name="phi4_multimodal", title="Phi-4-multimodal",
    summary="Phi4MultimodalConfig: Phi-3's decoder; image and audio embeddings beside it", attention=window_everywhere,
)


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="fuyu", title="Fuyu", text_config="persimmon",
            summary="FuyuConfig: the decoder is its persimmon text_config; image patches enter through one linear projection",
            towers=(HFTower(part="projector", kind=FUYU_PROJECTOR, config="text_config"),),
        ),
        attrs.evolve(
            PHI4_MULTIMODAL.reader(),
            towers=(
                HFTower(part="vision", kind=PHI4_MULTIMODAL_VISION, config="vision_config"),
                HFTower(part="audio", kind=PHI4_MULTIMODAL_AUDIO, config="audio_config"),
            ),
        ),
    ]
