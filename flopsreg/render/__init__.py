"""Text, JSON and LaTeX views of patterns, plans and results.

LaTeX is composed here from the per-pattern formulas, one ``align`` row per term, because sympy
reorders sums and folds constants when the whole model is one expression; a pattern that gives
its own LaTeX (``Pattern.latex``) is printed as it gives it. Renderers of a selection or result
take symbol names and meanings from ``selection.symbols``, never from the registry.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from fractions import Fraction
from itertools import islice
from math import gcd
from typing import TYPE_CHECKING, Any

from flopsreg.model import ranges_text

# sympy, the pattern module and comparisons are imported by the renderers that need them, so
# that results (result_text, result_json) render without them: the command line's cached path.
if TYPE_CHECKING:
    import sympy

    from flopsreg.declarations.pattern import Pattern
    from flopsreg.declarations.symbols import SymbolTable
    from flopsreg.engine.compare import Comparison
    from flopsreg.engine.compose import ModelSelection, UnitSelection
    from flopsreg.engine.evaluate import Result
    from flopsreg.engine.parameters import Parameters
    from flopsreg.engine.peaks import Bandwidth, Peak
    from flopsreg.engine.placement import Placed
    from flopsreg.engine.serving import Generation, GenerationBounds
    from flopsreg.engine.utilisation import StepUtilisation, Utilisation
    from flopsreg.plugins.loader import PluginLoader

__all__ = [
    "compare_json",
    "compare_text",
    "comparison_markdown",
    "explain_text",
    "formula_text",
    "generation_json",
    "generation_markdown",
    "generation_text",
    "peaks_json",
    "peaks_text",
    "per_token_text",
    "generation_bounds_json",
    "generation_bounds_text",
    "utilisation_json",
    "utilisation_markdown",
    "utilisation_text",
    "latex",
    "layers_json",
    "mathjax",
    "parameters_markdown",
    "pattern_latex",
    "patterns_markdown",
    "patterns_json",
    "patterns_text",
    "registry_markdown",
    "result_json",
    "sweep_json",
    "sweep_lines",
    "result_markdown",
    "result_text",
    "selection_markdown",
]


def _group(n: int) -> str:
    return f"{n:,}"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# -- patterns ---------------------------------------------------------------------------------


def patterns_json(registry: PluginLoader) -> list[dict[str, Any]]:
    """Every registered pattern as a JSON-ready dict."""
    return [
        {
            "name": p.name,
            "slot": p.slot,
            "flags": sorted(p.flags),
            "precedence": p.precedence,
            "scope": p.scope,
            "produces": p.produces,
            "params": [param.name for param in p.params],
            "formula": str(p.formula),
            "latex": pattern_latex(p),
            "summary": p.summary,
            "reference": p.reference,
            "refusal": p.refusal,  # null, or the line a plan is refused with where the pattern wins
            "plugin": registry.plugin_of(p),
        }
        for p in registry.patterns
    ]


def pattern_latex(pattern: Pattern) -> str:
    """*pattern*'s formula in LaTeX: its own, if it gives one, else sympy's with the symbols' names."""
    return pattern.formula_latex


def patterns_text(registry: PluginLoader) -> str:
    """A table of every registered pattern."""
    return patterns_table((p.slot, p.name, p.flags, p.precedence, [param.name for param in p.params], p.summary) for p in registry.patterns)


def listed_patterns_text(listed: Iterable[Mapping[str, Any]]) -> str:
    """The table of :func:`patterns_text` from patterns as the manifest lists them
    (:func:`flopsreg.plugins.builtins.listed_patterns`): the same text, no module imported."""
    return patterns_table((p["slot"], p["name"], p["flags"], p["precedence"], p["params"], p["summary"]) for p in listed)


def patterns_table(patterns: Iterable[tuple[str, str, Iterable[str], int, Iterable[str], str]]) -> str:
    """A table of patterns given as (slot, name, flags, precedence, parameter names, summary), in that order."""
    rows = [["slot", "pattern", "flags", "precedence", "params", "summary"]]
    for slot, name, flags, precedence, params, summary in patterns:
        rows.append([slot, name, ", ".join(sorted(flags)) or "(default)", str(precedence), ", ".join(params) or "-", summary])
    return _table(rows)


