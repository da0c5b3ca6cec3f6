import sys
from pathlib import Path

import pytest

import flopsreg

sys.path.insert(0, str(Path(__file__).parent))  # so tests can `import oracles`

# Recorded data and the scripts that recorded it (they need torch and transformers): not tests.
collect_ignore_glob = ["data/*"]


@pytest.fixture(scope="session")
def registry() -> flopsreg.Registry:
    """The built-in patterns only: installed third-party plugins must not change test numbers."""
    return flopsreg.Registry(load_entry_points=False)
