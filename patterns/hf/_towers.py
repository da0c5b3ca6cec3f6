"""The tower kinds multimodal wrappers build beside their language model: vision encoders and
projectors, each ``sum(p.numel())`` of its transformers 5.24 module as a formula of its config.

Each formula is derived in docs/hf-configs.md ("Multimodal wrappers: towers") and checked
against transformers' count of the class-default config and of the published configs
(tests/data/hf_forward/towers.json). Defaults are the config classes' own; ``{tower}`` is the
wrapper's sub-config of the tower (``vision_config``).
"""

from __future__ import annotations

import sympy

from flopsreg.patterns.hf._gemma3_vit import GEMMA3_IMAGES
from flopsreg.patterns.hf._qwen_vit import QWEN2_5_VL_IMAGES, QWEN2_VL_IMAGES, QWEN2_VL_VIDEOS, QWEN3_VL_IMAGES, QWEN3_VL_VIDEOS
from flopsreg.plugin import IMAGE_GRID, Dim, TowerKind, where_symbol

_SOURCE = "transformers 5.24.0 models/"
# The symbols the formulas use: a Dim of the same name is the same symbol.
(h, i, layers, channels, image, patch, frames, merge, out, positions, pooling_head, text, features, bias,
 grid_h, grid_w, norm, shuffle_in, shuffle_out, vision_out) = sympy.symbols(
    "h i layers channels image patch frames merge out positions pooling_head text features bias "
    "grid_h grid_w norm shuffle_in shuffle_out vision_out", integer=True, nonnegative=True
)
# A pre-norm ViT block with biased q, k, v, o and a two-matrix MLP with biases, two LayerNorms.
VIT_BLOCK = 4 * h**2 + 2 * h * i + i + 9 * h
# SigLIP's attention-pooling head: probe h, in_proj 3h^2 + 3h, out_proj h^2 + h, a LayerNorm, the MLP.
SIGLIP_POOLING_HEAD = 4 * h**2 + 2 * h * i + i + 8 * h

tokens = sympy.Symbol("tokens", integer=True, nonnegative=True)


def _siglip_flops() -> dict[str, sympy.Expr]:
    """Gemma 3's SigLIP ViT and projector for one image of ``t x rows x columns`` patches (t = 1;
    multiply-adds x 2; derived in docs/multimodal.md): the Conv2d patch embedding, per block q, k,
    v and o (4h^2 a patch), attention over every pair of the image's patches (QK^T and AV, 2 x 2h
    a pair), the two-matrix MLP, and the projector's one matrix on the ``tokens`` pooled soft
    tokens (the average pooling and the norms are elementwise)."""
    t, rows, columns = IMAGE_GRID
    patches = t * rows * columns
    return {
        "patch_embed": 2 * patches * h * channels * patch**2,
        "blocks.qkv_proj": layers * 2 * patches * 4 * h**2,
        "blocks.attention": 4 * h * layers * t * (rows * columns) ** 2,
        "blocks.mlp": layers * 2 * patches * 2 * h * i,
        "projector": 2 * tokens * h * text,
    }


# Gemma 3's vision tower: the dims its image rule also reads are the text width the projector
# maps into and the soft tokens per image (Gemma3Config.mm_tokens_per_image, default 256).
SIGLIP_VISION = TowerKind(
    name="siglip_vision",
    title="SigLIP ViT",
    summary="SiglipVisionModel: Conv2d patches, learned positions (nn.Embedding), pre-norm blocks with biases, "
    "a final LayerNorm, the attention-pooling head when vision_use_head (FLOPs for Gemma 3's images)",
    dims=(
        Dim("h", "{tower}.hidden_size", 768), Dim("i", "{tower}.intermediate_size", 3072),
        Dim("layers", "{tower}.num_hidden_layers", 12), Dim("channels", "{tower}.num_channels", 3),
        Dim("image", "{tower}.image_size", 224), Dim("patch", "{tower}.patch_size", 16),
        Dim("pooling_head", "{tower}.vision_use_head", True, read="bool"),
        Dim("text", "text_config.hidden_size", 2304), Dim("tokens", "mm_tokens_per_image", 256),
    ),
    parameters=(
        channels * patch**2 * h + h  # patch_embedding (Conv2d with bias)
        + sympy.floor(image / patch) ** 2 * h  # position_embedding
        + layers * VIT_BLOCK
        + 2 * h  # post_layernorm
        + pooling_head * SIGLIP_POOLING_HEAD
    ),
    embeddings=sympy.floor(image / patch) ** 2 * h,
    reference=_SOURCE + "siglip/modeling_siglip.py SiglipVisionModel",
    images=GEMMA3_IMAGES,
    flops=_siglip_flops(),
)

