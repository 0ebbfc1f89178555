"""A registered sequential design at `generate`: the next look's seeds only, and only when the design is not decided.

A sequential design is decided at its looks (`floor.looks`): `generate` makes the seeds of the first look not yet
complete and stops there, so `score` can decide at that look before more seeds are spent. Where the look does not
decide (CONTINUE), `generate` again makes the next one. Where the record's score decided the design (PASS: a
candidate ships; FAIL: none can), the decision is final and `generate` makes nothing, even after the run directory
was deleted: the decision is read from the gate record's score entries, which a chain and git vouch for. Where a
look is stored and not scored, `generate` makes nothing either: seeds made past a look nobody scored are spent
whether or not that look would have decided.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from voicegate._errors import VoicegateError
from voicegate.run import generations_hash
from voicegate.spec import GateSpec, Registration, shown_path

if TYPE_CHECKING:
    from voicegate.artifacts import Entry


_SHIPS = re.compile(r": PASS — (.+?) ships(?: \(|$)")
_STOPPED = re.compile(r"\(stopped at look (\d+), (\d+) seeds\)$")


@dataclass(frozen=True)
class LookStop:
    """Where `generate` stopped at a look without making a row: the design decided there, or it is not scored."""

    index: int
    of: int
    seeds: int
    decision: str | None  # PASS or FAIL: the recorded decision (final); None: the look is stored, not scored
    line: str

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "of": self.of, "seeds": self.seeds, "decision": self.decision,
                "message": self.line}


def _complete(spec: GateSpec, rows: Sequence[Mapping[str, Any]]) -> set[int]:
    cells = Counter((str(r["arm"]), int(r["seed"])) for r in rows if r.get("kind", "voice") == "voice")
    return {s for s in spec.seeds if all(cells[(a.name, s)] >= len(spec.prompts) for a in spec.arms)}


def next_look(spec: GateSpec, rows: Sequence[Mapping[str, Any]]) -> GateSpec:
    """`spec` with its seeds cut to the first look whose seeds are not all stored (unchanged: a fixed design,
    or every look stored)."""
    if spec.looks is None:
        return spec
    complete = _complete(spec, rows)
    for n in spec.looks:
        if not set(spec.seeds[:n]) <= complete:
            return replace(spec, seeds=spec.seeds[:n])
    return spec


def _scores(spec: GateSpec, reg: Registration) -> list[Entry]:
    """The record's score entries at a look of this registration's design, oldest first (a superseded
    registration's looks are another design's)."""
    from voicegate.artifacts import recorded_entries

    return [e for e in recorded_entries(spec.artifacts.record)
            if e.kind == "score" and e.look is not None and (reg.commit is None or e.registration_commit == reg.commit)]


def _record_intact(spec: GateSpec) -> None:
    """Refuse a gate record that does not verify: its entries are where the design's decisions are read, and an
    entry edited by hand (a PASS made to read CONTINUE) would otherwise buy the next look's seeds."""
    from voicegate.artifacts import verify_gates

    record = spec.artifacts.record
    # A record deleted while the run's ledger lists its entries is a problem too (verify says "gone").
    check = next((c for c in verify_gates(spec.root, spec.gate) if c.path.resolve() == record.resolve()), None)
    if check is not None and check.problem:
        raise VoicegateError(f"{shown_path(spec.root, record)}: {check.problem}; generate reads the sequential "
                             f"design's decisions from it (`voicegate verify {spec.gate}` says what); nothing made")


def decided(spec: GateSpec, reg: Registration) -> LookStop | None:
    """The design's decision, where a recorded score made it (None: a fixed design, or nothing decided yet); a
    record that does not verify is refused."""
    if spec.looks is None:
        return None
    _record_intact(spec)
    final = next((look for e in reversed(_scores(spec, reg)) if (look := e.look) and look.decision != "CONTINUE"),
                 None)
    if final is None:
        return None
    ships = _SHIPS.search(final.summary) if final.decision == "PASS" else None
    then = ("more seeds are a new registration" if ships is None else
            f"`voicegate ship {spec.gate} {ships.group(1)} --reason TEXT` records a shipping decision")
    # a later look (seeds made anyway) states where the design stopped: that look decided
    stopped = _STOPPED.search(final.summary)
    index, seeds = (final.index, final.seeds) if stopped is None else (int(stopped.group(1)), int(stopped.group(2)))
    return LookStop(index, final.of, seeds, final.decision,
                    f"{spec.gate}: nothing to generate: its registered sequential design decided at {final.summary}; "
                    f"a decision is final, so no more seeds are made ({then}; `voicegate report "
                    f"{spec.gate}` shows it)")


def not_scored(spec: GateSpec, reg: Registration, rows: Sequence[dict[str, Any]]) -> LookStop | None:
    """The look the stored rows complete, where no score decided at it on these very rows and the next look is
    not begun (None: a fixed design, the first look, a look scored CONTINUE, or a next look begun, which is
    finished: its seeds are spent, and a later look decides each earlier one on its own first seeds)."""
    if spec.looks is None:
        return None
    complete = _complete(spec, rows)
    done = [n for n in spec.looks if set(spec.seeds[:n]) <= complete]
    if not done or done[-1] == spec.looks[-1]:
        return None
    n = done[-1]
    if any(int(r["seed"]) not in spec.seeds[:n] for r in rows):
        return None
    newest = next(iter(reversed(_scores(spec, reg))), None)
    if newest is not None and newest.look is not None and newest.look.seeds == n \
            and newest.generations_sha256 == generations_hash(rows):
        return None
    index, of = spec.looks.index(n) + 1, len(spec.looks)
    after = spec.looks[index]
    return LookStop(index, of, n, None,
                    f"{spec.gate}: nothing to generate yet: look {index} of {of} ({n} seeds) is stored and not "
                    f"scored; run `voicegate score {spec.gate}` to decide at it (look {index + 1}, {after} seeds, is "
                    "made only after a look that decides nothing)")
