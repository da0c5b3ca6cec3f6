"""Hugging Face readers of ``qwen2_vl``, ``qwen2_5_vl`` and ``qwen3_vl`` (and their ``*_text`` configs): the
Qwen2 / Qwen3 decoder of each text_config, the ViT beside it with its image rule (FLOPs for the
images a request carries: :mod:`flopsreg.patterns.hf._qwen_vit`)."""

from flopsreg.patterns.hf._towers import QWEN2_5_VL_VISION, QWEN2_VL_VISION, QWEN3_VL_VISION
from flopsreg.patterns.hf.qwen import qwen2_5_vl_text, qwen3
from flopsreg.plugin import HFReader, HFTower, hookimpl

# Qwen2VLTextConfig, Qwen2_5_VLTextConfig and Qwen3VLTextConfig build the decoders of Qwen2Config and Qwen3Config
# (q/k/v biases; q/k RMSNorms of head_dim), with multimodal rotary positions (no weights, no matmul FLOPs).
QWEN2_VISION = HFTower(part="vision", kind=QWEN2_VL_VISION, config="vision_config")
QWEN2_5_VISION = HFTower(part="vision", kind=QWEN2_5_VL_VISION, config="vision_config")
QWEN3_VISION = HFTower(part="vision", kind=QWEN3_VL_VISION, config="vision_config")


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="qwen2_vl_text", title="Qwen2-VL", read=qwen2_5_vl_text,
                 summary="Qwen2VLTextConfig: the qwen2 decoder (q/k/v biases, head_dim = hidden // heads), multimodal rotary positions"),
        HFReader(name="qwen2_vl", title="Qwen2-VL", text_config="qwen2_vl_text", towers=(QWEN2_VISION,),
                 summary="Qwen2VLConfig: the qwen2_vl_text decoder and the ViT (FLOPs for the images given)"),
        HFReader(name="qwen2_5_vl_text", title="Qwen2.5-VL", read=qwen2_5_vl_text,
                 summary="Qwen2_5_VLTextConfig: the qwen2 decoder (q/k/v biases, head_dim = hidden // heads), multimodal rotary positions"),
        HFReader(name="qwen2_5_vl", title="Qwen2.5-VL", text_config="qwen2_5_vl_text", towers=(QWEN2_5_VISION,),
                 summary="Qwen2_5_VLConfig: the qwen2_5_vl_text decoder and the windowed ViT (FLOPs for the images given)"),
        HFReader(name="qwen3_vl_text", title="Qwen3-VL", read=qwen3,
                 summary="Qwen3VLTextConfig: the qwen3 decoder (q/k norms), multimodal rotary positions"),
        HFReader(name="qwen3_vl", title="Qwen3-VL", text_config="qwen3_vl_text", towers=(QWEN3_VISION,),
                 summary="Qwen3VLConfig: the qwen3_vl_text decoder and the deepstack ViT (FLOPs for the images given)"),
    ]