# -- explanation ------------------------------------------------------------------------------


def explain_text(plan: ModelSelection) -> str:
    """One line per slot and layer kind: the chosen pattern and why; under a convention, what each
    of the convention's own patterns counts (e.g. the padding Megatron-LM applies by default)."""
    from flopsreg.declarations.pattern import EXACT

    model = plan.model
    layers, kinds = model.plan.layers, len(plan.kinds)
    lines = [f"{model.name}: {layers} layer{'s' * (layers != 1)}, {kinds} kind{'s' * (kinds != 1)}"]
    if plan.convention != EXACT:
        lines.append(f"convention: {plan.convention}")
    for unit in plan.units:
        flags = ", ".join(sorted(unit.flags)) or "none"
        lines.append(f"{unit.where}: flags {flags}")
        for sel in unit.selections:
            lines.append(f"  {sel.slot}: {sel.pattern.name} ({sel.reason})")
            if plan.convention in sel.pattern.flags:
                lines.append(f"    {plan.convention}: {sel.pattern.summary}")
    lines += [f"warning: {w}" for w in plan.warnings]
    return "\n".join(lines)


# -- formulas ---------------------------------------------------------------------------------


def _display_terms(
    unit: UnitSelection, symbols: SymbolTable
) -> tuple[dict[str, tuple[Pattern, sympy.Expr]], list[tuple[str, Pattern, sympy.Expr]]]:
    """Quantity rows (e.g. P(s)) and FLOPs terms, keeping produced quantities as named symbols."""
    import sympy

    from flopsreg.declarations.pattern import FLOPS

    produced = {sel.pattern.produces: sel for sel in unit.selections if sel.pattern.produces != FLOPS}
    shown: dict[str, tuple[Pattern, sympy.Expr]] = {}
    inline = {}
    for quantity, expr in unit.quantities.items():
        if quantity in produced:
            display = sympy.Symbol(f"{quantity}__{unit.name}")
            shown[quantity] = (produced[quantity].pattern, expr)
            inline[symbols[quantity].symbol] = display
        else:
            inline[symbols[quantity].symbol] = expr
    terms = []
    for sel in unit.selections:
        if sel.pattern.produces == FLOPS:
            terms.append((sel.slot, sel.pattern, sel.pattern.formula.xreplace(inline)))
    return shown, terms


def latex(plan: ModelSelection, result: Result | None = None, **options: bool) -> str:
    """The model's closed form as paste-ready LaTeX; see :func:`flopsreg.render.tex.latex` for *options*."""
    from flopsreg.render.tex import latex as paper_latex  # sympy: only for the renderers that need it

    return paper_latex(plan, result, **options)


def mathjax(plan: ModelSelection, result: Result | None = None) -> str:
    """The equations in what MathJax 3 renders, for notebooks (see :func:`flopsreg.render.notebook.equations`)."""
    from flopsreg.render import notebook

    return notebook.equations(plan, result)


def result_markdown(result: Result) -> str:
    """A notebook's Markdown display of a result (see :mod:`flopsreg.render.notebook`)."""
    from flopsreg.render import notebook

    return notebook.result_markdown(result)


def selection_markdown(plan: ModelSelection) -> str:
    """A notebook's Markdown display of a selection."""
    from flopsreg.render import notebook

    return notebook.selection_markdown(plan)


def registry_markdown(registry: PluginLoader) -> str:
    """A notebook's Markdown display of a registry."""
    from flopsreg.render import notebook

    return notebook.registry_markdown(registry)


def comparison_markdown(comparison: Comparison) -> str:
    """A notebook's Markdown display of a comparison."""
    from flopsreg.render import notebook

    return notebook.comparison_markdown(comparison)


def generation_markdown(gen: Generation) -> str:
    """A notebook's Markdown display of a generation."""
    from flopsreg.render import notebook

    return notebook.generation_markdown(gen)


def generation_bounds_markdown(bounds: GenerationBounds) -> str:
    """A notebook's Markdown display of a generation's bytes and roofline bound per phase."""
    from flopsreg.render import notebook

    return notebook.generation_bounds_markdown(bounds)


def parameters_markdown(params: Parameters) -> str:
    """A notebook's Markdown display of parameter counts."""
    from flopsreg.render import notebook

    return notebook.parameters_markdown(params)


