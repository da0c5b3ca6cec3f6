"""Models: named layer kinds (flags and parameters) laid out by a plan.

Flags and parameters set on the model apply to every layer; a layer kind adds its own on top.
Parameters never have defaults and never switch a pattern on: only flags do. Which flags and
parameters a pattern needs is checked by the registry (:meth:`flopsreg.Registry.plan`), which
knows the patterns; this module checks structure and types.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from flopsreg.errors import ModelError, did_you_mean

__all__ = ["Layer", "LayerKind", "Model", "Plan"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")


def check_params(where: str, value: Any) -> dict[str, int]:
    if not isinstance(value, Mapping):
        raise ModelError(f"{where}: expected a table of parameter = integer, got {type(value).__name__}")
    checked = {}
    for name, number in value.items():
        if isinstance(number, bool) or not isinstance(number, int):
            shown = str(number).lower() if isinstance(number, bool) else repr(number)  # as TOML writes it
            raise ModelError(f"{where}.{name} = {shown}: expected an integer, got {type(number).__name__}")
        checked[str(name)] = number
    return dict(sorted(checked.items()))


def check_flags(where: str, value: Any) -> frozenset[str]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ModelError(f"{where} = {value!r}: expected a list of flag names")
    flags = list(value)
    for flag in flags:
        if not isinstance(flag, str):
            raise ModelError(f"{where}: flag {flag!r} is not a string")
    return frozenset(flags)


@attrs.frozen(kw_only=True)
class LayerKind:
    """Flags and parameters shared by the layers of one kind (e.g. Gemma 3's local layers)."""

    flags: frozenset[str] = attrs.field(default=(), converter=lambda v: check_flags("flags", v))
    params: Mapping[str, int] = attrs.field(
        factory=dict, converter=lambda v: check_params("params", v), hash=False
    )


@attrs.frozen(kw_only=True)
class Plan:
    """Which kind each layer is: the ``first`` kinds in order, then ``cycle`` repeated.

    A uniform model is a cycle of one kind; an explicit list is ``first`` covering every layer.
    ``mtp`` lists the kind of the decoder layer inside each multi-token-prediction module
    (DeepSeek-V3); those layers are not decoder layers and are counted by the ``mtp`` pattern.
    """

    layers: int
    first: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    cycle: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    mtp: tuple[str, ...] = attrs.field(default=(), converter=tuple)

    def __attrs_post_init__(self) -> None:
        if isinstance(self.layers, bool) or not isinstance(self.layers, int) or self.layers < 1:
            raise ModelError(f"plan.layers = {self.layers!r}: expected an integer >= 1")
        if len(self.first) > self.layers:
            raise ModelError(
                f"plan.first lists {len(self.first)} layers but plan.layers = {self.layers}"
            )
        if not self.cycle and len(self.first) != self.layers:
            raise ModelError(
                f"plan covers {len(self.first)} of {self.layers} layers: give a cycle, a uniform "
                "kind, or a list with one kind per layer"
            )

    @classmethod
    def uniform(cls, kind: str, layers: int) -> Plan:
        """Every layer of one kind."""
        return cls(layers=layers, cycle=(kind,))

    @classmethod
    def explicit(cls, kinds: Iterable[str]) -> Plan:
        """One kind per layer, in order."""
        kinds = tuple(kinds)
        return cls(layers=len(kinds), first=kinds)

    def expand(self) -> tuple[str, ...]:
        """The kind of every decoder layer, in order."""
        rest = self.layers - len(self.first)
        return self.first + tuple(self.cycle[i % len(self.cycle)] for i in range(rest))


@attrs.frozen(kw_only=True)
class Layer:
    """One expanded decoder layer: model-wide flags and parameters merged with its kind's."""

    index: int
    kind: str
    flags: frozenset[str]
    params: Mapping[str, int] = attrs.field(hash=False)


@attrs.frozen(kw_only=True, cache_hash=True)
class Model:
    """A transformer as flopsreg sees it: model-wide settings, layer kinds and a plan.

    >>> m = Model.uniform("tiny", layers=2, hidden=64, heads=4, kv_heads=4, head_dim=16)
    >>> [layer.kind for layer in m.layers]
    ['layer', 'layer']
    """

    name: str
    kinds: Mapping[str, LayerKind] = attrs.field(hash=False)
    plan: Plan
    flags: frozenset[str] = attrs.field(default=(), converter=lambda v: check_flags("flags", v))
    params: Mapping[str, int] = attrs.field(
        factory=dict, converter=lambda v: check_params("params", v), hash=False
    )
    source: str = ""
    _layers: tuple[Layer, ...] = attrs.field(init=False, repr=False, eq=False, hash=False)

    def __attrs_post_init__(self) -> None:
        for kind in self.kinds:
            if not _NAME.fullmatch(kind):
                raise ModelError(f"kinds.{kind}: a kind name must be a word (letters, digits, _ or -)")
        order = self.plan.expand()
        for where, names in (("plan.first", self.plan.first), ("plan.cycle", self.plan.cycle), ("plan.mtp", self.plan.mtp)):
            for kind in names:
                if kind not in self.kinds:
                    raise ModelError(
                        f"{where}: unknown layer kind {kind!r}; defined kinds: "
                        f"{', '.join(sorted(self.kinds)) or 'none'}{did_you_mean(kind, self.kinds)}"
                    )
        unused = sorted(set(self.kinds) - set(order) - set(self.plan.mtp))
        if unused:
            raise ModelError(f"kinds.{unused[0]} is defined but the plan never uses it")
        object.__setattr__(self, "_layers", tuple(self._layer(i, kind) for i, kind in enumerate(order)))

    def _layer(self, index: int, kind: str) -> Layer:
        return Layer(
            index=index,
            kind=kind,
            flags=self.flags | self.kinds[kind].flags,
            params={**self.params, **self.kinds[kind].params},
        )

    @property
    def layers(self) -> tuple[Layer, ...]:
        """Every decoder layer, expanded from the plan."""
        return self._layers

    @property
    def mtp_blocks(self) -> tuple[Layer, ...]:
        """The decoder layer inside each multi-token-prediction module, numbered after the others."""
        return tuple(self._layer(self.plan.layers + i, kind) for i, kind in enumerate(self.plan.mtp))

    @classmethod
    def uniform(cls, name: str, *, layers: int, flags: Iterable[str] = (), **params: int) -> Model:
        """A model whose layers are all alike, flags and parameters set model-wide."""
        return cls(
            name=name,
            kinds={"layer": LayerKind()},
            plan=Plan.uniform("layer", layers),
            flags=flags,
            params=params,
        )

    def layers_of(self, kind: str) -> tuple[int, ...]:
        """Indices of the layers of *kind*."""
        return tuple(layer.index for layer in self.layers if layer.kind == kind)

    # -- files ---------------------------------------------------------------------------------

    @classmethod
    def from_toml(cls, path: Any) -> Model:
        """Read a flopsreg model file (see ``docs/model-files.md``)."""
        from flopsreg.loaders.toml import load_model

        return load_model(path)

    @classmethod
    def from_toml_string(cls, text: str, *, where: str = "<string>") -> Model:
        """Parse the text of a flopsreg model file."""
        from flopsreg.loaders.toml import parse_model

        return parse_model(text, where=where)

    @classmethod
    def from_hf_config(cls, config: Any, *, mtp: bool = False) -> Model:
        """A model from a Hugging Face ``config.json`` (a path or the parsed dict).

        Each supported ``model_type`` maps the config's own fields to explicit flags (see
        ``docs/hf-configs.md``). Multi-token-prediction modules that the config declares are
        not run by the Hugging Face forward pass, so they are counted only with ``mtp=True``.
        """
        from flopsreg.loaders.hf import load_hf_config

        return load_hf_config(config, mtp=mtp)

    @classmethod
    def from_megatron_args(cls, args: Any, *, name: str = "megatron-model") -> Model:
        """A model from Megatron-LM's argument namespace (``megatron.training.get_args()``).

        MLA is used only when ``multi_latent_attention`` is True, whatever values the MLA
        arguments carry; ``window_size`` is flash-attention's inclusive ``(left, right)``.
        """
        from flopsreg.loaders.megatron import load_megatron_args

        return load_megatron_args(args, name=name)

    def to_toml(self) -> str:
        """This model as a model file; :meth:`from_toml_string` gives it back unchanged."""
        from flopsreg.loaders.toml import dump_model

        return dump_model(self)