GEMMA3_PROJECTOR = TowerKind(
    name="gemma3_projector",
    title="Gemma 3 projector",
    summary="Gemma3MultiModalProjector: an RMSNorm on the vision width, one matrix to the text width (average pooling holds no weights)",
    dims=(Dim("h", "{tower}.hidden_size", 768), Dim("text", "text_config.hidden_size", 2304)),
    parameters=h * text + h,
    reference=_SOURCE + "gemma3/modeling_gemma3.py Gemma3MultiModalProjector",
)

# The Qwen-VL ViTs' shared dims: Conv3d patches over temporal_patch_size frames, the patch merger
# (short LaTeX names, so that their FLOPs fit a column of a two-column paper).
_CH, _FRAMES, _OUT = r"n_{\mathrm{ch}}", r"n_{\mathrm{f}}", r"d_{\mathrm{out}}"
_QWEN_VIT_DIMS = (
    Dim("h", "{tower}.hidden_size", 1152), Dim("i", "{tower}.intermediate_size", 4304),
    Dim("layers", "{tower}.depth", 27, latex="L"), Dim("channels", "{tower}.in_channels", 3, latex=_CH),
    Dim("patch", "{tower}.patch_size", 16, latex="p"), Dim("frames", "{tower}.temporal_patch_size", 2, latex=_FRAMES),
    Dim("merge", "{tower}.spatial_merge_size", 2, latex="m"), Dim("out", "{tower}.out_hidden_size", 3584, latex=_OUT),
    Dim("heads", "{tower}.num_heads", 16),
)
# A merger: a norm, then (h merge^2)^2 and (h merge^2) x out, both biased (the norm is added apart).
_MERGER = (h * merge**2) ** 2 + h * merge**2 + h * merge**2 * out + out
(deepstack, window, fullatt) = sympy.symbols("deepstack window fullatt", integer=True, nonnegative=True)


def _qwen_vit_flops(mlp: sympy.Expr, mergers: sympy.Expr, attention: sympy.Expr) -> dict[str, sympy.Expr]:
    """A Qwen-VL ViT's forward FLOPs for one image of ``t x rows x columns`` patches (multiply-adds
    x 2; derived in docs/multimodal.md): the Conv3d patch embedding, per block the fused qkv and
    proj (4h^2 a patch), attention (*attention*), the MLP (*mlp* multiply-adds a patch), and
    *mergers* mergers over the ``rows/merge x columns/merge`` merged tokens of each frame."""
    t, rows, columns = IMAGE_GRID
    patches = t * rows * columns
    wide = h * merge**2
    return {
        "patch_embed": 2 * patches * h * channels * frames * patch**2,
        "blocks.qkv_proj": layers * 2 * patches * 4 * h**2,
        "blocks.attention": attention,
        "blocks.mlp": layers * 2 * patches * mlp,
        "merger": mergers * 2 * t * (rows / merge) * (columns / merge) * (wide**2 + wide * out),
    }


_T, _ROWS, _COLUMNS = IMAGE_GRID
# Attention over the pairs of each frame of an image: QK^T and AV, 2 x 2h multiply-adds a pair.
_FULL_PAIRS = _T * (_ROWS * _COLUMNS) ** 2
# Qwen2.5-VL's windows (transformers' get_vision_window_index): k = window_size // merge // patch
# merged tokens a side, the last window of a row or column partial. The pairs of one frame factor
# into S_r S_c, the sums of squared window lengths along the merged rows and columns, times merge^4
# patch pairs per merged pair.
_SIDE, _SQUARES_ROWS, _SQUARES_COLUMNS = where_symbol("k"), where_symbol("S_r"), where_symbol("S_c")


def _squares(merged: sympy.Expr) -> sympy.Expr:
    """sum over the windows along one axis of (merged tokens in it)^2: k^2 floor(n/k) + (n mod k)^2."""
    return _SIDE**2 * sympy.floor(merged / _SIDE) + sympy.Mod(merged, _SIDE) ** 2


_WINDOWS = {"k": sympy.floor(window / (merge * patch)), "S_r": _squares(_ROWS / merge), "S_c": _squares(_COLUMNS / merge)}
_WINDOW_PAIRS = _T * merge**4 * _SQUARES_ROWS * _SQUARES_COLUMNS
_FULL_LAYERS = sympy.Min(fullatt, layers)

QWEN3_5_VISION = TowerKind(
    name="qwen3_5_vision",
    title="Qwen3.5 ViT",
    summary="Qwen3_5VisionModel: Conv3d patches over temporal_patch_size frames, learned positions (nn.Embedding), "
    "ViT blocks with a fused qkv, the patch merger (LayerNorm, two matrices to out_hidden_size)",
    dims=(*_QWEN_VIT_DIMS, Dim("positions", "{tower}.num_position_embeddings", 2304)),
    parameters=(
        channels * frames * patch**2 * h + h  # patch_embed (Conv3d with bias)
        + positions * h  # pos_embed
        + layers * VIT_BLOCK
        + 2 * h + _MERGER  # merger
    ),
    embeddings=positions * h,
    reference=_SOURCE + "qwen3_5/modeling_qwen3_5.py Qwen3_5VisionModel",
    images=QWEN3_VL_IMAGES,
    videos=QWEN3_VL_VIDEOS,
    flops=_qwen_vit_flops(2 * h * i, 1, 4 * h * layers * _FULL_PAIRS),
)

