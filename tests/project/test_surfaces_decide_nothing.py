"""Architecture: the surfaces (cli, report, artifacts and their templates) render the gate's state; they decide
nothing. What ships, under which rule, with which words is computed once — in `scoring` (verdicts) and `gate`
(the state in force, `gate/_state.py`) — and every surface prints it, so two surfaces cannot disagree.

Two checks, each with a planted offender it must catch:
- no module of cli/, report/ or artifacts/ imports a rule or a decision function (a floor rule, the registry
  of rules, `decide`, `ship_pick`, `specificity`, an outcome against a floor, which amendment is in force),
  at the top, in a function or for the type checker;
- no template compares numbers (`auc < 0.8`, `rules | length == 2`): such a comparison is a decision, and
  moves into the state as a boolean or words.
On the tree before this test: report/_svg.py imported `impostor_outcome`, report/_page.py and
artifacts/_format.py the rule registry, artifacts/ owned `in_force`, and six template expressions compared
numbers (the ruler-AUC warning twice, the replicas table twice, the count of rules twice).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "voicegate"
SURFACES = ("cli", "report", "artifacts")

# What decides: a package's names that hold a rule or make a verdict. Importing any of them from a surface fails.
DECIDES = {
    "scoring": ("decide", "ship_pick", "specificity", "impostor_outcome", "detection_floor", "score_gate",
                "score_gate_both", "measure_gate", "copying_verdict", "damage_verdict", "verdict"),
    "spec": ("RULES", "FloorRule", "get_rule", "rules_in_force", "zero_floor_fails", "spread", "smallest_in_units",
             "REPLICATES_REQUIRED", "SMALLEST_EFFECT"),
    "gate": ("in_force", "candidate_standing", "candidate_standings"),
}


def decision_imports(root: Path = PACKAGE) -> list[str]:
    """`file:line: package.name` for every import of a deciding name by a surface's module."""
    found = []
    for surface in SURFACES:
        for path in sorted((root / surface).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
                    continue
                parts = node.module.split(".")
                if parts[0] != "voicegate" or len(parts) < 2:
                    continue
                names = DECIDES.get(parts[1], ())
                found += [f"{rel}:{node.lineno}: {parts[1]}.{a.name}" for a in node.names if a.name in names]
    return found


def test_the_deciding_names_exist() -> None:
    # A name renamed away would make the check silently pass: each still exists in its package (on its face, or
    # in one of its modules: a face exports only what other packages use, and no surface may use these).
    import importlib
    import pkgutil

    for package, names in DECIDES.items():
        module = importlib.import_module(f"voicegate.{package}")
        modules = [module, *(importlib.import_module(f"voicegate.{package}.{m.name}")
                             for m in pkgutil.iter_modules(module.__path__))]
        missing = [n for n in names if not any(hasattr(m, n) for m in modules)]
        assert not missing, (package, missing)


def test_no_surface_imports_a_rule_or_a_decision_function() -> None:
    found = decision_imports()
    assert not found, ("a surface imports what decides; compute it in scoring or gate/_state.py and hand the "
                       "surface the result:\n" + "\n".join(found))


def test_the_import_check_catches_a_planted_decision(tmp_path: Path) -> None:
    (tmp_path / "report").mkdir()
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "cli").mkdir()
    (tmp_path / "report" / "_x.py").write_text("from voicegate.scoring import GateResult, ship_pick\n",
                                               encoding="utf-8")
    (tmp_path / "artifacts" / "_y.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from voicegate.spec import FloorRule\n"
        "def f():\n    from voicegate.spec import RULES, shown_path\n", encoding="utf-8")
    (tmp_path / "cli" / "_z.py").write_text("def g():\n    from voicegate.gate import in_force, score\n",
                                            encoding="utf-8")
    assert decision_imports(tmp_path) == ["cli/_z.py:2: gate.in_force", "report/_x.py:1: scoring.ship_pick",
                                          "artifacts/_y.py:3: spec.FloorRule", "artifacts/_y.py:5: spec.RULES"]


_BLOCK = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.DOTALL)
_STRING = re.compile(r"'[^']*'|\"[^\"]*\"")
# An ordering comparison anywhere in an expression, or an equality against a number literal.
_COMPARES = re.compile(r"(?<![-=!<>])(<=|>=|<|>)(?![-=>])|(==|!=)\s*-?\d|-?\d(\.\d+)?\s*(==|!=)")


def number_comparisons(root: Path = PACKAGE / "templates") -> list[str]:
    found = []
    for path in sorted(root.glob("*.j2")):
        text = path.read_text(encoding="utf-8")
        for m in _BLOCK.finditer(text):
            if _COMPARES.search(_STRING.sub("''", m.group())):
                found.append(f"{path.name}:{text[:m.start()].count(chr(10)) + 1}: {m.group()[:100]}")
    return found


def test_no_template_compares_numbers() -> None:
    found = number_comparisons()
    assert not found, ("a template compares numbers; give the state a boolean or words for it:\n"
                       + "\n".join(found))


def test_the_template_check_catches_planted_comparisons(tmp_path: Path) -> None:
    (tmp_path / "a.md.j2").write_text(
        "{% if auc is not none and auc < 0.8 %}weak{% endif %}\n"
        "{{ 'a -> b' if x == 'y' else '<none>' }}\n"        # arrows and brackets inside strings: no comparison
        "{% if rules | length == 2 %}both{% endif %}\n"
        "{% if a.ratio >= b %}x{% endif %}\n", encoding="utf-8")
    assert [f.split(": ")[0] for f in number_comparisons(tmp_path)] == ["a.md.j2:1", "a.md.j2:3", "a.md.j2:4"]
