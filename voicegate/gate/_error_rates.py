"""The gate's error rates, stated: what a verdict's reader needs to know how often it is wrong.

A VOICE PASS is as good as the rule's false-pass rate and the design's power, and a number beside it (the
detectable delta, an interval) is as good as what it was estimated from. The statement says, for the rule in
force:

- **false-pass rate by design**: α for a t rule (one-sided Welch at `WELCH_ALPHA`; "nearer X" at α/m over the
  m impostors where the rule corrects it); for a range floor none is registered, and it says so;
- **power**: the deciding rule's would-ship share of a real voice of the author at the registered seeds, from a
  calibration chained in another gate's record (`gate._pilot_power`: the same author on the same carrier),
  naming the pilot, its entry, K and the interval; otherwise "power unknown";
- per candidate, **the detectable delta with its uncertainty**: it is a multiple of a standard error estimated
  from the seeds (2–4 degrees of freedom at 3 seeds per arm), so the true one lies in a wide interval
  (from the χ² distribution of the estimated variance);
- per candidate, **intervals named for what they cover**: delta_cb's 95% Welch interval over seeds (seed
  variance), beside the prompt bootstrap's (prompts resampled, each seed's own rows kept: no seed variance);
- **degenerate outputs**: an arm whose seeds are not replicates (identical or near-identical pools) or whose
  distances do not move from seed to seed gets no ratio: a floor built on no noise makes any ratio meaningless.

Only gates computing a rule registered on or after `REPLICATES_REQUIRED` state it on their record (an older
record re-scores byte for byte; its reader is told "not stated").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from voicegate.scoring import CandidateResult, GateResult
from voicegate.spec import (
    WELCH_ALPHA,
    GateSpec,
    Operating,
    get_rule,
    load_registration,
    smallest_in_units,
    t_quantile,
    welch,
    zero_floor_fails,
)

LEVEL = 0.95


@dataclass(frozen=True)
class CandidateRates:
    """What one candidate's numbers can be trusted to: its detectable delta's interval and delta_cb's intervals."""

    arm: str
    detectable: float | None = None                     # 80%-power detectable delta under the rule in force
    detectable_interval: tuple[float, float] | None = None   # where the true one lies (95%), from the df
    df: float | None = None                             # Welch degrees of freedom of the SE it is built on
    seed_interval: tuple[float, float] | None = None    # delta_cb ± t(0.975, df)·SE: seed variance
    prompt_interval: tuple[float, float] | None = None  # the prompt bootstrap: prompts resampled, seeds fixed
    degenerate: str | None = None                       # why no ratio is stated (None: it is)

    def lines(self) -> list[str]:
        out = []
        if self.degenerate is not None:
            out.append(f"{self.arm}: no VOICE ratio: {self.degenerate}")
        if self.detectable is not None and self.detectable_interval is not None and self.df is not None:
            lo, hi = self.detectable_interval
            out.append(f"{self.arm}: detectable delta (80% power) {self.detectable:.3f}, estimated from "
                       f"{self.df:.1f} degrees of freedom: the design's true one lies in [{lo:.3f}, {hi:.3f}] "
                       f"({LEVEL:.0%})")
        if self.seed_interval is not None:
            lo, hi = self.seed_interval
            out.append(f"{self.arm}: delta_cb {LEVEL:.0%} interval over seeds (seed variance, Welch t) "
                       f"[{lo:+.3f}, {hi:+.3f}]")
        if self.prompt_interval is not None:
            lo, hi = self.prompt_interval
            out.append(f"{self.arm}: delta_cb {LEVEL:.0%} prompt-bootstrap interval [{lo:+.3f}, {hi:+.3f}] covers "
                       "the prompts' sampling only (prompts resampled, every seed's rows kept): not seed variance")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"arm": self.arm, "detectable": self.detectable,
                "detectable_interval": None if self.detectable_interval is None else list(self.detectable_interval),
                "df": self.df, "seed_interval": None if self.seed_interval is None else list(self.seed_interval),
                "prompt_interval": None if self.prompt_interval is None else list(self.prompt_interval),
                "prompt_interval_covers": "prompts only (seeds fixed)", "degenerate": self.degenerate}


