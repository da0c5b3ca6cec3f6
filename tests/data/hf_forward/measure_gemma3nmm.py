"""Measure the parameters of Gemma 3n's towers (the timm MobileNetV5 vision tower, the USM
conformer audio encoder, the two multimodal embedders) beside its language model, and the vision
tower's forward FLOPs over one image, for flopsreg's tower kinds (patterns/hf/_gemma3n_towers.py);
writes forward_gemma3nmm.json, which tests/hf/test_gemma3nmm_forward.py compares flopsreg with.

The vision tower runs under FlopCounterMode at the published resolution, 768 x 768, and at the
model card's other sizes, 256 and 512 (the tower is the architecture's whatever the config says): a 1000 x 600 image through
SiglipImageProcessorPil resized to 768 x 768, as Gemma3nProcessor's image processor; recorded are
the FLOPs by module and operator, every Conv2d's shapes, kernel, stride, padding and groups (the
test counts the taps that fall on padding from them) and the output's shape.

Gemma3nForConditionalGeneration of transformers 5.24 is built on the meta device from the
class-default config, the published config of tests/data/hf and a tiny config with odd audio
widths ("models"), with measure_towers.py's ``measure`` (``sum(p.numel())`` of the whole model, of each
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
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig, SiglipImageProcessorPil, TimmWrapperModel

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


RESOLUTION = 768
# The other sizes the model card gives Gemma 3n's images; the processor resizes to any, the tower
# pools its 1/16 map to 16 x 16 whatever the size.
OTHER_RESOLUTIONS = (256, 512)


def vision_forward(resolution: int = RESOLUTION) -> dict:
    """The class-default vision tower over one real image at *resolution*: FlopCounterMode's counts
    by module (depth 3) and each convolution as it ran."""
    from PIL import Image  # the system Pillow (PYTHONPATH), as measure_towers5.py

    torch.manual_seed(0)
    tower = TimmWrapperModel(AutoConfig.for_model("gemma3n").vision_config).eval()
    processor = SiglipImageProcessorPil(size={"height": resolution, "width": resolution})
    pixels = torch.rand(600, 1000, 3, generator=torch.Generator().manual_seed(0))
    image = Image.fromarray((pixels * 255).to(torch.uint8).numpy())
    values = processor(images=[image], return_tensors="pt")["pixel_values"]
    convs = []

    def record(name):
        def hook(module, inputs, output):  # returns None: the output is left as it is
            convs.append({"name": name, "in": list(inputs[0].shape), "out": list(output.shape), "kernel": list(module.kernel_size),
                          "stride": list(module.stride), "padding": list(module.padding), "groups": module.groups,
                          "class": type(module).__name__})
        return hook

    for name, module in tower.named_modules():
        if isinstance(module, torch.nn.Conv2d):
            module.register_forward_hook(record(name))
    with torch.no_grad(), FlopCounterMode(display=False, depth=3) as counter:
        output = tower(pixel_values=values, do_pooling=False).last_hidden_state
    flops = {module: {str(op): n for op, n in ops.items()} for module, ops in counter.get_flop_counts().items()}
    return {"image": [600, 1000], "pixel_values": list(values.shape), "output": list(output.shape),
            "total": counter.get_total_flops(), "flops": flops, "convs": convs}


def main() -> int:
    warnings.filterwarnings("ignore")
    out = {"torch": torch.__version__, "transformers": transformers.__version__, "timm": timm.__version__, "device": "meta",
           "defaults": {}, "published": {}, "models": {}}
    config = AutoConfig.for_model("gemma3n")
    out["defaults"]["gemma3n"] = {"config": config.to_dict(), **measure(config, PARTS)}
    for path in sorted(HF.glob("*.json")):
        data = json.loads(path.read_text())
        if data.get("model_type") == "gemma3n":
            config = AutoConfig.for_model("gemma3n", **{k: v for k, v in data.items() if k != "model_type"})
            out["published"][path.stem] = measure(config, PARTS)
    for name, data in TINY.items():
        config = AutoConfig.for_model("gemma3n", **data)
        out["models"][name] = {"config": config.to_dict(), **measure(config, PARTS)}  # as transformers resolved it
    out["vision_forward"] = vision_forward()
    out["vision_forward_sizes"] = {str(size): vision_forward(size) for size in OTHER_RESOLUTIONS}
    print("vision forward", out["vision_forward"]["total"], out["vision_forward"]["output"], file=sys.stderr)
    for group in ("defaults", "published", "models"):
        for name, record in out[group].items():
            print(group, name, record["total"], {part: p["parameters"] for part, p in record["parts"].items()}, file=sys.stderr)
    (HERE / "forward_gemma3nmm.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
