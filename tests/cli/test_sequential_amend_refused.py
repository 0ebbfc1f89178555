"""`amend` of a registered sequential design is refused (exit 2, one line, nothing written).

Its α holds over every look for the rule its boundaries were simulated for at `register`; a rule changed between
looks would be chosen after seeing one, and an amendment holds only for the generations it re-scored. Refused
even for the other t rule, registered prospectively by another gate.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from helpers.sequential import look_rows, sequential_workspace
from helpers.workspace import GATE, run_cli, write_rows


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.parts and "cache" not in p.parts}


def test_amending_a_sequential_design_is_refused_with_nothing_written(tmp_path: Path) -> None:
    from voicegate.spec._registration import register
    from voicegate.spec._spec import load_spec

    root = sequential_workspace(tmp_path / "ws", rule="welch-t-min-effect", artifacts=True)
    other = yaml.safe_load((root / "preregistrations" / f"{GATE}.yaml").read_text(encoding="utf-8"))
    other.update(gate="lv-pro", floor={"rule": "welch-t"}, artifacts={"record": "gates/lv-pro.md"})
    (root / "preregistrations" / "lv-pro.yaml").write_text(yaml.safe_dump(other), encoding="utf-8")
    register(load_spec(root, "lv-pro"))  # welch-t, registered prospectively: an amendment could cite it
    write_rows(root, look_rows([1, 2, 3]))
    assert run_cli("score", GATE, "-C", root, "--quiet").code == 0
    before = _files(root)
    for rule in ("welch-t", "pairwise-max-spread"):
        done = run_cli("amend", GATE, "--rule", rule, "--reason", "the other rule reads the look better", "-C", root)
        assert done.code == 2 and done.stdout == ""
        assert done.stderr == ("voicegate: refusing to amend lv-test: its registered sequential design fixes its rule "
                               "(welch-t-min-effect) with the boundaries simulated for it over every look; another "
                               "rule is a new design, registered before its own generations\n")
        assert _files(root) == before
