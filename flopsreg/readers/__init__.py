"""Readers that turn model descriptions (flopsreg TOML, ...) into :class:`flopsreg.Model`."""
