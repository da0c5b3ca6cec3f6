"""dots.3 note's towers beside its language model (Dots3NoteModel of transformers 5.24): the MoE
ViT (Dots3NoteVisionModel, with its merger into the text width) and the audio encoder
(Dots3NoteAudioModel, with its adapter); each ``sum(p.numel())`` of its module and its forward
FLOPs as closed forms, with the image, video and audio rules of Dots3NoteProcessor.

The ViT's MLPs follow a per-layer schedule (``mlp_layer_types``, else the ``pyramid_num_routed``
the config class pops, and ``per_layer_config``): each layer dense or a top-k MoE of its own
experts. FLOPs and parameters are linear in each layer's widths, so the schedule enters the
closed forms only through sums over the layers (derived dims): a bounded number of terms however
many layers or kinds of layer there are. Checked against tests/data/hf_forward/forward_dots3mm.json
(tests/hf/test_dots3mm_forward.py); derived in docs/multimodal.md ("dots.3 note").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sympy

from flopsreg.patterns.hf._qwen_vit import QWEN3_VIDEO_PIXELS, smart_resize, smart_resize_video
from flopsreg.plugin import IMAGE_GRID, Dim, MediaPlan, MediaRule, TowerKind, where_symbol

__all__ = ["DOTS3_AUDIO", "DOTS3_AUDIO_CLIPS", "DOTS3_IMAGES", "DOTS3_VIDEOS", "DOTS3_VISION", "vision_schedule"]

_SOURCE = "transformers 5.24.0 models/dots3_note/modeling_dots3_note.py "
TEXT_HIDDEN = 5120  # Dots3NoteTextConfig.hidden_size: what both adapters must map into
# Dots3NoteVisionConfig.__post_init__: with neither pyramid_num_routed nor mlp_layer_types, the released pyramid.
PYRAMID = [-1] * 25 + list(range(4, 65, 4)) + [64]
# What a vision per_layer_config entry may set: the MLP widths the schedule sums (anything else is refused).
PER_LAYER = ("num_local_experts", "num_experts_per_tok", "moe_intermediate_size", "intermediate_size")
# Qwen2VLImageProcessor's class defaults (the image processor AutoImageProcessor maps dots3_note to):
# size shortest_edge / longest_edge, i.e. min_pixels 56 x 56 and max_pixels 28 x 28 x 1280.
PIXELS = (3136, 1003520)
SAMPLING_RATE = 16_000  # Dots3NoteFeatureExtractor's sampling_rate
CHUNK_SECONDS = 60  # its chunk_length: a longer clip is cut into chunks of this many seconds


def _int(sub: Mapping[str, Any], field: str, default: int, minimum: int = 0) -> int:
    value = sub.get(field)
    value = default if value is None else value
    if type(value) is not int or value < minimum:
        raise ValueError(f"{field} = {value!r:.60}: expected an integer >= {minimum}")
    return value


def _text_hidden(data: Mapping[str, Any]) -> int:
    text = data.get("text_config")
    value = text.get("hidden_size", TEXT_HIDDEN) if isinstance(text, Mapping) else TEXT_HIDDEN
    return value if type(value) is int else TEXT_HIDDEN  # the text reader refuses a bad one by name


def _adapter_out(sub: Mapping[str, Any], data: Mapping[str, Any], field: str) -> int:
    """Dots3NoteConfig.validate_architecture: each adapter maps into the text hidden size."""
    out, text = _int(sub, field, TEXT_HIDDEN, 1), _text_hidden(data)
    if out != text:
        raise ValueError(f"{field} = {out}: Dots3NoteConfig requires the text hidden_size ({text}); "
                         "a flat config's class-default adapters are 5120 wide")
    return out


def _vision_width(sub: Mapping[str, Any]) -> tuple[int, int]:
    """(hidden, heads) as Dots3NoteVisionConfig takes them (``embed_dim`` and ``num_heads`` win), checked."""
    hidden = _int(sub, "embed_dim", _int(sub, "hidden_size", 1536, 1), 1)
    heads = _int(sub, "num_heads", _int(sub, "num_attention_heads", 24, 1), 1)
    if hidden % heads:
        raise ValueError(f"hidden_size = {hidden}: Dots3NoteVisionConfig requires a multiple of num_attention_heads ({heads})")
    if _int(sub, "adapter_in_dim", 1536, 1) != hidden:
        raise ValueError(f"adapter_in_dim = {sub.get('adapter_in_dim', 1536)}: Dots3NoteVisionConfig requires hidden_size ({hidden})")
    if _int(sub, "adapter_merge_size", 2, 1) != _int(sub, "spatial_merge_size", 2, 1):
        raise ValueError(f"adapter_merge_size = {sub.get('adapter_merge_size', 2)}: Dots3NoteVisionConfig requires "
                         f"spatial_merge_size ({sub.get('spatial_merge_size', 2)})")
    rope = sub.get("rope_parameters")
    if isinstance(rope, Mapping) and rope.get("rope_type", "axial") != "axial":
        raise ValueError(f"rope_parameters.rope_type = {rope['rope_type']!r}: Dots3NoteVisionRotaryEmbedding supports only 'axial'")
    return hidden, heads


def vision_schedule(sub: Mapping[str, Any]) -> list[tuple[str, int, int, int]]:
    """Per layer ``(kind, width, experts, top_k)`` as Dots3NoteVisionConfig builds them: kind
    ``"dense"`` (width its intermediate_size) or ``"sparse"`` (width moe_intermediate_size, its
    experts and top-k), from ``mlp_layer_types`` or the popped ``pyramid_num_routed`` (the released
    pyramid when neither is given: dense where a count is <= 0, else that many experts and
    top-k ``min(num_experts_per_tok, count)``), then each layer's ``per_layer_config``."""
    layers = _int(sub, "num_hidden_layers", 42, 1)
    top_k = sub.get("num_experts_per_tok")
    top_k = _int(sub, "capacity_factor", 2, 1) if top_k is None else _int(sub, "num_experts_per_tok", 2, 1)
    pyramid, kinds = sub.get("pyramid_num_routed"), sub.get("mlp_layer_types")
    per_layer: dict[int, dict[str, Any]] = {}
    if pyramid is None and kinds is None and layers != len(PYRAMID):
        raise ValueError(f"num_hidden_layers = {layers}: without mlp_layer_types or pyramid_num_routed, Dots3NoteVisionConfig's "
                         f"pyramid of experts has {len(PYRAMID)} entries (transformers refuses another count)")
    if pyramid is None and kinds is None:
        pyramid = PYRAMID
    if pyramid is not None:
        if not isinstance(pyramid, list) or len(pyramid) != layers or not all(type(n) is int for n in pyramid):
            raise ValueError(f"pyramid_num_routed = {pyramid!r:.60}: expected a list of {layers} integers, one per layer")
        kinds = ["sparse" if n > 0 else "dense" for n in pyramid]
        per_layer = {i: {"num_local_experts": n, "num_experts_per_tok": min(top_k, n)} for i, n in enumerate(pyramid) if n > 0}
    given = sub.get("per_layer_config")
    if given is not None:  # a given per_layer_config replaces the pyramid's (setdefault)
        if not isinstance(given, Mapping):
            raise ValueError(f"per_layer_config = {given!r:.60}: expected an object of layer index -> fields")
        per_layer = {}
        for key, entry in given.items():
            index = int(key) if isinstance(key, int) or str(key).isdigit() else -1
            if not 0 <= index < layers or not isinstance(entry, Mapping):
                raise ValueError(f"per_layer_config[{key!r}] = {entry!r:.60}: expected a layer index in [0, {layers}) "
                                 "holding an object (transformers refuses others)")
            extra = sorted(set(entry) - set(PER_LAYER))
            if extra:
                raise ValueError(f"per_layer_config[{key!r}].{extra[0]}: unsupported (flopsreg counts a vision layer's "
                                 f"{', '.join(PER_LAYER)})")
            per_layer[index] = dict(entry)
    if not isinstance(kinds, list) or len(kinds) != layers or not set(kinds) <= {"dense", "sparse"}:
        raise ValueError(f"mlp_layer_types = {kinds!r:.80}: expected 'dense' or 'sparse' for each of the {layers} layers")
    if "sparse" in kinds and sub.get("mlp_bias") is True:
        raise ValueError("mlp_bias = true: Dots3NoteVisionConfig refuses it with sparse layers (stacked experts have no biases)")
    out = []
    for i, kind in enumerate(kinds):
        layer = {**sub, "num_experts_per_tok": top_k, **per_layer.get(i, {})}
        if kind == "dense":
            out.append(("dense", _int(layer, "intermediate_size", 4224, 1), 0, 0))
            continue
        experts, k = _int(layer, "num_local_experts", 64, 1), _int(layer, "num_experts_per_tok", 2, 1)
        if k > experts:
            raise ValueError(f"per_layer_config[{i}].num_experts_per_tok = {k}: expected at most its num_local_experts ({experts}); "
                             "the router's top-k fails")
        out.append(("sparse", _int(layer, "moe_intermediate_size", 2112, 1), experts, k))
    return out


