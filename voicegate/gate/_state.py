"""The gate's state in force after a score: which rule decides, what ships, and by which amendment.

`score` scores the stored generations under the registered rule; when a recorded amendment re-scored
these very generations under another rule, that amendment's decision stands. Every surface of `score`
(exit code under --strict, the quiet line, the table, --json, --junit) renders this one object, so
none of them re-derives the rule or the pick on its own.

`Standing` is the same state as the one line every artifact entry (score, ship, note, amend), compose
comment and the report's header lead with; `score` takes it from its `GateState`, `ship` and `note` from
the recorded state under the verdict lock (`recorded_standing`), `amend` from the amendment it records.
The error-rate statement comes from one place, `gate._error_rates.error_rates`. Which amendment is in force,
and what it cites, is read from the gate record's chained entries, never the run directory (a copy a user can
edit or delete). Each candidate's standing (the report's card headline) is computed here too.

Under a registered sequential design the look's decision (`gate._looks.LookState`) is part of the state: what
ships is the look's pick, and a look that decides nothing yet ships nothing. It is computed from the result as
recorded (6 decimals), so `score` and everything that reads the recorded state later say the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from voicegate._errors import VoicegateError
from voicegate.artifacts import Entry, record_problem, recorded_entries
from voicegate.gate._error_rates import ErrorRates, error_rates
from voicegate.gate._looks import LookState, look_state
from voicegate.scoring import CandidateResult, Copying, Damage, GateResult, Specific, Voice
from voicegate.spec import GateSpec, LookDecision, load_registration, shown_path

NOT_STATED = "not stated"


@dataclass(frozen=True)
class Amendment:
    """The recorded amendment whose decision is in force, and the registration it cites."""

    rule_from: str
    rule_to: str
    time: str
    # The citation as the amendment's entry in the record states it (`Citation.to_json`'s fields: gate, rule, commit,
    # committed, spec_sha256, and for a citation placed in history against the gate's numbers: numbers_at,
    # after_numbers, post_hoc).
    citation: Mapping[str, Any] = field(default_factory=dict)

    @property
    def post_hoc(self) -> bool:
        """The cited registration came after this gate's numbers: a correction, not a pre-registered rule."""
        return self.citation.get("post_hoc") is True

    @property
    def kind(self) -> str:
        """"a POST-HOC correction" or "prospective": what every surface calls the amendment."""
        return "a POST-HOC correction" if self.post_hoc else "prospective"

    def cites(self) -> str:
        """What the amendment cites, in one clause."""
        c = self.citation
        if not c:
            return "citing no registration"
        commit = str(c.get("commit", "?"))[:12]
        where = f"{c.get('rule', self.rule_to)} registered for {c.get('gate', '?')} at commit {commit}"
        if self.post_hoc:
            return f"{where}, {c.get('after_numbers', '?')} commit(s) after this gate's numbers"
        return f"{where}, before this gate's numbers"

    def to_json(self) -> dict[str, Any]:
        return {"rule_from": self.rule_from, "rule_to": self.rule_to, "time": self.time, "post_hoc": self.post_hoc,
                "citation": dict(self.citation) or None}


@dataclass(frozen=True)
class InForce:
    """An amendment's result that still stands for these generations, and the amendment it came from."""

    result: GateResult
    amendment: Amendment


def _verdicts(spec: GateSpec) -> list[Entry]:
    """The record's score and amendment entries, oldest first, from a record that verifies: an entry edited by
    hand (an amendment's rule changed, say) would otherwise change what every surface says is in force."""
    problem = record_problem(spec)
    if problem is not None:
        raise VoicegateError(f"{shown_path(spec.root, spec.artifacts.record)}: {problem} (`voicegate verify` says "
                             "BROKEN), and what is in force is read from its entries: restore it (from git, or a "
                             "backup) and run the command again")
    return [e for e in recorded_entries(spec.artifacts.record) if e.kind in ("score", "amend")]


def in_force(spec: GateSpec, result: GateResult) -> Entry | None:
    """The record's amendment entry whose rule decides `result`'s generations in its place, if any.

    Read from the record's chained entries (which a chain and git vouch for), never the run directory: the newest
    score or amendment entry is an amendment of these very generations to another rule. A score of other
    generations is news, recorded as such.
    """
    verdicts = _verdicts(spec)
    last = verdicts[-1] if verdicts else None
    if last is None or last.kind != "amend" or last.rule_to is None or last.rule_to == result.rule:
        return None
    if last.generations_sha256 != result.generations_sha256:
        return None
    return last


