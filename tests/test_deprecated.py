"""The module paths and names of 0.1 still work for one release, with a DeprecationWarning naming the new one."""

from __future__ import annotations

import importlib
import sys

import pytest

import flopsreg
from flopsreg._deprecated import MOVED, RENAMED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_warns_and_gives_the_moved_module_itself(old, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=rf"^{old} is deprecated and will be removed in 0\.3: import {MOVED[old]}$"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])


def test_the_paths_named_in_the_docs_are_among_them():
    assert {"flopsreg.compile", "flopsreg.symbols", "flopsreg.pattern", "flopsreg.testing", "flopsreg.api"} <= MOVED.keys()
    assert MOVED["flopsreg.latex"] == "flopsreg.render.tex"
    assert MOVED["flopsreg.compile"] == "flopsreg.formula.exact" and MOVED["flopsreg.runtime"] == "flopsreg.formula.tree"


def test_a_path_that_never_existed_is_still_not_found():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("flopsreg.no_such_module")


@pytest.mark.parametrize(("module", "old"), [(module, old) for module, names in sorted(RENAMED.items()) for old in sorted(names)])
def test_an_old_name_warns_and_gives_the_new_object(module, old):
    path, _, new = RENAMED[module][old].partition(":")
    with pytest.warns(DeprecationWarning, match=rf"^{module}\.{old} is deprecated and will be removed in 0\.3: use {path}\.{new}$"):
        value = getattr(importlib.import_module(module), old)
    assert value is getattr(importlib.import_module(path), new)


def test_the_plugin_loader_of_0_1_is_the_loader_of_0_2():
    from flopsreg.plugins.loader import PluginLoader

    with pytest.warns(DeprecationWarning, match="use flopsreg.plugins.loader.PluginLoader"):
        from flopsreg.registry import PluginRegistry
    assert PluginRegistry is PluginLoader and issubclass(flopsreg.Registry, PluginLoader)


def test_plan_the_earlier_name_of_a_selection_warns(registry):
    model = flopsreg.Model.example("llama-3-8b")
    with pytest.warns(DeprecationWarning, match="use Registry.select$"):
        selection = registry.plan(model)
    assert selection is registry.select(model)
    result = registry.evaluate(model, seq_len=8)
    with pytest.warns(DeprecationWarning, match="use Result.selection$"):
        assert result.plan is result.selection
    for old, new in (("ModelPlan", "ModelSelection"), ("Selection", "SlotSelection")):
        with pytest.warns(DeprecationWarning, match=f"use flopsreg.{new}$"):
            assert getattr(flopsreg, old) is getattr(flopsreg, new)


def test_the_image_names_of_the_media_path_warn_and_give_the_media_names(monkeypatch):
    from flopsreg.declarations.towers import MediaPlan, MediaRule
    from flopsreg.engine.media import Media, plan_media

    with pytest.warns(DeprecationWarning, match=r"^flopsreg\.plugin\.ImageRule is deprecated .*: use flopsreg\.plugin\.MediaRule$"):
        from flopsreg.plugin import ImageRule
    with pytest.warns(DeprecationWarning, match=r"use flopsreg\.plugin\.MediaPlan$"):
        from flopsreg.plugin import ImagePlan
    assert (ImageRule, ImagePlan) == (MediaRule, MediaPlan)
    with pytest.warns(DeprecationWarning, match=r"use flopsreg\.declarations\.towers\.MediaRule$"):
        from flopsreg.declarations.towers import ImageRule as towers_rule
    assert towers_rule is MediaRule
    monkeypatch.delitem(sys.modules, "flopsreg.engine.images", raising=False)
    with pytest.warns(DeprecationWarning) as caught:
        from flopsreg.engine.images import Images, plan_images
    assert [str(w.message).split(" is deprecated")[0] for w in caught] == [
        "flopsreg.engine.images", "flopsreg.engine.media.Images", "flopsreg.engine.media.plan_images",
    ]
    assert (Images, plan_images) == (Media, plan_media)


def test_an_unknown_name_of_the_plugin_api_is_still_an_attribute_error():
    import flopsreg.plugin

    with pytest.raises(AttributeError, match="'flopsreg.plugin' has no attribute 'ImageRules'"):
        flopsreg.plugin.ImageRules  # noqa: B018
