"""The tower kinds multimodal wrappers build beside their language model: vision encoders and
projectors, each ``sum(p.numel())`` of its transformers 5.24 module as a formula of its config.

Each formula is derived in docs/hf-configs.md ("Multimodal wrappers: towers") and checked
against transformers' count of the class-default config and of the published configs
(tests/data/hf_forward/towers.json). Defaults are the config classes' own; ``{tower}`` is the
wrapper's sub-config of the tower (``vision_config``).
"""

from __future__ import annotations

import sympy

from flopsreg.patterns.hf._fuyu_vit import FUYU_IMAGES
from flopsreg.patterns.hf._gemma3_vit import GEMMA3_IMAGES
from flopsreg.patterns.hf._gemma4_audio import GEMMA4_AUDIO_CLIPS
from flopsreg.patterns.hf._gemma4_vit import (
    BIDIRECTIONAL,
    GEMMA4_IMAGES,
    GEMMA4_UNIFIED_IMAGES,
    GEMMA4_UNIFIED_VIDEOS,
    GEMMA4_VIDEOS,
)
from flopsreg.patterns.hf._gemma4u_audio import GEMMA4_UNIFIED_AUDIO_CLIPS
from flopsreg.patterns.hf._git_vit import GIT_IMAGES, GIT_VIDEOS
from flopsreg.patterns.hf._kimi_vit import KIMI_IMAGES, KIMI_VIDEOS
from flopsreg.patterns.hf._llama4_vit import LLAMA4_IMAGES
from flopsreg.patterns.hf._mllama_vit import MLLAMA_IMAGES
from flopsreg.patterns.hf._phi4_audio import PHI4_AUDIO_CLIPS, WINDOW
from flopsreg.patterns.hf._phi4mm_vit import PHI4_MULTIMODAL_IMAGES
from flopsreg.patterns.hf._pixtral_vit import PIXTRAL_IMAGES, feature_blocks
from flopsreg.patterns.hf._qwen_vit import QWEN2_5_VL_IMAGES, QWEN2_VL_IMAGES, QWEN2_VL_VIDEOS, QWEN3_VL_IMAGES, QWEN3_VL_VIDEOS
from flopsreg.plugin import CROSS_ATTENTION, IMAGE_GRID, Dim, TowerKind, where_symbol

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

# Llama 4's tiles (patterns/hf/_llama4_vit.py): N tokens a tile (its patches and the class
# token), Q the tokens whose block output is kept (all but the class token in the last layer,
# whose output the model drops), n tokens a tile after the pixel shuffle (ds patches each).
_TILE_TOKENS, _KEPT, _SHUFFLED = where_symbol("N"), where_symbol("Q"), where_symbol("n")
ds = sympy.Symbol("ds", integer=True, nonnegative=True)
_LLAMA4_TILE = {
    "N": _ROWS * _COLUMNS + 1,
    "Q": layers * _TILE_TOKENS - sympy.Min(layers, 1),
    "n": sympy.floor(_ROWS * _COLUMNS / ds),
}


def _llama4_vit_flops() -> dict[str, sympy.Expr]:
    """Llama4VisionModel and the projector for one image of ``t`` tiles of ``rows x columns``
    patches (multiply-adds x 2; derived in docs/multimodal.md): the unfolded patches through one
    matrix, per block k and v over every token, q, o, attention rows and MLP over the kept ones
    (attention bidirectional within a tile), the adapter's two matrices and the projector on the
    shuffled tokens."""
    return {
        "patch_embed": 2 * _T * _ROWS * _COLUMNS * channels * patch**2 * h,
        "blocks.qkv_proj": 2 * _T * h**2 * (2 * layers * _TILE_TOKENS + 2 * _KEPT),
        "blocks.attention": 4 * h * _T * _KEPT * _TILE_TOKENS,
        "blocks.mlp": 2 * _T * _KEPT * 2 * h * i,
        "vision_adapter": 2 * _T * _SHUFFLED * (i * shuffle_in + shuffle_out**2),
        "projector": 2 * _T * _SHUFFLED * vision_out * text,
    }


