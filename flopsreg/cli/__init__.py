"""The ``flopsreg`` command line: patterns, eval, sweep, compare, explain, formula, latex, plot,
convert, generate, mfu, memory, peaks, params, cache.

``eval`` and ``sweep`` of a model file or bundled example answer from the cache of compiled
models when they can (see :mod:`flopsreg.engine.cache`), else, where the built-ins alone are
installed, from the manifest's formula trees (:mod:`flopsreg.engine.cold`): no plugin is loaded
and sympy is not imported.

Errors go to stderr as one line and exit with status 2; warnings (unused parameters, skipped
plugins) go to stderr and do not change the exit status.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from flopsreg import render
from flopsreg.engine.evaluate import LOGITS_MODES, RECOMPUTE, evaluate
from flopsreg.engine.sweep import iter_sweep, parse_lengths
from flopsreg.errors import FlopsregError, did_you_mean
from flopsreg.model import Model
from flopsreg.model.examples_index import example_names, example_path
from flopsreg.readers.hub import is_hub_id

if TYPE_CHECKING:  # the registry (plugins, sympy) is loaded only when neither the cache nor the manifest answers
    from flopsreg.engine.cache import Cache
    from flopsreg.engine.memory import Holdings
    from flopsreg.engine.peaks import Bounds
    from flopsreg.registry import Registry

__all__ = ["load_model_arg", "main"]


def load_model_arg(
    spec: str, *, blocks: Sequence[tuple[str, str]] = (), registry: Registry | None = None, revision: str | None = None
) -> Model:
    """A model from a ``.toml`` file, a Hugging Face ``config.json`` (or a folder holding one),
    a bundled example name or a Hugging Face Hub id (``Qwen/Qwen3-8B``), in that precedence; an
    argument that looks like a path and is no Hub id must exist.

    *blocks* are ``(option, block)`` pairs: the blocks of extra layers a config.json declares to
    count (``--block NAME``, or its shorthand ``--NAME``), each an error, naming the option, if
    the model has none. A config.json is read with *registry*'s readers (default: the built-in
    and installed plugins). *revision* (``--revision``) is a Hub id's branch, tag or commit.
    """
    if not spec.strip():
        raise FlopsregError("MODEL '': empty; give a .toml file, a config.json, a Hub id or a bundled example name")
    path = Path(spec)
    local = path.exists() or spec in example_names()
    if revision is not None and (local or not is_hub_id(spec)):
        raise FlopsregError(f"--revision {revision}: applies to a Hugging Face Hub id only; MODEL {spec!r} is not one")
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise FlopsregError(f"MODEL {spec!r}: a folder without a config.json")
        path = path / "config.json"
    if path.is_file():
        if path.suffix == ".json":
            model = Model.from_hf_config(path, registry=registry, blocks=[block for _, block in blocks])
        else:
            model = Model.from_toml(path)
    elif spec in example_names():
        model = Model.example(spec)
    elif is_hub_id(spec):
        model = Model.from_hf(spec, revision=revision, registry=registry, blocks=[block for _, block in blocks])
    elif os.sep in spec or "/" in spec or path.suffix in (".toml", ".json"):
        bundled = example_path(spec)
        hint = f" (the bundled example is called {bundled.stem!r}, without {path.suffix})" if bundled and path.suffix else ""
        raise FlopsregError(f"MODEL {spec!r}: no such file{hint}")
    else:
        names = example_names()
        raise FlopsregError(
            f"MODEL {spec!r}: not a .toml or config.json file, nor a bundled example"
            f"{did_you_mean(spec, names)} (bundled: {', '.join(names)})"
        )
    for option, block in blocks:
        if not model.plan.blocks.get(block):
            raise FlopsregError(
                f"{option}: {model.name} has no {block} layers to count (a config.json declares them where its "
                f"model_type's reader reads them; a model file lists them in plan.{block}, and they count always)"
            )
    return model


def _seqlens(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _image(text: str) -> tuple[tuple[int, int], int | None]:
    """``HxW`` or ``HxW@K``: an image's height and width in pixels, and the text tokens before it."""
    size, at, position = text.lower().partition("@")
    height, sep, width = size.partition("x")
    if not sep or not height.isdigit() or not width.isdigit() or at and not position.isdigit():
        after = ", then @K: the text tokens before the image (e.g. 720x1280@50)" if at else ""
        raise argparse.ArgumentTypeError(f"expected HEIGHTxWIDTH in pixels (e.g. 720x1280), got {text!r}{after}")
    return (int(height), int(width)), int(position) if at else None


def _image_count(text: str) -> tuple[int, int | None]:
    """``N`` or ``N@K``: an image by its image tokens, and the text tokens before it."""
    count, at, position = text.partition("@")
    if not count.isdigit() or at and not position.isdigit():
        raise argparse.ArgumentTypeError(f"expected the image's tokens N, optionally @K text tokens before it (e.g. 882 or 882@50), got {text!r}")
    return int(count), int(position) if at else None


