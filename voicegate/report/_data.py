"""What the report is drawn from, typed: the stored results as `GateResult`s, and the records beside them.

`load_report_data` builds a `ReportData` from a gate's run directory;
`ReportData.from_plain` builds the same from plain JSON-like data (tests and
hand-made reports), so the page itself only ever reads attributes. Results are
read with `GateResult.from_json`, which takes hand-made and older results as they
are (a missing field is None or empty).

Amendment and decision rows are records, not results: only the fields the page
shows are kept, and their values as written (a reason, a time), never guessed at.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from voicegate.run import RowKey, RunManifest
from voicegate.scoring import GateResult, Verdicts
from voicegate.spec import Copying, Damage

if TYPE_CHECKING:
    # What is in force is `gate`'s to say (one layer up); the page only prints it.
    from voicegate.gate import Standing

DEFAULT_SAMPLES = 4


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _result(value: Any) -> GateResult | None:
    # An empty or missing result is no result (the one before stays in force), as it always was.
    return GateResult.from_json(value) if isinstance(value, Mapping) and value else None


@dataclass(frozen=True, kw_only=True)
class Amendment:
    """One row of amendments.jsonl: a rule change and the result re-scored under it."""

    time: str | None = None
    rule_from: str | None = None
    rule_to: str | None = None
    reason: str | None = None
    result: GateResult | None = None
    # What the amendment says changed: prose (a string, a list of lines, a mapping) or `amend`'s per-arm rows.
    changes: Any = None
    # The prospective registration it cites: {"gate", "commit", "spec_sha256", "rule", "committed"} (None: none).
    citation: Mapping[str, str] | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Amendment:
        cited = d.get("citation")
        return cls(time=_text(d.get("time")), rule_from=_text(d.get("rule_from")), rule_to=_text(d.get("rule_to")),
                   reason=_text(d.get("reason")), result=_result(d.get("result")), changes=d.get("changes"),
                   citation={str(k): str(v) for k, v in cited.items()} if isinstance(cited, Mapping) else None)


@dataclass(frozen=True, kw_only=True)
class Decision:
    """One row of decisions.jsonl: a person shipped an arm, with why and (from `ship`) what stood then."""

    time: str | None = None
    arm: str | None = None
    reason: str | None = None
    rule: str | None = None
    # `ship` records the rule's recommendation, which may itself be None: `recorded` says it was written.
    recommendation: str | None = None
    recorded: bool = False
    verdicts: Verdicts | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Decision:
        verdicts = d.get("verdicts")
        return cls(time=_text(d.get("time")), arm=_text(d.get("arm")), reason=_text(d.get("reason")),
                   rule=_text(d.get("rule")), recommendation=_text(d.get("recommendation")),
                   recorded="recommendation" in d,
                   verdicts=Verdicts.from_json(verdicts) if isinstance(verdicts, Mapping) else None)


@dataclass(frozen=True, kw_only=True)
class Note:
    """One row of notes.jsonl: a person's note on the record (a defect found and left alone), when."""

    time: str | None = None
    text: str | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Note:
        return cls(time=_text(d.get("time")), text=_text(d.get("text")))


def _section(given: Any, names: Sequence[str]) -> dict[str, Any]:
    # The keys of a spec section the page shows, as given; what it leaves out the spec schema's defaults fill in.
    given = given if isinstance(given, Mapping) else {}
    return {k: given[k] for k in names if k in given}


@dataclass(frozen=True, kw_only=True)
class ReportData:
    """Everything `render_report` draws: the stored results, the records beside them, the spec's settings."""

    score: GateResult
    amendments: tuple[Amendment, ...] = ()
    decisions: tuple[Decision, ...] = ()
    notes: tuple[Note, ...] = ()
    gate: str | None = None
    author: str | None = None
    run: RunManifest | None = None
    registration: Mapping[str, Any] | None = None
    notices: tuple[str, ...] = ()
    # The registered seeds (as strings) and prompts (id -> text); empty when not known.
    seeds: tuple[str, ...] = ()
    prompts: Mapping[str, str] = field(default_factory=dict)
    copying: Copying = field(default_factory=Copying)
    damage: Damage = field(default_factory=Damage)
    generations: Sequence[Mapping[str, Any]] = ()
    max_samples: int = DEFAULT_SAMPLES
    rendered_at: str | None = None
    # Every verbatim run per voice generation (`run.row_key` -> character ranges), found against the
    # training text; None when it was not at hand (only the result's listed spans are then marked).
    copied: Mapping[RowKey, tuple[tuple[int, int], ...]] | None = None
    # The verdict entries in the order they were written (the run's ledger): (kind, time), kind being
    # "score", "ship", "note" or "amend". Empty when not known: the timeline then orders events by their times.
    events: tuple[tuple[str, str | None], ...] = ()
    # What is in force, as every surface's first line says it (`voicegate.gate`'s state); None: not known here
    # (hand-made data), and the header then says nothing of it.
    standing: Standing | None = None

    @property
    def current(self) -> GateResult:
        """The result in force: the last amendment's, else the score."""
        last = self.amendments[-1].result if self.amendments else None
        return last or self.score

    @classmethod
    def from_plain(cls, data: Mapping[str, Any]) -> ReportData:
        """The same from plain JSON-like data: results and records as stored, settings as the spec's sections."""
        return cls(
            score=GateResult.from_json(data["score"]),
            amendments=tuple(Amendment.from_json(a) for a in data.get("amendments") or ()),
            decisions=tuple(Decision.from_json(d) for d in data.get("decisions") or ()),
            notes=tuple(Note.from_json(n) for n in data.get("notes") or ()),
            gate=_text(data.get("gate")), author=_text(data.get("author")),
            run=RunManifest.from_json(run) if isinstance(run := data.get("run"), Mapping) and run else None,
            registration=data.get("registration"),
            notices=tuple(str(n) for n in data.get("notices") or ()),
            seeds=tuple(str(s) for s in data.get("seeds") or ()),
            prompts={str(k): v for k, v in (data.get("prompts") or {}).items()},
            copying=Copying(**_section(
                data.get("copying"), ("n", "tolerance", "max_run"))),  # not-a-result: the spec's copying section
            damage=Damage(**_section(
                data.get("damage"), ("tolerance", "truncation_decides"))),  # not-a-result: the spec's damage section
            generations=list(data.get("generations") or ()),
            max_samples=int(data.get("max_samples", DEFAULT_SAMPLES)),
            rendered_at=_text(data.get("rendered_at")),
            copied=data.get("copied"),
            events=tuple((str(e[0]), _text(e[1])) for e in data.get("events") or ()),
        )
