"""A persistent cache of compiled models, so that the command line answers without sympy.

An entry holds what ``eval`` and ``sweep`` need of a composed model (each unit's patterns,
layers and formulas, the whole model's formula, the warnings) as JSON data: each formula is a
formula tree (:mod:`flopsreg.formula.tree`), from which flopsreg writes the code itself; nothing read
from disk is ever executed. The key covers everything that determines the formulas: the entry
format, the Python version, the content of flopsreg's source files, the folders distributions
are installed in, the content of every module of each installed plugin, the model (its TOML) and
the convention.

Only the user's own folder is used, as ssh treats its files: a folder owned by someone else or
writable by others turns the cache off (with one warning). Entries are authenticated with a
secret key that only the user can read (HMAC-SHA256), opened without following links, FIFOs or
devices, read up to a size cap and checked field by field: a damaged, foreign, forged or
malformed entry is a miss, never an answer. Entries are written atomically (a temporary file
renamed into place; a failed write leaves nothing behind), so concurrent processes see a whole
entry or none.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import stat
import sys
import types
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from flopsreg.errors import FlopsregError, ModelError
from flopsreg.formula.tree import Formula
from flopsreg.model import Model

if TYPE_CHECKING:
    from flopsreg.engine.compose import ModelSelection, UnitSelection
    from flopsreg.engine.memory import Holdings, WeightPart
    from flopsreg.plugins.loader import PluginLoader

__all__ = ["CachedSelection", "CachedUnit", "Cache", "cache_enabled"]

FORMAT = 3  # bump when the entry layout changes: older entries then miss
MAX_ENTRY_BYTES = 16 << 20  # an entry of the largest bundled model is about 0.2 MB
KEY_FILE = "key"  # the secret that authenticates entries: 32 random bytes, readable by the user only
_KEY_BYTES = 32


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


def _file_digest(path: str) -> str | None:
    """SHA-256 of the file's content, or None when it cannot be read."""
    try:
        with open(path, "rb") as file:
            return hashlib.sha256(file.read()).hexdigest()
    except OSError:
        return None


def _source_roots() -> list[str]:
    """The folders of flopsreg's modules and of its built-in plugins (``flopsreg.patterns``, a
    folder of its own in a source checkout)."""
    import importlib.util

    roots = {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    spec = importlib.util.find_spec("flopsreg.patterns")
    roots.update(spec.submodule_search_locations or [] if spec else [])
    return sorted(roots)


def _sources() -> list[list[Any]]:
    """Path, size and modification time (ns) of every flopsreg source and data file (``*.py``,
    ``*.json``: built-in plugins and their manifest included), as Python's bytecode cache checks
    a source: an edited checkout is a new key without reading a file (reading and hashing every
    file cost a tenth of a warm answer, and grew with the families)."""
    found: dict[str, list[Any]] = {}
    folders = _source_roots()
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        folders.append(entry.path)
                elif entry.name.endswith((".py", ".json")):
                    info = entry.stat()
                    found[entry.path] = [entry.path, info.st_size, info.st_mtime_ns]
    return [found[path] for path in sorted(found)]


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
    """What determines every formula besides the model and the installed plugins' modules:
    flopsreg's code and what is installed."""
    autoload = os.environ.get("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD", "")
    return _digest([FORMAT, sys.version_info[:2], _sources(), _installed(), autoload])


def plugin_files(registry: PluginLoader) -> list[list[Any]]:
    """Path and content digest of every loaded module of each installed plugin's top-level
    package (the plugin's own module and the helpers beside it): an edited plugin, editable
    installs included, changes the key although no install folder changes."""
    packages = set()
    for plugin in registry.other_plugins().values():
        module = plugin.__name__ if isinstance(plugin, types.ModuleType) else getattr(plugin, "__module__", None)
        packages.add(str(module or type(plugin).__module__).partition(".")[0])
    files = set()
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] in packages and isinstance(getattr(module, "__file__", None), str):
            files.add(module.__file__)
    return [[path, _file_digest(path)] for path in sorted(files)]


