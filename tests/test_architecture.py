"""The shape of the core: imports flow one way, and the core names no plugin's things.

Every import statement of every flopsreg module is read from its source, imports inside
functions included (those under ``if TYPE_CHECKING:`` never run and are left out), and the
graph must have no cycle. The core (flopsreg/*.py and flopsreg/readers/*.py) must not name a
pattern, a slot, a Hugging Face model type or a block such as MTP: those belong to plugins.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import flopsreg

PACKAGE = Path(flopsreg.__file__).parent


def _modules() -> dict[str, Path]:
    """Every module of the flopsreg package (the built-in plugins of flopsreg.patterns included)."""
    import flopsreg.patterns

    roots = {"flopsreg": PACKAGE, "flopsreg.patterns": Path(flopsreg.patterns.__file__).parent}
    modules = {}
    for prefix, root in roots.items():
        for path in sorted(root.rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[0] == "patterns" and prefix == "flopsreg":
                continue  # an editable install's source folder seen from flopsreg/: counted once, above
            name = ".".join((prefix, *parts)).removesuffix(".__init__")
            modules[name] = path
    return modules


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(name: str, path: Path) -> set[str]:
    """The flopsreg modules that module *name* imports, anywhere but under TYPE_CHECKING."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                child = f"{base}.{alias.name}"
                found.add(child if child in MODULES else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _cycle() -> list[str] | None:
    """One import cycle of GRAPH, or None."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(GRAPH[node]):
            if state.get(target) == 1:
                return stack[stack.index(target) :] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(GRAPH):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_graph_reads_imports_inside_functions_too():
    """The reader is not vacuous: the registry imports render at the top, the list of built-ins flopsreg.patterns
    inside a function, and compose's import of the registry under TYPE_CHECKING is left out."""
    assert "flopsreg.render" in GRAPH["flopsreg.registry"]
    assert "flopsreg.engine.evaluate" in GRAPH["flopsreg.cli"]
    assert "flopsreg.patterns" in GRAPH["flopsreg.plugins.builtins"]  # builtin_names() imports it in a function
    assert "flopsreg.plugins.loader" not in GRAPH["flopsreg.engine.compose"]


def test_no_import_cycle_among_flopsreg_modules():
    assert _cycle() is None, " -> ".join(_cycle() or [])


def test_a_cycle_would_be_found(monkeypatch):
    monkeypatch.setitem(GRAPH, "flopsreg.model", GRAPH["flopsreg.model"] | {"flopsreg.engine.compose"})
    assert _cycle() is not None


# -- the core names no plugin's things -----------------------------------------------------------

CORE = {
    name: path
    for name, path in MODULES.items()
    if not name.startswith("flopsreg.patterns") and not name.startswith("flopsreg.integrations")
}


def _named(path: Path) -> tuple[set[str], set[str]]:
    """The words of every string literal (docstrings left out), and every identifier, in *path*."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    words: set[str] = set()
    identifiers: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            words.update(re.findall(r"[A-Za-z0-9_.]+", node.value))
        elif isinstance(node, ast.Name):
            identifiers.add(node.id)
        elif isinstance(node, ast.Attribute):
            identifiers.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            identifiers.add(node.name)
        elif isinstance(node, ast.arg):
            identifiers.add(node.arg)
    return words, identifiers


def _plugin_names(registry) -> tuple[set[str], set[str]]:
    """(everything plugins name, the names an identifier must not carry either).

    Slot names such as ``head`` or ``mlp`` are ordinary words as identifiers; in a string they
    would name the slot.
    """
    things = {p.name for p in registry.patterns} | set(registry.hf_readers) | set(registry.blocks)
    return things | set(registry.slots) | set(registry.hf_layer_types), things


def test_the_names_the_core_must_not_use_are_the_registered_ones(registry):
    in_strings, as_identifiers = _plugin_names(registry)
    assert {"full_causal", "attention.core", "mtp", "llama", "sliding_attention"} <= in_strings
    assert {"full_causal", "mtp", "llama"} <= as_identifiers


# Words the public contracts themselves use, which a plugin happens to use as a name too:
# ``evaluate(..., logits="all" | "last")`` and ``--logits`` (issue 11) are the engine's serving
# option, not the built-in pattern called "logits"; the engine finds per-position work through
# Slot.per_position, never by that name.
CONTRACT_WORDS = {"logits"}


@pytest.mark.parametrize("module", sorted(CORE))
def test_the_core_names_no_pattern_slot_model_type_or_block(registry, module):
    words, identifiers = _named(CORE[module])
    in_strings, as_identifiers = _plugin_names(registry)
    named = ((words & in_strings) | (identifiers & as_identifiers)) - CONTRACT_WORDS
    assert not named, f"{module} names {sorted(named)}, which belong to plugins"


# -- folders by the path data takes ----------------------------------------------------------------

# flopsreg's folders, from the bottom up (docs/architecture.md draws them): a module imports only
# modules of its own layer or of a layer below it, never one above, not even inside a function.
# The front end (registry: the Registry users hold) sits with the renderers it hands to selections;
# plot, a renderer, draws sweeps it runs through that front end.
LAYERS = (
    ("flopsreg.errors", "flopsreg._deprecated"),
    ("flopsreg.declarations",),
    ("flopsreg.formula",),
    ("flopsreg.plugins",),
    ("flopsreg.model", "flopsreg.examples"),  # the bundled example models (data) beside the model code
    ("flopsreg.readers", "flopsreg.plugin"),  # flopsreg.plugin: what plugins import, readers' helpers included
    ("flopsreg.engine",),
    ("flopsreg.render", "flopsreg.registry"),
    ("flopsreg.cli",),
    ("flopsreg.integrations",),
    ("flopsreg", "flopsreg.__main__"),  # the public API, and `python -m flopsreg`
)


def _layer(module: str) -> int:
    """The index in LAYERS of the folder (or top-level module) *module* belongs to."""
    for index, prefixes in enumerate(LAYERS):
        if any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes if prefix != "flopsreg"):
            return index
    assert module == "flopsreg", f"{module} is in no layer of LAYERS: add its folder"
    return len(LAYERS) - 1


def _upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a core module of a module in a layer above its own."""
    return [
        f"{module} imports {target}"
        for module in sorted(CORE)
        for target in sorted(graph[module])
        if not target.startswith("flopsreg.patterns") and _layer(target) > _layer(module)
    ]


def test_every_core_module_is_in_a_layer():
    assert {_layer(module) for module in MODULES if not module.startswith("flopsreg.patterns")} == set(range(len(LAYERS)))


def test_no_module_imports_a_module_above_it_in_the_flow():
    assert _upward(GRAPH) == []


def test_an_upward_import_would_be_found(monkeypatch):
    monkeypatch.setitem(GRAPH, "flopsreg.model", GRAPH["flopsreg.model"] | {"flopsreg.engine.compose"})
    assert _upward(GRAPH) == ["flopsreg.model imports flopsreg.engine.compose"]


def test_only_the_loader_imports_the_built_in_plugins_and_only_their_list():
    """The core loads the built-ins by the names flopsreg.patterns.BUILTIN lists, never their content."""
    importers = {module for module in CORE if any(t.startswith("flopsreg.patterns") for t in GRAPH[module])}
    assert importers == {"flopsreg.plugins.builtins"}
    assert GRAPH["flopsreg.plugins.builtins"] & {m for m in MODULES if m.startswith("flopsreg.patterns")} == {"flopsreg.patterns"}


def test_no_module_of_patterns_carries_its_role_in_a_prefix():
    """Readers live in patterns/hf/ and patterns/megatron/, conventions in patterns/conventions/."""
    plugins = [module.removeprefix("flopsreg.patterns.") for module in MODULES if module.startswith("flopsreg.patterns.")]
    roles = {"hf": "hf_", "megatron": "megatron_", "conventions": "convention"}  # folder -> the prefix it replaces
    top = [m for m in plugins if "." not in m and m not in roles and re.match(r"_?(hf_|megatron_|convention)", m)]
    nested = [m for m in plugins if "." in m and m.partition(".")[2].lstrip("_").startswith(roles[m.partition(".")[0]])]
    assert top == [] and nested == []  # megatron_bridge in conventions/ names a framework, not a role
    assert {m.partition(".")[0] for m in plugins if "." in m} == {"hf", "megatron", "conventions"}


def test_the_built_ins_import_the_core_only_through_flopsreg_plugin():
    """What the built-in plugins use is what a third-party plugin can import from flopsreg.plugin."""
    through = {
        module: sorted(t for t in GRAPH[module] if t.startswith("flopsreg") and not t.startswith("flopsreg.patterns") and t != "flopsreg.plugin")
        for module in MODULES
        if module.startswith("flopsreg.patterns.")
    }
    assert {module: targets for module, targets in through.items() if targets} == {}


# -- no import for its side effect --------------------------------------------------------------------


def test_no_core_module_is_imported_for_its_side_effect():
    """An import whose name goes unused (``# noqa: F401``) would be one made to run the module."""
    found = [
        f"{module}: {line.strip()}"
        for module, path in CORE.items()
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.match(r"\s*(import|from)\s+flopsreg", line) and "noqa: F401" in line
    ]
    assert found == []


def _reader_entry_points() -> dict[str, str]:
    import tomllib

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8"))  # beside tests/, also where CI tests the wheel
    return pyproject["project"]["entry-points"]["flopsreg.readers"]


def test_model_reaches_each_reader_by_its_entry_point_in_the_reader_layer():
    """Model.from_* name a reader of flopsreg's entry-point group ``flopsreg.readers``, each an
    object of the reader layer, which the model layer never imports."""
    from flopsreg.model import READER_GROUP, _reader

    assert READER_GROUP == "flopsreg.readers"
    entries = _reader_entry_points()
    model_source = (PACKAGE / "model" / "__init__.py").read_text(encoding="utf-8")
    assert set(re.findall(r'_reader\("(\w+)"\)', model_source)) == set(entries)
    for name, value in entries.items():
        module, _, attribute = value.partition(":")
        assert _layer(module) == _layer("flopsreg.readers") and module in MODULES
        assert not any(target.startswith("flopsreg.readers") for target in GRAPH["flopsreg.model"])
        assert _reader(name) is getattr(__import__(module, fromlist=[attribute]), attribute)


@pytest.mark.slow
def test_importing_flopsreg_imports_no_reader_until_a_model_is_read():
    import subprocess
    import sys

    code = (
        "import sys, flopsreg; assert 'flopsreg.readers' not in sys.modules, 'imported at start'; "
        "m = flopsreg.Model.example('llama-3-8b'); assert 'flopsreg.readers.toml' in sys.modules; "
        "assert 'importlib.metadata' not in sys.modules, 'importlib.metadata imported'; print(m.plan.layers)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "32"), done.stderr
