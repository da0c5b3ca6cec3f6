"""docs/patterns.md is generated from the registry and must be current."""

import importlib.util
from pathlib import Path

import flopsreg

SCRIPT = Path(__file__).resolve().parent.parent / "docs" / "make_patterns_reference.py"


def test_patterns_reference_is_current():
    spec = importlib.util.spec_from_file_location("make_patterns_reference", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    expected = module.render(flopsreg.Registry(load_entry_points=False))
    assert module.TARGET.read_text(encoding="utf-8") == expected, "run: python docs/make_patterns_reference.py"
