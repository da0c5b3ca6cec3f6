"""What several built-in Hugging Face family readers share (private: not a plugin)."""

from collections.abc import Mapping

from flopsreg.patterns.embedding import TIED_LOGITS
from flopsreg.patterns.hf.layer_types import FULL, SLIDING
from flopsreg.patterns.norms import DECODER_NORMS
from flopsreg.plugin import Fields, Layers

GATED_LM = frozenset({"gated", "lm_head"})  # every built-in family: gated MLPs and a logits head


def silu_gated(c: Fields, *, key: str = "hidden_act", default: str = "silu") -> frozenset[str]:
    """GATED_LM, plus ``swiglu`` when the gate is SiLU (SwiGLU; most config classes default to it):
    the activation is the config's *key*, its class default *default* when absent.

    Exact counting is the same for every gated MLP; the flag matters to the megatron convention,
    which counts 3 FFN matmuls only for runs with --swiglu.
    """
    return GATED_LM | {"swiglu"} if c.string(key, default) == "silu" else GATED_LM


def alternating(c: Fields, layers: int) -> Layers[str]:
    """``layer_types`` if given, else HF's default for Gemma 2 and GPT-OSS: layer i slides iff (i + 1) % 2 != 0."""
    given = c.layer_types(layers, (SLIDING, FULL))
    return Layers.of(given) if given else Layers.rule(layers, lambda i: SLIDING if (i + 1) % 2 != 0 else FULL, period=2)


def weight_flags(c: Fields, *, tied: bool, biases: Mapping[str, bool] = {}, extra: frozenset[str] = frozenset()) -> frozenset[str]:
    """The flags of the weights that do no matmul: RMSNorms (``norms``), ``tied_embeddings``
    from tie_word_embeddings (the config class's default *tied* when absent), and each bias flag
    in *biases* whose config key of the same name is true (its class default when absent).

    They change parameter counts only, never FLOPs; *extra* adds a family's own (qk_norm, sinks).
    """
    flags = set(DECODER_NORMS.flags | extra)
    if c.bool("tie_word_embeddings", default=tied):
        flags |= TIED_LOGITS.flags
    flags |= {key for key, default in biases.items() if c.bool(key, default=default)}
    return frozenset(flags)


def mla(c: Fields, *, nope: bool = False, v_head_dim: int | None = None) -> tuple[dict[str, int], frozenset[str]]:
    """The parameters and flags of DeepSeek-style multi-head latent attention a config gives (with
    its width and vocabulary): ``q_lora`` where ``q_lora_rank`` is set, a direct q_proj where it is
    null. A config's ``head_dim`` (if any) is the rope width, not the head size: never read.
    *nope*: the family runs without rotary dimensions, so ``qk_rope_head_dim`` must be 0.
    *v_head_dim*: the class's value when ``v_head_dim`` is null or absent (None: required)."""
    params = {
        "hidden": c.int("hidden_size"),
        "heads": c.int("num_attention_heads"),
        "kv_lora_rank": c.int("kv_lora_rank"),
        "qk_nope_head_dim": c.int("qk_nope_head_dim"),
        "qk_rope_head_dim": c.int("qk_rope_head_dim", minimum=0),
        "v_head_dim": c.int("v_head_dim") if v_head_dim is None or c.given("v_head_dim") else v_head_dim,
        "vocab": c.int("vocab_size"),
    }
    if params["qk_rope_head_dim"] and nope:
        raise c.error("qk_rope_head_dim", f" = {params['qk_rope_head_dim']}: model_type {c.model_type} runs MLA without RoPE; expected 0")
    if not (params["qk_rope_head_dim"] or nope):
        raise c.error("qk_rope_head_dim", " = 0: expected an integer >= 1")
    q_lora = c.optional_int("q_lora_rank")
    if q_lora is None:
        return params, frozenset({"mla"})
    return {**params, "q_lora_rank": q_lora}, frozenset({"mla", "q_lora"})
