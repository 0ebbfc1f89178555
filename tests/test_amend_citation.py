"""Issue 24, item 1: an amendment cites its prospective registration, and `verify` re-checks it in git.

An amendment may move a gate to another floor rule only by citing another gate's
registration in the workspace's git history that declared that rule, committed
before the amendment and before any of that gate's results (DESIGN.md §6b). Without
one it is refused; it never returns a gate to a rule it was decided under; and a
cited registration rewritten out of history breaks `verify`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _bronte import as_shipped, patch_scoring, scored_workspace
from _workspace import git, register_prospective, run_cli, tree_snapshot

REASON = "the global floor let an unshipped arm fail the shipped one"


@pytest.fixture
def compose_bytes(compose_fixture: Path) -> bytes:
    return as_shipped(compose_fixture)


@pytest.fixture
def bare(tmp_path: Path, compose_bytes: bytes, monkeypatch: pytest.MonkeyPatch) -> Path:
    """lv-bronte scored under global and shipped, with NO other gate registered."""
    patch_scoring(monkeypatch)
    return scored_workspace(tmp_path / "ws", compose_bytes, ship=True, amend=False, prospective=False)


def _amend(root: Path, *args: str) -> tuple[int, str, str]:
    return run_cli("amend", "lv-bronte", "--rule", "pairwise-max-spread", "--reason", REASON, *args,
                   "-C", str(root))


def _registration(root: Path, gate: str) -> tuple[str, str]:
    """(the commit that registered `gate`, its spec sha256), from git and the record."""
    commit = git(root, "log", "-n", "1", "--format=%H", "--", f"preregistrations/{gate}.registration.json").strip()
    record = json.loads((root / "preregistrations" / f"{gate}.registration.json").read_text())
    return commit, record["spec_sha256"]


def test_amend_without_a_prospective_registration_is_refused_and_writes_nothing(bare: Path) -> None:
    before = tree_snapshot(bare)
    code, out, err = _amend(bare)
    assert code == 2, out + err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "no prospective registration of pairwise-max-spread" in err
    assert "register such a gate first" in err and "--registered-in GATE" in err
    assert tree_snapshot(bare) == before


def test_amend_cites_the_registration_in_all_three_artifacts(bare: Path) -> None:
    register_prospective(bare, "lv-hemingway", "pairwise-max-spread")
    commit, spec_sha = _registration(bare, "lv-hemingway")
    code, out, err = _amend(bare)
    assert code == 0, err
    assert f"cites: pairwise-max-spread was registered prospectively for lv-hemingway: commit {commit} (" in out
    record = (bare / "gates/lv-bronte.md").read_text()
    assert (f"**Prospective registration cited.** `pairwise-max-spread` was declared the deciding floor rule by gate "
            f"`lv-hemingway`, registered in commit `{commit}`") in record
    assert f"spec sha256 `{spec_sha}`" in record
    readme = (bare / "adapters/lv-bronte-4b-v1/README.md").read_text()
    assert (f"Cites the prospective registration of `pairwise-max-spread` for gate `lv-hemingway`: commit `{commit}`, "
            f"spec sha256 `{spec_sha}`.") in readme
    compose = (bare / "deploy/compose.yaml").read_text()
    assert (f"#   cites: pairwise-max-spread registered for lv-hemingway, commit {commit}, "
            f"spec sha256 {spec_sha}") in compose
    row = json.loads((bare / "runs/lv-bronte/amendments.jsonl").read_text().splitlines()[-1])
    assert row["citation"]["gate"] == "lv-hemingway" and row["citation"]["commit"] == commit
    assert row["citation"]["spec_sha256"] == spec_sha and row["citation"]["rule"] == "pairwise-max-spread"
    code, out, err = run_cli("verify", "lv-bronte", "-C", str(bare))
    assert code == 0, out + err
    assert f"citation: entry 3 cites lv-hemingway's registration of pairwise-max-spread (commit {commit}," in out


def test_a_gate_registered_under_another_rule_is_not_a_prospective_registration(bare: Path) -> None:
    register_prospective(bare, "lv-dickens", "global-max-spread")
    before = tree_snapshot(bare)
    code, _, err = _amend(bare)
    assert code == 2 and "no prospective registration of pairwise-max-spread" in err
    assert "lv-dickens's registration (commit" in err and "declares global-max-spread, not pairwise-max-spread" in err
    code, _, err = _amend(bare, "--registered-in", "lv-dickens")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--registered-in lv-dickens cannot be cited" in err and "declares global-max-spread" in err
    code, _, err = _amend(bare, "--registered-in", "lv-nowhere")
    assert code == 2 and "no registration of lv-nowhere in this workspace's git history" in err
    code, _, err = _amend(bare, "--registered-in", "lv-bronte")
    assert code == 2 and "lv-bronte is the gate being amended" in err
    assert tree_snapshot(bare) == before


def test_registered_in_names_the_gate_among_several(bare: Path) -> None:
    register_prospective(bare, "lv-austen", "pairwise-max-spread")
    register_prospective(bare, "lv-hemingway", "pairwise-max-spread")
    commit, _ = _registration(bare, "lv-hemingway")
    code, out, err = _amend(bare, "--registered-in", "lv-hemingway")
    assert code == 0, err
    assert f"for lv-hemingway: commit {commit} (" in out
    assert f"by gate `lv-hemingway`, registered in commit `{commit}`" in (bare / "gates/lv-bronte.md").read_text()


def test_found_automatically_the_first_registration_in_history_is_cited(bare: Path) -> None:
    register_prospective(bare, "lv-austen", "pairwise-max-spread")
    register_prospective(bare, "lv-hemingway", "pairwise-max-spread")
    commit, _ = _registration(bare, "lv-austen")
    code, out, err = _amend(bare)
    assert code == 0, err
    assert f"for lv-austen: commit {commit} (" in out


def test_a_registration_made_after_that_gates_results_is_not_prospective(bare: Path) -> None:
    register_prospective(bare, "lv-hemingway", "pairwise-max-spread")
    # lv-hemingway's numbers are dated before its registration commit (a hand-made, backdated commit):
    run = bare / "runs" / "lv-hemingway"
    run.mkdir(parents=True)
    (run / "generations.jsonl").write_text(json.dumps({"arm": "base", "seed": 101, "prompt_id": "0", "text": "x",
                                                       "time": "2026-01-01T00:00:00.000000Z"}) + "\n")
    before = tree_snapshot(bare)
    code, _, err = _amend(bare)
    assert code == 2
    assert "lv-hemingway has results from 2026-01-01T00:00:00Z, before its registration commit" in err
    assert tree_snapshot(bare) == before


def test_a_registration_committed_after_the_amendment_is_not_cited(bare: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    register_prospective(bare, "lv-hemingway", "pairwise-max-spread")  # committed now
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1790000000")  # the amendment dated 2026-09-21: before that commit
    before = tree_snapshot(bare)
    code, _, err = _amend(bare)
    assert code == 2
    assert "was committed after this amendment (2026-09-21T" in err
    assert tree_snapshot(bare) == before


def test_an_amendment_never_returns_a_gate_to_a_rule_it_was_decided_under(bare: Path) -> None:
    register_prospective(bare, "lv-hemingway", "pairwise-max-spread")
    assert _amend(bare)[0] == 0
    register_prospective(bare, "lv-dickens", "global-max-spread")  # a prospective registration of global exists
    before = tree_snapshot(bare)
    code, _, err = run_cli("amend", "lv-bronte", "--rule", "global-max-spread", "--reason", "back again",
                           "-C", str(bare))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert ("lv-bronte was already decided under global-max-spread@1 (now pairwise-max-spread): an amendment never "
            "returns a gate to a rule it was decided under") in err
    assert tree_snapshot(bare) == before


def test_verify_fails_when_the_cited_registration_is_rewritten_out_of_history(bare: Path) -> None:
    register_prospective(bare, "lv-hemingway", "pairwise-max-spread")
    commit, _ = _registration(bare, "lv-hemingway")
    assert _amend(bare)[0] == 0
    git(bare, "add", "-A")
    git(bare, "commit", "-q", "-m", "lv-bronte amended")
    code, out, err = run_cli("verify", "lv-bronte", "-C", str(bare))
    assert code == 0, out + err
    # History rewritten: the same files, but lv-hemingway's registration commit is no longer an ancestor.
    squashed = git(bare, "commit-tree", "HEAD^{tree}", "-p", f"{commit}^", "-m", "squashed").strip()
    git(bare, "reset", "-q", "--soft", squashed)
    code, out, err = run_cli("verify", "lv-bronte", "-C", str(bare))
    assert code == 1, out + err
    assert (f"citation BROKEN: entry 3's cited registration no longer holds: lv-hemingway's registration commit "
            f"{commit[:12]} is not in this workspace's git history") in out
    assert "cited registration no longer holds" in err and len(err.strip().splitlines()) == 1

