"""Output a CI system reads: one `--json` document on stdout, the JSON error object, and `--junit FILE`.

Every command's `--json` goes through `emit`, and the document is held until the command ends
(`finish`, from `main`), so stdout carries exactly one JSON document (indented, UTF-8 bytes whatever
the locale, no NaN). Under `--json` an error is a document too: `{"error": "...", "exit": N}` on
stdout (and the usual one line on stderr, and the same exit code), in place of any result the
command made before it failed. Exit 1 and 4 are results (`score --strict`, `verify` on a broken
chain, `generate` on exit 4, `seat drift`): the document says what happened and the line stays on
stderr. `--json` is known from the flag's own callback (set while click parses) or from the raw
arguments (a `--json` token before any `--`): an error can come before the flag is parsed (an
unknown option), and some commands declare their own flag.

`--junit FILE` writes a JUnit XML report (the junit-10 shape: testsuites > testsuite > properties,
testcase with failure / skipped / system-out), atomically, every string made one XML can carry.
`score`: the gate's outcome under the rule in force (failed exactly when `score --strict` exits 1),
then each candidate × axis under that rule; rules shown but not deciding are properties. `verify`:
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
    from voicegate.gate import GateState


class _State:
    """Per invocation (reset by `main`): whether --json was asked for, and the document waiting to go out."""

    active = False
    emitted = False
    document: bytes | None = None


def reset() -> None:
    _State.active = False
    _State.emitted = False
    _State.document = None


def _mark(value: bool) -> bool:
    if value:
        _State.active = True
    return value


AsJson = Annotated[bool, typer.Option(
    "--json", callback=_mark, help="Print one JSON document on stdout; an error is a document too (error, exit).")]
JunitFile = Annotated[Path | None, typer.Option(
    "--junit", metavar="FILE",
    help="Also write a JUnit XML report to FILE (written atomically), so CI shows the gate as tests.")]


def document_bytes(data: Mapping[str, Any]) -> bytes:
    """One JSON document as UTF-8 bytes, whatever its strings hold.

    A path's non-UTF-8 byte arrives as a lone surrogate (Python's surrogateescape); UTF-8 cannot carry
    it, so it is written as its JSON escape (`\\udcff`): the document stays valid JSON, and the
    byte is still named.
    """
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    return text.encode("utf-8", "backslashreplace")


def emit(data: Mapping[str, Any]) -> None:
    """The command's one JSON document: held until the command ends (`finish`), so an error after it
    (exit 2 or 3) replaces it with the error document instead of following it."""
    _State.document = document_bytes(data)
    _State.emitted = True


def _write(data: bytes) -> None:
    """Bytes on stdout: UTF-8 whatever the locale or PYTHONIOENCODING say."""
    sys.stdout.flush()
    raw = getattr(sys.stdout, "buffer", None)
    if raw is not None:
        raw.write(data)
        raw.flush()
    else:  # a text stream with no bytes beneath it (a test's capture): the same characters
        sys.stdout.write(data.decode("utf-8"))
        sys.stdout.flush()


def finish() -> None:
    """At the command's end, whatever the exit: the one document held, if any, goes out."""
    document, _State.document = _State.document, None
    if document is not None:
        _write(document)


def json_requested(argv: Sequence[str]) -> bool:
    if _State.active:
        return True
    head = list(argv[: argv.index("--")]) if "--" in argv else list(argv)
    return "--json" in head


# Exit 1 (a gate that failed under --strict, a broken chain, seat drift, keys still naming an alias, a carrier
# without LoRA) and 4 (generate's integrity check failed) are results: every command that ends so has made
# its document first (through `emit`), and it goes out.
RESULTS = (1, 4)


def error_document(message: str, code: int, argv: Sequence[str]) -> None:
    """Under --json, an error (not a result): {"error": ..., "exit": code} is the document, in place of any
    result the command had made before it failed (never a result beside an error)."""
    if json_requested(argv) and code not in RESULTS:
        emit({"error": message, "exit": code})


# -- JUnit ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    classname: str
    name: str
    outcome: str = "passed"   # passed | failure | skipped
    message: str = ""
    detail: str = ""
    out: str = ""             # system-out: what the case says beside its outcome


def _xml_char(code: int) -> bool:
    """XML 1.0's Char production: what a document may carry at all, escaped or not."""
    return (code in (0x9, 0xA, 0xD) or 0x20 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD
            or 0x10000 <= code <= 0x10FFFF)


