"""`calibrate`: how often would this gate's verdicts be wrong? K-seed draws of a pilot, re-decided.

A pilot is a gate whose stored generations hold more seeds than the gate it informs will
register (the tiny voices' sweep imports as one: 48 pools per voice). Per-seed distances are
measured ONCE (`scoring.measure_gate`: toward the gate author and toward each impostor, for every
arm), then `draws` random K-seed subsets are re-decided under every registered floor rule through
`scoring.decide` and `scoring.specificity` — the very functions `score` decides with, so no rule
has a second implementation here. Nothing is appended to any artifact (a pilot is not a
verdict); the result is written to `runs/<gate>/calibration-K<k>.json`.

Decisions, stated where they are made:

- **Draws are per arm, independent.** Each draw takes K of each arm's stored seeds without
  replacement, independently for every arm (base, each candidate, each A-vs-A arm). No floor rule
  pairs seeds across arms (a spread, a mean and a Welch variance are per arm), and a sweep's pools
  are independent samples; for a generated gate, whose arms share request seeds, a draw of one
  arm's seeds is still a draw of that arm's sampling noise.
- **"would ship" is the gate's own policy, under each rule in turn:** `decide` with that rule
  deciding, then `ship_pick` on the candidate alone — VOICE PASS under the rule, NOT-COPIED and
  NO-DAMAGE (decided once, on every stored row: a draw of seeds does not re-decide copying or
  damage), and SPECIFIC under the rule where the spec's `voice.specificity` is `decides` and
  impostors are registered (with `reported`, SPECIFIC is shown but does not gate the ship).
- **The A-vs-A arm** (`role: a-vs-a`: the base's own model under fresh seeds) is decided as one
  more candidate beside the gate's arms (so `global-max-spread` sees every arm of the run); its
  VOICE PASS share is the gate's false-pass rate under each rule.

Every share has a 95% Wilson interval (`scipy.stats.binomtest(...).proportion_ci`'s, computed by `wilson`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voicegate._errors import VoicegateError
from voicegate.gate._checks import check_cells, check_integrity, provenance
from voicegate.gate._score import load_generations
from voicegate.run import load_manifest
from voicegate.spec import (
    RULES,
    GateSpec,
    Registration,
    check_registered,
    flip_seed,
    load_spec,
    workspace_root,
    zero_floor_fails,
)

DRAWS = 1000
CONFIDENCE = 0.95
PILOT_PER_K = 4
"""A pilot with fewer than this many seeds per arm per drawn seed is warned about: its draws overlap too much
to stand for independent gates."""
DRAW_SCHEME = ("per arm, independently: each draw takes K of each arm's stored seeds without replacement "
               "(numpy default_rng(seed); one permutation per arm and draw)")
SHIP_POLICY = ("would ship under a rule = decide() with that rule deciding, then ship_pick() on the candidate "
               "alone: VOICE PASS under the rule, copying and damage as decided on every stored row, and "
               "SPECIFIC under the rule where voice.specificity is 'decides' and impostors are registered")


def wilson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """``scipy.stats.binomtest(k, n).proportion_ci(confidence, method="wilson")``, float for float: its
    two-sided formula (Newcombe 1998) in its order of operations, without importing scipy.stats (~0.7 s)."""
    from math import sqrt

    from scipy.special import ndtri

    p = k / n
    z = ndtri(0.5 + 0.5 * confidence)
    denom = 2 * (n + z ** 2)
    center = (2 * n * p + z ** 2) / denom
    q = 1 - p
    delta = z / denom * sqrt(4 * n * p * q + z ** 2)
    return (0.0 if k == 0 else float(center - delta)), (1.0 if k == n else float(center + delta))


@dataclass(frozen=True)
class Share:
    """`count` of `draws` draws, with its 95% Wilson interval."""

    count: int
    draws: int
    low: float
    high: float

    @classmethod
    def of(cls, count: int, draws: int) -> Share:
        low, high = wilson(count, draws)
        return cls(count, draws, float(low), float(high))

    @property
    def share(self) -> float:
        return self.count / self.draws

    def to_json(self) -> dict[str, Any]:
        return {"share": round(self.share, 6), "count": self.count, "low": round(self.low, 6),
                "high": round(self.high, 6)}

    def text(self) -> str:
        return f"{self.share:.3f} [{self.low:.3f}, {self.high:.3f}]"


@dataclass(frozen=True)
class CandidateRates:
    """One candidate's shares of draws, per rule; `all_seeds`: its verdicts on every stored seed."""

    name: str
    voice_pass: dict[str, Share]
    specific: dict[str, Share] | None    # None: no impostors registered
    would_ship: dict[str, Share]
    copying: str | None
    damage: str | None
    all_seeds: dict[str, dict[str, str]]  # rule -> {"voice": ..., "specific": ...}
    voice_of: str | None = None           # whose voice the arm was trained as (`arms[].voice_of`), if said

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"copying": self.copying, "damage": self.damage, "rules": {}}
        if self.voice_of is not None:
            out["voice_of"] = self.voice_of
        for rid in self.voice_pass:
            rates = {"voice_pass": self.voice_pass[rid].to_json()}
            if self.specific is not None:
                rates["specific"] = self.specific[rid].to_json()
            rates["would_ship"] = self.would_ship[rid].to_json()
            out["rules"][rid] = {**rates, "all_seeds": self.all_seeds[rid]}
        return out