def _vision(key: str):
    """A derived dim of the ViT: its widths (checked) and the schedule's sums over the layers."""

    def derive(sub: Mapping[str, Any], data: Mapping[str, Any]) -> int:
        hidden, heads = _vision_width(sub)
        schedule = vision_schedule(sub)
        values = {
            "h": hidden, "heads": heads, "head": hidden // heads,
            "qkv_bias": int(bool(sub.get("use_bias", sub.get("attention_bias", False)))),
            "out": _adapter_out(sub, data, "adapter_out_dim"),
            "dense_layers": sum(kind == "dense" for kind, *_ in schedule),
            "dense_width": sum(width for kind, width, _, _ in schedule if kind == "dense"),
            "routers": sum(experts for _, _, experts, _ in schedule),
            "held": sum(width * experts for _, width, experts, _ in schedule),
            "active": sum(width * k for _, width, _, k in schedule),
        }
        return values[key]

    return derive


(h, head, channels, patch, merge, layers, qkv_bias, mlp_bias, out, dense_layers, dense_width, routers, held, active) = sympy.symbols(
    "h head channels patch merge layers qkv_bias mlp_bias out dense_layers dense_width routers held active", integer=True, nonnegative=True
)
t, rows, columns = IMAGE_GRID
patches = where_symbol("P")  # the image's patches


