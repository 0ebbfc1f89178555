"""The verdict layer: per-seed distances in, delta_cb, floors, verdicts and the ship pick out.

Pure and small on purpose: it is the seam the lv-bronte reference case drives
with constructed distances (docs/design.md §3). Every registered floor rule is
applied to every candidate, always; the deciding rule decides and the others
are shown, with `disagree` set wherever two rules give different verdicts.

Comparisons are made on values rounded to 12 decimals, so float noise in a mean
of seeds cannot flip a verdict at equality; recorded numbers are rounded to 6
(`digits=None` keeps them at full precision, for `score --json`: same verdicts,
same pick, unrounded numbers).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from voicegate.scoring._result import (
    Copying,
    Damage,
    Specific,
    Specificity,
    Voice,
)
from voicegate.spec import RULES, SMALLEST_EFFECT, Effect, PromptParts, Role, get_rule, smallest_in_units, spread
from voicegate.spec import zero_floor_fails as zero_floor_fails_under

DIGITS = 6
V = TypeVar("V", bound=StrEnum)


def rnd(x: float | None, digits: int | None = DIGITS) -> float | None:
    """The one rounding every reported float goes through (deterministic JSON bytes).

    `digits=None`: the number at full precision (still None for NaN/inf, still no -0.0).
    """
    if x is None or not math.isfinite(float(x)):
        return None  # JSON has no NaN/inf; "no number" is what they mean here
    return (float(x) if digits is None else round(float(x), digits)) + 0.0  # + 0.0 turns -0.0 into 0.0


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def passes(delta: float, floor: float, *, zero_fails: bool = False) -> bool:
    """delta above floor; `zero_fails`: a floor of 0 never passes (the gate decides under REPLICATES_REQUIRED)."""
    f = round(floor, 12)
    return round(delta, 12) > f and not (zero_fails and f == 0)


@dataclass(frozen=True, kw_only=True)
class ArmVoice:
    """One arm's voice distances: what every arm, the base included, has."""

    name: str
    role: Role
    distances: dict[str, float | None]
    mean_distance: float | None
    spread: float | None


@dataclass(frozen=True, kw_only=True)
class CandidateVoice(ArmVoice):
    """A candidate's voice axis under every registered rule, plus the two verdicts decided elsewhere."""

    delta_cb: float | None
    floors: dict[str, float | None]
    voice: dict[str, Voice]
    ratios: dict[str, float | None]
    ratio: float | None
    disagree: bool
    voice_decides: Voice
    copying: Copying | None
    damage: Damage | None
    # False only when specificity decides and the candidate is not SPECIFIC under the deciding rule.
    specific_ok: bool = True
    # rule id -> the smallest true delta_cb the design sees with 80% power (only rules with a power model).
    detectable: dict[str, float | None] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Decision:
    rule: str
    ships: str | None
    base: ArmVoice
    candidates: tuple[CandidateVoice, ...]

    @property
    def arms(self) -> tuple[ArmVoice, ...]:
        return (self.base, *self.candidates)


def ship_pick(candidates: Sequence[CandidateVoice], prefer: Sequence[str] = ()) -> str | None:
    """Among candidates passing all three axes (and SPECIFIC, where specificity decides): the spec's
    preference order, else the largest ratio.

    Ratios are compared as recorded (6 decimals), whatever precision the candidates carry, so a
    full-precision result picks what the recorded one picks (a tie at 6 decimals goes by name).
    """
    ok = [c for c in candidates
          if c.voice_decides == Voice.PASS and c.copying == Copying.NOT_COPIED and c.damage == Damage.NO_DAMAGE
          and c.specific_ok]
    if not ok:
        return None
    rank = {name: i for i, name in enumerate(prefer)}

    def key(c: CandidateVoice) -> tuple[int, float, str]:
        ratio = round(c.ratio, DIGITS) if c.ratio is not None else float("inf")  # floor 0 and PASS: infinitely clear
        return (rank.get(c.name, len(rank)), -ratio, c.name)

    return min(ok, key=key).name


def _specific_ok(axis: Specificity | None, rule: str) -> bool:
    return axis is None or not axis.decides or axis.under(rule) == Specific.SPECIFIC


def _verdict(kind: type[V], value: str | None) -> V | None:
    return None if value is None else kind(value)


def rule_set(rule: str, rules: Iterable[str] | None = None) -> tuple[str, ...]:
    """The rules a result computes, in the registry's order: `rules` (None: every registered rule a gate computes
    without choosing it, `by_choice` ones aside) and the deciding one."""
    wanted = set((r for r, f in RULES.items() if not f.by_choice) if rules is None else rules) | {get_rule(rule).id}
    for rid in wanted:
        get_rule(rid)  # an unknown id is refused, not skipped
    return tuple(r for r in RULES if r in wanted)


