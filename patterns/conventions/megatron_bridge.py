"""The ``megatron_bridge`` convention: Megatron-Bridge's ``num_floating_point_operations`` as formulas.

Reproduces ``src/megatron/bridge/training/utils/flop_utils.py`` (NVIDIA-NeMo/Megatron-Bridge
067f987d, 2026-08-22), ``transformer_flops()``: Megatron-LM's count (s^2/2 pairs on full layers,
no router, MLA's norms as a "+1" column, per MTP depth 3h norms and a 2h^2 projection) with three
differences: 3 FFN matmuls for any gated unit (``gated_linear_unit``), sliding-window layers
counted exactly (W(W+1)/2 + (s - W) W pairs once W < s, s^2/2 before), and the layers it takes
for sliding ones. ``window_attn_skip_freq`` picks them, and the Gemma 2 and Gemma 3 bridges leave
it unset, so every layer of a Gemma model slides in Bridge's count (family flags ``hf_gemma2``,
``hf_gemma3_text``, ``hf_gemma3``; the model-level ``window`` is that window). The GPT-OSS bridge
hard-codes ``window_attn_skip_freq = 2``: even layers slide, as Hugging Face's default
``layer_types`` has it. The model types flopsreg reads that no Bridge bridge imports (Mixtral,
Qwen2-MoE, Llama 4) are refused.

For a model with a family flag, each bridge's own settings (``_bridges.BRIDGES``): windows only
where the bridge sets ``window_size`` (Qwen2, Qwen3 and Qwen3-MoE slide nowhere), every layer MoE
where it leaves ``moe_layer_freq`` at 1 (Qwen3-MoE), and logits over the vocabulary padded to the
divisor it sets (DeepSeek-V3 1280, DeepSeek-V2 3200, Gemma3-VL 128); the other bridges divide by
the largest power of 2 up to 128 dividing ``vocab_size``, which pads nothing at TP 1. Without a
family flag, logits are over ``vocab`` (the drop-in gives the padded size of the run).
"""

import attrs
import sympy

from flopsreg.patterns.conventions import megatron as convention_megatron
from flopsreg.patterns.conventions._bridges import BRIDGES, COMMIT
from flopsreg.patterns.conventions._rules import BUILTIN_TERMS, PRECEDENCE, not_counted, refuses_mixers, routerless_moe
from flopsreg.patterns.logits import VOCAB
from flopsreg.patterns.moe import EXPERT_HIDDEN, EXPERTS, TOP_K
from flopsreg.patterns.mtp import mtp_block, mtp_layers
from flopsreg.patterns.quantities import f
from flopsreg.patterns.sliding_window import WINDOW
from flopsreg.plugin import Convention, Pattern, h, hookimpl, s
from flopsreg.plugin import family_flag as family

NAME = "megatron_bridge"
SOURCE = (
    "Megatron-Bridge src/megatron/bridge/training/utils/flop_utils.py, num_floating_point_operations "
    "(NVIDIA-NeMo/Megatron-Bridge 067f987d, 2026-08-22)"
)
EVERY_LAYER_SLIDES = ("gemma2", "gemma3_text", "gemma3")  # their bridges set window_size, not window_attn_skip_freq
NO_BRIDGE = ("mixtral", "qwen2_moe", "llama4", "llama4_text")  # model types flopsreg reads that no Bridge bridge imports

MEGATRON_BRIDGE = Convention(
    name=NAME,
    summary="Megatron-Bridge's MFU count: Megatron-LM's, with exact sliding windows and 3 matmuls for any GLU",
    reference=SOURCE,
    counts=BUILTIN_TERMS,  # every built-in exact pattern at this commit (_rules.BUILTIN_TERMS)
)

W = WINDOW.symbol
# Bridge's average context W - W(W-1)/(2s) per token once W < s, times s tokens; s/2 per token before.
BRIDGE_WINDOW_PAIRS = sympy.Piecewise((s**2 / 2, s <= W), (W * (W + 1) / 2 + (s - W) * W, True))