def amended(entry: Entry, registered: GateResult, result: GateResult) -> InForce:
    """The amendment `entry` (`in_force`) with its decision: `result`, the same generations re-scored under it."""
    return InForce(result, Amendment(rule_from=str(entry.rule_from or registered.rule), rule_to=result.rule,
                                     time=entry.time, citation=dict(entry.citation or {})))


@dataclass(frozen=True, kw_only=True)
class CandidateStanding:
    """A candidate's overall standing under the rule in force, the headline of its card: does it ship, and if not,
    what blocks it.

    `kind` is ``ships`` (the rule's recommendation), ``passes`` (every axis passes, another candidate is the pick),
    ``blocked`` (specificity, COPYING and/or DAMAGE fail; VOICE may fail too), ``inconclusive`` (only a deciding
    specificity blocks it, and the gate cannot tell: within noise), ``voice-fail`` (only VOICE fails) or
    ``unknown`` (a verdict is missing) or, under a sequential design, ``continue`` (its look decides nothing yet and
    no other axis blocks it). The label names the failing axes in pipeline order — VOICE, SPECIFICITY,
    COPYING, DAMAGE — the first one first; the pick's label says when the rule that picks it is a POST-HOC one.
    """

    name: str
    kind: str
    label: str
    blockers: tuple[str, ...]
    voice: Voice | str | None
    # The rule's recommendation (whatever its axes say), and whether that rule is a post-hoc correction.
    recommended: bool = False
    post_hoc: bool = False

    @property
    def ok(self) -> bool:
        return self.kind in ("ships", "passes")

    @property
    def icon(self) -> str:
        """✓ for a standing that passes, ? where the gate cannot tell, ✗ where an axis fails."""
        return "✓" if self.ok else "?" if self.kind in ("unknown", "inconclusive", "continue") else "✗"


def candidate_standing(arm: CandidateResult, deciding: str, ships: str | None,
                       post_hoc: bool = False, look: LookDecision | None = None) -> CandidateStanding:
    """`arm`'s standing under `deciding` when `ships` is the rule's pick (`post_hoc`: that rule is a correction);
    under a sequential design its VOICE is `look`'s decision."""
    voice: Voice | str | None = arm.voice_under(deciding)
    pending = look is not None and voice != Voice.RULER_WEAK and look.verdict == "CONTINUE"
    if look is not None and voice != Voice.RULER_WEAK:
        voice = look.verdict if look.verdict != "CONTINUE" else None
    # (axis, phrase) in pipeline order; a phrase starting "?" is a missing verdict, not a failing one.
    failed: list[tuple[str, str]] = []
    if voice in (Voice.FAIL, Voice.RULER_WEAK):
        failed.append(("VOICE", f"VOICE {voice}"))
    elif voice != Voice.PASS and not pending:
        failed.append(("VOICE", "?VOICE"))
    axis = arm.specificity
    if axis is not None and axis.decides:
        v = axis.under(deciding)
        if v == Specific.NOT_SPECIFIC:
            failed.append(("SPECIFICITY", "SPECIFICITY NOT-SPECIFIC"))
        elif v == Specific.INCONCLUSIVE:
            failed.append(("SPECIFICITY", "SPECIFICITY INCONCLUSIVE"))
        elif v == Specific.RULER_WEAK:
            weak = ", ".join(axis.weak) or "an impostor"
            failed.append(("SPECIFICITY", f"SPECIFICITY RULER-WEAK (the ruler cannot tell {weak} from the author)"))
        elif v != Specific.SPECIFIC:
            failed.append(("SPECIFICITY", "?SPECIFICITY"))
    if arm.copying == Copying.COPIED:
        failed.append(("COPYING", "COPYING"))
    elif arm.copying != Copying.NOT_COPIED:
        failed.append(("COPYING", "?COPYING"))
    if arm.damage == Damage.DAMAGE:
        failed.append(("DAMAGE", "DAMAGE"))
    elif arm.damage != Damage.NO_DAMAGE:
        failed.append(("DAMAGE", "?DAMAGE"))
    bad = [(a, p) for a, p in failed if not p.startswith("?")]
    blockers = tuple(a for a, _ in bad)
    picked = ships is not None and ships == arm.name

    def said(kind: str, label: str, blockers: tuple[str, ...] = ()) -> CandidateStanding:
        return CandidateStanding(name=arm.name, kind=kind, label=label, blockers=blockers, voice=voice,
                                 recommended=picked, post_hoc=picked and post_hoc)

    if look is not None and blockers == ("VOICE",):
        return said("voice-fail", f"VOICE FAIL at look {look.index} of {look.of}", blockers)
    if blockers == ("VOICE",):
        return said("voice-fail", f"VOICE {voice}", blockers)
    if bad:
        rest = [p for a, p in bad if a != "VOICE"]
        label = (f"VOICE {voice} · " if blockers[0] == "VOICE" else "") + "blocked by " + " + ".join(rest)
        kind = "inconclusive" if rest == ["SPECIFICITY INCONCLUSIVE"] and blockers[0] != "VOICE" else "blocked"
        return said(kind, label, blockers)
    if failed:
        missing = [p.lstrip("?") for _, p in failed]
        return said("unknown", "no verdict on " + " + ".join(missing))
    if pending and look is not None:
        return said("continue", f"VOICE CONTINUE at look {look.index} of {look.of}: not decided yet")
    if picked:
        return said("ships", "ships under a POST-HOC rule" if post_hoc else "ships")
    every = "every axis" if axis is not None and axis.decides else "all three"
    return said("passes", f"passes {every} (not the pick)")


