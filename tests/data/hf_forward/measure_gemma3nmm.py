"""Measure the parameters of Gemma 3n's towers (the timm MobileNetV5 vision tower, the USM
conformer audio encoder, the two multimodal embedders) beside its language model, for flopsreg's
tower kinds (patterns/hf/_gemma3n_towers.py); writes forward_gemma3nmm.json, which
tests/hf/test_gemma3nmm_forward.py compares flopsreg with.

Gemma3nForConditionalGeneration of transformers 5.24 is built on the meta device from the
class-default config, the published config of tests/data/hf and a tiny config with odd audio
widths, with measure_towers.py's ``measure`` (``sum(p.numel())`` of the whole model, of each
tower and of the ``nn.Embedding`` weights in it). The vision tower is timm's (its architecture
fixes it): timm 1.0.31 imports torchvision's names when imported, and MobileNetV5 uses none of
them, so a stand-in module named torchvision is enough to build it:
    PYTHONPATH=/tmp/timmonly:/tmp/tvshim:/tmp/pilonly /work/tf-venv/bin/python tests/data/hf_forward/measure_gemma3nmm.py
(/tmp/timmonly: ``pip install timm==1.0.31 --no-deps --target``; /tmp/tvshim/torchvision.py: the
stand-in; /tmp/pilonly: the system Pillow, which timm.data imports). Needs torch 2.13 and transformers 5.24 (not flopsreg dependencies).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import timm
import torch
import transformers
from transformers import AutoConfig

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from measure_towers import HF, measure  # noqa: E402

PARTS = {"vision": "model.vision_tower.", "vision_embedder": "model.embed_vision.",
         "audio": "model.audio_tower.", "audio_embedder": "model.embed_audio."}
TEXT = {"model_type": "gemma3n_text", "hidden_size": 44, "intermediate_size": 58, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 12, "vocab_size": 97, "num_kv_shared_layers": 0, "hidden_size_per_layer_input": 6,
        "vocab_size_per_layer_input": 97, "laurel_rank": 5, "layer_types": ["sliding_attention", "full_attention"]}
# Odd audio widths, kernels and strides that differ per axis (the frequency axis sizes the input
# projection); the vision tower is MobileNetV5's whatever the config says (its output width is
# the architecture's 2048: hidden_size sizes the embedder only).
TINY = {
    "gemma3n": {"text_config": TEXT,
                "vision_config": {"vocab_size": 7},
                "audio_config": {"hidden_size": 36, "conf_num_hidden_layers": 2, "conf_num_attention_heads": 5,
                                 "conf_conv_kernel_size": 3, "sscp_conv_channel_size": [6, 5], "input_feat_size": 23,
                                 "sscp_conv_kernel_size": [[3, 5], [2, 3]], "sscp_conv_stride_size": [[2, 3], [1, 2]],
                                 "vocab_size": 11}},
}


def main() -> int:
    warnings.filterwarnings("ignore")
    out = {"torch": torch.__version__, "transformers": transformers.__version__, "timm": timm.__version__, "device": "meta",
           "defaults": {}, "published": {}, "tiny": {}}
    config = AutoConfig.for_model("gemma3n")
    out["defaults"]["gemma3n"] = {"config": config.to_dict(), **measure(config, PARTS)}
    for path in sorted(HF.glob("*.json")):
        data = json.loads(path.read_text())
        if data.get("model_type") == "gemma3n":
            config = AutoConfig.for_model("gemma3n", **{k: v for k, v in data.items() if k != "model_type"})
            out["published"][path.stem] = measure(config, PARTS)
    for name, data in TINY.items():
        config = AutoConfig.for_model("gemma3n", **data)
        out["tiny"][name] = {"config": config.to_dict(), **measure(config, PARTS)}  # as transformers resolved it
    for group in ("defaults", "published", "tiny"):
        for name, record in out[group].items():
            print(group, name, record["total"], {part: p["parameters"] for part, p in record["parts"].items()}, file=sys.stderr)
    (HERE / "forward_gemma3nmm.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
