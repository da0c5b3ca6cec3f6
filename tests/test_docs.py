"""Every ```python block of the README and docs/ runs, in order, one namespace per file."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_python_blocks_run(path, monkeypatch):
    monkeypatch.chdir(ROOT)
    namespace: dict = {"__name__": f"docs_{path.stem}"}
    for block in BLOCK.findall(path.read_text(encoding="utf-8")):
        exec(compile(block, str(path), "exec"), namespace)  # noqa: S102 - our own docs


def _readme_namespace() -> dict:
    namespace: dict = {"__name__": "docs_readme"}
    for block in BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8")):
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - our own docs
    return namespace


def test_readme_sink_pattern_matches_a_brute_force_mask():
    """The README's plugin formula counts exactly the pairs of a window-plus-sinks mask."""
    from flopsreg.formula.exact import compile_exact

    pattern = _readme_namespace()["SINK_WINDOW"]
    formula = compile_exact(pattern.formula)
    for s in range(1, 30):
        for window in range(1, s + 3):
            for sinks in range(1, 6):
                brute = sum(
                    1
                    for q in range(s)
                    for k in range(q + 1)
                    if q - k < window or k < sinks
                )
                assert formula({"seq_len": s, "window": window, "sinks": sinks}) == brute, (s, window, sinks)


def test_every_hook_is_documented_in_the_plugin_guide():
    from flopsreg.plugins import hookspecs

    guide = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    hooks = [name for name in dir(hookspecs) if name.startswith("flopsreg_")]
    assert hooks == [
        "flopsreg_register_blocks",
        "flopsreg_register_conventions",
        "flopsreg_register_group_selectors",
        "flopsreg_register_hf_layer_types",
        "flopsreg_register_hf_readers",
        "flopsreg_register_megatron_readers",
        "flopsreg_register_patterns",
        "flopsreg_register_quantities",
        "flopsreg_register_slot_groups",
        "flopsreg_register_slots",
    ]
    for hook in hooks:
        assert f"`{hook}`" in guide, hook