@dataclass(frozen=True)
class Calibration:
    """What `calibrate` measured: per candidate and rule the shares of draws, per A-vs-A arm its false-pass rate."""

    gate: str
    author: str
    carrier: str                            # the seat's base model: what a design check matches a pilot by
    seeds: int                              # K: seeds per arm in each draw
    draws: int
    rng_seed: int
    rules: tuple[str, ...]
    stored_seeds: dict[str, int]            # arm -> seeds stored
    impostors: tuple[str, ...]
    specificity_decides: bool
    candidates: tuple[CandidateRates, ...]
    a_vs_a: dict[str, dict[str, Share]]     # A-vs-A arm -> rule -> VOICE PASS share (a false pass)
    distances: dict[str, dict[str, dict[str, float]]] = field(repr=False)  # arm -> target author -> seed -> d
    path: Path | None = None                # where the result was written

    def to_json(self) -> dict[str, Any]:
        return {
            "gate": self.gate, "author": self.author, "carrier": self.carrier, "seeds_per_arm": self.seeds,
            "draws": self.draws,
            "rng_seed": self.rng_seed, "rules": list(self.rules), "draw_scheme": DRAW_SCHEME,
            "would_ship": SHIP_POLICY, "confidence": CONFIDENCE, "interval": "wilson",
            "stored_seeds": self.stored_seeds, "impostors": list(self.impostors),
            "specificity": "decides" if self.specificity_decides else "reported",
            "candidates": {c.name: c.to_json() for c in self.candidates},
            "a_vs_a": {arm: {rid: {"false_pass": s.to_json()} for rid, s in rates.items()}
                       for arm, rates in self.a_vs_a.items()},
            "distances": self.distances,
            "warnings": self.warnings,
        }

    @property
    def warnings(self) -> list[str]:
        """What the shares cannot say: a pilot too small for the K it is drawn at."""
        n = min(self.stored_seeds.values())
        if n >= PILOT_PER_K * self.seeds:
            return []
        return [(f"the pilot holds {n} seeds per arm, fewer than {PILOT_PER_K} x {self.seeds}: draws of {self.seeds} "
                "share most of their seeds, so the shares say little more than the pilot's own seeds do; the "
                "intervals cover the draws, not how another pilot would have come out")]

    def text(self) -> str:
        """The result as the terminal shows it."""
        short = {rid: rid.replace("-max-spread", "").removeprefix("welch-t-") for rid in self.rules}
        n = min(self.stored_seeds.values())
        lines = [(f"{self.gate}: {self.draws} draws of {self.seeds} seeds per arm (of {n}+ stored), drawn per arm "
                  f"independently; shares of draws with {CONFIDENCE:.0%} Wilson intervals (of the draws, not of "
                  "the pilot's own sampling); would ship = the power for a real voice of the author, the false-pass "
                  "rate for any other")]
        head = f"  {'candidate':22s} {'rule':10s} {'VOICE PASS':22s} "
        head += f"{'SPECIFIC':22s} " if self.impostors else ""
        lines.append(head + "would ship")
        for c in self.candidates:
            for rid in self.rules:
                row = f"  {c.name:22s} {short[rid]:10s} {c.voice_pass[rid].text():22s} "
                if c.specific is not None:
                    row += f"{c.specific[rid].text():22s} "
                lines.append(row + c.would_ship[rid].text())
        for arm, rates in self.a_vs_a.items():
            lines.append(f"  A-vs-A arm {arm}, false pass (VOICE PASS): "
                         + "; ".join(f"{short[rid]} {s.text()}" for rid, s in rates.items()))
        if not self.a_vs_a:
            lines.append("  no A-vs-A arm registered (role: a-vs-a): the false-pass rate is not measured")
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def _stored_seeds(spec: GateSpec, rows: Sequence[Mapping[str, Any]]) -> dict[str, list[int]]:
    seeds: dict[str, set[int]] = {a.name: set() for a in spec.arms}
    for r in rows:
        if r.get("kind", "voice") == "voice" and r.get("arm") in seeds:
            try:
                seeds[str(r["arm"])].add(int(r["seed"]))
            except (TypeError, ValueError, KeyError):
                continue  # check_rows names it
    return {arm: sorted(s) for arm, s in seeds.items()}


