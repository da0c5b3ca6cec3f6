"""Readers that turn model descriptions into :class:`flopsreg.Model`: flopsreg TOML files,
Hugging Face ``config.json`` files and Megatron-LM arguments.

Importing this package makes them the readers behind ``Model.from_toml``,
``Model.from_hf_config``, ``Model.from_megatron_args`` and ``Model.to_toml`` (the model module
cannot import them: they import it).
"""

from flopsreg.model import READERS
from flopsreg.readers.hf import load_hf_config
from flopsreg.readers.megatron import load_megatron_args
from flopsreg.readers.toml import dump_model, load_model, parse_model

READERS.update(
    toml=load_model,
    toml_string=parse_model,
    hf_config=load_hf_config,
    megatron_args=load_megatron_args,
    to_toml=dump_model,
)
