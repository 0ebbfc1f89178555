"""A registered sequential design at `score`: which look the stored seeds are, and what that look decides.

The look is the number of seeds stored per arm; it must be a registered look, and the seeds the first that many
of `seeds` in the spec's order (a look chosen among more seeds would be a choice made after seeing them). Each
candidate's one-sided p-value of the deciding t rule (delta_cb against ε, Welch's SE and df) is held to that
look's boundaries as the registration recorded them. `LookState` is that look's decision, held by the gate's
state in force so that every surface (the record, `score` in each form, the report, `ship`) says the same.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from voicegate._errors import VoicegateError
from voicegate.scoring import CandidateResult, Copying, Damage, GateResult, Specific, Specificity, Voice
from voicegate.spec import (
    GateSpec,
    Look,
    LookDecision,
    Registration,
    decide_look,
    get_rule,
    smallest_in_units,
    welch,
)


def check_look(spec: GateSpec, registration: Registration, rows: Sequence[Mapping[str, Any]]) -> int | None:
    """The seeds per arm of the look the stored rows are (None: a fixed design); refused where they are not one."""
    design = registration.design
    if design is None:
        return None
    seeds: dict[str, set[int]] = {}
    for row in rows:
        if row.get("kind", "voice") == "voice":
            seeds.setdefault(str(row["arm"]), set()).add(int(row["seed"]))
    counts = {len(s) for s in seeds.values()}
    looks = ", ".join(str(look.seeds) for look in design)
    if len(counts) != 1:
        raise VoicegateError(f"refusing to score {spec.gate}: its arms hold different numbers of seeds "
                             f"({', '.join(f'{a} {len(s)}' for a, s in sorted(seeds.items()))}); a sequential "
                             f"design decides at its registered looks only ({looks} seeds per arm)")
    n = counts.pop()
    if n not in {look.seeds for look in design}:
        raise VoicegateError(f"refusing to score {spec.gate}: {n} seeds per arm is not a registered look "
                             f"({looks} seeds per arm); generate to the next look")
    first = set(spec.seeds[:n])
    if any(s != first for s in seeds.values()):
        raise VoicegateError(f"refusing to score {spec.gate}: a look is the first {n} seeds of `seeds` "
                             f"({', '.join(map(str, spec.seeds[:n]))}), in the registered order")
    return n


def p_value(distances: Mapping[str, Mapping[int, float]], base: str, candidate: str, smallest_sds: float,
            reads_effect: bool) -> float:
    """The one-sided p-value of the t rules' test that delta_cb exceeds ε (Welch's SE and df)."""
    from scipy.special import stdtr

    se, df = welch(distances, base, candidate)
    b, c = distances[base].values(), distances[candidate].values()
    delta = sum(b) / len(b) - sum(c) / len(c)
    eps = smallest_in_units(smallest_sds, b) if reads_effect else 0.0
    if se in (0.0, math.inf) or not math.isfinite(eps):
        return 1.0  # seeds that gave one value, or one seed: nothing to test against, nothing passes
    return float(stdtr(df, -(delta - eps) / se))


def look_decisions(spec: GateSpec, design: Sequence[Look], result: GateResult,
                   seeds: int) -> dict[str, LookDecision]:
    """Each candidate's decision at the look of `seeds` seeds per arm: the first look up to it that decided it.

    Each earlier look is decided on the first n_j seeds of `seeds` from the same recorded per-seed distances (a
    seed's distance is measured on its own rows), exactly what `score` said at that look (`design_decisions`).
    """
    arms = {a.name: a for a in result.arms}
    distances = {name: {int(s): float(v) for s, v in a.distances.items() if v is not None}
                 for name, a in arms.items()}
    base = next(a.name for a in result.arms if a.is_base)
    rule = get_rule(spec.floor_rule)
    candidates = [a.name for a in result.arms if a.role == "candidate"]
    return design_decisions(design, distances, base, candidates, spec.seeds, seeds,
                            smallest_sds=spec.smallest_effect, reads_effect=rule.smallest_effect)


def design_decisions(design: Sequence[Look], distances: Mapping[str, Mapping[Any, float]], base: str,
                     candidates: Sequence[str], order: Sequence[Any], seeds: int, *, smallest_sds: float,
                     reads_effect: bool) -> dict[str, LookDecision]:
    """Each of `candidates`' decision up to the look of `seeds` seeds per arm, a look at a time on the first n_k
    seeds of `order` (per-seed distances keyed as `order` keys them): pure, what `score` and `calibrate` decide by.

    A PASS or a FAIL at an earlier look is final (the design stopped that candidate there: its boundaries were
    simulated so), so it is kept, not decided again on more seeds.
    """
    out: dict[str, LookDecision] = {}
    for look in design:
        if look.seeds > seeds:
            break
        open_ = [name for name in candidates if name not in out or out[name].verdict == "CONTINUE"]
        if not open_:
            break
        first = order[:look.seeds]
        at = {name: {s: distances[name][s] for s in first if s in distances[name]} for name in (base, *open_)}
        for name in open_:
            out[name] = decide_look(p_value(at, base, name, smallest_sds, reads_effect), design, look.seeds)
    return out


@dataclass(frozen=True)
class LookState:
    """A sequential design's decision at the look scored: each candidate's, and the gate's (what ships).

    Under a sequential design this, not the fixed rule's verdicts, is what ships: a candidate ships only with a
    PASS at the look (and COPYING, DAMAGE and a deciding specificity passing, as under the fixed rule); while a
    candidate is still undecided (CONTINUE) and none ships, nothing ships yet and the next look is due.
    """

    design: tuple[Look, ...]
    index: int  # 1-based
    decisions: Mapping[str, LookDecision] = field(default_factory=dict)
    ships: str | None = None

    @property
    def seeds(self) -> int:
        return self.design[self.index - 1].seeds

    @property
    def next(self) -> Look | None:
        """The next registered look (None: this is the last)."""
        return self.design[self.index] if self.index < len(self.design) else None

    @property
    def verdict(self) -> str:
        """PASS (a candidate ships), CONTINUE (none ships yet, one is undecided) or FAIL (none ships)."""
        if self.ships is not None:
            return "PASS"
        return "CONTINUE" if any(d.verdict == "CONTINUE" for d in self.decisions.values()) else "FAIL"

    def stopped(self, name: str) -> LookDecision | None:
        """`name`'s decision where an earlier look made it (final: not decided again here); None otherwise."""
        d = self.decisions.get(name)
        return d if d is not None and d.index < self.index else None

    def said(self, name: str) -> str:
        """What the design says of `name`: this look's decision, or where an earlier look stopped it."""
        d = self.decisions.get(name)
        if d is None:
            return "no decision"
        if d.index < self.index:
            return f"stopped at {d.line}; final: not decided again at look {self.index}"
        return d.line

    def summary(self) -> str:
        """"look 1 of 2 (3 seeds): CONTINUE — continue to look 2 (5 seeds)": what every surface says of the look."""
        head = f"look {self.index} of {len(self.design)} ({self.seeds} seeds)"
        nxt = self.next
        if self.verdict == "PASS":
            pick = self.stopped(str(self.ships))
            at = "" if pick is None else f" (stopped at look {pick.index}, {pick.look.seeds} seeds)"
            return f"{head}: PASS — {self.ships} ships{at}"
        if self.verdict == "CONTINUE" and nxt is not None:
            return f"{head}: CONTINUE — nothing ships yet; continue to look {self.index + 1} ({nxt.seeds} seeds)"
        decided = self.decisions.values()
        if decided and all(d.verdict == "FAIL" and d.look.futility is not None for d in decided):
            last = max(decided, key=lambda d: d.index)
            at = "" if last.index == self.index else f" (stopped at look {last.index}, {last.look.seeds} seeds)"
            return f"{head}: FAIL for futility — nothing ships{at}"
        return f"{head}: FAIL — nothing ships"

    def ship_line(self) -> str:
        """The line `score --quiet`, the terminal and JUnit say of what ships."""
        return f"ships: {self.ships or 'none'} (sequential design, {self.summary()})"

    def lines(self) -> list[str]:
        """One line a candidate, naming the look: the record's entry and the terminal list them."""
        return [f"{name}: {self.said(name)}" for name in self.decisions]

    def ship_warning(self, arm: str) -> str | None:
        """Why shipping `arm` goes against the design's decision (None: it is the design's pick)."""
        if arm == self.ships:
            return None
        said = self.said(arm)
        return (f"warning: {arm} is not what the registered sequential design ships ({said}; {self.ship_line()}); "
                "the decision is recorded beside it")

    def to_json(self) -> dict[str, Any]:
        """`score --json`'s `look`: the look, the gate's decision, each candidate's, and every boundary."""
        nxt = self.next
        return {"index": self.index, "of": len(self.design), "seeds": self.seeds, "decision": self.verdict,
                "ships": self.ships, "summary": self.summary(),
                "next": None if nxt is None else {"index": self.index + 1, "seeds": nxt.seeds},
                "candidates": {name: {"decision": d.verdict, "look": d.index, "p": d.p, "efficacy": d.look.efficacy,
                                      "futility": d.look.futility} for name, d in self.decisions.items()},
                "boundaries": [look.to_json() for look in self.design]}


def _eligible(arm: CandidateResult, rule: str) -> bool:
    """Every axis but VOICE lets `arm` ship (and its ruler can see the author)."""
    return may_ship(ruler_weak=arm.voice_under(rule) == Voice.RULER_WEAK, copying=arm.copying, damage=arm.damage,
                    specificity=arm.specificity, rule=rule)


def may_ship(*, ruler_weak: bool, copying: str | None, damage: str | None, specificity: Specificity | None,
             rule: str) -> bool:
    """Whether a candidate the design PASSes ships: its ruler sees the author, it is NOT-COPIED and NO-DAMAGE, and
    SPECIFIC under `rule` where its specificity decides (`score`'s look and `calibrate`'s simulated looks)."""
    return (not ruler_weak and copying == Copying.NOT_COPIED and damage == Damage.NO_DAMAGE
            and (specificity is None or not specificity.decides or specificity.under(rule) == Specific.SPECIFIC))


def check_amendable(spec: GateSpec) -> None:
    """Refuse amending a registered sequential design: its α holds over every look for the rule its boundaries
    were simulated for at `register`. A rule changed between looks is a choice made after seeing a look, and an
    amendment holds only for the generations it re-scored, so the next look would fall back to the registered
    rule (which the gate could then never be amended back from): a changed rule is a new design."""
    if spec.looks is not None:
        raise VoicegateError(f"refusing to amend {spec.gate}: its registered sequential design fixes its rule "
                             f"({spec.floor_rule}) with the boundaries simulated for it over every look; another "
                             "rule is a new design, registered before its own generations")


def look_seeds(result: GateResult) -> int:
    """The seeds per arm `result` was scored on: its look, under a sequential design."""
    base = next((a for a in result.arms if a.is_base), None)
    return 0 if base is None else len(base.distances)


def look_state(spec: GateSpec, design: Sequence[Look] | None, result: GateResult) -> LookState | None:
    """The decision at the look `result` (as recorded: 6 decimals, what every surface reads) was scored at; None
    for a fixed design, or a result at no registered look (scored before the design was registered)."""
    if design is None:
        return None
    seeds = look_seeds(result)
    index = next((k for k, look in enumerate(design) if look.seeds == seeds), None)
    if index is None:
        return None
    decisions = look_decisions(spec, design, result, seeds)
    passed = [c for c in result.candidates if decisions[c.name].verdict == "PASS" and _eligible(c, result.rule)]
    # the design stopped at the first look where a candidate ships: a later look's pass does not replace its pick
    first = min((decisions[c.name].index for c in passed), default=None)
    passed = [c for c in passed if decisions[c.name].index == first]
    rank = {name: i for i, name in enumerate(spec.prefer)}
    # the spec's preference order, else the clearest pass (the smallest p), as the fixed rule's pick goes by ratio
    ships = min(passed, key=lambda c: (rank.get(c.name, len(rank)), decisions[c.name].p, c.name)).name \
        if passed else None
    return LookState(design=tuple(design), index=index + 1, decisions=decisions, ships=ships)