def _as_bridge(pattern: Pattern, **changes: object) -> Pattern:
    """A megatron convention pattern under this convention's flag: the rule Bridge mirrors (a
    padded vocabulary the model gives is no flag of Bridge's, which counts ``vocab``)."""
    flags = (pattern.flags - {convention_megatron.MEGATRON.name, convention_megatron.GIVEN}) | {NAME}
    name = NAME + pattern.name.removeprefix(convention_megatron.MEGATRON.name)
    summary = f"Megatron-Bridge, as Megatron-LM: {changes.pop('summary', pattern.summary)}"
    return attrs.evolve(pattern, name=name, flags=flags, reference=SOURCE, summary=summary, **changes)


def _bridge_says(pattern: Pattern) -> Pattern:
    """A shared convention rule, its summary saying that it is Bridge's."""
    return attrs.evolve(pattern, summary=f"Megatron-Bridge: {pattern.summary}")


def _by_name(name: str) -> Pattern:
    return next(p for p in convention_megatron.PATTERNS if p.name == name)


_MEGATRON_MTP = _by_name("megatron_mtp")

PATTERNS = [
    Pattern(
        name=f"{NAME}_causal",
        slot="attention.mask",
        flags={NAME},
        precedence=PRECEDENCE,
        produces="pairs",
        formula=s**2 / 2,
        summary="Megatron-Bridge: s^2/2 pairs on full layers; chunked layers counted as full causal",
        reference=SOURCE,
    ),
    Pattern(
        name=f"{NAME}_sliding",
        slot="attention.mask",
        flags={NAME, "sliding_window"},
        precedence=PRECEDENCE + 20,
        produces="pairs",
        params=(WINDOW,),
        formula=BRIDGE_WINDOW_PAIRS,
        summary="Megatron-Bridge: sliding layers exactly, W(W+1)/2 + (s-W)W pairs once W < s (s^2/2 before)",
        reference=SOURCE,
    ),
    *(
        Pattern(
            name=f"{NAME}_{model_type}_every_layer_slides",
            slot="attention.mask",
            flags={NAME, family(model_type)},
            precedence=PRECEDENCE + 10 + index,
            produces="pairs",
            params=(WINDOW,),
            formula=BRIDGE_WINDOW_PAIRS,
            summary=f"Megatron-Bridge ({model_type}): every layer as sliding over the model's window, "
            "because its bridge leaves window_attn_skip_freq unset",
            reference=SOURCE,
        )
        for index, model_type in enumerate(EVERY_LAYER_SLIDES)
    ),
    *(
        Pattern(
            name=f"{NAME}_{model_type}_unsupported",
            slot="head",
            flags={NAME, family(model_type)},
            precedence=PRECEDENCE + 10 + index,
            scope="model",
            formula=0,
            summary=f"Megatron-Bridge: no bridge for model_type {model_type}",
            reference=SOURCE,
            refusal=(
                f"Megatron-Bridge has no bridge for model_type {model_type!r} (none registered at 067f987d): it "
                "cannot import or train the model, so it never counts it"
            ),
        )
        for index, model_type in enumerate(NO_BRIDGE)
    ),
    _bridge_says(routerless_moe(NAME, SOURCE)),
    _bridge_says(not_counted(NAME, "shared_expert_gate", "mlp.shared_gate", {"shared_expert_gate"}, "the shared-expert gate", SOURCE)),
    _bridge_says(not_counted(NAME, "dsa_indexer", "attention.topk_indexer", {"dsa_indexer"}, "the DSA lightning indexer", SOURCE)),
    _as_bridge(_by_name("megatron_low_rank_query")),
    _as_bridge(_by_name("megatron_mla_projection")),
    _as_bridge(_by_name("megatron_mla_output_gate")),
    _as_bridge(
        _MEGATRON_MTP,
        params=(VOCAB,),
        precedence=PRECEDENCE,
        formula=_MEGATRON_MTP.formula.xreplace({convention_megatron.PADDED_VOCAB.symbol: VOCAB.symbol}),
        summary="per MTP depth: its layer, eh norms counted as 3h, eh projection 2h^2, logits again",
    ),
    *refuses_mixers(NAME, "Megatron-Bridge counts linear-attention and Mamba layers with its own terms (Megatron-LM's), which this convention does not reproduce for a model read from a config", SOURCE),
]