def patterns_markdown(registry: PluginLoader) -> str:
    """Every registered pattern as a Markdown table (what a registry's summary points to)."""
    from flopsreg.render import notebook

    return notebook.patterns_markdown(registry)


def utilisation_markdown(utilisation: Utilisation | StepUtilisation) -> str:
    """A notebook's Markdown display of a step's MFU and HFU (with a serving step's MBU and roofline), or of one of them."""
    from flopsreg.render import notebook

    return notebook.utilisation_markdown(utilisation)


def formula_text(plan: ModelSelection) -> str:
    """The closed form in plain text: each layer kind's terms, then the model total."""
    lines = [f"{plan.model.name}: forward FLOPs of one sequence of seq_len tokens"]
    for unit in plan.units:
        shown, terms = _display_terms(unit, plan.symbols)
        lines.append(f"{unit.where}:")
        for quantity, (pattern, expr) in shown.items():
            lines.append(f"  {quantity} = {expr}    [{pattern.name}]")
        for slot, pattern, expr in terms:
            lines.append(f"  + {expr}    [{slot}: {pattern.name}]")
    lines.append("total, dimensions substituted:")
    lines.append(f"  F(seq_len) = {plan.expression}")
    return "\n".join([*(line.replace("__", "_") for line in lines), *_tower_lines(plan)])


def _tower_lines(plan: ModelSelection) -> list[str]:
    """The closed forms of the towers that encode images, a term of their own beside the language
    model's (exact counts only: a convention's count of a tower is not a closed form here)."""
    if plan.convention != "exact":
        return []
    from flopsreg.engine.media import closed_form_lines, sequence_form_lines, tower_kinds

    kinds = tower_kinds(plan.model, plan.hf_readers)
    lines = [
        line for part, kind in kinds.items() if kind.flops
        for line in ("", *closed_form_lines(part, kind, plan.model.towers[part].dims))
    ]
    return lines + [  # cross-attention layers that run only with images (Mllama's), over one sequence
        line for part, kind in kinds.items() if kind.sequence_flops
        for line in ("", *sequence_form_lines(part, kind, plan.model.towers[part].dims))
    ]


# -- results ----------------------------------------------------------------------------------


def _lengths_text(result: Result) -> str:
    if len(result.seqlens) == 1:
        text = f"batch {result.batch} x {result.seqlens[0]} tokens"
    else:
        text = f"batch {result.batch} x packed row of {len(result.seqlens)} sequences ({sum(result.seqlens)} tokens)"
    if result.cached:
        shown = result.cached[0] if len(set(result.cached)) == 1 else ", ".join(map(str, result.cached))
        text += f" after {shown} cached"
    return text + (", logits at the last position" if result.logits != "all" else "")


def per_token_text(value: Fraction) -> str:
    """An exact per-token count: the integer, or the fraction with a 4-digit approximation."""
    if value.denominator == 1:
        return _group(value.numerator)
    return f"{value.numerator}/{value.denominator} (~{float(value):.4g})"


def exact_json(value: Fraction) -> str:
    """An exact rational for JSON: ``"123"`` or ``"246/5"``."""
    return str(value)


def _placed_apart(result: Result) -> bool:
    """Whether some sequence's step encodes other media than every sequence holds."""
    return any(placed.encoded is not result.images or placed.videos is not result.videos or placed.audio is not result.audio
               for placed in result.placed)


def _with_media(result: Result) -> bool:
    """Whether the result's sequences hold videos or audio clips (beside any images)."""
    return any(placed.videos is not None or placed.audio is not None for placed in result.placed) or (
        result.videos is not None or result.audio is not None)


def _placed_text(number: int, placed: Placed, media: bool) -> str:
    """One sequence's media in this step: its new image (video, audio) tokens, and what the towers encode."""
    if not media:  # images alone
        encoded = placed.encoded
        what = "no image encoded (none, or each already in the cache)" if encoded is None else (
            f"{len(encoded.plans)} image(s) encoded, tower {_group(encoded.tower)} FLOPs"
            + (f", bidirectional pairs {_group(encoded.bidirectional)} FLOPs" if encoded.bidirectional else "")
        )
        return f"sequence {number}: {placed.tokens} new image tokens; {what}"
    encoded = [f"{len(held.plans)} {_MEDIUM_WORDS[held.rule.takes]} encoded, {held.part} tower {_group(held.tower)} FLOPs"
               + (f", bidirectional pairs {_group(held.bidirectional)} FLOPs" if held.bidirectional else "") for held in placed.media]
    what = "; ".join(encoded) or "nothing encoded (no media, or each already in the cache)"
    return f"sequence {number}: {placed.tokens} new media tokens (images, videos, audio); {what}"


