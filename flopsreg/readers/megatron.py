"""Megatron-LM arguments (the ``argparse`` namespace of a training run) as a flopsreg model.

This module only dispatches. It reads the three dimensions every run has (``hidden_size``,
``num_layers``, ``num_attention_heads``), starts a decoder of full-causal dense layers, and
hands it to the registered :class:`~flopsreg.declarations.readers.MegatronReader` s: each argument
to the reader of highest precedence that claims it, the readers from the lowest precedence to
the highest (by name within one precedence). What the arguments mean lives in those readers,
the built-in ones in ``flopsreg.patterns.megatron``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from flopsreg.declarations.readers import MegatronReader
from flopsreg.errors import MAX_INT, FlopsregError, ModelError, PluginError, did_you_mean
from flopsreg.model import Model, as_int, shown
from flopsreg.plugins.loader import PluginLoader, default_plugins
from flopsreg.readers.decoder import Decoder, build_model

__all__ = ["Arguments", "claims", "load_megatron_args", "read_arguments", "window_keys"]

# The dimensions of every run, read before any reader.
_REQUIRED = ("hidden_size", "num_layers", "num_attention_heads")


class Arguments:
    """Strict reading of the arguments one reader won from a Megatron-LM namespace.

    An argument the reader claims but another reader won reads as unset (None); one it does not
    claim is a fault of the reader's plugin. Errors name the argument as ``args.<name>``.
    """

    def __init__(self, args: Any, won: Iterable[str], reader: MegatronReader | None = None) -> None:
        self._args = args
        self._won = frozenset(won)
        self._reader = reader

    def get(self, name: str) -> Any:
        """The value of ``args.<name>``; None when unset, absent, or read by another reader."""
        claimed = self._won if self._reader is None else self._reader.arguments
        if name not in claimed:
            raise _fault(self._reader, f"reads args.{name}, which it does not claim; add it to its arguments")
        return getattr(self._args, name, None) if name in self._won else None

    def flag(self, name: str) -> bool | None:
        """A boolean argument (argparse ``store_true``/``store_false``): True, False, or None when
        unset. argparse gives such a flag a bool only, so anything else ('False', 'no', 1) is a
        hand-made namespace's mistake, refused by name rather than read by its truth value."""
        value = self.get(name)
        if value is not None and type(value) is not bool:
            raise ModelError(
                f"args.{name} = {shown(value)}: expected True or False (a {type(value).__name__}; "
                "Megatron-LM's argparse flag gives a bool only, so 0/1 and 'False' are refused)"
            )
        return value

    def int(self, name: str, why: str = "") -> int:
        """A required integer argument (unset is an error; *why* says what needs it)."""
        value = self.get(name)
        if value is None:
            raise ModelError(f"args.{name}: missing{why}{did_you_mean(name, _names(self._args) - {name})}")
        number = as_int(value)  # numpy integers too
        if number is None:
            raise ModelError(f"args.{name} = {shown(value)}: expected an integer")
        if number > MAX_INT:
            raise ModelError(f"args.{name} = {number}: expected an integer <= 2^63 - 1 (a larger one is a typo)")
        return number

    def optional_int(self, name: str) -> int | None:
        """An integer argument that may be unset (then None)."""
        return None if self.get(name) is None else self.int(name)

    def layer_pattern(self, name: str, layers: int, *, default_every: int | None) -> list[bool]:
        """A per-layer 0/1 pattern: an int N marks 0-based layer i iff i % N == 0, or a list of 0/1.

        Unset, it marks every *default_every*-th layer, or every layer when that is None.
        """
        value = self.get(name)
        if value is None:
            return [True] * layers if default_every is None else [i % default_every == 0 for i in range(layers)]
        if isinstance(value, bool):
            raise ModelError(f"args.{name} = {value!r}: expected an integer or a list of 0/1")
        if isinstance(value, int):
            if value < 1:
                raise ModelError(f"args.{name} = {value}: expected an integer >= 1")
            return [i % value == 0 for i in range(layers)]
        pattern = list(value)
        if len(pattern) != layers or any(v not in (0, 1) for v in pattern):
            raise ModelError(f"args.{name} = {value!r}: expected {layers} entries of 0 or 1 (one per layer)")
        return [bool(v) for v in pattern]


def _names(args: Any) -> set[str]:
    """The attribute names of a namespace, for a did-you-mean on a missing argument."""
    return {name for name in dir(args) if not name.startswith("_")}


