"""A Sphinx extension that writes one page per bundled example before the build reads the sources:
its closed form and symbols, its FLOPs by slot as a figure, and its conventions against exact.

The pages go to ``docs/_generated/`` (not in git), so they always show what this flopsreg
computes; a link to a repository file outside ``docs/`` is rewritten to GitHub.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

LENGTHS = (4096, 32768)  # the context lengths of the per-convention tables


def _page(name: str, folder: Path) -> str:
    import flopsreg
    from flopsreg.render import notebook, plot

    registry = flopsreg.Registry.default()
    model = flopsreg.Model.example(name)
    figure = plot.by_slot(model, "1024:131072", registry=registry, per_token=True)
    plot.save(figure, str(folder / f"{name}.svg"))
    parts = [f"# {name}", f"Source: {model.source}" if model.source else "", "## Closed form"]
    parts.append(notebook.selection_markdown(registry.select(model)))
    parts += ["## FLOPs per token by slot", f"![{name}: forward FLOPs per token by slot, 1k to 128k tokens]({name}.svg)"]
    for length in LENGTHS:
        parts += [f"## Conventions at {length:,} tokens", notebook.comparison_markdown(registry.compare(model, seq_len=length))]
    return "\n\n".join(part for part in parts if part) + "\n"


def _write_pages(app: Any) -> None:
    from flopsreg.model.examples_index import example_names

    folder = Path(app.srcdir) / "_generated" / "examples"
    folder.mkdir(parents=True, exist_ok=True)
    names = example_names()
    for name in names:
        (folder / f"{name}.md").write_text(_page(name, folder), encoding="utf-8")
    index = ["# Example models", "", "```{toctree}", ":maxdepth: 1", "", *names, "```", ""]
    (folder / "index.md").write_text("\n".join(index), encoding="utf-8")


def _outside_links(app: Any, docname: str, source: list[str]) -> None:
    """``](../tests/x)``: a link out of docs/, to the file on GitHub."""
    source[0] = re.sub(r"\]\(\.\./([^)]+)\)", lambda m: f"]({app.config.repository}{m.group(1)})", source[0])


def setup(app: Any) -> dict[str, Any]:
    app.add_config_value("repository", "", "env")
    app.connect("builder-inited", _write_pages)
    app.connect("source-read", _outside_links)
    return {"parallel_read_safe": True}
