"""The ``megatron`` convention on Gated DeltaNet, Mamba2, latent MoE and hybrid stacks.

Reproduces the 2026 branches of Megatron-LM's ``num_floating_point_operations``
(``megatron/training/training.py`` at d98e8a6, 2026-08-22), per token of the forward pass:

* Gated DeltaNet (``transformer_flops`` and ``hybrid_flops``): 2 [h P_in + K (2 H_k d_k + H_v d_v)
  + 4 H_v d_v^2 + h H_v d_v] with P_in = 2 H_k d_k + 2 H_v d_v + 2 H_v (gdn) or 4 H_k d_k + 3 H_v d_v
  (gdn2, as ``gated_deltanet2_projection`` counts it): the exact projections and
  output, the convolution over s outputs, and a core of 4 d_v x d_v products per value head
  ("KK^T, VK^T, S(a(I-bKK^T)), and SQ") where the recurrence needs 3 d_k x d_v ones.
* Mamba2 (``hybrid_flops``): inner width 2h whatever ``mamba_num_heads`` x ``mamba_head_dim``,
  in_proj 2 h (2 x 2h + 2 G N + H_m), no convolution, a scan of 7 x 2h x N (halved: 7 d_in N
  FLOPs, not multiply-adds) and out_proj 2 x 2h x h.
* Gated Delta Product (``hybrid_flops`` under a GDP ``spec``): the exact in_proj, convolution and
  out_proj, and a core of (4n + 3) I N per token where the recurrence needs (4n + 2) I N.
* latent MoE: k experts of F_e on the latent width, no router; its projections as the exact ones.
* hybrid stacks: no attention output gate, and per MTP depth only that depth's layers and the
  logits (no eh projection, no norms).
* an MTP layer Megatron-LM classifies as softmax attention although it runs Gated DeltaNet (flag
  ``megatron_counts_attention``): under the convention it has the attention slots too, and its
  mixer slots count nothing.
* an MLA (``+``) layer of a hybrid stack (flag ``megatron_uncounted_mixer``): no token mixer counted.
* an MTP layer Megatron-LM classifies as Gated DeltaNet although it runs softmax attention
  (flag ``megatron_counts_gdn``): counted as Gated DeltaNet (under the convention its flags select the
  ``mixer`` slot group instead of attention).
"""

import attrs

from flopsreg.patterns import gated_delta_product, gated_deltanet, latent_moe, mamba2
from flopsreg.patterns._mixer_common import CONV_KERNEL, K
from flopsreg.patterns.conventions._rules import not_counted, refuses_layers
from flopsreg.patterns.conventions.megatron import DEFAULT_PADDED_VOCAB, DEFAULT_PADDING, PADDED_VOCAB, PADDING_SOURCE
from flopsreg.patterns.gated_delta_product import FLAG as GDP
from flopsreg.patterns.gated_delta_product import HOUSEHOLDER
from flopsreg.patterns.gated_deltanet import FLAG as GDN
from flopsreg.patterns.gated_deltanet import KEY_DIM, KEY_HEADS, VALUE_DIM, VALUE_HEADS
from flopsreg.patterns.gated_deltanet2 import FLAG as GDN2
from flopsreg.patterns.latent_moe import FLAG as LATENT_EXPERTS
from flopsreg.patterns.latent_moe import LATENT
from flopsreg.patterns.layered_mtp import MTP_DEPTH
from flopsreg.patterns.logits import VOCAB
from flopsreg.patterns.mamba2 import FLAG as MAMBA2
from flopsreg.patterns.mamba2 import GROUPS, HEADS, STATE
from flopsreg.patterns.megatron.gdn import COUNTS_ATTENTION, COUNTS_GDN
from flopsreg.patterns.megatron.hybrid import HYBRID, UNCOUNTED
from flopsreg.patterns.megatron.vocab import GIVEN
from flopsreg.patterns.moe import EXPERT_HIDDEN, TOP_K
from flopsreg.patterns.mtp import mtp_block
from flopsreg.patterns.quantities import f
from flopsreg.patterns.slots import ATTENTION, NO_MIXER
from flopsreg.patterns.token_mixers import selects_mixer
from flopsreg.plugin import GroupSelector, Pattern, h, hookimpl, s

