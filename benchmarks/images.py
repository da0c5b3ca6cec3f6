"""What images add to an evaluation, and the tower's closed forms compiled against sympy.

For Qwen3-VL-8B, Qwen2.5-VL-7B (windowed layers: floor, Mod and Min in its forms) and Gemma 3 4B,
with two images (720x1280 and 480x640) and 1000 text tokens, each timed in one run:
- ``text``: ``reg.evaluate(model, seq_len=1000)`` (the reference);
- ``images``: ``reg.evaluate(model, seq_len=1000, images=IMAGES)``: planning, the tower and the
  language model over text and image tokens;
- ``tower``: ``tower_flops(kind, dims, grids)``, the kind's closed forms as code compiled once;
- ``sympy``: the same forms with the dims and each grid substituted by sympy (``subs``), as the
  engine evaluated them before they were compiled (checked equal to ``tower`` first).
The first call of each model (``first``: composing the model, compiling its forms) is timed apart.
Prints microseconds per call, best of 7 runs of 50 calls, and the ratios ``images / text`` and
``sympy / tower``.

    python benchmarks/images.py
"""

from __future__ import annotations

import time

import flopsreg
from flopsreg.engine.media import tower_flops, tower_kinds
from flopsreg.plugin import IMAGE_GRID

SEQ_LEN = 1000
IMAGES = [(720, 1280), (480, 640)]
CALLS = 50
_QWEN_TEXT = {"num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936}
MODELS = {
    "Qwen3-VL-8B": {
        "model_type": "qwen3_vl",
        "text_config": {"model_type": "qwen3_vl_text", "hidden_size": 4096, "intermediate_size": 12288,
                        "num_hidden_layers": 36, **_QWEN_TEXT},
        "vision_config": {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "num_heads": 16, "patch_size": 16,
                          "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 4096,
                          "num_position_embeddings": 2304, "deepstack_visual_indexes": [8, 16, 24]},
    },
    "Qwen2.5-VL-7B": {
        "model_type": "qwen2_5_vl",
        "text_config": {"model_type": "qwen2_5_vl_text", "hidden_size": 3584, "intermediate_size": 18944,
                        "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064},
        "vision_config": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16, "patch_size": 14,
                          "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 3584, "window_size": 112,
                          "fullatt_block_indexes": [7, 15, 23, 31]},
    },
    "Gemma-3-4B": {
        "model_type": "gemma3", "mm_tokens_per_image": 256,
        "text_config": {"model_type": "gemma3_text", "hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 34,
                        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 1024},
        "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 4304,
                          "num_hidden_layers": 27, "num_attention_heads": 16, "image_size": 896, "patch_size": 14,
                          "vision_use_head": False},
    },
}


def by_sympy(kind, dims, grids) -> dict[str, int]:
    """The kind's closed forms, the dims then each grid substituted by sympy, summed over the grids."""
    values = {dim.symbol: dims[dim.name] for dim in kind.dims}
    flops = {}
    for piece, form in kind.closed_forms().items():
        at_dims = form.subs(values)
        flops[piece] = int(sum(at_dims.subs(dict(zip(IMAGE_GRID, grid, strict=True))) for grid in grids))
    return flops


def best(call, repeat: int = 7) -> float:
    """Microseconds per call of *call*: the fastest of *repeat* runs of CALLS calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(CALLS):
            call()
        times.append(time.perf_counter() - start)
    return min(times) / CALLS * 1e6


def main() -> None:
    reg = flopsreg.Registry(load_entry_points=False)
    print(f"{'model':<15}{'first':>11}{'text':>10}{'images':>10}{'tower':>9}{'sympy':>10}{'images/text':>13}{'sympy/tower':>13}")
    for name, config in MODELS.items():
        model = flopsreg.Model.from_hf_config(config, registry=reg)
        start = time.perf_counter()
        result = reg.evaluate(model, seq_len=SEQ_LEN, images=IMAGES)
        first = (time.perf_counter() - start) * 1e6
        kind = tower_kinds(model, reg.hf_readers)[result.images.part]
        dims, grids = model.towers[result.images.part].dims, [plan.grid for plan in result.images.plans]
        assert by_sympy(kind, dims, grids) == tower_flops(kind, dims, grids) == dict(result.images.flops)
        text = best(lambda model=model: reg.evaluate(model, seq_len=SEQ_LEN))
        images = best(lambda model=model: reg.evaluate(model, seq_len=SEQ_LEN, images=IMAGES))
        tower = best(lambda kind=kind, dims=dims, grids=grids: tower_flops(kind, dims, grids))
        slow = best(lambda kind=kind, dims=dims, grids=grids: by_sympy(kind, dims, grids), repeat=3)
        print(f"{name:<15}{first:>9.0f}us{text:>8.0f}us{images:>8.0f}us{tower:>7.1f}us{slow:>8.0f}us"
              f"{images / text:>13.2f}{slow / tower:>13.0f}")


if __name__ == "__main__":
    main()