LLAMA4_VISION = TowerKind(
    name="llama4_vision",
    title="Llama 4 vision encoder",
    summary="Llama4VisionModel: unfolded patches through one matrix, a class embedding and learned positions "
    "(nn.Parameter), pre and post LayerNorms, ViT blocks, the pixel-shuffle MLP adapter",
    dims=(
        Dim("h", "{tower}.hidden_size", 768), Dim("i", "{tower}.intermediate_size", 5632),
        Dim("layers", "{tower}.num_hidden_layers", 34, latex="L"), Dim("channels", "{tower}.num_channels", 3, latex=_CH),
        Dim("image", "{tower}.image_size", 448), Dim("patch", "{tower}.patch_size", 14, latex="p"),
        Dim("shuffle_in", "{tower}.projector_input_dim", 4096, latex=r"d_{\mathrm{in}}"),
        Dim("shuffle_out", "{tower}.projector_output_dim", 4096, latex=r"d_{\mathrm{ad}}"),
        # What its images also read: the pixel shuffle (patches per token), and the projector's
        # matrix (LLAMA4_PROJECTOR's weights), counted with the tower that feeds it.
        Dim("ds", "{tower}.pixel_shuffle_ratio", 0.5, read="inverse_square", latex=r"d_{\mathrm{s}}"),
        Dim("vision_out", "{tower}.vision_output_dim", 7680, latex=_OUT), Dim("text", "text_config.hidden_size", 5120, latex="D"),
    ),
    parameters=(
        channels * patch**2 * h  # patch_embedding (no bias)
        + h + (sympy.floor(image / patch) ** 2 + 1) * h  # class_embedding, positional_embedding_vlm
        + 4 * h  # layernorm_pre, layernorm_post
        + layers * VIT_BLOCK
        + i * shuffle_in + shuffle_out**2  # vision_adapter fc1, fc2 (no biases)
    ),
    reference=_SOURCE + "llama4/modeling_llama4.py Llama4VisionModel",
    images=LLAMA4_IMAGES,
    flops=_llama4_vit_flops(),
    flops_where=_LLAMA4_TILE,
)

LLAMA4_PROJECTOR = TowerKind(
    name="llama4_projector",
    title="Llama 4 projector",
    summary="Llama4MultiModalProjector: one matrix from vision_output_dim to the text width, no bias",
    dims=(Dim("vision_out", "{tower}.vision_output_dim", 7680), Dim("text", "text_config.hidden_size", 5120)),
    parameters=vision_out * text,
    reference=_SOURCE + "llama4/modeling_llama4.py Llama4MultiModalProjector",
)

# Pixtral (Mistral Large 4) and MoonViT (Kimi K2.5): each image's patches through the ViT, attention
# within the image, then the projector over merge x merge groups (derived in docs/multimodal.md).
_PATCHES = _T * _ROWS * _COLUMNS
(merge_h, merge_w, used) = sympy.symbols("merge_h merge_w used", integer=True, nonnegative=True)
_MERGED = where_symbol("M")  # the image's merged tokens: what the projector runs over

