"""Hugging Face readers of ``qwen2_vl``, ``qwen2_5_vl``, ``qwen3_vl`` (and their ``*_text`` configs) and
``qwen3_vl_moe``: the Qwen2 / Qwen3 / Qwen3-MoE decoder of each text_config, the ViT beside it with its image rule (FLOPs for the
images a request carries: :mod:`flopsreg.patterns.hf._qwen_vit`)."""

from flopsreg.patterns.hf._towers import QWEN2_5_VL_VISION, QWEN2_VL_VISION, QWEN3_VL_VISION
from flopsreg.patterns.hf.qwen import qwen2_5_vl_text, qwen3
from flopsreg.plugin import HFReader, HFTower, hookimpl

# Qwen2VLTextConfig, Qwen2_5_VLTextConfig and Qwen3VLTextConfig build the decoders of Qwen2Config and Qwen3Config
# (q/k/v biases; q/k RMSNorms of head_dim), with multimodal rotary positions (no weights, no matmul FLOPs).
QWEN2_VISION = HFTower(part="vision", kind=QWEN2_VL_VISION, config="vision_config")
QWEN2_5_VISION = HFTower(part="vision", kind=QWEN2_5_VL_VISION, config="vision_config")
QWEN3_VISION = HFTower(part="vision", kind=QWEN3_VL_VISION, config="vision_config")
# Qwen2VLConfig / Qwen2_5_VLConfig.__post_init__ ("Hub configs are saved as flat dicts"): without a
# text_config, the top-level keys its text config class's __init__ takes, and the rotary ones,
# become the text_config (the published configs are flat). tie_word_embeddings is not among them:
# it stays the wrapper's, and the wrapper forwards a text_config's true to its own, so either ties.
QWEN2_VL_FLAT = (
    "architectures", "attention_dropout", "bos_token_id", "chunk_size_feed_forward", "dtype", "eos_token_id", "hidden_act",
    "hidden_size", "id2label", "initializer_range", "intermediate_size", "is_encoder_decoder", "label2id", "layer_types",
    "max_position_embeddings", "max_window_layers", "num_attention_heads", "num_hidden_layers", "num_key_value_heads",
    "output_hidden_states", "pad_token_id", "problem_type", "return_dict", "rms_norm_eps", "rope_parameters", "sliding_window",
    "transformers_version", "use_cache", "use_sliding_window", "vocab_size", "rope_scaling", "rope_theta",
)


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="qwen2_vl_text", title="Qwen2-VL", read=qwen2_5_vl_text,
                 summary="Qwen2VLTextConfig: the qwen2 decoder (q/k/v biases, head_dim = hidden // heads), multimodal rotary positions"),
        HFReader(name="qwen2_vl", title="Qwen2-VL", text_config="qwen2_vl_text", towers=(QWEN2_VISION,), flat_text=QWEN2_VL_FLAT, tied_by="either",
                 summary="Qwen2VLConfig: the qwen2_vl_text decoder and the ViT (FLOPs for the images given)"),
        HFReader(name="qwen2_5_vl_text", title="Qwen2.5-VL", read=qwen2_5_vl_text,
                 summary="Qwen2_5_VLTextConfig: the qwen2 decoder (q/k/v biases, head_dim = hidden // heads), multimodal rotary positions"),
        HFReader(name="qwen2_5_vl", title="Qwen2.5-VL", text_config="qwen2_5_vl_text", towers=(QWEN2_5_VISION,), flat_text=QWEN2_VL_FLAT, tied_by="either",
                 summary="Qwen2_5_VLConfig: the qwen2_5_vl_text decoder and the windowed ViT (FLOPs for the images given)"),
        HFReader(name="qwen3_vl_text", title="Qwen3-VL", read=qwen3,
                 summary="Qwen3VLTextConfig: the qwen3 decoder (q/k norms), multimodal rotary positions"),
        HFReader(name="qwen3_vl", title="Qwen3-VL", text_config="qwen3_vl_text", towers=(QWEN3_VISION,), tied_by="wrapper",
                 summary="Qwen3VLConfig: the qwen3_vl_text decoder and the deepstack ViT (FLOPs for the images given)"),
        # Qwen3VLMoeConfig: tie_word_embeddings false, the head tied by the wrapper's alone (PreTrainedModel
        # reads self.config's; the text config's default true is not forwarded). Its ViT is Qwen3-VL's.
        HFReader(name="qwen3_vl_moe", title="Qwen3-VL-MoE", text_config="qwen3_vl_moe_text", towers=(QWEN3_VISION,), tied_by="wrapper",
                 summary="Qwen3VLMoeConfig: the qwen3_vl_moe_text decoder and the deepstack ViT (FLOPs for the images given)"),
    ]