@dataclass(frozen=True)
class DesignRates:
    """A registered sequential design's error rates: what its decision at a look claims (the fixed rule's α at the
    seeds scored is not that decision's rate)."""

    looks: tuple[int, ...]
    alpha: float
    reads_effect: bool              # the null's boundary is a true effect of ε (welch-t-min-effect), else zero
    operating: Operating | None     # simulated at register (None: a registration that did not record it)

    @property
    def statement(self) -> str:
        looks = ", ".join(map(str, self.looks))
        return (f"false pass ≤ α {self.alpha:g} overall across looks {looks} (the sequential design's, simulated at "
                "register), design power not simulated")

    def lines(self, rule: str) -> list[str]:
        looks = ", ".join(map(str, self.looks))
        null = "exactly ε" if self.reads_effect else "zero"
        first = (f"false-pass rate of the sequential design (looks at {looks} seeds per arm, {rule}'s statistic) by "
                 f"design: at most α {self.alpha:g} overall, the chance that any of its looks passes a candidate whose "
                 f"true effect is {null}, not α at each look (its boundaries were simulated at register to hold it)")
        op = self.operating
        if op is not None:
            margin = 1.96 * math.sqrt(op.false_pass * (1 - op.false_pass) / op.runs)
            first += (f"; on {op.runs:,} fresh simulated runs at that effect it passed {op.false_pass:.4f} "
                      f"(± {margin:.4f}) and used {op.expected_seeds:.2f} seeds per arm on average, of at most "
                      f"{self.looks[-1]}")
        power = ("power of the sequential design: not simulated here (it depends on the true effect; calibrate "
                 "simulates these looks on a pilot's seeds, and register quotes a pilot's simulation on file)")
        fixed = ("the fixed rule's α at the seeds scored is not this decision's rate (the look decides); the "
                 "detectable deltas and intervals below are the fixed rule's at the seeds scored, not adjusted for the "
                 "looks")
        return [first, power, fixed]

    def to_json(self) -> dict[str, Any]:
        return {"looks": list(self.looks), "alpha": self.alpha, "false_pass_overall": self.alpha,
                "simulated": None if self.operating is None else self.operating.to_json(), "power": None,
                "power_text": "not simulated"}


@dataclass(frozen=True)
class ErrorRates:
    """The typed statement of a gate's error rates under the rule in force."""

    rule: str
    seeds: int
    false_pass: float | None      # α by design; None: the rule registers none
    false_pass_text: str
    power: float | None           # None: unknown
    power_text: str
    candidates: tuple[CandidateRates, ...] = ()
    # A registered sequential design's (None: the fixed design): its rates, not the fixed rule's, are the claim.
    design: DesignRates | None = None

    @property
    def statement(self) -> str:
        """The one line every surface's first line says (the details follow in `lines`)."""
        if self.design is not None:
            return self.design.statement
        false_pass = ("false pass not stated (a range floor)" if self.false_pass is None
                      else f"false pass α {self.false_pass:g} by design")
        power = "power unknown" if self.power is None else f"power {self.power:.2f} at {self.seeds} seeds (pilot)"
        return f"{false_pass}, {power}"

    def lines(self) -> list[str]:
        head = ([f"false-pass rate of {self.rule} by design: {self.false_pass_text}", self.power_text]
                if self.design is None else self.design.lines(self.rule))
        return [*head, *(line for c in self.candidates for line in c.lines())]

    def to_json(self) -> dict[str, Any]:
        data = {"statement": self.statement, "rule": self.rule, "seeds": self.seeds, "false_pass": self.false_pass,
                "false_pass_text": self.false_pass_text, "power": self.power, "power_text": self.power_text,
                "candidates": [c.to_json() for c in self.candidates]}
        return data if self.design is None else {**data, "design": self.design.to_json()}


def _false_pass(rule_id: str, impostors: int) -> tuple[float | None, str]:
    rule = get_rule(rule_id)
    if not rule.has_power_model:
        return None, ("not stated: a range floor registers no false-pass rate (it is whatever the seeds' spreads "
                      "give; calibrate a pilot with an A-vs-A arm to measure it)")
    text = f"α {WELCH_ALPHA} (one-sided Welch t test of the voice delta"
    if rule.smallest_effect:
        text += " against the smallest effect that matters"
    if rule.corrects_nearer and impostors:
        text += f"; 'nearer X' at α/{impostors} over the {impostors} impostors"
    return WELCH_ALPHA, text + ")"


