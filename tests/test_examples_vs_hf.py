"""Each bundled example agrees with the model the Hugging Face loader builds from the same
published config (tests/data/hf/<name>.json): two independent readings of one config.

Skipped when the loader is not installed or an example has no config file there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import flopsreg

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
HF_DATA = ROOT / "tests" / "data" / "hf"
NAMES = sorted(path.stem for path in EXAMPLES.glob("*.toml"))
# Examples whose config is a transformers class's defaults (the class docstring's checkpoint), saved
# under a name that says so (tests/data/hf/SOURCES.md).
CONFIG_OF = {"deepseek-v4-flash": "deepseek-v4-defaults", "gemma-3n-e4b": "gemma-3n-e4b-defaults"}
LENGTHS = (1000, 4096, 20000)  # below, at and beyond the windows (128, 1024, 4096) and chunk (8192)


@pytest.mark.parametrize("name", NAMES)
def test_example_equals_hf_loader_at_three_lengths(registry, name):
    pytest.importorskip("flopsreg.readers.hf")
    config = HF_DATA / f"{CONFIG_OF.get(name, name)}.json"
    if not config.exists():
        pytest.skip(f"no published config tests/data/hf/{name}.json")
    example = flopsreg.Model.from_toml(EXAMPLES / f"{name}.toml")
    loaded = flopsreg.Model.from_hf_config(config)
    for s in LENGTHS:
        ours, theirs = registry.evaluate(example, seq_len=s), registry.evaluate(loaded, seq_len=s)
        assert theirs.forward == ours.forward, s
        # and layer by layer: the same patterns and FLOPs at the same indices
        assert [(layer.patterns, layer.flops) for layer in theirs.layers] == [(layer.patterns, layer.flops) for layer in ours.layers], s
