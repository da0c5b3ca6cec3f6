"""A drop-in for torchtitan's ``model_config.get_nparams_and_flops(model, seq_len)``.

torchtitan (``torchtitan/models/utils.py`` at commit b5bcd76c) counts the parameters of the built
``nn.Module``; this drop-in needs no torch and no module: it reads the model's config, the
``Decoder.Config`` dataclass tree torchtitan builds the model from (``Llama3Model.Config``,
``Qwen3Model.Config``, ``DeepSeekV3Model.Config``, ``GptOssModel.Config``). In torchtitan's
trainer replace ``model_config.get_nparams_and_flops(model, seq_len)`` with
``get_nparams_and_flops(model_config, seq_len)`` from this module: the same pair
``(nparams, num_flops_per_token)`` in the same units, every parameter and the training FLOPs
(forward + backward) per token of a ``seq_len``-token sequence, which the trainer multiplies by
tokens per second. By default both are exact (causal pairs, real windows, the experts a token
uses); ``convention="torchtitan"`` reproduces torchtitan's own ``6 N + 6 L n_h d seq_len`` to
the digit. An exact count per token that is not a whole number (a sliding window's pairs over
``seq_len``) is returned as a :class:`fractions.Fraction`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from flopsreg.declarations.pattern import EXACT
from flopsreg.engine.evaluate import TRAINING_PASSES
from flopsreg.errors import ModelError
from flopsreg.integrations._shared import attribute, default_registry, keep_selection
from flopsreg.model import Model, as_int, shown
from flopsreg.registry import Registry

__all__ = ["get_nparams_and_flops", "hf_config"]

# torchtitan's model config class (the outer class of its ``Config``) -> Hugging Face model_type.
MODEL_TYPES = {"Llama3Model": "llama", "Qwen3Model": "qwen3", "DeepSeekV3Model": "deepseek_v3", "GptOssModel": "gpt_oss"}


def _get(obj: Any, path: str, name: str) -> Any:
    """``obj.name``, or a one-line error naming ``path.name`` when the field is missing."""
    return attribute(obj, path, name, " (a torchtitan model config has it)")


def _int(obj: Any, path: str, name: str, minimum: int = 1) -> int:
    value = _get(obj, path, name)
    number = as_int(value)  # numpy integers too
    if number is None or number < minimum:
        raise ModelError(f"{path}.{name} = {shown(value)}: expected an integer >= {minimum}")
    return number


def _bias(linear: Any, path: str) -> bool:
    value = getattr(linear, "bias", False)  # Linear.Config.bias defaults to False
    if type(value) is not bool:
        raise ModelError(f"{path}.bias = {value!r}: expected True or False")
    return value


def _same_attention(layers: list[Any], read: Any) -> Any:
    """What *read* gives for every layer's ``attention`` (at its path), which torchtitan takes from layer 0."""
    values = [read(_get(layer, f"model_config.layers[{i}]", "attention"), f"model_config.layers[{i}].attention")
              for i, layer in enumerate(layers)]
    for i, value in enumerate(values):
        if value != values[0]:
            raise ModelError(
                f"model_config.layers[{i}].attention: {value!r} differs from layers[0]'s {values[0]!r}; "
                "layers with different attention are not read"
            )
    return values[0]


def _gqa(layers: list[Any], dim: int) -> dict[str, Any]:
    """The GQAttention (or GPT-OSS Attention) fields of every layer as Hugging Face keys."""

    def fields(attention: Any, where: str) -> tuple[Any, ...]:
        heads = _int(attention, where, "n_heads")
        kv_heads = getattr(attention, "n_kv_heads", None)
        head_dim = getattr(attention, "head_dim", None)
        qkv = _get(attention, where, "qkv_linear")
        projections = [name for name in ("wq", "wqkv") if getattr(qkv, name, None) is not None]
        if not projections:
            raise ModelError(f"{where}.qkv_linear: expected a QKVLinear (wq, wkv) or FusedQKVLinear (wqkv) config")
        present = [name for name in (*projections, "wkv") if getattr(qkv, name, None) is not None]
        biases = {_bias(getattr(qkv, name), f"{where}.qkv_linear.{name}") for name in present}
        biases.add(_bias(_get(attention, where, "wo"), f"{where}.wo"))
        if len(biases) > 1:
            raise ModelError(f"{where}: q/k/v and wo biases differ; a bias on some of them only is not read")
        return (
            heads,
            heads if kv_heads is None else kv_heads,
            dim // heads if head_dim is None else head_dim,
            biases.pop(),
            getattr(attention, "qk_norm", None) is not None,
        )

    heads, kv_heads, head_dim, bias, qk_norm = _same_attention(layers, fields)
    return {
        "num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim,
        "attention_bias": bias, "_qk_norm": qk_norm,
    }


def _ffn_hidden(ffn: Any, path: str) -> tuple[int, bool]:
    """The hidden width of a SwiGLU FeedForward config (w1: dim -> hidden) and whether it has biases."""
    w1 = _get(ffn, path, "w1")
    return _int(w1, f"{path}.w1", "out_features"), _bias(w1, f"{path}.w1")


