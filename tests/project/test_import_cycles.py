"""No import cycle between voicegate's modules: one module of a pair is below the other, even when the import
that points back is inside a function or under TYPE_CHECKING (those are how a cycle hides). A package's
`__init__` is left out: it gathers its modules' names, so every module that enters through it would
otherwise close a loop with it. On the tree before this test: `scoring/_signature` <-> `scoring/_views`.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "voicegate"


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the modules it imports (every import, anywhere in the file), packages' `__init__` left out."""
    mods: dict[str, Path] = {}
    for path in root.rglob("*.py"):
        if path.name != "__init__.py":
            mods[".".join(path.relative_to(root.parent).with_suffix("").parts)] = path
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            graph[name].update(t for t in targets if t in mods and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            nxt = next((w for w in edges if w not in index or w in on_stack), None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                else:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_two_modules_import_each_other() -> None:
    assert cycles(import_graph()) == []


def test_the_check_catches_a_cycle_through_a_function_and_type_checking(tmp_path: Path) -> None:
    pkg = tmp_path / "voicegate"
    (pkg / "scoring").mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "scoring" / "__init__.py").write_text("from voicegate.scoring._a import A\n", encoding="utf-8")
    (pkg / "scoring" / "_a.py").write_text("def f():\n    from voicegate.scoring._b import B\n", encoding="utf-8")
    (pkg / "scoring" / "_b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                           "    from voicegate.scoring import _c\n", encoding="utf-8")
    (pkg / "scoring" / "_c.py").write_text("import voicegate.scoring._a\n", encoding="utf-8")
    (pkg / "scoring" / "_d.py").write_text("from voicegate.scoring._a import f\n", encoding="utf-8")
    assert cycles(import_graph(pkg)) == [["voicegate.scoring._a", "voicegate.scoring._b", "voicegate.scoring._c"]]
