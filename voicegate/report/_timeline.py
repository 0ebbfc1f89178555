"""The report's first lines: what happened to the gate, in the order it happened.

Registered, scored, shipped (against the verdict, or with it), noted (a defect found
and left alone), amended (citing the other gate's registration): a reviewer reads the order before the
cards, so "recommended" and "shipped" side by side can never read as "shipped
because recommended" — a decision taken against a FAIL, and a correction that came
after it, are each their own line with their own time.

The verdict events come in the order the run's ledger wrote them; without a ledger
(a hand-made report) they are ordered by time, the score first. The registration a
later amendment cites is placed by its commit time, never after that amendment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from voicegate.report._data import Amendment, Decision, Note, ReportData
from voicegate.scoring import CandidateResult, GateResult

if TYPE_CHECKING:
    # what a sequential design's look decides is `gate`'s to say (one layer up); the page only prints it
    from voicegate.gate import LookState


@dataclass(frozen=True, kw_only=True)
class Event:
    time: str | None
    kind: str    # registered, registered-other, scored, shipped-against, shipped-with, noted, amended
    label: str   # what happened, in a few words
    text: str    # the detail, one sentence


def _voices(result: GateResult) -> str:
    parts = []
    for arm in result.candidates:
        verdict = arm.voice.get(result.rule) if isinstance(arm, CandidateResult) else None
        axis = arm.specificity
        # Where specificity decides, it is said beside VOICE: a PASS that cannot ship must not read as one.
        spec = f" · SPECIFICITY {axis.under(result.rule) or '—'}" if axis is not None and axis.decides else ""
        parts.append(f"{arm.name} VOICE {verdict or '—'}{spec}")
    return ", ".join(parts)


def _scored(result: GateResult, time: str | None, last: bool, look: LookState | None = None) -> Event:
    """`look`: a sequential design's decision at the look of `result` (what ships, in place of the fixed rule's)."""
    text = f"under {result.rule}"
    if last and look is not None:
        decided = ", ".join(f"{name} {d.verdict}" + ("" if look.stopped(name) is None else f" at look {d.index}")
                            for name, d in look.decisions.items())
        text += f": {decided}; sequential design, {look.summary()}"
    elif last:
        text += f": {_voices(result)}; the rule recommends {result.ships or 'none'}"
    return Event(time=time, kind="scored", label="scored", text=text)


def _shipped(decision: Decision, result: GateResult) -> Event:
    arm = decision.arm or "?"
    rule = decision.rule or result.rule
    recommended = decision.recommendation if decision.recorded else result.ships
    cand = result.candidate(arm) if decision.verdicts is None else None
    voice = decision.verdicts.voice_under(rule) if decision.verdicts is not None else (
        cand.voice.get(rule) if cand is not None else None)
    against = recommended != arm
    why = f" “{decision.reason}”" if decision.reason else ""
    if against:
        return Event(time=decision.time, kind="shipped-against", label=f"{arm} shipped AGAINST the verdict",
                     text=(f"by a person: VOICE {voice or '—'} under {rule}, the rule recommended "
                           f"{recommended or 'none'}; recorded beside the verdicts, not over them.{why}"))
    return Event(time=decision.time, kind="shipped-with", label=f"{arm} shipped with the verdict",
                 text=f"by a person: the rule's recommendation under {rule}.{why}")


def _post_hoc(cited: Mapping[str, str]) -> bool:
    """Whether a stored citation says it came after the gate's numbers (its values are read back as text)."""
    return str(cited.get("post_hoc")).lower() == "true"


