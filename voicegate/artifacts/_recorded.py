"""What a gate record's chained entries say, read back: the evidence, where the run directory is only a cache.

The run directory keeps the same facts structurally (`notes.jsonl`, `decisions.jsonl`,
`amendments.jsonl`) for speed and for the report, but it is not in git and any user can
edit or delete it. Whatever an artifact states about earlier entries (the notes an
amendment was written against, whether an amendment is a post-hoc correction) is read
here, from the entries a chain and git vouch for; `verify` holds the caches to them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voicegate.artifacts import _chain
from voicegate.run import RunDir, read_rows

_HEADING = re.compile(r"^## (Score|Numbers first shown|Shipping decision|Note|Amendment|Calibration) — (\S+)"
                      r"(?: — (.*))?$", re.MULTILINE)
_NOTE = re.compile(r"^Written into the record by a person, as given: “(.*)”$", re.MULTILINE)
REASON = re.compile(r"^Reason, as given: “(.*)”$", re.MULTILINE)  # a decision's or an amendment's
_SHIPPED = re.compile(r"^A person decided to ship \*\*(.+?)\*\* ", re.MULTILINE)
_RULES = re.compile(r"^floor rule (\S+) → (\S+)$")
_CITED = re.compile(r"^\*\*(Prospective registration|Post-hoc correction) cited\.\*\* .*?registered in commit "
                    r"`([0-9a-f]{40})`", re.MULTILINE)
# The citation an amendment states, whole: what `score` says the amendment cites, read from the record (the run's
# amendments.jsonl is a copy a user can edit or delete).
_CITATION = re.compile(
    r"^\*\*(?:Prospective registration|Post-hoc correction) cited\.\*\* `([^`]+)` was declared the deciding floor "
    r"rule by gate `([^`]+)`, registered in commit `([0-9a-f]{40})` \(([^)\n]*)\), spec sha256 `([0-9a-f]{64})`:"
    r"(?: (\d+) commit\(s\) AFTER)?([^\n]*)", re.MULTILINE)
_NUMBERS_AT = re.compile(r"first recorded \((?:commit )?`([0-9a-f]{40})`\)")
_GENERATIONS = re.compile(r"Generations\s+sha256 `([0-9a-f]{64})`")
_RESULT = re.compile(r"^Result sha256: `([0-9a-f]{64})`", re.MULTILINE)
# A score entry's look under a registered sequential design, as its In force line states it (`LookState.summary`),
# and the registration its Registration paragraph names.
_LOOK = re.compile(r"^\*\*In force:\*\* [^\n]*?; sequential design, (look (\d+) of (\d+) \((\d+) seeds\): "
                   r"(PASS|CONTINUE|FAIL)\b[^\n]*?); ships: ", re.MULTILINE)
_REGISTERED_AT = re.compile(r"^\*\*Registration\.\*\* [^\n]*?commit `([0-9a-f]{40})`", re.MULTILINE)
_UNESCAPE = re.compile(r"\\(.)|&(lt|gt|amp);")
_ENTITY = {"lt": "<", "gt": ">", "amp": "&"}

KINDS = {"Score": "score", "Numbers first shown": "anchor", "Shipping decision": "ship", "Note": "note",
         "Amendment": "amend", "Calibration": "calibration"}
_SUMMARY = re.compile(r"^Summary, as `voicegate register` reads it \(sha256 `([0-9a-f]{64})`\): (.*)$", re.MULTILINE)


def md_unescape(text: str) -> str:
    """The text a markdown template was given, from what it wrote (`_format.md_text` escapes, reversed)."""
    return _UNESCAPE.sub(lambda m: m.group(1) if m.group(1) is not None else _ENTITY[m.group(2)], text)


@dataclass(frozen=True)
class RecordedLook:
    """A score entry's look under a registered sequential design: the gate's decision there, as the entry states it."""

    index: int
    of: int
    seeds: int
    decision: str    # PASS, CONTINUE or FAIL
    summary: str     # "look 1 of 2 (3 seeds): FAIL for futility — nothing ships"


@dataclass(frozen=True)
class Entry:
    """One chained entry of a gate record, as far as later entries and surfaces rely on it."""

    number: int
    kind: str          # score, anchor, ship, note, amend, calibration
    time: str
    text: str | None = None     # a note's text, a decision's or an amendment's reason (unescaped)
    arm: str | None = None      # the shipped arm
    rule_from: str | None = None
    rule_to: str | None = None
    post_hoc: bool | None = None    # an amendment: cited as a post-hoc correction
    cited_commit: str | None = None
    summary: dict[str, Any] | None = None   # a calibration: what it states (None: unreadable, or not its sha256)
    summary_sha256: str | None = None
    citation: dict[str, Any] | None = None    # an amendment: the registration it cites, as its entry states it
    generations_sha256: str | None = None     # a score's generations, or the ones an amendment re-scored
    result_sha256: str | None = None          # a score's or an amendment's result, as its entry states it
    look: RecordedLook | None = None          # a score's look under a registered sequential design
    registration_commit: str | None = None    # the registration a score entry names


def _rule_id(sig: str) -> str:
    return md_unescape(sig).split("@", 1)[0]


def entry_bodies(data: bytes) -> Iterator[tuple[int, str]]:
    """(number, text) of every entry of a markdown artifact: the bytes between a marker and the one before it."""
    prev_end = 0
    for m in _chain.md_markers(data):
        yield m.number, data[prev_end:m.start].decode("utf-8", "replace")
        prev_end = data.find(b"\n", m.start) + 1


def record_entries(data: bytes) -> list[Entry]:
    """Every entry of a gate record, oldest first (whether its chain holds is `verify`'s to say)."""
    out: list[Entry] = []
    for number, body in entry_bodies(data):
        heading = _HEADING.search(body)
        if heading is None:
            continue
        kind, time, rest = KINDS[heading.group(1)], heading.group(2), heading.group(3) or ""
        if kind == "note":
            found = _NOTE.search(body)
            out.append(Entry(number, kind, time, text=md_unescape(found.group(1)) if found else None))
        elif kind == "ship":
            shipped, reason = _SHIPPED.search(body), REASON.search(body)
            out.append(Entry(number, kind, time, arm=md_unescape(shipped.group(1)) if shipped else None,
                             text=md_unescape(reason.group(1)) if reason else None))
        elif kind == "amend":
            rules, reason, cited = _RULES.match(rest), REASON.search(body), _CITED.search(body)
            post_hoc = None if cited is None else cited.group(1) == "Post-hoc correction"
            out.append(Entry(number, kind, time, text=md_unescape(reason.group(1)) if reason else None,
                             rule_from=_rule_id(rules.group(1)) if rules else None,
                             rule_to=_rule_id(rules.group(2)) if rules else None,
                             post_hoc=post_hoc, cited_commit=cited.group(2) if cited else None,
                             citation=_citation(body, post_hoc), result_sha256=_result(body),
                             generations_sha256=(g.group(1) if (g := _GENERATIONS.search(body)) else None)))
        elif kind == "calibration":
            out.append(Entry(number, kind, time, **_summary(body)))
        elif kind == "score":
            out.append(Entry(number, kind, time, rule_to=_rule_id(rest[len("rule "):]) if rest.startswith("rule ")
                             else None, generations_sha256=(g.group(1) if (g := _GENERATIONS.search(body)) else None),
                             result_sha256=_result(body), look=_look(body),
                             registration_commit=(r.group(1) if (r := _REGISTERED_AT.search(body)) else None)))
        else:
            out.append(Entry(number, kind, time))
    return out


def _look(body: str) -> RecordedLook | None:
    found = _LOOK.search(body)
    if found is None:
        return None
    summary, index, of, seeds, decision = found.groups()
    return RecordedLook(int(index), int(of), int(seeds), decision, md_unescape(summary))


def _result(body: str) -> str | None:
    found = _RESULT.search(body)
    return None if found is None else found.group(1)


def _citation(body: str, post_hoc: bool | None) -> dict[str, Any] | None:
    """An amendment's citation as `Citation.to_json` holds it, from the sentence its entry states."""
    found = _CITATION.search(body)
    if found is None or post_hoc is None:
        return None
    rule, gate, commit, committed, spec_sha256, after, rest = found.groups()
    numbers_at = m.group(1) if (m := _NUMBERS_AT.search(rest)) else None
    out: dict[str, Any] = {"gate": md_unescape(gate), "commit": commit, "spec_sha256": spec_sha256,
                           "rule": md_unescape(rule), "committed": committed}
    if numbers_at is not None:
        out.update(numbers_at=numbers_at, after_numbers=int(after or 0), post_hoc=post_hoc)
    return dict(sorted(out.items()))  # as amendments.jsonl holds it (`--json` prints it in that order)


def _summary(body: str) -> dict[str, Any]:
    """A calibration entry's summary, held to the sha256 it states beside it (a summary edited without it is
    none: what a registration quotes must be what was written)."""
    import json

    from voicegate._hashing import sha256_json

    found = _SUMMARY.search(body)
    if found is None:
        return {}
    try:
        summary = json.loads(md_unescape(found.group(2)))
    except ValueError:
        return {}
    if not isinstance(summary, dict) or sha256_json(summary) != found.group(1):
        return {}
    return {"summary": summary, "summary_sha256": found.group(1)}


def recorded_entries(path: Path) -> list[Entry]:
    """`record_entries` of the gate record at `path` (none: no record yet)."""
    return record_entries(path.read_bytes()) if path.is_file() else []


def _cached(rows: list[dict[str, Any]], kind: str) -> list[tuple[Any, ...]]:
    if kind == "note":
        return [(r.get("time"), r.get("text")) for r in rows]
    if kind == "ship":
        return [(r.get("time"), r.get("arm"), r.get("reason")) for r in rows]
    cited: list[dict[str, Any]] = [c if isinstance(c := r.get("citation"), dict) else {} for r in rows]
    return [(r.get("time"), r.get("rule_from"), r.get("rule_to"), bool(c.get("post_hoc")), c.get("commit"))
            for r, c in zip(rows, cited, strict=True)]


def _said(entries: list[Entry], kind: str) -> list[tuple[Any, ...]]:
    if kind == "note":
        return [(e.time, e.text) for e in entries]
    if kind == "ship":
        return [(e.time, e.arm, e.text) for e in entries]
    return [(e.time, e.rule_from, e.rule_to, bool(e.post_hoc), e.cited_commit) for e in entries]


_CACHES = (("note", "notes", "note"), ("ship", "decisions", "shipping decision"), ("amend", "amendments", "amendment"))


def recorded_copy_problem(entries: list[Entry], run: RunDir) -> str | None:
    """Where recorded.json's result in force (what `ship`, `note` and `amend` write their verdict words from) is not
    the result the record's newest score or amendment entry states (its `Result sha256`); None when it is, or when
    there is nothing to hold it to (no copy, no verdict entry, an entry stating no result)."""
    from voicegate import _json as strict_json
    from voicegate._hashing import sha256_json
    from voicegate.scoring import GateResult

    verdicts = [e for e in entries if e.kind in ("score", "amend")]
    stated = verdicts[-1].result_sha256 if verdicts else None
    if stated is None or not run.recorded.is_file():
        return None
    try:
        current = strict_json.loads(run.recorded.read_bytes())["current"]
        digest = sha256_json(GateResult.from_json(current).to_json())
    except (OSError, ValueError, KeyError, TypeError):
        return None  # unreadable: its readers name that themselves
    if digest == stated:
        return None
    return (f"{run.recorded.name} (the run's copy of the result in force) is not the result entry "
            f"{verdicts[-1].number} of the record states (sha256 {stated[:12]}, the copy's {digest[:12]}): edited or "
            "replaced by hand; the record is the evidence (delete the copy: `voicegate score` rebuilds it from the "
            "record)")


def cache_problems(entries: list[Entry], run: RunDir) -> list[str]:
    """Where the run directory's structured copies disagree with the record's chained entries (none: they agree).

    Every surface that states a note, a decision or an amendment's post-hoc status reads one or the other, so a
    copy edited, dropped or deleted while the record holds the entry is broken, never silently believed.
    """
    copy = recorded_copy_problem(entries, run)
    out = [] if copy is None else [copy]
    for kind, attr, noun in _CACHES:
        path: Path = getattr(run, attr)
        said = _said([e for e in entries if e.kind == kind], kind)
        try:
            cached = _cached(read_rows(path), kind) if path.is_file() else []
        except ValueError:
            out.append(f"{path.name}: a line is not valid JSON, so the run's copy of each {noun} cannot be read")
            continue
        if cached == said:
            continue
        first = next((i for i, (a, b) in enumerate(zip(said, cached, strict=False)) if a != b), min(len(said),
                                                                                                    len(cached)))
        what = (f"the record's {noun} entry at {said[first][0]}" if first < len(said)
                else f"a {noun} at {cached[first][0]} that the record does not hold")
        out.append(f"{path.name} (the run's copy) differs from the record's chained entries at {what}: "
                   f"{len(said)} in the record, {len(cached)} in the copy; the record is the evidence "
                   "(restore the copy, or delete the run directory)")
    return out
