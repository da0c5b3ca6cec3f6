"""Check a built documentation site for what it loads from the network: no page or stylesheet may
take a script, a stylesheet or a font from another host, so the site reads the same on an
air-gapped cluster; and every script and stylesheet it names must be a file in the site.

Run ``python docs/check_site.py SITE`` after ``sphinx-build -b html docs SITE`` (CI does, .ci/run);
it prints one line per problem and exits 1 if there is any. Links (``<a href>``) may point anywhere:
a reader follows them, the browser does not load them.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

# What a browser loads by itself: a script, a <link> (stylesheet, font preload, icon), an image
# or a frame, an @import and a url(...) of CSS. Each captures the address.
LOADED = (
    re.compile(r"""<script\b[^>]*?\bsrc\s*=\s*["']([^"']*)["']""", re.I),
    re.compile(r"""<link\b[^>]*?\bhref\s*=\s*["']([^"']*)["']""", re.I),
    re.compile(r"""<(?:img|iframe)\b[^>]*?\bsrc\s*=\s*["']([^"']*)["']""", re.I),
    re.compile(r"""@import\s+["']([^"']+)""", re.I),  # @import url(...) is the next one's
    re.compile(r"""url\(\s*["']?([^"')\s]+)""", re.I),
)
NETWORK = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//", re.I)  # http://, https://, //host (scheme-relative)
LOCAL_ASSET = re.compile(r"<(?:script|link)\b[^>]*>", re.I)  # those whose file must exist in the site


def network_references(text: str) -> list[str]:
    """Every address in *text* (HTML or CSS) that the browser would load from another host."""
    return [address for pattern in LOADED for address in pattern.findall(text) if NETWORK.match(address)]


def missing_files(page: Path, text: str, site: Path) -> list[str]:
    """The local scripts and stylesheets *page* names that are not files of the site."""
    missing = []
    for tag in LOCAL_ASSET.findall(text):
        for address in (address for pattern in LOADED[:2] for address in pattern.findall(tag)):
            parts = urlsplit(address)
            if parts.scheme or parts.netloc or not parts.path:  # another host (reported above), data:, a fragment
                continue
            target = (page.parent / unquote(parts.path)).resolve()
            if site.resolve() not in target.parents or not target.is_file():
                missing.append(address)
    return missing


def problems(site: Path) -> list[str]:
    """One line per network reference or missing asset in the HTML and CSS files under *site*."""
    found = []
    for path in sorted([*site.rglob("*.html"), *site.rglob("*.css")]):
        text = path.read_text(encoding="utf-8", errors="replace")
        where = path.relative_to(site)
        found += [f"{where}: loads {address} from the network" for address in network_references(text)]
        if path.suffix == ".html":
            found += [f"{where}: names {address}, which is not in the site" for address in missing_files(path, text, site)]
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python docs/check_site.py SITE (the folder sphinx-build wrote)", file=sys.stderr)
        return 2
    site = Path(argv[0])
    if not any(site.rglob("*.html")):
        print(f"{site}: no HTML page: is it the folder sphinx-build wrote?", file=sys.stderr)
        return 1
    found = problems(site)
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