PIXTRAL_VISION = TowerKind(
    name="pixtral_vision",
    title="Pixtral ViT",
    summary="PixtralVisionModel: Conv2d patches without bias, RMSNorms, unbiased q, k, v, o and a gated MLP (rotary positions hold no weights); "
    "FLOPs for Mistral Large 4's images with its projector (patch merger, two matrices)",
    dims=(
        Dim("h", "{tower}.hidden_size", 1024), Dim("i", "{tower}.intermediate_size", 4096),
        Dim("layers", "{tower}.num_hidden_layers", 24, latex="L"), Dim("channels", "{tower}.num_channels", 3, latex=_CH),
        Dim("patch", "{tower}.patch_size", 16, latex="p"), Dim("image", "{tower}.image_size", 1024, latex=r"w_{\mathrm{px}}"),
        Dim("merge", "spatial_merge_size", 2, latex="m"), Dim("text", "text_config.hidden_size", 6144, latex="D"),
        Dim("features", "vision_feature_layer", -1, read="count", latex=r"n_{\mathrm{feat}}"),
        # the blocks whose output reaches the projector (class defaults: all 24)
        Dim("used", "vision_feature_layer", 24, read="derived", derive=feature_blocks, latex=r"L_{\mathrm{u}}"),
    ),
    parameters=channels * patch**2 * h + h + layers * (4 * h**2 + 3 * h * i + 2 * h),
    reference=_SOURCE + "pixtral/modeling_pixtral.py PixtralVisionModel",
    images=PIXTRAL_IMAGES,
    flops={
        "patch_embed": 2 * _PATCHES * h * channels * patch**2,
        "blocks.qkv_proj": used * 2 * _PATCHES * 4 * h**2,
        "blocks.attention": 4 * h * used * _T * (_ROWS * _COLUMNS) ** 2,  # within the image only
        "blocks.mlp": used * 2 * _PATCHES * 3 * h * i,
        "projector.merge": 2 * _MERGED * h * merge**2 * h,
        "projector.mlp": 2 * _MERGED * (h * features * text + text**2),
    },
    flops_where={"M": _T * (_ROWS / merge) * (_COLUMNS / merge)},
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
    "ViT blocks, a final LayerNorm (temporal pooling holds no weights); FLOPs for its images with the projector",
    dims=(
        Dim("h", "{tower}.hidden_size", 1152), Dim("i", "{tower}.intermediate_size", 4304),
        Dim("layers", "{tower}.num_hidden_layers", 27, latex="L"), Dim("patch", "{tower}.patch_size", 14, latex="p"),
        Dim("grid_h", "{tower}.pos_emb_height", 64), Dim("grid_w", "{tower}.pos_emb_width", 64),
        Dim("merge_h", "{tower}.merge_kernel_size[0]", [2, 2], latex="m_{h}"),
        Dim("merge_w", "{tower}.merge_kernel_size[1]", [2, 2], latex="m_{w}"), Dim("text", "text_config.hidden_size", 7168, latex="D"),
        Dim("time", "{tower}.pos_emb_time", 4),  # the temporal positions: the most frames of a video chunk
    ),
    parameters=3 * patch**2 * h + h + grid_h * grid_w * h + layers * VIT_BLOCK + 2 * h,
    reference=_SOURCE + "kimi_k25/modeling_kimi_k25.py Kimi_K25VisionModel",
    images=KIMI_IMAGES,
    videos=KIMI_VIDEOS,
    # One image (t = 1) or one video chunk of t frames: attention spans the whole clip, and
    # temporal_merge averages its frames before the projector (elementwise).
    flops={
        "patch_embed": 2 * _PATCHES * h * 3 * patch**2,
        "blocks.qkv_proj": layers * 2 * _PATCHES * 4 * h**2,
        "blocks.attention": 4 * h * layers * _PATCHES**2,  # within the image (the chunk) only
        "blocks.mlp": layers * 2 * _PATCHES * 2 * h * i,
        "projector": 2 * _MERGED * ((h * merge_h * merge_w) ** 2 + h * merge_h * merge_w * text),
    },
    flops_where={"M": (_ROWS / merge_h) * (_COLUMNS / merge_w)},
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

# What Gemma 4's image rule reads beside a vision tower's own dims: the pooling to soft tokens,
# the text width and the language model's use_bidirectional_attention (Gemma4TextConfig: null;
# Gemma4UnifiedTextConfig: "vision"); the processor's max_soft_tokens is its rule's option.


def _bidirectional(default: str | None) -> Dim:
    return Dim("bidirectional", "text_config.use_bidirectional_attention", default, read="choice", choices=BIDIRECTIONAL)


_G4_T, _G4_ROWS, _G4_COLUMNS = IMAGE_GRID
_G4_PATCHES = _G4_T * _G4_ROWS * _G4_COLUMNS  # the image's real patches (the processor's padding not counted)
_G4_POOLING = sympy.Symbol("pooling", integer=True, nonnegative=True)

GEMMA4_VISION = TowerKind(
    name="gemma4_vision",
    title="Gemma 4 ViT",
    summary="Gemma4VisionModel: patches through one matrix, a two-axis learned position table (nn.Parameter), "
    "blocks with q/k RMSNorms, GQA, a gated MLP and four RMSNorms, no biases (FLOPs: with its embedder's projection)",
    dims=(
        Dim("h", "{tower}.hidden_size", 768), Dim("i", "{tower}.intermediate_size", 3072),
        Dim("layers", "{tower}.num_hidden_layers", 16, latex="L"), Dim("heads", "{tower}.num_attention_heads", 12, latex="n_h"),
        Dim("kv_heads", "{tower}.num_key_value_heads", 12, latex=r"n_{\mathrm{kv}}"),
        Dim("head_dim", "{tower}.head_dim", 64, latex="d"), Dim("patch", "{tower}.patch_size", 16, latex="p"),
        Dim("table", "{tower}.position_embedding_size", 10240),
        Dim("pooling", "{tower}.pooling_kernel_size", 3, latex="k"), Dim("text", "text_config.hidden_size", 2304, latex="D"),
        _bidirectional(None),
    ),
    parameters=(
        2 * table * h + 3 * patch**2 * h  # patch_embedder: position_embedding_table, input_proj
        + layers * (2 * h * heads * head_dim + 2 * h * kv_heads * head_dim + 2 * head_dim + 3 * h * i + 4 * h)
    ),
    reference=_SOURCE + "gemma4/modeling_gemma4.py Gemma4VisionModel",
    images=GEMMA4_IMAGES,
    videos=GEMMA4_VIDEOS,
    # One image of t x rows x columns real patches: the input projection, q/k/v/o, attention over
    # the image both ways, the gated MLP, and the embedder's matrix on the rows x columns / pooling^2
    # soft tokens the average pooling leaves (the pooling and the norms are elementwise).
    flops={
        "patch_embed": 2 * _G4_PATCHES * 3 * patch**2 * h,
        "blocks.qkv_proj": layers * 2 * _G4_PATCHES * (2 * h * heads * head_dim + 2 * h * kv_heads * head_dim),
        "blocks.attention": layers * 4 * heads * head_dim * _G4_T * (_G4_ROWS * _G4_COLUMNS) ** 2,
        "blocks.mlp": layers * 2 * _G4_PATCHES * 3 * h * i,
        "embedder": 2 * _G4_PATCHES / _G4_POOLING**2 * h * text,
    },
)

# Gemma 4's audio conformer over one clip's spectrogram (t = 1, rows real mel frames, columns mel
# bins): T1 and n frames after each stride-2 convolution, F1 and F2 mel bins; w = heads x head_dim;
# the P pairs of the chunked local mask: each of the n queries sees min(j, W) keys back (its own
# included, W = attention_context_left - 1) and min(j, B) ahead (B = attention_context_right - 1);
# R relative positions.
(chunk, left, right) = sympy.symbols("chunk left right", integer=True, nonnegative=True)
_N, _T1, _F1, _F2, _WIDTH, _POSITIONS, _BACK, _AHEAD, _MB, _MA, _PAIRS = (
    where_symbol(name) for name in ("n", "T1", "F1", "F2", "w", "R", "W", "B", "m_W", "m_B", "P")
)
_GEMMA4_AUDIO_WHERE = {
    "T1": sympy.ceiling(_ROWS / 2), "n": sympy.ceiling(_T1 / 2),
    "F1": sympy.ceiling(_COLUMNS / 2), "F2": sympy.ceiling(_F1 / 2),
    "w": heads * sympy.floor(h / heads),
    "R": sympy.floor((chunk + left - 1 + right) / 2) + 1,  # Gemma4AudioRelPositionalEncoding's context_size // 2 + 1
    "W": sympy.Max(left - 1, 0), "B": sympy.Max(right - 1, 0),
    "m_W": sympy.Min(_BACK, _N), "m_B": sympy.Min(_AHEAD, _N - 1),
    "P": _MB * (_MB + 1) / 2 + _BACK * (_N - _MB) + _MA * (_MA + 1) / 2 + _AHEAD * (_N - 1 - _MA),
}


def _gemma4_audio_flops() -> dict[str, sympy.Expr]:
    """Gemma4AudioModel and embed_audio over one clip (multiply-adds x 2; derived in docs/multimodal.md)."""
    c0, c1 = conv0, conv1
    return {
        "subsample.conv0": 2 * _T1 * _F1 * c0 * 9,
        "subsample.conv1": 2 * _N * _F2 * c1 * 9 * c0,
        "subsample.input_proj": 2 * _N * _F2 * c1 * h,
        "blocks.feed_forward": layers * 2 * 2 * 2 * _N * 4 * h * h,  # two feed-forwards of two matrices (h x 4h)
        "blocks.qkv_post": layers * 2 * _N * 4 * h * _WIDTH,
        "blocks.relative_k_proj": layers * 2 * _POSITIONS * h * _WIDTH,
        "blocks.attention": layers * (2 * 2 * _WIDTH * _PAIRS + 2 * _WIDTH * _N * _POSITIONS),
        "blocks.light_conv": layers * 2 * _N * (2 * h * h + h * kernel + h * h),
        "output_proj": 2 * _N * h * out,
        "embedder": 2 * _N * out * text,
    }


GEMMA4_AUDIO = TowerKind(
    name="gemma4_audio",
    title="Gemma 4 audio conformer",
    summary="Gemma4AudioModel: two 3x3 subsampling convolutions with norms, conformer blocks (two 4h feed-forwards, "
    "attention with a relative key projection and a per-dimension scale, a light depthwise convolution), a biased output projection",
    dims=(
        Dim("h", "{tower}.hidden_size", 1024), Dim("layers", "{tower}.num_hidden_layers", 12),
        Dim("heads", "{tower}.num_attention_heads", 8), Dim("kernel", "{tower}.conv_kernel_size", 5),
        Dim("conv0", "{tower}.subsampling_conv_channels[0]", [128, 32]), Dim("conv1", "{tower}.subsampling_conv_channels[1]", [128, 32]),
        Dim("out", "{tower}.output_proj_dims", 1536), Dim("chunk", "{tower}.attention_chunk_size", 12),
        Dim("left", "{tower}.attention_context_left", 13), Dim("right", "{tower}.attention_context_right", 0),
        Dim("text", "text_config.hidden_size", 2304),
    ),
    parameters=(
        9 * conv0 + conv0 + 9 * conv0 * conv1 + conv1 + sympy.floor(conv0 / 4) * conv1 * h  # subsampling, input_proj_linear
        + layers * (  # head_dim = h // heads: q, k, v and relative_k_proj map h to heads x head_dim, post h to h
            20 * h**2 + 4 * h * heads * sympy.floor(h / heads) + h * kernel + 9 * h + sympy.floor(h / heads)
        )
        + h * out + out  # output_proj
    ),
    reference=_SOURCE + "gemma4/modeling_gemma4.py Gemma4AudioModel",
    images=GEMMA4_AUDIO_CLIPS,
    flops=_gemma4_audio_flops(),
    flops_where=_GEMMA4_AUDIO_WHERE,
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
        Dim("patch", "{tower}.patch_size", 16, latex="p"), Dim("pooling", "{tower}.pooling_kernel_size", 3, latex="k"),
        Dim("h", "{tower}.mm_embed_dim", 3840, latex="m"), Dim("posemb", "{tower}.mm_posemb_size", 1120),
        Dim("out", "{tower}.output_proj_dims", 3840, latex=r"d_{\mathrm{out}}"), Dim("text", "text_config.hidden_size", 2304, latex="D"),
        _bidirectional("vision"),
    ),
    parameters=(
        2 * 3 * (patch * pooling) ** 2  # patch_ln1 over the merged patch's values
        + 3 * (patch * pooling) ** 2 * h + h  # patch_dense (biased)
        + 2 * h + posemb * 2 * h + 2 * h  # patch_ln2, pos_embedding, pos_norm
        + out * text  # multimodal_embedder.embedding_projection
    ),
    reference=_SOURCE + "gemma4_unified/modeling_gemma4_unified.py Gemma4UnifiedVisionEmbedder",
    images=GEMMA4_UNIFIED_IMAGES,
    videos=GEMMA4_UNIFIED_VIDEOS,
    # One image of t x rows x columns patches of patch pixels: each pooling x pooling of them one
    # merged patch and one token, through patch_dense and the projection (the norms and the
    # position embedding elementwise).
    flops={
        "patch_dense": 2 * _G4_PATCHES / pooling**2 * 3 * (patch * pooling) ** 2 * h,
        "embedder": 2 * _G4_PATCHES / pooling**2 * out * text,
    },
)

