"""What the Hugging Face readers of the linear-attention and SSM hybrids share (private: not a
plugin): layer-type lists read as transformers 5.24 reads them, and each mixer's parameters."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from flopsreg.patterns._mixer_common import CONV_KERNEL, SCAN_CHUNK
from flopsreg.patterns.gated_deltanet import KEY_DIM, KEY_HEADS, VALUE_DIM, VALUE_HEADS
from flopsreg.patterns.mamba2 import GROUPS, HEAD_DIM, HEADS, STATE
from flopsreg.plugin import Fields, Layers, did_you_mean

# configuration_utils.py _LEGACY_LAYER_TYPE_REMAP: every config's layer types are remapped at load.
LEGACY = {"mamba": "linear_attention", "attention": "full_attention"}
# torch_chunk_gated_delta_rule and chunk_kimi_delta_attention are called without chunk_size: 64.
TORCH_DELTA_CHUNK = 64


def type_list(c: Fields, field: str, allowed: Iterable[str], layers: int | None = None) -> list[str] | None:
    """The layer-type strings of *field* (legacy names remapped), each in *allowed*, one per layer
    when *layers* is given; None when absent or null."""
    value = c.data.get(field)
    if value is None:
        return None
    allowed = tuple(allowed)
    if not isinstance(value, list):
        raise c.error(field, f" = {value!r}: expected a list of strings")
    if layers is not None and len(value) != layers:
        raise c.error(field, f": {len(value)} entries but num_hidden_layers = {layers}; expected one per layer")
    types = []
    for i, item in enumerate(value):
        item = LEGACY.get(item, item) if isinstance(item, str) else item
        if item not in allowed:
            raise c.error(
                f"{field}[{i}]",
                f" = {value[i]!r}: unsupported for model_type {c.model_type}{did_you_mean(str(value[i]), allowed)} "
                f"(expected one of: {', '.join(allowed)})",
            )
        types.append(item)
    return types


def renamed(types: Iterable[str], names: Mapping[str, str]) -> Layers[str]:
    """*types* with each config string replaced by the layer type flopsreg declares for it."""
    return Layers.of(types).map(names.__getitem__)


def gdn_params(c: Fields, *, key_heads: int | None = None, value_heads: int | None = None,
               key_dim: int | None = None, value_dim: int | None = None) -> dict[str, int]:
    """Gated DeltaNet's parameters from the linear_* fields (explicit arguments: defaults the
    config class derives, which the reader computes)."""
    return {
        KEY_HEADS.name: key_heads if key_heads is not None else c.int("linear_num_key_heads"),
        VALUE_HEADS.name: value_heads if value_heads is not None else c.int("linear_num_value_heads"),
        KEY_DIM.name: key_dim if key_dim is not None else c.int("linear_key_head_dim"),
        VALUE_DIM.name: value_dim if value_dim is not None else c.int("linear_value_head_dim"),
        # linear_conv_kernel_dim: a field with default 4 in every Gated DeltaNet config class.
        CONV_KERNEL.name: c.int_or_default("linear_conv_kernel_dim", 4),
        SCAN_CHUNK.name: TORCH_DELTA_CHUNK,
    }


def refuse_unless(c: Fields, field: str, expected: bool, default: bool, why: str) -> None:
    """Refuse a boolean *field* (class default *default*) whose value the patterns do not count."""
    value = c.bool(field, default=default)
    if value != expected:
        raise c.error(field, f" = {str(value).lower()}: {why}; only {str(expected).lower()} is supported")


def mamba_params(c: Fields, inner: int) -> dict[str, int]:
    """Mamba2 of inner width *inner* from Falcon-H1's and Granite 4.0-H's mamba_* fields;
    mamba_d_head "auto" is inner / mamba_n_heads."""
    refuse_unless(c, "mamba_proj_bias", False, False, "in_proj and out_proj biases are not in the mamba2 patterns' weights")
    refuse_unless(c, "mamba_conv_bias", True, True, "the mamba2 conv patterns hold a bias per channel")
    heads = c.int("mamba_n_heads")
    head_dim = inner // heads if c.data.get("mamba_d_head", "auto") == "auto" else c.int("mamba_d_head")
    if heads * head_dim != inner:
        raise c.error("mamba_d_head", f" = {head_dim}: mamba_n_heads x mamba_d_head = {heads * head_dim}, but the Mamba2 inner width is {inner}")
    return {
        HEADS.name: heads,
        HEAD_DIM.name: head_dim,
        STATE.name: c.int("mamba_d_state"),
        GROUPS.name: c.int("mamba_n_groups"),
        CONV_KERNEL.name: c.int("mamba_d_conv"),
        SCAN_CHUNK.name: c.int("mamba_chunk_size"),
    }