def _owned_by_user(info: os.stat_result) -> bool:
    return not hasattr(os, "getuid") or info.st_uid == os.getuid()


def _unsafe(directory: Path) -> str | None:
    """Why *directory* may not hold the cache (owned by another user, writable by others), or None."""
    try:
        info = os.stat(directory)
    except FileNotFoundError:
        return None  # made by us, private, on the first write
    except OSError as exc:
        return f"cannot read it: {exc.strerror or exc}"
    if not stat.S_ISDIR(info.st_mode):
        return "not a folder"
    if not _owned_by_user(info):
        return f"owned by user id {info.st_uid}, not by you"
    if hasattr(os, "getuid") and info.st_mode & 0o022:
        return f"writable by {'group and others' if info.st_mode & 0o022 == 0o022 else 'group' if info.st_mode & 0o020 else 'others'} (mode {stat.S_IMODE(info.st_mode):o}); chmod go-w it"
    return None


def _read_regular(path: Path, limit: int, *, private: bool = False) -> bytes | None:
    """The bytes of *path* if it is a regular file of the user's, not a link, of at most *limit*
    bytes (and, if *private*, readable and writable by the user alone)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not _owned_by_user(info) or info.st_size > limit:
            return None
        if private and hasattr(os, "getuid") and info.st_mode & 0o077:
            return None
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return None if size > limit else b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


@contextlib.contextmanager
def _private_file(directory: Path, data: bytes) -> Iterator[str]:
    """A temporary file in *directory* (mode 0600) holding *data*, for the caller to rename or link
    into place; whatever happens, it is gone afterwards (a full disk leaves nothing behind)."""
    import tempfile

    fd, temporary = tempfile.mkstemp(dir=directory, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        yield temporary
    finally:
        try:
            os.unlink(temporary)
        except OSError:  # renamed into place already
            pass


def _write_atomically(directory: Path, path: Path, data: bytes) -> None:
    """*data* into *path* through a private temporary file renamed into place; errors are raised."""
    with _private_file(directory, data) as temporary:
        os.replace(temporary, path)


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
    return {"text": formula.text, "argnames": list(formula.argnames), "tree": formula.tree}


def _unit_json(unit: UnitSelection | CachedUnit) -> dict[str, Any]:
    if isinstance(unit, CachedUnit):
        total, slots = unit.total_formula, unit.slot_formulas
    else:
        total, slots = unit._compiled_total, unit._compiled
    return {
        "name": unit.name,
        "scope": unit.scope,
        "count": unit.count,
        "layers": [[r.start, r.stop, r.step] for r in getattr(unit, "layers", ())],
        "patterns": unit.patterns,
        "params": dict(unit.params),
        "total": _formula_json(total),
        "slots": {slot: _formula_json(formula) for slot, formula in slots.items()},
    }


# -- reading entries back: every field checked, anything unexpected a ValueError (a miss) ---------


def _fields(data: Any, names: set[str]) -> Mapping[str, Any]:
    if type(data) is not dict or set(data) != names:
        raise ValueError(f"expected an object with fields {sorted(names)}")
    return data


def _typed(value: Any, kind: type) -> Any:
    if type(value) is not kind:  # exact: a bool is no int here
        raise ValueError(f"expected {kind.__name__}, got {type(value).__name__}")
    return value


def _list_of(value: Any, kind: type) -> list[Any]:
    return [_typed(item, kind) for item in _typed(value, list)]


def _mapping_of(value: Any, kind: type) -> dict[str, Any]:
    return {_typed(name, str): _typed(item, kind) for name, item in _typed(value, dict).items()}


def _formula(data: Any, known: set[str]) -> Formula:
    """The formula of an entry's *data*, whose arguments must all be among *known*."""
    data = _fields(data, {"text", "argnames", "tree"})
    argnames = tuple(_list_of(data["argnames"], str))
    if not set(argnames) <= known or len(set(argnames)) != len(argnames):
        raise ValueError(f"formula arguments {argnames} are not among {sorted(known)}")
    return Formula.from_tree(_typed(data["text"], str), argnames, data["tree"])