def _processor_option(text: str) -> tuple[str, int | bool]:
    """``KEY=VALUE``: one option of the family's processor (``max_pixels=1003520``, ``do_pan_and_scan=false``)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, an option of the model's processor (e.g. max_pixels=1003520), got {text!r}")
    value = value.strip().lower()
    if value in ("true", "false"):
        return key.strip(), value == "true"
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE with an integer, true or false as the value (e.g. max_pixels=1003520), got {text!r}")
    return key.strip(), int(value)


def _video(text: str) -> tuple[tuple[int, int, int], int | None]:
    """``FxHxW`` or ``FxHxW@K``: a video's frames (as sampled) and their height and width in pixels,
    and the text tokens before it."""
    video, at, position = text.lower().partition("@")
    parts = video.split("x")
    if len(parts) != 3 or not all(part.isdigit() for part in parts) or at and not position.isdigit():
        after = ", then @K: the text tokens before the video (e.g. 16x720x1280@50)" if at else ""
        raise argparse.ArgumentTypeError(f"expected FRAMESxHEIGHTxWIDTH (e.g. 16x720x1280), got {text!r}{after}")
    return (int(parts[0]), int(parts[1]), int(parts[2])), int(position) if at else None


def _clip(text: str) -> tuple[str, int | None]:
    """``SECONDS`` or ``SECONDS@K``: an audio clip's length (checked where it is planned), and the text tokens before it."""
    seconds, at, position = text.partition("@")
    if at and not position.isdigit():
        raise argparse.ArgumentTypeError(f"expected SECONDS, optionally @K text tokens before the clip (e.g. 2.5 or 2.5@50), got {text!r}")
    return seconds, int(position) if at else None


def _clip_count(text: str) -> tuple[int, int | None]:
    """``N`` or ``N@K``: an audio clip by its audio tokens, and the text tokens before it."""
    count, at, position = text.partition("@")
    if not count.isdigit() or at and not position.isdigit():
        raise argparse.ArgumentTypeError(f"expected the clip's audio tokens N, optionally @K text tokens before it (e.g. 188 or 188@50), got {text!r}")
    return int(count), int(position) if at else None


def _image_options(p: argparse.ArgumentParser) -> None:
    """The images every sequence holds, before its text or after K text tokens: in pixels, or by their image tokens."""
    given = p.add_mutually_exclusive_group()
    given.add_argument("--image", type=_image, action="append", metavar="HxW[@K]",
                       help="an image every sequence holds, before its text or after K text tokens (height x width in pixels; repeatable)")
    given.add_argument("--image-tokens", type=_image_count, action="append", metavar="N[@K]",
                       help="an image by the image tokens its processor expands it to (repeatable)")
    p.add_argument("--video", type=_video, action="append", metavar="FxHxW[@K]",
                   help="a video every sequence holds, after its images and before its text or after K text tokens "
                   "(frames as sampled x height x width in pixels; repeatable)")
    p.add_argument("--processor", type=_processor_option, action="append", metavar="KEY=VALUE",
                   help="an option the model's image and video processor was run with, e.g. max_pixels=1003520 "
                   "(the rest at their published defaults; repeatable)")


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``processor`` keyword of the ``--processor`` options (none without them); a key given twice is refused."""
    given = getattr(args, "processor", None)
    if not given:
        return {}
    if not (getattr(args, "image", None) or getattr(args, "image_tokens", None) or getattr(args, "video", None)):
        raise FlopsregError("--processor: no --image, --image-tokens or --video for the processor's options to apply to")
    options: dict[str, int | bool] = {}
    for key, value in given:
        if key in options:
            raise FlopsregError(f"--processor {key}: given twice ({options[key]} and {value}); give each option once")
        options[key] = value
    return {"processor": options}


def _media(args: argparse.Namespace) -> dict[str, Any]:
    """The ``images`` / ``image_tokens`` / ``image_positions`` keywords of the ``--image`` options,
    ``videos`` / ``video_positions`` of ``--video``, ``audio`` / ``audio_tokens`` /
    ``audio_positions`` of ``--audio`` (none without them): each ``@K`` gives its entry's place,
    all or none of one option's."""
    return {key: value for dest in _PLACED for key, value in _placed(args, dest).items()} | _options(args)


# Each media option's dest: (the keyword of its entries, the keyword of their positions, what one is called).
_PLACED = {"image": ("images", "image_positions", "image"), "image_tokens": ("image_tokens", "image_positions", "image"),
           "video": ("videos", "video_positions", "video"), "audio": ("audio", "audio_positions", "clip"),
           "audio_tokens": ("audio_tokens", "audio_positions", "clip")}


def _placed(args: argparse.Namespace, dest: str) -> dict[str, Any]:
    """The keywords of the option *dest* (``--video``, ...): its entries and, where each gives
    ``@K``, their positions (some placed and others not is refused)."""
    given = getattr(args, dest, None)
    if not given:
        return {}
    keyword, placed, one = _PLACED[dest]
    positions = [position for _, position in given]
    if None in positions and any(position is not None for position in positions):
        option = "--" + dest.replace("_", "-")
        raise FlopsregError(f"{option}: @K on some {one}s and not others: give each {one}'s place (@K text tokens before it), or none")
    return {keyword: [entry for entry, _ in given], **({placed: positions} if positions[0] is not None else {})}


def _unplaced(media: dict[str, Any], what: str) -> None:
    """*what* (a sweep, a plot) places every medium before the text, each length being the text: ``@K`` is refused."""
    for dest in ("image", "video", "audio"):
        _, placed, one = _PLACED[dest]
        if placed in media:
            raise FlopsregError(f"--{dest} ...@K: {what} places every {one} before the text (each length is the text); drop @K")


