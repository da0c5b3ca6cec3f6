"""Hugging Face ``config.json`` -> :class:`flopsreg.Model`, one small reader per model_type.

Each reader turns the config's own fields into explicit flags and parameters exactly as the
transformers implementation of that model interprets them (see ``docs/hf-configs.md``):
which layers slide, are chunked or are mixture-of-experts, and the widths each one uses. A
class default is applied only where a published config omits a dimension, with the config
class cited; a field that would switch a rule on (a window, a MoE layer plan) is never
defaulted: it must be in the config, or the reader raises :class:`flopsreg.ModelError`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from flopsreg.errors import ModelError, did_you_mean
from flopsreg.readers.fields import Fields
from flopsreg.readers.decoder import Decoder, build_model, dense_mlp, moe_mlp
from flopsreg.model import Model

__all__ = ["FAMILIES", "load_hf_config"]

GATED_LM = frozenset({"gated", "lm_head"})  # every supported family: gated MLPs and a logits head


def _silu_gated(c: Fields) -> frozenset[str]:
    """GATED_LM, plus ``swiglu`` when the gate is SiLU (SwiGLU; the config classes default to it).

    Exact counting is the same for every gated MLP; the flag matters to the megatron convention,
    which counts 3 FFN matmuls only for runs with --swiglu.
    """
    return GATED_LM | {"swiglu"} if c.string("hidden_act", "silu") == "silu" else GATED_LM


# -- shared pieces ------------------------------------------------------------------------------


def _head_dim(c: Fields, hidden: int, heads: int, class_default: int | None = None) -> int:
    """``head_dim`` if given; else the config class default if it has one; else hidden // heads."""
    if c.given("head_dim"):
        return c.int("head_dim")
    if class_default is not None and not c.has("head_dim"):
        return class_default
    return hidden // heads