def _moe(moe: Any, path: str, router_bias: bool) -> tuple[int, int, int, int]:
    """(experts, top_k, expert hidden, shared hidden) of a MoE config whose router gate has *router_bias*."""
    experts = _int(moe, path, "num_experts")
    router = _get(moe, path, "router")
    top_k = _int(router, f"{path}.router", "top_k")
    gate = _get(router, f"{path}.router", "gate")
    if _bias(gate, f"{path}.router.gate") != router_bias:
        raise ModelError(f"{path}.router.gate.bias = {not router_bias}: this model's router has {'a' if router_bias else 'no'} bias")
    inner = _get(_get(moe, path, "routed_experts"), f"{path}.routed_experts", "inner_experts")
    hidden = _int(inner, f"{path}.routed_experts.inner_experts", "hidden_dim")
    shared = getattr(moe, "shared_experts", None)
    return experts, top_k, hidden, 0 if shared is None else _ffn_hidden(shared, f"{path}.shared_experts")[0]


def _mlps(layers: list[Any], router_bias: bool) -> list[tuple[str, Any]]:
    """Each layer's ("dense", (hidden, bias)) or ("moe", (experts, top_k, hidden, shared))."""
    mlps = []
    for i, layer in enumerate(layers):
        path = f"model_config.layers[{i}]"
        if getattr(layer, "moe", None) is not None:
            mlps.append(("moe", _moe(layer.moe, f"{path}.moe", router_bias)))
        else:
            mlps.append(("dense", _ffn_hidden(_get(layer, path, "feed_forward"), f"{path}.feed_forward")))
    return mlps


def _one(mlps: list[tuple[str, Any]], kind: str) -> Any:
    values = {value for k, value in mlps if k == kind}
    if len(values) > 1:
        raise ModelError(f"model_config.layers: {kind} layers of different widths ({sorted(values)}) are not read")
    return values.pop() if values else None


def _dense_key(mlps: list[tuple[str, Any]]) -> dict[str, Any]:
    dense = _one(mlps, "dense")
    if dense is None:
        return {}
    hidden, bias = dense
    return {"intermediate_size": hidden, "mlp_bias": bias}


def hf_config(model_config: Any) -> dict[str, Any]:
    """The Hugging Face ``config.json`` of the model a torchtitan model config builds."""
    outer = type(model_config).__qualname__.split(".")[0]
    model_type = MODEL_TYPES.get(outer)
    if model_type is None:
        raise ModelError(
            f"model_config: a {type(model_config).__qualname__} is not read (flopsreg reads "
            f"{', '.join(f'{name}.Config' for name in MODEL_TYPES)})"
        )
    layers = _get(model_config, "model_config", "layers")
    if not isinstance(layers, (list, tuple)) or not layers:
        raise ModelError(f"model_config.layers = {layers!r:.60}: expected a non-empty list of layer configs")
    layers = list(layers)
    dim = _int(model_config, "model_config", "dim")
    tied = getattr(model_config, "enable_weight_tying", False)
    if type(tied) is not bool:
        raise ModelError(f"model_config.enable_weight_tying = {tied!r}: expected True or False")
    config: dict[str, Any] = {
        "model_type": model_type, "hidden_size": dim, "num_hidden_layers": len(layers),
        "vocab_size": _int(model_config, "model_config", "vocab_size"), "tie_word_embeddings": tied,
    }
    mlps = _mlps(layers, router_bias=model_type == "gpt_oss")  # only GPT-OSS's router has a bias
    moe = _one(mlps, "moe")
    if model_type == "deepseek_v3":
        config |= _deepseek(layers, mlps, moe, model_config)
    elif model_type == "gpt_oss":
        config |= _gpt_oss(layers, mlps, moe, dim)
    else:
        config |= _gqa_family(layers, mlps, moe, model_type, dim)
    return config


def _gqa_family(layers: list[Any], mlps: list[tuple[str, Any]], moe: Any, model_type: str, dim: int) -> dict[str, Any]:
    """Llama 3 and Qwen3 (dense, or Qwen3-MoE when some layer has a MoE)."""
    attention = _gqa(layers, dim)
    qk_norm = attention.pop("_qk_norm")
    if qk_norm != (model_type == "qwen3"):
        raise ModelError(
            f"model_config.layers[0].attention.qk_norm = {'set' if qk_norm else 'None'}: "
            f"{'Qwen3 normalises q and k' if model_type == 'qwen3' else 'Llama 3 has no q/k norms'}"
        )
    config = attention | _dense_key(mlps)
    if moe is not None:
        experts, top_k, hidden, shared = moe
        if shared:
            raise ModelError("model_config.layers: Qwen3 MoE layers with shared_experts are not read (Qwen3-MoE has none)")
        if config.get("mlp_bias"):
            raise ModelError("model_config.layers: FFN biases are not read for Qwen3-MoE")
        config.pop("mlp_bias", None)
        config |= {
            "model_type": "qwen3_moe", "num_experts": experts, "num_experts_per_tok": top_k,
            "moe_intermediate_size": hidden, "decoder_sparse_step": 1,
            "mlp_only_layers": [i for i, (kind, _) in enumerate(mlps) if kind == "dense"],
        }
    elif model_type == "qwen3" and config.pop("mlp_bias"):
        raise ModelError("model_config.layers[0].feed_forward.w1.bias = True: Qwen3 has no FFN biases")
    return config