def _audio_options(p: argparse.ArgumentParser) -> None:
    """The audio clips every sequence holds, after its images and videos: in seconds, or by their audio tokens."""
    given = p.add_mutually_exclusive_group()
    given.add_argument("--audio", type=_clip, action="append", metavar="SECONDS[@K]",
                       help="an audio clip every sequence holds, after its images and videos and before its text or after K text tokens "
                       "(its length in seconds, exact: 2.5 or 5/2; repeatable)")
    given.add_argument("--audio-tokens", type=_clip_count, action="append", metavar="N[@K]",
                       help="an audio clip by the audio tokens its processor expands it to, where that fixes its FLOPs (repeatable)")


def _request(text: str) -> tuple[int, int]:
    """``N:P``: N new tokens after P cached ones (one request of a serving step)."""
    new, colon, cached = text.partition(":")
    try:
        return int(new), int(cached) if colon else 0
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NEW:CACHED, two integers such as 512:0 or 1:4096, got {text!r}") from None


class UsageError(FlopsregError):
    """The command line itself is malformed (unknown option, missing argument, ...)."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one ``flopsreg: error:`` line and exit status 2, like the rest;
    the line names the subcommand (``eval: ...``), never the program a second time."""

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.partition(" ")[2]
        raise UsageError(f"{command + ': ' if command else ''}{message} (see {self.prog} --help)")

    def _print_message(self, message: str, file: Any = None) -> None:
        """--help goes to stdout through :func:`_write`, so that a full disk is one error line too."""
        if file is None or file is sys.stdout:
            _write(message, end="")
        else:
            super()._print_message(message, file)