_MEDIUM_WORDS = {"image": "image(s)", "video": "video(s)", "audio": "audio clip(s)"}


def _placed_json(placed: Placed, media: bool) -> dict[str, Any]:
    if not media:
        return {"new_image_tokens": placed.tokens, "encoded": None if placed.encoded is None else placed.encoded.to_dict()}
    return {"new_media_tokens": placed.tokens, **{key: None if held is None else held.to_dict() for key, held in
                                                  (("encoded", placed.encoded), ("encoded_videos", placed.videos), ("encoded_audio", placed.audio))}}


def result_text(result: Result) -> str:
    """A table of FLOPs per layer kind, then forward and training totals."""
    rows = [["kind", "layers", "patterns", "FLOPs per layer"]]
    for unit in result.selection.units:
        layers = f"{unit.count}: {_short_ranges(unit.layers)}" if unit.scope == "layer" else "model"
        rows.append([unit.name, layers, ", ".join(unit.patterns.values()), _group(result.unit_totals[unit])])
    lines = [f"{result.model.name}, {_lengths_text(result)}", _table(rows), ""]
    if result.images is not None:  # the lengths above are the language model's, image tokens included
        lines += [*result.images.text(), ""]
    if _placed_apart(result):  # a cached prefix or each request's own images: what each step encodes
        lines += [*(_placed_text(number, placed, _with_media(result)) for number, placed in enumerate(result.placed, 1)), ""]
    for media in (result.videos, result.audio):  # and their video and audio tokens
        if media is not None:
            lines += [*media.text(), ""]
    lines.append(f"forward   {_group(result.forward)} FLOPs ({result.forward:.4g})")
    how = "forward + backward = 3 x forward" if result.recompute == "none" else f"3 x forward + {result.recompute} recomputation"
    lines.append(f"training  {_group(result.training)} FLOPs ({result.training:.4g}; {how})")
    lines.append(f"per token: forward {per_token_text(result.forward_per_token)}, training {per_token_text(result.training_per_token)}")
    if result.serving and len(result.seqlens) > 1:  # a step of several requests: each one's share
        lines.append("per request (new:cached): " + "; ".join(f"{n}:{c} {_group(f)}" for (n, c), f in zip(result.requests, result.per_request)))
    return "\n".join(lines)


def _short_ranges(layers: tuple[range, ...]) -> str:
    text = ranges_text(layers)
    return text if len(text) <= 40 else text[:37] + "..."


def ranges_json(layers: tuple[range, ...]) -> list[dict[str, int]]:
    """Layer ranges for JSON: ``first`` and ``last`` index (inclusive) and ``step``."""
    return [{"first": r.start, "last": r[-1], "step": r.step} for r in layers]


def _batch_fields(result: Result) -> dict[str, Any]:
    """What every JSON view of a result starts with: the model and the batch it counted."""
    return {
        "model": result.model.name,
        "seqlens": list(result.seqlens),
        "batch": result.batch,
        "convention": result.convention,
        "recompute": result.recompute,
    }