def _power(spec: GateSpec, rule: str) -> tuple[float | None, str]:
    from voicegate.gate._pilot_power import pilot_power

    seeds = len(spec.seeds)
    power = pilot_power(spec, rule)
    where = f"{spec.author} on carrier {spec.seat.base_model}"
    if seeds not in power:
        known = f" (a pilot is on record at {', '.join(str(k) for k in power)} seeds)" if power else ""
        return None, (f"power unknown: no calibration of {where} at {seeds} seeds is recorded in another gate's "
                      f"record{known}")
    p = power[seeds]
    return p.power, (f"power {p.text()} at {seeds} seeds ({LEVEL:.0%} interval including the pilot's sampling), "
                     f"mean of {p.voices} real voice(s) of {where} in pilot {p.pilot}, entry {p.entry} of {p.record}")


def _chi2_scale(df: float) -> tuple[float, float]:
    """(low, high) factors that take an SE estimated with `df` degrees of freedom to where the true one lies."""
    from scipy.special import chdtri

    tail = (1 - LEVEL) / 2
    return math.sqrt(df / float(chdtri(df, tail))), math.sqrt(df / float(chdtri(df, 1 - tail)))


def _seeds_of(arm: Any) -> dict[int, float]:
    return {int(s): float(d) for s, d in arm.distances.items() if d is not None}


def _candidate(spec: GateSpec, result: GateResult, c: CandidateResult, base: dict[int, float],
               degenerate: str | None) -> CandidateRates:
    rule = get_rule(result.rule)
    dist = {"base": base, c.name: _seeds_of(c)}
    se, df = welch(dist, "base", c.name)
    boot = c.bootstrap
    prompt = None if boot is None or boot.low is None or boot.high is None else (boot.low, boot.high)
    if not (math.isfinite(se) and se > 0) or c.delta_cb is None:
        return CandidateRates(c.name, prompt_interval=prompt, degenerate=degenerate)
    half = t_quantile(1 - (1 - LEVEL) / 2, df) * se
    seed = (c.delta_cb - half, c.delta_cb + half)
    det = c.detectable_under(result.rule)
    if det is None or not math.isfinite(det):
        return CandidateRates(c.name, df=df, seed_interval=seed, prompt_interval=prompt, degenerate=degenerate)
    effect = smallest_in_units(spec.smallest_effect, base.values()) if rule.smallest_effect else 0.0
    low, high = _chi2_scale(df)
    part = det - effect  # the t quantiles times the SE: the part estimated from the seeds
    return CandidateRates(c.name, detectable=det, detectable_interval=(effect + part * low, effect + part * high),
                          df=df, seed_interval=seed, prompt_interval=prompt, degenerate=degenerate)


def _degenerate(result: GateResult, c: CandidateResult) -> str | None:
    if any(w.startswith(f"{c.name}: its seeds gave ") for w in result.warnings):
        return ("its seeds gave identical or near-identical pools (not replicates): a floor built on them measures "
                "no noise")
    if c.spread is not None and c.spread == 0:
        return "its distance is the same under every seed (zero spread): there is no noise to measure a ratio by"
    return None


def error_rates(spec: GateSpec, result: GateResult) -> ErrorRates | None:
    """The statement for `result` (the decision in force) of `spec`'s gate; None for a gate registered before
    error rates were stated (its rules all predate `REPLICATES_REQUIRED`)."""
    if not zero_floor_fails(result.rule_ids()):
        return None
    base_arm = next(a for a in result.arms if a.role == "base")
    base = _seeds_of(base_arm)
    impostors = 0 if result.impostors is None else len(result.impostors.authors)
    false_pass, false_text = _false_pass(result.rule, impostors)
    design = _design(spec, result, len(base))
    power, power_text = (None, "power of the sequential design: not simulated") if design is not None else \
        _power(spec, result.rule)
    return ErrorRates(rule=result.rule, seeds=len(spec.seeds), false_pass=false_pass, false_pass_text=false_text,
                      power=power, power_text=power_text,
                      candidates=tuple(_candidate(spec, result, c, base, _degenerate(result, c))
                                       for c in result.candidates), design=design)


def _design(spec: GateSpec, result: GateResult, seeds: int) -> DesignRates | None:
    """The registered sequential design's rates where its look decides `result` (None: the fixed rule's do)."""
    if spec.looks is None or seeds not in spec.looks:
        return None
    registration = load_registration(spec)
    if registration is None or registration.design is None:
        return None
    return DesignRates(looks=tuple(look.seeds for look in registration.design), alpha=WELCH_ALPHA,
                       reads_effect=get_rule(result.rule).smallest_effect, operating=registration.operating)
