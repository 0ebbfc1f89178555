"""The verdict layer: per-seed distances in, delta_cb, floors, verdicts and the ship pick out.

Pure and small on purpose: it is the seam the lv-bronte reference case drives
with constructed distances (DESIGN.md §3). Every registered floor rule is
applied to every candidate, always; the deciding rule decides and the others
are shown, with `disagree` set wherever two rules give different verdicts.

Comparisons are made on values rounded to 12 decimals, so float noise in a mean
of seeds cannot flip a verdict at equality; reported numbers are rounded to 6.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from voicegate.spec._rules import RULES, get_rule, spread

DIGITS = 6


def rnd(x: float | None) -> float | None:
    """The one rounding every reported float goes through (deterministic JSON bytes)."""
    if x is None or not math.isfinite(float(x)):
        return None  # JSON has no NaN/inf; "no number" is what they mean here
    return round(float(x), DIGITS) + 0.0  # + 0.0 turns -0.0 into 0.0


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def passes(delta: float, floor: float) -> bool:
    return round(delta, 12) > round(floor, 12)


def ship_pick(candidates: Sequence[dict[str, Any]], prefer: Sequence[str] = ()) -> str | None:
    """Among candidates passing all three axes: the spec's preference order, else the largest ratio."""
    ok = [c for c in candidates
          if c.get("voice_decides") == "PASS" and c.get("copying") == "NOT-COPIED" and c.get("damage") == "NO-DAMAGE"]
    if not ok:
        return None
    rank = {name: i for i, name in enumerate(prefer)}

    def key(c: dict[str, Any]) -> tuple[int, float, str]:
        ratio = c["ratio"] if c["ratio"] is not None else float("inf")  # floor 0 and PASS: infinitely clear
        return (rank.get(c["name"], len(rank)), -ratio, c["name"])

    return min(ok, key=key)["name"]


def decide(distances: Mapping[str, Mapping[Any, float]], base: str, candidates: Sequence[str], *,
           rule: str, copying: Mapping[str, str] | None = None, damage: Mapping[str, str] | None = None,
           prefer: Sequence[str] = ()) -> dict[str, Any]:
    """Verdicts from per-seed distances.

    distances: arm -> seed -> d(arm, seed), for the base and every candidate.
    copying / damage: candidate -> verdict string, decided elsewhere from their
    own statistics; a candidate without one cannot ship.
    Returns {"rule", "ships", "arms": [base entry, candidate entries...]}.
    """
    deciding = get_rule(rule)
    dist = {arm: dict(per_seed) for arm, per_seed in distances.items()}
    for arm in (base, *candidates):
        if not dist.get(arm):
            raise ValueError(f"no distances for arm {arm!r}")
    base_mean = _mean(list(dist[base].values()))

    def entry(arm: str, role: str) -> dict[str, Any]:
        per_seed = dist[arm]
        return {"name": arm, "role": role,
                "distances": {str(s): rnd(d) for s, d in sorted(per_seed.items(), key=lambda kv: int(kv[0]))},
                "mean_distance": rnd(_mean(list(per_seed.values()))),
                "spread": rnd(spread(per_seed))}

    arms = [entry(base, "base")]
    for arm in candidates:
        e = entry(arm, "candidate")
        delta = base_mean - _mean(list(dist[arm].values()))
        floors = {rid: r.floor(dist, base, arm) for rid, r in RULES.items()}
        voice = {rid: "PASS" if passes(delta, f) else "FAIL" for rid, f in floors.items()}
        ratios = {rid: (delta / f if f > 0 else None) for rid, f in floors.items()}
        e.update({
            "delta_cb": rnd(delta),
            "floors": {rid: rnd(f) for rid, f in floors.items()},
            "voice": voice,
            "ratios": {rid: rnd(x) for rid, x in ratios.items()},
            "ratio": rnd(ratios[deciding.id]),
            "disagree": len(set(voice.values())) > 1,
            "voice_decides": voice[deciding.id],
            "copying": (copying or {}).get(arm),
            "damage": (damage or {}).get(arm),
        })
        arms.append(e)
    ships = ship_pick(arms[1:], prefer)
    return {"rule": deciding.id, "ships": ships, "arms": arms}