def result_json(result: Result) -> dict[str, Any]:
    """The JSON contract: exact totals as decimal strings, plus float conveniences.

    Layers are grouped by kind (their indices as ranges), so the size follows the layer kinds,
    not the layer count; :func:`layers_json` gives the per-layer form on request.
    """
    kinds = [
        {
            "kind": unit.name,
            "count": unit.count,
            "layers": ranges_json(unit.layers),
            "patterns": unit.patterns,
            "flops_per_layer": str(result.unit_totals[unit]),
            "flops": str(unit.count * result.unit_totals[unit]),
        }
        for unit in result.selection.kinds
    ]
    head = result.selection.head
    return {
        **_batch_fields(result),
        "forward_flops": str(result.forward),
        "training_flops": str(result.training),
        "forward_flops_float": float(result.forward),
        "training_flops_float": float(result.training),
        "cached": list(result.cached) or [0] * len(result.seqlens),
        "logits": result.logits,
        "per_request_flops": [str(flops) for flops in result.per_request],
        **({"images": result.images.to_dict()} if result.images is not None else {}),
        **({"images_per_sequence": [_placed_json(placed, _with_media(result)) for placed in result.placed]} if _placed_apart(result) else {}),
        **({"audio": result.audio.to_dict()} if result.audio is not None else {}),
        **({"videos": result.videos.to_dict()} if result.videos is not None else {}),
        "tokens": result.tokens,
        "forward_flops_per_token": exact_json(result.forward_per_token),
        "training_flops_per_token": exact_json(result.training_per_token),
        "forward_flops_per_token_float": float(result.forward_per_token),
        "training_flops_per_token_float": float(result.training_per_token),
        "kinds": kinds,
        "model_level": {
            "patterns": head.patterns,
            "flops": str(result.unit_totals.get(head, 0)),
        },
        "slots": {slot: str(flops) for slot, flops in result.slot_flops.items()},
        "warnings": list(result.warnings),
    }


def layers_json(result: Result) -> Iterator[dict[str, Any]]:
    """One entry per decoder layer, generated one at a time (``eval --per-layer``)."""
    for layer in result.layers:
        yield {"index": layer.index, "kind": layer.kind, "patterns": dict(layer.patterns), "flops": str(layer.flops)}


# -- comparisons ------------------------------------------------------------------------------


def compare_text(comparison: Comparison) -> str:
    """A table of each convention against exact, then every difference with its reason."""
    from flopsreg.engine.compare import ratio_text

    exact = comparison.exact
    rows = [["convention", "forward FLOPs", "training FLOPs", "training / token", "vs exact"]]
    notes = []
    for total in comparison.totals:
        if total.result is None:
            rows.append([total.convention, "-", "-", "-", "cannot count"])
            notes.append(f"{total.convention}: {total.error}")
            continue
        per_token = total.result.training_per_token
        rows.append(
            [
                total.convention,
                _group(total.result.forward),
                _group(total.result.training),
                f"{float(per_token):.4g}",
                ratio_text(total.ratio(exact)),
            ]
        )
    lines = [f"{exact.model.name}, {_lengths_text(exact)}", _table(rows)]
    for media in (exact.images, exact.videos, exact.audio):  # the lengths are the language model's, media tokens included
        if media is not None:
            lines += ["", *media.text()]
    if comparison.differences:
        lines += ["", "differences from exact:"] + [f"- {d}" for d in comparison.differences]
    lines += [f"- {note}" for note in notes]
    if comparison.bytes:
        lines += ["", *_compare_bytes_text(comparison)]
    return "\n".join(lines)


def _compare_bytes_text(comparison: Comparison) -> list[str]:
    """A serving step's bytes: exact's least traffic and each convention's own estimate, with why they differ."""
    from flopsreg.engine.compare import ratio_text

    traffic = comparison.traffic
    experts = "every routed expert" if traffic is not None and traffic.all_experts else "the experts its tokens can reach"
    lines = [f"bytes of the step, 2 bytes per element (exact: the least it must move, weights once and {experts}):"]
    rows = [["convention", "read", "written", "total", "vs exact"]]
    if traffic is not None:
        rows.append([comparison.exact.convention, _group(traffic.read), _group(traffic.written), _group(traffic.total), "1x"])
    notes = []
    for estimate in comparison.bytes:
        if estimate.error is not None or traffic is None:
            rows.append([estimate.convention, "-", "-", "-", "cannot count"])
            notes.append(f"- {estimate.convention}: {estimate.error}")
            continue
        rows.append([estimate.convention, _group(estimate.read), _group(estimate.written), _group(estimate.total),
                     ratio_text(estimate.ratio(traffic))])
        notes.append(f"- {estimate.convention}: {estimate.reason}")
    return [*lines, _table(rows), *notes]