def _unit(data: Any) -> CachedUnit:
    data = _fields(data, {"name", "scope", "count", "layers", "patterns", "params", "total", "slots"})
    layers = []
    for bounds in _typed(data["layers"], list):
        start, stop, step = _list_of(bounds, int) if len(_typed(bounds, list)) == 3 else [-1, -1, -1]
        if step < 1 or not 0 <= start <= stop:
            raise ValueError(f"layers {bounds!r}: expected [start, stop, step] with 0 <= start <= stop and step >= 1")
        layers.append(range(start, stop, step))
    params = _mapping_of(data["params"], int)
    known = {*params, "seq_len"}
    count = _typed(data["count"], int)
    if count < 0:
        raise ValueError(f"count {count}")
    return CachedUnit(
        name=_typed(data["name"], str),
        scope=_typed(data["scope"], str),
        count=count,
        layers=tuple(layers),
        patterns=_mapping_of(data["patterns"], str),
        params=params,
        total_formula=_formula(data["total"], known),
        slot_formulas={_typed(slot, str): _formula(f, known) for slot, f in _typed(data["slots"], dict).items()},
    )


def _holdings_json(held: Holdings) -> dict[str, Any]:
    return {
        "model": held.model,
        "warnings": list(held.warnings),
        "kinds": [
            {
                "kind": k.kind, "scope": k.scope, "where": k.where, "layers": k.layers,
                "parts": [[p.slot, p.pattern, p.weights, p.routed, p.routes, p.active, p.rows] for p in k.parts],
                "cache": None if k.cache is None else _formula_json(k.cache),
                "state": k.state,
            }
            for k in held.kinds
        ],
    }


def _count(value: Any) -> int:
    if _typed(value, int) < 0:
        raise ValueError(f"count {value}")
    return value


def _part(data: Any) -> WeightPart:
    from flopsreg.engine.memory import WeightPart  # only for entries of holdings: an evaluation does not import it

    slot, pattern, weights, routed, routes, active, rows = _typed(data, list) if len(_typed(data, list)) == 7 else [None] * 7
    return WeightPart(
        slot=_typed(slot, str), pattern=_typed(pattern, str), weights=_count(weights),
        routed=None if routed is None else _count(routed), routes=_typed(routes, bool), active=_count(active), rows=_count(rows),
    )


def _holdings(model: Model, data: Any) -> Holdings:
    from flopsreg.engine.memory import HeldKind, Holdings  # only for entries of holdings: an evaluation does not import it

    data = _fields(data, {"model", "warnings", "kinds"})
    if data["model"] != model.name:
        raise ValueError(f"holdings of {data['model']!r}, not {model.name!r}")
    kinds = []
    for k in _typed(data["kinds"], list):
        k = _fields(k, {"kind", "scope", "where", "layers", "parts", "cache", "state"})
        kinds.append(
            HeldKind(
                kind=_typed(k["kind"], str), scope=_typed(k["scope"], str), where=_typed(k["where"], str), layers=_count(k["layers"]),
                parts=tuple(_part(p) for p in _typed(k["parts"], list)),
                cache=None if k["cache"] is None else _formula(k["cache"], {"seq_len"}),
                state=None if k["state"] is None else _count(k["state"]),
            )
        )
    return Holdings(model=model.name, kinds=tuple(kinds), warnings=tuple(_list_of(data["warnings"], str)))


