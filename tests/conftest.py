import pytest

import flopsreg
from flopsreg.plugins.loader import builtin_plugins

# Import the built-in plugins as every registry does (sympy's evaluation off, expressions made
# canonical where used) before any test module imports one of them with evaluation on, so the
# suite runs against what users run. tests/plugins/test_lazy_builtins.py compares the two imports.
builtin_plugins()

# Recorded data and the scripts that recorded it (they need torch and transformers): not tests.
collect_ignore_glob = ["data/*"]
# Megatron-LM's FLOPs function copied verbatim: its docstrings' examples are Megatron-LM's, not doctests here.
collect_ignore = ["megatron_lm_d98e8a64.py"]


@pytest.fixture(scope="session")
def registry() -> flopsreg.Registry:
    """The built-in patterns only: installed third-party plugins must not change test numbers."""
    return flopsreg.Registry(load_entry_points=False)
