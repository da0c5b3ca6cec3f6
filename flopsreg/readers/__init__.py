"""Readers that turn model descriptions into :class:`flopsreg.Model`: flopsreg TOML files,
Hugging Face ``config.json`` files and Megatron-LM arguments.

``Model.from_toml``, ``from_toml_string``, ``to_toml``, ``from_hf_config``, ``from_hf`` and
``from_megatron_args`` reach them by name through flopsreg's entry points of the group
``flopsreg.readers`` (pyproject.toml): this layer imports the model, never the reverse.
"""

from typing import Any

from flopsreg.model import Model
from flopsreg.readers.toml import dump_model, load_model, parse_model

__all__ = ["dump_model", "load_hf_config", "load_megatron_args", "load_model", "parse_model"]


def load_hf_config(config: Any, **options: Any) -> Model:
    """:func:`flopsreg.readers.hf.load_hf_config`, imported on first use (it loads the plugins)."""
    from flopsreg.readers.hf import load_hf_config as load

    return load(config, **options)


def load_hf(source: str, *, revision: str | None = None, **options: Any) -> Model:
    """A model from a local ``config.json`` (or a folder holding one) or a Hugging Face Hub id,
    named after the Hub id unless ``name=`` is given; see :mod:`flopsreg.readers.hub`."""
    from flopsreg.readers.hub import config_source

    path, repo_id = config_source(source, revision)
    if repo_id is not None:
        options.setdefault("name", repo_id)
    return load_hf_config(path, **options)


def load_megatron_args(args: Any, **options: Any) -> Model:
    """:func:`flopsreg.readers.megatron.load_megatron_args`, imported on first use (it loads the plugins)."""
    from flopsreg.readers.megatron import load_megatron_args as load

    return load(args, **options)

