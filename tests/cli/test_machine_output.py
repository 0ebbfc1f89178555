"""Output CI can read. `--json` on register, generate, score, amend, ship, verify and
report (one document on stdout, errors too), and `--junit FILE` on score and verify.

JSON is parsed with `json`; each JUnit file is validated against the JUnit schema vendored beside the
tests (tests/helpers/junit-10.xsd, through `_junit`). Every CLI run is in this process (`cli`).
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
from pathlib import Path

import pytest
from helpers.junit import cases as _cases
from helpers.junit import junit as _junit10
from helpers.junit import properties
from helpers.workspace import (
    GATE,
    Templates,
    author_like,
    carrier_like,
    cli,
    copier,
    gate_spec,
    git,
    registered_workspace,
    run_cli,
    scoring_workspace,
    voice_rows,
    write_rows,
)


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Templates:
    return Templates(tmp_path_factory.mktemp("templates"))


def _scored(root: Path) -> None:
    """The constructed gate (cand: the author's style; other: copies the training text), scored once."""
    scoring_workspace(root)
    write_rows(root, voice_rows({"base": carrier_like("b"), "cand": author_like("c"), "other": copier}))
    done = cli(root, "score", GATE)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def scored(templates: Templates, tmp_path: Path) -> Path:
    return templates.copy("scored", _scored, tmp_path / "ws")


def test_score_json_and_junit_parse_and_give_the_outcome_then_each_candidate_under_the_deciding_rule(
        scored: Path, tmp_path: Path) -> None:
    report = tmp_path / "ci" / "score.xml"
    report.parent.mkdir()
    done = cli(scored, "score", GATE, "--json", "--junit", str(report))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # the whole of stdout is one document
    assert result["gate"] == GATE and result["ships"] == "cand" and result["rule"] == "pairwise-max-spread"
    assert result["registered_rule"] == "pairwise-max-spread" and result["amendment"] is None
    root = _junit10(report)
    other = next(a for a in result["arms"] if a["name"] == "other")
    assert other["voice"]["pairwise-max-spread"] == "PASS" and other["copying"] == "COPIED"
    # cand ships; other copies, which is why it does not ship: not the gate's failure, so skipped, not red
    assert _cases(root) == [
        (f"voicegate.{GATE}", "gate outcome", "passed"),
        (f"voicegate.{GATE}.cand", "voice under pairwise-max-spread", "passed"),
        (f"voicegate.{GATE}.cand", "copying", "passed"), (f"voicegate.{GATE}.cand", "damage", "passed"),
        (f"voicegate.{GATE}.other", "voice under pairwise-max-spread", "passed"),
        (f"voicegate.{GATE}.other", "copying", "skipped"), (f"voicegate.{GATE}.other", "damage", "passed")]
    assert root.get("failures") == "0"
    cand = next(a for a in result["arms"] if a["name"] == "cand")
    props = properties(root)
    # cand FAILs under welch-t (two seeds: t(0.99, ~1 df) is huge): shown, never a failure
    assert props["shown, not deciding: cand voice under welch-t"] == (
        f"VOICE FAIL under welch-t: delta_cb {cand['delta_cb']:+.3f} vs floor {cand['floors']['welch-t']:.3f} "
        f"(ratio {cand['ratios']['welch-t']:.2f}x)")
    assert props["ships"] == "cand" and props["rule"] == "pairwise-max-spread" and props["amendment"] == "none"
    assert props["signature"] == result["signature_text"]
    # no timings: the same result, the same bytes (and --dry-run still writes the file the user named)
    first = report.read_bytes()
    report.unlink()
    assert cli(scored, "score", GATE, "--dry-run", "-q", "--junit", str(report)).returncode == 0
    assert report.read_bytes() == first and sorted(report.parent.iterdir()) == [report]


def test_junit_skips_inconclusive_and_fails_not_specific_only_when_nothing_ships(scored: Path) -> None:
    """The specificity axis: the scored gate's candidate given a specificity verdict under three rules."""
    import dataclasses

    from voicegate.cli._machine import score_cases
    from voicegate.gate import GateState
    from voicegate.scoring import GateResult
    from voicegate.scoring._result import Specificity

    result = GateResult.from_json(json.loads((scored / "runs" / GATE / "scores.json").read_text(encoding="utf-8")))
    axis = Specificity(decides=True, verdict={"r": "INCONCLUSIVE", "s": "NOT-SPECIFIC", "t": "SPECIFIC"},
                       margin=-0.01, nearest="Austen", binding={"r": "Austen", "s": "Austen", "t": "Austen"},
                       floors={"r": 0.07, "s": 0.005, "t": 0.001}, margins={"Austen": -0.01})
    cand = dataclasses.replace(result.candidate("cand"), specificity=axis)
    said = {}
    for rule in ("r", "s", "t"):
        decided = dataclasses.replace(result, rule=rule, ships=None, arms=(result.arms[0], cand))
        (case,) = [c for c in score_cases(GateState(result=decided, registered=decided))
                   if c.name.startswith("specificity")]
        said[rule] = (case.name, case.outcome, case.message)
    assert said == {
        "r": ("specificity under r", "skipped", "INCONCLUSIVE under r: margin -0.010 over Austen vs floor 0.070"),
        "s": ("specificity under s", "failure", "NOT-SPECIFIC under s: margin -0.010 over Austen vs floor 0.005"),
        "t": ("specificity under t", "passed", "")}
    # while a candidate ships, another's NOT-SPECIFIC is not the gate's failure
    shipping = dataclasses.replace(result, rule="s", ships="cand", arms=(result.arms[0], cand))
    (case,) = [c for c in score_cases(GateState(result=shipping, registered=shipping))
               if c.name.startswith("specificity")]
    assert case.outcome == "skipped" and case.message.endswith("(not shipped: the gate ships cand under s)")


def test_verify_json_and_junit_then_a_broken_chain_is_still_one_document(scored: Path, tmp_path: Path) -> None:
    report = tmp_path / "verify.xml"
    done = cli(scored, "verify", GATE, "--json", "--junit", str(report))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["ok"] is True and doc["gate"] == GATE and doc["workspace"] == str(scored)
    assert [(f["kind"], f["path"], f["ok"], f["entries"]) for f in doc["files"]] == [
        ("record", f"gates/{GATE}.md", True, 1), ("ledger", f"runs/{GATE}/entries.jsonl", True, 1),
        ("registration", f"preregistrations/{GATE}.registration.json", True, 0)]
    assert doc["files"][0]["lines"][0].startswith("entry 1 (") and doc["files"][0]["problem"] is None
    assert _cases(_junit10(report)) == [(f"voicegate.verify.{GATE}", f"record: gates/{GATE}.md", "passed"),
                                        (f"voicegate.verify.{GATE}", f"ledger: runs/{GATE}/entries.jsonl", "passed"),
                                        (f"voicegate.verify.{GATE}",
                                         f"registration: preregistrations/{GATE}.registration.json", "passed")]

    record = scored / "gates" / f"{GATE}.md"
    text = record.read_text(encoding="utf-8")
    record.write_text(text.replace("Author: Test Author", "Author: Someone Else", 1), encoding="utf-8")
    broken = cli(scored, "verify", GATE, "--json", "--junit", str(report))
    assert broken.returncode == 1
    doc = json.loads(broken.stdout)  # the document, not an error object: it says what broke
    assert doc["ok"] is False and doc["files"][0]["ok"] is False
    problem = doc["files"][0]["problem"]
    assert problem and broken.stderr == f"voicegate: gates/{GATE}.md: {problem}\n"
    root = _junit10(report)
    assert _cases(root)[0] == (f"voicegate.verify.{GATE}", f"record: gates/{GATE}.md", "failure")
    assert next(root.iter("failure")).get("message") == f"BROKEN: {problem}"
    # the text output is unchanged by all this
    text = cli(scored, "verify", GATE)
    assert text.returncode == 1 and text.stdout.startswith(f"gates/{GATE}.md (record, {GATE}):\n")


def test_a_junit_file_is_replaced_all_or_nothing(scored: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails at the rename (a full disk) leaves the previous report whole and no temporary."""
    import errno
    import os

    report = tmp_path / "ci" / "verify.xml"
    report.parent.mkdir()
    report.write_text("<previous/>", encoding="utf-8")

    def full_disk(src: str, dst: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    done = cli(scored, "verify", GATE, "--junit", str(report), "--json")
    assert done.returncode == 2
    assert json.loads(done.stdout) == {"error": f"{report}: cannot write (No space left on device); the file is "
                                                "unchanged", "exit": 2}
    assert report.read_text(encoding="utf-8") == "<previous/>" and sorted(report.parent.iterdir()) == [report]


def test_under_json_an_error_is_a_document_on_stdout_with_its_exit_code(scored: Path) -> None:
    def error(*args: str) -> tuple[int, dict, str]:
        done = cli(scored, *args)
        return done.returncode, json.loads(done.stdout), done.stderr

    code, doc, err = error("verify", "lv-nope", "--json")
    assert code == 2 and doc == {"error": err.removeprefix("voicegate: ").rstrip("\n"), "exit": 2}
    assert "lv-nope.yaml: no such spec" in doc["error"]
    assert error("score", GATE, "--json", "--bogus")[:2] == (2, {"error": "No such option: --bogus", "exit": 2})
    assert error("ship", GATE, "cand", "--json")[:2] == (
        2, {"error": "a shipping decision needs --reason: say why, in a sentence", "exit": 2})
    assert error("report", GATE, "--json", "--out", str(scored))[:2] == (
        2, {"error": f"--out {scored} is a directory; give a file name", "exit": 2})
    assert error("verify", GATE, "--json", "--junit", str(scored))[:2] == (
        2, {"error": f"--junit {scored} is a directory; give a file name", "exit": 2})
    code, doc, _ = error("amend", GATE, "--rule", "no-such-rule", "--reason", "a reason here", "--json")
    assert code == 2 and set(doc) == {"error", "exit"} and "no-such-rule" in doc["error"]
    # without --json, errors stay off stdout
    plain = cli(scored, "verify", "lv-nope")
    assert plain.returncode == 2 and plain.stdout == "" and plain.stderr.count("\n") == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_generate_json_a_document_and_an_unreachable_seat_an_error_document(tmp_path: Path) -> None:
    from voicegate.seat import StandinSeat

    gate = "lv-gen"
    with StandinSeat(adapters={f"{gate}-ckpt475": f"/adapters/{gate}/ckpt475"}, token_time=0.001, slots=8) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(gate, url=seat.url))
        done = cli(root, "generate", gate, "--json", "-n", "4")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert (doc["gate"], doc["total"], doc["stored"], doc["generated"]) == (gate, 18, 18, 18)
    assert doc["generations"] == f"runs/{gate}/generations.jsonl" and doc["integrity"]["status"] == "holds"
    assert doc["completion_tokens"] > 0 and doc["tokens_per_s"] > 0 and doc["resume"] == f"voicegate generate {gate}"

    lost = registered_workspace(tmp_path / "lost", gate_spec(gate, url=f"http://127.0.0.1:{_closed_port()}/v1"))
    down = cli(lost, "generate", gate, "--json", "--retries", "2", "--retry-budget", "0.5")
    assert down.returncode == 3
    doc = json.loads(down.stdout)
    assert doc["exit"] == 3 and "connection refused" in doc["error"]
    assert down.stderr == f"voicegate: {doc['error']}\n"


def test_register_json(tmp_path: Path) -> None:
    from helpers.workspace import constructed_spec, make_workspace, text

    root = tmp_path / "ws"
    make_workspace(root, constructed_spec(), corpora={"corpora/held/held.txt": text(800, "h", 0),
                                                      "corpora/train/train.txt": text(800, "t"),
                                                      "corpora/bg/bg1.txt": text(800, "b", 1)})
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "workspace")
    done = cli(root, "register", GATE, "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    record = json.loads((root / doc["record"]).read_text(encoding="utf-8"))
    assert doc["gate"] == GATE and doc["spec"] == f"preregistrations/{GATE}.yaml"
    assert doc["commit"] == git(root, "rev-parse", "HEAD").strip()
    assert doc["spec_sha256"] == record["spec_sha256"] and re.fullmatch(r"[0-9a-f]{64}", doc["spec_sha256"])
    assert doc["spec_file_sha256"] == hashlib.sha256((root / doc["spec"]).read_bytes()).hexdigest()
    assert doc["files"] == len(record["files"]) and doc["deciding_rule"] == "pairwise-max-spread"
    assert doc["supersedes"] is None and doc["design"][0].startswith("design: ")


def test_ship_and_amend_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compose_fixture: Path) -> None:
    from helpers.bronte import as_shipped, bronte_workspace, generations, patch_scoring, write_jsonl

    patch_scoring(monkeypatch)
    root = bronte_workspace(tmp_path / "ws", as_shipped(compose_fixture))
    assert run_cli("import", "lv-bronte", write_jsonl(tmp_path / "g.jsonl", generations()), cwd=root).code == 0
    assert run_cli("score", "lv-bronte", cwd=root).code == 0
    # nothing ships under global-max-spread: --strict exits 1 after the document, which stays the only one
    strict = cli(root, "score", "lv-bronte", "--json", "--strict", "--dry-run")
    assert strict.returncode == 1 and json.loads(strict.stdout)["ships"] is None
    assert strict.stderr.endswith("voicegate: lv-bronte: no candidate ships under global-max-spread\n")

    ship = cli(root, "ship", "lv-bronte", "ckpt475", "--reason", "additive, reversible and safety-clean", "--json")
    assert ship.returncode == 0, ship.stderr
    doc = json.loads(ship.stdout)
    assert doc["appended"] is True and doc["artifacts"][:2] == [
        "gates/lv-bronte.md: appended entry 2 (ship)", "adapters/lv-bronte-4b-v1/README.md: appended entry 2 (ship)"]
    assert len(doc["artifacts"]) == 3 and doc["artifacts"][2].startswith("deploy/compose.yaml: ")
    assert doc["decision"]["arm"] == "ckpt475" and doc["decision"]["recommendation"] is None
    assert doc["decision"]["verdicts"]["voice"]["global-max-spread"] == "FAIL"
    assert len(doc["warnings"]) == 1 and ship.stderr == doc["warnings"][0] + "\n"  # shipped against the verdict

    args = ("amend", "lv-bronte", "--rule", "pairwise-max-spread", "--reason",
            "the global floor let an unshipped arm fail the shipped one", "--json")
    done = cli(root, *args)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    amendment = doc["amendment"]
    assert doc["appended"] is True and doc["artifacts"][:2] == [
        "gates/lv-bronte.md: appended entry 3 (amend)", "adapters/lv-bronte-4b-v1/README.md: appended entry 3 (amend)"]
    assert (amendment["rule_from"], amendment["rule_to"], amendment["ships"]) == (
        "global-max-spread", "pairwise-max-spread", "ckpt475")
    assert amendment["citation"]["gate"] == "lv-hemingway" and amendment["citation"]["post_hoc"] is False
    assert [(c["arm"], c["before"], c["after"]) for c in amendment["changes"]] == [
        ("ckpt475", "FAIL", "PASS"), ("ckpt925", "FAIL", "FAIL")]
    again = json.loads(cli(root, *args).stdout)
    assert again["appended"] is False and again["amendment"] == amendment


def test_report_json(scored: Path) -> None:
    done = cli(scored, "report", GATE, "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    page = Path(doc["path"])
    assert doc["gate"] == GATE and page == scored / "runs" / GATE / "report.html"
    assert (doc["bytes"], doc["sha256"]) == (page.stat().st_size, hashlib.sha256(page.read_bytes()).hexdigest())


def test_a_junit_file_never_overwrites_what_voicegate_keeps_nor_a_device(scored: Path, tmp_path: Path) -> None:
    """--junit FILE is written whole: named the gate record (or inside the run directory, or a pipe), it would
    replace it — `verify --junit gates/GATE.md` once left nothing to verify. Each is refused before anything is
    scored or written: exit 2, one line."""
    import os

    record = scored / "gates" / f"{GATE}.md"
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)

    def files() -> dict[str, bytes]:
        return {str(p): p.read_bytes() for p in sorted(scored.rglob("*")) if p.is_file() and ".git" not in p.parts}

    before = files()
    for args, said in (
        (("verify", GATE, "--junit", str(record)), (f"--junit {record} is the record gates/{GATE}.md: voicegate only "
                                                    "appends to it; write the report elsewhere")),
        (("verify", "--junit", str(scored / "runs" / GATE / "entries.jsonl")), "is the ledger "),
        (("verify", "--junit", str(scored / "runs" / GATE / "x.xml")), "is inside a gate's run directory"),
        (("verify", "--junit", str(pipe)), f"--junit {pipe} is not a regular file (a device, a pipe or a socket)"),
        (("score", GATE, "--junit", str(record)), (f"--junit gates/{GATE}.md is the gate record of {GATE}: voicegate "
                                                   "only appends to it; write the report elsewhere")),
        (("score", GATE, "--dry-run", "--junit", str(scored / "runs" / GATE / "generations.jsonl")),
         f"--junit runs/{GATE}/generations.jsonl is inside the gate's run directory"),
        (("score", GATE, "--junit", str(pipe)), "is not a regular file"),
        (("report", GATE, "--out", str(pipe)), f"--out {pipe} is not a regular file"),
    ):
        done = cli(scored, *args)
        assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1, (args, done.stderr)
        assert said in done.stderr, (args, done.stderr)
        assert files() == before, args
    assert pipe.is_fifo()
