"""Acceptance: one gate state, every surface. After each step of a gate's life — score, ship, note, a prospective
amendment, a post-hoc one — the terminal (quiet line and table), `score --json`, `--junit`, the report and the
three artifacts (record, README, compose comment) agree on the rule in force, whether it is a post-hoc
correction, what ships, and each candidate's words under the rule in force. Then the same for a gate with
impostors (its specificity words), and hostile strings give well-formed XML and valid JSON.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers.bronte import as_shipped, bronte_workspace, generations, patch_scoring, write_jsonl
from helpers.junit import cases, junit, properties
from helpers.workspace import register_prospective, run_cli

GATE = "lv-bronte"
RECORD = Path("gates/lv-bronte.md")
README = Path("adapters/lv-bronte-4b-v1/README.md")
COMPOSE = Path("deploy/compose.yaml")


@dataclass(frozen=True)
class Expected:
    rule: str
    amended_from: str | None
    post_hoc: bool

    def how(self) -> str:
        if self.amended_from is None:
            return "as registered"
        if self.post_hoc:
            return f"POST-HOC correction of {self.amended_from} (a rule registered after the numbers)"
        return f"prospective amendment from {self.amended_from}"


def _text(root: Path, rel: Path) -> str:
    return (root / rel).read_text(encoding="utf-8")


def _newest_first_lines(root: Path) -> list[str]:
    """The line each artifact's newest entry leads with, past its heading."""
    out = []
    for rel, heading in ((RECORD, "## "), (README, "### voicegate ")):
        body = re.split(r"^<!-- voicegate:entry .*$", _text(root, rel), flags=re.MULTILINE)[-2]
        lines = [ln for ln in body.splitlines() if ln.strip()]
        first = lines[next(i for i, ln in enumerate(lines) if ln.startswith(heading)) + 1]
        assert first.startswith("**In force:** "), (rel, first)
        out.append(first.removeprefix("**In force:** ").removesuffix("."))
    firsts = [ln for ln in _text(root, COMPOSE).splitlines() if re.match(r"\s*# voicegate \d{4}-", ln)]
    out.append(firsts[-1].split(" — in force: ", 1)[1])
    return out


def _card(page: str, name: str) -> str:
    for m in re.finditer(r'<article class="card [^"]*"[^>]*>(.*?)</article>', page, re.DOTALL):
        if f"<h3><span>{name}</span>" in m.group(1):
            return " ".join(re.sub(r"<[^>]+>", " ", m.group(1)).split())
    raise AssertionError(f"no card for {name}")


def _case_words(root_xml: ET.Element, classname: str, name: str) -> str:
    case = next(c for c in root_xml.iter("testcase") if c.get("classname") == classname and c.get("name") == name)
    said = next((x for x in case if x.tag in ("failure", "skipped")), None)
    if said is not None:
        return said.get("message") or ""
    out = case.find("system-out")
    return "" if out is None else out.text or ""


