"""Reading a rendered report as a reviewer's tools do: a small DOM, its external references, a browser.

The report tests parse pages with the standard library's HTML parser, so each assertion looks at
the element it is about (a table cell, an SVG mark, an attribute), not at a substring that could
appear anywhere; the browser tests load them in headless Chromium.
"""

from __future__ import annotations

import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None):
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    def text(self, skip: frozenset[str] = frozenset()) -> str:
        return "".join(c if isinstance(c, str) else ("" if c.tag in skip else c.text(skip))
                       for c in self.children)

    def iter(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        out = []
        for n in self.iter():
            if tag is not None and n.tag != tag:
                continue
            if cls is not None and cls not in (n.attrs.get("class") or "").split():
                continue
            if any(n.attrs.get(k.replace("_", "-")) != v for k, v in attrs.items()):
                continue
            out.append(n)
        return out

    def find(self, *args: Any, **kwargs: Any) -> Node:
        found = self.find_all(*args, **kwargs)
        assert found, f"no element {args} {kwargs}"
        return found[0]


class Tree(HTMLParser):
    """A small DOM: enough to find elements by tag, class and attribute, with their text."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.cur = self.root
        self.starttags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs), self.cur)
        self.starttags.append((tag, dict(attrs)))
        self.cur.children.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.starttags.append((tag, dict(attrs)))
        self.cur.children.append(Node(tag, dict(attrs), self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def table_row(table: Node, name: str) -> Node:
    for tr in table.find_all("tr"):
        th = tr.find_all("th")
        if th and th[0].text().strip() == name:
            return tr
    raise AssertionError(f"no row {name}")


URL_ATTRS = {"href", "src", "srcset", "action", "formaction", "poster", "data", "background", "xlink:href",
             "cite", "longdesc", "manifest", "ping", "codebase", "archive", "lowsrc", "dynsrc", "usemap"}


def external_references(page: str) -> list[str]:
    """Every way the page could fetch something; [] when it is self-contained."""
    problems = []
    tree = Tree(page)
    for tag, attrs in tree.starttags:
        if tag in {"script", "link", "img", "iframe", "object", "embed", "base", "frame", "audio", "video",
                   "source", "track", "image", "use", "feimage", "form", "input"}:
            problems.append(f"<{tag}>")
        for k, v in attrs.items():
            v = (v or "").strip()
            if k in URL_ATTRS and not (k == "href" and tag == "a" and v.startswith("#")):
                problems.append(f"{tag} {k}={v}")
            if "url(" in v.replace(" ", "").lower() and not re.fullmatch(r"url\(#[\w-]+\)", v):
                problems.append(f"{tag} {k}={v}")
            if k == "http-equiv" and v.lower() == "refresh":
                problems.append("meta refresh")
            if k == "style":
                problems.append(f"{tag} style attribute")
    css = "".join(n.text() for n in tree.root.find_all("style"))
    if "@import" in css or "@font-face" in css:
        problems.append("css import/font")
    for m in re.finditer(r"url\(\s*([^)]*)\)", css):
        if not m.group(1).strip("'\" ").startswith("#"):
            problems.append(f"css url({m.group(1)})")
    return problems


def chromium() -> str:
    found = os.environ.get("VOICEGATE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found or not Path(found).exists():
        pytest.skip("headless chromium not installed (Debian: apt-get install -y chromium)")
    return found
