"""Llama-like Hugging Face families declared as data: one :class:`FamilyTraits` record per
``model_type`` and one generic reader, :func:`read_family`, that turns (traits, config) into a
:class:`~flopsreg.readers.decoder.Decoder` (private: not a plugin).

Many transformers families are Llama with a few traits changed: other biases, another tied-head
default, norms that hold a bias or no weight at all, post-norms, QK-norm, a plain (non-gated)
MLP, a head_dim default, sliding layers by a rule, a mixture of experts. Traits that change only
weights (biases, norms, tying) select weight-only patterns through flags; the MLP's gating and
the experts change FLOPs, through the ``gated`` flag and the MoE patterns. Traits that change no
matmul at all (parallel attention and MLP, fused q/k/v or gate/up projections, partial rotary,
logit soft-capping, embedding and residual scaling, NoPE layers) need nothing here: a family's
record says so in a comment citing its modeling file. See docs/plugins.md, "Adding a Llama-like family".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.embedding import TIED_LOGITS
from flopsreg.patterns.hf._common import GATED_LM, silu_gated
from flopsreg.patterns.hf._linear import type_list
from flopsreg.patterns.hf.layer_types import FULL, SLIDING
from flopsreg.patterns.learned_activation import XIELU
from flopsreg.patterns.moe import moe_mlp
from flopsreg.patterns.norms import DECODER_NORMS
from flopsreg.patterns.position_embedding import LEARNED_POSITIONS, MAX_POSITIONS
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, head_dim_of

AttentionRule = Callable[[Fields, int], Layers[str]]


@attrs.frozen
class Switch:
    """Weight flags a boolean config key switches on: *flags* when ``key`` is true (its class
    default *default* when absent). *needs*: another switch's key that must be true too (its
    flags complete these: o_proj's bias is counted with q/k/v's); alone, the config is refused."""

    key: str
    default: bool
    flags: frozenset[str] = attrs.field(converter=frozenset)
    needs: str | None = None


def every_layer(c: Fields, layers: int) -> Layers[str]:
    """Every layer routes to experts."""
    return Layers.uniform("moe", layers)


def dense_first(default: int, *, listed: str | None = None, key: str | None = "first_k_dense_replace") -> Callable[[Fields, int], Layers[str]]:
    """The first *key* layers (class default *default*; with *key* None, always *default*) are
    dense, the others route to experts; with *listed*, a config key of one ``"dense"`` or
    ``"sparse"`` per layer (``mlp_layer_types``) that the class builds from that rule and a config
    may give instead."""

    def rule(c: Fields, layers: int) -> Layers[str]:
        given = type_list(c, listed, ("dense", "sparse"), layers) if listed is not None else None
        if given is None:
            first = default if key is None else c.int_or_default(key, default, minimum=0)
            return Layers.split(layers, "dense", "moe", first)
        return Layers.of("moe" if entry == "sparse" else "dense" for entry in given)

    return rule


@attrs.frozen(kw_only=True)
class Experts:
    """Where a family's config keeps its mixture of experts: the config keys of the routed
    experts' count, top-k and width; of the shared experts, their total width (``shared_width``)
    or their count of the routed width each (``shared_count``), None: none; and which layers are
    sparse (``layers``: :func:`every_layer`, or a rule of the family's own; the others are dense MLPs of
    ``intermediate_size``)."""

    experts: str
    width: str = "moe_intermediate_size"
    top_k: str = "num_experts_per_tok"
    shared_width: str | None = None
    shared_count: str | None = None
    layers: Callable[[Fields, int], Layers[str]] = every_layer


@attrs.frozen
class Width:
    """Where a family's config keeps the dense MLP's width: the key *key* (None: the class has
    none), and when the key is null or absent, the key *fallback* (Cohere 2 MoE's
    ``prefix_dense_intermediate_size`` falls back to ``intermediate_size``) or else
    ``times x hidden_size`` (GPT-2's ``n_inner``); with neither, the key is required."""

    key: str | None = "intermediate_size"
    times: int | None = None
    fallback: str | None = None

    def of(self, c: Fields, hidden: int) -> int:
        """The width a config gives."""
        if self.key is not None and c.given(self.key):
            return c.int(self.key, why="some layers are dense")
        if self.fallback is not None:
            return c.int(self.fallback, why=f"some layers are dense and {self.key} is null")
        if self.times is not None:
            return self.times * hidden
        return c.int(self.key, why="some layers are dense")


@attrs.frozen
class Positions:
    """A learned absolute position table of ``key`` + *offset* rows (OPT's table holds 2 more
    than ``max_position_embeddings``)."""

    key: str = "max_position_embeddings"
    offset: int = 0


@attrs.frozen(kw_only=True)
class FamilyTraits:
    """What a Llama-like family changes, as data.

    Attributes:
        name, title, summary: the ``model_type`` and the :class:`HFReader`'s title and summary.
        aliases: the config class's ``attribute_map`` (``{other name: field read}``).
        tied: the class default of ``tie_word_embeddings``.
        gated: a gated MLP (gate, up, down: 3 matmuls; SwiGLU, GeGLU) or a plain one (up, down:
            2 matmuls; GELU, ReLU, relu^2, xIELU).
        activation: the config key and class default of the activation (``hidden_act``,
            ``"silu"``); a gated SiLU MLP also gets the ``swiglu`` flag (see ``silu_gated``).
        head_dim: the class default of ``head_dim`` when the key is absent (None: hidden / heads).
        head_dim_required: the modeling code reads ``config.head_dim`` as it is (no fallback), so
            a config without one is refused, as transformers fails to build it.
        norms: the flags choosing the layers' and the final norm's patterns (default: two
            RMSNorms per layer, whether before or after the sublayers; empty: norms without weights).
        flags: weight flags every config of the family gets (fixed biases, QK-norm, sinks).
        switches: weight flags boolean config keys switch on (``attention_bias``, ``mlp_bias``).
        attention: the rule giving each layer's attention (:func:`full`, :func:`window_everywhere`,
            :func:`layer_types_or`).
        experts: where the mixture of experts is (None: a dense MLP of ``intermediate_size``).
        refused: ``(key, class default, why)``: a boolean key whose true value no pattern counts
            (a bias of shared experts, say) is refused by name, with *why*.
        width: where the dense MLP's width is (``intermediate_size``, or a multiple of hidden_size).
        positions: a learned absolute position table (None: rotary or no positions, no weights).
        multi_query: ``(key, class default)`` of a boolean that makes the attention multi-query (one
            key/value head, ``num_key_value_heads`` not read) when true and multi-head when false.
        heads_only: the attention is multi-head with heads of hidden / heads, whatever
            ``num_key_value_heads`` and ``head_dim`` say (the config class has neither field and
            its modeling reads neither, so a config carrying them must not be read as GQA).
        heads_of_hidden: the heads are hidden / heads wide whatever ``head_dim`` says (the
            modeling reads no ``head_dim`` for its projections), while the key/value heads are read
            as usual (``num_key_value_heads``, or ``multi_query``); implied by ``heads_only``.
    """

    name: str
    title: str
    summary: str
    aliases: Mapping[str, str] = attrs.field(factory=dict)
    tied: bool = False
    gated: bool = True
    activation: tuple[str, str] = ("hidden_act", "silu")
    head_dim: int | None = None
    head_dim_required: bool = False
    norms: frozenset[str] = attrs.field(converter=frozenset, default=DECODER_NORMS.flags)
    flags: frozenset[str] = attrs.field(converter=frozenset, factory=frozenset)
    switches: tuple[Switch, ...] = ()
    attention: AttentionRule = attrs.field(factory=lambda: full)
    experts: Experts | None = None
    refused: tuple[tuple[str, bool, str], ...] = ()
    width: Width = Width()
    positions: Positions | None = None
    multi_query: tuple[str, bool] | None = None
    heads_only: bool = False
    heads_of_hidden: bool = False

    def __call__(self, c: Fields) -> Decoder:
        """Read a config of this family: :func:`read_family` with these traits (the HFReader's ``read``)."""
        return read_family(self, c)

    def reader(self) -> HFReader:
        """The :class:`HFReader` of this family, which reads through the record itself."""
        return HFReader(name=self.name, title=self.title, summary=self.summary, read=self, aliases=self.aliases)


def full(c: Fields, layers: int) -> Layers[str]:
    """Full causal attention on every layer (the family has no sliding window)."""
    return Layers.uniform(FULL, layers)


def window_everywhere(c: Fields, layers: int) -> Layers[str]:
    """Every layer slides over ``sliding_window`` keys when it is set, none when null or absent
    (``create_sliding_window_causal_mask`` iff ``config.sliding_window`` is not None)."""
    return Layers.uniform(SLIDING if c.given("sliding_window") else FULL, layers)


def layer_types_or(default: Callable[[Fields, int], Layers[str]]) -> AttentionRule:
    """``layer_types`` when the config gives it, else what the config class's ``__post_init__``
    builds (*default*); the class saves its list, so a config written by transformers gives it."""

    def rule(c: Fields, layers: int) -> Layers[str]:
        given = c.layer_types(layers, (SLIDING, FULL))
        return Layers.of(given) if given is not None else default(c, layers)

    return rule


def full_every(period: int, offset: int, *, key: str | None = None) -> Callable[[Fields, int], Layers[str]]:
    """Layer i is full iff ``(i + offset) % period == 0``, else sliding: (4, 1) is every fourth
    layer full from layer 3 (``(i + 1) % 4``), (4, 0) every fourth from layer 0. With *key*, the
    config's *key* gives the period (*period* when absent), and a null ``sliding_window`` is refused:
    those classes then mark layers sliding without a window, or divide by 0 (EXAONE 4)."""

    def rule(c: Fields, layers: int) -> Layers[str]:
        every = period
        if key is not None:
            if not c.given("sliding_window"):
                raise c.error(
                    "sliding_window", f" = null and no layer_types: model_type {c.model_type}'s class marks layers sliding by a pattern "
                    "with no window to slide (or divides by a pattern of 0); give layer_types",
                )
            every = c.int_or_default(key, period)
        return Layers.rule(layers, lambda i: FULL if (i + offset) % every == 0 else SLIDING, period=every)

    return rule


def _weights(traits: FamilyTraits, c: Fields) -> frozenset[str]:
    flags = set(traits.norms | traits.flags)
    if c.bool("tie_word_embeddings", default=traits.tied):
        flags |= TIED_LOGITS.flags
    on = {switch.key for switch in traits.switches if c.bool(switch.key, default=switch.default)}
    for switch in traits.switches:
        if switch.key not in on:
            continue
        if switch.needs is not None and switch.needs not in on:
            raise c.error(switch.key, f" = true with {switch.needs} false: no pattern holds that bias alone; expected {switch.needs} true too")
        flags |= switch.flags
    return frozenset(flags)


def _mlps(traits: FamilyTraits, c: Fields, layers: int, hidden: int) -> tuple[Layers[str], dict[str, tuple[frozenset[str], dict[str, int]]]]:
    """Each layer's MLP (``dense`` or ``moe``) and the kinds used."""
    spec = traits.experts
    mlps = Layers.uniform("dense", layers) if spec is None else spec.layers(c, layers)
    kinds = {}
    if "dense" in mlps:
        kinds["dense"] = dense_mlp(traits.width.of(c, hidden))
    if spec is not None and "moe" in mlps:
        width = c.int(spec.width)
        shared = c.int(spec.shared_width, minimum=0) if spec.shared_width else 0
        shared += c.int_or_default(spec.shared_count, 0, minimum=0) * width if spec.shared_count else 0
        kinds["moe"] = moe_mlp(c.int(spec.experts), c.int(spec.top_k), width, shared)
    return mlps, kinds


def _kv_heads(traits: FamilyTraits, c: Fields, heads: int) -> int | None:
    """1 or *heads* by the family's multi-query switch; *heads* for a family of heads only; None
    (``num_key_value_heads``) otherwise."""
    if traits.heads_only:
        return heads
    if traits.multi_query is None:
        return None
    key, default = traits.multi_query
    return 1 if c.bool(key, default=default) else heads


def read_family(traits: FamilyTraits, c: Fields) -> Decoder:
    """The decoder a Llama-like family's config describes, by its *traits*."""
    layers = c.int("num_hidden_layers")
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    if traits.head_dim_required and not c.given("head_dim"):
        c.int("head_dim", why=f"model_type {c.model_type}'s attention reads config.head_dim with no default; transformers fails without it")
    for key, default, why in traits.refused:
        if c.bool(key, default=default):
            raise c.error(key, f" = true: {why}; only false is supported for model_type {c.model_type}")
    key, default = traits.activation
    mlp_flags = silu_gated(c, key=key, default=default) if traits.gated else GATED_LM - {"gated"}
    if c.string(key, default) == "xielu":  # ACT2CLS["xielu"]: two learned scalars in every MLP's activation
        if traits.experts is not None:
            raise c.error(key, f" = 'xielu' in a mixture of experts: no pattern holds the experts' activation scalars for model_type {c.model_type}")
        mlp_flags |= XIELU.flags
    mlps, kinds = _mlps(traits, c, layers, hidden)
    head_dim = hidden // heads if traits.heads_only or traits.heads_of_hidden else head_dim_of(c, hidden, heads, traits.head_dim)
    params = {**gqa_params(c, kv_heads=_kv_heads(traits, c, heads), head_dim=head_dim), "vocab": c.int("vocab_size")}
    flags = mlp_flags | _weights(traits, c)
    if traits.positions is not None:
        params[MAX_POSITIONS.name] = c.int(traits.positions.key) + traits.positions.offset
        flags |= LEARNED_POSITIONS.flags
    return Decoder(
        params=params,
        flags=flags,
        attention=traits.attention(c, layers),
        mlps=mlps,
        mlp_kinds=kinds,
    )