def _compare_bytes_json(comparison: Comparison) -> dict[str, Any] | None:
    """A serving step's bytes (null where no convention estimates them): exact's least traffic and
    each convention's read, written and total bytes as decimal strings, its ratio and reason."""
    if not comparison.bytes:
        return None
    traffic, estimates = comparison.traffic, []
    for estimate in comparison.bytes:
        entry: dict[str, Any] = {"convention": estimate.convention, "reason": estimate.reason}
        if estimate.error is not None or traffic is None:
            entry["error"] = estimate.error
        else:
            ratio = estimate.ratio(traffic)
            entry |= {"read_bytes": str(estimate.read), "written_bytes": str(estimate.written), "total_bytes": str(estimate.total),
                      "ratio_to_exact": None if ratio is None else float(ratio)}
        estimates.append(entry)
    return {"exact": None if traffic is None else traffic.to_dict(), "conventions": estimates}


def compare_json(comparison: Comparison) -> dict[str, Any]:
    """Totals as decimal strings, ratios as floats, differences with their reasons."""
    exact = comparison.exact
    totals = []
    for total in comparison.totals:
        entry: dict[str, Any] = {"convention": total.convention}
        if total.result is None:
            entry["error"] = total.error
        else:
            ratio = total.ratio(exact)
            entry |= {
                "forward_flops": str(total.result.forward),
                "training_flops": str(total.result.training),
                "forward_flops_per_token": exact_json(total.result.forward_per_token),
                "training_flops_per_token": exact_json(total.result.training_per_token),
                "ratio_to_exact": None if ratio is None else float(ratio),
            }
        totals.append(entry)
    return {
        "model": exact.model.name,
        "seqlens": list(exact.seqlens),
        "batch": exact.batch,
        "cached": list(exact.cached) or [0] * len(exact.seqlens),
        "logits": exact.logits,
        **({"images": exact.images.to_dict()} if exact.images is not None else {}),
        **({"videos": exact.videos.to_dict()} if exact.videos is not None else {}),
        **({"audio": exact.audio.to_dict()} if exact.audio is not None else {}),
        "conventions": totals,
        "bytes": _compare_bytes_json(comparison),
        "differences": [
            {
                "convention": d.convention,
                "where": d.where,
                "slot": d.slot,
                "exact_pattern": d.exact_pattern,
                "pattern": d.pattern,
                "reason": d.reason,
                "effects": {slot: None if r is None else float(r) for slot, r in d.effects},
                "text": str(d),
                "block": d.block,
                "depths": list(d.depths),
            }
            for d in comparison.differences
        ],
    }


# -- serving and utilisation ------------------------------------------------------------------


def generation_text(gen: Generation) -> str:
    """Prefill and decode totals, and FLOPs per generated token."""
    model = gen.prefill.model.name
    media = [held for held in (gen.prefill.images, gen.prefill.videos, gen.prefill.audio) if held is not None]
    prompt = " + ".join([f"{gen.prompt} text tokens" if media else f"{gen.prompt} tokens",
                         *(f"{held.tokens} {held.rule.takes} tokens" for held in media)])
    lines = [f"{model}, batch {gen.batch}: prompt {prompt}, {gen.new_tokens} new tokens", ""]
    for held in media:  # the prefill encodes them; the decode steps attend to them in the cache
        lines += [*held.text(), ""]
    lines.append(f"prefill  {_group(gen.prefill_flops)} FLOPs ({gen.prefill_flops:.4g}; {prompt}, logits at the last)")
    lines.append(f"decode   {_group(gen.decode_flops)} FLOPs ({gen.decode_flops:.4g}; {gen.decode_steps} steps of 1 token)")
    lines.append(f"total    {_group(gen.total)} FLOPs ({gen.total:.4g})")
    lines.append(f"per generated token: {per_token_text(gen.per_token)}")
    if gen.decode_per_token is not None:
        lines.append(f"per decode step and sequence: {per_token_text(gen.decode_per_token)}")
    return "\n".join(lines)


def generation_json(gen: Generation) -> dict[str, Any]:
    """The generation totals: exact integers as decimal strings, per-token values as exact rationals."""
    decode = gen.decode_per_token
    return {
        "model": gen.prefill.model.name,
        "convention": gen.prefill.convention,
        "prompt": gen.prompt,
        "new_tokens": gen.new_tokens,
        "batch": gen.batch,
        "decode_steps": gen.decode_steps,
        "prefill_flops": str(gen.prefill_flops),
        "decode_flops": str(gen.decode_flops),
        "total_flops": str(gen.total),
        "flops_per_generated_token": exact_json(gen.per_token),
        "flops_per_generated_token_float": float(gen.per_token),
        "decode_flops_per_step": None if decode is None else exact_json(decode),
        **({"images": gen.prefill.images.to_dict()} if gen.prefill.images is not None else {}),
        **({"videos": gen.prefill.videos.to_dict()} if gen.prefill.videos is not None else {}),
        **({"audio": gen.prefill.audio.to_dict()} if gen.prefill.audio is not None else {}),
        "warnings": list(gen.prefill.warnings),
    }