def check_every_surface(root: Path, tmp: Path, expected: Expected, step: str) -> dict[str, Any]:
    """Every surface after `step`, held to `expected` and to each other; the --json document."""
    xml = tmp / f"{step}.xml"
    done = run_cli("score", GATE, "--json", "--dry-run", "--junit", xml, cwd=root)
    assert done.code == 0, (step, done.stderr)
    doc = json.loads(done.stdout)
    rule, ships = doc["rule"], doc["ships"]
    # --json
    assert (rule, doc["registered_rule"]) == (expected.rule, "global-max-spread"), step
    amendment = doc["amendment"]
    assert (amendment is None) == (expected.amended_from is None), step
    if amendment is not None:
        assert (amendment["rule_from"], amendment["post_hoc"]) == (expected.amended_from, expected.post_hoc), step
    words = {a["name"]: a["voice"][rule] for a in doc["arms"] if a["role"] == "candidate"}
    # the terminal: the quiet line and the table say what ships under the rule in force, and how it came to decide
    quiet = run_cli("score", GATE, "-q", "--dry-run", cwd=root).stdout
    table = run_cli("score", GATE, "--dry-run", cwd=root, env={"COLUMNS": "200"}).stdout
    ship_words = (f"ships: {ships} (VOICE PASS" if ships else f"ships: none (no candidate passes VOICE, COPYING "
                  f"and DAMAGE under {rule})")
    assert quiet.startswith(f"{GATE}: {ship_words}") and ship_words in table, (step, quiet)
    if ships:
        assert f"under {rule}, NOT-COPIED, NO-DAMAGE)" in quiet
    assert ("POST-HOC" in quiet, "POST-HOC" in table) == (expected.post_hoc, expected.post_hoc), step
    assert ("prospective" in quiet) == (expected.amended_from is not None and not expected.post_hoc), step
    # --junit: the gate's outcome, each candidate's VOICE under the rule in force
    root_xml = junit(xml)
    props = properties(root_xml)
    assert (props["rule"], props["ships"]) == (rule, ships or "none"), step
    assert props["amendment"] == ("none" if amendment is None else
                                  "post-hoc correction" if expected.post_hoc else "prospective"), step
    outcome = next(c for c in cases(root_xml) if c[1] == "gate outcome")
    assert outcome[2] == ("passed" if ships else "failure"), step  # red exactly when --strict exits 1
    assert (root_xml.get("failures") == "0") == bool(ships), step
    for name, word in words.items():
        said = _case_words(root_xml, f"voicegate.{GATE}.{name}", f"voice under {rule}")
        assert said.startswith(f"VOICE {word} under {rule}"), (step, name, said)
    # the report: its header's first line, and each candidate's card
    assert run_cli("report", GATE, cwd=root).code == 0
    page = _text(root, Path("runs") / GATE / "report.html")
    header = page[page.index("</h1>"):page.index("</header>")]
    first = " ".join(re.sub(r"<[^>]+>", "", header.split("</p>", 1)[0]).split())
    standing = f"rule {rule}, {expected.how()}; ships: {ships or 'none'}; error rates: not stated"
    assert first == f"In force: {standing}.", (step, first)
    for name, word in words.items():
        card = _card(page, name)
        assert f"VOICE {word}" in card and f"under {rule}" in card, (step, name, card)
        assert ("recommended" in card) == (name == ships), (step, name)
    # the three artifacts: the newest entry of each leads with the same state
    assert _newest_first_lines(root) == [standing] * 3, step
    return doc


def _record_words(root: Path, rule: str) -> dict[str, str]:
    """Each candidate's VOICE word under `rule` as the record's newest score or amendment entry states it."""
    text = _text(root, RECORD)
    newest = max(text.rfind("\n## Score — "), text.rfind("\n## Amendment — "))
    entry = text[newest:]
    if entry.startswith("\n## Score"):
        found = re.findall(r"^- (\S+): VOICE (\S+) \(" + re.escape(rule) + ":", entry, re.MULTILINE)
    else:
        found = re.findall(r"^- (\S+): VOICE (?:\S+ → |stays )?(PASS|FAIL)\b", entry, re.MULTILINE)
    return dict(found)


