"""Floor rules: the registered, versioned definitions of a candidate's sensitivity floor.

A rule is data plus one pure function. `amend` may only switch to a rule whose
registration date precedes the amendment, so the dates here are part of the
contract and never change once a rule ships; a changed definition is a new
version with a new date.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

Distances = Mapping[str, Mapping[int, float]]
"""arm name -> seed -> d(arm, seed)."""

RuleId = Literal["global-max-spread", "pairwise-max-spread"]
"""The id of a registered rule: a misspelt id in code is a mypy error. Kept equal to `RULES`'s keys (tested)."""


def spread(per_seed: Mapping[int, float]) -> float:
    """max over seeds minus min over seeds (DESIGN.md §3)."""
    values = list(per_seed.values())
    if not values:
        raise ValueError("an arm with no seeds has no spread")
    return max(values) - min(values)


@dataclass(frozen=True)
class FloorRule:
    id: RuleId
    version: int
    registered: _dt.date
    summary: str
    _floor: Callable[[Distances, str, str], float]

    def floor(self, distances: Distances, base: str, candidate: str) -> float:
        """The floor candidate's delta_cb must exceed to PASS the voice axis."""
        return self._floor(distances, base, candidate)

    @property
    def signature(self) -> str:
        return f"{self.id}@{self.version}"


def _global_max_spread(distances: Distances, base: str, candidate: str) -> float:
    return max(spread(per_seed) for per_seed in distances.values())


def _pairwise_max_spread(distances: Distances, base: str, candidate: str) -> float:
    # The variability of a difference A-B depends on A and B only: a third arm
    # (one nobody ships) must not be able to fail the one that ships.
    return max(spread(distances[candidate]), spread(distances[base]))


GLOBAL_MAX_SPREAD = FloorRule(
    id="global-max-spread",
    version=1,
    registered=_dt.date(2026, 9, 16),
    summary="floor = the largest seed spread of ANY arm in the run",
    _floor=_global_max_spread,
)

PAIRWISE_MAX_SPREAD = FloorRule(
    id="pairwise-max-spread",
    version=1,
    registered=_dt.date(2026, 9, 17),
    summary="floor = max(spread(candidate), spread(base))",
    _floor=_pairwise_max_spread,
)

RULES: dict[str, FloorRule] = {r.id: r for r in (GLOBAL_MAX_SPREAD, PAIRWISE_MAX_SPREAD)}


def get_rule(rule_id: str) -> FloorRule:
    from voicegate._errors import VoicegateError

    try:
        return RULES[rule_id]
    except KeyError:
        known = ", ".join(sorted(RULES))
        raise VoicegateError(f"unknown floor rule {rule_id!r} (registered rules: {known})") from None
