"""flopsreg's own entry points read from its entry_points.txt, without importlib.metadata."""

from __future__ import annotations

import sys

from flopsreg.plugins.entry_points import own_entry_point


def _distribution(folder, name: str, text: str):
    info = folder / name
    info.mkdir(parents=True)
    (info / "entry_points.txt").write_text(text, encoding="utf-8")


def test_the_first_flopsreg_distribution_on_the_path_names_the_object(tmp_path, monkeypatch):
    _distribution(tmp_path / "a", "flopsreg-9.0.dist-info", "[console_scripts]\ntoml = os:sep\n\n[flopsreg.readers]\ntoml = os.path:join\n")
    _distribution(tmp_path / "b", "flopsreg-8.0.dist-info", "[flopsreg.readers]\ntoml = os:getcwd\n")
    _distribution(tmp_path / "a", "other-1.0.dist-info", "[flopsreg.readers]\ntoml = os:getpid\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "a"), str(tmp_path / "b"), *sys.path])
    import os.path

    assert own_entry_point("flopsreg.readers", "toml") is os.path.join
    assert own_entry_point("flopsreg.readers", "other") is None
    assert own_entry_point("console_scripts", "toml") == os.sep


def test_the_installed_flopsreg_registers_every_reader():
    from flopsreg.readers.hf import load_hf_config
    from flopsreg.readers.toml import dump_model

    assert own_entry_point("flopsreg.readers", "to_toml") is dump_model
    assert own_entry_point("flopsreg.readers", "hf_config") is load_hf_config
