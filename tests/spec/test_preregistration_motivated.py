"""Pre-registration against a motivated user: side paths that must end refused, or labelled on the record.

Each test walks a short path a person who wants a different verdict could take on a scored lv-bronte gate
(registered under global-max-spread, which ships nothing): edit the spec and its registration record, look
at numbers before registering a rule, score without git, delete the run data and re-register with more
seeds, edit the run directory's copies. What `score`, `amend`, `verify` and the record then say is the
guarantee (docs/concepts.md, "What pre-registration guarantees, and against whom").
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from helpers.bronte import bronte_workspace, generations, write_jsonl
from helpers.workspace import git, register_prospective, run_cli

from voicegate._hashing import sha256_json

GATE = "lv-bronte"
RECORD = "gates/lv-bronte.md"
SPEC = "preregistrations/lv-bronte.yaml"
REG = "preregistrations/lv-bronte.registration.json"


COMPOSE = b"""services:
  vllm:
    command:
      - --lora-modules
      - lv-bronte=/adapters/lv-bronte-4b-v1/ckpt475
"""


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Registered under global-max-spread, 360 generations imported, nothing scored, nothing else registered."""
    root = bronte_workspace(tmp_path_factory.mktemp("motivated") / "ws", COMPOSE, prospective=False)
    source = write_jsonl(root / "lv-bronte-360.jsonl", generations())
    done = run_cli("import", GATE, str(source), "-C", str(root))
    assert done.code == 0, done.stderr
    return root


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory, imported: Path) -> Path:
    root = tmp_path_factory.mktemp("scored") / "ws"
    shutil.copytree(imported, root, symlinks=True)
    done = run_cli("score", GATE, "-C", str(root))
    assert done.code == 0, done.stderr
    assert "Ships (the rule's recommendation):** none" in (root / RECORD).read_text(encoding="utf-8")
    return root


