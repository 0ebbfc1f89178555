"""Each subpackage exports exactly what the others use: its `__all__` is the set of names imported from it
(`from voicegate.<pkg> import name`, or `<pkg>.name` after `from voicegate import <pkg>`) by the other
packages, the root package, the tests and the benchmarks. A name no one imports is not exported; a name
someone imports is. (As httpx's test_exported_members holds its own surface.)"""

from __future__ import annotations

import ast
import importlib
from collections import defaultdict
from pathlib import Path

import voicegate

REPO = Path(__file__).resolve().parents[2]
PACKAGES = sorted(p.parent.name for p in (REPO / "voicegate").glob("*/__init__.py"))


def _imported() -> dict[str, set[str]]:
    used: dict[str, set[str]] = defaultdict(set)
    files = [*(REPO / "voicegate").rglob("*.py"), *(REPO / "tests").rglob("*.py"), *(REPO / "benchmarks").rglob("*.py")]
    for path in files:
        rel = path.relative_to(REPO).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases: dict[str, str] = {}     # a local name bound to a subpackage
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for pkg in PACKAGES:
                    if node.module == f"voicegate.{pkg}" and not rel.startswith(f"voicegate/{pkg}/"):
                        used[pkg].update(a.name for a in node.names)
                if node.module == "voicegate":
                    aliases.update({a.asname or a.name: a.name for a in node.names if a.name in PACKAGES})
            elif isinstance(node, ast.Import):
                aliases.update({a.asname: a.name.split(".")[1] for a in node.names
                                if a.asname and a.name.startswith("voicegate.") and a.name.count(".") == 1})
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                pkg = aliases[node.value.id]
                if not rel.startswith(f"voicegate/{pkg}/"):
                    used[pkg].add(node.attr)
    for name, module in voicegate._LAZY.items():     # the root package's use cases, loaded on first use
        used[module.split(".")[1]].add(name)
    return used


def test_every_subpackage_exports_what_the_others_import_and_nothing_else() -> None:
    used = _imported()
    wrong = {}
    for pkg in PACKAGES:
        exported = set(importlib.import_module(f"voicegate.{pkg}").__all__)
        wanted = {n for n in used[pkg] if not n.startswith("_")}    # a private module reached into, not a name
        if exported != wanted:
            wrong[pkg] = {"exported, imported by no one": sorted(exported - wanted),
                          "imported, not exported": sorted(wanted - exported)}
    assert not wrong, wrong
