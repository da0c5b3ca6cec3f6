"""Make the test session immune to installed plugins, and fail early, with the fix, when flopsreg is missing.

Set before any flopsreg import (the doctests call Registry.default()); tests that exercise
entry-point loading remove the variable themselves.
"""

import os

os.environ["FLOPSREG_DISABLE_PLUGIN_AUTOLOAD"] = "1"

try:
    import flopsreg.patterns  # noqa: F401
except ModuleNotFoundError as exc:  # pragma: no cover - only on a fresh clone
    raise SystemExit(
        f"flopsreg is not installed ({exc}); run: pip install -e '.[test]' (or pip install '.[test]')"
    ) from exc

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own empty cache of compiled models, never the user's."""
    monkeypatch.setenv("FLOPSREG_CACHE_DIR", str(tmp_path_factory.mktemp("flopsreg-cache")))
