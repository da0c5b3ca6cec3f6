"""Hugging Face readers of multimodal wrappers whose language model is a family read elsewhere,
with their towers (patterns/hf/_towers.py) counted beside it: what runs on text-only input is the
language model alone, and ``params`` adds the towers to give transformers' total of the whole model.

``fuyu``: FuyuForCausalLM, a Persimmon language model (its ``text_config``) whose image patches
enter through one linear projection (no image encoder) and an lm_head of its own, untied by default.
"""

from flopsreg.patterns.hf._towers import FUYU_PROJECTOR
from flopsreg.plugin import HFReader, HFTower, hookimpl


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="fuyu", title="Fuyu", text_config="persimmon",
            summary="FuyuConfig: the decoder is its persimmon text_config; image patches enter through one linear projection",
            towers=(HFTower(part="projector", kind=FUYU_PROJECTOR, config="text_config"),),
        ),
    ]