def decide(distances: Mapping[str, Mapping[Any, float]], base: str, candidates: Sequence[str], *,
           rule: str, rules: Iterable[str] | None = None, copying: Mapping[str, str] | None = None,
           damage: Mapping[str, str] | None = None,
           specificity: Mapping[str, Specificity] | None = None, prefer: Sequence[str] = (),
           digits: int | None = DIGITS, ruler_weak: bool = False, smallest_effect: float = SMALLEST_EFFECT,
           zero_floor_fails: bool | None = None, prompts: PromptParts | None = None, flip_seed: int = 0) -> Decision:
    """Verdicts from per-seed distances; reported numbers rounded to `digits` (None: full precision).

    distances: arm -> seed -> d(arm, seed), for the base and every candidate.
    copying / damage: candidate -> verdict string, decided elsewhere from their
    own statistics; a candidate without one cannot ship. specificity: candidate ->
    its specificity axis (none: not checked); where it decides, only a SPECIFIC one can ship.
    rules: the rules to compute beside the deciding one (None: every registered rule). ruler_weak: the
    ruler cannot tell the author's own writing from strangers' (`_ruler.PoolNumbers.weak_author`): every
    VOICE verdict is RULER-WEAK, an abstention that never ships, its numbers still computed and shown.
    smallest_effect: `floor.smallest_effect`, in base-seed SDs (read only by a rule that states one).
    zero_floor_fails: whether a floor of 0 never passes (None: as the computed rules' dates say).
    prompts: each prompt's own distance for every (arm, seed) (`_prompts`), and flip_seed the seed of the sign
    flips (`spec.flip_seed(gate)`): read only by a paired rule, which cannot be computed without them.
    """
    deciding = get_rule(rule)
    computed = {rid: get_rule(rid) for rid in rule_set(rule, rules)}
    strict = zero_floor_fails_under(computed) if zero_floor_fails is None else zero_floor_fails
    dist = {arm: dict(per_seed) for arm, per_seed in distances.items()}
    for arm in (base, *candidates):
        if not dist.get(arm):
            raise ValueError(f"no distances for arm {arm!r}")
    base_mean = mean(list(dist[base].values()))
    effect = Effect(smallest=smallest_in_units(smallest_effect, dist[base].values()) if any(
        r.smallest_effect for r in computed.values()) else 0.0, prompts=prompts, flip_seed=flip_seed)

    def stats(arm: str) -> dict[str, Any]:
        per_seed = dist[arm]
        return {"distances": {str(s): rnd(d, digits) for s, d in sorted(per_seed.items(), key=lambda kv: int(kv[0]))},
                "mean_distance": rnd(mean(list(per_seed.values())), digits), "spread": rnd(spread(per_seed), digits)}

    out: list[CandidateVoice] = []
    for arm in candidates:
        delta = base_mean - mean(list(dist[arm].values()))
        floors = {rid: r.floor(dist, base, arm, effect) for rid, r in computed.items()}
        detectable = {rid: d for rid, r in computed.items()
                      if (d := r.detectable(dist, base, arm, effect)) is not None}
        voice = {rid: Voice.RULER_WEAK if ruler_weak else Voice.PASS if passes(delta, f, zero_fails=strict)
                 else Voice.FAIL for rid, f in floors.items()}
        # Under the replicates provision a floor that is not a finite positive number (as verdicts compare it,
        # to 12 decimals) gives no ratio: "0.0x" beside no floor, or a bare ratio of a floor of 0, would read
        # as a measurement.
        ratios = {rid: (delta / f if (0 < round(f, 12) < math.inf if strict else f > 0) else None)
                  for rid, f in floors.items()}
        out.append(CandidateVoice(
            name=arm, role=Role.CANDIDATE, **stats(arm),
            delta_cb=rnd(delta, digits), floors={rid: rnd(f, digits) for rid, f in floors.items()}, voice=voice,
            ratios={rid: rnd(x, digits) for rid, x in ratios.items()}, ratio=rnd(ratios[deciding.id], digits),
            disagree=len(set(voice.values())) > 1, voice_decides=voice[deciding.id],
            detectable={rid: rnd(d, digits) for rid, d in detectable.items()},
            copying=_verdict(Copying, (copying or {}).get(arm)), damage=_verdict(Damage, (damage or {}).get(arm)),
            specific_ok=_specific_ok((specificity or {}).get(arm), deciding.id)))
    return Decision(rule=deciding.id, ships=ship_pick(out, prefer),
                    base=ArmVoice(name=base, role=Role.BASE, **stats(base)),
                    candidates=tuple(out))