def xml_safe(text: str) -> tuple[str, int]:
    """`text` with every character XML cannot carry written as an escape, and how many were.

    A path's non-UTF-8 byte (surrogateescape's U+DC80..U+DCFF) becomes `\\xNN`, the byte it was; any
    other (a control character, U+FFFE, U+FFFF, a lone surrogate) `\\uNNNN`. `]]>` and markup need no
    care here: the serializer escapes them.
    """
    if all(_xml_char(ord(ch)) for ch in text):
        return text, 0
    out, n = [], 0
    for ch in text:
        code = ord(ch)
        if _xml_char(code):
            out.append(ch)
            continue
        n += 1
        out.append(f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}")
    return "".join(out), n


def junit_xml(suite: str, cases: Sequence[Case], properties: Mapping[str, str] | None = None) -> str:
    """One <testsuites> holding one <testsuite> of `cases`; every string made one XML can carry."""
    import xml.etree.ElementTree as ET

    escaped = 0

    def safe(text: str) -> str:
        nonlocal escaped
        clean, n = xml_safe(text)
        escaped += n
        return clean

    failures = sum(c.outcome == "failure" for c in cases)
    skipped = sum(c.outcome == "skipped" for c in cases)
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": "0"}
    top = ET.Element("testsuites", {"name": "voicegate", **counts})
    node = ET.SubElement(top, "testsuite", {"name": safe(suite), **counts, "skipped": str(skipped)})
    props = ET.SubElement(node, "properties")
    for key, value in (properties or {}).items():
        ET.SubElement(props, "property", {"name": safe(key), "value": safe(value)})
    for c in cases:
        tc = ET.SubElement(node, "testcase", {"classname": safe(c.classname), "name": safe(c.name)})
        if c.outcome != "passed":
            child = ET.SubElement(tc, c.outcome, {"type": c.outcome, "message": safe(c.message)})
            child.text = safe(c.detail or c.message)
        if c.out:
            ET.SubElement(tc, "system-out").text = safe(c.out)
    if escaped:
        ET.SubElement(props, "property", {
            "name": "escaped", "value": f"{escaped} character(s) XML cannot carry are written as \\xNN or \\uNNNN"})
    if not len(props):
        node.remove(props)
    ET.indent(top)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(top, encoding="unicode") + "\n"


def check_junit(path: Path, kept: Sequence[tuple[Path, str]] = (), dirs: Sequence[tuple[Path, str]] = ()) -> None:
    """Refuse a --junit FILE that is a directory, not a regular file, or a file voicegate keeps (`kept`: each with
    what it is) or one inside a directory it keeps (`dirs`): written whole, it would replace the gate record
    `verify` was asked about."""
    import os

    from voicegate._errors import VoicegateError
    from voicegate.spec import check_regular

    if path.is_dir():
        raise VoicegateError(f"--junit {path} is a directory; give a file name")
    check_regular(path, "--junit")
    real = os.path.realpath(path)
    for file, what in kept:
        if real == os.path.realpath(file):
            raise VoicegateError(f"--junit {path} is {what}: voicegate only appends to it; write the report "
                                 "elsewhere")
    for directory, what in dirs:
        where = os.path.realpath(directory)
        if real == where or real.startswith(where.rstrip(os.sep) + os.sep):
            raise VoicegateError(f"--junit {path} is {what}; write the report elsewhere")


def write_junit(path: Path, text: str) -> None:
    from voicegate._atomic import write_atomic

    check_junit(path)
    write_atomic(path, text)


def _num(value: Any, fmt: str) -> str:
    return format(value, fmt) if isinstance(value, (int, float)) else "n/a"


def _voice_said(arm: Any, rule: str) -> str:
    return (f"VOICE {arm.voice_under(rule)} under {rule}: delta_cb {_num(arm.delta_cb, '+.3f')} vs floor "
            f"{_num(arm.floors.get(rule), '.3f')} (ratio {_num(arm.ratios.get(rule), '.2f')}x)")


def _specific_said(axis: Any, rule: str) -> str:
    """The verdict with the margin and the floor of the one impostor that decides under `rule`."""
    who = axis.binding.get(rule)
    if who is None:
        return f"{axis.under(rule)} under {rule}: no impostor decided (margin n/a)"
    weak = f"; {axis.weak_said()}" if axis.weak else ""
    return (f"{axis.under(rule)} under {rule}: margin {_num(axis.margins.get(who), '+.3f')} over {who} vs floor "
            f"{_num(axis.floor_against(who, rule), '.3f')}{weak}")


