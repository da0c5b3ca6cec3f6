"""From a per-layer description (mask and MLP of every layer) to a readable :class:`Model`.

The Hugging Face and Megatron-LM readers say, for every decoder layer, which attention
mask it uses (``full``, ``sliding``, ``chunked``) and which MLP (``dense``, ``moe``). This
module names the distinct combinations as layer kinds and compresses the per-layer list into
the shortest plan (a ``first`` prefix plus a repeating ``cycle``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from flopsreg.model import LayerKind, Model, Plan

__all__ = ["Decoder", "build_model", "dense_mlp", "moe_mlp", "shortest_plan"]

# The flag each attention mask needs, and the parameter its size goes into.
MASK_FLAGS = {"full": frozenset(), "sliding": frozenset({"sliding_window"}), "chunked": frozenset({"chunked"})}


def dense_mlp(width: int) -> tuple[frozenset[str], dict[str, int]]:
    """Flags and parameters of a dense MLP of *width*."""
    return frozenset({"mlp"}), {"ffn_hidden": width}


def moe_mlp(
    experts: int, top_k: int, width: int, shared: int = 0, gate: bool = False
) -> tuple[frozenset[str], dict[str, int]]:
    """Flags and parameters of a MoE MLP, with shared experts of total width *shared* if any."""
    flags = {"moe"} | ({"shared_experts"} if shared else set()) | ({"shared_expert_gate"} if gate else set())
    params = {"experts": experts, "top_k": top_k, "expert_hidden": width}
    if shared:
        params["shared_hidden"] = shared
    return frozenset(flags), params


@attrs.frozen(kw_only=True)
class Decoder:
    """What a family reader found in a config, before layer kinds are named.

    Attributes:
        params: model-wide parameters (dimensions, vocab).
        flags: model-wide flags (gated, lm_head, mla, q_lora).
        masks: the attention mask of every decoder layer: ``full``, ``sliding`` or ``chunked``.
        mlps: the MLP of every decoder layer: ``dense`` or ``moe``.
        mask_params: parameters of the non-full masks, e.g. ``{"sliding": {"window": 4096}}``.
        mlp_kinds: flags and parameters of each MLP, e.g. ``{"dense": ({"mlp"}, {"ffn_hidden": F})}``.
    """

    params: Mapping[str, int]
    flags: frozenset[str] = attrs.field(converter=frozenset)
    masks: tuple[str, ...] = attrs.field(converter=tuple)
    mlps: tuple[str, ...] = attrs.field(converter=tuple)
    mask_params: Mapping[str, Mapping[str, int]] = attrs.field(factory=dict)
    mlp_kinds: Mapping[str, tuple[frozenset[str], Mapping[str, int]]] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        if len(self.masks) != len(self.mlps):
            raise ValueError(f"{len(self.masks)} masks but {len(self.mlps)} MLPs")


def shortest_plan(kinds: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The shortest ``(first, cycle)`` whose expansion is *kinds*; ties go to the shorter prefix.

    >>> shortest_plan(["dense"] * 3 + ["moe"] * 5)
    (('dense', 'dense', 'dense'), ('moe',))
    >>> shortest_plan(["s", "s", "f"] * 2 + ["s"])
    ((), ('s', 's', 'f'))
    """
    kinds = tuple(kinds)
    n = len(kinds)
    best: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    for total in range(1, n + 1):
        for prefix in range(total):
            period = total - prefix
            if prefix + period > n:
                continue
            if all(kinds[i] == kinds[prefix + (i - prefix) % period] for i in range(prefix, n)):
                best = (kinds[:prefix], kinds[prefix : prefix + period])
                break
        if best is not None:
            return best
    raise AssertionError("unreachable: the whole list is always a valid cycle")  # pragma: no cover


def _kind_name(mask: str, mlp: str, *, name_mask: bool, name_mlp: bool) -> str:
    parts = ([mask] if name_mask else []) + ([mlp] if name_mlp else [])
    return "_".join(parts)


def build_model(
    decoder: Decoder, *, name: str, source: str, blocks: Mapping[str, int] | None = None
) -> Model:
    """Name the layer kinds, compress the plan, and add *blocks*: ``{block: depth}`` copies of the
    last decoder layer's kind each (a multi-token-prediction module repeats it), whose pattern
    is switched on by the flag of the block's name.

    A kind is named after what varies: its mask when some layer is not full causal, its MLP
    when the MLPs differ (or when the mask says nothing), e.g. ``sliding``, ``moe``,
    ``chunked_moe``.
    """
    name_mask = any(mask != "full" for mask in decoder.masks)
    name_mlp = len(set(decoder.mlps)) > 1 or not name_mask
    per_layer = []
    kinds: dict[str, LayerKind] = {}
    for mask, mlp in zip(decoder.masks, decoder.mlps):
        kind = _kind_name(mask, mlp, name_mask=name_mask, name_mlp=name_mlp)
        if kind not in kinds:
            mlp_flags, mlp_params = decoder.mlp_kinds[mlp]
            kinds[kind] = LayerKind(
                flags=MASK_FLAGS[mask] | frozenset(mlp_flags),
                params={**decoder.mask_params.get(mask, {}), **mlp_params},
            )
        per_layer.append(kind)
    first, cycle = shortest_plan(per_layer)
    flags = set(decoder.flags)
    extra = {block: (per_layer[-1],) * depth for block, depth in (blocks or {}).items() if depth > 0}
    flags |= set(extra)
    return Model(
        name=name,
        source=source,
        flags=frozenset(flags),
        params=dict(decoder.params),
        kinds=kinds,
        plan=Plan(layers=len(per_layer), first=first, cycle=cycle, blocks=extra),
    )
