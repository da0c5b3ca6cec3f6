"""The module paths of 0.1 still import for one release, with a DeprecationWarning naming the new one."""

from __future__ import annotations

import importlib
import sys

import pytest

from flopsreg._deprecated import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_warns_and_gives_the_moved_module_itself(old, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=rf"^{old} is deprecated and will be removed in 0\.3: import {MOVED[old]}$"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])


def test_the_paths_named_in_the_docs_are_among_them():
    assert {"flopsreg.compile", "flopsreg.symbols", "flopsreg.pattern", "flopsreg.registry", "flopsreg.testing"} <= MOVED.keys()
    assert MOVED["flopsreg.latex"] == "flopsreg.render.tex"


def test_a_path_that_never_existed_is_still_not_found():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("flopsreg.no_such_module")
