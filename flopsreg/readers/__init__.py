"""Readers that turn model descriptions into :class:`flopsreg.Model`: flopsreg TOML files,
Hugging Face ``config.json`` files and Megatron-LM arguments.

Importing this package makes them the readers behind ``Model.from_toml``,
``Model.from_hf_config``, ``Model.from_hf``, ``Model.from_megatron_args`` and ``Model.to_toml`` (the model module
cannot import them: they import it).
"""

from typing import Any

from flopsreg.model import READERS, Model
from flopsreg.readers.toml import dump_model, load_model, parse_model


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


READERS.update(
    toml=load_model,
    toml_string=parse_model,
    hf_config=load_hf_config,
    hf=load_hf,
    megatron_args=load_megatron_args,
    to_toml=dump_model,
)