def _cited(model_type: str) -> str:
    return f"Megatron-Bridge src/megatron/bridge/models/{BRIDGES[model_type].source} ({COMMIT}); {SOURCE}"


def _padded(divisor: int) -> sympy.Expr:
    """``calculate_padded_vocab_size`` at TP 1 with the bridge's divisor: V rounded up to a multiple of it."""
    return sympy.ceiling(VOCAB.symbol / divisor) * divisor


def _bridge_rules(index: int, model_type: str) -> list[Pattern]:
    """The rules one bridge's settings give, for the family flag of its model_type."""
    bridge, flags, rules = BRIDGES[model_type], {NAME, family(model_type)}, []
    if bridge.window is False:
        rules.append(Pattern(
            name=f"{NAME}_{model_type}_no_window", slot="attention.mask", flags=flags | {"sliding_window"},
            precedence=PRECEDENCE + 30 + index, produces="pairs", formula=s**2 / 2, reference=_cited(model_type),
            summary=f"Megatron-Bridge ({model_type}): sliding layers as full causal s^2/2, its bridge sets no window_size",
        ))
    if bridge.every_layer_moe:
        rules.append(Pattern(
            name=f"{NAME}_{model_type}_dense_layer_as_moe", slot="mlp", flags=flags | {"mlp"},
            precedence=PRECEDENCE + 10 + index, params=(EXPERTS, TOP_K, EXPERT_HIDDEN),
            formula=2 * s * TOP_K.symbol * h * EXPERT_HIDDEN.symbol * f, reference=_cited(model_type),
            summary=f"Megatron-Bridge ({model_type}): a dense layer counted as MoE (top-k experts, no router), "
            "its bridge leaves moe_layer_freq at 1",
        ))
    if bridge.vocab_divisor is not None:
        padded, divisor = _padded(bridge.vocab_divisor), bridge.vocab_divisor
        rules.append(Pattern(
            name=f"{NAME}_{model_type}_padded_logits", slot="head", flags=flags | {"lm_head"},
            precedence=PRECEDENCE + 10 + index, scope="model", params=(VOCAB,), formula=2 * s * h * padded,
            weights=h * padded, reference=_cited(model_type),
            summary=f"Megatron-Bridge ({model_type}): logits over the vocabulary padded to a multiple of {divisor} "
            "(the bridge's make_vocab_size_divisible_by x TP 1)",
        ))
    if bridge.vocab_divisor is not None and bridge.mtp:
        padded, divisor = _padded(bridge.vocab_divisor), bridge.vocab_divisor
        rules.append(attrs.evolve(
            _as_bridge(_MEGATRON_MTP), name=f"{NAME}_{model_type}_padded_mtp", flags=flags | {"mtp"},
            precedence=PRECEDENCE + 10 + index, params=(VOCAB,), reference=_cited(model_type),
            formula=mtp_block + mtp_layers * 2 * s * (3 * h + 2 * h**2) + mtp_layers * 2 * s * h * padded,
            summary=f"Megatron-Bridge ({model_type}): per MTP depth its layer, eh norms as 3h, eh projection 2h^2, "
            f"logits again over the vocabulary padded to a multiple of {divisor}",
        ))
    if bridge.mtp:
        rules.append(Pattern(
            name=f"{NAME}_{model_type}_unasked_mtp", slot="mtp", flags=flags | {"mtp_not_asked"},
            precedence=PRECEDENCE + 40 + index, scope="model", formula=0, reference=_cited(model_type),
            summary=f"Megatron-Bridge ({model_type}): counts the MTP depths the config declares, asked for or not",
            refusal=(
                f"Megatron-Bridge's {model_type} bridge sets mtp_num_layers from num_nextn_predict_layers, so it "
                "counts the MTP depths this config declares; read the model with blocks=('mtp',) (command line: "
                "--block mtp) to count them as Bridge does: a refusal, not an undercount"
            ),
        ))
    return rules


PATTERNS += [rule for index, model_type in enumerate(BRIDGES) for rule in _bridge_rules(index, model_type)]


@hookimpl
def flopsreg_register_conventions():
    return [MEGATRON_BRIDGE]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