GEMMA4_UNIFIED_AUDIO_EMBEDDER = TowerKind(
    name="gemma4_unified_audio_embedder",
    title="Gemma 4 unified audio embedder",
    summary="Gemma4UnifiedMultimodalEmbedder (embed_audio, no audio encoder): one matrix from audio_embed_dim raw samples "
    "per token to the text width (its RMSNorm has no scale)",
    dims=(Dim("out", "{tower}.audio_embed_dim", 640), Dim("text", "text_config.hidden_size", 2304)),
    parameters=out * text,
    reference=_SOURCE + "gemma4_unified/modeling_gemma4_unified.py Gemma4UnifiedMultimodalEmbedder",
    images=GEMMA4_UNIFIED_AUDIO_CLIPS,
    # One clip of t x rows frames of out raw samples (t = 1; patterns/hf/_gemma4u_audio.py): each
    # frame one soft token through the projection (its norm elementwise).
    flops={"embedder": 2 * _T * _ROWS * out * text},
)

FUYU_PROJECTOR = TowerKind(
    name="fuyu_patch_projection",
    title="Fuyu patch projection",
    summary="FuyuModel.vision_embed_tokens: one biased matrix from a patch's patch_size^2 x num_channels values to the text width (no image encoder)",
    dims=(Dim("patch", "patch_size", 30), Dim("channels", "num_channels", 3), Dim("text", "{tower}.hidden_size", 4096)),
    parameters=channels * patch**2 * text + text,
    reference=_SOURCE + "fuyu/modeling_fuyu.py FuyuModel",
    images=FUYU_IMAGES,
    flops={"projection": 2 * IMAGE_GRID[0] * IMAGE_GRID[1] * IMAGE_GRID[2] * channels * patch**2 * text},
)

