import pytest
from eager import eager_registry as make_eager_registry

import flopsreg


@pytest.fixture(scope="session")
def eager_registry() -> flopsreg.Registry:
    """The built-ins and the ``eager`` convention the recorded forwards are counted with (a module
    that needs more of transformers' eager paths declares its own)."""
    return make_eager_registry()
