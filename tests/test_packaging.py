"""The installed package is this working tree, with the layout the design promises."""

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import flopsreg
import flopsreg.examples
import flopsreg.patterns

REPO = Path(__file__).resolve().parent.parent


def test_patterns_and_examples_import_from_the_working_tree():
    """Catches a stale non-editable install: run `pip install -e '.[test]'`."""
    assert Path(flopsreg.__file__).parent == REPO / "flopsreg"
    assert Path(flopsreg.patterns.__file__).parent == REPO / "patterns"
    assert Path(flopsreg.examples.__file__).parent == REPO / "examples"


def test_version_comes_from_the_package_metadata():
    assert flopsreg.__version__ == importlib.metadata.version("flopsreg")


def test_public_api_is_sorted_and_importable():
    assert flopsreg.__all__ == sorted(flopsreg.__all__)
    for name in flopsreg.__all__:
        assert getattr(flopsreg, name) is not None


def test_every_builtin_pattern_module_is_a_plugin_and_nothing_else_is_registered():
    registry = flopsreg.Registry(load_entry_points=False)
    modules = sorted(p.stem for p in (REPO / "patterns").glob("*.py") if not p.stem.startswith("_"))
    owners = sorted({registry.plugin_of(p).removeprefix("flopsreg.patterns.") for p in registry.patterns})
    assert owners == modules


def test_console_script_and_module_entry_point_agree():
    by_module = subprocess.run([sys.executable, "-m", "flopsreg", "patterns", "--format", "json"], capture_output=True, text=True, check=True)
    script = Path(sys.executable).with_name("flopsreg")
    by_script = subprocess.run([str(script), "patterns", "--format", "json"], capture_output=True, text=True, check=True)
    assert by_module.stdout == by_script.stdout