class _Commands(argparse._SubParsersAction):
    """The subcommands, each command's options added only when it is the one run (or for --help):
    the others' dozens of ``add_argument`` calls would be a few percent of every start."""

    def __init__(self, *args: Any, wanted: str | None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._wanted = wanted

    def add_parser(self, name: str, **kwargs: Any) -> Any:  # type: ignore[override]
        parser = super().add_parser(name, **kwargs)
        return parser if self._wanted in (None, name) else _Unused()


class _Unused:
    """Where the options of a command that is not being run go: nowhere."""

    def add_argument(self, *args: Any, **kwargs: Any) -> None:
        pass

    def add_mutually_exclusive_group(self, **kwargs: Any) -> _Unused:
        return self


class _Version(argparse.Action):
    """``--version``: the installed distribution's version, looked up only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help=str(kwargs.get("help")))

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        from importlib.metadata import version

        _write(f"flopsreg {version('flopsreg')}")
        parser.exit()


def _param(text: str) -> tuple[str, int]:
    name, sep, value = text.partition("=")
    try:
        if not sep or not name.strip():
            raise ValueError
        return name.strip(), int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME=INTEGER, got {text!r}") from None


def _model_options(p: argparse.ArgumentParser, blocks: Mapping[str, str], *, several: bool = False) -> None:
    what = "a .toml model file, a config.json (or its folder), a bundled example name, or a Hugging Face Hub id"
    p.add_argument("model", metavar="MODEL", nargs="+" if several else None, help=what + (" (one or more)" if several else ""))
    p.add_argument(
        "--param",
        type=_param,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a parameter wherever the model sets it, else model-wide (repeatable), e.g. window=512",
    )
    p.add_argument(
        "--flag",
        action="append",
        default=[],
        metavar="NAME",
        help="add a model-wide flag (repeatable), e.g. padded_vocab_given with --param padded_vocab=N for megatron",
    )
    p.add_argument(
        "--block",
        action="append",
        default=[],
        metavar="NAME",
        help="count the extra layers of block NAME a config.json declares (repeatable)",
    )
    for name, meaning in blocks.items():  # --NAME: the shorthand of --block NAME, for each declared block
        p.add_argument(f"--{name}", dest="shorthand_blocks", action="append_const", const=name,
                       default=[], help=f"--block {name}: count the {meaning}")
    p.add_argument(
        "--revision", metavar="REV", help="with a Hub id (owner/name): the branch, tag or commit of its config.json (default main)"
    )
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache of compiled models")


def _length_options(p: argparse.ArgumentParser) -> None:
    lengths = p.add_mutually_exclusive_group(required=True)
    lengths.add_argument("--seq-len", type=int, metavar="S", help="tokens per sequence")
    lengths.add_argument("--seqlens", type=_seqlens, metavar="S1,S2,...", help="one packed row of sequences")
    lengths.add_argument("--request", type=_request, action="append", metavar="N:P",
                         help="one request of a serving step: N new tokens after P cached (repeatable: prefill chunks and decodes)")
    p.add_argument("--batch", type=int, default=1, metavar="B", help="sequences (or packed rows) per batch")


def _convention_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--convention", default="exact", metavar="NAME", help="exact (default), megatron, slime, ...")


def _dtype_options(p: argparse.ArgumentParser) -> None:
    """The number formats weights, experts, KV cache and states are stored in (``memory``, and the bytes of ``mfu`` and ``generate``)."""
    p.add_argument("--weights-dtype", default="bf16", metavar="D", help="fp32, bf16 (default), fp16, fp8, int8, mxfp4, nvfp4")
    p.add_argument("--experts-dtype", metavar="D", help="the routed experts' weights (default: --weights-dtype; GPT-OSS ships mxfp4)")
    p.add_argument("--kv-dtype", metavar="D", help="the KV cache (default: --weights-dtype)")
    p.add_argument("--state-dtype", metavar="D", help="recurrent and convolution states (default: --kv-dtype)")


def _all_experts_option(p: argparse.ArgumentParser) -> None:
    """``--all-experts``: a serving step's bytes with every routed expert read (the bound for a kernel that reads them all)."""
    p.add_argument("--all-experts", action="store_true",
                   help="a serving step's bytes read every routed expert (default: the experts its tokens can reach, min(E, tokens x top_k))")


def _formats(args: argparse.Namespace) -> dict[str, str]:
    """The dtype options given (``--weights-dtype`` only where not its default), as keyword arguments."""
    given = {name: getattr(args, name) for name in ("experts_dtype", "kv_dtype", "state_dtype") if getattr(args, name) is not None}
    return {"weights_dtype": args.weights_dtype, **given} if args.weights_dtype != "bf16" or given else {}


def _parser(blocks: Mapping[str, str], command: str | None = None) -> argparse.ArgumentParser:
    """The command line; *blocks* are the registry's declared blocks (name: meaning), each with its
    --NAME option. Given the *command* being run, only its options are added."""
    parser = _Parser(prog="flopsreg", description="Exact FLOPs of transformer models.")
    parser.add_argument("--version", action=_Version, help="show flopsreg's version and exit")
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser, action=_Commands, wanted=command
    )

    p = sub.add_parser("patterns", help="list the registered patterns")
    p.add_argument("--format", choices=("text", "json"), default="text")

    p = sub.add_parser("eval", help="exact FLOPs of a model for a batch")
    _model_options(p, blocks)
    _length_options(p)
    _convention_option(p)
    p.add_argument(
        "--recompute",
        choices=tuple(RECOMPUTE),
        default="none",
        help="activation recomputation added to training FLOPs (default: none)",
    )
    p.add_argument("--cached", type=_seqlens, default=[0], metavar="P | P1,P2,...",
                   help="tokens already in the KV cache per sequence (one, or one per --seqlens entry)")
    p.add_argument("--logits", choices=LOGITS_MODES,
                   help="logits on every position (training; the default) or the last (serving; the default with --request)")
    _image_options(p)
    _audio_options(p)
    p.add_argument("--format", choices=("text", "json", "latex"), default="text")
    p.add_argument("--per-layer", action="store_true", help="with --format json: also list every layer")
    _document_option(p)

    p = sub.add_parser("generate", help="prefill of a prompt and decode steps: per phase and per token")
    _model_options(p, blocks)
    p.add_argument("--prompt", type=int, required=True, metavar="P", help="prompt tokens (the prefill)")
    p.add_argument("--new-tokens", type=int, required=True, metavar="T", help="tokens generated (prefill + T-1 decode steps)")
    p.add_argument("--batch", type=int, default=1, metavar="B", help="sequences generated together")
    _image_options(p)
    _audio_options(p)
    p.add_argument("--peak", metavar="NAME|FLOPS", help="FLOP/s per device, or a name from flopsreg peaks: each phase's bytes and roofline bound")
    p.add_argument("--bandwidth", metavar="NAME|BYTES_PER_S", help="memory bytes/s per device, or a name from flopsreg peaks (default: the device --peak names)")
    p.add_argument("--devices", type=int, default=1, metavar="N", help="devices the generation runs on (with --peak)")
    _dtype_options(p)
    _all_experts_option(p)
    _convention_option(p)
    p.add_argument("--format", choices=("text", "json"), default="text")

    p = sub.add_parser("mfu", help="model and hardware FLOPs utilisation of a measured step")
    _model_options(p, blocks)
    _length_options(p)
    _convention_option(p)
    p.add_argument("--recompute", choices=tuple(RECOMPUTE), default="none", help="activation recomputation (counted by HFU)")
    _image_options(p)
    _audio_options(p)
    speed = p.add_mutually_exclusive_group(required=True)
    speed.add_argument("--step-time", metavar="SECONDS", help="seconds per step on all devices")
    speed.add_argument("--tokens-per-second", metavar="R", help="throughput per device")
    p.add_argument("--devices", type=int, required=True, metavar="N", help="devices the step ran on")
    p.add_argument("--peak", required=True, metavar="NAME|FLOPS", help="FLOP/s per device, or a name from flopsreg peaks")
    p.add_argument("--bandwidth", metavar="NAME|BYTES_PER_S",
                   help="memory bytes/s per device, or a name from flopsreg peaks (default: the device --peak names): MBU and the roofline of a serving step")
    _dtype_options(p)
    _all_experts_option(p)
    p.add_argument("--format", choices=("text", "json"), default="text")

    p = sub.add_parser("params", help="exact parameter counts: total, active per token, by layer kind and slot")
    _model_options(p, blocks)
    p.add_argument("--format", choices=("text", "json"), default="text")

    p = sub.add_parser("memory", help="exact bytes held to serve a context: weights, KV cache and states, by layer kind")
    _model_options(p, blocks)
    p.add_argument("--seq-len", type=int, required=True, metavar="S", help="tokens of context per sequence")
    p.add_argument("--batch", type=int, default=1, metavar="B", help="sequences held together")
    _dtype_options(p)
    p.add_argument("--format", choices=("text", "json", "latex"), default="text", help="latex: the closed forms of one layer's elements")

    p = sub.add_parser("peaks", help="the accelerators' dense peak FLOP/s and memory bandwidth, with sources")
    p.add_argument("--format", choices=("text", "json"), default="text")

    p = sub.add_parser("sweep", help="forward and training FLOPs over many sequence lengths")
    _model_options(p, blocks)
    p.add_argument(
        "--seq-len",
        required=True,
        metavar="START:STOP[:STEP] | S1,S2,...",
        help="lengths to evaluate; STOP is included, e.g. 1024:131072:1024",
    )
    p.add_argument("--batch", type=int, default=1, metavar="B", help="sequences per batch")
    _convention_option(p)
    _image_options(p)
    _audio_options(p)
    p.add_argument(
        "--format", choices=("csv", "json", "jsonl"), default="csv", help="rows stream as they are computed"
    )

    p = sub.add_parser("compare", help="every convention against exact, and why they differ")
    _model_options(p, blocks)
    _length_options(p)
    _all_experts_option(p)
    _image_options(p)
    _audio_options(p)
    p.add_argument("--format", choices=("text", "json"), default="text")

    p = sub.add_parser("explain", help="which pattern fills each slot of each layer, and why")
    _model_options(p, blocks)
    _convention_option(p)
    _image_options(p)
    _audio_options(p)

    p = sub.add_parser("formula", help="the model's closed form")
    _model_options(p, blocks)
    _convention_option(p)
    p.add_argument("--format", choices=("text", "latex"), default="text")
    _document_option(p)

    p = sub.add_parser("latex", help="the model's closed form as a LaTeX fragment for a paper (formula --format latex)")
    _model_options(p, blocks)
    _convention_option(p)
    p.add_argument("--document", action="store_true", help="a complete document for pdflatex, not an amsmath fragment")

    p = sub.add_parser("plot", help='FLOPs against context length, as a PNG, SVG or PDF (pip install "flopsreg[plot]")')
    _model_options(p, blocks, several=True)
    p.add_argument("--seq-len", required=True, metavar="START:STOP[:STEP] | S1,S2,...", help="context lengths; STOP is included")
    p.add_argument(
        "--convention",
        action="append",
        default=[],
        metavar="NAME",
        help="one model: plot these conventions against exact (repeatable; one that cannot count the model is skipped, with a warning); several models: count all with it",
    )
    p.add_argument("--per-token", action="store_true", help="FLOPs per token instead of per sequence")
    p.add_argument("--batch", type=int, default=1, metavar="B", help="sequences per batch")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="FILE.png, FILE.svg or FILE.pdf")
    _image_options(p)
    _audio_options(p)

    p = sub.add_parser("convert", help="write a config.json as an editable flopsreg model file")
    _model_options(p, blocks)
    p.add_argument("-o", "--output", metavar="PATH", help="write here instead of stdout")

    p = sub.add_parser("cache", help="the cache of compiled models: where it is and what it holds, or clear it")
    p.add_argument("action", choices=("info", "clear"))
    return parser