SOURCE = "Megatron-LM megatron/training/training.py @ d98e8a64ddf3 (2026-08-22), num_floating_point_operations"
GDN_SOURCE = SOURCE + ", transformer_flops (gated delta net) and gdn_layer_flops"
MAMBA_SOURCE = SOURCE + ", mamba_layer_flops (hybrid_flops)"
GDP_SOURCE = SOURCE + ", gated_delta_product_layer_flops (hybrid_flops, _uses_gated_delta_product_spec)"

# Above every exact pattern of the mixer slots (the mixers' own up to 140) and of mlp (latent 40).
MIXER_PRECEDENCE = 200
# A softmax kind counted as GDN: above every mixer pattern of the mixer slots.
COUNTED_PRECEDENCE = 1200

H_k, H_v, d_k, d_v = KEY_HEADS.symbol, VALUE_HEADS.symbol, KEY_DIM.symbol, VALUE_DIM.symbol
GDN_PARAMS = (KEY_HEADS, VALUE_HEADS, KEY_DIM, VALUE_DIM)
H_m, N, G = HEADS.symbol, STATE.symbol, GROUPS.symbol
d_in = 2 * h  # mamba_layer_flops: d_in = 2 * hidden_size, whatever the heads


def _replacing(exact: Pattern, name: str, flags: set[str], precedence: int, params, formula, summary: str, reference: str) -> Pattern:
    """Megatron-LM's *formula* for the unit *exact* counts: that unit's weights, its own FLOPs."""
    return Pattern(
        name=name,
        slot=exact.slot,
        flags={"megatron", *flags},
        precedence=precedence,
        params=tuple(dict.fromkeys((*params, *exact.params))),
        formula=formula,
        weights=exact.weights,
        active_weights=exact.active_weights,
        summary=summary,
        reference=reference,
    )


def _exact(module, slot: str) -> Pattern:
    """The exact pattern of *module* (its mixer flag only) filling *slot*."""
    (pattern,) = (p for p in module.PATTERNS if p.slot == slot and p.flags == {module.FLAG})
    return pattern


