"""The ``flopsreg`` command line: patterns, eval, sweep, compare, explain, formula, convert.

Errors go to stderr as one line and exit with status 2; warnings (unused parameters, skipped
plugins) go to stderr and do not change the exit status.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

import attrs

from flopsreg import render
from flopsreg.engine import RECOMPUTE
from flopsreg.errors import FlopsregError
from flopsreg.examples_index import example_names, example_path
from flopsreg.model import Model
from flopsreg.registry import Registry
from flopsreg.sweep import parse_lengths

__all__ = ["load_model_arg", "main"]


def load_model_arg(spec: str, *, mtp: bool = False) -> Model:
    """A model from a ``.toml`` file, a Hugging Face ``config.json``, or a bundled example name."""
    path = Path(spec)
    if path.suffix == ".json":
        if not path.exists():
            raise FlopsregError(f"MODEL {spec!r}: no such file")
        return Model.from_hf_config(path, mtp=mtp)
    if path.exists():
        return Model.from_toml(path)
    bundled = example_path(spec)
    if bundled is None and path.suffix == ".toml":
        raise FlopsregError(f"MODEL {spec!r}: no such file")
    if bundled is None:
        raise FlopsregError(
            f"MODEL {spec!r}: not a .toml or config.json file, nor a bundled example "
            f"({', '.join(example_names())})"
        )
    return Model.from_toml_string(bundled.read_text(encoding="utf-8"), where=f"example {spec}")


def _seqlens(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


class UsageError(FlopsregError):
    """The command line itself is malformed (unknown option, missing argument, ...)."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one ``flopsreg: error:`` line and exit status 2, like the rest."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def _param(text: str) -> tuple[str, int]:
    name, sep, value = text.partition("=")
    try:
        if not sep:
            raise ValueError
        return name.strip(), int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME=INTEGER, got {text!r}") from None


def _model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="a .toml model file, a config.json, or a bundled example name")
    p.add_argument(
        "--param",
        type=_param,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a model-wide parameter (repeatable), e.g. padded_vocab=262272",
    )
    p.add_argument("--mtp", action="store_true", help="count multi-token-prediction modules of a config.json")


def _length_options(p: argparse.ArgumentParser) -> None:
    lengths = p.add_mutually_exclusive_group(required=True)
    lengths.add_argument("--seq-len", type=int, metavar="S", help="tokens per sequence")
    lengths.add_argument("--seqlens", type=_seqlens, metavar="S1,S2,...", help="one packed row of sequences")
    p.add_argument("--batch", type=int, default=1, metavar="B", help="sequences (or packed rows) per batch")


def _convention_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--convention", default="exact", metavar="NAME", help="exact (default), megatron, slime, ...")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="flopsreg", description="Exact FLOPs of transformer models.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("patterns", help="list the registered patterns")
    p.add_argument("--format", choices=("text", "json"), default="text")

    p = sub.add_parser("eval", help="exact FLOPs of a model for a batch")
    _model_options(p)
    _length_options(p)
    _convention_option(p)
    p.add_argument(
        "--recompute",
        choices=tuple(RECOMPUTE),
        default="none",
        help="activation recomputation added to training FLOPs (default: none)",
    )
    p.add_argument("--format", choices=("text", "json", "latex"), default="text")

    p = sub.add_parser("sweep", help="forward and training FLOPs over many sequence lengths")
    _model_options(p)
    p.add_argument(
        "--seq-len",
        required=True,
        metavar="START:STOP[:STEP] | S1,S2,...",
        help="lengths to evaluate; STOP is included, e.g. 1024:131072:1024",
    )
    p.add_argument("--batch", type=int, default=1, metavar="B", help="sequences per batch")
    _convention_option(p)
    p.add_argument("--format", choices=("csv", "json"), default="csv")

    p = sub.add_parser("compare", help="every convention against exact, and why they differ")
    _model_options(p)
    _length_options(p)
    p.add_argument("--format", choices=("text", "json"), default="text")

    p = sub.add_parser("explain", help="which pattern fills each slot of each layer, and why")
    _model_options(p)
    _convention_option(p)

    p = sub.add_parser("formula", help="the model's closed form")
    _model_options(p)
    _convention_option(p)
    p.add_argument("--format", choices=("text", "latex"), default="text")

    p = sub.add_parser("convert", help="write a config.json as an editable flopsreg model file")
    _model_options(p)
    p.add_argument("-o", "--output", metavar="PATH", help="write here instead of stdout")
    return parser


def _run(args: argparse.Namespace, registry: Registry) -> str:
    if args.command == "patterns":
        if args.format == "json":
            return json.dumps(render.patterns_json(registry), indent=2)
        return render.patterns_text(registry)
    model = load_model_arg(args.model, mtp=args.mtp)
    if args.param:
        model = attrs.evolve(model, params={**model.params, **dict(args.param)})
    if args.command == "convert":
        text = model.to_toml()
        if args.output is None:
            return text.rstrip("\n")
        Path(args.output).write_text(text, encoding="utf-8")
        return f"wrote {args.output}"
    if args.command == "sweep":
        lengths = parse_lengths(args.seq_len)
        flops = registry.sweep(model, lengths, batch=args.batch, convention=args.convention)
        rows = [(n, f, 3 * f) for n, f in zip(lengths, flops)]
        if args.format == "json":
            return json.dumps([{"seq_len": n, "forward_flops": str(f), "training_flops": str(t)} for n, f, t in rows])
        return "\n".join(["seq_len,forward_flops,training_flops", *(f"{n},{f},{t}" for n, f, t in rows)])
    if args.command == "compare":
        comparison = registry.compare(model, seq_len=args.seq_len, seqlens=args.seqlens, batch=args.batch)
        _warn(comparison.exact.warnings)
        return json.dumps(comparison.to_dict(), indent=2) if args.format == "json" else comparison.to_text()
    if args.command == "explain":
        return registry.plan(model, convention=args.convention).explain()
    if args.command == "formula":
        plan = registry.plan(model, convention=args.convention)
        _warn(plan.warnings)
        return render.latex(plan) if args.format == "latex" else render.formula_text(plan)
    result = registry.evaluate(
        model,
        seq_len=args.seq_len,
        seqlens=args.seqlens,
        batch=args.batch,
        recompute=args.recompute,
        convention=args.convention,
    )
    _warn(result.warnings)
    if args.format == "json":
        return json.dumps(render.result_json(result), indent=2)
    if args.format == "latex":
        return result.latex()
    return render.result_text(result)


def _warn(messages: Sequence[str]) -> None:
    for message in messages:
        print(f"flopsreg: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input)."""
    try:
        args = _parser().parse_args(argv)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            registry = Registry.default()
        _warn([str(w.message) for w in caught])
        print(_run(args, registry))
    except FlopsregError as exc:
        print(f"flopsreg: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into head and closed early: not an error
        sys.stderr.close()
    return 0