QWEN3_VL_VISION = TowerKind(
    name="qwen3_vl_vision",
    title="Qwen3-VL ViT",
    summary="Qwen3VLVisionModel: Qwen3.5's ViT, plus one deepstack merger (LayerNorm after the shuffle) per deepstack_visual_indexes entry",
    dims=(
        *_QWEN_VIT_DIMS, Dim("positions", "{tower}.num_position_embeddings", 2304),
        Dim("deepstack", "{tower}.deepstack_visual_indexes", [8, 16, 24], read="count", latex=r"n_{\mathrm{ds}}"),
    ),
    parameters=(
        channels * frames * patch**2 * h + h + positions * h + layers * VIT_BLOCK + 2 * h + _MERGER
        + deepstack * (2 * h * merge**2 + _MERGER)  # deepstack_merger_list
    ),
    embeddings=positions * h,
    reference=_SOURCE + "qwen3_vl/modeling_qwen3_vl.py Qwen3VLVisionModel",
    images=QWEN3_VL_IMAGES,
    videos=QWEN3_VL_VIDEOS,
    flops=_qwen_vit_flops(2 * h * i, 1 + deepstack, 4 * h * layers * _FULL_PAIRS),
)

ratio = sympy.Symbol("ratio", integer=True, nonnegative=True)
QWEN2_VL_VISION = TowerKind(
    name="qwen2_vl_vision",
    title="Qwen2-VL ViT",
    summary="Qwen2VisionTransformerPretrainedModel: Conv3d patches without bias, ViT blocks of embed_dim with a fused qkv "
    "and an MLP of embed_dim x mlp_ratio, the patch merger (LayerNorm, two matrices to hidden_size)",
    dims=(
        Dim("h", "{tower}.embed_dim", 1280), Dim("ratio", "{tower}.mlp_ratio", 4, latex=r"\rho"),
        Dim("layers", "{tower}.depth", 32, latex="L"), Dim("channels", "{tower}.in_channels", 3, latex=_CH),
        Dim("patch", "{tower}.patch_size", 14, latex="p"), Dim("frames", "{tower}.temporal_patch_size", 2, latex=_FRAMES),
        Dim("merge", "{tower}.spatial_merge_size", 2, latex="m"), Dim("out", "{tower}.hidden_size", 3584, latex=_OUT),
        Dim("heads", "{tower}.num_heads", 16),
    ),
    parameters=(
        channels * frames * patch**2 * h  # patch_embed (Conv3d, no bias)
        + layers * VIT_BLOCK.subs(i, h * ratio)  # MLP width int(embed_dim * mlp_ratio)
        + 2 * h + _MERGER  # merger (LayerNorm ln_q)
    ),
    reference=_SOURCE + "qwen2_vl/modeling_qwen2_vl.py Qwen2VisionTransformerPretrainedModel",
    images=QWEN2_VL_IMAGES,
    videos=QWEN2_VL_VIDEOS,
    flops=_qwen_vit_flops(2 * h * h * ratio, 1, 4 * h * layers * _FULL_PAIRS),
)

QWEN2_5_VL_VISION = TowerKind(
    name="qwen2_5_vl_vision",
    title="Qwen2.5-VL ViT",
    summary="Qwen2_5_VisionTransformerPretrainedModel: Conv3d patches without bias, RMSNorms, a fused biased qkv, "
    "gated biased MLPs, windowed attention but on fullatt_block_indexes, the patch merger (RMSNorm, two matrices)",
    dims=(
        Dim("h", "{tower}.hidden_size", 3584), Dim("i", "{tower}.intermediate_size", 3420),
        Dim("layers", "{tower}.depth", 32, latex="L"), Dim("channels", "{tower}.in_channels", 3, latex=_CH),
        Dim("patch", "{tower}.patch_size", 14, latex="p"), Dim("frames", "{tower}.temporal_patch_size", 2, latex=_FRAMES),
        Dim("merge", "{tower}.spatial_merge_size", 2, latex="m"), Dim("out", "{tower}.out_hidden_size", 3584, latex=_OUT),
        Dim("heads", "{tower}.num_heads", 16), Dim("window", "{tower}.window_size", 112, latex=r"w_{\mathrm{px}}"),
        Dim("fullatt", "{tower}.fullatt_block_indexes", [7, 15, 23, 31], read="count", latex=r"L_{\mathrm{full}}"),
    ),
    parameters=(
        channels * frames * patch**2 * h  # patch_embed (Conv3d, no bias)
        + layers * (4 * h**2 + 4 * h + 3 * h * i + 2 * i + h + 2 * h)  # qkv, proj, gated MLP, two RMSNorms
        + h + _MERGER  # merger
    ),
    reference=_SOURCE + "qwen2_5_vl/modeling_qwen2_5_vl.py Qwen2_5_VisionTransformerPretrainedModel",
    images=QWEN2_5_VL_IMAGES,
    videos=QWEN2_VL_VIDEOS,
    flops=_qwen_vit_flops(
        3 * h * i, 1, 4 * h * (_FULL_LAYERS * _FULL_PAIRS + (layers - _FULL_LAYERS) * _WINDOW_PAIRS)
    ),
    flops_where=_WINDOWS,
)

