"""Drop-in replacements for other systems' FLOPs functions, with the same signatures.

Each takes an extra ``convention`` keyword: ``"exact"`` (the default) counts what the attention
mask lets through; the system's own name reproduces its number to the last digit.
"""