# Phi-4-multimodal's image (patterns/hf/_phi4mm_vit.py): the grid's rows x columns are the real
# patches of its crops, n x n patches a crop and the global image. The useful work: the U layers
# whose output is used, over the real patches (N), attention within each crop over its real
# patches (the sums of squared real lengths along each axis factor, as Qwen2.5-VL's windows), and
# the two projections over the image's T tokens.
back = sympy.Symbol("back", integer=True, nonnegative=True)
_N, _U, _REAL, _S_R, _S_C, _TOKENS = (where_symbol(name) for name in ("n", "U", "N", "S_r", "S_c", "T"))


def _real_squares(real: sympy.Expr) -> sympy.Expr:
    """sum over the crops along one axis of (real patches in it)^2, the crops filled from the start."""
    return _N**2 * sympy.floor(real / _N) + sympy.Mod(real, _N) ** 2


# T: the global image's (n/2)^2 pooled tokens with a newline a row, glb_GN, and every second real
# patch row and column of the crops (a crop's side, 32, is even) with a newline a row.
_HALF_ROWS, _HALF_COLUMNS = sympy.ceiling(_ROWS / 2), sympy.ceiling(_COLUMNS / 2)
_PHI4_WHERE = {
    "n": sympy.floor(image / patch), "U": layers + 1 - back, "N": _T * (_N**2 + _ROWS * _COLUMNS),
    "S_r": _real_squares(_ROWS), "S_c": _real_squares(_COLUMNS),
    "T": _T * (_N / 2 * (_N / 2 + 1) + 1 + _HALF_ROWS * (_HALF_COLUMNS + 1)),
}
_PHI4_FLOPS = {
    "patch_embed": 2 * _REAL * h * channels * patch**2,
    "blocks.qkv_proj": _U * 2 * _REAL * 4 * h**2,
    "blocks.attention": 4 * h * _U * _T * (_N**4 + _S_R * _S_C),
    "blocks.mlp": _U * 2 * _REAL * 2 * h * i,
    "projector": 2 * _TOKENS * (h * text + text**2),
}