LLAMA4_VISION = TowerKind(
    name="llama4_vision",
    title="Llama 4 vision encoder",
    summary="Llama4VisionModel: unfolded patches through one matrix, a class embedding and learned positions "
    "(nn.Parameter), pre and post LayerNorms, ViT blocks, the pixel-shuffle MLP adapter",
    dims=(
        Dim("h", "{tower}.hidden_size", 768), Dim("i", "{tower}.intermediate_size", 5632),
        Dim("layers", "{tower}.num_hidden_layers", 34), Dim("channels", "{tower}.num_channels", 3),
        Dim("image", "{tower}.image_size", 448), Dim("patch", "{tower}.patch_size", 14),
        Dim("shuffle_in", "{tower}.projector_input_dim", 4096), Dim("shuffle_out", "{tower}.projector_output_dim", 4096),
    ),
    parameters=(
        channels * patch**2 * h  # patch_embedding (no bias)
        + h + (sympy.floor(image / patch) ** 2 + 1) * h  # class_embedding, positional_embedding_vlm
        + 4 * h  # layernorm_pre, layernorm_post
        + layers * VIT_BLOCK
        + i * shuffle_in + shuffle_out**2  # vision_adapter fc1, fc2 (no biases)
    ),
    reference=_SOURCE + "llama4/modeling_llama4.py Llama4VisionModel",
)

LLAMA4_PROJECTOR = TowerKind(
    name="llama4_projector",
    title="Llama 4 projector",
    summary="Llama4MultiModalProjector: one matrix from vision_output_dim to the text width, no bias",
    dims=(Dim("vision_out", "{tower}.vision_output_dim", 7680), Dim("text", "text_config.hidden_size", 5120)),
    parameters=vision_out * text,
    reference=_SOURCE + "llama4/modeling_llama4.py Llama4MultiModalProjector",
)

PIXTRAL_VISION = TowerKind(
    name="pixtral_vision",
    title="Pixtral ViT",
    summary="PixtralVisionModel: Conv2d patches without bias, RMSNorms, unbiased q, k, v, o and a gated MLP (rotary positions hold no weights)",
    dims=(
        Dim("h", "{tower}.hidden_size", 1024), Dim("i", "{tower}.intermediate_size", 4096),
        Dim("layers", "{tower}.num_hidden_layers", 24), Dim("channels", "{tower}.num_channels", 3),
        Dim("patch", "{tower}.patch_size", 16),
    ),
    parameters=channels * patch**2 * h + h + layers * (4 * h**2 + 3 * h * i + 2 * h),
    reference=_SOURCE + "pixtral/modeling_pixtral.py PixtralVisionModel",
)

MISTRAL_LARGE4_PROJECTOR = TowerKind(
    name="mistral_large4_projector",
    title="Mistral Large 4 projector",
    summary="the Mistral Large 4 projector: an RMSNorm, the patch merger (merge^2 patches to one), two matrices to the text width",
    dims=(
        Dim("h", "{tower}.hidden_size", 1024), Dim("text", "text_config.hidden_size", 6144),
        Dim("merge", "spatial_merge_size", 2), Dim("features", "vision_feature_layer", -1, read="count"),
        Dim("bias", "multimodal_projector_bias", False, read="bool"),
    ),
    parameters=h + h * merge**2 * h + h * features * text + text**2 + 2 * bias * text,
    reference=_SOURCE + "mistral_large4/modeling_mistral_large4.py MistralLarge4MultiModalProjector",
)

KIMI_K25_VISION = TowerKind(
    name="kimi_k25_vision",
    title="MoonViT (Kimi K2.5)",
    summary="Kimi_K25VisionModel: Conv2d patches from 3 channels, a learned height x width position grid (nn.Parameter), "
    "ViT blocks, a final LayerNorm (temporal pooling holds no weights)",
    dims=(
        Dim("h", "{tower}.hidden_size", 1152), Dim("i", "{tower}.intermediate_size", 4304),
        Dim("layers", "{tower}.num_hidden_layers", 27), Dim("patch", "{tower}.patch_size", 14),
        Dim("grid_h", "{tower}.pos_emb_height", 64), Dim("grid_w", "{tower}.pos_emb_width", 64),
    ),
    parameters=3 * patch**2 * h + h + grid_h * grid_w * h + layers * VIT_BLOCK + 2 * h,
    reference=_SOURCE + "kimi_k25/modeling_kimi_k25.py Kimi_K25VisionModel",
)