def test_a_gates_life_says_one_state_on_every_surface(tmp_path: Path, compose_fixture: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    patch_scoring(monkeypatch)
    root = bronte_workspace(tmp_path / "ws", as_shipped(compose_fixture), prospective=True)
    registered = Expected("global-max-spread", None, False)
    steps = [
        ("score", (("import", GATE, write_jsonl(tmp_path / "g.jsonl", generations())), ("score", GATE)), registered),
        ("ship", (("ship", GATE, "ckpt475", "--reason", "additive, reversible and safety-clean"),), registered),
        ("note", (("note", GATE, "--text", "the global floor is one outlier seed of ckpt925; left alone"),),
         registered),
        ("prospective", (("amend", GATE, "--rule", "pairwise-max-spread", "--reason", "the pre-registered rule"),),
         Expected("pairwise-max-spread", "global-max-spread", False)),
        ("post-hoc", (("amend", GATE, "--rule", "welch-t", "--reason", "a sampling model for the floor",
                       "--post-hoc"),), Expected("welch-t", "pairwise-max-spread", True)),
    ]
    said: dict[str, dict[str, Any]] = {}
    for step, commands, expected in steps:
        if step == "post-hoc":
            register_prospective(root, "lv-dummy", "welch-t")  # after lv-bronte's numbers: a post-hoc citation
        for command in commands:
            done = run_cli(*command, cwd=root)
            assert done.code == 0, (step, command, done.stderr)
        said[step] = doc = check_every_surface(root, tmp_path, expected, step)
        if step in ("score", "prospective", "post-hoc"):  # the entries that state every candidate's verdict
            words = {a["name"]: a["voice"][expected.rule] for a in doc["arms"] if a["role"] == "candidate"}
            assert _record_words(root, expected.rule) == words, step
    # the story's numbers, as every surface said them: nothing ships, then ckpt475 under pairwise
    assert [said[s]["ships"] for s in ("score", "ship", "note", "prospective")] == [None, None, None, "ckpt475"]
    record = _text(root, RECORD)
    assert "any conclusion drawn from the FAIL is withdrawn" in record  # the prospective amendment's, only
    assert record.count("is withdrawn") == 1


HOSTILE = "Impostor ]]><One> & \uffff"


def test_a_gate_with_impostors_says_the_same_words_everywhere_even_with_hostile_names(tmp_path: Path) -> None:
    """Two impostors, one named with what XML and markdown choke on, in a workspace whose path holds byte 0xff;
    the mimic writes like the hostile one. After score and ship every surface says the same words."""
    import os

    from helpers.workspace import GATE as TEST_GATE
    from helpers.workspace import N_PROMPTS, SEEDS, impostor_spec, impostor_workspace, text

    root = impostor_workspace(tmp_path / os.fsdecode(b"ws\xff"), impostor_spec({
        HOSTILE: ["corpora/imp/*.txt"], "Impostor Two": ["corpora/imp2/*.txt"]}))
    style = {"base": None, "cand": 0, "mimic": 1}
    rows = [{"arm": arm, "seed": s, "prompt_id": str(p), "text": text(160, f"{arm}/{s}/{p}", st)}
            for arm, st in style.items() for s in SEEDS for p in range(N_PROMPTS)]
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for args in (("register", TEST_GATE), ("import", TEST_GATE, source), ("score", TEST_GATE),
                 ("ship", TEST_GATE, "cand", "--reason", "specific to the author, safe")):
        done = run_cli(*args, cwd=root)
        assert done.code == 0, (args, done.stderr)
    xml = tmp_path / "imp.xml"
    doc = json.loads(run_cli("score", TEST_GATE, "--json", "--dry-run", "--junit", xml, cwd=root).stdout)
    rule, ships = doc["rule"], doc["ships"]
    spec_words = {a["name"]: a["specificity"]["verdict"][rule] for a in doc["arms"] if a["role"] == "candidate"}
    assert ships == "cand" and spec_words == {"cand": "SPECIFIC", "mimic": "NOT-SPECIFIC"}
    assert doc["arms"][2]["specificity"]["nearest"] == HOSTILE  # the name survives the JSON unchanged

    quiet = run_cli("score", TEST_GATE, "-q", "--dry-run", cwd=root).stdout
    assert quiet == f"{TEST_GATE}: ships: cand (VOICE PASS {quiet.split('VOICE PASS ')[1].split(' ')[0]} under " \
                    f"{rule}, NOT-COPIED, NO-DAMAGE, SPECIFIC); error rates: {doc['error_rates']['statement']}\n"
    root_xml = junit(xml)  # well-formed and valid against the schema, the hostile name escaped
    assert properties(root_xml)["ships"] == "cand"
    for name, word in spec_words.items():
        said = _case_words(root_xml, f"voicegate.{TEST_GATE}.{name}", f"specificity under {rule}")
        assert said.startswith(f"{word} under {rule}: margin "), (name, said)

    record = (root / "gates" / f"{TEST_GATE}.md").read_text(encoding="utf-8")
    readme = (root / "adapters" / "lv-test" / "README.md").read_text(encoding="utf-8")
    compose = (root / "deploy" / "compose.yaml").read_text(encoding="utf-8")
    for name, word in spec_words.items():
        line = next(ln for ln in record.splitlines() if ln.startswith(f"- {name}: VOICE "))
        assert f" · {word}, deciding (" in line, line
        assert next(ln for ln in readme.splitlines() if ln.startswith(f"- {name}")).endswith(line.split(": ", 1)[1])
        assert f"{name} {word}" in compose
    # registered today under a range floor: the statement every surface carries is the --json's
    rates = doc["error_rates"]["statement"]
    assert rates == "false pass not stated (a range floor), power unknown"
    standing = f"rule {rule}, as registered; ships: cand; error rates: {rates}"
    assert record.count(f"**In force:** {standing}.") == 2 and readme.count(f"**In force:** {standing}.") == 2
    assert compose.count(f"in force: {standing}") == 2

    assert run_cli("report", TEST_GATE, cwd=root).code == 0
    page = (root / "runs" / TEST_GATE / "report.html").read_text(encoding="utf-8")
    assert f"In force: {standing}." in " ".join(re.sub(r"<[^>]+>", "", page).split())
    for name, word in spec_words.items():
        assert word in _card(page, name)
    # verify: valid JSON and well-formed JUnit on this path and these names
    checked = tmp_path / "verify.xml"
    verified = run_cli("verify", TEST_GATE, "--json", "--junit", checked, cwd=root)
    assert verified.code == 0 and json.loads(verified.stdout)["ok"] is True
    junit(checked)