PHI4_MULTIMODAL_VISION = TowerKind(
    name="phi4_multimodal_vision",
    title="Phi-4-multimodal image embedding",
    summary="Phi4MultimodalImageEmbedding: a SigLIP ViT (Conv2d patches, learned positions, biased blocks, post LayerNorm, "
    "the attention-pooling head, always built), two biased projections to the text width, two feature extensors",
    dims=(
        Dim("h", "{tower}.hidden_size", 1152), Dim("i", "{tower}.intermediate_size", 4304),
        Dim("layers", "{tower}.num_hidden_layers", 27), Dim("channels", "{tower}.num_channels", 3),
        Dim("image", "{tower}.image_size", 448), Dim("patch", "{tower}.patch_size", 14), Dim("text", "hidden_size", 3072),
        Dim("crop", "{tower}.crop_size", 448), Dim("back", "{tower}.feature_layer", -2, read="from_end"),
    ),
    parameters=(
        channels * patch**2 * h + h + sympy.floor(image / patch) ** 2 * h + layers * VIT_BLOCK + 2 * h  # img_processor
        + SIGLIP_POOLING_HEAD  # always built (Phi4MultimodalVisionConfig has no vision_use_head)
        + h * text + text + text**2 + text  # img_projection_up, img_projection_down
        + 2 * h  # global_img_feature_extensor, sub_img_feature_extensor
    ),
    embeddings=sympy.floor(image / patch) ** 2 * h,
    reference=_SOURCE + "phi4_multimodal/modeling_phi4_multimodal.py Phi4MultimodalImageEmbedding",
    images=PHI4_MULTIMODAL_IMAGES,
    flops=_PHI4_FLOPS,
    flops_where=_PHI4_WHERE,
)

(ext, sep, mult, mel, reduction, nemo, distance, symmetric, downsample) = sympy.symbols(
    "ext sep mult mel reduction nemo distance symmetric downsample", integer=True, nonnegative=True
)
_HALVINGS = sympy.floor(sympy.log(reduction, 2))  # the stride-2 convolutions: int(log2(time_reduction))
_AUDIO_HEAD = sympy.floor(h / heads)  # Phi4MultimodalAudioAttention's head_dim (hidden_size // heads)