KIMI_K25_PROJECTOR = TowerKind(
    name="kimi_k25_projector",
    title="Kimi K2.5 projector",
    summary="Kimi_K25MultimodalProjection: a LayerNorm, two biased matrices over merge-kernel groups of patches",
    dims=(
        Dim("h", "{tower}.hidden_size", 1152), Dim("merge", "{tower}.merge_kernel_size", [2, 2], read="product"),
        Dim("norm", "projection_hidden_size", 1152), Dim("text", "text_config.hidden_size", 7168),
    ),
    parameters=2 * norm + (h * merge) ** 2 + h * merge + h * merge * text + text,
    reference=_SOURCE + "kimi_k25/modeling_kimi_k25.py Kimi_K25MultimodalProjection",
)

(heads, kv_heads, head_dim, table, kernel, conv0, conv1) = sympy.symbols(
    "heads kv_heads head_dim table kernel conv0 conv1", integer=True, nonnegative=True
)

GEMMA4_VISION = TowerKind(
    name="gemma4_vision",
    title="Gemma 4 ViT",
    summary="Gemma4VisionModel: patches through one matrix, a two-axis learned position table (nn.Parameter), "
    "blocks with q/k RMSNorms, GQA, a gated MLP and four RMSNorms, no biases",
    dims=(
        Dim("h", "{tower}.hidden_size", 768), Dim("i", "{tower}.intermediate_size", 3072),
        Dim("layers", "{tower}.num_hidden_layers", 16), Dim("heads", "{tower}.num_attention_heads", 12),
        Dim("kv_heads", "{tower}.num_key_value_heads", 12), Dim("head_dim", "{tower}.head_dim", 64),
        Dim("patch", "{tower}.patch_size", 16), Dim("table", "{tower}.position_embedding_size", 10240),
    ),
    parameters=(
        2 * table * h + 3 * patch**2 * h  # patch_embedder: position_embedding_table, input_proj
        + layers * (2 * h * heads * head_dim + 2 * h * kv_heads * head_dim + 2 * head_dim + 3 * h * i + 4 * h)
    ),
    reference=_SOURCE + "gemma4/modeling_gemma4.py Gemma4VisionModel",
)

GEMMA4_AUDIO = TowerKind(
    name="gemma4_audio",
    title="Gemma 4 audio conformer",
    summary="Gemma4AudioModel: two 3x3 subsampling convolutions with norms, conformer blocks (two 4h feed-forwards, "
    "attention with a relative key projection and a per-dimension scale, a light depthwise convolution), a biased output projection",
    dims=(
        Dim("h", "{tower}.hidden_size", 1024), Dim("layers", "{tower}.num_hidden_layers", 12),
        Dim("heads", "{tower}.num_attention_heads", 8), Dim("kernel", "{tower}.conv_kernel_size", 5),
        Dim("conv0", "{tower}.subsampling_conv_channels[0]", [128, 32]), Dim("conv1", "{tower}.subsampling_conv_channels[1]", [128, 32]),
        Dim("out", "{tower}.output_proj_dims", 1536),
    ),
    parameters=(
        9 * conv0 + conv0 + 9 * conv0 * conv1 + conv1 + sympy.floor(conv0 / 4) * conv1 * h  # subsampling, input_proj_linear
        + layers * (  # head_dim = h // heads: q, k, v and relative_k_proj map h to heads x head_dim, post h to h
            20 * h**2 + 4 * h * heads * sympy.floor(h / heads) + h * kernel + 9 * h + sympy.floor(h / heads)
        )
        + h * out + out  # output_proj
    ),
    reference=_SOURCE + "gemma4/modeling_gemma4.py Gemma4AudioModel",
)

GEMMA4_VISION_EMBEDDER = TowerKind(
    name="gemma4_vision_embedder",
    title="Gemma 4 vision embedder",
    summary="Gemma4MultimodalEmbedder (embed_vision): one matrix from the vision width to the text width (its norm has no scale)",
    dims=(Dim("h", "{tower}.hidden_size", 768), Dim("text", "text_config.hidden_size", 2304)),
    parameters=h * text,
    reference=_SOURCE + "gemma4/modeling_gemma4.py Gemma4MultimodalEmbedder",
)

GEMMA4_AUDIO_EMBEDDER = TowerKind(
    name="gemma4_audio_embedder",
    title="Gemma 4 audio embedder",
    summary="Gemma4MultimodalEmbedder (embed_audio): one matrix from output_proj_dims to the text width",
    dims=(Dim("out", "{tower}.output_proj_dims", 1536), Dim("text", "text_config.hidden_size", 2304)),
    parameters=out * text,
    reference=_SOURCE + "gemma4/modeling_gemma4.py Gemma4MultimodalEmbedder",
)