def calibrated_rules(spec: GateSpec) -> tuple[str, ...]:
    """The rules calibrate decides draws under: every rule a gate may be decided by without choosing it, and the
    spec's deciding rule (a rule a gate must choose, as the prompt-paired design, only where the pilot chose it)."""
    return tuple(r for r, rule in RULES.items() if not rule.by_choice or r == spec.floor_rule)


def check_request(spec: GateSpec, seeds: int, stored: Mapping[str, Sequence[int]]) -> None:
    """The refusals before anything is measured or written (exit 2), once the stored seeds are known."""
    fewest = min(len(s) for s in stored.values())
    if seeds >= fewest:
        thin = min(stored, key=lambda a: (len(stored[a]), a))
        raise VoicegateError(f"--seeds {seeds}: a pilot must hold more seeds than each draw takes; arm {thin} has "
                             f"{fewest} stored (use --seeds below {fewest}, or store more seeds)")


def calibrate(root: Path | str | None, gate: str, *, seeds: int, draws: int = DRAWS, rng_seed: int = 0,
              write: bool = True) -> Calibration:
    """Re-decide `draws` random `seeds`-seed subsets of `gate`'s stored generations under every registered rule.

    Records no verdict: the first numbers it shows are anchored in the gate record (`record_anchor`), as a dry
    run's are; writes `runs/<gate>/calibration-K<seeds>.json` unless `write` is False.
    """
    if seeds < 2:
        raise VoicegateError(f"--seeds {seeds}: a draw needs at least 2 seeds per arm (a spread, a variance)")
    if draws < 1:
        raise VoicegateError(f"--draws {draws}: at least 1 draw")
    spec = load_spec(workspace_root(root), gate)
    if not spec.candidates:  # a valid spec has one; said here too, since calibrate has nothing to do without
        raise VoicegateError(f"{spec.gate}: no candidate arm to calibrate")
    registration = check_registered(spec)
    rows = load_generations(spec)
    stored = _stored_seeds(spec, rows)
    check_request(spec, seeds, stored)
    check_cells(spec.gate, rows)
    check_integrity(spec.gate, provenance(spec, rows, load_manifest(spec.run_dir)).integrity)

    from voicegate.scoring import measure_gate

    rules = calibrated_rules(spec)
    m = measure_gate(spec, rows, cache_dir=spec.run.cache, write_cache=True,
                     parts=any(RULES[r].paired for r in rules))
    # A ruler that cannot tell the author abstains on every draw, as it does on the score.
    pools = m.view.pool_ruler(m.cache, m.targets[0], m.targets[1:]) if "ruler-weak" in registration.checks else None
    result = decide_draws(spec, m.distances, m.toward, copying=m.copying, damage=m.damage, seeds=seeds,
                          draws=draws, rng_seed=rng_seed, ruler_weak=pools is not None and pools.weak_author,
                          weak=() if pools is None else pools.weak_impostors,
                          zero_floor_fails=zero_floor_fails(registration.rules), rules=rules, parts=m.parts)
    _anchor(spec, rows, registration)
    if write:
        from voicegate._atomic import write_atomic
        from voicegate._hashing import canonical_json

        path = spec.run.calibration(seeds)
        write_atomic(path, canonical_json(result.to_json()) + "\n")
        result = Calibration(**{**result.__dict__, "path": path})
    return result