# Phi-4-multimodal's audio encoder over one clip's spectrogram (t = 1, rows frames, columns mel
# bins): each stride-2 convolution takes ceil(x / 2) of both (n = ceil(rows / 8) frames after the
# three); w = heads x head_dim; the blocks run over m frames (n, or k whole windows of 500 past 500)
# and attend over all P pairs of each window.
_W, _K, _M, _P, _S = (where_symbol(name) for name in ("w", "k", "m", "P", "S"))
_PHI4_AUDIO_WHERE = {
    "n": sympy.ceiling(_ROWS / 8),
    # the positions (frames x bins) after the 2nd and 3rd stride-2 convolutions
    "S": sympy.ceiling(_ROWS / 4) * sympy.ceiling(_COLUMNS / 4) + _N * sympy.ceiling(_COLUMNS / 8),
    "w": heads * _AUDIO_HEAD,
    "k": sympy.ceiling(_N / WINDOW),
    "m": sympy.Piecewise((_N, _N <= WINDOW), (WINDOW * _K, True)),
    "P": sympy.Piecewise((_N**2, _N <= WINDOW), (WINDOW**2 * _K, True)),
}
_PHI4_AUDIO_FLOPS = {
    "subsample.conv0": 2 * sympy.ceiling(_ROWS / 2) * sympy.ceiling(_COLUMNS / 2) * nemo * 9,
    "subsample.separable": 2 * _S * nemo * (9 + nemo),  # depthwise 3x3 and pointwise c x c
    "subsample.out": 2 * _N * nemo * sympy.ceiling(_COLUMNS / 8) * h,
    "blocks.feed_forward": layers * 2 * 2 * _M * 3 * h * i,  # two gated feed-forwards: h x 2i and i x h
    "blocks.qkvo": layers * 2 * _M * 4 * h * _W,
    "blocks.attention": layers * 2 * 2 * _W * _P,
    # GLU pointwise h x 2 ext, depthwise h mult x kernel, pointwise h mult x sep, pointwise h x ext
    # (the module runs only where ext = sep = h, which the clip rule checks)
    "blocks.conv": layers * 2 * _M * h * (3 * h + mult * (kernel + h)),
    "projection": 2 * _N * (h * downsample * text + text**2),
}

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
    images=PHI4_AUDIO_CLIPS,
    flops=_PHI4_AUDIO_FLOPS,
    flops_where=_PHI4_AUDIO_WHERE,
)


def _clip_flops() -> dict[str, sympy.Expr]:
    """GIT's CLIP ViT and projection over one image of ``t x rows x columns`` patches (t = 1; derived
    in docs/multimodal.md): Conv2d patches, then per block q, k, v, o, full attention and the MLP over
    the patches and the class token, and GitProjection's matrix on every one of those tokens."""
    t, rows, columns = IMAGE_GRID
    tokens = t * (rows * columns + 1)
    return {
        "patch_embed": 2 * t * rows * columns * h * channels * patch**2,
        "blocks.qkv_proj": layers * 2 * tokens * 4 * h**2,
        "blocks.attention": 4 * h * layers * t * (rows * columns + 1) ** 2,
        "blocks.mlp": layers * 2 * tokens * 2 * h * i,
        "projector": 2 * tokens * h * text,
    }


GIT_VISION = TowerKind(
    name="git_vision",
    title="GIT CLIP ViT",
    summary="GitVisionModel: a CLIP ViT (Conv2d patches without bias, a class embedding, learned positions with the class "
    "position, pre and post LayerNorms, biased blocks)",
    dims=(
        Dim("h", "{tower}.hidden_size", 768), Dim("i", "{tower}.intermediate_size", 3072),
        Dim("layers", "{tower}.num_hidden_layers", 12), Dim("channels", "{tower}.num_channels", 3),
        Dim("image", "{tower}.image_size", 224), Dim("patch", "{tower}.patch_size", 16),
        Dim("text", "hidden_size", 768),  # GitProjection's output width: its FLOPs are counted with the tower's
        Dim("frame_embeddings", "num_image_with_embedding", 0),  # the most frames of a video (null: no video)
    ),
    parameters=(
        channels * patch**2 * h + h  # patch_embedding (no bias), class_embedding
        + (sympy.floor(image / patch) ** 2 + 1) * h  # position_embedding (nn.Embedding)
        + 4 * h + layers * VIT_BLOCK  # pre_layrnorm, post_layernorm
    ),
    embeddings=(sympy.floor(image / patch) ** 2 + 1) * h,
    reference=_SOURCE + "git/modeling_git.py GitVisionModel",
    images=GIT_IMAGES,
    videos=GIT_VIDEOS,
    flops=_clip_flops(),
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


_CROSS_POSITIONS, _CROSS_KEYS, _CROSS_PAIRS = CROSS_ATTENTION
_CROSS_HEAD = sympy.floor(h / heads)  # MllamaTextCrossAttention: heads of hidden / heads, whatever head_dim says
# Run with images, each cross-attention layer: q and o over every position of the sequence, k and v
# over the images' vision tokens, QK^T and PV over the (position, vision token) pairs the mask allows,
# the gated MLP over every position (the tanh gates and the q/k RMSNorms are elementwise).
_MLLAMA_CROSS_FLOPS = {
    "q_o_proj": cross_layers * 2 * _CROSS_POSITIONS * 2 * h * heads * _CROSS_HEAD,
    "k_v_proj": cross_layers * 2 * _CROSS_KEYS * 2 * h * kv_heads * _CROSS_HEAD,
    "attention": cross_layers * 4 * heads * _CROSS_HEAD * _CROSS_PAIRS,
    "mlp": cross_layers * 2 * _CROSS_POSITIONS * 3 * h * i,
}


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
            Dim("heads", text + "num_attention_heads", 32, latex=r"n_{\mathrm{h}}"),
            Dim("kv_heads", text + "num_key_value_heads", 8, latex=r"n_{\mathrm{kv}}"),
            Dim("cross_layers", text + "cross_attention_layers", [3, 8, 13, 18, 23, 28, 33, 38], read="count", latex=r"L_{\mathrm{x}}"),
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
        sequence_flops=_MLLAMA_CROSS_FLOPS,
    )

