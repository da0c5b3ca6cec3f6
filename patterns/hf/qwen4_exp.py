"""Hugging Face readers of ``qwen4_exp_text`` and ``qwen4_exp`` (Qwen4-Exp): Gated DeltaNet on the
linear_attention layers, gated GQA attention with the QSA block indexer on the indexed_attention
ones, n residual streams joined by low-rank gated residuals (no decoder or final norms), per-layer
n-gram embeddings on the layers ``ple_layer_ids`` lists, and a MoE block with a gated shared
expert on every layer (transformers 5.24 models/qwen4_exp/modular_qwen4_exp.py); the wrapper's
vision tower is Qwen3.5's."""

from flopsreg.patterns.dsa_indexer import INDEX_HEAD_DIM, INDEX_HEADS
from flopsreg.patterns.dsa_kpool import INDEX_KPOOL, KPOOL_TOPK_TAIL
from flopsreg.patterns.dsa_topk import INDEX_TOPK
from flopsreg.patterns.embedding import TIED_LOGITS
from flopsreg.patterns.hf._common import silu_gated
from flopsreg.patterns.hf._linear import gdn_params, refuse_unless, type_list
from flopsreg.patterns.hf.layer_types import GATED_DELTANET_LAYER
from flopsreg.patterns.hf.qwen_next import VISION
from flopsreg.patterns.hyper_connections import HC_MULT
from flopsreg.patterns.lowrank_hyper_connections import HC_LOWRANK, LOWRANK_HC
from flopsreg.patterns.moe import moe_mlp
from flopsreg.patterns.ngram_ple import NGRAM_DIM, NGRAM_PLE, NGRAM_ROWS, NGRAM_SIZE, PLE_CONV_KERNEL, PLE_EMBED_DIM
from flopsreg.patterns.norms import QK_NORM
from flopsreg.patterns.qsa_indexer import QSA_INDEXER
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, head_dim_of, hookimpl

GATED_ATTENTION = frozenset({"output_gate"})  # q_proj outputs 2 x heads x head_dim: query and gate
_LINEAR, _INDEXED = "linear_attention", "indexed_attention"
_QSA = "qsa"  # an indexed_attention layer: gated attention over the blocks its QSA indexer selects
_QSA_FIELDS = ("indexer_n_heads", "indexer_kv_heads", "indexer_head_dim", "indexer_budget", "indexer_compress_ratio")


def layer_types(c: Fields, layers: int) -> Layers[str]:
    """``layer_types`` ("full_attention" read as "indexed_attention", as __post_init__ does), else
    linear_attention unless (i + 1) % full_attention_interval == 0 (popped kwarg, default 4)."""
    given = type_list(c, "layer_types", (_LINEAR, _INDEXED, "full_attention"), layers)
    if given is None:
        interval = c.int_or_default("full_attention_interval", 4)
        return Layers.rule(layers, lambda i: _LINEAR if (i + 1) % interval else _INDEXED, period=interval)
    return Layers.of([_LINEAR if t == _LINEAR else _INDEXED for t in given])


def qsa_params(c: Fields, types: Layers[str], head_dim: int) -> dict[str, int]:
    """The QSA indexer's parameters. All five indexer_* fields or none (the config class's rule);
    none leaves no indexer, which transformers cannot build on an indexed_attention layer."""
    given = [name for name in _QSA_FIELDS if c.given(name)]
    if not given:
        if _INDEXED in types.distinct():
            raise c.error("indexer_n_heads", ": missing or null: every indexed_attention layer runs the QSA indexer "
                          "(Qwen4ExpTextAttention builds it from the five indexer_* fields)")
        return {}
    if missing := [name for name in _QSA_FIELDS if name not in given]:
        raise c.error(missing[0], f": missing or null while {given[0]} is set: QSA needs all of {', '.join(_QSA_FIELDS)}")
    if c.int("indexer_kv_heads") != 1:
        raise c.error("indexer_kv_heads", f" = {c.int('indexer_kv_heads')}: expected 1 (Qwen4-Exp QSA has one index key head)")
    budget, ratio = c.int("indexer_budget"), c.int("indexer_compress_ratio")
    if budget % ratio:
        raise c.error("indexer_budget", f" = {budget}: expected a multiple of indexer_compress_ratio = {ratio}")
    rope = c.data.get("rope_parameters") or {}
    rotary = int(head_dim * (rope.get("partial_rotary_factor", 1.0) if isinstance(rope, dict) else 1.0))
    if rotary > c.int("indexer_head_dim"):
        # validate_architecture: the index queries take the attention's RoPE dimensions.
        raise c.error("indexer_head_dim", f" = {c.int('indexer_head_dim')}: expected at least the rotary width {rotary} (head_dim x partial_rotary_factor)")
    return {
        INDEX_HEADS.name: c.int("indexer_n_heads"), INDEX_HEAD_DIM.name: c.int("indexer_head_dim"),
        INDEX_TOPK.name: budget, INDEX_KPOOL.name: ratio,
    }


def _is_prime(value: int) -> bool:
    """Deterministic Miller-Rabin (these bases decide every value below 3.3 x 10^24)."""
    if value < 2:
        return False
    bases = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
    if value in bases:
        return True
    if any(value % p == 0 for p in bases):
        return False
    d, r = value - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in bases:
        x = pow(a, d, value)
        if x in (1, value - 1):
            continue
        for _ in range(r - 1):
            x = x * x % value
            if x == value - 1:
                break
        else:
            return False
    return True