def decide_draws(spec: GateSpec, distances: Mapping[str, Mapping[int, float]],
                 toward: Mapping[str, Mapping[str, Mapping[int, float]]], *, copying: Mapping[str, str],
                 damage: Mapping[str, str], seeds: int, draws: int, rng_seed: int = 0, ruler_weak: bool = False,
                 weak: Sequence[str] = (), zero_floor_fails: bool = True, rules: Sequence[str] | None = None,
                 parts: Mapping[str, Any] | None = None) -> Calibration:
    """The draws, decided: `distances` and `toward` hold every arm's per-seed distances (A-vs-A arms too).

    `rules`: the rules decided (None: `calibrated_rules(spec)`); `parts`: target author -> each prompt's own
    distances (`measure_gate(..., parts=True)`), which a paired rule needs.

    `ruler_weak` / `weak`: the pool check's abstentions (`scoring._ruler`), as `score` decides them.
    `zero_floor_fails`: whether a floor of 0 never passes (as `score` decides the gate: by its registration)."""
    import numpy as np

    from voicegate.scoring import Specific, Voice, decide, decided_arms, ship_pick, specificity

    base = spec.base.name
    cands = [a.name for a in spec.candidates]
    fresh = [a.name for a in spec.a_vs_a]
    rules = calibrated_rules(spec) if rules is None else tuple(r for r in RULES if r in set(rules))
    if any(RULES[r].paired for r in rules) and not parts:
        raise ValueError("a paired rule is calibrated from each prompt's own distances: pass `parts`")
    gate_parts = (parts or {}).get(spec.author)
    flips = flip_seed(spec.gate)
    decides = spec.voice.specificity == "decides"
    effect = spec.smallest_effect
    author = spec.author
    order = {arm: sorted(distances[arm]) for arm in (base, *cands, *fresh)}
    rng = np.random.default_rng(rng_seed)
    # One K-subset of each arm's seeds per draw, drawn arm by arm in the spec's order (deterministic per rng_seed).
    picks = {arm: np.argsort(rng.random((draws, len(order[arm]))), axis=1)[:, :seeds] for arm in order}

    voice_n = {c: dict.fromkeys(rules, 0) for c in cands}
    specific_n = {c: dict.fromkeys(rules, 0) for c in cands}
    ship_n = {c: dict.fromkeys(rules, 0) for c in cands}
    false_n = {a: dict.fromkeys(rules, 0) for a in fresh}

    def subset(per_seed: Mapping[int, float], arm: str, i: int) -> dict[int, float]:
        seeds_of = order[arm]
        return {seeds_of[j]: per_seed[seeds_of[j]] for j in picks[arm][i]}

    def decide_all(dist: Mapping[str, Mapping[int, float]], imps: Mapping[str, Mapping[str, Mapping[int, float]]]
                   ) -> tuple[Any, dict[str, Any]]:
        """A decider under each rule for one draw: the draw's arms and its specificity axes (every rule's
        verdict in one `specificity` call a candidate, which the deciding rule then reads) are built once."""
        kept = decided_arms(spec, dist)
        others = {n: decided_arms(spec, d) for n, d in imps.items()}
        axis = {c: specificity(kept, others, base, c, author=author, decides=decides, rule=rules[0], rules=rules,
                               digits=None, weak=weak, smallest_effect=effect, zero_floor_fails=zero_floor_fails,
                               prompts=parts or None, flip_seed=flips)
                for c in cands} if others else {}

        def under(rid: str) -> Any:
            return decide(kept, base, cands, rule=rid, rules=(rid,), copying=copying, damage=damage,
                          specificity=axis, prefer=spec.prefer, digits=None, ruler_weak=ruler_weak,
                          smallest_effect=effect, zero_floor_fails=zero_floor_fails, prompts=gate_parts,
                          flip_seed=flips)
        return under, axis

    for i in range(draws):
        dist = {arm: subset(distances[arm], arm, i) for arm in order}
        imps = {n: {arm: subset(d[arm], arm, i) for arm in order} for n, d in toward.items()}
        under, axis = decide_all(dist, imps)
        for rid in rules:
            decision = under(rid)
            for c in decision.candidates:
                voice_n[c.name][rid] += c.voice_decides == Voice.PASS
                if axis:
                    specific_n[c.name][rid] += axis[c.name].under(rid) == Specific.SPECIFIC
                ship_n[c.name][rid] += ship_pick([c]) is not None
            for arm in fresh:
                # the A-vs-A arm as one more candidate beside every arm of the run
                aa = decide(dist, base, [arm], rule=rid, rules=(rid,), digits=None, smallest_effect=effect,
                            zero_floor_fails=zero_floor_fails, prompts=gate_parts, flip_seed=flips).candidates[0]
                false_n[arm][rid] += aa.voice_decides == Voice.PASS

    # Every stored seed, decided once per rule: what the pilot itself says.
    all_seeds: dict[str, dict[str, dict[str, str]]] = {c: {} for c in cands}
    under, axis = decide_all(distances, toward)
    for rid in rules:
        decision = under(rid)
        for c in decision.candidates:
            verdicts = {"voice": str(c.voice_decides)}
            if axis:
                verdicts["specific"] = str(axis[c.name].under(rid))
            all_seeds[c.name][rid] = verdicts

    rates = tuple(CandidateRates(
        name=c,
        voice_pass={rid: Share.of(voice_n[c][rid], draws) for rid in rules},
        specific={rid: Share.of(specific_n[c][rid], draws) for rid in rules} if toward else None,
        would_ship={rid: Share.of(ship_n[c][rid], draws) for rid in rules},
        copying=copying.get(c), damage=damage.get(c), all_seeds=all_seeds[c],
        voice_of=spec.arm(c).voice_of) for c in cands)
    targets = {author: distances, **toward}
    return Calibration(
        gate=spec.gate, author=author, carrier=spec.seat.base_model, seeds=seeds, draws=draws, rng_seed=rng_seed,
        rules=rules,
        stored_seeds={arm: len(s) for arm, s in order.items()}, impostors=tuple(toward),
        specificity_decides=decides, candidates=rates,
        a_vs_a={arm: {rid: Share.of(false_n[arm][rid], draws) for rid in rules} for arm in fresh},
        distances={arm: {t: {str(s): float(d[arm][s]) for s in order[arm]} for t, d in targets.items()}
                   for arm in order})