def _copy(src: Path, tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(src, root, symlinks=True)
    return root


def _files(root: Path) -> dict[str, bytes]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and ".git" not in p.parts and ".cache" not in p.parts:
            out[p.relative_to(root).as_posix()] = p.read_bytes()
    return out


def _switch_rule_in_place(root: Path) -> None:
    """Scenario 1: the spec's rule and the registration record's spec and hash rewritten to match."""
    spec = yaml.safe_load((root / SPEC).read_text(encoding="utf-8"))
    spec["floor"] = {"rule": "pairwise-max-spread"}
    (root / SPEC).write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    reg = json.loads((root / REG).read_text(encoding="utf-8"))
    reg.update(spec=spec, spec_sha256=sha256_json(spec), deciding_rule="pairwise-max-spread")
    (root / REG).write_text(json.dumps(reg, indent=2, sort_keys=True) + "\n", encoding="utf-8")


# -- 1. the gate's own rule changed after its numbers -------------------------------------------------------------


@pytest.mark.parametrize("how", ["uncommitted", "committed as a tweak"])
def test_a_rule_edited_into_the_spec_and_its_record_is_refused(scored: Path, tmp_path: Path, how: str) -> None:
    root = _copy(scored, tmp_path)
    _switch_rule_in_place(root)
    if how != "uncommitted":
        git(root, "commit", "-q", "-am", "tweak")
    before = _files(root)
    for command in (("score", GATE), ("score", GATE, "--dry-run"), ("ship", GATE, "ckpt475", "--reason", "why not"),
                    ("report", GATE)):
        done = run_cli(*command, "-C", str(root))
        assert done.code == 2, (command, done.stdout, done.stderr)
        assert done.stderr.count("\n") == 1, done.stderr
        assert f"{REG} is not the record `voicegate register` committed at " in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert _files(root) == before  # nothing appended anywhere, not even to the run directory


def test_a_registration_forged_with_registers_message_is_refused_and_its_score_entry_is_broken(
        scored: Path, tmp_path: Path) -> None:
    root = _copy(scored, tmp_path)
    _switch_rule_in_place(root)
    git(root, "add", SPEC, REG)
    git(root, "commit", "-q", "-m", f"voicegate: register {GATE}")  # what register would have written
    done = run_cli("score", GATE, "-C", str(root))
    assert done.code == 2, done.stdout
    assert "numbers were recorded under its registration at commit" in done.stderr
    assert "does not supersede it" in done.stderr
    # An older voicegate (or a hand-driven library call) that appended anyway: verify names the entry.
    from voicegate.artifacts import record_score
    from voicegate.scoring import score_gate
    from voicegate.spec import Registration, load_spec

    spec = load_spec(root, GATE)
    commit = git(root, "rev-parse", "HEAD").strip()
    forged = Registration(root / REG, json.loads((root / REG).read_text(encoding="utf-8")), commit)
    from voicegate.run import read_generations

    result = score_gate(spec, read_generations(spec.generations_path), cache_dir=spec.run.cache,
                        rules=forged.rules)
    record_score(spec, forged, result, None)
    assert "## Score — " in (root / RECORD).read_text(encoding="utf-8").split("rule global-max-spread@1")[-1]
    done = run_cli("verify", GATE, "-C", str(root))
    assert done.code == 1, done.stdout
    assert ("score entry 2 is under spec sha256 " in done.stdout
            and "the design was changed after its numbers" in done.stdout), done.stdout


# -- 2. numbers seen are numbers anchored ----------------------------------------------------------------------------


def test_a_dry_run_anchors_the_numbers_so_a_rule_registered_after_it_is_post_hoc(imported: Path,
                                                                                  tmp_path: Path) -> None:
    root = _copy(imported, tmp_path)
    done = run_cli("score", GATE, "--dry-run", "-C", str(root))
    assert done.code == 0, done.stderr
    head = git(root, "rev-parse", "HEAD").strip()
    record = (root / RECORD).read_text(encoding="utf-8")
    assert "## Numbers first shown — " in record and "by `voicegate score --dry-run`" in record
    assert f"numbers first recorded at workspace commit `{head}`" in record
    assert f"{RECORD}: appended entry 1 (numbers first shown)" in done.stdout
    assert not (root / "runs" / GATE / "scores.json").exists()  # still a dry run: no verdict, no scores
    assert not (root / "adapters" / "lv-bronte-4b-v1" / "README.md").read_text(encoding="utf-8").count("voicegate:")
    again = run_cli("score", GATE, "--dry-run", "-C", str(root))
    assert again.code == 0 and "appended" not in again.stdout  # anchored once
    # Having seen them: a dummy gate registered under the rule that would ship, then the real score.
    register_prospective(root, "lv-dummy", "pairwise-max-spread")
    assert run_cli("score", GATE, "-C", str(root)).code == 0
    record = (root / RECORD).read_text(encoding="utf-8")
    assert f"numbers first recorded at workspace commit `{head}` (HEAD when they were first shown" in record
    before = _files(root)
    done = run_cli("amend", GATE, "--rule", "pairwise-max-spread", "--reason", "the global floor is one seed",
                   "--registered-in", "lv-dummy", "-C", str(root))
    assert done.code == 2, done.stdout
    assert "a rule chosen after the numbers is a post-hoc correction" in done.stderr
    assert _files(root) == before
    done = run_cli("amend", GATE, "--rule", "pairwise-max-spread", "--reason", "the global floor is one seed",
                   "--registered-in", "lv-dummy", "--post-hoc", "-C", str(root))
    assert done.code == 0, done.stderr
    assert "**Post-hoc correction cited.**" in (root / RECORD).read_text(encoding="utf-8")
    done = run_cli("verify", GATE, "-C", str(root))
    assert done.code == 0, done.stdout + done.stderr
    assert "is a POST-HOC correction: it cites lv-dummy's registration" in done.stdout


def test_calibrate_on_the_gate_anchors_its_numbers_too(imported: Path, tmp_path: Path) -> None:
    root = _copy(imported, tmp_path)
    done = run_cli("calibrate", GATE, "--seeds", "2", "--draws", "20", "-C", str(root))
    assert done.code == 0, done.stderr
    record = (root / RECORD).read_text(encoding="utf-8")
    assert "by `voicegate calibrate`" in record
    assert f"commit `{git(root, 'rev-parse', 'HEAD').strip()}`" in record
    assert run_cli("verify", GATE, "-C", str(root)).code == 0


# -- 3. no git, no recorded verdict ---------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["GIT_DIR elsewhere", "git off PATH"])
@pytest.mark.parametrize("command", [("score",), ("score", "--dry-run"), ("calibrate", "--seeds", "2")])
def test_without_git_numbers_are_neither_shown_nor_recorded(imported: Path, tmp_path: Path, how: str,
                                                             command: tuple[str, ...]) -> None:
    root = _copy(imported, tmp_path)
    before = _files(root)
    if how == "git off PATH":
        bare = tmp_path / "bin"
        bare.mkdir()
        env = {"PATH": str(bare)}
    else:
        env = {"GIT_DIR": str(tmp_path / "nonexistent")}
    done = run_cli(command[0], GATE, *command[1:], "-C", str(root), env=env)
    assert done.code == 2, done.stdout
    assert done.stdout == ""  # not a number shown
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "a gate's registered spec is the one git holds at its registration commit" in done.stderr
    assert ("git is not on PATH" if how == "git off PATH" else "is not a git work tree") in done.stderr
    assert _files(root) == before


# -- 4. every design of a gate is on its record -----------------------------------------------------------------------


def test_more_seeds_after_a_fail_is_a_follow_up_design_on_the_record(scored: Path, tmp_path: Path) -> None:
    root = _copy(scored, tmp_path)
    first = git(root, "log", "-1", "--format=%H", "--", REG).strip()
    numbers = git(root, "rev-parse", "HEAD").strip()
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the record")
    shutil.rmtree(root / "runs" / GATE)  # the run data, gone
    spec = yaml.safe_load((root / SPEC).read_text(encoding="utf-8"))
    spec["seeds"] = [*spec["seeds"], 404, 505]
    (root / SPEC).write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    done = run_cli("register", GATE, "-C", str(root))
    assert done.code == 2 and "already registered" in done.stderr  # not without --supersede
    done = run_cli("register", GATE, "--supersede", "-C", str(root))
    assert done.code == 0, done.stderr
    assert "follow-up design of lv-bronte" in done.stdout, done.stdout
    reg = json.loads((root / REG).read_text(encoding="utf-8"))
    assert reg["follows"] == [{"gate": GATE, "why": "re-registered after its numbers were recorded",
                               "registration_commit": first, "spec_sha256": reg["supersedes"]["spec_sha256"],
                               "numbers_at": numbers, "verdict": "ships none under global-max-spread@1"}]
    rows = [dict(r, seed=s) for s in (404, 505) for r in generations() if r["seed"] == 101]
    source = write_jsonl(root / "more.jsonl", generations() + rows)
    assert run_cli("import", GATE, str(source), "-C", str(root)).code == 0
    done = run_cli("score", GATE, "-C", str(root))
    assert done.code == 0, done.stderr
    record = (root / RECORD).read_text(encoding="utf-8")
    entry = record[record.rindex("## Score — "):]
    assert (f"**Follow-up design.** This registration follows lv-bronte's earlier design (registration commit "
            f"`{first}`") in entry
    assert f"its numbers were first recorded at commit `{numbers}`" in entry
    assert "its record's verdict was: ships none under global-max-spread@1" in entry
    assert f"numbers first recorded at workspace commit `{numbers}`" in entry  # the first design's order holds
    done = run_cli("verify", GATE, "-C", str(root))
    assert done.code == 0, done.stdout + done.stderr
    assert ("2 score entries under 2 designs: each spec sha256 is the one git holds at its registration commit, "
            "each later design a follow-up that supersedes the one before") in done.stdout


# -- 5. the run directory is a cache, never evidence -------------------------------------------------------------


def test_a_note_added_to_the_run_directory_is_not_on_the_record(scored: Path, tmp_path: Path) -> None:
    root = _copy(scored, tmp_path)
    notes = root / "runs" / GATE / "notes.jsonl"
    notes.write_text(json.dumps({"time": "2026-12-01T00:00:00Z", "text": "the floor was known to be wrong"}) + "\n",
                     encoding="utf-8")
    done = run_cli("verify", GATE, "-C", str(root))
    assert done.code == 1
    assert "run data BROKEN: notes.jsonl (the run's copy) differs from the record's chained entries" in done.stdout
    register_prospective(root, "lv-hemingway", "pairwise-max-spread")
    done = run_cli("amend", GATE, "--rule", "pairwise-max-spread", "--reason", "one seed sets the global floor",
                   "--post-hoc", "-C", str(root))
    assert done.code == 0, done.stderr
    entry = (root / RECORD).read_text(encoding="utf-8").split("## Amendment — ")[-1]
    assert "the floor was known to be wrong" not in entry
    assert "No note on the record put the defect down before this correction" in entry


def test_post_hoc_status_dropped_from_the_run_directory_is_broken_and_the_report_keeps_it(
        scored: Path, tmp_path: Path) -> None:
    root = _copy(scored, tmp_path)
    register_prospective(root, "lv-hemingway", "pairwise-max-spread")
    done = run_cli("amend", GATE, "--rule", "pairwise-max-spread", "--reason", "one seed sets the global floor",
                   "--post-hoc", "-C", str(root))
    assert done.code == 0, done.stderr
    path = root / "runs" / GATE / "amendments.jsonl"
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        for key in ("post_hoc", "numbers_at", "after_numbers"):
            row["citation"].pop(key)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    done = run_cli("verify", GATE, "-C", str(root))
    assert done.code == 1
    assert "run data BROKEN: amendments.jsonl (the run's copy) differs from the record's chained entries" in done.stdout
    done = run_cli("report", GATE, "-C", str(root))
    assert done.code == 0, done.stderr
    page = (root / "runs" / GATE / "report.html").read_text(encoding="utf-8")
    assert "the prospective registration the amendment cites" not in page
    assert "post-hoc" in page.lower()


def test_deleting_the_run_directory_changes_nothing_verify_or_an_amendment_says(scored: Path, tmp_path: Path) -> None:
    root = _copy(scored, tmp_path)
    assert run_cli("note", GATE, "--text", "one seed of ckpt925 sets the global floor; left alone",
                   "-C", str(root)).code == 0
    (root / "runs" / GATE / "notes.jsonl").unlink()  # the cache of it
    done = run_cli("verify", GATE, "-C", str(root))
    assert done.code == 1 and "notes.jsonl (the run's copy) differs" in done.stdout
    register_prospective(root, "lv-hemingway", "pairwise-max-spread")
    done = run_cli("amend", GATE, "--rule", "pairwise-max-spread", "--reason", "one seed sets the global floor",
                   "--post-hoc", "-C", str(root))
    assert done.code == 0, done.stderr
    entry = (root / RECORD).read_text(encoding="utf-8").split("## Amendment — ")[-1]
    noted = "Noted on the record before this correction: “one seed of ckpt925 sets the global floor; left alone”"
    assert noted in entry


# -- 6. the smaller findings ----------------------------------------------------------------------------------------


def test_a_hand_made_registration_of_a_spec_register_refuses_is_not_citable(scored: Path, tmp_path: Path) -> None:
    root = _copy(scored, tmp_path)
    spec = {"gate": "lv-dummy", "floor": {"rule": "pairwise-max-spread"}}
    (root / "preregistrations" / "lv-dummy.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    record = {"gate": "lv-dummy", "spec": spec, "spec_sha256": sha256_json(spec), "registered_at":
              "2026-12-02T00:00:00Z", "files": {}, "deciding_rule": "pairwise-max-spread"}
    (root / "preregistrations" / "lv-dummy.registration.json").write_text(json.dumps(record), encoding="utf-8")
    git(root, "add", "preregistrations/lv-dummy.yaml", "preregistrations/lv-dummy.registration.json")
    git(root, "commit", "-q", "-m", "voicegate: register lv-dummy")
    done = run_cli("amend", GATE, "--rule", "pairwise-max-spread", "--reason", "one seed sets the global floor",
                   "--registered-in", "lv-dummy", "--post-hoc", "-C", str(root))
    assert done.code == 2, done.stdout
    assert "--registered-in lv-dummy cannot be cited: not a spec `voicegate register` accepts:" in done.stderr


def test_replace_refs_never_reach_voicegates_git(tmp_path: Path) -> None:
    from voicegate.spec import git as vg_git

    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "commit", "-q", "--allow-empty", "-m", "real")
    real = git(root, "rev-parse", "HEAD").strip()
    git(root, "commit", "-q", "--allow-empty", "-m", "fake")
    fake = git(root, "rev-parse", "HEAD").strip()
    git(root, "replace", real, fake)
    assert git(root, "log", "-1", "--format=%s", real).strip() == "fake"  # git itself honours the replace ref
    assert vg_git(root, "log", "-1", "--format=%s", real) == "real"