def window_keys(window_size: Any) -> int | None:
    """Keys a query sees for an inclusive flash-attention ``(left, right)`` window; None = infinite.

    This is the format of Megatron-LM's ``--window-size``; the canonical parameter counts keys
    including the query itself.

    >>> window_keys((127, 0)), window_keys((-1, 0)), window_keys(None)
    (128, None, None)
    """
    if window_size is None:
        return None
    if isinstance(window_size, str):  # as Megatron's --window-size parses it: "127,0" or "(127,0)"
        try:
            window_size = tuple(int(part) for part in window_size.strip("() ").split(","))
        except ValueError:
            raise ModelError(f"args.window_size = {window_size!r}: expected two integers, e.g. (127, 0)") from None
    if (
        not isinstance(window_size, Sequence)
        or len(window_size) != 2
        or any(type(v) is not int for v in window_size)
    ):
        raise ModelError(f"args.window_size = {window_size!r}: expected (left, right), e.g. (127, 0)")
    left, right = window_size
    if right not in (0, -1) and left != -1:
        raise ModelError(f"args.window_size = {window_size!r}: a causal decoder takes right = 0")
    if left == -1:
        return None
    if left < 0:
        raise ModelError(f"args.window_size = {window_size!r}: left must be >= 0 or -1 (infinite)")
    return left + 1  # keys q-left .. q: left earlier keys and the query itself


def claims(readers: Iterable[MegatronReader]) -> dict[str, MegatronReader]:
    """The reader of each claimed argument: the highest precedence claiming it.

    Two readers claiming one argument at equal precedence are a :class:`PluginError` naming
    both, whatever their precedence and whether a third outranks them: a tie is a fault of the
    plugins, not of the run.
    """
    readers = sorted(readers, key=lambda r: r.name)
    for i, reader in enumerate(readers):
        for other in readers[i + 1 :]:
            tied = reader.clashes(other)
            if tied:
                raise PluginError(
                    other.read.__module__,
                    f"Megatron-LM readers {reader.name!r} ({reader.read.__module__}) and {other.name!r} both claim "
                    f"args.{tied[0]} at precedence {reader.precedence}; give one of them a higher precedence",
                )
    winners: dict[str, MegatronReader] = {}
    for reader in readers:
        for name in reader.arguments:
            if name not in winners or reader.precedence > winners[name].precedence:
                winners[name] = reader
    return winners



def read_arguments(registry: PluginLoader | None = None) -> tuple[str, ...]:
    """Every argument the Megatron-LM readers of *registry* may read: their values determine the model."""
    readers = (registry or default_plugins()).megatron_readers.values()
    return tuple(sorted({*_REQUIRED, *claims(readers)}))


def _fault(reader: MegatronReader | None, problem: str) -> PluginError:
    """A fault of *reader*, naming it and the module that defines it."""
    if reader is None:
        return PluginError(__name__, problem)
    return PluginError(reader.read.__module__, f"Megatron-LM reader {reader.name!r} {problem}")


def load_megatron_args(
    args: Any, *, registry: PluginLoader | None = None, name: str = "megatron-model"
) -> Model:
    """A model from a Megatron-LM argument namespace (after ``validate_args``), read by the
    Megatron-LM readers of *registry* (default: the built-in and installed plugins)."""
    readers = (registry or default_plugins()).megatron_readers.values()
    winners = claims(readers)
    required = Arguments(args, _REQUIRED)
    hidden, layers, heads = (required.int(field) for field in _REQUIRED)
    decoder = Decoder(  # full causal dense layers until a reader says otherwise
        params={"hidden": hidden, "heads": heads},
        flags=(),
        attention=("full",) * layers,
        attention_kinds={"full": (frozenset(), {})},
        mlps=("dense",) * layers,
    )
    for reader in sorted(readers, key=lambda r: (r.precedence, r.name)):
        won = [argument for argument in reader.arguments if winners[argument] is reader]
        if won:
            decoder = _read(reader, Arguments(args, won, reader), decoder)
    return build_model(decoder, name=name, source="Megatron-LM arguments", blocks=decoder.blocks)


def _read(reader: MegatronReader, args: Arguments, decoder: Decoder) -> Decoder:
    """*decoder* as *reader* leaves it; an exception that is not a flopsreg error is its plugin's fault."""
    try:
        result = reader.read(args, decoder)
    except FlopsregError:
        raise
    except Exception as exc:
        raise _fault(reader, f"raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(result, Decoder):
        raise _fault(reader, f"returned {type(result).__name__}, not the decoder it was given with changes (attrs.evolve)")
    return result