POWER_GOAL = 0.8


def pilot_power(spec: GateSpec) -> dict[int, tuple[float, int, str]]:
    """K -> (power, voices, pilot gate) of the spec's deciding rule, from calibrate results on file for the same
    author on the same carrier (`<data dir>/*/calibration-K*.json`, the gate itself excluded): the mean would-ship
    share of the pilot's real voices: its arms of this author where the pilot says whose voice each arm is
    (`arms[].voice_of`), else those that ship under the rule on every stored seed (VOICE PASS, and SPECIFIC where
    checked), which can take in another author's voice. Another author's pilot says nothing about this one's power
    (a Dickens gate was quoted Anne Brontë's 0.48 where its own gave 0.035). The newest file of a K wins when several
    pilots have one."""
    import json

    rule = spec.floor_rule
    found: dict[int, tuple[float, int, str, float]] = {}
    for path in sorted(spec.data_dir.glob("*/calibration-K*.json")):
        if path.parent.name == spec.gate:
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("carrier") != spec.seat.base_model or data.get("author") != spec.author:
                continue
            arms = [c for c in data["candidates"].values() if rule in c["rules"]]
            if any("voice_of" in c for c in arms):
                # the pilot says whose voice each arm is: the gate author's are the real ones, whatever they did
                real = [c["rules"][rule] for c in arms if c.get("voice_of") == spec.author]
            else:
                real = [r for r in (c["rules"][rule] for c in arms)
                        if r["all_seeds"].get("voice") == "PASS"  # not-a-result: calibration JSON
                        and r["all_seeds"].get("specific", "SPECIFIC") == "SPECIFIC"]
            shares = [r["would_ship"]["share"] for r in real]
            k = int(data["seeds_per_arm"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue  # not a calibrate result this version can read: no design check from it
        if shares and (k not in found or path.stat().st_mtime > found[k][3]):
            found[k] = (sum(shares) / len(shares), len(shares), str(data.get("gate")), path.stat().st_mtime)
    return {k: v[:3] for k, v in sorted(found.items())}


def design_lines(spec: GateSpec) -> list[str]:
    """What `register` says about the gate's design: seeds and words per pool, and where a calibrate result of
    the same carrier is on file, the deciding rule's expected power at the registered seeds (a warning line,
    starting "warning:", when fewer seeds than the rule needs for power 0.8)."""
    seeds, rule = len(spec.seeds), spec.floor_rule
    lines = [(f"design: {seeds} seeds per arm, ~{spec.words_per_arm_seed():,} words per (arm, seed) pool "
              f"({len(spec.prompts)} prompts x ~{spec.expected_words} words), deciding rule {rule}")]
    power = pilot_power(spec)
    if not power:
        lines.append(f"design: power unknown: no calibrate result on file for {spec.author} on carrier "
                     f"{spec.seat.base_model} (run `voicegate calibrate PILOT --seeds K` on a many-seed pilot of "
                     "this author to know this design's power)")
        return lines
    shown = "; ".join(f"{k} seeds {p:.2f}" for k, (p, _, _) in power.items())
    pilots = ", ".join(sorted({g for _, _, g in power.values()}))
    lines.append(f"design: {rule} ships a real voice of {spec.author} on carrier {spec.seat.base_model} in {shown} "
                 f"of draws (calibrate on file: {pilots})")
    at = power.get(seeds)
    enough = [k for k, (p, _, _) in power.items() if p >= POWER_GOAL]
    if at is not None:
        lines.append(f"design: expected power at the registered {seeds} seeds: {at[0]:.2f}")
    if (at is not None and at[0] < POWER_GOAL) or (at is None and enough and seeds < min(enough)):
        need = (f"{min(enough)} seeds reach {power[min(enough)][0]:.2f}" if enough and min(enough) > seeds
                else f"no K on file reaches {POWER_GOAL}")
        lines.append(f"warning: {seeds} seeds are fewer than {rule} needs for power {POWER_GOAL} on this carrier "
                     f"({need})")
    return lines


def _anchor(spec: GateSpec, rows: Sequence[dict[str, Any]], registration: Registration) -> None:
    """Every rule's verdicts on draws of this gate are numbers a person sees: anchored in its record first."""
    from voicegate.artifacts import record_anchor
    from voicegate.spec import recorded_numbers_at

    if recorded_numbers_at(spec.artifacts.record) is not None:
        return
    from voicegate.scoring import score_gate

    # The anchor entry names the generations; its result is the gate's own score (cache warm from measure_gate).
    result = score_gate(spec, rows, cache_dir=spec.run.cache, write_cache=True, rules=registration.rules)
    record_anchor(spec, result, "calibrate", registration.commit)