def score_cases(state: GateState) -> list[Case]:
    """The gate's outcome, then each candidate × axis under the rule in force.

    The outcome case fails exactly when `score --strict` exits 1. A candidate's case fails only then
    too (its short axes are why nothing ships); while another candidate ships, a candidate's FAIL is
    not the gate's and is skipped with its message, so a shipping gate is green. INCONCLUSIVE, and
    specificity that is only reported, are skipped, never failures.
    """
    result, rule = state.result, state.rule
    gate_cls = f"voicegate.{result.gate}"
    if state.failed:
        outcome = Case(gate_cls, "gate outcome", "failure", state.failure(), out=f"rule in force: {state.in_force()}")
    else:
        from voicegate.report import ship_line

        shipped = ship_line(result) if state.look is None else state.look.ship_line()
        outcome = Case(gate_cls, "gate outcome", out=f"{shipped}; rule in force: {state.in_force()}")
    cases = [outcome]
    shipped = f"not shipped: the gate ships {state.ships} under {rule}"

    def case(cls: str, name: str, verdict: object, good: str, bad: str, said: str, decides: bool = True) -> Case:
        if str(verdict) == good:
            return Case(cls, name, "passed", out=said)
        if str(verdict) == bad and decides and state.failed:
            return Case(cls, name, "failure", said)
        why = said if str(verdict) != bad else f"{said} ({shipped})" if decides else f"{said} (reported, not deciding)"
        return Case(cls, name, "skipped", why)

    for arm in result.candidates:
        cls = f"{gate_cls}.{arm.name}"
        look = state.look
        decided = None if look is None else look.decisions.get(arm.name)
        if look is not None and decided is not None:  # the look's decision is VOICE's under a sequential design
            cases.append(case(cls, f"voice at look {look.index} of {len(look.design)}", decided.verdict, "PASS",
                              "FAIL", look.said(arm.name)))
        else:
            cases.append(case(cls, f"voice under {rule}", arm.voice_under(rule), "PASS", "FAIL",
                              _voice_said(arm, rule)))
        cases.append(case(cls, "copying", arm.copying, "NOT-COPIED", "COPIED",
                          f"{arm.copying}: overlap {_num(arm.overlap, '.4f')}, longest run {arm.longest_run} tokens"))
        cases.append(case(cls, "damage", arm.damage, "NO-DAMAGE", "DAMAGE",
                          f"{arm.damage}: degeneration {_num(arm.degeneration.rate, '.3f')}, probe pass rate "
                          f"{_num(arm.probe_pass_rate, '.3f')}"))
        axis = arm.specificity
        if axis is not None:
            cases.append(case(cls, f"specificity under {rule}", axis.under(rule), "SPECIFIC", "NOT-SPECIFIC",
                              _specific_said(axis, rule), decides=axis.decides))
    return cases


def score_properties(state: GateState) -> dict[str, str]:
    """The state in force, then every verdict under a rule that is shown but does not decide."""
    result, a = state.result, state.amendment
    props = {"gate": result.gate, "rule": state.rule, "registered_rule": state.registered_rule,
             "amendment": "none" if a is None else "post-hoc correction" if a.post_hoc else "prospective",
             **({"amended_from": a.rule_from, "amendment_cites": a.cites()} if a is not None else {}),
             "ships": state.ships or "none", "error_rates": state.standing().error_rates_text,
             "signature": result.signature_text or ""}
    if state.look is not None:
        props["sequential design"] = state.look.summary()
    for arm in result.candidates:
        for other in result.rules:
            if other != state.rule:
                props[f"shown, not deciding: {arm.name} voice under {other}"] = _voice_said(arm, other)
        axis = arm.specificity
        for other in axis.verdict if axis is not None else ():
            if other != state.rule:
                props[f"shown, not deciding: {arm.name} specificity under {other}"] = _specific_said(axis, other)
    return props


def score_junit(state: GateState) -> str:
    return junit_xml(f"voicegate score {state.gate}", score_cases(state), score_properties(state))


def verify_cases(files: Iterable[Mapping[str, Any]]) -> list[Case]:
    """One case per artifact file, from `verify --json`'s `files`; what it found about the amendments' citations
    (a post-hoc correction among them) is the case's system-out, a reader's to see whatever the outcome."""
    cases = []
    for f in files:
        cls = "voicegate.verify." + "+".join(f["gates"])
        name = f"{f['kind']}: {f['path']}"
        said = "\n".join([*f.get("citations", ()), *f.get("citation_problems", ())])
        if not f["ok"]:
            cases.append(Case(cls, name, "failure", f"BROKEN: {f['problem']}", "\n".join(f["lines"]), out=said))
        elif not f["exists"]:
            cases.append(Case(cls, name, "skipped", "not written yet", out=said))
        else:
            cases.append(Case(cls, name, "passed", out=said))
    return cases