class _Session:
    """The registry, loaded on first need, and the cache of compiled models, if enabled."""

    def __init__(self, cache: Cache | None, registry: Registry | None = None) -> None:
        self.cache = cache
        self._registry = registry

    @property
    def registry(self) -> Registry:
        if self._registry is None:  # its load warnings were printed from the cache already
            self._registry = _load_registry(self.cache, announce=False)
        return self._registry

    def select(self, model: Model, convention: str, *, symbolic: bool = False) -> Any:
        """*model*'s plan under *convention*: from the cache if there, else composed from the
        manifest where it can be, else by the registry (always there if *symbolic* is needed)."""
        if not symbolic:
            cached = self.cache.selection(model, convention) if self.cache is not None else None
            if cached is not None:
                return cached
            from flopsreg.engine.cold import cold_selection  # imported only when the cache misses

            plan = cold_selection(model, convention)
            if plan is not None:
                if self.cache is not None:
                    self.cache.store(plan)
                return plan
        plan = self.registry.select(model, convention=convention)
        if self.cache is not None:
            self.cache.store(plan)
        return plan

    def holdings(self, model: Model, *, symbolic: bool = False) -> Holdings:
        """What *model* holds, in elements: from the cache if there (unless *symbolic* forms are needed)."""
        if self.cache is not None and not symbolic:
            cached = self.cache.holdings(model)
            if cached is not None:
                return cached
        from flopsreg.engine.holdings import holdings

        held = holdings(self.registry, self.registry.select(model))
        if self.cache is not None:
            self.cache.store_holdings(model, held)
        return held


def _load_registry(cache: Cache | None, *, announce: bool = True) -> Registry:
    """The built-in and installed plugins, their load warnings printed (and remembered by the cache)."""
    from flopsreg.registry import Registry

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry = Registry.default()
    messages = [str(w.message) for w in caught]
    if announce:
        _warn(messages)
    if cache is not None:
        cache.store_registry(registry, messages)
    return registry