def generation_bounds_text(bounds: GenerationBounds) -> str:
    """The generation's totals, then each phase's bytes and roofline bound."""
    lines = [generation_text(bounds.generation), ""]
    lines.append(f"{bounds.devices} device(s) at {float(bounds.peak):.4g} FLOP/s and {float(bounds.bandwidth):.4g} bytes/s each")
    phases = [("prefill", bounds.prefill, bounds.prefill_roofline), ("decode", bounds.decode, bounds.decode_roofline)]
    for name, traffic, roof in phases:
        if traffic is None or roof is None:
            continue
        lines.append(
            f"{name:<8} {_group(traffic.total)} bytes at least; intensity {float(traffic.intensity):.4g} FLOPs/byte; "
            f"roofline {float(roof.seconds):.6g} s, {roof.bound}-bound"
        )
    return "\n".join(lines)


def generation_bounds_json(bounds: GenerationBounds) -> dict[str, Any]:
    """:func:`generation_json`, with the hardware and each phase's traffic and roofline (decode null when T = 1)."""
    phases = {"prefill": (bounds.prefill, bounds.prefill_roofline), "decode": (bounds.decode, bounds.decode_roofline)}
    return {
        **generation_json(bounds.generation),
        "devices": bounds.devices,
        "peak_flops": str(bounds.peak),
        "bandwidth": str(bounds.bandwidth),
        **{
            f"{name}_bounds": None if traffic is None or roof is None else {"traffic": traffic.to_dict(), "roofline": roof.to_dict()}
            for name, (traffic, roof) in phases.items()
        },
    }


# -- sweeps ------------------------------------------------------------------------------------


