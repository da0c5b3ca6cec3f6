"""A persistent cache of compiled models, so that the command line answers without sympy.

An entry holds what ``eval`` and ``sweep`` need of a composed model (each unit's patterns,
layers and generated exact code, the whole model's code, the warnings) as JSON, under a key
that covers everything that determines the formulas: the entry format, flopsreg's version and
source files, every installed plugin's entry point and version, the model (its TOML) and the
convention. Entries are written atomically (a temporary file renamed into place), so
concurrent processes see a whole entry or none; each entry repeats its key and a checksum of
its body, so a damaged file or another key's entry is a miss, never an answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from flopsreg.errors import FlopsregError, ModelError
from flopsreg.model import Model
from flopsreg.runtime import Formula

if TYPE_CHECKING:
    from flopsreg.compose import ModelSelection, UnitSelection
    from flopsreg.registry import PluginRegistry

__all__ = ["CachedSelection", "CachedUnit", "Cache", "cache_enabled"]

FORMAT = 1  # bump when the entry layout changes: older entries then miss


def cache_enabled(no_cache: bool = False) -> bool:
    """Off with ``--no-cache`` or ``FLOPSREG_NO_CACHE=1`` (any value but empty or 0)."""
    return not no_cache and os.environ.get("FLOPSREG_NO_CACHE", "") in ("", "0")


def cache_directory() -> Path:
    """``$FLOPSREG_CACHE_DIR``, else the user cache directory (platformdirs) under ``flopsreg``."""
    if os.environ.get("FLOPSREG_CACHE_DIR"):
        return Path(os.environ["FLOPSREG_CACHE_DIR"])
    import platformdirs

    return Path(platformdirs.user_cache_dir("flopsreg", appauthor=False))


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _sources() -> list[list[Any]]:
    """Name, size and modification time of every flopsreg source file (built-in plugins included)."""
    import importlib.util

    roots = {Path(__file__).parent}
    spec = importlib.util.find_spec("flopsreg.patterns")
    roots.update(Path(p) for p in (spec.submodule_search_locations or []) if spec)
    found = []
    for root in sorted(roots):
        for path in sorted(root.rglob("*.py")):
            stat = path.stat()
            found.append([str(path), stat.st_size, stat.st_mtime_ns])
    return found


def _installed() -> list[list[Any]]:
    """Each folder distributions are installed in (site-packages, the user site, ``$PYTHONPATH``)
    with its modification time: installing, upgrading or removing any distribution (flopsreg, a
    plugin) adds, renames or deletes a ``*.dist-info`` folder there, which changes the time.
    Much cheaper than reading every distribution's metadata at each start."""
    import site

    folders = [*site.getsitepackages(), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    found = []
    for folder in folders:
        try:
            found.append([folder, os.stat(folder).st_mtime_ns])
        except OSError:
            found.append([folder, None])
    return found


def environment_key() -> str:
    """What determines every formula besides the model: flopsreg's code and what is installed."""
    autoload = os.environ.get("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD", "")
    return _digest([FORMAT, sys.version_info[:2], _sources(), _installed(), autoload])


@attrs.frozen(eq=False)
class CachedUnit:
    """A unit of a cached plan: what results and their renderers read of a UnitSelection."""

    name: str
    scope: str
    count: int
    layers: tuple[range, ...]
    patterns: Mapping[str, str]
    params: Mapping[str, int]
    total_formula: Formula
    slot_formulas: Mapping[str, Formula]

    def total(self, seq_len: int, cached: int = 0, logits: str = "all") -> int:
        _fresh_forward_only(cached, logits)
        return self.total_formula({**self.params, "seq_len": seq_len})

    def flops(self, seq_len: int, cached: int = 0, logits: str = "all") -> dict[str, int]:
        _fresh_forward_only(cached, logits)
        values = {**self.params, "seq_len": seq_len}
        return {slot: formula(values) for slot, formula in self.slot_formulas.items()}


def _fresh_forward_only(cached: int, logits: str) -> None:
    """A cached plan holds the forward of fresh sequences; serving forms are composed symbolically."""
    if cached or logits != "all":
        raise ModelError(f"cached = {cached}, logits = {logits!r}: a plan from the cache of compiled models counts "
                         "fresh forwards only; evaluate serving steps with the registry")


@attrs.frozen
class CachedSlot:
    """What results read of a slot declaration."""

    selective_recompute: bool


@attrs.frozen(eq=False)
class CachedSelection:
    """A plan loaded from the cache: evaluates and sweeps like a ModelSelection, without sympy."""

    model: Model
    convention: str
    kinds: tuple[CachedUnit, ...]
    head: CachedUnit
    warnings: tuple[str, ...]
    slots: Mapping[str, CachedSlot]
    compiled: Formula

    @property
    def units(self) -> tuple[CachedUnit, ...]:
        return self.kinds + ((self.head,) if self.head.patterns else ())

    def forward(self, seq_len: int) -> int:
        """Exact forward FLOPs of one sequence of *seq_len* tokens."""
        return self.compiled({"seq_len": seq_len})


def _formula_json(formula: Formula) -> dict[str, Any]:
    return {"text": formula.text, "argnames": list(formula.argnames), "source": formula.source}


def _formula(data: Mapping[str, Any]) -> Formula:
    return Formula.from_source(data["text"], tuple(data["argnames"]), data["source"])


def _unit_json(unit: UnitSelection) -> dict[str, Any]:
    return {
        "name": unit.name,
        "scope": unit.scope,
        "count": unit.count,
        "layers": [[r.start, r.stop, r.step] for r in getattr(unit, "layers", ())],
        "patterns": unit.patterns,
        "params": dict(unit.params),
        "total": _formula_json(unit._compiled_total),
        "slots": {slot: _formula_json(formula) for slot, formula in unit._compiled.items()},
    }


def _unit(data: Mapping[str, Any]) -> CachedUnit:
    return CachedUnit(
        name=data["name"],
        scope=data["scope"],
        count=data["count"],
        layers=tuple(range(*r) for r in data["layers"]),
        patterns=data["patterns"],
        params=data["params"],
        total_formula=_formula(data["total"]),
        slot_formulas={slot: _formula(f) for slot, f in data["slots"].items()},
    )


@attrs.frozen
class Cache:
    """The cache folder of one environment (flopsreg and its plugins as installed now)."""

    directory: Path
    environment: str

    @classmethod
    def default(cls) -> Cache:
        return cls(cache_directory(), environment_key())

    def _path(self, kind: str, key: str) -> Path:
        return self.directory / f"{kind}-{key}.json"

    def _read(self, kind: str, key: str) -> Any:
        """The body stored under *key*, or None: missing, unreadable, damaged or another key's."""
        try:
            entry = json.loads(self._path(kind, key).read_text(encoding="utf-8"))
            if entry["key"] != key or entry["checksum"] != _digest(entry["body"]):
                return None
            return entry["body"]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _write(self, kind: str, key: str, body: Any) -> None:
        """Store *body* atomically; a cache that cannot be written is skipped, never an error."""
        import tempfile

        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            text = json.dumps({"key": key, "checksum": _digest(body), "body": body})
            with tempfile.NamedTemporaryFile("w", dir=self.directory, suffix=".tmp", delete=False, encoding="utf-8") as f:
                f.write(text)
            os.replace(f.name, self._path(kind, key))
        except OSError:
            return

    def registry_key(self) -> str:
        return _digest(["registry", self.environment])

    def registry_info(self) -> dict[str, Any] | None:
        """The registry's blocks (name and meaning) and load warnings, if stored."""
        return self._read("registry", self.registry_key())

    def store_registry(self, registry: PluginRegistry, warnings: list[str]) -> None:
        blocks = {name: block.meaning for name, block in registry.blocks.items()}
        self._write("registry", self.registry_key(), {"blocks": blocks, "warnings": warnings})

    def model_key(self, model: Model, convention: str) -> str:
        return _digest(["model", self.environment, model.to_toml(), convention])

    def selection(self, model: Model, convention: str) -> CachedSelection | None:
        """The cached plan of *model* under *convention*, or None."""
        body = self._read("model", self.model_key(model, convention))
        if body is None:
            return None
        try:
            return CachedSelection(
                model=model,
                convention=convention,
                kinds=tuple(_unit(u) for u in body["kinds"]),
                head=_unit(body["model_level"]),
                warnings=tuple(body["warnings"]),
                slots={name: CachedSlot(flag) for name, flag in body["selective"].items()},
                compiled=_formula(body["compiled"]),
            )
        except (KeyError, TypeError, ValueError, SyntaxError):
            return None

    def store(self, plan: ModelSelection) -> None:
        """Store *plan* (compiling what is not compiled yet)."""
        body = {
            "kinds": [_unit_json(unit) for unit in plan.kinds],
            "model_level": _unit_json(plan.head),
            "warnings": list(plan.warnings),
            "selective": {name: slot.selective_recompute for name, slot in plan.slots.items()},
            "compiled": _formula_json(plan.compiled),
        }
        self._write("model", self.model_key(plan.model, plan.convention), body)

    def info(self) -> str:
        """Where the cache is, and how many entries of each kind it holds."""
        entries = sorted(self.directory.glob("*.json")) if self.directory.is_dir() else []
        size = sum(path.stat().st_size for path in entries)
        models = sum(path.name.startswith("model-") for path in entries)
        return (
            f"cache: {self.directory}\nentries: {len(entries)} ({models} compiled models), {size:,} bytes\n"
            f"enabled: {'yes' if cache_enabled() else 'no (FLOPSREG_NO_CACHE is set)'}"
        )

    def clear(self) -> str:
        """Remove every entry (and leftover temporary files)."""
        removed = 0
        if self.directory.is_dir():
            for path in [*self.directory.glob("*.json"), *self.directory.glob("*.tmp")]:
                try:
                    path.unlink()
                    removed += 1
                except OSError as exc:
                    raise FlopsregError(f"cache clear: cannot remove {path}: {exc.strerror or exc}") from None
        return f"removed {removed} entries from {self.directory}"
