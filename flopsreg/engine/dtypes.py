"""Number formats that weights, KV caches and states are stored in, and their exact sizes in bytes.

A block-scaled 4-bit format stores a block of elements with one shared scale: its bytes are counted
per block, scale included (MXFP4: 32 elements in 17 bytes, 4.25 bits each), rounded up to whole
blocks, so every count is an exact int. docs/memory.md defines each format with its source.
"""

from __future__ import annotations

from fractions import Fraction

import attrs

from flopsreg.errors import ModelError, did_you_mean

__all__ = ["DTYPES", "Dtype", "dtype"]


@attrs.frozen
class Dtype:
    """A storage format: *block* elements take *block_bytes* bytes, shared scales included."""

    name: str
    block: int  # elements sharing one scale (1: no scale)
    block_bytes: int
    definition: str

    @property
    def bits(self) -> Fraction:
        """Bits per element, scales included (4.25 for MXFP4)."""
        return Fraction(8 * self.block_bytes, self.block)

    def bytes(self, elements: int) -> int:
        """Bytes of *elements* elements: whole blocks, the last one rounded up."""
        return -(-elements // self.block) * self.block_bytes


_OCP_MX = "OCP Microscaling Formats (MX) Specification v1.0, 2023, sections 5.1-5.2"
_NVFP4 = "NVIDIA, 'Introducing NVFP4 for Efficient and Accurate Low-Precision Inference' (developer.nvidia.com blog, 2025); NVIDIA Transformer Engine docs"

DTYPES: dict[str, Dtype] = {
    d.name: d
    for d in (
        Dtype("fp32", 1, 4, "IEEE 754 binary32: 4 bytes"),
        Dtype("bf16", 1, 2, "bfloat16: 8 exponent bits, 7 mantissa bits; 2 bytes"),
        Dtype("fp16", 1, 2, "IEEE 754 binary16: 2 bytes"),
        Dtype("fp8", 1, 1, "an 8-bit float, E4M3 or E5M2 (OCP 8-bit floating point specification, 2023): 1 byte"),
        Dtype("fp8_e4m3", 1, 1, "8-bit float, 4 exponent and 3 mantissa bits (OCP OFP8 E4M3): 1 byte"),
        Dtype("fp8_e5m2", 1, 1, "8-bit float, 5 exponent and 2 mantissa bits (OCP OFP8 E5M2): 1 byte"),
        Dtype("int8", 1, 1, "8-bit integer: 1 byte"),
        Dtype("mxfp4", 32, 17, f"FP4 E2M1 in blocks of 32 with one E8M0 scale byte: 16 + 1 bytes per block, 4.25 bits each ({_OCP_MX})"),
        Dtype(
            "nvfp4",
            16,
            9,
            "FP4 E2M1 in blocks of 16 with one FP8 E4M3 scale: 8 + 1 bytes per block, 4.5 bits each; the one FP32 scale "
            f"per tensor (4 bytes) is not counted ({_NVFP4})",
        ),
    )
}


def dtype(name: str, field: str) -> Dtype:
    """The format called *name*; anything else is one :class:`ModelError` line naming *field*."""
    if isinstance(name, str) and name.strip().lower().replace("-", "_") in DTYPES:
        return DTYPES[name.strip().lower().replace("-", "_")]
    hint = did_you_mean(name, DTYPES) if isinstance(name, str) else ""
    raise ModelError(f"{field}: {name!r}: expected a number format, one of {', '.join(DTYPES)}{hint}")