(posemb, pooling) = sympy.symbols("posemb pooling", integer=True, nonnegative=True)

GEMMA4_UNIFIED_VISION_EMBEDDER = TowerKind(
    name="gemma4_unified_vision_embedder",
    title="Gemma 4 unified vision embedder",
    summary="Gemma4UnifiedVisionEmbedder (embed_vision, no vision encoder): merged raw patches of (patch x pooling)^2 x 3 "
    "values through LayerNorm, a biased matrix and LayerNorm, a two-axis position table (nn.Parameter) and LayerNorm, "
    "then one matrix from output_proj_dims to the text width (its RMSNorm has no scale)",
    dims=(
        Dim("patch", "{tower}.patch_size", 16), Dim("pooling", "{tower}.pooling_kernel_size", 3),
        Dim("h", "{tower}.mm_embed_dim", 3840), Dim("posemb", "{tower}.mm_posemb_size", 1120),
        Dim("out", "{tower}.output_proj_dims", 3840), Dim("text", "text_config.hidden_size", 2304),
    ),
    parameters=(
        2 * 3 * (patch * pooling) ** 2  # patch_ln1 over the merged patch's values
        + 3 * (patch * pooling) ** 2 * h + h  # patch_dense (biased)
        + 2 * h + posemb * 2 * h + 2 * h  # patch_ln2, pos_embedding, pos_norm
        + out * text  # multimodal_embedder.embedding_projection
    ),
    reference=_SOURCE + "gemma4_unified/modeling_gemma4_unified.py Gemma4UnifiedVisionEmbedder",
)

GEMMA4_UNIFIED_AUDIO_EMBEDDER = TowerKind(
    name="gemma4_unified_audio_embedder",
    title="Gemma 4 unified audio embedder",
    summary="Gemma4UnifiedMultimodalEmbedder (embed_audio, no audio encoder): one matrix from audio_embed_dim raw samples "
    "per token to the text width (its RMSNorm has no scale)",
    dims=(Dim("out", "{tower}.audio_embed_dim", 640), Dim("text", "text_config.hidden_size", 2304)),
    parameters=out * text,
    reference=_SOURCE + "gemma4_unified/modeling_gemma4_unified.py Gemma4UnifiedMultimodalEmbedder",
)

FUYU_PROJECTOR = TowerKind(
    name="fuyu_patch_projection",
    title="Fuyu patch projection",
    summary="FuyuModel.vision_embed_tokens: one biased matrix from a patch's patch_size^2 x num_channels values to the text width (no image encoder)",
    dims=(Dim("patch", "patch_size", 30), Dim("channels", "num_channels", 3), Dim("text", "{tower}.hidden_size", 4096)),
    parameters=channels * patch**2 * text + text,
    reference=_SOURCE + "fuyu/modeling_fuyu.py FuyuModel",
)

PHI4_MULTIMODAL_VISION = TowerKind(
    name="phi4_multimodal_vision",
    title="Phi-4-multimodal image embedding",
    summary="Phi4MultimodalImageEmbedding: a SigLIP ViT (Conv2d patches, learned positions, biased blocks, post LayerNorm, "
    "the attention-pooling head, always built), two biased projections to the text width, two feature extensors",
    dims=(
        Dim("h", "{tower}.hidden_size", 1152), Dim("i", "{tower}.intermediate_size", 4304),
        Dim("layers", "{tower}.num_hidden_layers", 27), Dim("channels", "{tower}.num_channels", 3),
        Dim("image", "{tower}.image_size", 448), Dim("patch", "{tower}.patch_size", 14), Dim("text", "hidden_size", 3072),
    ),
    parameters=(
        channels * patch**2 * h + h + sympy.floor(image / patch) ** 2 * h + layers * VIT_BLOCK + 2 * h  # img_processor
        + SIGLIP_POOLING_HEAD  # always built (Phi4MultimodalVisionConfig has no vision_use_head)
        + h * text + text + text**2 + text  # img_projection_up, img_projection_down
        + 2 * h  # global_img_feature_extensor, sub_img_feature_extensor
    ),
    embeddings=sympy.floor(image / patch) ** 2 * h,
    reference=_SOURCE + "phi4_multimodal/modeling_phi4_multimodal.py Phi4MultimodalImageEmbedding",
)

(ext, sep, mult, mel, reduction, nemo, distance, symmetric, downsample) = sympy.symbols(
    "ext sep mult mel reduction nemo distance symmetric downsample", integer=True, nonnegative=True
)
_HALVINGS = sympy.floor(sympy.log(reduction, 2))  # the stride-2 convolutions: int(log2(time_reduction))
_AUDIO_HEAD = sympy.floor(h / heads)  # Phi4MultimodalAudioAttention's head_dim (hidden_size // heads)

