"""Dated gate checks: what a score says or decides beyond the floor rules, each in force from a date.

A gate is scored under the checks in force on the day it was registered (its registration record's
`registered_at`), as it computes the floor rules in force that day: a gate registered before a check
existed re-scores byte for byte under a newer voicegate, and one registered since is held to it. The
dates are part of the contract and never change once a check ships; a changed check is a new version.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Literal

CheckId = Literal["thin-evidence", "ruler-weak"]


@dataclass(frozen=True)
class GateCheck:
    id: CheckId
    version: int
    registered: _dt.date
    summary: str

    @property
    def signature(self) -> str:
        return f"{self.id}@{self.version}"


THIN_EVIDENCE = GateCheck(
    id="thin-evidence", version=1, registered=_dt.date(2026, 12, 7),
    summary="one impostor, an impostor's file that is also background, or one author holding most of the "
            "background: said in the score result's warnings (so on the record and the report), not only by register")

RULER_WEAK = GateCheck(
    id="ruler-weak", version=1, registered=_dt.date(2026, 12, 7),
    summary="the ruler measured at a pool's length (training pools vs background pools, and vs each impostor's): "
            "under the threshold, VOICE (or specificity, naming the impostor) is RULER-WEAK, an abstention that "
            "never ships")

CHECKS: dict[str, GateCheck] = {c.id: c for c in (THIN_EVIDENCE, RULER_WEAK)}


def checks_in_force(on: _dt.date) -> tuple[str, ...]:
    """The ids of the checks in force on `on`: what a gate registered that day is scored under."""
    return tuple(cid for cid, c in CHECKS.items() if c.registered <= on)