GDN_TERMS = {
    "mixer.projection": (
        GDN_PARAMS, 2 * s * h * (2 * H_k * d_k + 2 * H_v * d_v + 2 * H_v), "in_proj hidden -> 2 H_k d_k + 2 H_v d_v + 2 H_v",
    ),
    "mixer.conv": (
        (*GDN_PARAMS, CONV_KERNEL), 2 * s * K * (2 * H_k * d_k + H_v * d_v), "conv1d: K taps over the q, k and v channels, s outputs",
    ),
    "mixer.core": (
        (VALUE_HEADS, VALUE_DIM),
        2 * s * 4 * H_v * d_v**2,
        "gated delta rule as 4 d_v x d_v products per value head and token (KK^T, VK^T, S(a(I-bKK^T)), SQ)",
    ),
    "mixer.output": ((VALUE_HEADS, VALUE_DIM), 2 * s * h * H_v * d_v, "out_proj H_v d_v -> hidden"),
}
GDN_PATTERNS = [
    _replacing(_exact(gated_deltanet, slot), f"megatron_gdn_{slot.removeprefix('mixer.')}", {GDN}, MIXER_PRECEDENCE + 10, *GDN_TERMS[slot], GDN_SOURCE)
    for slot in ("mixer.conv", "mixer.core")  # its projections and output are the exact ones
]
COUNTED_GDN_PATTERNS = [
    Pattern(
        name="megatron_counted_gdn2_projection",
        slot="mixer.projection",
        flags={"megatron", COUNTS_GDN, GDN2},
        precedence=COUNTED_PRECEDENCE + 10,
        params=GDN_PARAMS,
        formula=2 * s * h * (4 * H_k * d_k + 3 * H_v * d_v),
        summary="an MTP layer Megatron-LM classifies as Gated DeltaNet-2: in_proj hidden -> 4 H_k d_k + 3 H_v d_v",
        reference=GDN_SOURCE,
    ),
    *(
        Pattern(
            name=f"megatron_counted_gdn_{slot.removeprefix('mixer.')}",
            slot=slot,
            flags={"megatron", COUNTS_GDN},
            precedence=COUNTED_PRECEDENCE,
            params=GDN_TERMS[slot][0],
            formula=GDN_TERMS[slot][1],
            summary=f"an MTP layer Megatron-LM classifies as Gated DeltaNet: {GDN_TERMS[slot][2]}",
            reference=GDN_SOURCE,
        )
        for slot in GDN_TERMS
    ),
]
# An MTP layer that runs Gated DeltaNet but that Megatron-LM counts as softmax attention: under the
# convention it has the attention slots (the GQA projections, the s^2/2 core, o and, with
# --attention-output-gate, the gate), and its mixer slots count nothing.
COUNTED_AS_ATTENTION = GroupSelector(
    group=ATTENTION.name,
    flags={"megatron", COUNTS_ATTENTION},
    summary="an MTP layer Megatron-LM classifies as softmax attention (linear_attention_freq at num_layers + j): its "
    "attention terms are counted, its Gated DeltaNet is not",
)
COUNTED_ATTENTION_PATTERNS = [
    Pattern(
        name=f"megatron_counted_attention_{slot.removeprefix('mixer.')}",
        slot=slot,
        flags={"megatron", COUNTS_ATTENTION},
        precedence=COUNTED_PRECEDENCE + 100,  # apart from the counted-GDN patterns' (never on one layer)
        formula=0,
        summary="an MTP layer Megatron-LM classifies as softmax attention: its Gated DeltaNet is not counted",
        reference=SOURCE + ", transformer_flops (standard_self_attn_term and its core term)",
    )
    for slot in ("mixer.projection", "mixer.conv", "mixer.core", "mixer.output")
]
# Megatron-LM counts such an MTP layer as Gated DeltaNet: under the convention it has the mixer slots, not attention's.
COUNTED_AS_GDN = selects_mixer(
    {"megatron", COUNTS_GDN},
    "an MTP layer Megatron-LM classifies as Gated DeltaNet (linear_attention_freq at num_layers + j): its softmax "
    "attention is not counted, its Gated DeltaNet terms are",
)
# hybrid_flops counts '*', 'M' and 'G' layers only: a '+' (MLA) layer's attention is not counted at all.
UNCOUNTED_MIXER = GroupSelector(
    group=NO_MIXER.name,
    flags={"megatron", UNCOUNTED},
    summary="an MLA ('+') layer of a hybrid pattern: Megatron-LM's hybrid_flops (get_hybrid_layer_counts) has no term "
    "for it, so it counts no token mixer there",
)
MAMBA_TERMS = {
    "mixer.projection": (
        (HEADS, STATE, GROUPS), 2 * s * h * (2 * d_in + 2 * G * N + H_m), "in_proj on Megatron's inner width 2h: hidden -> 2 x 2h + 2 G N + H_m",
    ),
    "mixer.conv": ((), 0, "the short convolution is not counted"),
    "mixer.core": ((STATE,), 7 * s * d_in * N, "scan as 7 x 2h x N per token ('a rough estimate', per its comment)"),
    "mixer.output": ((), 2 * s * d_in * h, "out_proj 2h -> hidden"),
}
MAMBA_PATTERNS = [
    _replacing(_exact(mamba2, slot), f"megatron_mamba_{slot.removeprefix('mixer.')}", {MAMBA2}, MIXER_PRECEDENCE + 30, *MAMBA_TERMS[slot], MAMBA_SOURCE)
    for slot in MAMBA_TERMS
]
# Its projections, convolution and output are the exact ones (with mamba_num_heads set, as the mixer needs).
GDP_CORE = _replacing(
    _exact(gated_delta_product, "mixer.core"),
    "megatron_gdp_core",
    {GDP},
    MIXER_PRECEDENCE + 40,
    (HEADS, STATE, HOUSEHOLDER),
    (4 * HOUSEHOLDER.symbol + 3) * s * H_m * gated_delta_product.P * N,
    "Gated Delta Product core as (4 n + 3) I N per token ('best-case recurrent' estimate: one N x I product more than "
    "the 4 n + 2 of the recurrence)",
    GDP_SOURCE,
)
LATENT_MOE = attrs.evolve(  # with the exact unit's top_k <= experts, where its weights hold
    _replacing(
        latent_moe.LATENT_EXPERTS,
        "megatron_latent_moe",
        {"moe", LATENT_EXPERTS},
        MIXER_PRECEDENCE - 50,
        (TOP_K, EXPERT_HIDDEN, LATENT),
        2 * s * TOP_K.symbol * LATENT.symbol * EXPERT_HIDDEN.symbol * f,
        "k routed experts of width F_e on the latent width; the router is not counted",
        SOURCE + ", transformer_flops and moe_layer_flops (moe_latent_size)",
    ),
    constraints=latent_moe.LATENT_EXPERTS.constraints,
)
HYBRID_PATTERNS = [
    attrs.evolve(  # above megatron_mla_output_gate, though a hybrid stack has no MLA
        not_counted("megatron", "hybrid_output_gate", "attention.gate", {HYBRID, "output_gate"}, "the attention output gate of a hybrid stack", SOURCE + ", attn_layer_flops"),
        precedence=110,
    ),
    Pattern(
        name="megatron_hybrid_mtp",
        slot="mtp",
        flags={"megatron", "mtp", HYBRID, GIVEN},
        precedence=120,  # above megatron_mtp and megatron_hybrid_default_padded_mtp
        scope="model",
        params=(MTP_DEPTH, PADDED_VOCAB),
        formula=mtp_block + MTP_DEPTH.symbol * 2 * s * h * PADDED_VOCAB.symbol,
        weights=MTP_DEPTH.symbol * 2 * h * h,  # the eh projections it holds but does not count
        summary="per MTP depth of a hybrid stack: its layers and the logits again; no eh projection, no norms",
        reference=SOURCE + ", hybrid_flops (get_hybrid_layer_counts counts the MTP part once per depth)",
    ),
    Pattern(
        name="megatron_hybrid_default_padded_mtp",
        slot="mtp",
        flags={"megatron", "mtp", HYBRID},
        precedence=115,  # above megatron_mtp
        scope="model",
        params=(MTP_DEPTH, VOCAB),
        formula=mtp_block + MTP_DEPTH.symbol * 2 * s * h * DEFAULT_PADDED_VOCAB,
        weights=MTP_DEPTH.symbol * 2 * h * h,
        summary=f"per MTP depth of a hybrid stack: its layers and the logits again over the {DEFAULT_PADDING}",
        reference=SOURCE + ", hybrid_flops; " + PADDING_SOURCE,
    ),
]


# Megatron-LM's function has terms for Gated DeltaNet and Mamba layers only: the other mixers are refused.
UNCOUNTED_MIXERS = refuses_layers(
    "megatron", ("kda", "mamba1", "short_conv", "lightning"),
    "Megatron-LM's num_floating_point_operations has Gated DeltaNet and Mamba terms only", SOURCE, what="a {} mixer",
)


@hookimpl
def flopsreg_register_group_selectors():
    return [COUNTED_AS_GDN, COUNTED_AS_ATTENTION, UNCOUNTED_MIXER]


@hookimpl
def flopsreg_register_patterns():
    return [*GDN_PATTERNS, *COUNTED_GDN_PATTERNS, *COUNTED_ATTENTION_PATTERNS, *MAMBA_PATTERNS, GDP_CORE, LATENT_MOE, *HYBRID_PATTERNS, *UNCOUNTED_MIXERS]