def sweep_lines(rows: Iterable[tuple[int, int]], form: str, batch: int, image_tokens: int = 0) -> Iterator[str]:
    """``(seq_len, forward FLOPs)`` rows as the lines ``flopsreg sweep`` writes, 4096 joined by
    newlines at a time: ``form`` ``"csv"`` (no header) or ``"json"`` (one object per line), with
    training FLOPs and FLOPs per token (exact: an integer or a reduced fraction ``n/d``, as
    ``str(Fraction)`` writes it) beside the totals.

    With *image_tokens* (a sweep with images) the seq_len is a sequence's text and the FLOPs per
    token are per token of the language model, its image tokens included (as :class:`Result`'s).

    Each line is one format string filled with ints and ``math.gcd`` reductions, not a Fraction
    and a ``json.dumps`` per row: the values are digits and ``/``, which JSON needs no escaping for.
    """
    if form == "csv":
        line = "{},{},{},{}{},{}{}".format
    else:
        line = (
            '{{"seq_len": {}, "forward_flops": "{}", "training_flops": "{}", '
            '"forward_per_token": "{}{}", "training_per_token": "{}{}"}}'
        ).format

    def text(n: int, f: int) -> str:
        tokens = batch * (n + image_tokens)
        g = gcd(f, tokens)
        num, den = f // g, tokens // g
        t_num, t_den = (num, den // 3) if den % 3 == 0 else (3 * num, den)  # 3 num / den, reduced
        return line(n, f, 3 * f, num, f"/{den}" if den != 1 else "", t_num, f"/{t_den}" if t_den != 1 else "")

    rows = iter(rows)
    return iter(lambda: "\n".join([text(n, f) for n, f in islice(rows, 4096)]), "")


def sweep_json(rows: Iterable[tuple[int, int]], batch: int = 1) -> list[dict[str, Any]]:
    """The rows of ``flopsreg sweep --format json`` for *rows* (what :meth:`flopsreg.Registry.iter_sweep`
    yields with the same *batch*), as Python objects: ``json.loads`` of the command's output."""
    return [json.loads(line) for chunk in sweep_lines(rows, "json", batch) for line in chunk.split("\n")]


def peaks_text(peaks: Mapping[str, Peak], bandwidths: Mapping[str, Bandwidth]) -> str:
    """The peak table (name, device, format, dense TFLOP/s per device, the device's HBM TB/s,
    source), then the bandwidth table (name, device, bytes/s, source)."""
    by_device = {bw.device: bw for bw in bandwidths.values()}
    rows = [["name", "device", "format", "TFLOP/s", "HBM TB/s", "source"]]
    for peak in peaks.values():
        bw = by_device.get(peak.device)
        rows.append([peak.name, peak.device, peak.dtype, f"{peak.flops / 10**12:g}", f"{bw.bytes_per_second / 10**12:g}" if bw else "", peak.source])
    memory = [["name", "device", "bytes/s", "source"]]
    memory += [[bw.name, bw.device, f"{bw.bytes_per_second:,}", bw.source] for bw in bandwidths.values()]
    return _table(rows) + "\n\nmemory bandwidth per device (HBM)\n" + _table(memory)


def peaks_json(peaks: Mapping[str, Peak], bandwidths: Mapping[str, Bandwidth]) -> list[dict[str, Any]]:
    """One entry per peak, with its device's memory bandwidth in bytes/s (a decimal string) and its source."""
    by_device = {bw.device: bw for bw in bandwidths.values()}
    return [
        {
            "name": p.name, "device": p.device, "format": p.dtype, "flops": str(p.flops), "source": p.source,
            **({"bandwidth": str(by_device[p.device].bytes_per_second), "bandwidth_name": by_device[p.device].name,
                "bandwidth_source": by_device[p.device].source} if p.device in by_device else {}),
        }
        for p in peaks.values()
    ]


def utilisation_text(step: StepUtilisation) -> str:
    """MFU and HFU of a step, with the numbers they come from; for a serving step its bytes,
    intensity, MBU and roofline bound."""
    result, mfu, hfu = step.result, step.mfu, step.hfu
    lines = [
        f"{result.model.name}, {_lengths_text(result)}, {mfu.devices} device(s) at {float(mfu.peak):.4g} FLOP/s each",
        f"step time  {float(mfu.seconds):.6g} s",
        f"MFU        {mfu.decimal(6)} ({_group(mfu.flops)} model FLOPs)",
        f"HFU        {hfu.decimal(6)} ({_group(hfu.flops)} hardware FLOPs, recompute {result.recompute})",
    ]
    if step.traffic is not None:
        traffic = step.traffic
        lines.append(
            f"bytes      {_group(traffic.total)} at least (read {_group(traffic.read)}, written {_group(traffic.written)}); "
            f"intensity {float(traffic.intensity):.4g} FLOPs/byte"
        )
    if step.mbu is not None and step.roofline is not None:
        roof = step.roofline
        lines.append(f"MBU        {float(step.mbu):.6g} ({float(step.mbu.bandwidth):.4g} bytes/s per device)")
        lines.append(
            f"roofline   {float(roof.seconds):.6g} s at least, {roof.bound}-bound "
            f"(compute {float(roof.compute_seconds):.4g} s, memory {float(roof.memory_seconds):.4g} s)"
        )
    elif step.traffic is not None:
        lines.append("MBU        needs the devices' memory bandwidth: give --bandwidth (a peak named from flopsreg peaks gives it)")
    return "\n".join(lines)


def utilisation_json(step: StepUtilisation) -> dict[str, Any]:
    """MFU and HFU as decimal fraction strings and floats, with the exact FLOPs; a serving step's
    traffic, MBU and roofline (null where not computed)."""
    result, mfu, hfu = step.result, step.mfu, step.hfu
    return {
        **_batch_fields(result),
        "devices": mfu.devices,
        "peak_flops": str(mfu.peak),
        "step_time": str(mfu.seconds),
        "mfu": mfu.to_dict(),
        "hfu": hfu.to_dict(),
        "bandwidth": None if step.mbu is None else str(step.mbu.bandwidth),
        "traffic": None if step.traffic is None else step.traffic.to_dict(),
        "mbu": None if step.mbu is None else step.mbu.to_dict(),
        "roofline": None if step.roofline is None else step.roofline.to_dict(),
        "warnings": list(result.warnings),
    }
