"""`calibrate`: how often would this gate's verdicts be wrong? K-seed draws of a pilot, re-decided.

A pilot is a gate whose stored generations hold more seeds than the gate it informs will
register (the tiny voices' sweep imports as one: 48 pools per voice). Per-seed distances are
measured ONCE (`scoring.measure_gate`: toward the gate author and toward each impostor, for every
arm), then `draws` random K-seed subsets are re-decided under every registered floor rule through
`scoring.decide` and `scoring.specificity` — the very functions `score` decides with, so no rule
has a second implementation here. No verdict is recorded (a pilot is not one): the pilot's record takes
one calibration entry (`artifacts.record_calibration`), the error rates it states, which a later gate's
`register` quotes and cites; the full result, with the per-seed distances, is written to
`runs/<gate>/calibration-K<k>.json` (a cache: nothing reads it back).

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

- **Each draw comes from a resampled pilot.** The draws fall into `RESAMPLES` blocks; each block first
  resamples every arm's stored seeds with replacement (a bootstrap of the pilot), and each of its draws takes K
  distinct positions of that resample. A share is then the mean over blocks, and how far the blocks' shares
  scatter (their own finite draws' part left in: conservative) stands for how far another pilot of the same
  voices would have moved it: a pilot is one sample of each voice's seeds, and its rates are only as sure as
  that sample.

- **A sequential design** (the pilot's registered one, or `looks` asked for) is simulated beside the fixed draws,
  on the same distances (`gate._calibrate_looks`): each look decided as `score` decides it.

Every share has a 95% interval that includes the pilot's own sampling (`pilot_interval`): Wilson's, at the
number of independent draws the blocks' scatter is worth (never more than the draws, never fewer than the
pilot's disjoint K-seed gates).

Over 400 lines because drawing K-seed subsets of a pilot, re-deciding them under every rule and
writing the error-rate table are one use case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from voicegate._errors import VoicegateError
from voicegate.gate._calibrate_looks import SequentialRates
from voicegate.gate._checks import check_cells, check_integrity, provenance
from voicegate.gate._score import load_generations
from voicegate.run import load_manifest
from voicegate.spec import (
    RULES,
    GateSpec,
    Look,
    Registration,
    boundaries,
    check_looks,
    check_registered,
    flip_seed,
    load_spec,
    workspace_root,
    zero_floor_fails,
)

_V = TypeVar("_V")   # what a draw takes of each drawn seed: its distance, or its prompts' own distances

DRAWS = 1000
RESAMPLES = 50
"""Bootstrap resamples of the pilot per calibration: each takes an equal block of the draws (20 of 1,000)."""
MIN_COUNT = 10
"""Below this many draws on the rarer side (passes, or failures) the blocks cannot measure the pilot's own
sampling, and the interval is the widest the pilot can have: one of its disjoint K-seed gates per draw."""
CONFIDENCE = 0.95
PILOT_PER_K = 4
"""A pilot with fewer than this many seeds per arm per drawn seed is warned about: its draws overlap too much
to stand for independent gates."""
DRAW_SCHEME = ("per arm, independently: the draws fall into equal blocks, one per bootstrap resample of the pilot "
               "(each arm's stored seeds drawn with replacement, as many as it stores); each draw takes K distinct "
               "positions of its block's resample (numpy default_rng(seed))")
INTERVAL = ("wilson at the effective number of independent draws: the draws' own binomial variance plus the pilot's "
            "sampling variance (the bootstrap blocks' scatter, their own finite draws' included), no more than the "
            "draws and no fewer than the pilot's disjoint K-seed gates (those too where fewer than "
            f"{MIN_COUNT} draws fall on the rarer side)")
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


def pilot_interval(per_block: Sequence[int], sizes: Sequence[int], gates: int,
                   confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(low, high, effective draws) of a share whose draws fall into bootstrap blocks of a pilot.

    The share is an estimate of a K-seed gate's rate from one pilot: its error is the pilot's (another sample
    of the voices' seeds) plus the draws' (finitely many). Each block's share is the rate of one resample of the
    pilot, measured by its own draws, so the blocks scatter by both; the mean of the blocks adds its own error.
    The interval is Wilson's at the number of independent draws that total variance is worth. `gates`, the
    pilot's disjoint K-seed gates (stored seeds // K), bounds that number from below: a share of K-subsets is
    never less sure than that many independent gates (Hoeffding), and where too few draws fall on either side
    to measure the scatter, it is all the pilot can vouch for."""
    import numpy as np

    n, k = int(sum(sizes)), int(sum(per_block))
    p = k / n
    effective = float(min(n, max(1, gates)))
    if min(k, n - k) >= MIN_COUNT and len(sizes) >= 2:
        shares = np.asarray(per_block, dtype=float) / np.asarray(sizes, dtype=float)
        between = float(shares.var(ddof=1))
        # The blocks' scatter is left whole, their own finite draws' share of it included: subtracting that
        # share is unbiased but noisy, and a plug-in bootstrap of a small pilot already understates the
        # spread between pilots (simulated: 83% coverage at 24 seeds with it subtracted, >= 90% without).
        variance = between + between / len(sizes) + p * (1 - p) / n
        effective = float(min(n, max(effective, p * (1 - p) / variance)))
    low, high = _wilson_at(p, effective, confidence)
    return low, high, effective