PHI4_MULTIMODAL_AUDIO = TowerKind(
    name="phi4_multimodal_audio",
    title="Phi-4-multimodal audio embedding",
    summary="Phi4MultimodalAudioEmbedding: NeMo convolutional subsampling, a relative attention bias table (nn.Embedding), "
    "conformer blocks (two gated feed-forwards, biased attention, a GLU and depthwise-separable convolution module), "
    "two pairs of biased projections to the text width (speech, vision-speech)",
    dims=(
        Dim("h", "{tower}.hidden_size", 1024), Dim("i", "{tower}.intermediate_size", 1536),
        Dim("layers", "{tower}.num_blocks", 24), Dim("heads", "{tower}.num_attention_heads", 16),
        Dim("ext", "{tower}.ext_pw_out_channel", 1024), Dim("sep", "{tower}.depthwise_separable_out_channel", 1024),
        Dim("mult", "{tower}.depthwise_multiplier", 1), Dim("kernel", "{tower}.kernel_size", 3),
        Dim("mel", "{tower}.input_size", 80), Dim("reduction", "{tower}.time_reduction", 8),
        Dim("nemo", "{tower}.nemo_conv_channels", 1024), Dim("distance", "{tower}.bias_max_distance", 1000),
        Dim("symmetric", "{tower}.bias_symmetric", False, read="bool"), Dim("downsample", "{tower}.downsample_rate", 1),
        Dim("text", "hidden_size", 3072),
    ),
    parameters=(
        10 * nemo + (_HALVINGS - 1) * (10 * nemo + nemo**2 + nemo)  # Conv2d(1, c, 3); per further halving depthwise 3x3 + pointwise
        + nemo * sympy.ceiling(mel / 2**_HALVINGS) * h + h  # out: the frequency axis halved at every stride-2 convolution
        + distance * (2 - symmetric) * heads  # relative_attention_bias_layer.bias_values
        + layers * (
            2 * (3 * h + 3 * h * i + 2 * i)  # feed_forward_in and _out: LayerNorm, gate_up (2i), down, biased
            + 4 * (h * heads * _AUDIO_HEAD + heads * _AUDIO_HEAD) - heads * _AUDIO_HEAD + h  # q, k, v (to n x d), o (back), biased
            + 2 * h + 2 * h * ext + 4 * ext  # conv: LayerNorm; GLU pointwise conv (2 ext, biased) and its b1, b2
            + h * mult * kernel + h * mult + h * mult * sep + sep  # depthwise (groups = h) and pointwise convolutions
            + h * ext + ext  # ext_pw_conv_1d
            + 4 * h  # layer_norm_att, layer_norm
        )
        + 2 * (h * downsample * text + text + text**2 + text)  # up/down projections for speech and for vision-speech
    ),
    embeddings=distance * (2 - symmetric) * heads,
    reference=_SOURCE + "phi4_multimodal/modeling_phi4_multimodal.py Phi4MultimodalAudioEmbedding",
)

GIT_VISION = TowerKind(
    name="git_vision",
    title="GIT CLIP ViT",
    summary="GitVisionModel: a CLIP ViT (Conv2d patches without bias, a class embedding, learned positions with the class "
    "position, pre and post LayerNorms, biased blocks)",
    dims=(
        Dim("h", "{tower}.hidden_size", 768), Dim("i", "{tower}.intermediate_size", 3072),
        Dim("layers", "{tower}.num_hidden_layers", 12), Dim("channels", "{tower}.num_channels", 3),
        Dim("image", "{tower}.image_size", 224), Dim("patch", "{tower}.patch_size", 16),
    ),
    parameters=(
        channels * patch**2 * h + h  # patch_embedding (no bias), class_embedding
        + (sympy.floor(image / patch) ** 2 + 1) * h  # position_embedding (nn.Embedding)
        + 4 * h + layers * VIT_BLOCK  # pre_layrnorm, post_layernorm
    ),
    embeddings=(sympy.floor(image / patch) ** 2 + 1) * h,
    reference=_SOURCE + "git/modeling_git.py GitVisionModel",
)

frame_embeddings = sympy.Symbol("frame_embeddings", integer=True, nonnegative=True)

GIT_PROJECTOR = TowerKind(
    name="git_projector",
    title="GIT visual projection",
    summary="GitProjection: a biased matrix from the vision width to the text width and a LayerNorm; with "
    "num_image_with_embedding, one learned vision-width embedding per video frame (img_temporal_embedding)",
    dims=(
        Dim("h", "{tower}.hidden_size", 768), Dim("text", "hidden_size", 768),
        Dim("frame_embeddings", "num_image_with_embedding", 0),  # null (the default): none built
    ),
    parameters=h * text + 3 * text + frame_embeddings * h,
    reference=_SOURCE + "git/modeling_git.py GitProjection, GitModel.img_temporal_embedding",
)

cross_layers = sympy.Symbol("cross_layers", integer=True, nonnegative=True)


