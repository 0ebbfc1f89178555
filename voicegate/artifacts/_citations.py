"""`verify`'s fourth witness: every amendment's citation of a prospective registration, asked of git again.

An amendment (`gate._amend`) records, in the gate record, the other gate whose
registration declared the new rule, that registration's commit and its spec
sha256. Here each amendment entry of a gate record is read back and
`spec._prospective.check_citation` asks git whether that commit is still in the
workspace's history, still holds that gate's registration with that spec sha256
and rule, and was committed no later than the amendment and before any of that
gate's results. A registration rewritten out of history breaks the amendment.

An amendment entry written before voicegate required a citation carries none;
it is named in a note (its bytes cannot be changed to add one). An entry that
carries a citation line that does not parse (a hash that is not one, a missing
field) is BROKEN, never read as one of those: what it cites cannot be asked of git.
"""

from __future__ import annotations

import datetime as _dt
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from voicegate.spec import (
    Citation,
    check_citation,
    check_scored_under,
    commit_time,
    commits_after,
    is_ancestor,
    is_git_worktree,
    is_shallow,
    numbers_at,
)

_HEADING = re.compile(r"^## Amendment — (\S+) — ", re.MULTILINE)
_CITES = re.compile(r"^\*\*(Prospective registration|Post-hoc correction) cited\.\*\*", re.MULTILINE)
_CITED = re.compile(r"^\*\*(Prospective registration|Post-hoc correction) cited\.\*\* `([^`]+)` was declared the "
                    r"deciding floor rule by gate `([^`]+)`, registered in commit `([0-9a-f]{40})` \(([^)]*)\), "
                    r"spec sha256 `([0-9a-f]{64})`", re.MULTILINE)



@dataclass(frozen=True)
class CitedEntry:
    number: int
    time: _dt.datetime | None
    citation: Citation | None
    post_hoc: bool = False  # the entry says it is a post-hoc correction
    malformed: bool = False  # a citation line is there, but does not parse
    reason: str | None = None  # the amendment's reason, as the entry gives it


def amendment_citations(data: bytes) -> list[CitedEntry]:
    """Every amendment entry of a gate record, with the citation it carries (None: it carries none)."""
    from voicegate.artifacts._recorded import REASON, entry_bodies

    out: list[CitedEntry] = []
    for number, text in entry_bodies(data):
        heading = _HEADING.search(text)
        if heading is None:
            continue
        try:
            when: _dt.datetime | None = _dt.datetime.fromisoformat(heading.group(1))
        except ValueError:
            when = None
        cited = _CITED.search(text)
        citation = None if cited is None else Citation(rule=cited.group(2), gate=cited.group(3),
                                                       commit=cited.group(4), committed=cited.group(5),
                                                       spec_sha256=cited.group(6))
        reason = REASON.search(text)
        out.append(CitedEntry(number, when, citation,
                              post_hoc=cited is not None and cited.group(1) == "Post-hoc correction",
                              malformed=cited is None and _CITES.search(text) is not None,
                              reason=reason.group(1) if reason else None))
    return out


def _span(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


_FIRST_NUMBERS = re.compile(r"^## (?:Score|Numbers first shown) — (\S+) — ", re.MULTILINE)


def _first_numbers_time(text: str) -> _dt.datetime | None:
    """When the record's first numbers were recorded or shown: its first score (or anchor) entry's own time."""
    m = _FIRST_NUMBERS.search(text)
    try:
        return _dt.datetime.fromisoformat(m.group(1)) if m else None
    except ValueError:
        return None


def _after(root: Path, anchor: str | None, commit: str, then: _dt.datetime | None) -> str:
    """ "N commit(s) / T after" from git's history, and from the recorded numbers' time to the commit's date."""
    if anchor is None:
        return "after"
    n = commits_after(root, anchor, commit)
    now = commit_time(root, commit)
    span = f" / {_span((now - then).total_seconds())}" if then and now and now >= then else ""
    return f"{n} commit(s){span} after"


def check_record(root: Path, gate: str, path: Path) -> tuple[list[str], list[str]]:
    """(problems, lines that hold) for every amendment entry of `gate`'s record at `path`."""
    data = path.read_bytes()
    text = data.decode("utf-8", "replace")
    problems, held = check_scored_under(root, gate, text) if not is_shallow(root) else ([], [])
    more, lines = _check_amendments(root, gate, data, text)
    return problems + more, held + lines


def _check_amendments(root: Path, gate: str, data: bytes, text: str) -> tuple[list[str], list[str]]:
    entries = amendment_citations(data)
    if not entries:
        return [], []
    anchor = numbers_at(text)
    problems = [f"entry {e.number}'s citation line does not parse (a commit, spec sha256 or gate that is not one): "
                "what it cites cannot be re-checked" for e in entries if e.malformed]
    entries = [e for e in entries if not e.malformed]
    if not is_git_worktree(root):
        why = "git is not on PATH" if shutil.which("git") is None else f"{root} is not a git work tree"
        return problems, [f"{len(entries)} amendment citation(s) not checked: {why}"] if entries else []
    if is_shallow(root):
        return problems, [(f"{len(entries)} amendment citation(s) not checked: shallow clone, the history they cite "
                          "may be cut off (git fetch --unshallow, then verify again)")] if entries else []
    held: list[str] = []
    first_time = _first_numbers_time(text)
    for e in entries:
        if e.citation is None:
            held.append(f"entry {e.number} (an amendment) cites no prospective registration: written before "
                        "voicegate required one, so there is nothing to re-check")
            continue
        c = e.citation
        problem = check_citation(root, c, e.time, this_gate=gate)
        if problem:
            problems.append(f"entry {e.number}'s cited registration no longer holds: {problem}")
        elif anchor is not None and not e.post_hoc and not is_ancestor(root, c.commit, anchor):
            # Order is the history's: a registration after the numbers cannot be called prospective.
            problems.append(f"entry {e.number} calls {c.gate}'s registration of {c.rule} (commit {c.commit[:12]}) "
                            f"prospective, but it is not an ancestor of the commit at which {gate}'s numbers were "
                            f"first recorded ({anchor[:12]}): it came after them")
        elif e.post_hoc:
            after = _after(root, anchor, c.commit, first_time)
            held.append(f"entry {e.number} is a POST-HOC correction: it cites {c.gate}'s registration of {c.rule} "
                        f"(commit {c.commit}), registered {after} {gate}'s numbers; git "
                        f"still holds it; the reason given: “{e.reason or '?'}”")
        else:
            held.append(f"entry {e.number} cites {c.gate}'s registration of {c.rule} (commit {c.commit}, "
                        f"spec sha256 {c.spec_sha256[:12]}...): git still holds it, before the amendment and "
                        f"before any of {c.gate}'s results")
    return problems, held