def _run(args: argparse.Namespace, session: _Session) -> str | Iterable[str]:
    """The command's output: one text, or chunks of text written as they come (long outputs)."""
    if args.command == "cache":
        from flopsreg.engine.cache import Cache

        cache = session.cache or Cache.default()
        return cache.clear() if args.action == "clear" else cache.info()
    if args.command == "patterns":
        if args.format == "json":
            return json.dumps(render.patterns_json(session.registry), indent=2)
        from flopsreg.plugins.builtins import listed_patterns

        listed = listed_patterns()  # the built-ins alone: listed from the manifest, none imported
        return render.patterns_text(session.registry) if listed is None else render.listed_patterns_text(listed)
    if args.command == "peaks":
        from flopsreg.engine.peaks import BANDWIDTHS, PEAKS

        return json.dumps(render.peaks_json(PEAKS, BANDWIDTHS), indent=2) if args.format == "json" else render.peaks_text(PEAKS, BANDWIDTHS)
    if args.no_cache:
        session.cache = None
    if args.command == "plot":
        return _plot(args, [_load(args, spec, session) for spec in args.model], session.registry)
    model = _load(args, args.model, session)
    if args.command == "convert":
        text = model.to_toml()
        if args.output is None:
            return text.rstrip("\n")
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise FlopsregError(f"-o {args.output}: cannot write: {exc.strerror or exc}") from None
        return f"wrote {args.output}"
    if args.command == "sweep":
        media = _media(args)
        if media:  # the media planned once; the rows stream as without them
            _unplaced(media, "a sweep")
            planned = session.registry.held_media(model, args.convention, **media)
            plan = session.registry.select(model, convention=args.convention)
            rows = iter_sweep(plan, parse_lengths(args.seq_len), batch=args.batch, media=planned)
            return _sweep_output(rows, args.format, args.batch, sum(held.tokens for held in planned))
        rows = iter_sweep(session.select(model, args.convention), parse_lengths(args.seq_len), batch=args.batch)
        return _sweep_output(rows, args.format, args.batch)
    if args.command == "compare":
        comparison = session.registry.compare(
            model, seq_len=args.seq_len, seqlens=args.seqlens, batch=args.batch, requests=args.request, all_experts=args.all_experts,
            **_media(args),
        )
        _warn(comparison.exact.warnings)
        return json.dumps(comparison.to_dict(), indent=2) if args.format == "json" else comparison.to_text()
    if args.command == "params":
        _warn(session.registry.select(model).warnings)
        counts = session.registry.parameters(model)
        return json.dumps(counts.to_dict(), indent=2) if args.format == "json" else counts.text()
    if args.command == "memory":
        from flopsreg.engine.memory import measure

        holdings = session.holdings(model, symbolic=args.format == "latex")
        _warn(holdings.warnings)
        held = measure(holdings, args.seq_len, args.batch, args.weights_dtype, args.kv_dtype, args.state_dtype, args.experts_dtype)
        if args.format == "latex":
            return held.latex()
        return json.dumps(held.to_dict(), indent=2) if args.format == "json" else held.text()
    if args.command == "explain":
        text = session.registry.select(model, convention=args.convention).explain()
        media = _media(args)  # where an entry lies (@K) changes no rule; --processor without images or videos is refused
        options = {"processor": media["processor"]} if "processor" in media else {}
        if args.image or args.image_tokens:
            images = session.registry.images(model, images=media.get("images"), image_tokens=media.get("image_tokens"),
                                             convention=args.convention, **options)
            text = "\n".join([text, "", *images.text(rules=True)])
        if args.audio or args.audio_tokens:
            audio = session.registry.audio(model, audio=media.get("audio"), audio_tokens=media.get("audio_tokens"), convention=args.convention)
            text = "\n".join([text, "", *audio.text(rules=True)])
        if args.video:
            videos = session.registry.videos(model, videos=media["videos"], convention=args.convention, **options)
            text = "\n".join([text, "", *videos.text(rules=True)])
        return text
    if args.command in ("formula", "latex"):
        plan = session.registry.select(model, convention=args.convention)
        _warn(plan.warnings)
        latex = args.command == "latex" or args.format == "latex"
        if args.command == "formula":
            _check_document(args)
        return render.latex(plan, document=args.document) if latex else render.formula_text(plan)
    if args.command == "generate":
        gen = session.registry.generate(
            model, prompt=args.prompt, new_tokens=args.new_tokens, batch=args.batch, convention=args.convention, **_media(args)
        )
        _warn(gen.prefill.warnings)
        if args.peak is None and (args.bandwidth is not None or _formats(args) or args.devices != 1 or args.all_experts):
            raise FlopsregError("--peak: the bytes and roofline bound of a generation need the devices' peak FLOP/s (a name from flopsreg peaks)")
        output = gen if args.peak is None else gen.bounds(
            peak=args.peak, bandwidth=args.bandwidth, devices=args.devices, all_experts=args.all_experts, **_formats(args)
        )
        return json.dumps(output.to_dict(), indent=2) if args.format == "json" else output.to_text()
    if args.command == "mfu":
        result = session.registry.evaluate(
            model, seq_len=args.seq_len, seqlens=args.seqlens, batch=args.batch, recompute=args.recompute, convention=args.convention,
            requests=args.request, **_media(args),
        )
        _warn(result.warnings)
        from flopsreg.engine.peaks import STEP_TIME, TOKENS_PER_SECOND

        speed = {
            "step_time": _number("--step-time", args.step_time, STEP_TIME),
            "tokens_per_second": _number("--tokens-per-second", args.tokens_per_second, TOKENS_PER_SECOND),
        }
        experts = {"all_experts": True} if args.all_experts else {}  # a training step has no bytes to read them with
        step = result.utilisation(peak=args.peak, devices=args.devices, bandwidth=args.bandwidth, **speed, **_formats(args), **experts)
        return json.dumps(step.to_dict(), indent=2) if args.format == "json" else step.to_text()
    _check_document(args)
    if args.per_layer and args.format != "json":
        raise FlopsregError(f"--per-layer: lists layers in JSON only; add --format json (got --format {args.format})")
    cached = args.cached[0] if len(args.cached) == 1 else args.cached
    if args.request and cached != 0:
        raise FlopsregError("--cached: each --request N:P gives its own cached tokens P; drop --cached")
    if args.image or args.image_tokens or args.video or args.audio or args.audio_tokens or args.processor:
        result = session.registry.evaluate(
            model, seq_len=args.seq_len, seqlens=args.seqlens, batch=args.batch, recompute=args.recompute, convention=args.convention,
            cached=cached, logits=args.logits, requests=args.request, **_media(args),
        )
        _warn(result.warnings)
        if args.format == "latex":
            return result.latex(document=args.document)
        return json.dumps(render.result_json(result), indent=2) if args.format == "json" else render.result_text(result)
    serving = cached != 0 or args.logits not in (None, "all") or bool(args.request)  # serving forms are built symbolically, never cached
    plan = session.select(model, args.convention, symbolic=args.format == "latex" or serving)
    result = evaluate(plan, args.seq_len, args.seqlens, args.batch, args.recompute, cached, args.logits, args.request)
    _warn(result.warnings)
    if args.format == "json":
        text = json.dumps(render.result_json(result), indent=2)
        return _with_layers(text, render.layers_json(result)) if args.per_layer else text
    if args.format == "latex":
        return result.latex(document=args.document)
    return render.result_text(result)