def candidate_standings(result: GateResult, post_hoc: bool = False,
                        look: LookState | None = None) -> tuple[CandidateStanding, ...]:
    """Every candidate's standing under `result`'s rule and pick (`look`'s, under a sequential design), in the
    result's order."""
    if look is None:
        return tuple(candidate_standing(c, result.rule, result.ships, post_hoc) for c in result.candidates)
    return tuple(candidate_standing(c, result.rule, look.ships, post_hoc, look.decisions.get(c.name))
                 for c in result.candidates)


@dataclass(frozen=True)
class Standing:
    """What is in force, in the words every surface's first line says: the deciding rule and how it came to decide
    (as registered, a prospective amendment, or a POST-HOC correction), what ships under it, the error rates."""

    rule: str
    ships: str | None
    amended_from: str | None = None
    post_hoc: bool = False
    error_rates: ErrorRates | None = None
    # Every candidate's standing under the rule in force: the headline of its card in the report.
    candidates: tuple[CandidateStanding, ...] = ()
    # A registered sequential design's decision at the look scored (None: the fixed design); `ships` is its pick.
    look: LookState | None = None

    @classmethod
    def of(cls, result: GateResult, amended_from: str | None = None, post_hoc: bool = False,
           error_rates: ErrorRates | None = None, look: LookState | None = None) -> Standing:
        """The state in force when `result` decides (its rule and pick, every candidate's standing under them);
        under a sequential design, `look` decides what ships."""
        return cls(rule=result.rule, ships=result.ships if look is None else look.ships, amended_from=amended_from,
                   post_hoc=post_hoc, error_rates=error_rates, candidates=candidate_standings(result, post_hoc, look),
                   look=look)

    def candidate(self, name: str) -> CandidateStanding:
        """`name`'s standing; a candidate the state does not hold has no verdict here (a result the state was not
        computed from)."""
        found = next((c for c in self.candidates if c.name == name), None)
        return found or CandidateStanding(name=name, kind="unknown", label="no verdict in the state in force",
                                          blockers=(), voice=None)

    @property
    def how(self) -> str:
        """"as registered", "prospective amendment from X" or "POST-HOC correction of X"."""
        if self.amended_from is None:
            return "as registered"
        if self.post_hoc:
            return f"POST-HOC correction of {self.amended_from} (a rule registered after the numbers)"
        return f"prospective amendment from {self.amended_from}"

    @property
    def error_rates_text(self) -> str:
        return NOT_STATED if self.error_rates is None else self.error_rates.statement

    def words(self) -> str:
        """"rule R, as registered; ships: X; error rates: not stated": what every first line says (with the look,
        "sequential design, look 1 of 2 (3 seeds): CONTINUE — ...", before what ships under a sequential design)."""
        look = "" if self.look is None else f"sequential design, {self.look.summary()}; "
        return (f"rule {self.rule}, {self.how}; {look}ships: {self.ships or 'none'}; "
                f"error rates: {self.error_rates_text}")

    def line(self) -> str:
        """The same, led by "in force:" where no heading says it (the compose comment, the terminal)."""
        return f"in force: {self.words()}"


