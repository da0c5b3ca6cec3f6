"""How the recorded forward passes of models with linear-attention, SSM and recurrent mixers are
reconciled with flopsreg, one way for every such test module (tests/hf/test_linear_forward.py,
test_recurrent_forward.py, test_r5rec_forward.py): the torch reference path, what FlopCounterMode
does not see, and each mixer's FLOPs and parameters against its recorded module.

A record (tests/data/hf_forward/forward_<name>.json) holds, per tiny model, its config, the FLOPs
FlopCounterMode counted per module at each length and the parameters of every module.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator

import attrs
import linear_oracles as lo
import sympy

import flopsreg
from flopsreg.declarations.symbols import s
from flopsreg.engine.compose import KindSelection
from flopsreg.formula.exact import compile_exact

# The flags of the layer kinds holding a non-attention mixer (their convs are padded on the torch path).
MIXER_FLAGS = frozenset({"gated_deltanet", "kda", "mamba1", "mamba2", "short_conv", "lightning", "rglru", "mlstm", "rwkv4"})
MIXER_SLOTS = ("mixer.projection", "mixer.conv", "mixer.core", "mixer.output")
# The configs of the linear families in tests/data/hf: read by the tests of tests/hf/test_linear.py; their
# forward passes are recorded as tiny configs of the same families (forward_linear.json), not by
# tests/data/hf_forward/measure.py.
LINEAR_FAMILY_CONFIGS = frozenset({
    "qwen3-next-80b-a3b", "qwen3.5-9b", "qwen3.5-35b-a3b", "olmo-hybrid-7b-defaults", "kimi-linear-48b-a3b",
    "nemotron-3-nano-30b-a3b", "nemotron-3-super-120b-a12b", "falcon-h1-defaults", "granite-4.0-h-defaults", "lfm2-defaults",
    "jamba-defaults", "minimax-text-01",
})


class TorchReference:
    """Eager attention computes every (query, key) pair and masks afterwards: under the
    chunked_scan convention, count s^2 pairs (the rest of that convention is the built-ins')."""

    @flopsreg.hookimpl
    def flopsreg_register_patterns(self):
        return [
            flopsreg.Pattern(
                name="eager_rectangle_beside_chunked_scans", slot="attention.mask", flags={"chunked_scan"},
                precedence=5000, produces="pairs", formula=s**2,
                summary="every (query, key) pair is computed, then masked", reference="transformers eager_attention_forward",
            )
        ]


def reference_registry() -> flopsreg.Registry:
    """The built-ins and TorchReference: the registry the torch path is counted with."""
    return flopsreg.Registry(plugins=[TorchReference()], load_entry_points=False)


def text_config(config: dict) -> dict:
    """The language model's part of a config (a multimodal wrapper's text_config)."""
    return config.get("text_config", config)


def model_type(record: dict, name: str) -> str:
    return text_config(record["models"][name]["config"])["model_type"]


def runs(record: dict, types: Collection[str] | None = None) -> list[tuple[str, int]]:
    """(model, length) of every recorded run, of the models of *types* if given."""
    return [(name, int(n)) for name in sorted(record["models"]) for n in record["models"][name].get("flops", {})
            if types is None or model_type(record, name) in types]


def model(record: dict, registry: flopsreg.Registry, name: str, padded: bool = True) -> flopsreg.Model:
    """The recorded config read by flopsreg, its mixers' convs padded as torch's conv1d computes them."""
    read = flopsreg.Model.from_hf_config(record["models"][name]["config"], registry=registry)
    if not padded:
        return read
    kinds = {k: attrs.evolve(v, flags=v.flags | {"padded_conv"}) if v.flags & MIXER_FLAGS else v for k, v in read.kinds.items()}
    return attrs.evolve(read, kinds=kinds)


def unseen(flags: frozenset[str], params: dict[str, int], n: int) -> int:
    """FLOPs of one layer's scan that FlopCounterMode does not count, from the oracles."""
    if "gated_deltanet" in flags:
        _, solves = lo.gdn_chunked_macs(n, params["linear_value_heads"], params["linear_key_head_dim"], params["linear_value_head_dim"], 64)
        return 2 * solves
    if "kda" in flags:
        _, other = lo.kda_chunked_macs(n, params["kda_heads"], params["kda_head_dim"], 64)
        return 2 * other
    if "mamba1" in flags:  # the sequential scan's state update is elementwise; its readout is a matmul
        update, _ = lo.mamba1_recurrent_macs(n, params["mamba_inner"], params["mamba_state"])
        return 2 * update
    if "rglru" in flags:  # the RG-LRU's recurrence is elementwise; its gates are batched matmuls
        _, update = lo.rglru_recurrent_macs(n, params["rglru_blocks"], params["rglru_block_width"])
        return 2 * update
    if "mlstm" in flags:  # the normaliser's sums of the chunkwise and step kernels are elementwise
        _, other = lo.mlstm_chunked_macs(n, params["mlstm_heads"], params["mlstm_qk_dim"], params["mlstm_v_dim"], params["scan_chunk"], params["mlstm_piece"])
        return 2 * other
    if "rwkv4" in flags:  # every step of the WKV loop is elementwise
        return 2 * lo.rwkv4_recurrent_macs(n, params["rwkv_attention_width"])
    return 0


def outside_modules(flags: frozenset[str], params: dict[str, int], n: int) -> int:
    """FLOPs of a mixer's projection that transformers computes without calling its module: Mamba1's
    dt_proj runs as ``dt_proj.weight @ x`` (modeling_jamba.py:580, modeling_mamba.py MambaMixer.forward),
    filed under the mixer."""
    return 2 * n * params["mamba_dt_rank"] * params["mamba_inner"] if "mamba1" in flags else 0


def layers(registry: flopsreg.Registry, model: flopsreg.Model, n: int, convention: str) -> Iterator[tuple[int, KindSelection, dict[str, int]]]:
    """(index, kind selection, slot FLOPs) of every layer."""
    for unit in registry.select(model, convention=convention).kinds:
        for indices in unit.layers:
            for index in indices:
                yield index, unit, unit.flops(n)


def modules(record: dict, name: str, n: int, index: int, part: str) -> dict[str, int]:
    """The recorded FLOPs of layer (or block) *index*'s module *part* and of its direct children, by child name."""
    recorded = record["models"][name]["flops"][str(n)]["modules"]
    prefix = next(m for m in recorded if m.endswith((f".layers.{index}.{part}", f".blocks.{index}.{part}")))
    children = {m[len(prefix) + 1:]: v for m, v in recorded.items() if m.startswith(prefix + ".") and "." not in m[len(prefix) + 1:]}
    return {"": recorded[prefix], **children}


def weights(registry: flopsreg.Registry, unit: KindSelection, slots: Collection[str]) -> int:
    """The parameters of *slots* of a layer kind, from the selected patterns' weights."""
    total = 0
    for sel in unit.selections:
        if sel.slot in slots:
            expr = sel.pattern.weights.xreplace({registry.quantities[q].symbol: v for q, v in unit.quantities.items()})
            total += compile_exact(sympy.sympify(expr))(dict(unit.params))
    return total


def check_reference_path(record: dict, reference: flopsreg.Registry, name: str, n: int, repeated: Callable[[frozenset[str], dict[str, int], int], int] | None = None) -> None:
    """flopsreg's torch path == the recorded FlopCounterMode total + what it does not see
    - what it counts twice (``repeated(flags, params, n)``, if given)."""
    counted = model(record, reference, name)
    plan = reference.select(counted, convention="chunked_scan")
    missed = sum((unseen(k.flags, k.params, n) - (repeated(k.flags, k.params, n) if repeated else 0)) * k.count for k in plan.kinds)
    assert reference.evaluate(counted, seq_len=n, convention="chunked_scan").forward == record["models"][name]["flops"][str(n)]["total"] + missed


def check_mixers_against_modules(record: dict, reference: flopsreg.Registry, name: str, n: int, part: str, outputs: tuple[str, ...]) -> None:
    """Every mixer's output projection, other projections, and conv plus scan against its recorded
    module *part* (its output projection one of the children *outputs*)."""
    checked = 0
    for index, unit, flops in layers(reference, model(record, reference, name), n, "chunked_scan"):
        if not unit.flags & MIXER_FLAGS:
            continue
        recorded = modules(record, name, n, index, part)
        total = recorded.pop("")
        output = next(recorded.pop(o) for o in outputs if o in recorded)
        assert flops["mixer.output"] == output, (index, "output")
        outside = outside_modules(unit.flags, unit.params, n)
        assert flops["mixer.projection"] == sum(recorded.values()) + outside, (index, "projections", sorted(recorded))
        inside = total - output - sum(recorded.values()) - outside  # the conv (if any) and the scan: F.conv1d, matmuls, einsums
        assert flops.get("mixer.conv", 0) + flops.get("mixer.core", 0) == inside + unseen(unit.flags, unit.params, n), index
        checked += 1
    assert checked


def check_mixer_parameters(record: dict, registry: flopsreg.Registry, name: str, part: str) -> None:
    """Every mixer's weights are the parameters of its recorded module *part*."""
    parameters = record["models"][name]["parameters"]
    checked = 0
    for index, unit, _ in layers(registry, model(record, registry, name, padded=False), 1, "exact"):
        if unit.flags & MIXER_FLAGS:
            held = next(v for m, v in parameters.items() if m.endswith((f"layers.{index}.{part}", f"blocks.{index}.{part}")))
            assert weights(registry, unit, MIXER_SLOTS) == held, (index, unit.name)
            checked += 1
    assert checked
