"""Built-in pattern plugins: one module per pattern, each a plain flopsreg plugin.

Every module here (except those starting with ``_``) is registered by
:meth:`flopsreg.Registry.default` through the same ``flopsreg_register_patterns`` hook a
third-party plugin implements; dropping a new module in this folder adds its patterns.
"""
