"""`calibrate` of a sequential design: its looks simulated on a pilot's draws, decided as `score` decides a look.

Per draw, each arm takes as many seeds as the design's last look (the fixed draws' discipline: the draws fall
into bootstrap blocks of the pilot, each draw distinct positions of its block's resample, in a random order).
Then, look by look on the first n_k of those seeds, `design_decisions` (the function `score` decides a look with,
on per-seed distances rounded as the record holds them) decides each arm alone, and the first look that decides
it stops it: a candidate would ship where the design PASSes it there and it may ship (`may_ship`: its ruler sees
the author, NOT-COPIED, NO-DAMAGE, SPECIFIC at that look where specificity decides); an A-vs-A arm's PASS is a
false pass. Each arm is its own one-candidate gate (as calibrate's fixed would-ship is `ship_pick` on the
candidate alone), so its seeds used are its stopping look's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from voicegate.gate._looks import design_decisions, may_ship
from voicegate.spec import GateSpec, Look, get_rule

SEQUENTIAL_SCHEME = ("per arm, independently, as the fixed draws are drawn (its own numpy default_rng((seed, 1))): "
                     "each draw takes the last look's seeds per arm, distinct positions of its block's bootstrap "
                     "resample in a random order; look k decides on the first n_k of them, as score decides a look "
                     "(per-seed distances rounded to the record's 6 decimals), and the first look that decides an "
                     "arm stops it; each arm is decided alone (a one-candidate gate)")


@dataclass(frozen=True)
class ArmDesign:
    """One arm under the sequential design over the draws: how often it passes (a candidate: would ship; an
    A-vs-A arm: a false pass), the seeds per arm it used on average, and how often it stopped at each look."""

    name: str
    passes: Any                   # `Share`: would ship (a candidate) or PASS (an A-vs-A arm, a false pass)
    expected_seeds: float
    stops: tuple[Any, ...]        # `Share` per look: the draws that stopped there
    voice_of: str | None = None
    measures: str = "false-pass rate"

    def to_json(self, key: str) -> dict[str, Any]:
        out: dict[str, Any] = {key: self.passes.to_json(), "expected_seeds": round(self.expected_seeds, 4),
                               "stops": [s.to_json() for s in self.stops]}
        if key == "would_ship":
            out = {"voice_of": self.voice_of, "would_ship_is": self.measures, **out}
        return out


@dataclass(frozen=True)
class SequentialRates:
    """The design simulated on the pilot: its looks and boundaries (as `register` records them), the rule whose
    p-value they bound, and per arm what `ArmDesign` says."""

    rule: str
    design: tuple[Look, ...]
    registered: bool              # the pilot's own registered design (else the looks asked for)
    alpha: float
    draws: int
    rng_seed: int
    candidates: tuple[ArmDesign, ...]
    a_vs_a: tuple[ArmDesign, ...]
    # arm -> per draw, the stored seeds drawn, in the order the looks take them; per draw, arm -> (verdict, look,
    # p): what one draw decided, to replay it (as a gate of those seeds) without the draws' arithmetic
    drawn: dict[str, list[list[int]]] = field(default_factory=dict, repr=False, compare=False)
    decided: list[dict[str, tuple[str, int, float]]] = field(default_factory=list, repr=False, compare=False)

    @property
    def looks(self) -> tuple[int, ...]:
        return tuple(look.seeds for look in self.design)

    def to_json(self, scheme: bool = True) -> dict[str, Any]:
        """The result (`scheme`: with how the draws were drawn; a record entry's summary states it in words)."""
        return {"rule": self.rule, "alpha": self.alpha, "registered": self.registered,
                "looks": [look.to_json() for look in self.design], "draws": self.draws, "rng_seed": self.rng_seed,
                **({"draw_scheme": SEQUENTIAL_SCHEME} if scheme else {}),
                "candidates": {c.name: c.to_json("would_ship") for c in self.candidates},
                "a_vs_a": {a.name: a.to_json("false_pass") for a in self.a_vs_a}}

    def lines(self) -> list[str]:
        """What the terminal says beside the fixed-K table."""
        looks = ", ".join(map(str, self.looks))
        whose = "registered" if self.registered else "asked for (--looks)"
        out = [(f"  sequential design {whose}: looks at {looks} seeds per arm, {self.rule}, α {self.alpha:g}; "
               f"{self.draws} draws of {self.looks[-1]} seeds per arm, each arm decided look by look as score "
               "decides a look and stopped at the first that decides it")]

        def stops(a: ArmDesign) -> str:
            return ", ".join(f"look {k + 1} ({n}) {s.share:.3f}" for k, (n, s) in enumerate(zip(self.looks, a.stops,
                                                                                             strict=True)))
        for c in self.candidates:
            out.append(f"  {c.name}: would ship {c.passes.text()} (the {c.measures}); {c.expected_seeds:.2f} seeds "
                       f"per arm on average; stopped at {stops(c)}")
        for a in self.a_vs_a:
            out.append(f"  A-vs-A arm {a.name}, false-pass rate (design PASS): {a.passes.text()}; "
                       f"{a.expected_seeds:.2f} seeds per arm on average; stopped at {stops(a)}")
        if not self.a_vs_a:
            out.append("  no A-vs-A arm registered (role: a-vs-a): the design's false-pass rate is not measured")
        return out


def simulate_looks(spec: GateSpec, design: Sequence[Look], distances: Mapping[str, Mapping[int, float]],
                   toward: Mapping[str, Mapping[str, Mapping[int, float]]], *, copying: Mapping[str, str],
                   damage: Mapping[str, str], draws: int, rng_seed: int, alpha: float, registered: bool,
                   ruler_weak: bool = False, weak: Sequence[str] = (), zero_floor_fails: bool = True,
                   share: Any, block_of: Sequence[int]) -> SequentialRates:
    """The design's draws, decided: `distances` / `toward` as `decide_draws` takes them; `share(per_block)` turns
    per-block counts into a `Share` (the fixed draws' intervals); `block_of`: each draw's bootstrap resample of
    the pilot (`_calibrate.block_layout`)."""
    import numpy as np

    from voicegate.scoring import decided_arms, rnd, specificity

    rule = spec.floor_rule
    reads_effect = get_rule(rule).smallest_effect
    base = spec.base.name
    cands = [a.name for a in spec.candidates]
    fresh = [a.name for a in spec.a_vs_a]
    order = {arm: sorted(distances[arm]) for arm in (base, *cands, *fresh)}
    n_max = design[-1].seeds
    rng = np.random.default_rng((rng_seed, 1))  # its own stream: the fixed draws stay what they were
    blocks = max(block_of) + 1
    resampled = {arm: rng.integers(0, len(order[arm]), size=(blocks, len(order[arm]))) for arm in order}
    picks = {arm: np.argsort(rng.random((draws, len(order[arm]))), axis=1)[:, :n_max] for arm in order}
    drawn = {arm: [[int(order[arm][resampled[arm][block_of[i]][j]]) for j in picks[arm][i]] for i in range(draws)]
             for arm in order}
    decides = spec.voice.specificity == "decides" and bool(toward)
    positions = list(range(n_max))
    index = {look.seeds: k for k, look in enumerate(design)}
    passed = {arm: [0] * blocks for arm in (*cands, *fresh)}
    stopped = {arm: [[0] * blocks for _ in design] for arm in (*cands, *fresh)}
    used = {arm: 0 for arm in (*cands, *fresh)}
    decided: list[dict[str, tuple[str, int, float]]] = []

    def at(per_seed: Mapping[int, float], arm: str, i: int, n: int) -> dict[int, float]:
        # keyed by position in the draw (a seed drawn twice is two replicates), rounded as the record holds it (a
        # distance with no number is left out, as the record's look leaves it out)
        kept = {j: rnd(per_seed[drawn[arm][i][j]]) for j in range(n)}
        return {j: d for j, d in kept.items() if d is not None}

    def specific_at(c: str, i: int, n: int) -> Any:
        """`c`'s specificity axis on the draw's first n seeds (None: it does not decide the ship)."""
        if not decides:
            return None
        kept = decided_arms(spec, {arm: at(distances[arm], arm, i, n) for arm in order})
        others = {name: decided_arms(spec, {arm: at(d[arm], arm, i, n) for arm in order})
                  for name, d in toward.items()}
        return specificity(kept, others, base, c, author=spec.author, decides=True, rule=rule, rules=(rule,),
                           digits=None, weak=weak, smallest_effect=spec.smallest_effect,
                           zero_floor_fails=zero_floor_fails)

    for i in range(draws):
        b = block_of[i]
        dist = {arm: at(distances[arm], arm, i, n_max) for arm in order}
        said = design_decisions(design, dist, base, [*cands, *fresh], positions, n_max,
                                smallest_sds=spec.smallest_effect, reads_effect=reads_effect)
        decided.append({arm: (d.verdict, d.index, d.p) for arm, d in said.items()})
        for arm, d in said.items():
            stopped[arm][index[d.look.seeds]][b] += 1
            used[arm] += d.look.seeds
            # an A-vs-A arm's PASS is a false pass; a candidate's ships where every other axis lets it
            passed[arm][b] += d.verdict == "PASS" and (arm in fresh or may_ship(
                ruler_weak=ruler_weak, copying=copying.get(arm), damage=damage.get(arm),
                specificity=specific_at(arm, i, d.look.seeds), rule=rule))

    def arm_design(arm: str) -> ArmDesign:
        a = spec.arm(arm)
        measures = "false-pass rate" if arm in fresh else (
            "power or false-pass rate" if a.voice_of is None else
            "power" if a.voice_of == spec.author else "false-pass rate")
        return ArmDesign(name=arm, passes=share(passed[arm]), expected_seeds=used[arm] / draws,
                         stops=tuple(share(s) for s in stopped[arm]), voice_of=a.voice_of, measures=measures)

    return SequentialRates(rule=rule, design=tuple(design), registered=registered, alpha=alpha, draws=draws,
                           rng_seed=rng_seed, candidates=tuple(arm_design(c) for c in cands),
                           a_vs_a=tuple(arm_design(a) for a in fresh), drawn=drawn, decided=decided)
