"""An amendment cites a registration, and the order is git's history.

An amendment may move a gate to another floor rule only by citing another gate's
registration in the workspace's git history that declared that rule, before any of
that gate's results (DESIGN.md §6b). Without one it is refused; it never returns a
gate to a rule it was decided under; and a cited registration rewritten out of history
breaks `verify`. Order is the repository's history, never a clock: a registration that
is an ancestor of the commit at which this gate's numbers were first recorded is
prospective; one after it is refused unless `--post-hoc`, and is then said to be a
post-hoc correction in every artifact and in `verify`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.bronte import as_shipped, patch_scoring, scored_workspace
from helpers.workspace import git, register_prospective, run_cli, tree_snapshot

REASON = "the global floor let an unshipped arm fail the shipped one"


@pytest.fixture
def compose_bytes(compose_fixture: Path) -> bytes:
    return as_shipped(compose_fixture)


@pytest.fixture
def bare(tmp_path: Path, compose_bytes: bytes, monkeypatch: pytest.MonkeyPatch) -> Path:
    """lv-bronte scored under global and shipped, with NO other gate registered."""
    patch_scoring(monkeypatch)
    return scored_workspace(tmp_path / "ws", compose_bytes, ship=True, amend=False, prospective=False)


@pytest.fixture
def hemingway_ahead(tmp_path: Path, compose_bytes: bytes, monkeypatch: pytest.MonkeyPatch) -> Path:
    """As in the golden case: lv-hemingway registered pairwise right after lv-bronte, before its numbers."""
    patch_scoring(monkeypatch)
    return scored_workspace(tmp_path / "ws", compose_bytes, ship=True, amend=False, prospective=True)


@pytest.fixture
def ahead(tmp_path: Path, compose_bytes: bytes, monkeypatch: pytest.MonkeyPatch) -> Path:
    """lv-bronte scored and shipped after lv-austen and lv-hemingway registered pairwise (prospective for it)."""
    patch_scoring(monkeypatch)
    return scored_workspace(tmp_path / "ws", compose_bytes, ship=True, amend=False, prospective=False,
                            registered_before=(("lv-austen", "pairwise-max-spread"),
                                               ("lv-hemingway", "pairwise-max-spread")))


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


def test_amend_cites_the_registration_in_all_three_artifacts(hemingway_ahead: Path) -> None:
    bare = hemingway_ahead
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


def test_registered_in_names_the_gate_among_several(ahead: Path) -> None:
    bare = ahead
    commit, _ = _registration(bare, "lv-hemingway")
    code, out, err = _amend(bare, "--registered-in", "lv-hemingway")
    assert code == 0, err
    assert f"for lv-hemingway: commit {commit} (" in out
    assert f"by gate `lv-hemingway`, registered in commit `{commit}`" in (bare / "gates/lv-bronte.md").read_text()


def test_found_automatically_the_first_registration_in_history_is_cited(ahead: Path) -> None:
    bare = ahead
    commit, _ = _registration(bare, "lv-austen")
    code, out, err = _amend(bare)
    assert code == 0, err
    assert f"for lv-austen: commit {commit} (" in out


def test_run_data_is_not_evidence_of_order(hemingway_ahead: Path) -> None:
    # what decides a citation is in git. A (backdated) generation in lv-hemingway's git-ignored run
    # directory, or deleting it, changes nothing: the amendment cites the same registration either way.
    run = hemingway_ahead / "runs" / "lv-hemingway"
    run.mkdir(parents=True)
    (run / "generations.jsonl").write_text(json.dumps({"arm": "base", "seed": 101, "prompt_id": "0", "text": "x",
                                                       "time": "2026-01-01T00:00:00.000000Z"}) + "\n")
    commit, _ = _registration(hemingway_ahead, "lv-hemingway")
    code, out, err = _amend(hemingway_ahead)
    assert code == 0, err
    assert f"cites: pairwise-max-spread was registered prospectively for lv-hemingway: commit {commit} (" in out


def test_a_clock_changes_no_order_after_the_numbers(bare: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A registration after the numbers stays post-hoc however the environment dates it.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1789900000")  # 2026-09-20, months before the numbers' commit
    register_prospective(bare, "lv-dummy", "pairwise-max-spread")  # backdated, and still after the numbers
    before = tree_snapshot(bare)
    code, _, err = _amend(bare)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "came 1 commit(s) after lv-bronte's numbers were first recorded" in err and "--post-hoc" in err
    assert tree_snapshot(bare) == before


def test_a_clock_changes_no_order_before_the_numbers(hemingway_ahead: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A registration before the numbers stays prospective even when the amendment is "dated" before its commit.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1790000000")  # 2026-09-21, before any commit of the workspace
    code, out, err = _amend(hemingway_ahead)
    assert code == 0, err
    assert "registered prospectively for lv-hemingway" in out


def test_a_registration_after_the_numbers_is_a_post_hoc_correction_said_everywhere(bare: Path) -> None:
    # score, THEN register a dummy gate under the rule that would pass, then amend.
    register_prospective(bare, "lv-dummy", "pairwise-max-spread")
    commit, spec_sha = _registration(bare, "lv-dummy")
    before = tree_snapshot(bare)
    code, _, err = _amend(bare)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert (f"lv-dummy's registration of pairwise-max-spread (commit {commit[:12]}) came 1 commit(s) after "
            "lv-bronte's numbers were first recorded") in err
    assert "a rule chosen after the numbers is a post-hoc correction; pass --post-hoc" in err
    assert tree_snapshot(bare) == before
    code, out, err = _amend(bare, "--post-hoc")
    assert code == 0, err
    assert f"cites: pairwise-max-spread was registered for lv-dummy AFTER this gate's numbers: commit {commit}" in out
    record = (bare / "gates/lv-bronte.md").read_text()
    anchor = re.search(r"numbers first recorded at workspace commit `([0-9a-f]{40})`", record)
    assert anchor is not None
    assert (f"**Post-hoc correction cited.** `pairwise-max-spread` was declared the deciding floor rule by gate "
            f"`lv-dummy`, registered in commit `{commit}`") in record
    assert f"1 commit(s) AFTER this gate's numbers were first recorded (commit `{anchor.group(1)}`)" in record
    assert "Prospective registration cited" not in record
    readme = (bare / "adapters/lv-bronte-4b-v1/README.md").read_text()
    assert "**Post-hoc correction**, not a pre-registered rule" in readme and "prospective" not in readme
    compose = (bare / "deploy/compose.yaml").read_text()
    assert ("AMENDED — in force: rule pairwise-max-spread, POST-HOC correction of global-max-spread (a rule "
            "registered after the numbers); ships: ckpt475; error rates: not stated\n") in compose
    assert f"spec sha256 {spec_sha}, 1 commit(s) after this gate's numbers (commit {anchor.group(1)})" in compose
    row = json.loads((bare / "runs/lv-bronte/amendments.jsonl").read_text().splitlines()[-1])
    assert row["citation"]["post_hoc"] is True and row["citation"]["after_numbers"] == 1
    code, out, err = run_cli("verify", "lv-bronte", "-C", str(bare))
    assert code == 0, out + err
    assert "entry 3 is a POST-HOC correction: it cites lv-dummy's registration of pairwise-max-spread" in out
    # how far after the numbers (git's count, the commits' own dates) and the reason, as the entry gives it
    assert re.search(r"registered 1 commit\(s\) / [0-9.]+ (s|min|h|d) after lv-bronte's numbers; git still holds it; "
                     rf"the reason given: “{REASON}”", out), out
    # The report's timeline says it too (its events from the stored amendment row, as `report` reads it).
    from voicegate.report._data import Amendment
    from voicegate.report._timeline import _amended

    stored = Amendment.from_json(row)
    event = _amended(stored, stored.result)
    assert event.label == "amended: a POST-HOC correction" and "1 commit(s) AFTER this gate's numbers" in event.text
    prospective = Amendment.from_json({**row, "citation": {**row["citation"], "post_hoc": False}})
    assert _amended(prospective, stored.result).label == "amended citing lv-dummy"


def test_verify_breaks_an_amendment_that_calls_a_later_registration_prospective(bare: Path) -> None:
    from voicegate.artifacts._citations import check_record

    register_prospective(bare, "lv-dummy", "pairwise-max-spread")
    assert _amend(bare, "--post-hoc")[0] == 0
    path = bare / "gates/lv-bronte.md"
    forged = path.read_text().replace("**Post-hoc correction cited.**", "**Prospective registration cited.**")
    path.write_text(forged)
    problems, _ = check_record(bare, "lv-bronte", path)
    assert len(problems) == 1 and "calls lv-dummy's registration of pairwise-max-spread" in problems[0]
    assert "it came after them" in problems[0]


def test_an_amendment_never_returns_a_gate_to_a_rule_it_was_decided_under(hemingway_ahead: Path) -> None:
    bare = hemingway_ahead
    assert _amend(bare)[0] == 0
    register_prospective(bare, "lv-dickens", "global-max-spread")  # a prospective registration of global exists
    before = tree_snapshot(bare)
    code, _, err = run_cli("amend", "lv-bronte", "--rule", "global-max-spread", "--reason", "back again",
                           "-C", str(bare))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert ("lv-bronte was already decided under global-max-spread@1 (now pairwise-max-spread): an amendment never "
            "returns a gate to a rule it was decided under") in err
    assert tree_snapshot(bare) == before


def test_verify_fails_when_the_cited_registration_is_rewritten_out_of_history(hemingway_ahead: Path) -> None:
    bare = hemingway_ahead
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