def _one_frame(dims: Mapping[str, int]) -> None:
    """Dots3NoteVisionPatchEmbed reshapes the pixels to channels x patch x patch: one frame a patch.
    The processors' class default temporal_patch_size 2 hands it twice the patches the grid says."""
    if dims["temporal_patch_size"] != 1:
        raise ValueError(f"temporal_patch_size = {dims['temporal_patch_size']}: Dots3NoteVisionPatchEmbed takes one frame a "
                         f"patch ({dims['channels']} x {dims['patch']} x {dims['patch']}); with more the grid counts fewer "
                         "patches than the tower makes and transformers raises: run the processor with temporal_patch_size 1")


def _plan(dims: Mapping[str, int], height: int, width: int) -> MediaPlan:
    """Qwen2VLImageProcessor: smart_resize to multiples of patch x merge within min/max pixels;
    Dots3NoteProcessor expands the placeholder to rows x columns / merge^2 tokens, no others."""
    _one_frame(dims)
    p, m = dims["patch"], dims["merge"]
    resized = smart_resize(height, width, p * m, dims["min_pixels"], dims["max_pixels"])
    grid = (1, resized[0] // p, resized[1] // p)
    return MediaPlan(height=height, width=width, resized=resized, grid=grid, tokens=grid[1] * grid[2] // m**2)


def _from_tokens(dims: Mapping[str, int], tokens: int) -> MediaPlan:
    """An image known by its tokens: ``tokens x merge^2`` patches (one row of merge groups: every piece depends on the count alone)."""
    _one_frame(dims)
    m = dims["merge"]
    return MediaPlan(height=0, width=0, resized=(0, 0), grid=(1, m, tokens * m), tokens=tokens)


def _video_plan(dims: Mapping[str, int], frames: int, height: int, width: int) -> MediaPlan:
    """Qwen3VLVideoProcessor (AutoVideoProcessor's class for dots3_note) with temporal_patch_size 1:
    smart_resize over the whole video (frames x area within min/max pixels), a grid of frames x rows
    x columns; Dots3NoteProcessor.replace_video_token expands the placeholder to t rows columns / merge^2."""
    _one_frame(dims)
    p, m = dims["patch"], dims["merge"]
    resized = smart_resize_video(frames, height, width, 1, p * m, dims["min_pixels"], dims["max_pixels"])
    grid = (frames, resized[0] // p, resized[1] // p)
    return MediaPlan(height=height, width=width, resized=resized, grid=grid, tokens=frames * grid[1] * grid[2] // m**2, frames=frames)


DOTS3_IMAGES = MediaRule(
    summary="Qwen2VLImageProcessor's smart_resize to multiples of patch x merge pixels, area within [min_pixels, max_pixels]; "
    "tokens = rows x columns / merge^2, Dots3NoteProcessor adds no others (a chat template's markers are text); "
    "the language model attends to them causally",
    plan=_plan,
    from_tokens=_from_tokens,
    options={"min_pixels": PIXELS[0], "max_pixels": PIXELS[1], "temporal_patch_size": 1},
    rules=(
        "patch_embed: a Conv2d of patch x patch over each of the rows x columns patches (3 channels)",
        "blocks: qkv (h -> 3h) and proj (h -> h) per patch; attention over every pair of the image's patches; "
        "dense layers a gated MLP (3 h x intermediate_size), sparse layers a router (h -> E) and k routed experts "
        "(3 h x moe_intermediate_size each), summed over the per-layer schedule",
        "merger: LayerNorm, merge^2 h -> merge^2 h -> text hidden per token",
    ),
)


DOTS3_VIDEOS = MediaRule(
    summary=f"Qwen3VLVideoProcessor run with the tower's patch_size and temporal_patch_size 1 (its class defaults 16 and 2 "
    f"fail in the tower): smart_resize with {QWEN3_VIDEO_PIXELS[0]} <= frames x area <= {QWEN3_VIDEO_PIXELS[1]}, each frame "
    "its own grid; tokens = frames x rows x columns / merge^2, Dots3NoteProcessor adds no others; causal like text",
    plan=_video_plan,
    options={"min_pixels": QWEN3_VIDEO_PIXELS[0], "max_pixels": QWEN3_VIDEO_PIXELS[1], "temporal_patch_size": 1},
    rules=(
        "the images' pieces over each frame's rows x columns patches: attention within each frame "
        "(get_vision_attention_seqlens cuts the packed patches per frame)",
    ),
    takes="video",
)


def _vision_flops() -> dict[str, sympy.Expr]:
    """One image of ``t x rows x columns`` patches (multiply-adds x 2; norms, rotary and routing weights elementwise)."""
    return {
        "patch_embed": 2 * patches * h * channels * patch**2,
        "blocks.qkv_proj": layers * 2 * patches * 4 * h**2,
        "blocks.attention": 4 * h * layers * t * (rows * columns) ** 2,
        "blocks.mlp": 2 * patches * 3 * h * dense_width,
        "blocks.router": 2 * patches * h * routers,
        "blocks.experts": 2 * patches * 3 * h * active,
        "merger": 2 * patches * merge**2 * h**2 + 2 * patches * h * out,
    }


DOTS3_VISION = TowerKind(
    name="dots3_vision",
    title="dots.3 note MoE ViT",
    summary="Dots3NoteVisionModel: Conv2d patches with an RMSNorm, pre-norm blocks (qkv, q/k RMSNorms, axial rotary, proj; "
    "a dense or MoE MLP per layer), a final RMSNorm and the merger (FLOPs for the images given)",
    dims=(
        Dim("h", "{tower}.hidden_size", 1536, read="derived", derive=_vision("h")),
        Dim("head", "{tower}.num_attention_heads", 24, read="derived", derive=_vision("head"), latex="d"),
        Dim("channels", "{tower}.num_channels", 3), Dim("patch", "{tower}.patch_size", 14),
        Dim("merge", "{tower}.spatial_merge_size", 2), Dim("layers", "{tower}.num_hidden_layers", 42, latex="L"),
        Dim("qkv_bias", "{tower}.attention_bias", False, read="derived", derive=_vision("qkv_bias")),
        Dim("mlp_bias", "{tower}.mlp_bias", False, read="bool"),
        Dim("out", "{tower}.adapter_out_dim", TEXT_HIDDEN, read="derived", derive=_vision("out")),
        Dim("dense_layers", "{tower}.mlp_layer_types", 25, read="derived", derive=_vision("dense_layers"), latex="L_d"),
        Dim("dense_width", "{tower}.intermediate_size", 105600, read="derived", derive=_vision("dense_width"), latex=r"{\Sigma F}"),
        Dim("routers", "{tower}.num_local_experts", 608, read="derived", derive=_vision("routers"), latex=r"{\Sigma E}"),
        Dim("held", "{tower}.moe_intermediate_size", 1284096, read="derived", derive=_vision("held"), latex=r"{\Sigma E F_e}"),
        Dim("active", "{tower}.num_experts_per_tok", 71808, read="derived", derive=_vision("active"), latex=r"{\Sigma k F_e}"),
    ),
    parameters=(
        channels * patch**2 * h + 2 * h  # patch_embed: Conv2d with bias, RMSNorm
        + layers * (2 * h + 4 * h**2 + 4 * h * qkv_bias + 2 * head)  # norm1, norm2, qkv, proj, q_norm, k_norm
        + 3 * h * dense_width + mlp_bias * (2 * dense_width + dense_layers * h)  # dense gated MLPs
        + 3 * h * held + h * routers  # each sparse layer's experts (gate_up, down) and router
        + h  # the final RMSNorm
        + 2 * h + merge**4 * h**2 + merge**2 * h + merge**2 * h * out + out  # merger: ln_q, two Linear
    ),
    reference=_SOURCE + "Dots3NoteVisionModel",
    images=DOTS3_IMAGES,
    videos=DOTS3_VIDEOS,
    flops=_vision_flops(),
    flops_where={"P": t * rows * columns},
)


def _audio_values(sub: Mapping[str, Any], data: Mapping[str, Any]) -> dict[str, int]:
    """Dots3NoteAudioConfig's widths as it takes them (a Whisper-style ``whisper_config`` and the
    ``whisper_adapter_*`` names win), checked as its validate_architecture checks them."""
    legacy = sub.get("whisper_config") or {}
    if not isinstance(legacy, Mapping):
        raise ValueError(f"whisper_config = {legacy!r:.60}: expected an object")
    names = {"d_model": "hidden_size", "encoder_attention_heads": "num_attention_heads", "encoder_layers": "num_hidden_layers",
             "encoder_ffn_dim": "intermediate_size", "num_mel_bins": "feature_size"}
    sub = {**sub, **{name: legacy[old] for old, name in names.items() if old in legacy}}
    sub["adapter_input_size"] = sub.get("whisper_adapter_in_dim", sub.get("adapter_input_size"))
    sub["adapter_out_dim"] = sub.get("whisper_adapter_out_dim", sub.get("adapter_output_size", sub.get("adapter_out_dim")))
    hidden, heads = _int(sub, "hidden_size", 1280, 1), _int(sub, "num_attention_heads", 20, 1)
    if hidden % heads:
        raise ValueError(f"hidden_size = {hidden}: Dots3NoteAudioConfig requires a multiple of num_attention_heads ({heads})")
    if _int(sub, "adapter_input_size", 1280, 1) != hidden:
        raise ValueError(f"adapter_input_size = {sub['adapter_input_size']}: Dots3NoteAudioConfig requires hidden_size ({hidden})")
    return {
        "h": hidden, "i": _int(sub, "intermediate_size", 5120, 1), "layers": _int(sub, "num_hidden_layers", 32, 1),
        "mel": _int(sub, "feature_size", 128, 1), "hop": _int(sub, "hop_length", 160, 1),
        "out": _adapter_out(sub, data, "adapter_out_dim"),
    }


def _audio(key: str):
    def derive(sub: Mapping[str, Any], data: Mapping[str, Any]) -> int:
        return _audio_values(sub, data)[key]

    return derive


def _chunks(tokens: list[int], mel: int, samples: int = 0) -> MediaPlan:
    """A clip of chunks of these tokens: each chunk its own grid (its own attention span), 8 frames a token."""
    grids = tuple((1, 8 * n, mel) for n in tokens) if len(tokens) > 1 else ()
    total = sum(tokens)
    return MediaPlan(height=0, width=0, resized=(0, 0), grid=(1, 8 * total, mel), tokens=total, samples=samples, grids=grids)


def _clip(dims: Mapping[str, int], samples: int) -> MediaPlan:
    """Dots3NoteFeatureExtractor: the clip cut into chunks of 60 s (chunk_length), ``ceil(s / (8 hop))``
    tokens a chunk of s samples (three stride-2 convolutions), each chunk's features 8 frames a token;
    Dots3NoteProcessor expands the placeholder to the chunks' tokens, no others. The chunks run as a
    batch padded to the longest; each is counted over its own frames and tokens (the padding is masked)."""
    chunk = CHUNK_SECONDS * SAMPLING_RATE
    lengths = [min(chunk, samples - start) for start in range(0, samples, chunk)]
    return _chunks([-(-length // (8 * dims["hop"])) for length in lengths], dims["mel"], samples)


def _clip_from_tokens(dims: Mapping[str, int], tokens: int) -> MediaPlan:
    """A clip known by its n tokens: whole chunks of ceil(60 s / (8 hop)) tokens and the rest, 8 frames a
    token (exactly as its samples would give: a chunk's last token may be partly padding)."""
    whole = -(-CHUNK_SECONDS * SAMPLING_RATE // (8 * dims["hop"]))
    return _chunks([min(whole, tokens - start) for start in range(0, tokens, whole)], dims["mel"])


DOTS3_AUDIO_CLIPS = MediaRule(
    summary="16 kHz clips cut into chunks of 60 s (chunk_length); n = ceil(samples / (8 hop_length)) tokens a chunk, "
    "8n mel frames; Dots3NoteProcessor adds no others; the language model attends to them causally "
    "(Dots3NoteFeatureExtractor, Dots3NoteProcessor.replace_audio_token)",
    plan=_clip,
    from_tokens=_clip_from_tokens,
    takes="audio",
    sampling_rate=SAMPLING_RATE,
    rules=(
        "grid: (1, rows = 8n mel frames the encoder takes, columns = mel bins = feature_size), one per 60 s chunk "
        "(the batch's padding to the longest chunk is masked and not counted)",
        "conv_stem: three 3x3 stride-2 Conv2d (1 -> c -> c -> c channels, GELU) over the real taps (the kernel's zero "
        "padding not counted), conv_out (c x ceil(mel / 8) -> h) per token",
        "layers: q, k, v, o (h -> h) and the gated MLP (h -> 2i, i -> h) per token; attention over every pair of the "
        "chunk's n tokens (bidirectional, padding masked)",
        "adapter: LayerNorm, h -> text hidden, GELU, text hidden -> text hidden per token",
    ),
)

(ah, ai, alayers, mel, conv, abias, aout) = sympy.symbols("h i layers mel conv bias out", integer=True, nonnegative=True)
tokens = where_symbol("n")


# The (output, tap) pairs of a 3-tap stride-2 kernel padded 1 on each side that read a real input,
# along an axis of x inputs: ceil(x / 2) outputs of 3 taps, less the left pad and, x odd, the right:
# ceil(x / 2) + x - 1. Along the mel axis the convs take M, ceil(M / 2), ceil(M / 4) bins (T_1..T_3);
# along time 8n, 4n, 2n frames (even): 12n - 1, 6n - 1, 3n - 1.
_T1, _T2, _T3 = where_symbol("T_1"), where_symbol("T_2"), where_symbol("T_3")
_AUDIO_WHERE = {
    "n": rows / 8,
    "T_1": sympy.ceiling(columns / 2) + columns - 1,
    "T_2": sympy.ceiling(columns / 4) + sympy.ceiling(columns / 2) - 1,
    "T_3": sympy.ceiling(columns / 8) + sympy.ceiling(columns / 4) - 1,
}


def _audio_flops() -> dict[str, sympy.Expr]:
    """One clip of n tokens (``rows = 8n`` frames, ``columns`` mel bins): multiply-adds x 2."""
    return {
        "conv_stem.convs": 2 * conv * _T1 * (12 * tokens - 1) + 2 * conv**2 * _T2 * (6 * tokens - 1)
        + 2 * conv**2 * _T3 * (3 * tokens - 1),
        "conv_stem.conv_out": 2 * tokens * conv * sympy.ceiling(columns / 8) * ah,
        "layers.qkvo_proj": alayers * 2 * tokens * 4 * ah**2,
        "layers.attention": 4 * ah * alayers * tokens**2,
        "layers.mlp": alayers * 2 * tokens * 3 * ah * ai,
        "adapter": 2 * tokens * ah * aout + 2 * tokens * aout**2,
    }


DOTS3_AUDIO = TowerKind(
    name="dots3_audio",
    title="dots.3 note audio encoder",
    summary="Dots3NoteAudioModel: a three-conv stem and conv_out, pre-norm rotary attention layers (biased q, v, o; "
    "k without bias) with gated MLPs, an RMSNorm and the adapter (FLOPs for the audio clips given)",
    dims=(
        Dim("h", "{tower}.hidden_size", 1280, read="derived", derive=_audio("h")),
        Dim("i", "{tower}.intermediate_size", 5120, read="derived", derive=_audio("i")),
        Dim("layers", "{tower}.num_hidden_layers", 32, read="derived", derive=_audio("layers"), latex="L"),
        Dim("mel", "{tower}.feature_size", 128, read="derived", derive=_audio("mel")),
        Dim("hop", "{tower}.hop_length", 160, read="derived", derive=_audio("hop")),
        Dim("conv", "{tower}.downsample_hidden_size", 480, latex="d_c"),
        Dim("bias", "{tower}.attention_bias", True, read="bool"),
        Dim("out", "{tower}.adapter_out_dim", TEXT_HIDDEN, read="derived", derive=_audio("out")),
    ),
    parameters=(
        10 * conv + 2 * (9 * conv**2 + conv)  # the three Conv2d with biases
        + conv * sympy.ceiling(mel / 8) * ah  # conv_out, no bias
        + alayers * (2 * ah + 4 * ah**2 + 3 * abias * ah + 3 * ah * ai + 2 * ai + ah)  # norms, q k v o, gated MLP with biases
        + ah  # layer_norm
        + 2 * ah + ah * aout + aout + aout**2 + aout  # adapter: LayerNorm, fc1, fc2
    ),
    reference=_SOURCE + "Dots3NoteAudioModel",
    images=DOTS3_AUDIO_CLIPS,
    flops=_audio_flops(),
    flops_where=_AUDIO_WHERE,
)
