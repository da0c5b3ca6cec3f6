"""The documentation site's sources: every page is in the table of contents, and the generated
page of an example holds its closed form, its figure and its conventions. CI builds the site
itself with Sphinx, warnings as errors (.ci/run)."""

from __future__ import annotations

import importlib.util
import re
import runpy
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_every_page_is_in_the_table_of_contents():
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    listed = {line.strip() for block in re.findall(r"```\{toctree\}(.*?)```", index, flags=re.S) for line in block.splitlines()}
    pages = {path.stem for path in DOCS.glob("*.md")} - {"index"}
    assert pages <= listed, pages - listed


def test_an_example_page_has_its_formula_figure_and_conventions(tmp_path):
    pytest.importorskip("matplotlib", reason='matplotlib is not installed (pip install "flopsreg[plot]")')
    spec = importlib.util.spec_from_file_location("example_pages", DOCS / "_ext" / "example_pages.py")
    pages = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pages)
    text = pages._page("gemma-3-4b", tmp_path)
    assert text.startswith("# gemma-3-4b\n") and "$$\\begin{aligned}" in text
    assert "![gemma-3-4b: forward FLOPs per token by slot" in text and (tmp_path / "gemma-3-4b.svg").is_file()
    assert "## Conventions at 4,096 tokens" in text and "| slime |" in text


def _load(name: str):
    """A script of docs/ as a fresh module."""
    spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _site(tmp_path: Path, pages: dict[str, str]) -> Path:
    for name, text in pages.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_the_site_check_finds_every_script_style_and_font_from_another_host(tmp_path):
    check = _load("check_site")
    site = _site(tmp_path, {
        "index.html": '<script defer src="https://cdn.jsdelivr.net/npm/mathjax@4/tex-mml-chtml.js"></script>\n'
                      "<link rel='stylesheet' href='//fonts.googleapis.com/css?family=Inter'>\n"
                      '<style>@import "https://example.org/print.css"; @import url("http://example.org/theme.css");</style>\n'
                      '<a href="https://github.com/flopsreg/flopsreg">a link is followed, not loaded</a>',
        "_static/site.css": "@font-face { src: url(https://fonts.gstatic.com/inter.woff2); }\n"
                            "div { background: url('img/local.png'); }",
    })
    assert check.problems(site) == [
        "_static/site.css: loads https://fonts.gstatic.com/inter.woff2 from the network",
        "index.html: loads https://cdn.jsdelivr.net/npm/mathjax@4/tex-mml-chtml.js from the network",
        "index.html: loads //fonts.googleapis.com/css?family=Inter from the network",
        "index.html: loads https://example.org/print.css from the network",
        "index.html: loads http://example.org/theme.css from the network",
    ]
    assert check.main([str(site)]) == 1


def test_the_site_check_wants_every_local_script_and_style_in_the_site(tmp_path):
    check = _load("check_site")
    site = _site(tmp_path, {
        "a/page.html": '<script src="../_static/mathjax/tex-chtml.js"></script>'
                       '<link rel="stylesheet" href="../_static/site.css?v=1" /><link rel="index" href="#top" />',
        "_static/site.css": "div.body { overflow-x: auto; }",
    })
    assert check.problems(site) == ["a/page.html: names ../_static/mathjax/tex-chtml.js, which is not in the site"]
    _site(site, {"_static/mathjax/tex-chtml.js": "/* MathJax */"})
    assert check.problems(site) == [] and check.main([str(site)]) == 0
    assert check.main([str(site / "missing")]) == 2 and check.main([str(site / "_static")]) == 1  # no page: not a site


def test_the_site_serves_mathjax_from_its_own_folder():
    """conf.py points MathJax at the copy the docs extra installs, never at a CDN."""
    conf = runpy.run_path(str(DOCS / "conf.py"))
    assert "sphinx-mathjax-offline" in conf["extensions"] and "sphinx.ext.mathjax" in conf["extensions"]
    assert not re.match(r"(\w+:)?//", conf["mathjax_path"]) and conf["mathjax_path"].startswith("mathjax/")
    pyproject = (DOCS.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^docs = \[.*"sphinx-mathjax-offline==', pyproject, flags=re.M), "the docs extra installs MathJax"
    assert all((DOCS / folder / name).is_file() for folder in conf["html_static_path"] for name in conf["html_css_files"])


def test_the_landing_page_installs_and_runs_the_readmes_two_commands():
    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    set_up = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)```", set_up, flags=re.S)
    assert len(commands) == 2 and "pip install" in commands[0]
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    assert all(f"```bash\n{command}```" in index for command in commands)
    assert "## A quick tour" in index and "```python\nimport flopsreg" in index and "flopsreg eval " in index


def test_link_texts_are_titles_not_file_names():
    links = re.compile(r"\[([^\]]*)\]\(([^)\s]+\.md(?:#[^)]*)?)\)")
    named_by_file = [(path.name, text) for path in DOCS.glob("*.md") for text, _ in links.findall(path.read_text(encoding="utf-8"))
                     if re.search(r"\.md\b", text)]
    assert named_by_file == []


def test_model_names_in_the_examples_table_link_to_their_pages():
    from flopsreg.model.examples_index import example_names

    tables = _load("make_examples_table")
    text = (DOCS / "examples.md").read_text(encoding="utf-8")
    for start, end in ((tables.START, tables.END), (tables.SERVING_START, tables.SERVING_END)):
        rows = text.split(start, 1)[1].split(end, 1)[0].strip().splitlines()[2:]
        names = [re.match(r"\| \[`([^`]+)`\]\(_generated/examples/\1\.md\)", row) for row in rows]
        assert all(names), [row for row, name in zip(rows, names) if not name][:1]
        assert {name.group(1) for name in names} == set(example_names())


def test_the_conventions_page_writes_its_formulas_in_maths():
    """No ASCII power, subscript or arrow in the prose and hand-written tables of conventions.md:
    formulas are $...$ (myst's dollarmath), names of arguments and code are `...`."""
    text = (DOCS / "conventions.md").read_text(encoding="utf-8")
    tables = _load("make_conventions_table")
    prose = text.split(tables.START)[0] + text.split(tables.END)[1]
    prose = re.sub(r"```.*?```|`[^`]*`|\$[^$\n]+\$", "", prose, flags=re.S)
    ascii_maths = re.findall(r".{0,30}(?:\b[A-Za-z]\^|\b[a-z]_[a-z]+\b|\b\w+ -> \w+|\bsum s_).{0,30}", prose)
    assert ascii_maths == []