def test_verifys_time_after_the_numbers_runs_from_the_recorded_score(imported: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    root = _copy(imported, tmp_path)
    epoch = 1796169600 + 3600  # an hour after the workspace's own commits: not where the span starts
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(epoch))
    assert run_cli("score", GATE, "-C", str(root)).code == 0
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(epoch + 90))
    register_prospective(root, "lv-hemingway", "pairwise-max-spread")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(epoch + 120))
    done = run_cli("amend", GATE, "--rule", "pairwise-max-spread", "--reason", "one seed sets the global floor",
                   "--post-hoc", "-C", str(root))
    assert done.code == 0, done.stderr
    done = run_cli("verify", GATE, "-C", str(root))
    assert done.code == 0, done.stdout
    assert "registered 1 commit(s) / 1.5 min after lv-bronte's numbers" in done.stdout, done.stdout


def test_an_amendment_never_returns_to_a_rule_the_record_holds_whatever_the_run_directory_says(
        scored: Path, tmp_path: Path) -> None:
    root = _copy(scored, tmp_path)
    register_prospective(root, "lv-hemingway", "pairwise-max-spread")
    register_prospective(root, "lv-austen", "welch-t")
    for rule in ("pairwise-max-spread", "welch-t"):
        done = run_cli("amend", GATE, "--rule", rule, "--reason", "one seed sets the global floor", "--post-hoc",
                       "-C", str(root))
        assert done.code == 0, done.stderr
    # The run directory forgets that the gate was ever decided under pairwise-max-spread ...
    (root / "runs" / GATE / "amendments.jsonl").unlink()
    state = json.loads((root / "runs" / GATE / "recorded.json").read_text(encoding="utf-8"))
    state["results"] = {k: v for k, v in state["results"].items() if k != "pairwise-max-spread"}
    (root / "runs" / GATE / "recorded.json").write_text(json.dumps(state), encoding="utf-8")
    before = _files(root)
    done = run_cli("amend", GATE, "--rule", "pairwise-max-spread", "--reason", "back to the rule that shipped",
                   "--registered-in", "lv-hemingway", "--post-hoc", "-C", str(root))
    assert done.code == 2, done.stdout  # ... the record does not
    assert "an amendment never returns a gate to a rule it was decided under" in done.stderr
    assert _files(root) == before


