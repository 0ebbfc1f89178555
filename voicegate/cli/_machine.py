"""Output a CI system reads: one `--json` document on stdout, the JSON error object, and `--junit FILE`.

Every command's `--json` goes through `emit`, so each prints exactly one JSON document on stdout
(indented, UTF-8, no NaN). Under `--json` an error is a document too: `{"error": "...", "exit": N}`
on stdout (and the usual one line on stderr, and the same exit code), unless the command already
printed its document (`score --strict`, `verify` on a broken chain, `generate` on exit 4, `seat
drift`: exit 1 and 4 are results, the document says what happened and the line stays on stderr,
so stdout still parses as one document). `--json` is known from the flag's own callback (set
while click parses) or from the raw arguments (a `--json` token before any `--`): an error can
come before the flag is parsed (an unknown option), and the seat commands declare their own flag.

`--junit FILE` writes a JUnit XML report (the shape of pytest's junit-10 schema: testsuites >
testsuite > testcase, with failure / skipped), atomically. `score`: one test case per candidate
and axis — voice under every rule, copying, damage, and specificity under every rule when the
spec registers impostors; PASS / NOT-COPIED / NO-DAMAGE / SPECIFIC pass, FAIL / COPIED / DAMAGE /
NOT-SPECIFIC fail, INCONCLUSIVE (or a verdict that could not be reached) is skipped. `verify`:
one test case per artifact file (a record, README, compose file or ledger), failed when its chain
is broken, skipped when it is not written yet. No timings are written, so the same result gives
the same bytes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from voicegate.scoring import GateResult


class _State:
    """Per invocation (reset by `main`): whether --json was asked for and whether its document is out."""

    active = False
    emitted = False


def reset() -> None:
    _State.active = False
    _State.emitted = False


def _mark(value: bool) -> bool:
    if value:
        _State.active = True
    return value


AsJson = Annotated[bool, typer.Option(
    "--json", callback=_mark, help="Print one JSON document on stdout; an error is a document too (error, exit).")]
JunitFile = Annotated[Path | None, typer.Option(
    "--junit", metavar="FILE",
    help="Also write a JUnit XML report to FILE (written atomically), so CI shows the gate as tests.")]


def emit(data: Mapping[str, Any]) -> None:
    """The command's one JSON document, on stdout."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    sys.stdout.flush()
    _State.emitted = True


def mark_emitted() -> None:
    """A document went out by another writer (`score --json` prints scores.json's bytes)."""
    _State.emitted = True


def json_requested(argv: Sequence[str]) -> bool:
    if _State.active:
        return True
    head = list(argv[: argv.index("--")]) if "--" in argv else list(argv)
    return "--json" in head


# Exit 1 (a gate that failed under --strict, a broken chain, seat drift, keys still naming an alias, a carrier
# without LoRA) and 4 (generate's integrity check failed) are results: every command that ends so has printed
# its document first (through `emit`; `score --json` through `mark_emitted`).
RESULTS = (1, 4)


def error_document(message: str, code: int, argv: Sequence[str]) -> None:
    """Under --json, an error (not a result) before any document: {"error": ..., "exit": code} on stdout."""
    if json_requested(argv) and not _State.emitted and code not in RESULTS:
        emit({"error": message, "exit": code})


# -- JUnit ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    classname: str
    name: str
    outcome: str = "passed"   # passed | failure | skipped
    message: str = ""
    detail: str = ""


def junit_xml(suite: str, cases: Sequence[Case], properties: Mapping[str, str] | None = None) -> str:
    """One <testsuites> holding one <testsuite> of `cases`."""
    import xml.etree.ElementTree as ET

    failures = sum(c.outcome == "failure" for c in cases)
    skipped = sum(c.outcome == "skipped" for c in cases)
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": "0"}
    top = ET.Element("testsuites", {"name": "voicegate", **counts})
    node = ET.SubElement(top, "testsuite", {"name": suite, **counts, "skipped": str(skipped)})
    if properties:
        props = ET.SubElement(node, "properties")
        for key, value in properties.items():
            ET.SubElement(props, "property", {"name": key, "value": value})
    for c in cases:
        tc = ET.SubElement(node, "testcase", {"classname": c.classname, "name": c.name})
        if c.outcome != "passed":
            child = ET.SubElement(tc, c.outcome, {"type": c.outcome, "message": c.message})
            child.text = c.detail or c.message
    ET.indent(top)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(top, encoding="unicode") + "\n"


def write_junit(path: Path, text: str) -> None:
    from voicegate._atomic import write_atomic

    if path.is_dir():
        from voicegate._errors import VoicegateError

        raise VoicegateError(f"--junit {path} is a directory; give a file name")
    write_atomic(path, text)


def _num(value: Any, fmt: str) -> str:
    return format(value, fmt) if isinstance(value, (int, float)) else "n/a"


def score_cases(result: GateResult) -> list[Case]:
    """One case per candidate × axis, read through the typed result (never by string key)."""
    cases: list[Case] = []
    for arm in result.candidates:
        if str(arm.role) != "candidate":
            continue
        cls = f"voicegate.{result.gate}.{arm.name}"
        for rule, verdict in arm.voice.items():
            said = (f"VOICE {verdict} under {rule}: delta_cb {_num(arm.delta_cb, '+.3f')} vs floor "
                    f"{_num(arm.floors.get(rule), '.3f')} (ratio {_num(arm.ratios.get(rule), '.2f')}x)")
            cases.append(Case(cls, f"voice under {rule}", _outcome(verdict, "PASS", "FAIL"), said))
        cases.append(Case(cls, "copying", _outcome(arm.copying, "NOT-COPIED", "COPIED"),
                          f"{arm.copying}: overlap {_num(arm.overlap, '.4f')}, longest run {arm.longest_run} tokens"))
        cases.append(Case(cls, "damage", _outcome(arm.damage, "NO-DAMAGE", "DAMAGE"),
                          f"{arm.damage}: degeneration {_num(arm.degeneration.rate, '.3f')}, probe pass rate "
                          f"{_num(arm.probe_pass_rate, '.3f')}"))
        spec = arm.specificity
        if spec is not None:
            for rule, verdict in spec.verdict.items():
                said = (f"{verdict} under {rule}: margin {_num(spec.margin, '+.3f')} vs floor "
                        f"{_num(spec.floors.get(rule), '.3f')} (nearest impostor {spec.nearest})")
                cases.append(Case(cls, f"specificity under {rule}", _outcome(verdict, "SPECIFIC", "NOT-SPECIFIC"),
                                  said))
    return cases


def _outcome(verdict: object, good: str, bad: str) -> str:
    """passed / failure; anything else (INCONCLUSIVE, a verdict that could not be reached) is skipped."""
    return {good: "passed", bad: "failure"}.get(str(verdict), "skipped")


def score_properties(result: GateResult) -> dict[str, str]:
    return {"gate": result.gate, "rule": result.rule, "ships": result.ships or "none",
            "signature": result.signature_text or ""}


def verify_cases(files: Iterable[Mapping[str, Any]]) -> list[Case]:
    """One case per artifact file, from `verify --json`'s `files`."""
    cases = []
    for f in files:
        cls = "voicegate.verify." + "+".join(f["gates"])
        name = f"{f['kind']}: {f['path']}"
        if not f["ok"]:
            cases.append(Case(cls, name, "failure", f"BROKEN: {f['problem']}", "\n".join(f["lines"])))
        elif not f["exists"]:
            cases.append(Case(cls, name, "skipped", "not written yet"))
        else:
            cases.append(Case(cls, name, "passed"))
    return cases