def _gqa(c: Fields, *, heads: int | None = None, kv_heads: int | None = None, head_dim: int | None = None) -> dict[str, int]:
    """hidden, heads, kv_heads, head_dim and vocab; explicit arguments override the config."""
    hidden = c.int("hidden_size")
    heads = heads if heads is not None else c.int("num_attention_heads")
    if kv_heads is None:
        # num_key_value_heads absent or null means multi-head attention (every config class).
        kv_heads = c.optional_int("num_key_value_heads") or heads
    if head_dim is None:
        head_dim = _head_dim(c, hidden, heads)
    return {"hidden": hidden, "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim}


def _window(c: Fields, masks: list[str], field: str = "sliding_window") -> dict[str, dict[str, int]]:
    """The window of the sliding layers: HF ``sliding_window`` counts the query itself, as ours."""
    if "sliding" not in masks:
        return {}
    return {"sliding": {"window": c.int(field, why=f"layers {_indices(masks, 'sliding')} slide")}}


def _indices(masks: list[str], mask: str) -> str:
    shown = [str(i) for i, m in enumerate(masks) if m == mask]
    return ", ".join(shown[:6]) + (", ..." if len(shown) > 6 else "")


def _alternating(c: Fields, layers: int) -> list[str]:
    """``layer_types`` if given, else HF's default: layer i slides iff (i + 1) % 2 != 0."""
    given = c.layer_types(layers, ("sliding_attention", "full_attention"))
    return given or ["sliding" if (i + 1) % 2 != 0 else "full" for i in range(layers)]


# -- families ---------------------------------------------------------------------------------


def llama(c: Fields) -> Decoder:
    """LlamaConfig: full causal, SwiGLU MLP of intermediate_size in every layer."""
    layers = c.int("num_hidden_layers")
    return Decoder(
        params={**_gqa(c), "vocab": c.int("vocab_size")},
        flags=_silu_gated(c),
        masks=["full"] * layers,
        mlps=["dense"] * layers,
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


def _mistral_masks(c: Fields, layers: int, class_default: str) -> tuple[list[str], dict]:
    # Every layer uses config.sliding_window; null means no window (full causal).
    if not c.has("sliding_window"):
        raise c.missing("sliding_window", f"{class_default}; write null for no sliding window")
    masks = ["sliding" if c.given("sliding_window") else "full"] * layers
    return masks, _window(c, masks)


def mistral(c: Fields) -> Decoder:
    """MistralConfig: every layer slides over ``sliding_window`` keys unless it is null."""
    layers = c.int("num_hidden_layers")
    masks, windows = _mistral_masks(c, layers, "MistralConfig would default it to 4096")
    return Decoder(
        params={**_gqa(c), "vocab": c.int("vocab_size")},
        flags=_silu_gated(c),
        masks=masks,
        mlps=["dense"] * layers,
        mask_params=windows,
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


def mixtral(c: Fields) -> Decoder:
    """MixtralConfig: Mistral attention; every layer routes to num_experts_per_tok SwiGLU experts."""
    layers = c.int("num_hidden_layers")
    masks, windows = _mistral_masks(c, layers, "MixtralConfig defaults it to null")
    moe = moe_mlp(c.int("num_local_experts"), c.int("num_experts_per_tok"), c.int("intermediate_size"))
    return Decoder(
        params={**_gqa(c), "vocab": c.int("vocab_size")},
        flags=_silu_gated(c),
        masks=masks,
        mlps=["moe"] * layers,
        mask_params=windows,
        mlp_kinds={"moe": moe},
    )


def _qwen_masks(c: Fields, layers: int) -> list[str]:
    """Qwen2Config / Qwen3Config: ``layer_types``, else layer i slides iff use_sliding_window,
    sliding_window is not null and i >= max_window_layers."""
    given = c.layer_types(layers, ("sliding_attention", "full_attention"))
    if given is not None:
        return given
    # use_sliding_window defaults to false in both config classes; false switches nothing on.
    if not c.bool("use_sliding_window", default=False) or not c.given("sliding_window"):
        return ["full"] * layers
    first = c.int("max_window_layers", minimum=0, why="use_sliding_window is true")
    return ["sliding" if i >= first else "full" for i in range(layers)]


def qwen2(c: Fields) -> Decoder:
    """Qwen2Config: Llama-like; sliding layers per use_sliding_window / max_window_layers."""
    layers = c.int("num_hidden_layers")
    masks = _qwen_masks(c, layers)
    return Decoder(
        params={**_gqa(c), "vocab": c.int("vocab_size")},
        flags=_silu_gated(c),
        masks=masks,
        mlps=["dense"] * layers,
        mask_params=_window(c, masks),
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


def qwen3(c: Fields) -> Decoder:
    """Qwen3Config: as Qwen2, with head_dim defaulting to 128 (Qwen3Config.head_dim)."""
    layers = c.int("num_hidden_layers")
    masks = _qwen_masks(c, layers)
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    return Decoder(
        # transformers models/qwen3/configuration_qwen3.py: head_dim: int = 128.
        params={**_gqa(c, head_dim=_head_dim(c, hidden, heads, class_default=128)), "vocab": c.int("vocab_size")},
        flags=_silu_gated(c),
        masks=masks,
        mlps=["dense"] * layers,
        mask_params=_window(c, masks),
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


def _qwen_moe_layers(c: Fields, layers: int) -> list[str]:
    """Layer i is sparse iff i not in mlp_only_layers, num_experts > 0, (i + 1) % decoder_sparse_step == 0."""
    step = c.int("decoder_sparse_step")
    # Qwen2MoeConfig / Qwen3MoeConfig: mlp_only_layers None or absent -> [] (no layer forced dense).
    dense_only = set(c.int_list("mlp_only_layers", maximum=layers - 1) or [])
    experts = c.int("num_experts", minimum=0)
    return [
        "moe" if i not in dense_only and experts > 0 and (i + 1) % step == 0 else "dense" for i in range(layers)
    ]


def _qwen_moe_masks(c: Fields, layers: int) -> list[str]:
    given = c.layer_types(layers, ("sliding_attention", "full_attention"))
    if given is not None:
        return given
    if c.bool("use_sliding_window", default=False):
        # transformers versions disagree on which Qwen-MoE layers slide (>= max_window_layers in
        # older modeling code, even layers < max_window_layers in configuration_qwen2_moe.py).
        raise c.error(
            "use_sliding_window",
            f" = true: which layers slide differs between transformers versions for model_type "
            f"{c.model_type}; give layer_types explicitly",
        )
    return ["full"] * layers


def _qwen_moe(c: Fields, *, shared: bool) -> Decoder:
    layers = c.int("num_hidden_layers")
    masks = _qwen_moe_masks(c, layers)
    mlps = _qwen_moe_layers(c, layers)
    kinds = {}
    if "dense" in mlps:
        kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        width = c.int("shared_expert_intermediate_size") if shared else 0
        kinds["moe"] = moe_mlp(
            c.int("num_experts"), c.int("num_experts_per_tok"), c.int("moe_intermediate_size"), width, gate=shared
        )
    if "sliding" in masks and c.optional_int("sliding_window", minimum=0) == 0:
        # Qwen2MoeConfig writes sliding_window 0 when use_sliding_window is off: no window at all.
        raise c.error(
            "sliding_window",
            f" = 0: no window (as Qwen2MoeConfig writes it when use_sliding_window is off), but layer_types "
            f"marks layers {_indices(masks, 'sliding')} sliding; expected a window >= 1",
        )
    return Decoder(
        params={**_gqa(c), "vocab": c.int("vocab_size")},
        flags=_silu_gated(c),
        masks=masks,
        mlps=mlps,
        mask_params=_window(c, masks),
        mlp_kinds=kinds,
    )


def qwen2_moe(c: Fields) -> Decoder:
    """Qwen2MoeConfig: sparse layers per decoder_sparse_step; one gated shared expert per MoE layer."""
    return _qwen_moe(c, shared=True)


def qwen3_moe(c: Fields) -> Decoder:
    """Qwen3MoeConfig: sparse layers per decoder_sparse_step; no shared expert."""
    return _qwen_moe(c, shared=False)


def gemma2(c: Fields) -> Decoder:
    """Gemma2Config: even layers slide (``layer_types`` if given); GeGLU MLP; head_dim default 256."""
    layers = c.int("num_hidden_layers")
    masks = _alternating(c, layers)
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    return Decoder(
        # transformers models/gemma2/configuration_gemma2.py: head_dim defaults to 256.
        params={**_gqa(c, head_dim=_head_dim(c, hidden, heads, class_default=256)), "vocab": c.int("vocab_size")},
        flags=GATED_LM,
        masks=masks,
        mlps=["dense"] * layers,
        mask_params=_window(c, masks),
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


def gemma3_text(c: Fields) -> Decoder:
    """Gemma3TextConfig: layer i slides iff (i + 1) % sliding_window_pattern != 0 (or layer_types)."""
    layers = c.int("num_hidden_layers")
    if c.bool("use_bidirectional_attention", default=False):
        raise c.error("use_bidirectional_attention", " = true: bidirectional Gemma 3 attention is not supported")
    given = c.layer_types(layers, ("sliding_attention", "full_attention"))
    if given is None:
        # Gemma3TextConfig reads kwargs.get("sliding_window_pattern", 6) when layer_types is absent
        # (its "BC" path): the published configs give neither, so HF uses 6.
        pattern = c.int_or_default("sliding_window_pattern", 6)
        given = ["sliding" if (i + 1) % pattern != 0 else "full" for i in range(layers)]
    # Published Gemma 3 text_configs omit these; transformers models/gemma3/configuration_gemma3.py
    # (Gemma3TextConfig) defaults: num_attention_heads 8, num_key_value_heads 4, head_dim 256,
    # vocab_size 262208.
    heads = c.int_or_default("num_attention_heads", 8)
    kv_heads = c.int_or_default("num_key_value_heads", 4)
    hidden = c.int("hidden_size")
    return Decoder(
        params={
            **_gqa(c, heads=heads, kv_heads=kv_heads, head_dim=_head_dim(c, hidden, heads, class_default=256)),
            "vocab": c.int_or_default("vocab_size", 262208),
        },
        flags=GATED_LM,
        masks=given,
        mlps=["dense"] * layers,
        mask_params=_window(c, given),
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


def _llama4_masks(c: Fields, layers: int) -> list[str]:
    given = c.layer_types(layers, ("chunked_attention", "full_attention"))
    if c.has("attention_chunk_size") and not c.given("attention_chunk_size"):
        # modeling_llama4: a layer is chunked only if it uses RoPE and a chunk size is set, so
        # attention_chunk_size null makes every layer full causal, whatever layer_types says.
        return ["full"] * layers
    if given is not None:
        return given
    # no_rope_layers[i] == 1: the layer uses RoPE and chunked attention; 0: NoPE, full causal.
    # An empty or absent list falls back to no_rope_layer_interval (Llama4TextConfig.__post_init__).
    rope = c.int_list("no_rope_layers", minimum=0, maximum=1)
    if rope:
        if len(rope) != layers:
            raise c.error("no_rope_layers", f": {len(rope)} entries but num_hidden_layers = {layers}")
    elif c.given("no_rope_layer_interval"):
        interval = c.int("no_rope_layer_interval")
        rope = [int((i + 1) % interval != 0) for i in range(layers)]
    else:
        raise c.missing(
            "no_rope_layers",
            "no layer_types, no_rope_layers or no_rope_layer_interval says which layers are chunked; "
            "Llama4TextConfig would assume no_rope_layer_interval = 4",
        )
    return ["chunked" if flag else "full" for flag in rope]


def _llama4_mlps(c: Fields, layers: int) -> list[str]:
    moe_layers = c.int_list("moe_layers", minimum=0, maximum=layers - 1)
    if moe_layers is None:
        if not c.given("interleave_moe_layer_step"):
            raise c.missing(
                "moe_layers", "neither moe_layers nor interleave_moe_layer_step says which layers are MoE"
            )
        step = c.int("interleave_moe_layer_step")
        moe_layers = list(range(step - 1, layers, step))
    chosen = set(moe_layers)
    return ["moe" if i in chosen else "dense" for i in range(layers)]


def llama4_text(c: Fields) -> Decoder:
    """Llama4TextConfig: chunked RoPE layers, full NoPE layers; MoE layers with one shared expert."""
    layers = c.int("num_hidden_layers")
    masks = _llama4_masks(c, layers)
    mlps = _llama4_mlps(c, layers)
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    kinds = {}
    if "dense" in mlps:  # dense layers are Llama4TextMLP(intermediate_size=intermediate_size_mlp)
        kinds["dense"] = dense_mlp(c.int("intermediate_size_mlp", why="some layers are dense"))
    if "moe" in mlps:  # experts and the one shared expert are both intermediate_size wide
        width = c.int("intermediate_size")
        kinds["moe"] = moe_mlp(c.int("num_local_experts"), c.int("num_experts_per_tok"), width, shared=width)
    chunks = {}
    if "chunked" in masks:
        chunks = {"chunked": {"chunk": c.int("attention_chunk_size", why=f"layers {_indices(masks, 'chunked')} are chunked")}}
    return Decoder(
        # transformers models/llama4/configuration_llama4.py: Llama4TextConfig.head_dim = 128.
        params={**_gqa(c, head_dim=_head_dim(c, hidden, heads, class_default=128)), "vocab": c.int("vocab_size")},
        flags=_silu_gated(c),
        masks=masks,
        mlps=mlps,
        mask_params=chunks,
        mlp_kinds=kinds,
    )


def gpt_oss(c: Fields) -> Decoder:
    """GptOssConfig: even layers slide (``layer_types`` if given); every layer is MoE."""
    layers = c.int("num_hidden_layers")
    masks = _alternating(c, layers)
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    # Gate and up are one fused, interleaved matmul of 2 x intermediate_size: 3 matrices' worth.
    # Its clamped gate is not plain SwiGLU (Megatron-LM runs it with --quick-geglu): no swiglu flag.
    moe = moe_mlp(c.int("num_local_experts"), c.int("num_experts_per_tok"), c.int("intermediate_size"))
    return Decoder(
        # transformers models/gpt_oss/configuration_gpt_oss.py: head_dim defaults to 64.
        params={**_gqa(c, head_dim=_head_dim(c, hidden, heads, class_default=64)), "vocab": c.int("vocab_size")},
        flags=GATED_LM,
        masks=masks,
        mlps=["moe"] * layers,
        mask_params=_window(c, masks),
        mlp_kinds={"moe": moe},
    )


def _deepseek(c: Fields) -> Decoder:
    """DeepseekV2/V3: MLA attention; layers >= first_k_dense_replace are MoE with shared experts."""
    layers = c.int("num_hidden_layers")
    first_dense = c.int("first_k_dense_replace", minimum=0)
    freq = c.optional_int("moe_layer_freq")
    if freq not in (None, 1):
        # transformers' native DeepSeek classes ignore moe_layer_freq; DeepSeek's own
        # modeling_deepseek.py makes layer i MoE only if i % moe_layer_freq == 0.
        raise c.error(
            "moe_layer_freq",
            f" = {freq}: transformers ignores it but DeepSeek's modeling_deepseek.py does not, so "
            "the MoE layers are ambiguous; only 1 is supported",
        )
    mlps = ["moe" if i >= first_dense else "dense" for i in range(layers)]
    if not c.has("q_lora_rank"):
        raise c.missing("q_lora_rank", "null for a direct q_proj; the config classes default it to 1536")
    if not c.has("n_shared_experts"):
        raise c.missing("n_shared_experts", "null or 0 for none")
    q_lora = c.optional_int("q_lora_rank")
    params = {
        "hidden": c.int("hidden_size"),
        "heads": c.int("num_attention_heads"),
        # MLA widths; the config's head_dim (if any) is the rope width, not the head size: ignored.
        "kv_lora_rank": c.int("kv_lora_rank"),
        "qk_nope_head_dim": c.int("qk_nope_head_dim"),
        "qk_rope_head_dim": c.int("qk_rope_head_dim"),
        "v_head_dim": c.int("v_head_dim"),
        "vocab": c.int("vocab_size"),
    }
    flags = set(_silu_gated(c)) | {"mla"}
    if q_lora is not None:
        params["q_lora_rank"] = q_lora
        flags.add("q_lora")
    kinds = {}
    if "dense" in mlps:
        kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        width = c.int("moe_intermediate_size")
        shared = (c.optional_int("n_shared_experts", minimum=0) or 0) * width
        kinds["moe"] = moe_mlp(c.int("n_routed_experts"), c.int("num_experts_per_tok"), width, shared)
    return Decoder(params=params, flags=flags, masks=["full"] * layers, mlps=mlps, mlp_kinds=kinds)


def deepseek_v2(c: Fields) -> Decoder:
    """DeepseekV2Config (e.g. DeepSeek-V2-Lite, q_lora_rank null)."""
    return _deepseek(c)


def deepseek_v3(c: Fields) -> Decoder:
    """DeepseekV3Config."""
    return _deepseek(c)


FAMILIES: dict[str, Callable[[Fields], Decoder]] = {
    "llama": llama,
    "mistral": mistral,
    "mixtral": mixtral,
    "qwen2": qwen2,
    "qwen2_moe": qwen2_moe,
    "qwen3": qwen3,
    "qwen3_moe": qwen3_moe,
    "gemma2": gemma2,
    "gemma3_text": gemma3_text,
    "llama4_text": llama4_text,
    "gpt_oss": gpt_oss,
    "deepseek_v2": deepseek_v2,
    "deepseek_v3": deepseek_v3,
}
# Multimodal wrappers: the decoder is the text_config, of the model_type given here.
WRAPPERS = {"gemma3": "gemma3_text", "llama4": "llama4_text"}
# The config classes' attribute_map entries for fields the readers read, as {alias: field read}:
# transformers 5 accepts either name and writes the attribute's own (e.g. Qwen3-MoE saves
# num_local_experts for num_experts).
ALIASES: dict[str, dict[str, str]] = {
    "mixtral": {"num_experts": "num_local_experts"},
    "gpt_oss": {"num_experts": "num_local_experts"},
    "qwen2_moe": {"num_local_experts": "num_experts"},
    "qwen3_moe": {"num_local_experts": "num_experts"},
    "deepseek_v2": {"num_experts": "n_routed_experts"},
    "deepseek_v3": {"num_local_experts": "n_routed_experts"},
}
SUPPORTED = tuple(FAMILIES) + tuple(WRAPPERS)


# -- entry point --------------------------------------------------------------------------------


def _read(config: str | Path | Mapping[str, Any]) -> tuple[Mapping[str, Any], str, str]:
    """(parsed config, label for errors, source)."""
    if isinstance(config, Mapping):
        return config, "config.json", ""
    if not isinstance(config, (str, Path)):
        raise ModelError(f"config: expected a path to config.json or a dict, got {type(config).__name__}")
    path = Path(config)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError(f"{path}: cannot read config: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ModelError(
            f"{path}: not a UTF-8 text file (byte {exc.start} is {exc.object[exc.start:exc.start + 1]!r}); "
            "expected a config.json"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ModelError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data, str(path), str(path)


def _model_type(data: Mapping[str, Any], where: str, prefix: str = "") -> str:
    if "model_type" not in data:
        raise ModelError(f"{where}: {prefix}model_type: missing; supported: {', '.join(SUPPORTED)}")
    value = data["model_type"]
    if not isinstance(value, str):
        raise ModelError(f"{where}: {prefix}model_type = {value!r}: expected a string")
    if value not in FAMILIES and value not in WRAPPERS:
        raise ModelError(
            f"{where}: {prefix}model_type = {value!r}: unsupported{did_you_mean(value, SUPPORTED)} "
            f"(supported: {', '.join(SUPPORTED)})"
        )
    return value


def _text_fields(data: Mapping[str, Any], where: str, wrapper: str) -> Fields:
    expected = WRAPPERS[wrapper]
    text = data.get("text_config")
    if text is None:
        raise ModelError(f"{where}: text_config: missing (model_type {wrapper} keeps its decoder there)")
    if not isinstance(text, Mapping):
        raise ModelError(f"{where}: text_config = {text!r}: expected an object")
    # The wrapper config class builds its text config class from the dict whatever it says, so
    # an absent model_type is the expected one; a different one is refused.
    inner = text.get("model_type", expected)
    if inner != expected:
        raise ModelError(
            f"{where}: text_config.model_type = {inner!r}: unsupported for model_type {wrapper} "
            f"(expected {expected!r})"
        )
    return Fields(text, where=where, model_type=expected, prefix="text_config.", aliases=ALIASES.get(expected))


def load_hf_config(
    config: str | Path | Mapping[str, Any], *, mtp: bool = False, name: str | None = None
) -> Model:
    """A :class:`Model` from a Hugging Face ``config.json`` path or its parsed dict.

    Args:
        config: the path, or the parsed JSON object.
        mtp: count DeepSeek-V3's multi-token-prediction layers (``num_nextn_predict_layers``);
            the Hugging Face forward pass does not build them, so they are off by default.
        name: the model name; default the config's ``_name_or_path``, else its model_type.
    """
    data, where, source = _read(config)
    model_type = _model_type(data, where)
    if model_type in WRAPPERS:
        fields = _text_fields(data, where, model_type)
    else:
        fields = Fields(data, where=where, model_type=model_type, aliases=ALIASES.get(model_type))
    decoder = FAMILIES[fields.model_type](fields)
    depth = (fields.optional_int("num_nextn_predict_layers", minimum=0) or 0) if mtp else 0
    if name is None:
        # transformers writes _name_or_path as a string (the hub id or the local path it loaded).
        top = Fields(data, where=where, model_type=model_type)
        name = (top.string("_name_or_path", "") if top.given("_name_or_path") else "") or model_type
    return build_model(decoder, name=name, source=source, blocks={"mtp": depth})