def _gpt_oss(layers: list[Any], mlps: list[tuple[str, Any]], moe: Any, dim: int) -> dict[str, Any]:
    """GPT-OSS: GQA with sinks and biases, every layer MoE, sliding_window_size per layer."""
    if moe is None or any(kind != "moe" for kind, _ in mlps):
        raise ModelError("model_config.layers: every GPT-OSS layer has a moe config")
    experts, top_k, hidden, shared = moe
    if shared:
        raise ModelError("model_config.layers: GPT-OSS MoE layers have no shared_experts")
    attention = _gqa(layers, dim)
    attention.pop("_qk_norm")
    windows = [getattr(layer.attention, "sliding_window_size", None) for layer in layers]
    sizes = {w for w in windows if w is not None}
    if len(sizes) > 1:
        raise ModelError(f"model_config.layers: sliding_window_size differs between layers ({sorted(sizes)})")
    return attention | {
        "num_local_experts": experts, "num_experts_per_tok": top_k, "intermediate_size": hidden,
        "layer_types": ["full_attention" if w is None else "sliding_attention" for w in windows],
        **({"sliding_window": sizes.pop()} if sizes else {}),
    }


def _deepseek(layers: list[Any], mlps: list[tuple[str, Any]], moe: Any, model_config: Any) -> dict[str, Any]:
    """DeepSeek-V3 (and V2): MLA, the first layers dense, then MoE with shared experts; MTP layers."""

    def fields(attention: Any, where: str) -> tuple[int, ...]:
        return (
            _int(attention, where, "n_heads"),
            _int(attention, where, "q_lora_rank", minimum=0),
            *(_int(attention, where, name) for name in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")),
        )

    heads, q_lora, kv_lora, nope, rope, v = _same_attention(layers, fields)
    dense = [i for i, (kind, _) in enumerate(mlps) if kind == "dense"]
    if dense != list(range(len(dense))):
        raise ModelError(f"model_config.layers: dense layers {dense} are not the first ones (n_dense_layers)")
    config = {
        "num_attention_heads": heads, "q_lora_rank": q_lora or None, "kv_lora_rank": kv_lora,
        "qk_nope_head_dim": nope, "qk_rope_head_dim": rope, "v_head_dim": v,
        "first_k_dense_replace": len(dense), "n_shared_experts": None,
        "num_nextn_predict_layers": len(getattr(model_config, "mtp_layers", None) or ()),
    } | _dense_key(mlps)
    if config.pop("mlp_bias", False):
        raise ModelError("model_config.layers[0].feed_forward.w1.bias = True: DeepSeek-V3 has no FFN biases")
    if moe is not None:
        experts, top_k, hidden, shared = moe
        if shared % hidden:
            raise ModelError(f"model_config.layers: shared_experts width {shared} is not a multiple of the experts' {hidden}")
        config |= {
            "n_routed_experts": experts, "num_experts_per_tok": top_k, "moe_intermediate_size": hidden,
            "n_shared_experts": shared // hidden,
        }
    return config


def _model(config: dict[str, Any], registry: Registry) -> Model:
    blocks = ("mtp",) if config.get("num_nextn_predict_layers") else ()
    return Model.from_hf_config(config, registry=registry, blocks=blocks, name=f"torchtitan-{config['model_type']}")


def get_nparams_and_flops(
    model_config: Any, seq_len: int, *, convention: str = EXACT, registry: Registry | None = None
) -> tuple[int, int | Fraction]:
    """``(nparams, num_flops_per_token)`` of the model *model_config* builds, trained on
    sequences of *seq_len* tokens: every parameter (a tied embedding once, MTP layers included),
    and training FLOPs (forward + backward) per token."""
    length = as_int(seq_len)  # numpy integers too
    if length is None or length < 1:
        raise ModelError(f"seq_len = {shown(seq_len)}: expected an integer >= 1 (the training sequence length)")
    registry = registry or default_registry()
    config = hf_config(model_config)
    key = (registry, convention, tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in sorted(config.items())))
    plan = keep_selection(key, lambda: registry.select(_model(config, registry), convention=convention))
    parameters = registry.parameters(plan.model)
    nparams = parameters.total + sum(parameters.blocks.values())
    per_token = Fraction(TRAINING_PASSES * plan.forward(length), length)
    return nparams, int(per_token) if per_token.denominator == 1 else per_token