def _wilson_at(p: float, n: float, confidence: float) -> tuple[float, float]:
    """Wilson's interval of a proportion p observed over n (not necessarily whole) independent trials."""
    from math import sqrt

    from scipy.special import ndtri

    z = float(ndtri(0.5 + 0.5 * confidence))
    denom = 1 + z ** 2 / n
    center = (p + z ** 2 / (2 * n)) / denom
    half = z / denom * sqrt(p * (1 - p) / n + z ** 2 / (4 * n ** 2))
    return (0.0 if p == 0 else max(0.0, center - half)), (1.0 if p == 1 else min(1.0, center + half))


@dataclass(frozen=True)
class Share:
    """`count` of `draws` draws, with its 95% interval (`pilot_interval`: the pilot's sampling included) and the
    number of independent draws that interval is worth."""

    count: int
    draws: int
    low: float
    high: float
    effective: float | None = None   # None: the draws' own Wilson interval (no blocks to measure the pilot by)

    @classmethod
    def of(cls, count: int, draws: int) -> Share:
        low, high = wilson(count, draws)
        return cls(count, draws, float(low), float(high))

    @classmethod
    def of_blocks(cls, per_block: Sequence[int], sizes: Sequence[int], gates: int) -> Share:
        low, high, effective = pilot_interval(per_block, sizes, gates)
        return cls(int(sum(per_block)), int(sum(sizes)), low, high, effective)

    @property
    def share(self) -> float:
        return self.count / self.draws

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"share": round(self.share, 6), "count": self.count, "low": round(self.low, 6),
                               "high": round(self.high, 6)}
        if self.effective is not None:
            out["effective_draws"] = round(self.effective, 1)
        return out

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
    not_specific: dict[str, Share] | None = None   # None: no impostors registered
    inconclusive: dict[str, Share] | None = None
    author: str | None = None             # the gate author: whose real voice would-ship is the power for

    @property
    def measures(self) -> str:
        """What this arm's would-ship share is: the design's power for a real voice of the gate author, its
        false-pass rate for anyone else's (a voice the spec does not attribute could be either)."""
        if self.voice_of is None or self.author is None:
            return "power or false-pass rate"
        return "power" if self.voice_of == self.author else "false-pass rate"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"copying": self.copying, "damage": self.damage, "rules": {}}
        if self.voice_of is not None:
            out["voice_of"] = self.voice_of
        out["would_ship_is"] = self.measures
        for rid in self.voice_pass:
            rates = {"voice_pass": self.voice_pass[rid].to_json()}
            if self.specific is not None:
                rates["specific"] = self.specific[rid].to_json()
            if self.not_specific is not None and self.inconclusive is not None:
                rates["not_specific"] = self.not_specific[rid].to_json()
                rates["inconclusive"] = self.inconclusive[rid].to_json()
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
    resamples: int = RESAMPLES              # bootstrap blocks of the pilot the draws fall into
    said: tuple[str, ...] = ()              # what was appended to the pilot's record
    sequential: SequentialRates | None = None   # a sequential design's looks, simulated on the same pilot

    def summary(self) -> dict[str, Any]:
        """What the record's calibration entry states for a later gate to quote (no per-seed distances)."""
        return {
            "gate": self.gate, "author": self.author, "carrier": self.carrier, "seeds_per_arm": self.seeds,
            "draws": self.draws, "rng_seed": self.rng_seed, "resamples": self.resamples,
            "stored_seeds": min(self.stored_seeds.values()), "confidence": CONFIDENCE, "warnings": self.warnings,
            "candidates": {c.name: {"voice_of": c.voice_of, "would_ship_is": c.measures,
                                    "rules": {rid: {"would_ship": c.would_ship[rid].to_json(),
                                                    "all_seeds": c.all_seeds[rid]} for rid in self.rules}}
                           for c in self.candidates},
            "a_vs_a": {arm: {rid: s.to_json() for rid, s in rates.items()} for arm, rates in self.a_vs_a.items()},
            # only a calibration that simulated a sequential design carries it: the others keep their bytes
            **({} if self.sequential is None else {"sequential": self.sequential.to_json(scheme=False)}),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "gate": self.gate, "author": self.author, "carrier": self.carrier, "seeds_per_arm": self.seeds,
            "draws": self.draws,
            "rng_seed": self.rng_seed, "rules": list(self.rules), "draw_scheme": DRAW_SCHEME,
            "would_ship": SHIP_POLICY, "confidence": CONFIDENCE, "interval": INTERVAL,
            "resamples": self.resamples,
            "stored_seeds": self.stored_seeds, "impostors": list(self.impostors),
            "specificity": "decides" if self.specificity_decides else "reported",
            "candidates": {c.name: c.to_json() for c in self.candidates},
            "a_vs_a": {arm: {rid: {"false_pass": s.to_json()} for rid, s in rates.items()}
                       for arm, rates in self.a_vs_a.items()},
            "distances": self.distances,
            "warnings": self.warnings,
            **({} if self.sequential is None else {"sequential": self.sequential.to_json()}),
        }

    @property
    def warnings(self) -> list[str]:
        """What the shares cannot say: a pilot too small for the K it is drawn at."""
        n = min(self.stored_seeds.values())
        out = []
        for k, what in ((self.seeds, "draws of"), (0 if self.sequential is None else self.sequential.looks[-1],
                                                   "the sequential design's draws of")):
            if k and n < PILOT_PER_K * k:
                out.append(f"the pilot holds {n} seeds per arm, fewer than {PILOT_PER_K} x {k}: {what} {k} share most "
                           "of their seeds, so the shares say little more than the pilot's own seeds do, and its "
                           "resamples repeat them: the intervals understate how far another pilot would have come out")
        return out

    def text(self) -> str:
        """The result as the terminal shows it."""
        short = {rid: rid.replace("-max-spread", "").removeprefix("welch-t-") for rid in self.rules}
        n = min(self.stored_seeds.values())
        lines = [(f"{self.gate}: {self.draws} draws of {self.seeds} seeds per arm (of {n}+ stored), drawn per arm "
                  f"independently from {self.resamples} resamples of the pilot; shares of draws with {CONFIDENCE:.0%} "
                  "intervals that include the pilot's own sampling; would ship = the power for a real voice of "
                  f"{self.author}, the false-pass rate for any other voice")]
        head = f"  {'candidate':22s} {'rule':10s} {'VOICE PASS':22s} "
        head += f"{'SPECIFIC':22s} {'NOT-SPECIFIC':22s} {'INCONCLUSIVE':22s} " if self.impostors else ""
        lines.append(head + "would ship")
        for c in self.candidates:
            lines.append(f"  {c.name}: would ship is the {c.measures}"
                         + ("" if c.voice_of is None else f" (voice of {c.voice_of})"))
            for rid in self.rules:
                row = f"  {c.name:22s} {short[rid]:10s} {c.voice_pass[rid].text():22s} "
                if c.specific is not None and c.not_specific is not None and c.inconclusive is not None:
                    row += (f"{c.specific[rid].text():22s} {c.not_specific[rid].text():22s} "
                            f"{c.inconclusive[rid].text():22s} ")
                lines.append(row + c.would_ship[rid].text())
        for arm, rates in self.a_vs_a.items():
            lines.append(f"  A-vs-A arm {arm}, false-pass rate (VOICE PASS): "
                         + "; ".join(f"{short[rid]} {s.text()}" for rid, s in rates.items()))
        if not self.a_vs_a:
            lines.append("  no A-vs-A arm registered (role: a-vs-a): the false-pass rate is not measured")
        if self.sequential is not None:
            lines += self.sequential.lines()
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
              write: bool = True, looks: Sequence[int] | None = None) -> Calibration:
    """Re-decide `draws` random `seeds`-seed subsets of `gate`'s stored generations under every registered rule.

    Records no verdict: the first numbers it shows are anchored in the gate record (`record_anchor`), as a dry
    run's are; unless `write` is False, the rates are chained into the record as a calibration entry and the
    full result is written to `runs/<gate>/calibration-K<seeds>.json`.

    A sequential design is simulated beside the fixed draws (`gate._calibrate_looks`): `looks` (seeds per arm at
    each look, its boundaries as `register` would record them), else the design the pilot registered, if any.
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
    design, registered = _design(spec, registration, looks, stored)
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
    if design is not None:
        from voicegate.gate._calibrate_looks import simulate_looks
        from voicegate.spec import WELCH_ALPHA

        gates = min(len(s) for s in stored.values()) // design[-1].seeds
        block_of, sizes = block_layout(draws, result.resamples)
        result = Calibration(**{**result.__dict__, "sequential": simulate_looks(
            spec, design, m.distances, m.toward, copying=m.copying, damage=m.damage, draws=draws, rng_seed=rng_seed,
            alpha=WELCH_ALPHA, registered=registered, ruler_weak=pools is not None and pools.weak_author,
            weak=() if pools is None else pools.weak_impostors, zero_floor_fails=zero_floor_fails(registration.rules),
            share=lambda per_block: Share.of_blocks(per_block, sizes, gates), block_of=block_of)})
    _anchor(spec, rows, registration)
    if write:
        from voicegate.artifacts import record_calibration
        from voicegate.run import generations_hash

        said = record_calibration(spec, result, generations_hash(rows))
        result = Calibration(**{**result.__dict__, "said": tuple(said)})
        from voicegate._atomic import write_atomic
        from voicegate._hashing import canonical_json

        path = spec.run.calibration(seeds)
        write_atomic(path, canonical_json(result.to_json()) + "\n")
        result = Calibration(**{**result.__dict__, "path": path})
    return result


def _design(spec: GateSpec, registration: Registration, looks: Sequence[int] | None,
            stored: Mapping[str, Sequence[int]]) -> tuple[tuple[Look, ...] | None, bool]:
    """The sequential design to simulate and whether it is the pilot's registered one: `looks` asked for (refused,
    exit 2, where it cannot be a design of this pilot), else the registered design, if any (a pilot that registers
    one stores its last look's seeds: `check_cells` refuses fewer)."""
    if looks is None:
        return registration.design, True
    fewest = min(len(s) for s in stored.values())
    shown = ",".join(map(str, looks))
    problem = check_looks(list(looks), looks[-1]) if looks else "must list at least two looks"
    if problem is not None:
        raise VoicegateError(f"--looks {shown}: {problem}")
    rule = RULES[spec.floor_rule]
    if not rule.has_power_model or rule.paired:
        raise VoicegateError(f"--looks {shown}: a sequential design needs a t rule (welch-t, welch-t-min-effect), "
                             f"and {spec.gate} decides by {spec.floor_rule}")
    if looks[-1] > fewest:
        thin = min(stored, key=lambda a: (len(stored[a]), a))
        raise VoicegateError(f"--looks {shown}: the last look takes {looks[-1]} seeds per arm; arm {thin} has "
                             f"{fewest} stored")
    from voicegate.spec import WELCH_ALPHA

    return boundaries(list(looks), WELCH_ALPHA), False


def block_layout(draws: int, blocks: int) -> tuple[list[int], list[int]]:
    """Which bootstrap block each of `draws` draws falls into (consecutive runs, as even as can be), and each
    block's number of draws."""
    block_of = [i * blocks // draws for i in range(draws)]
    return block_of, [block_of.count(b) for b in range(blocks)]


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
    paired = any(RULES[r].paired for r in rules)
    flips = flip_seed(spec.gate)
    decides = spec.voice.specificity == "decides"
    effect = spec.smallest_effect
    author = spec.author
    order = {arm: sorted(distances[arm]) for arm in (base, *cands, *fresh)}
    rng = np.random.default_rng(rng_seed)
    blocks = min(RESAMPLES, draws)
    block_of, sizes = block_layout(draws, blocks)
    gates = min(len(s) for s in order.values()) // seeds
    # Per block, a bootstrap resample of each arm's stored seeds (positions -> seed index); per draw, K distinct
    # positions of its block's resample; arm by arm in the spec's order (deterministic per rng_seed).
    resampled = {arm: rng.integers(0, len(order[arm]), size=(blocks, len(order[arm]))) for arm in order}
    picks = {arm: np.argsort(rng.random((draws, len(order[arm]))), axis=1)[:, :seeds] for arm in order}

    def counter() -> dict[str, Any]:
        return {rid: [0] * blocks for rid in rules}

    voice_n = {c: counter() for c in cands}
    specific_n = {c: counter() for c in cands}
    not_specific_n = {c: counter() for c in cands}
    inconclusive_n = {c: counter() for c in cands}
    ship_n = {c: counter() for c in cands}
    false_n = {a: counter() for a in fresh}

    def subset(per_seed: Mapping[int, _V], arm: str, i: int) -> dict[int, _V]:
        # keyed by position in the resample: a seed drawn twice is two replicates, as a fresh gate's would be
        seeds_of, which = order[arm], resampled[arm][block_of[i]]
        return {int(j): per_seed[seeds_of[which[j]]] for j in picks[arm][i]}

    def share(per_block: Any) -> Share:
        return Share.of_blocks(per_block, sizes, gates)

    def decide_all(dist: Mapping[str, Mapping[int, float]], imps: Mapping[str, Mapping[str, Mapping[int, float]]],
                   prompt_parts: Mapping[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        """A decider under each rule for one draw: the draw's arms and its specificity axes (every rule's
        verdict in one `specificity` call a candidate, which the deciding rule then reads) are built once."""
        kept = decided_arms(spec, dist)
        others = {n: decided_arms(spec, d) for n, d in imps.items()}
        axis = {c: specificity(kept, others, base, c, author=author, decides=decides, rule=rules[0], rules=rules,
                               digits=None, weak=weak, smallest_effect=effect, zero_floor_fails=zero_floor_fails,
                               prompts=prompt_parts or None, flip_seed=flips)
                for c in cands} if others else {}

        def under(rid: str) -> Any:
            return decide(kept, base, cands, rule=rid, rules=(rid,), copying=copying, damage=damage,
                          specificity=axis, prefer=spec.prefer, digits=None, ruler_weak=ruler_weak,
                          smallest_effect=effect, zero_floor_fails=zero_floor_fails,
                          prompts=(prompt_parts or {}).get(author), flip_seed=flips)
        return under, axis

    for i in range(draws):
        dist = {arm: subset(distances[arm], arm, i) for arm in order}
        imps = {n: {arm: subset(d[arm], arm, i) for arm in order} for n, d in toward.items()}
        # a paired rule reads each prompt's own distances of the same drawn seeds, keyed as the draw keys them
        draw_parts = {target: {arm: subset(pp[arm], arm, i) for arm in order if arm in pp}
                      for target, pp in (parts or {}).items()} if paired else None
        under, axis = decide_all(dist, imps, draw_parts)
        b = block_of[i]
        for rid in rules:
            decision = under(rid)
            for c in decision.candidates:
                voice_n[c.name][rid][b] += c.voice_decides == Voice.PASS
                if axis:
                    said = axis[c.name].under(rid)
                    specific_n[c.name][rid][b] += said == Specific.SPECIFIC
                    not_specific_n[c.name][rid][b] += said == Specific.NOT_SPECIFIC
                    inconclusive_n[c.name][rid][b] += said == Specific.INCONCLUSIVE
                ship_n[c.name][rid][b] += ship_pick([c]) is not None
            for arm in fresh:
                # the A-vs-A arm as one more candidate beside every arm of the run
                aa = decide(dist, base, [arm], rule=rid, rules=(rid,), digits=None, smallest_effect=effect,
                            zero_floor_fails=zero_floor_fails, prompts=(draw_parts or {}).get(author),
                            flip_seed=flips).candidates[0]
                false_n[arm][rid][b] += aa.voice_decides == Voice.PASS

    # Every stored seed, decided once per rule: what the pilot itself says.
    all_seeds: dict[str, dict[str, dict[str, str]]] = {c: {} for c in cands}
    under, axis = decide_all(distances, toward, parts)
    for rid in rules:
        decision = under(rid)
        for c in decision.candidates:
            verdicts = {"voice": str(c.voice_decides)}
            if axis:
                verdicts["specific"] = str(axis[c.name].under(rid))
            all_seeds[c.name][rid] = verdicts

    rates = tuple(CandidateRates(
        name=c,
        voice_pass={rid: share(voice_n[c][rid]) for rid in rules},
        specific={rid: share(specific_n[c][rid]) for rid in rules} if toward else None,
        not_specific={rid: share(not_specific_n[c][rid]) for rid in rules} if toward else None,
        inconclusive={rid: share(inconclusive_n[c][rid]) for rid in rules} if toward else None,
        would_ship={rid: share(ship_n[c][rid]) for rid in rules},
        copying=copying.get(c), damage=damage.get(c), all_seeds=all_seeds[c],
        voice_of=spec.arm(c).voice_of, author=author) for c in cands)
    targets = {author: distances, **toward}
    return Calibration(
        gate=spec.gate, author=author, carrier=spec.seat.base_model, seeds=seeds, draws=draws, rng_seed=rng_seed,
        rules=rules,
        stored_seeds={arm: len(s) for arm, s in order.items()}, impostors=tuple(toward),
        specificity_decides=decides, candidates=rates,
        a_vs_a={arm: {rid: share(false_n[arm][rid]) for rid in rules} for arm in fresh}, resamples=blocks,
        distances={arm: {t: {str(s): float(d[arm][s]) for s in order[arm]} for t, d in targets.items()}
                   for arm in order})


POWER_GOAL = 0.8


def design_lines(spec: GateSpec) -> list[str]:
    """What `register` says about the gate's design: seeds and words per pool, and where another gate's record
    chains a calibration of the same author on the same carrier, the deciding rule's expected power at the
    registered seeds, with its interval and the entry it cites (a warning line, starting "warning:", when fewer
    seeds than the rule needs for power 0.8)."""
    seeds, rule = len(spec.seeds), spec.floor_rule
    lines = [(f"design: {seeds} seeds per arm, ~{spec.words_per_arm_seed():,} words per (arm, seed) pool "
              f"({len(spec.prompts)} prompts x ~{spec.expected_words} words), deciding rule {rule}")]
    if spec.looks is not None:
        lines.append(_sequential_line(spec))
    from voicegate.gate._pilot_power import pilot_power

    power = pilot_power(spec, rule)  # at register, the registered rule is the one in force
    if not power and spec.looks is not None:
        return lines  # the fixed rule's power is not the looks': the line above says what is known of theirs
    if not power:
        lines.append(f"design: power unknown: no calibrate result on file for {spec.author} on carrier "
                     f"{spec.seat.base_model} (run `voicegate calibrate PILOT --seeds K` on a many-seed pilot of this "
                     "author to know this design's power)")
        return lines
    shown = "; ".join(f"{k} seeds {p.text()}" for k, p in power.items())
    cited: dict[tuple[str, str], list[int]] = {}
    for p in power.values():
        cited.setdefault((p.pilot, p.record), []).append(p.entry)
    pilots = "; ".join(f"{g}, {'entry' if len(n) == 1 else 'entries'} {', '.join(map(str, sorted(n)))} of {r}"
                       for (g, r), n in sorted(cited.items()))
    lines.append(f"design: {rule} ships a real voice of {spec.author} on carrier {spec.seat.base_model} in {shown} "
                 f"of draws (95% intervals include the pilot's sampling; calibration recorded in {pilots})")
    at = power.get(seeds)
    enough = [k for k, p in power.items() if p.power >= POWER_GOAL]
    if at is not None and spec.looks is not None:
        lines.append(f"design: {rule}'s fixed-design power at {seeds} seeds (the last look): {at.text()}; not the "
                     "sequential design's, which stops early (its own line above)")
    elif at is not None:
        lines.append(f"design: expected power at the registered {seeds} seeds: {at.text()}")
    if (at is not None and at.power < POWER_GOAL) or (at is None and enough and seeds < min(enough)):
        need = (f"{min(enough)} seeds reach {power[min(enough)].power:.2f}" if enough and min(enough) > seeds
                else f"no K on file reaches {POWER_GOAL}")
        lines.append(f"warning: {seeds} seeds are fewer than {rule} needs for power {POWER_GOAL} on this carrier "
                     f"({need})")
    return lines


def _sequential_line(spec: GateSpec) -> str:
    """What `register` says of a sequential design's error rates: its α over every look, as simulated, and where
    another gate's record chains a calibration that simulated this very design for the same author on the same
    carrier, how often it ships a real voice, with how many seeds, and its A-vs-A false pass there."""
    from voicegate.gate._pilot_power import pilot_design
    from voicegate.spec import WELCH_ALPHA, load_registration

    looks = ", ".join(map(str, spec.looks or ()))
    registration = load_registration(spec)
    op = None if registration is None else registration.operating
    simulated = "" if op is None else (f"; on {op.runs:,} fresh simulated runs at the null's boundary it passed "
                                       f"{op.false_pass:.4f} and used {op.expected_seeds:.2f} seeds per arm on average")
    head = (f"design: sequential, looks at {looks} seeds per arm: false pass ≤ α {WELCH_ALPHA:g} overall across its "
            f"looks (boundaries simulated at register){simulated}")
    design = None if registration is None else registration.design
    on_pilot = None if design is None else pilot_design(spec, [look.to_json() for look in design])
    if on_pilot is None:
        return (f"{head}; its power is unknown: no calibrate result on file simulates these looks for {spec.author} "
                f"on carrier {spec.seat.base_model} (run `voicegate calibrate PILOT --seeds K --looks "
                f"{','.join(map(str, spec.looks or ()))}` on a many-seed pilot of this author to know it)")
    fresh = "" if on_pilot.false_pass is None else f", its A-vs-A arms passed {on_pilot.false_pass:.3f}"
    return (f"{head}; on a pilot it ships a real voice of {spec.author} in {on_pilot.text()} of draws with "
            f"{on_pilot.expected_seeds:.2f} seeds per arm on average{fresh} (95% intervals include the pilot's "
            f"sampling; calibration recorded in {on_pilot.pilot}, entry {on_pilot.entry} of {on_pilot.record})")


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