def _amended(amendment: Amendment, before: GateResult) -> Event:
    cited = amendment.citation
    to = amendment.rule_to or "?"
    after = amendment.result
    now = f"; the rule now recommends {after.ships or 'none'}" if after is not None else ""
    if cited and _post_hoc(cited):
        return Event(time=amendment.time, kind="amended", label="amended: a POST-HOC correction",
                     text=(f"{amendment.rule_from or before.rule} → {to}, the same generations re-scored; cites "
                           f"{cited.get('gate', '?')}'s registration of {to} (commit "
                           f"{str(cited.get('commit', '?'))[:12]}), registered {cited.get('after_numbers', '?')} "
                           f"commit(s) AFTER this gate's numbers: not a pre-registered rule{now}"))
    if cited:
        return Event(time=amendment.time, kind="amended", label=f"amended citing {cited.get('gate', '?')}",
                     text=(f"{amendment.rule_from or before.rule} → {to}, the same generations re-scored; cites "
                           f"{cited.get('gate', '?')}'s registration of {to} (commit "
                           f"{str(cited.get('commit', '?'))[:12]}){now}"))
    return Event(time=amendment.time, kind="amended", label="amended",
                 text=f"{amendment.rule_from or before.rule} → {to}, the same generations re-scored{now}")


@dataclass(frozen=True)
class _Score:
    time: str | None
    last: bool  # the score whose result is on disk (scores.json): the only one whose verdicts are known


def _noted(note: Note) -> Event:
    return Event(time=note.time, kind="noted", label="noted on the record",
                 text=f"by a person, changing no verdict: “{note.text or ''}”")


def _ordered(data: ReportData) -> list[_Score | Decision | Note | Amendment]:
    """Every verdict event, in the order the ledger wrote them (else by time, the score first)."""
    decisions, notes, amendments = list(data.decisions), list(data.notes), list(data.amendments)
    if data.events:
        out: list[_Score | Decision | Note | Amendment] = []
        scores = sum(1 for kind, _ in data.events if kind == "score")
        seen = 0
        for kind, time in data.events:
            if kind == "score":
                seen += 1
                out.append(_Score(time, seen == scores))
            elif kind == "ship" and decisions:
                out.append(decisions.pop(0))
            elif kind == "note" and notes:
                out.append(notes.pop(0))
            elif kind == "amend" and amendments:
                out.append(amendments.pop(0))
        return out + decisions + notes + amendments  # rows the ledger does not list, after it
    rest: list[Decision | Note | Amendment] = [*decisions, *notes, *amendments]
    rest.sort(key=lambda e: e.time or "")
    return [_Score(None, True), *rest]


def timeline(data: ReportData) -> list[Event]:
    """The gate's events, oldest first."""
    events: list[Event] = []
    reg = data.registration
    if reg:
        commit = str(reg.get("commit") or "")
        events.append(Event(time=reg.get("registered_at"), kind="registered", label="registered",
                            text=(f"{data.gate or data.score.gate} under "
                                  f"{reg.get('deciding_rule') or data.score.rule}, "
                                  f"before any of its numbers existed"
                                  + (f" (commit {commit[:12]})" if commit else ""))))
    result = data.score
    look = None if data.standing is None else data.standing.look
    for record in _ordered(data):
        if isinstance(record, _Score):
            events.append(_scored(data.score, record.time, record.last, look))
        elif isinstance(record, Decision):
            events.append(_shipped(record, result))
        elif isinstance(record, Note):
            events.append(_noted(record))
        else:
            _place_cited(events, record)
            events.append(_amended(record, result))
            result = record.result or result
    return events


def _place_cited(events: list[Event], amendment: Amendment) -> None:
    """The other gate's registration an amendment cites, at its commit time (before the amendment)."""
    cited = amendment.citation
    if not cited:
        return
    when = cited.get("committed")
    what = ("registered AFTER this gate's numbers: the amendment citing it is a post-hoc correction"
            if _post_hoc(cited) else "the prospective registration the amendment cites")
    event = Event(time=when, kind="registered-other", label=f"{cited.get('gate', '?')} registered",
                  text=(f"under {cited.get('rule', '?')}, before any of its numbers existed (commit "
                        f"{str(cited.get('commit', '?'))[:12]}): {what}"))
    at = len(events)
    if when:
        later = [i for i, e in enumerate(events) if i > 0 and e.time is not None and e.time > when]
        at = later[0] if later else at
    events.insert(at, event)