def ngram_rows(base: int, heads: int, tables: int, divisor: int) -> list[int]:
    """Rows of each PLE layer's n-gram table: head j of PLE layer l (global head l G + j) has the
    (l G + j + 1)-th prime >= ngram_vocab_size_base rows; a layer's heads are summed and padded to
    a multiple of make_ngram_vocab_size_divisible_by (Qwen4ExpTextNGramEmbedding.__init__)."""
    primes, candidate = [], base
    while len(primes) < heads * tables:
        if _is_prime(candidate):
            primes.append(candidate)
        candidate += 1
    totals = (sum(primes[layer * heads : (layer + 1) * heads]) for layer in range(tables))
    return [-(-total // divisor) * divisor for total in totals]


def ple_layers(c: Fields, types: Layers[str], hidden: int) -> tuple[Layers[str], dict[str, tuple[frozenset[str], dict[str, int]]], dict[str, int]]:
    """The attention entries with each PLE layer given a kind of its own (its table's rows), those
    kinds, and the model-wide PLE parameters; ``ple_layer_ids`` absent, null or [] means no PLE."""
    ids = sorted(set(c.int_list("ple_layer_ids", minimum=1, maximum=len(types)) or []))
    if not ids:
        return types, {}, {}
    for layer_id in ids:
        if types[layer_id - 1] != GATED_DELTANET_LAYER.name:
            raise c.error("ple_layer_ids", f": layer {layer_id} (one-indexed) is an indexed_attention layer; PLE runs on linear_attention layers only")
    ngram, per_ngram = c.int_or_default("ngram_size", 3, minimum=2), c.int_or_default("heads_per_ngram", 8)
    heads = (ngram - 1) * per_ngram
    width = c.optional_int("ple_embed_dim") or hidden  # __post_init__: null means hidden_size
    if width % heads:
        raise c.error("ple_embed_dim", f" = {width}: expected a multiple of the n-gram heads (ngram_size - 1) x heads_per_ngram = {heads}")
    rows = ngram_rows(
        c.int_or_default("ngram_vocab_size_base", 20_000_000), heads, len(ids),
        c.int_or_default("make_ngram_vocab_size_divisible_by", 128),
    )
    kinds = {}
    for index, (layer_id, table) in enumerate(zip(ids, rows)):
        name = f"{GATED_DELTANET_LAYER.name}_ple{index}"
        kinds[name] = (GATED_DELTANET_LAYER.flags | NGRAM_PLE.flags, {NGRAM_ROWS.name: table})
        types = types.replaced(layer_id - 1, name)
    params = {
        PLE_EMBED_DIM.name: width, NGRAM_DIM.name: width // heads, NGRAM_SIZE.name: ngram,
        PLE_CONV_KERNEL.name: c.int_or_default("ple_conv_kernel_size", 4),
    }
    return types, kinds, params


def qwen4_exp_text(c: Fields) -> Decoder:
    """Qwen4ExpTextConfig: Gated DeltaNet / gated attention with QSA per layer_types, low-rank gated
    residuals over hc_count streams, n-gram PLE on ple_layer_ids, MoE on every layer."""
    layers = c.int("num_hidden_layers")
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    head_dim = head_dim_of(c, hidden, heads, class_default=256)  # a dataclass field with default 256 (Qwen3_5MoeTextConfig)
    types = layer_types(c, layers)
    qsa = qsa_params(c, types, head_dim)
    attention = types.map(lambda t: GATED_DELTANET_LAYER.name if t == _LINEAR else _QSA)
    attention, ple_kinds, ple = ple_layers(c, attention, hidden)
    refuse_unless(c, "attention_bias", False, False, "the gated attention patterns hold no biases")
    params = {
        **gqa_params(c, head_dim=head_dim), **gdn_params(c),
        "vocab": c.int("vocab_size"),
        # hc_count, hc_lowrank: fields with defaults 4 and 320 (Qwen4ExpTextConfig).
        HC_MULT.name: c.int_or_default("hc_count", 4, minimum=2), HC_LOWRANK.name: c.int_or_default("hc_lowrank", 320),
        **qsa, **ple,
    }
    # No input_layernorm, post_attention_layernorm or final norm: the gated residuals' grouped
    # RMSNorms take their place (counted with them). tie_word_embeddings false by default.
    flags = silu_gated(c) | GATED_ATTENTION | QK_NORM.flags | LOWRANK_HC.flags
    if c.bool("tie_word_embeddings", default=False):
        flags |= TIED_LOGITS.flags
    moe = moe_mlp(
        c.int("num_experts"), c.int("num_experts_per_tok"), c.int("moe_intermediate_size"),
        c.int("shared_expert_intermediate_size"), gate=True,
    )
    return Decoder(
        params=params, flags=flags, attention=attention,
        attention_kinds={
            GATED_DELTANET_LAYER.name: (GATED_DELTANET_LAYER.flags, {}),
            _QSA: (KPOOL_TOPK_TAIL.flags | QSA_INDEXER.flags, {}),
            **ple_kinds,
        },
        mlps=Layers.uniform("moe", layers), mlp_kinds={"moe": moe},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="qwen4_exp_text", title="Qwen4-Exp", read=qwen4_exp_text,
                 summary="Qwen4ExpTextConfig: Gated DeltaNet / gated attention with QSA, low-rank gated residuals, n-gram PLE, MoE"),
        # Qwen4ExpVisionModel is Qwen3_5MoeVisionModel (modular_qwen4_exp.py), with the same processors.
        HFReader(name="qwen4_exp", title="Qwen4-Exp", text_config="qwen4_exp_text", towers=(VISION,), tied_by="wrapper",
                 summary="Qwen4ExpConfig: the qwen4_exp_text decoder (the Qwen3.5 ViT: FLOPs for the images given)"),
    ]