def test_the_same_weights_under_a_new_gate_name_is_a_follow_up_design(tmp_path: Path) -> None:
    from helpers.bronte import bronte_spec

    spec = bronte_spec()
    for arm in spec["arms"][1:]:
        arm["adapter_path"] = f"weights/{arm['name']}"
    root = tmp_path / "ws"
    for name in ("ckpt475", "ckpt925"):
        (root / "weights" / name).mkdir(parents=True)
        (root / "weights" / name / "adapter_model.safetensors").write_bytes(name.encode() * 64)
    bronte_workspace(root, COMPOSE, spec=spec, prospective=False)
    assert json.loads((root / REG).read_text(encoding="utf-8"))["adapter_weights"]["ckpt475"]["sha256"]
    source = write_jsonl(root / "lv-bronte-360.jsonl", generations())
    assert run_cli("import", GATE, str(source), "-C", str(root)).code == 0
    assert run_cli("score", GATE, "-C", str(root)).code == 0
    numbers = git(root, "rev-parse", "HEAD").strip()
    again = dict(spec, gate="lv-bronte-again", floor={"rule": "pairwise-max-spread"},
                 artifacts={"record": "gates/lv-bronte-again.md"})
    (root / "preregistrations" / "lv-bronte-again.yaml").write_text(yaml.safe_dump(again, sort_keys=False),
                                                                    encoding="utf-8")
    done = run_cli("register", "lv-bronte-again", "-C", str(root))
    assert done.code == 0, done.stderr
    assert "a follow-up design of lv-bronte (ckpt475, ckpt925's weights were gated there (same sha256)" in done.stdout
    follows = json.loads((root / "preregistrations" / "lv-bronte-again.registration.json").read_text())["follows"]
    assert [(f["gate"], f["numbers_at"], f["verdict"]) for f in follows] == [
        (GATE, numbers, "ships none under global-max-spread@1")]
    assert run_cli("import", "lv-bronte-again", str(source), "-C", str(root)).code == 0
    assert run_cli("score", "lv-bronte-again", "-C", str(root)).code == 0
    record = (root / "gates" / "lv-bronte-again.md").read_text(encoding="utf-8")
    assert "**Follow-up design.** This registration follows lv-bronte's earlier design" in record
