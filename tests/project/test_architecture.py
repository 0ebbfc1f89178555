"""Architecture: only `scoring/_result.py` knows a score result's JSON key names.

Every other module reads a result by attribute (`arm.delta_cb`, `result.ships`).
This test greps `voicegate/` (Python modules and templates) for a subscript or
`.get(` with one of the result's key names and fails if any remain.

Honesty of the grep:
- It is scoped to keys that only ever name a result field (`delta_cb`,
  `floors`, `ratios`, `disagree`, `spread`, `distances`, `ships`, ...).
  `"copying"`, `"damage"` and `"voice"` are also sections of a gate SPEC
  (`spec["copying"]` in the spec validator is not a result): they are checked
  everywhere except `voicegate/spec/`, which never sees a result.
- `voicegate/scoring/_result.py` is the one allowed reader and is excluded.
- A line ending in `# not-a-result: <what it is>` reads another structure that
  shares a key name (run.json's counts, the signature); the marker says which.
- KNOWN_REMAINING lists modules not yet converted; each entry must still
  contain a hit, so the list can only shrink. It is empty: the report page,
  the last to go, now reads typed results (`report/_data.py`) and hands typed
  views to its template and plots.
On the tree before `_result.py` existed this fails on artifacts/_entries.py,
artifacts/_format.py, cli/_score.py, report/_table.py and the record template;
before the report was converted, on report/_page.py, report/_svg.py and the
report template.
"""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "voicegate"
ALLOWED = {"scoring/_result.py"}
KNOWN_REMAINING: set[str] = set()

RESULT_ONLY = ("delta_cb", "floors", "ratio", "ratios", "disagree", "overlap", "spread", "distances", "ships",
               "mean_distance", "longest_run", "ngrams", "probe_pass_rate", "degeneration", "spans", "bootstrap",
               "identical_to_base", "signature_text", "voice_decides", "pool_words", "ruler", "heldout_auc",
               "author_auc")
SHARED_WITH_SPEC = ("copying", "damage", "voice")


def _pattern(keys: tuple[str, ...]) -> re.Pattern[str]:
    names = "|".join(keys)
    return re.compile(rf"""(\[\s*['"]({names})['"]\s*\]|\.get\(\s*['"]({names})['"])""")


def hits(root: Path = PACKAGE) -> dict[str, list[str]]:
    only, shared = _pattern(RESULT_ONLY), _pattern(SHARED_WITH_SPEC)
    found: dict[str, list[str]] = {}
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.j2")]):
        rel = path.relative_to(root).as_posix()
        if rel in ALLOWED:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "# not-a-result:" in line:
                continue
            if only.search(line) or (not rel.startswith("spec/") and shared.search(line)):
                found.setdefault(rel, []).append(f"{rel}:{n}: {line.strip()}")
    return found


def test_no_module_reads_a_result_by_string_key() -> None:
    found = hits()
    offenders = [line for rel, lines in found.items() if rel not in KNOWN_REMAINING for line in lines]
    assert not offenders, "result read by string key outside scoring/_result.py:\n" + "\n".join(offenders)


def test_known_remaining_is_not_stale() -> None:
    # A converted module must leave the list, so the exception can only shrink.
    stale = KNOWN_REMAINING - set(hits())
    assert not stale, f"no longer reads results by key; remove from KNOWN_REMAINING: {sorted(stale)}"


def test_the_grep_catches_a_key_read(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text('x = arm["delta_cb"]\ny = arm.get("copying")\n', encoding="utf-8")
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "v.py").write_text('t = spec["copying"]\n', encoding="utf-8")
    assert list(hits(tmp_path)) == ["m.py"] and len(hits(tmp_path)["m.py"]) == 2


# -- packages are entered by their faces ---------------------------------------------
#
# A module may import its own package's private modules, and the root package's shared internals
# (`voicegate/_errors.py`, `_atomic.py`, ...), but another package only through that package's
# `__init__`: what `voicegate.scoring` exports is what the other packages may rely on, as httpx
# guards its exported members. Every import counts: at the top, inside a function, under
# TYPE_CHECKING. On the tree before this test, 161 of 275 cross-package imports named a private
# module.


def _package(rel: tuple[str, ...]) -> str:
    return rel[0] if len(rel) > 1 else ""  # "" for the root package's own modules


def private_imports(root: Path = PACKAGE) -> list[str]:
    """`file:line: module` for every import of another package's private module (or private name)."""
    import ast

    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).parts
        mine = _package(rel)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                parts = target.split(".")
                if parts[0] != "voicegate" or len(parts) < 3 or parts[1] == mine or parts[1].startswith("_"):
                    continue
                if parts[2].startswith("_"):
                    found.append(f"{'/'.join(rel)}:{node.lineno}: {target}")
                    break
    return found


def test_packages_are_entered_by_their_init() -> None:
    offenders = private_imports()
    assert not offenders, ("another package's private module imported; export the name from that package's "
                           "__init__ and import it from there:\n" + "\n".join(offenders))