def mllama_cross_attention(text: str) -> TowerKind:
    """Mllama's image path inside its language model, whose text config is at *text* (``""``: the
    config itself, ``"text_config."``: a wrapper's): the cross-attention decoder layers at
    ``cross_attention_layers``, which text-only input skips, and the embedding rows past
    ``vocab_size`` (``nn.Embedding(vocab_size + 8, hidden)``: the image token's among them)."""
    return TowerKind(
        name="mllama_cross_attention",
        title="Mllama cross-attention layers",
        summary="MllamaCrossAttentionDecoderLayer at each of cross_attention_layers (q, k, v, o without biases, q/k RMSNorms of "
        "hidden / heads, two tanh gates, a gated MLP, two RMSNorms) and the 8 token embeddings past vocab_size",
        dims=(
            Dim("h", text + "hidden_size", 4096), Dim("i", text + "intermediate_size", 14336),
            Dim("heads", text + "num_attention_heads", 32), Dim("kv_heads", text + "num_key_value_heads", 8),
            Dim("cross_layers", text + "cross_attention_layers", [3, 8, 13, 18, 23, 28, 33, 38], read="count"),
        ),
        parameters=(
            cross_layers * (
                2 * h * heads * sympy.floor(h / heads) + 2 * h * kv_heads * sympy.floor(h / heads)  # q, o; k, v
                + 2 * sympy.floor(h / heads) + 2 + 3 * h * i + 2 * h  # q_norm, k_norm, the two gates, MLP, norms
            )
            + 8 * h  # embed_tokens rows vocab_size .. vocab_size + 7
        ),
        embeddings=8 * h,
        reference=_SOURCE + "mllama/modeling_mllama.py MllamaCrossAttentionDecoderLayer, MllamaTextModel.embed_tokens",
    )

(local_layers, global_layers, tiles, ratios) = sympy.symbols("local_layers global_layers tiles ratios", integer=True, nonnegative=True)
_MLLAMA_PATCHES = sympy.floor(image / patch) ** 2 + 1  # the tile's patches and the class position
# A pre-norm block without attention biases: q, k, v, o to heads x hidden // heads, a biased MLP, two LayerNorms.
_MLLAMA_BLOCK = 4 * h * heads * sympy.floor(h / heads) + 2 * h * i + i + 5 * h
_MLLAMA_EMBEDDINGS = (ratios + 1) * tiles * _MLLAMA_PATCHES * h + 2 * (ratios + 1) * tiles * h  # the three aspect-ratio tables

MLLAMA_VISION = TowerKind(
    name="mllama_vision",
    title="Mllama vision encoder",
    summary="MllamaVisionModel: Conv2d patches without bias, a class embedding, gated positions with a per-aspect-ratio tile "
    "table and two gated aspect-ratio embeddings (nn.Embedding), pre and post LayerNorms, local blocks and gated global blocks",
    dims=(
        Dim("h", "{tower}.hidden_size", 1280), Dim("i", "{tower}.intermediate_size", 5120),
        Dim("local_layers", "{tower}.num_hidden_layers", 32), Dim("global_layers", "{tower}.num_global_layers", 8),
        Dim("heads", "{tower}.attention_heads", 16), Dim("channels", "{tower}.num_channels", 3),
        Dim("image", "{tower}.image_size", 448), Dim("patch", "{tower}.patch_size", 14),
        Dim("tiles", "{tower}.max_num_tiles", 4),
        # max_aspect_ratio_id = len(supported_aspect_ratios); MllamaVisionConfig's default lists 8.
        Dim("ratios", "{tower}.supported_aspect_ratios", [[1, 1], [1, 2], [1, 3], [1, 4], [2, 1], [2, 2], [3, 1], [4, 1]], read="count"),
    ),
    parameters=(
        channels * patch**2 * h + h  # patch_embedding, class_embedding
        + 1 + _MLLAMA_PATCHES * h + 2  # gated_positional_embedding: its gate and table; the two tile embeddings' gates
        + _MLLAMA_EMBEDDINGS
        + 4 * h  # layernorm_pre, layernorm_post
        + local_layers * _MLLAMA_BLOCK + global_layers * (_MLLAMA_BLOCK + 2)  # the global blocks' gate_attn, gate_ffn
    ),
    embeddings=_MLLAMA_EMBEDDINGS,
    reference=_SOURCE + "mllama/modeling_mllama.py MllamaVisionModel",
)

MLLAMA_PROJECTOR = TowerKind(
    name="mllama_projector",
    title="Mllama projector",
    summary="MllamaModel.multi_modal_projector: one biased matrix from vision_output_dim to the text width",
    dims=(Dim("vision_out", "{tower}.vision_output_dim", 7680), Dim("text", "text_config.hidden_size", 4096)),
    parameters=vision_out * text + text,
    reference=_SOURCE + "mllama/modeling_mllama.py MllamaModel",
)