(local_layers, global_layers, tiles, ratios) = sympy.symbols("local_layers global_layers tiles ratios", integer=True, nonnegative=True)
_MLLAMA_PATCHES = sympy.floor(image / patch) ** 2 + 1  # the tile's patches and the class position
# A pre-norm block without attention biases: q, k, v, o to heads x hidden // heads, a biased MLP, two LayerNorms.
_MLLAMA_BLOCK = 4 * h * heads * sympy.floor(h / heads) + 2 * h * i + i + 5 * h
_MLLAMA_EMBEDDINGS = (ratios + 1) * tiles * _MLLAMA_PATCHES * h + 2 * (ratios + 1) * tiles * h  # the three aspect-ratio tables

t_grid, rows_grid, columns_grid = IMAGE_GRID
_N, _D = where_symbol("n"), where_symbol("d")
_DEPTH = local_layers + global_layers

MLLAMA_VISION = TowerKind(
    name="mllama_vision",
    title="Mllama vision encoder",
    summary="MllamaVisionModel: Conv2d patches without bias, a class embedding, gated positions with a per-aspect-ratio tile "
    "table and two gated aspect-ratio embeddings (nn.Embedding), pre and post LayerNorms, local blocks and gated global blocks",
    dims=(
        Dim("h", "{tower}.hidden_size", 1280), Dim("i", "{tower}.intermediate_size", 5120),
        Dim("local_layers", "{tower}.num_hidden_layers", 32, latex="L"), Dim("global_layers", "{tower}.num_global_layers", 8, latex="G"),
        Dim("heads", "{tower}.attention_heads", 16, latex=r"n_{\mathrm{h}}"), Dim("channels", "{tower}.num_channels", 3, latex=_CH),
        Dim("image", "{tower}.image_size", 448), Dim("patch", "{tower}.patch_size", 14, latex="p"),
        Dim("tiles", "{tower}.max_num_tiles", 4),
        # max_aspect_ratio_id = len(supported_aspect_ratios); MllamaVisionConfig's default lists 8.
        Dim("ratios", "{tower}.supported_aspect_ratios", [[1, 1], [1, 2], [1, 3], [1, 4], [2, 1], [2, 2], [3, 1], [4, 1]], read="count"),
        # for the projector's FLOPs (its weights are MLLAMA_PROJECTOR's)
        Dim("vision_out", "{tower}.vision_output_dim", 7680, latex=_OUT), Dim("text", "text_config.hidden_size", 4096, latex="D"),
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
    images=MLLAMA_IMAGES,
    # One image's real tiles (t) of rows x columns patches and a class position each: n positions, all
    # attending to each other across the image's tiles in both encoders (d: the attention width).
    flops_where={"n": t_grid * (rows_grid * columns_grid + 1), "d": heads * sympy.floor(h / heads)},
    flops={
        "patch_embed": 2 * t_grid * rows_grid * columns_grid * h * channels * patch**2,
        # the local and the gated global blocks alike (the gates are elementwise)
        "blocks.qkv_proj": _DEPTH * 2 * _N * 4 * h * _D,
        "blocks.attention": _DEPTH * 4 * _D * _N**2,
        "blocks.mlp": _DEPTH * 2 * _N * 2 * h * i,
        "projector": 2 * _N * vision_out * text,
    },
)

MLLAMA_PROJECTOR = TowerKind(
    name="mllama_projector",
    title="Mllama projector",
    summary="MllamaModel.multi_modal_projector: one biased matrix from vision_output_dim to the text width",
    dims=(Dim("vision_out", "{tower}.vision_output_dim", 7680), Dim("text", "text_config.hidden_size", 4096)),
    parameters=vision_out * text + text,
    reference=_SOURCE + "mllama/modeling_mllama.py MllamaModel",
)