def _number(option: str, text: str | None, bounds: Bounds) -> Fraction | None:
    """A decimal number given on the command line, exact (``1.5`` is 3/2), within *bounds*: the
    range is checked before any arithmetic, so ``1e100000000`` is one line at once."""
    return None if text is None else bounds.check(option, text)


def _load(args: argparse.Namespace, spec: str, session: _Session) -> Model:
    """The model *spec* names, with the blocks and ``--param`` values the command line asks for."""
    asked = [(f"--block {name}", name) for name in args.block] + [(f"--{name}", name) for name in args.shorthand_blocks]
    # a config.json is read by the plugins' readers: only then is the registry needed to read a model
    model = load_model_arg(spec, blocks=asked, registry=session.registry if _is_hf_config(spec) else None, revision=args.revision)
    notes = []
    for name, value in args.param:  # every value checked before any is announced: an error is the only line
        places = model.param_places(name)
        if places == ("params",) and name not in model.params:  # set nowhere yet: some pattern must declare it
            _check_declared(f"--param {name}={value}", name, model, session.registry)
        model = model.with_param(name, value)
        notes.append(f"--param {name}={value} set in {', '.join(places)}")
    for flag in args.flag:
        if flag not in session.registry.flags:  # a typo would select nothing
            raise FlopsregError(f"--flag {flag}: unknown flag{did_you_mean(flag, session.registry.flags)} (no loaded pattern reacts to it)")
        model = attrs.evolve(model, flags=model.flags | {flag})
        notes.append(f"--flag {flag} set in flags")
    for note in notes:
        _note(note)
    return model


def _check_declared(option: str, name: str, model: Model, registry: Registry) -> None:
    """*name* is a parameter some loaded pattern declares (or a shared dimension such as hidden),
    as model files are checked: else a typo, which would be set and then refused."""
    declared = {symbol for symbol, info in registry.symbols.items() if info.kind == "dimension"}
    if name not in declared:
        candidates = declared | set(model.params) | {p for kind in model.kinds.values() for p in kind.params}
        raise FlopsregError(
            f"{option}: unknown parameter {name!r}{did_you_mean(name, candidates)} (neither {model.name} nor any of "
            "its layer kinds sets it, and no loaded pattern declares it)"
        )


def _plot(args: argparse.Namespace, models: list[Model], registry: Registry) -> str:
    """``flopsreg plot``: one model stacked by slot, or its conventions against exact (those that
    cannot count it skipped, named in the figure and on stderr), or several models on one axis;
    writes the file and says so."""
    from flopsreg.render import plot  # matplotlib loads for this command only

    plot.output_format(args.output)  # refused before any work
    media = _media(args)
    _unplaced(media, "a plot")
    if len(models) > 1:
        if len(args.convention) > 1:
            raise FlopsregError(f"--convention: with several models give at most one (got {', '.join(args.convention)})")
        convention = args.convention[0] if args.convention else "exact"
        figure = plot.models(
            models, args.seq_len, registry=registry, convention=convention, per_token=args.per_token, batch=args.batch, **media
        )
    elif args.convention:
        if args.per_token or args.batch != 1:
            option = "--per-token" if args.per_token else f"--batch {args.batch}"
            raise FlopsregError(f"{option}: the ratios of conventions to exact do not depend on it; drop it or --convention")
        figure = plot.conventions(models[0], args.seq_len, names=args.convention, registry=registry, skip=True, **media)
        for skipped in figure.skipped:  # named in the figure too
            _warn([f"--convention {skipped} (not drawn)"])
    else:
        figure = plot.by_slot(models[0], args.seq_len, registry=registry, per_token=args.per_token, batch=args.batch, **media)
    return f"wrote {plot.save(figure, args.output)}"