@dataclass(frozen=True)
class GateState:
    """What a reader of `score` is told: the decision in force, beside what the registered rule alone says."""

    # The decision in force: the registered rule's result, or an amendment's (as recorded, 6 decimals).
    result: GateResult
    # The registered rule's result on these generations (as recorded): what scores.json holds.
    registered: GateResult
    amendment: Amendment | None = None
    # `result` with every number at full precision: what `score --json` prints.
    full: GateResult | None = None
    # The statement of the decision's error rates (`gate._error_rates`); None: not stated (an older gate).
    error_rates: ErrorRates | None = None
    # A registered sequential design's decision at the look scored (None: the fixed design): what ships.
    look: LookState | None = None

    @property
    def gate(self) -> str:
        return self.result.gate

    @property
    def rule(self) -> str:
        return self.result.rule

    @property
    def ships(self) -> str | None:
        return self.result.ships if self.look is None else self.look.ships

    @property
    def registered_rule(self) -> str:
        return self.registered.rule

    @property
    def post_hoc(self) -> bool:
        return self.amendment is not None and self.amendment.post_hoc

    @property
    def failed(self) -> bool:
        """What `score --strict` exits 1 on: no candidate ships under the rule in force."""
        return self.ships is None

    def standing(self) -> Standing:
        """The first line every surface leads with."""
        a = self.amendment
        return Standing.of(self.result, amended_from=None if a is None else a.rule_from, post_hoc=self.post_hoc,
                           error_rates=self.error_rates, look=self.look)

    def in_force(self) -> str:
        """How the rule in force came to decide, in one clause."""
        a = self.amendment
        if a is None:
            return f"{self.rule}, as registered"
        return f"{self.rule}, amended from {a.rule_from} {a.time} ({a.kind}; cites {a.cites()})"

    def tag(self) -> str:
        """What the quiet line adds after what ships: how the rule in force came to decide ("" when registered)."""
        a = self.amendment
        return "" if a is None else f"; rule in force by amendment from {a.rule_from}, {a.kind}"

    def note(self) -> str | None:
        """The line said beside the numbers when an amendment decides (None: the registered rule does)."""
        a = self.amendment
        if a is None:
            return None
        return (f"as amended {a.time}: {a.rule_from} -> {self.rule} on these same generations ({a.kind}; cites "
                f"{a.cites()}); the decision in force is under {self.rule}")

    def failure(self) -> str:
        """The one line `score --strict` ends with when nothing ships."""
        a = self.amendment
        how = f" (amended from {a.rule_from}, {a.kind})" if a is not None else ""
        if self.look is not None:
            return f"{self.gate}: no candidate ships under {self.rule}{how}: sequential design, {self.look.summary()}"
        return f"{self.gate}: no candidate ships under {self.rule}{how}"

    def to_json(self) -> dict[str, Any]:
        """`score --json`: the result in force at full precision, `rule` and `ships` the state in force,
        with the registered rule and the amendment beside them."""
        data = (self.full or self.result).to_json()
        head = {"gate": data.pop("gate"), "rule": data.pop("rule"), "ships": data.pop("ships"),
                "registered_rule": self.registered_rule, "registered_ships": self.registered.ships,
                "amendment": None if self.amendment is None else self.amendment.to_json(),
                "error_rates": None if self.error_rates is None else self.error_rates.to_json()}
        if self.look is not None:
            # what ships is the look's decision; the fixed rule's pick stays beside it, not deciding
            head = {**head, "ships": self.ships, "registered_ships": self.ships,
                    "fixed_rule_ships": self.result.ships, "look": self.look.to_json()}
        return {**head, **data}


def recorded_standing(spec: GateSpec, recorded: Mapping[str, Any], current: GateResult) -> Standing:
    """What is in force by the recorded state (`current`, the result recorded.json holds as read under the verdict
    lock): the result's rule, and how it came to decide as the record's newest score or amendment entry says."""
    stated = error_rates(spec, current)
    registration = load_registration(spec) if spec.looks is not None else None  # a fixed design reads no more
    look = look_state(spec, None if registration is None else registration.design, current)
    verdicts = _verdicts(spec)
    last = verdicts[-1] if verdicts else None
    if last is None or last.kind != "amend" or last.rule_to != current.rule:
        return Standing.of(current, error_rates=stated, look=look)
    return Standing.of(current, amended_from=str(last.rule_from or "?"), post_hoc=last.post_hoc is True,
                       error_rates=stated, look=look)


def gate_state(spec: GateSpec, registered: GateResult, full: GateResult | None, in_force: InForce | None,
               full_in_force: GateResult | None = None, look: LookState | None = None) -> GateState:
    """The state in force for a score whose registered-rule result is `registered` (`full`: at full precision;
    `look`: a sequential design's decision at the look scored)."""
    if in_force is None:
        return GateState(result=registered, registered=registered, full=full,
                         error_rates=error_rates(spec, registered), look=look)
    return GateState(result=in_force.result, registered=registered, amendment=in_force.amendment, full=full_in_force,
                     error_rates=error_rates(spec, in_force.result), look=look)
