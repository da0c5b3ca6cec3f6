"""The installed package, however it was installed (editable or from a wheel), is complete.

These tests hold for any correct install and read the package where Python imports it from,
never the source tree, so that .ci/run can also run them against an installed wheel from a
folder holding only copies of tests/, docs/, examples/ and README.md.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import flopsreg
import flopsreg.examples
import flopsreg.patterns

ROOT = Path(__file__).resolve().parent.parent  # the source tree, or the copy CI tests a wheel from
INSTALLED = Path(flopsreg.__file__).parent


def _raise(name: str) -> None:
    """pkgutil.walk_packages ignores a subpackage that fails to import unless told otherwise."""
    raise ImportError(f"cannot import {name}")


def _installed_module_names() -> list[str]:
    """Every module and subpackage of the installed flopsreg, found by walking the import system."""
    # An editable install maps flopsreg.patterns and flopsreg.examples from other folders, so a
    # walk of flopsreg's own folder does not reach them: walk each of the three.
    roots = (flopsreg, flopsreg.patterns, flopsreg.examples)
    found = [root.__name__ for root in roots]
    for root in roots:
        found += [m.name for m in pkgutil.walk_packages(root.__path__, f"{root.__name__}.", onerror=_raise)]
    return sorted(set(found))


def test_every_installed_module_imports():
    names = _installed_module_names()
    # __main__ runs the command line when imported; the console-script test below runs it.
    for name in [n for n in names if n != "flopsreg.__main__"]:
        importlib.import_module(name)
    assert {"flopsreg.__main__", "flopsreg.readers", "flopsreg.integrations"} <= set(names)


@pytest.mark.parametrize(
    "name",
    ["flopsreg.readers.hf", "flopsreg.readers.megatron", "flopsreg.integrations.megatron", "flopsreg.integrations.slime"],
)
def test_readers_and_framework_drop_ins_are_installed(name):
    assert importlib.import_module(name).__name__ == name


def test_every_builtin_pattern_module_is_a_plugin_and_nothing_else_is_registered(registry):
    folder = Path(flopsreg.patterns.__file__).parent
    files = (p.relative_to(folder).with_suffix("").parts for p in folder.rglob("*.py"))
    modules = sorted(".".join(parts) for parts in files if not parts[-1].startswith("_"))
    owners = {registry.plugin_of(p).removeprefix("flopsreg.patterns.") for p in registry.patterns}
    declaring = {"quantities", "slots", "token_mixers"}  # the built-in quantities, slots, slot groups and their selectors; no patterns
    declaring |= {m for m in modules if m.startswith("megatron.")}  # Megatron-LM argument readers; no patterns
    declaring |= {m for m in modules if m.startswith("hf.")}  # Hugging Face readers and layer types; no patterns
    assert sorted(owners | declaring) == modules
    assert set(registry.quantities) == {"pairs", "qk_dim", "v_dim", "kv_tokens", "ffn_matrices", "index_pairs", "compressed_index_pairs", "index_pool_pairs", "context_pairs", "layer_positions"}


def test_installed_patterns_register_every_documented_builtin(registry):
    """docs/patterns.md, generated in the source tree, names every built-in pattern."""
    documented = re.findall(r"^### `(\w+)`$", (ROOT / "docs" / "patterns.md").read_text(encoding="utf-8"), re.M)
    assert documented
    assert sorted(p.name for p in registry.patterns) == sorted(documented)


def test_installed_examples_are_the_bundled_model_files():
    installed = {p.name: p.read_bytes() for p in Path(flopsreg.examples.__file__).parent.glob("*.toml")}
    bundled = {p.name: p.read_bytes() for p in (ROOT / "examples").glob("*.toml")}
    assert bundled
    assert installed == bundled


def test_package_is_marked_typed():
    """PEP 561: type checkers read flopsreg's annotations only when py.typed ships beside it."""
    assert (INSTALLED / "py.typed").is_file()


def test_metadata_declares_the_mit_license_as_an_spdx_expression():
    metadata = importlib.metadata.metadata("flopsreg")
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert not [c for c in metadata.get_all("Classifier") or [] if c.startswith("License ::")]


def test_version_comes_from_the_package_metadata():
    assert flopsreg.__version__ == importlib.metadata.version("flopsreg")


def test_public_api_is_sorted_and_importable():
    assert flopsreg.__all__ == sorted(flopsreg.__all__)
    for name in flopsreg.__all__:
        assert getattr(flopsreg, name) is not None


@pytest.mark.slow
def test_console_script_and_module_entry_point_agree():
    by_module = subprocess.run([sys.executable, "-m", "flopsreg", "patterns", "--format", "json"], capture_output=True, text=True, check=True)
    script = Path(sys.executable).with_name("flopsreg")
    by_script = subprocess.run([str(script), "patterns", "--format", "json"], capture_output=True, text=True, check=True)
    assert by_module.stdout == by_script.stdout


@pytest.mark.slow
def test_a_bundled_example_evaluates_from_any_folder(tmp_path):
    """The README's first command, run where no examples/ folder is at hand."""
    script = Path(sys.executable).with_name("flopsreg")
    run = subprocess.run([str(script), "eval", "llama-3-8b", "--seq-len", "4096"], cwd=tmp_path, capture_output=True, text=True)
    assert (run.returncode, run.stderr) == (0, "")
    assert "llama-3-8b" in run.stdout