def _document_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--document", action="store_true", help="with --format latex: a complete document for pdflatex, not an amsmath fragment"
    )


def _check_document(args: argparse.Namespace) -> None:
    """``--document`` belongs to LaTeX output only: refused with any other format."""
    if args.document and args.format != "latex":
        raise FlopsregError(f"--document: makes a LaTeX document; add --format latex (got --format {args.format})")


def _sweep_output(rows: Iterator[tuple[int, int]], form: str, batch: int, image_tokens: int = 0) -> Iterator[str]:
    """Sweep rows as CSV, a JSON array or JSON lines, 4096 lines at a time (one write each); the
    rows are :func:`flopsreg.render.sweep_lines`'s."""
    chunks = render.sweep_lines(rows, "csv" if form == "csv" else "json", batch, image_tokens)
    if form == "csv":
        yield "seq_len,forward_flops,training_flops,forward_per_token,training_per_token"
        yield from chunks
    elif form == "jsonl":
        yield from chunks
    else:
        yield "["
        yield from _items((chunk.replace("\n", ",\n  ") for chunk in chunks), "  ")
        yield "]"


def _with_layers(text: str, layers: Iterator[dict]) -> Iterator[str]:
    """The eval JSON object *text* with a ``layers`` list added last, one layer per line."""
    yield text[: text.rindex("}")].rstrip() + ',\n  "layers": ['
    yield from _items(map(json.dumps, layers), "    ")
    yield "  ]\n}"


def _items(lines: Iterator[str], indent: str) -> Iterator[str]:
    """The items of a JSON array, one per line as they come: a comma after all but the last."""
    previous = next(lines, None)
    for line in lines:
        yield f"{indent}{previous},"
        previous = line
    if previous is not None:
        yield f"{indent}{previous}"


def _warn(messages: Sequence[str]) -> None:
    for message in messages:
        print(f"flopsreg: warning: {message}", file=sys.stderr)


def _note(message: str) -> None:
    print(f"flopsreg: note: {message}", file=sys.stderr)


def _is_hf_config(spec: str) -> bool:
    """Whether *spec* names a config.json, read by the plugins' readers: a file, a folder holding
    one, or a Hub id that is neither a local path nor a bundled example."""
    path = Path(spec)
    if path.exists():
        return (path / "config.json").is_file() if path.is_dir() else path.suffix == ".json"
    return path.suffix == ".json" or spec not in example_names() and is_hub_id(spec)


def _open_cache() -> Cache | None:
    """The cache of compiled models, unless ``FLOPSREG_NO_CACHE`` turns it off (imported only then)."""
    from flopsreg.engine.cache import Cache, cache_enabled

    if not cache_enabled():
        return None
    cache = Cache.default()
    if cache.refused:
        _warn([f"the cache of compiled models is off: {cache.directory} is {cache.refused} (or set FLOPSREG_CACHE_DIR)"])
        return None
    return cache


# Commands that need no plugin: the registry is not loaded (nor sympy imported) to run them, so
# they work whatever an installed plugin does; nor is it for flopsreg --version or --help.
_WITHOUT_PLUGINS = ("cache", "peaks")


def _blocks(cache: Cache | None) -> tuple[Mapping[str, str], Registry | None]:
    """The declared blocks (name: meaning), which the parser makes --NAME options of: from the
    cache if it knows them (its stored load warnings printed), else from the manifest where the
    built-ins alone are installed (and stored in the cache), else from the registry, loaded."""
    info = cache.registry_info() if cache is not None else None
    if info is None:
        from flopsreg.engine.cold import builtin_blocks

        blocks = builtin_blocks()  # the built-ins alone, loaded lazily, warn of nothing
        if blocks is not None:
            if cache is not None:
                cache.store_builtins(blocks)
            return blocks, None
        registry = _load_registry(cache)
        return {name: block.meaning for name, block in registry.blocks.items()}, registry
    _warn(info["warnings"])
    return info["blocks"], None


def _write(output: str | Iterable[str], end: str = "\n") -> None:
    """Print *output* (one text, or lines as they come), each followed by *end*, and flush it: a
    failed write, such as a full disk, is an error line here rather than a traceback at exit."""
    try:
        if isinstance(output, str):
            print(output, end=end)
        else:
            for line in output:
                print(line, end=end)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        _drop_stdout()
        raise FlopsregError(f"cannot write the output: {exc.strerror or exc}") from None


def _drop_stdout() -> None:
    """Point stdout at devnull: Python flushes it again at exit, and that flush must not fail."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        command = next((a for a in argv if not a.startswith("-")), None)  # options come after it
        cache = registry = None
        blocks: Mapping[str, str] = {}
        if command is not None and command not in _WITHOUT_PLUGINS:
            # --no-cache is looked for before parsing: the parser's --NAME options come from the registry
            cache = None if "--no-cache" in argv else _open_cache()
            blocks, registry = _blocks(cache)
        args = _parser(blocks, command).parse_args(argv)
        _write(_run(args, _Session(cache, registry)))
    except FlopsregError as exc:
        print(f"flopsreg: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into head and closed early: not an error
        _drop_stdout()
    return 0