class Cache:
    """The cache folder of one environment (flopsreg and its plugins as installed now).

    ``refused`` says why the folder is not used (another user's, or writable by others), or is
    None; a refused cache reads nothing and writes nothing.
    """

    def __init__(self, directory: Path, environment: str) -> None:
        self.directory = directory
        self.environment = environment
        self.refused = _unsafe(directory)
        self._plugins: str | None = None  # digest of the installed plugins' modules, once known
        self._secret: bytes | None = None

    @classmethod
    def default(cls) -> Cache:
        return cls(cache_directory(), environment_key())

    def _path(self, kind: str, key: str) -> Path:
        return self.directory / f"{kind}-{key}.json"

    def _key(self, *, create: bool) -> bytes | None:
        """The secret that authenticates entries; made (private, atomically) when *create* and missing
        or not private to the user."""
        if self._secret is None:
            path = self.directory / KEY_FILE
            secret = _read_regular(path, _KEY_BYTES, private=True)
            if (secret is None or len(secret) != _KEY_BYTES) and create:
                secret = self._new_key(path)
            self._secret = secret if secret is not None and len(secret) == _KEY_BYTES else None
        return self._secret

    def _new_key(self, path: Path) -> bytes | None:
        """A fresh random key at *path*, unless another process has just made a good one (then that)."""
        with _private_file(self.directory, os.urandom(_KEY_BYTES)) as temporary:
            try:
                os.link(temporary, path)  # fails when it exists: never replaces a concurrent writer's key
            except FileExistsError:
                theirs = _read_regular(path, _KEY_BYTES, private=True)
                if theirs is not None and len(theirs) == _KEY_BYTES:
                    return theirs
                os.replace(temporary, path)  # not private to the user, or damaged: replaced
        return _read_regular(path, _KEY_BYTES, private=True)

    @staticmethod
    def _mac(secret: bytes, payload: bytes) -> bytes:
        return hmac.new(secret, payload, hashlib.sha256).hexdigest().encode()

    def _read(self, kind: str, key: str) -> Any:
        """The body stored under *key*, or None: missing, unreadable, unauthenticated or another key's."""
        if self.refused:
            return None
        data = _read_regular(self._path(kind, key), MAX_ENTRY_BYTES)
        secret = self._key(create=False) if data is not None else None
        if secret is None:
            return None
        mac, _, payload = data.partition(b"\n")
        if not hmac.compare_digest(mac, self._mac(secret, payload)):
            return None
        try:
            entry = json.loads(payload)
        except (ValueError, RecursionError):
            return None
        if type(entry) is not dict or entry.get("format") != FORMAT or entry.get("key") != key:
            return None
        return entry.get("body")

    def _write(self, kind: str, key: str, body: Any) -> None:
        """Store *body* atomically; a cache that cannot be written is skipped, never an error."""
        if self.refused:
            return
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            secret = self._key(create=True)
            if secret is None:
                return
            payload = json.dumps({"format": FORMAT, "key": key, "body": body}, separators=(",", ":")).encode()
            _write_atomically(self.directory, self._path(kind, key), self._mac(secret, payload) + b"\n" + payload)
        except OSError:
            return

    def registry_key(self) -> str:
        return _digest(["registry", self.environment])

    def registry_info(self) -> dict[str, Any] | None:
        """The registry's blocks (name and meaning) and load warnings, if stored and every installed
        plugin's modules are as they were then."""
        body = self._read("registry", self.registry_key())
        try:
            body = _fields(body, {"blocks", "warnings", "plugin_files"})
            files = [_list_of(item, str) for item in _typed(body["plugin_files"], list)]
            info = {"blocks": _mapping_of(body["blocks"], str), "warnings": _list_of(body["warnings"], str)}
        except ValueError:
            return None
        if any(len(item) != 2 or _file_digest(item[0]) != item[1] for item in files):
            return None  # a plugin module was edited, or is gone: the registry loads afresh
        self._plugins = _digest(files)
        return info

    def store_registry(self, registry: PluginLoader, warnings: list[str]) -> None:
        blocks = {name: block.meaning for name, block in registry.blocks.items()}
        self._store_registry(blocks, warnings, plugin_files(registry))

    def store_builtins(self, blocks: Mapping[str, str]) -> None:
        """What a registry of the built-ins alone stores (no plugin file, no load warning), known
        from the manifest without loading it (:func:`flopsreg.engine.cold.builtin_blocks`)."""
        self._store_registry(dict(blocks), [], [])

    def _store_registry(self, blocks: dict[str, str], warnings: list[str], files: list[list[Any]]) -> None:
        self._plugins = _digest(files)
        self._write("registry", self.registry_key(), {"blocks": blocks, "warnings": warnings, "plugin_files": files})

    def model_key(self, model: Model, convention: str) -> str:
        return _digest(["model", self.environment, self._plugins, model.to_toml(), convention])

    def selection(self, model: Model, convention: str) -> CachedSelection | None:
        """The cached plan of *model* under *convention*, or None."""
        if self._plugins is None and self.registry_info() is None:
            return None  # the installed plugins are not known as they are now
        body = self._read("model", self.model_key(model, convention))
        if body is None:
            return None
        try:
            body = _fields(body, {"kinds", "model_level", "warnings", "selective", "compiled"})
            return CachedSelection(
                model=model,
                convention=convention,
                kinds=tuple(_unit(u) for u in _typed(body["kinds"], list)),
                head=_unit(body["model_level"]),
                warnings=tuple(_list_of(body["warnings"], str)),
                slots={name: CachedSlot(flag) for name, flag in _mapping_of(body["selective"], bool).items()},
                compiled=_formula(body["compiled"], {"seq_len"}),
            )
        except ValueError:
            return None

    def store(self, plan: ModelSelection | CachedSelection) -> None:
        """Store *plan* (compiling what is not compiled yet), once the installed plugins are known;
        a CachedSelection is one composed from the manifest (:mod:`flopsreg.engine.cold`)."""
        if self._plugins is None:
            return
        body = {
            "kinds": [_unit_json(unit) for unit in plan.kinds],
            "model_level": _unit_json(plan.head),
            "warnings": list(plan.warnings),
            "selective": {name: slot.selective_recompute for name, slot in plan.slots.items()},
            "compiled": _formula_json(plan.compiled),
        }
        self._write("model", self.model_key(plan.model, plan.convention), body)

    def memory_key(self, model: Model) -> str:
        """The key of what *model* holds (its exact selection's weights, caches and states)."""
        return _digest(["memory", self.environment, self._plugins, model.to_toml()])

    def holdings(self, model: Model) -> Holdings | None:
        """What *model* holds, in elements (``flopsreg memory``), or None."""
        if self._plugins is None and self.registry_info() is None:
            return None
        body = self._read("memory", self.memory_key(model))
        if body is None:
            return None
        try:
            return _holdings(model, body)
        except ValueError:
            return None

    def store_holdings(self, model: Model, held: Holdings) -> None:
        """Store what *model* holds, once the installed plugins are known."""
        if self._plugins is not None:
            self._write("memory", self.memory_key(model), _holdings_json(held))

    def info(self) -> str:
        """Where the cache is, and how many entries of each kind it holds."""
        entries = sorted(self.directory.glob("*.json")) if self.directory.is_dir() else []
        size = sum(path.lstat().st_size for path in entries)
        models = sum(path.name.startswith("model-") for path in entries)
        enabled = "yes"
        if not cache_enabled():
            enabled = "no (FLOPSREG_NO_CACHE is set)"
        elif self.refused:
            enabled = f"no (the folder is {self.refused})"
        return f"cache: {self.directory}\nentries: {len(entries)} ({models} compiled models), {size:,} bytes\nenabled: {enabled}"

    def clear(self) -> str:
        """Remove every entry (and leftover temporary files); the key stays."""
        removed = 0
        if self.directory.is_dir():
            for path in [*self.directory.glob("*.json"), *self.directory.glob("*.tmp")]:
                try:
                    path.unlink()
                    removed += 1
                except OSError as exc:
                    raise FlopsregError(f"cache clear: cannot remove {path}: {exc.strerror or exc}") from None
        return f"removed {removed} entries from {self.directory}"