def test_the_import_check_catches_a_planted_private_import(tmp_path: Path) -> None:
    (tmp_path / "report").mkdir()
    (tmp_path / "scoring").mkdir()
    (tmp_path / "report" / "_page.py").write_text(
        "from voicegate.scoring import GateResult\n"          # the face: allowed
        "from voicegate.report._table import ship_line\n"     # its own package: allowed
        "from voicegate._errors import VoicegateError\n"      # the root's shared internals: allowed
        "def f():\n"
        "    from voicegate.scoring._result import Span\n"   # planted, inside a function
        "    from voicegate.spec import _rules\n", encoding="utf-8")  # a private module by name
    (tmp_path / "scoring" / "_score.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from voicegate.run._store import Row\n", encoding="utf-8")  # planted, for the type checker only
    assert private_imports(tmp_path) == ["report/_page.py:5: voicegate.scoring._result",
                                         "report/_page.py:6: voicegate.spec._rules",
                                         "scoring/_score.py:3: voicegate.run._store"]


def test_the_planted_import_fails_on_the_real_tree(tmp_path: Path) -> None:
    import shutil

    tree = tmp_path / "voicegate"
    shutil.copytree(PACKAGE, tree, ignore=shutil.ignore_patterns("__pycache__"))
    assert private_imports(tree) == private_imports()
    with (tree / "report" / "_page.py").open("a", encoding="utf-8") as f:
        f.write("\n\ndef _planted():\n    from voicegate.scoring._result import Span\n    return Span\n")
    planted = [x for x in private_imports(tree) if x not in private_imports()]
    assert len(planted) == 1 and planted[0].endswith(": voicegate.scoring._result"), planted


def test_no_test_module_imports_another() -> None:
    # Shared builders live in tests/helpers/ (one workspace builder, `helpers/workspace.py`); a test module that
    # imports another runs that module's fixtures and constants as a side effect, and hides who owns them.
    import ast

    tests = Path(__file__).resolve().parents[1]
    found = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            found += [f"{path.name}:{node.lineno}: {n}" for n in names if n.split(".")[0].startswith("test_")]
    assert not found, "\n".join(found)


# -- the layers docs/architecture.md states -------------------------------------------
#
# At import time: `run` at the bottom; `spec` and `seat` import only it; `scoring` imports `spec`;
# `artifacts`, `report` and `generate` import `scoring`; `gate` imports `artifacts`; `demo` and `cli`
# on top. A function-level import may point upward (how `cli` stays light), except from `spec` and
# `seat`, which never look up at all, and `gate`, which never imports `generate`.

LAYER = {"run": 0, "spec": 1, "seat": 1, "scoring": 2, "artifacts": 3, "report": 3, "generate": 3, "gate": 4,
         "demo": 5, "cli": 6}


def package_imports(root: Path = PACKAGE) -> list[tuple[str, str, str, str]]:
    """(importing package, imported package, where: top | function | typing, file:line) for every import
    of another voicegate package (the root package's shared internals aside)."""
    import ast

    out: list[tuple[str, str, str, str]] = []

    def walk(nodes: list[ast.stmt], where: str, rel: tuple[str, ...]) -> None:
        for n in nodes:
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
                walk(n.body, "function", rel)
                continue
            if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test):
                walk(n.body, "typing", rel)
                walk(n.orelse, where, rel)
                continue
            names = ([n.module] if isinstance(n, ast.ImportFrom) and n.module and n.level == 0 else
                     [a.name for a in n.names] if isinstance(n, ast.Import) else [])
            for name in names:
                parts = name.split(".")
                if parts[0] == "voicegate" and len(parts) > 1 and not parts[1].startswith("_") \
                        and parts[1] != _package(rel):
                    out.append((_package(rel), parts[1], where, f"{'/'.join(rel)}:{n.lineno}"))
            for field in ("body", "orelse", "finalbody", "handlers"):
                sub = getattr(n, field, None)
                if isinstance(sub, list):
                    walk(sub, where, rel)

    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).parts
        walk(ast.parse(path.read_text(encoding="utf-8")).body, "top", rel)
    return out


def test_packages_import_only_the_layers_below_them_at_import_time() -> None:
    upward = [f"{at}: {src} imports {dst} ({LAYER[src]} -> {LAYER[dst]})"
              for src, dst, where, at in package_imports() if src and where == "top" and LAYER[dst] >= LAYER[src]]
    assert not upward, "an import-time import of a package at or above the importer's layer:\n" + "\n".join(upward)


def test_gate_never_imports_generate() -> None:
    # gate judges a run's seat through `scoring`'s integrity verdict; driving a seat is generate's alone.
    found = [at for src, dst, _, at in package_imports() if src == "gate" and dst == "generate"]
    assert not found, "\n".join(found)


def test_the_layer_check_catches_planted_imports(tmp_path: Path) -> None:
    (tmp_path / "gate").mkdir()
    (tmp_path / "scoring").mkdir()
    (tmp_path / "gate" / "_x.py").write_text("def f():\n    from voicegate.generate import generate\n",
                                             encoding="utf-8")
    (tmp_path / "scoring" / "_y.py").write_text("from voicegate.gate import score\n", encoding="utf-8")
    assert package_imports(tmp_path) == [("gate", "generate", "function", "gate/_x.py:2"),
                                         ("scoring", "gate", "top", "scoring/_y.py:1")]


def test_spec_and_seat_never_look_up_not_even_in_a_function() -> None:
    found = [f"{at}: {src} imports {dst} ({where})" for src, dst, where, at in package_imports()
             if src in ("spec", "seat") and dst != "run"]
    assert not found, "spec and seat import only run:\n" + "\n".join(found)
