"""Floor rules: the registered, versioned definitions of a candidate's sensitivity floor.

A rule is data plus one pure function. `amend` may only switch to a rule whose
registration date precedes the amendment, so the dates here are part of the
contract and never change once a rule ships; a changed definition is a new
version with a new date.

Over 400 lines because every rule lives here, in one place, with its floor, its
detectable delta and its "nearer X" floor: a rule split across modules is a rule
a reader cannot check at one glance.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

Distances = Mapping[str, Mapping[int, float]]
"""arm name -> seed -> d(arm, seed)."""

PromptParts = Mapping[str, Mapping[int, Sequence[float]]]
"""arm name -> seed -> each prompt's own distance (the view's d of that one generation), in one prompt order shared
by every arm and seed: what a paired rule pairs base and candidate by."""

RuleId = Literal["global-max-spread", "pairwise-max-spread", "welch-t", "welch-t-min-effect", "prompt-paired"]
"""The id of a registered rule: a misspelt id in code is a mypy error. Kept equal to `RULES`'s keys (tested)."""


def spread(per_seed: Mapping[int, float]) -> float:
    """max over seeds minus min over seeds (docs/design.md §3)."""
    values = list(per_seed.values())
    if not values:
        raise ValueError("an arm with no seeds has no spread")
    return max(values) - min(values)


SMALLEST_EFFECT = 0.2
"""The default smallest effect that matters (`floor.smallest_effect`), in standard deviations of the base's
per-seed distances toward the gate author. Chosen on the tiny voices' sweep (docs/validity.md): four times the
margin of a wrong author's voice that grew with seeds on held-back authors (≈ 0.05), a fifth of the weakest
right voice's (≈ 1); it costs the right voices 0.01–0.05 of their ship rate at 3–8 seeds."""

REPLICATES_REQUIRED = _dt.date(2026, 12, 7)
"""From this date a floor of exactly 0 never passes, under any rule (`zero_floor_fails`): it means the seeds
gave one value, not that there is no noise (greedy sampling, a seat that ignores the request seed). A gate
registered before keeps the verdicts it had."""


@dataclass(frozen=True)
class Effect:
    """What a rule with a smallest effect and a multiplicity correction is told beside the distances."""

    smallest: float = 0.0  # the smallest effect that matters, in the distances' own units (inf: it cannot be told)
    family: int = 1        # how many claims a "nearer X" claim is one of (the impostors)
    prompts: PromptParts | None = None  # each prompt's own distance for every (arm, seed): what a paired rule reads
    flip_seed: int = 0     # the seed of a randomisation rule's draws (`flip_seed(gate)`: fixed by the spec)


NO_EFFECT = Effect()
Floor = Callable[[Distances, str, str, Effect], float]


@dataclass(frozen=True)
class FloorRule:
    id: RuleId
    version: int
    registered: _dt.date
    summary: str
    _floor: Floor

    # The smallest true delta the design would see with 80% power (None: the rule states none). Only a
    # rule with a sampling model has one; a range floor (max-spread) has no power to speak of.
    _detectable: Floor | None = None
    # The floor a margin must lie below minus for NOT-SPECIFIC ("nearer X"), where it differs from the floor:
    # a rule that corrects that claim for the number of impostors it is one of.
    _nearer: Floor | None = None
    # Whether the rule reads `floor.smallest_effect` (the others never see it: their records stay as they were).
    smallest_effect: bool = False
    # Whether the rule reads each prompt's own distance (`Effect.prompts`): `score` measures them only then.
    paired: bool = False
    # A design a gate chooses, not a floor every gate shows: computed only where it is registered as the deciding
    # rule (or an amendment switches to it), never added to the rules a newer gate computes (`rules_in_force`).
    by_choice: bool = False

    def floor(self, distances: Distances, base: str, candidate: str, effect: Effect = NO_EFFECT) -> float:
        """The floor candidate's delta_cb must exceed to PASS the voice axis."""
        return self._floor(distances, base, candidate, effect)

    def nearer_floor(self, distances: Distances, base: str, candidate: str, effect: Effect = NO_EFFECT) -> float:
        """The floor a margin must lie below minus of for "nearer that impostor" (`effect.family` impostors)."""
        return (self._floor if self._nearer is None else self._nearer)(distances, base, candidate, effect)

    def detectable(self, distances: Distances, base: str, candidate: str,
                   effect: Effect = NO_EFFECT) -> float | None:
        """The minimum detectable delta of this design at 80% power, or None where the rule has no power model."""
        return None if self._detectable is None else self._detectable(distances, base, candidate, effect)

    @property
    def has_power_model(self) -> bool:
        """Whether the rule is a test with a stated α and a power model (the t rules); a range floor is neither."""
        return self._detectable is not None

    @property
    def corrects_nearer(self) -> bool:
        """Whether "nearer X" has a floor of its own under this rule (corrected for the impostors it is one of)."""
        return self._nearer is not None

    def family_note(self, family: int) -> str | None:
        """How a "nearer X" claim under this rule is corrected for the `family` impostors it is one of (None: not)."""
        if self._nearer is None:
            return None
        return (f"each of the {family} impostors at α {WELCH_ALPHA}/{family} (Bonferroni; the verdict is Holm's)"
                if family > 1 else f"the one impostor at α {WELCH_ALPHA}")

    @property
    def signature(self) -> str:
        return f"{self.id}@{self.version}"


def _global_max_spread(distances: Distances, base: str, candidate: str, effect: Effect) -> float:
    return max(spread(per_seed) for per_seed in distances.values())


def _pairwise_max_spread(distances: Distances, base: str, candidate: str, effect: Effect) -> float:
    # The variability of a difference A-B depends on A and B only: a third arm
    # (one nobody ships) must not be able to fail the one that ships.
    return max(spread(distances[candidate]), spread(distances[base]))


WELCH_ALPHA = 0.01
WELCH_POWER = 0.80


def _variance(values: tuple[float, ...]) -> float:
    """Sample variance (n − 1), in floats (statistics.variance works in exact fractions: 50x slower here)."""
    m = sum(values) / len(values)
    return sum((v - m) ** 2 for v in values) / (len(values) - 1)


def _welch(distances: Distances, base: str, candidate: str) -> tuple[float, float]:
    """(standard error of mean(base) − mean(candidate), Welch–Satterthwaite degrees of freedom)."""
    return _welch_of(tuple(distances[candidate].values()), tuple(distances[base].values()))


def welch(distances: Distances, base: str, candidate: str) -> tuple[float, float]:
    """(SE, Welch df) of mean(base) − mean(candidate) over seeds: what the t rules' floors are built on, for a
    statement of how sure a number built on them is (the floors themselves are the rules')."""
    return _welch(distances, base, candidate)


def t_quantile(q: float, df: float) -> float:
    """Student's t quantile, as the t rules compute it."""
    return _t(q, df)


# The floor and the detectable delta of one candidate ask for the same statistics and the same t quantile,
# one after the other (and calibrate asks thousands of times): each is computed once.
@lru_cache(maxsize=256)
def _welch_of(a: tuple[float, ...], b: tuple[float, ...]) -> tuple[float, float]:
    if len(a) < 2 or len(b) < 2:
        return math.inf, 1.0  # one seed has no variance to estimate: nothing can pass
    va, vb = _variance(a) / len(a), _variance(b) / len(b)
    se2 = va + vb
    if se2 == 0:
        return 0.0, float(len(a) + len(b) - 2)
    den = va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)
    # A denominator that underflows (variances near 1e-150) takes the smaller sample's df: the cautious end.
    df = se2 ** 2 / den if den > 0 else float(min(len(a), len(b)) - 1)
    return math.sqrt(se2), df


@lru_cache(maxsize=256)
def _t(q: float, df: float) -> float:
    # scipy.stats.t.ppf(q, df) is stdtrit(df, q) for 0 < q < 1 (times scale 1, plus loc 0): the same float,
    # without importing scipy.stats (~0.7 s); scipy.special only when this rule is computed
    from scipy.special import stdtrit

    return float(stdtrit(df, q))


def _welch_t(distances: Distances, base: str, candidate: str, effect: Effect) -> float:
    # delta > t(1-α, df)·SE  ⇔  Welch's one-sided t statistic > its critical value: the test as a floor,
    # so the table's ratio is t / t_crit. Its SE shrinks as seeds are added, where a range only grows.
    se, df = _welch(distances, base, candidate)
    return se if se in (0.0, math.inf) else _t(1 - WELCH_ALPHA, df) * se


def _welch_detectable(distances: Distances, base: str, candidate: str, effect: Effect) -> float:
    se, df = _welch(distances, base, candidate)
    return se if se in (0.0, math.inf) else (_t(1 - WELCH_ALPHA, df) + _t(WELCH_POWER, df)) * se


def _beyond(effect: Effect, se: float, quantile: float, df: float) -> float:
    # Seeds that gave one value have no noise to test against, and a smallest effect that cannot be told
    # (a base without spread) nothing to be relevant to: neither can pass, so the floor is infinite.
    if se in (0.0, math.inf) or not math.isfinite(effect.smallest):
        return math.inf
    return effect.smallest + _t(quantile, df) * se


def _welch_min_effect(distances: Distances, base: str, candidate: str, effect: Effect) -> float:
    # delta > ε + t(1-α, df)·SE  ⇔  a one-sided Welch test rejects "delta ≤ ε" (a minimum-effect test): a
    # delta that is real but smaller than ε never passes, however many seeds shrink SE.
    se, df = _welch(distances, base, candidate)
    return _beyond(effect, se, 1 - WELCH_ALPHA, df)


def _welch_min_effect_nearer(distances: Distances, base: str, candidate: str, effect: Effect) -> float:
    # "Nearer X" is a claim about one of `family` impostors: any one of them below minus its floor says it, so
    # each is tested at α/family (the verdict, NOT-SPECIFIC when the first of Holm's steps rejects, is Holm's).
    se, df = _welch(distances, base, candidate)
    return _beyond(effect, se, 1 - WELCH_ALPHA / max(1, effect.family), df)


def _welch_min_effect_detectable(distances: Distances, base: str, candidate: str, effect: Effect) -> float:
    se, df = _welch(distances, base, candidate)
    if se in (0.0, math.inf) or not math.isfinite(effect.smallest):
        return math.inf
    return effect.smallest + (_t(1 - WELCH_ALPHA, df) + _t(WELCH_POWER, df)) * se


PAIRED_FLIPS = 1999
"""Random sign flips of the prompt-paired test: p = (1 + flips at least as large) / (1 + 1999)."""
PAIRED_EXACT = 12
"""Up to this many prompts every one of the 2^P sign patterns is enumerated (an exact p-value)."""
SEED_CHECK_ALPHA = 0.05
"""The seed × prompt-group check fails at p < 0.05: a sensitive check, since what it guards (prompts as
independent units) is what the paired test's error rate rests on; a failure costs power (welch-t decides), not
validity."""
PROMPT_GROUPS = 5
"""Prompts are cut, in their registered order, into this many groups for the seed × prompt-group check."""


def flip_seed(gate: str) -> int:
    """The seed of a gate's sign flips: fixed by its name, so every score and calibrate of it draws the same."""
    import hashlib

    return int.from_bytes(hashlib.sha256(f"prompt-paired:{gate}".encode()).digest()[:8], "big")


@dataclass(frozen=True)
class FlipTest:
    """A one-sided sign-flip randomisation test of mean(y) > 0 over prompts."""

    stat: float       # mean(y)
    critical: float   # the test rejects iff stat > critical (inf: it cannot at this α)
    p: float          # its p-value
    flips: int        # sign patterns compared (2^P when exact)
    exact: bool


@lru_cache(maxsize=16)
def _signs(n: int, seed: int) -> Any:
    import numpy as np

    if n <= PAIRED_EXACT:  # every pattern, the identity among them
        codes = np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]
        return 1.0 - 2.0 * (codes & 1)
    return np.random.default_rng(seed).choice(np.array([-1.0, 1.0]), size=(PAIRED_FLIPS, n))


def sign_flip(y: Sequence[float], alpha: float, seed: int) -> FlipTest:
    """The sign-flip test of mean(y) > 0 at `alpha`: exact over all 2^P patterns up to `PAIRED_EXACT` prompts,
    else `PAIRED_FLIPS` random patterns from `default_rng(seed)` (p counts the observed pattern once)."""
    import numpy as np

    v = np.asarray(y, dtype=float)
    n = len(v)
    if n == 0:
        return FlipTest(0.0, math.inf, 1.0, 0, True)
    signs = _signs(n, seed)
    stats = np.sort(signs @ v / n)[::-1]   # largest first
    stat = float(v.mean())
    at_least = int(np.count_nonzero(stats >= stat - 1e-12 * max(1.0, abs(stat))))
    exact = n <= PAIRED_EXACT
    if exact:  # the observed pattern is one of the 2^P: p = share at least as large; reject iff p ≤ α
        k = math.floor(alpha * len(stats) + 1e-9)
        return FlipTest(stat, float(stats[k]) if k < len(stats) else -math.inf, at_least / len(stats), len(stats),
                        True)
    # p = (1 + #{flips ≥ stat}) / (B + 1) ≤ α  ⇔  fewer than k = ⌊α(B+1)⌋ flips at least as large  ⇔  stat above
    # the k-th largest flip
    k = math.floor(alpha * (len(stats) + 1) + 1e-9)
    return FlipTest(stat, float(stats[k - 1]) if k >= 1 else math.inf, (1 + at_least) / (len(stats) + 1),
                    len(stats), False)


@dataclass(frozen=True)
class SeedCheck:
    """The seed × prompt-group F test of the paired rule's assumption: no effect a seed has on several prompts."""

    f: float
    df1: int
    df2: int
    p: float

    @property
    def ok(self) -> bool:
        return self.p >= SEED_CHECK_ALPHA

    def text(self) -> str:
        return f"F({self.df1}, {self.df2}) = {self.f:.2f}, p = {self.p:.3f}"


def seed_check(*arms: Sequence[Sequence[float]]) -> SeedCheck:
    """Does a seed move several prompts of an arm together? Per arm, the prompts' distances (seeds × prompts) are
    centred over seeds; the variation of their means over prompt groups (seed main effect and seed × group, df
    (S−1)·G) is set against the variation within the groups (df (S−1)(P−G)), pooled over the arms. Under
    independent prompts the ratio is F-distributed; no arm with two seeds and a prompt to spare: p = 0 (unchecked)."""
    import numpy as np

    ss_b = ss_w = 0.0
    df_b = df_w = 0
    for parts in arms:
        y = np.asarray(parts, dtype=float)
        if y.ndim != 2 or y.shape[0] < 2:
            continue
        s, n = y.shape
        g = min(PROMPT_GROUPS, n // 2)
        if g < 1:
            continue
        r = y - y.mean(axis=0)
        for cols in np.array_split(np.arange(n), g):
            cell = r[:, cols].mean(axis=1)
            ss_b += len(cols) * float((cell ** 2).sum())
            ss_w += float(((r[:, cols] - cell[:, None]) ** 2).sum())
        df_b += (s - 1) * g
        df_w += (s - 1) * (n - g)
    if df_b == 0 or df_w == 0 or ss_w <= 0:
        return SeedCheck(math.nan, df_b, df_w, 0.0)
    from scipy.special import fdtrc

    f = (ss_b / df_b) / (ss_w / df_w)
    return SeedCheck(f, df_b, df_w, float(fdtrc(df_b, df_w, f)))


@dataclass(frozen=True)
class Paired:
    """The prompt-paired test of one candidate against the base, as its floor reads it."""

    delta: float              # delta_cb, from the per-seed distances
    parts: tuple[float, ...]  # per prompt: mean over the base's seeds − mean over the candidate's, of its distance
    check: SeedCheck
    scale: float              # the parts' units per unit of d: SD over the base's seeds of the mean part / of d

    @property
    def stat(self) -> float:
        return sum(self.parts) / len(self.parts) if self.parts else 0.0


def paired(distances: Distances, base: str, candidate: str, effect: Effect) -> Paired:
    """Each prompt's distance of base and candidate on the seeds `distances` holds (a calibrate draw holds fewer
    than `effect.prompts`), paired by prompt, and the check of their assumption."""
    if effect.prompts is None:
        raise ValueError("the prompt-paired rule needs each prompt's distances (Effect.prompts)")
    rows = {arm: [tuple(effect.prompts[arm][s]) for s in distances[arm]] for arm in (base, candidate)}
    delta = _mean(distances[base].values()) - _mean(distances[candidate].values())
    n = min((len(r) for rs in rows.values() for r in rs), default=0)
    if n == 0:
        return Paired(delta, (), SeedCheck(math.nan, 0, 0, 0.0), math.nan)
    means = {arm: [_mean(r[p] for r in rs) for p in range(n)] for arm, rs in rows.items()}
    parts = tuple(b - c for b, c in zip(means[base], means[candidate], strict=True))
    base_d = tuple(distances[base].values())
    per_seed = tuple(_mean(r[:n]) for r in rows[base])
    sd_d = math.sqrt(_variance(base_d)) if len(base_d) > 1 else 0.0
    sd_parts = math.sqrt(_variance(per_seed)) if len(per_seed) > 1 else 0.0
    return Paired(delta, parts, seed_check(rows[base], rows[candidate]),
                  sd_parts / sd_d if sd_d > 0 and sd_parts > 0 else math.nan)


def _mean(values: Iterable[float]) -> float:
    v = tuple(values)
    return sum(v) / len(v)


def _paired_floor(alpha: Callable[[Effect], float], welch: Floor) -> Floor:
    def floor(distances: Distances, base: str, candidate: str, effect: Effect) -> float:
        # Seeds that move several prompts together break the paired test's unit: Welch's test on the seeds decides.
        test = paired(distances, base, candidate, effect)
        if not test.check.ok or not test.parts:
            return welch(distances, base, candidate, effect)
        eps = effect.smallest * test.scale if effect.smallest else 0.0  # ε in the prompts' units
        if not math.isfinite(eps) or test.delta <= 0 or test.stat <= 0:
            return math.inf  # no unit for ε, or a move away from the author: nothing to pass
        # mean(parts) − ε > critical  ⇔  delta_cb > delta_cb · (ε + critical) / mean(parts): the test as a floor on
        # delta_cb, its ratio the test's own (mean over critical, as welch-t's is t over its critical value)
        flip = sign_flip([x - eps for x in test.parts], alpha(effect), effect.flip_seed)
        return test.delta * (eps + flip.critical) / test.stat
    return floor


def _paired_detectable(distances: Distances, base: str, candidate: str, effect: Effect) -> float:
    test = paired(distances, base, candidate, effect)
    eps = effect.smallest * test.scale if effect.smallest else 0.0
    if not test.check.ok or len(test.parts) < 2 or not math.isfinite(eps) or not test.scale > 0:
        return _welch_min_effect_detectable(distances, base, candidate, effect)
    flip = sign_flip([x - eps for x in test.parts], WELCH_ALPHA, effect.flip_seed)
    sd = math.sqrt(_variance(test.parts) / len(test.parts))
    return (eps + flip.critical + _z(WELCH_POWER) * sd) / test.scale  # in d's units


def _z(q: float) -> float:
    from scipy.special import ndtri

    return float(ndtri(q))


def smallest_in_units(sds: float, base_values: Iterable[float]) -> float:
    """`sds` base-seed standard deviations in the distances' own units: 0 for 0; inf when the base's seeds
    gave one value (or one seed), where a relevant effect has no unit to be told in."""
    if sds == 0:
        return 0.0
    values = tuple(base_values)
    sd = math.sqrt(_variance(values)) if len(values) > 1 else 0.0
    return sds * sd if sd > 0 else math.inf


def zero_floor_fails(rules: Iterable[str]) -> bool:
    """Whether a gate computing `rules` (those in force when it was registered, and its deciding one) decides
    under `REPLICATES_REQUIRED`: it does when one of them was registered on or after that date, which a gate
    registered that day or later always computes."""
    return any(get_rule(r).registered >= REPLICATES_REQUIRED for r in rules)


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

WELCH_T = FloorRule(
    id="welch-t",
    version=1,
    registered=_dt.date(2026, 12, 6),
    summary=f"floor = t(1-{WELCH_ALPHA}, Welch df) × SE of mean(base) − mean(candidate) over seeds: a one-sided "
            "Welch t test whose power grows with seeds",
    _floor=_welch_t,
    _detectable=_welch_detectable,
)

WELCH_T_MIN_EFFECT = FloorRule(
    id="welch-t-min-effect",
    version=1,
    registered=REPLICATES_REQUIRED,
    summary=f"floor = ε + t(1-{WELCH_ALPHA}, Welch df) × SE, ε = floor.smallest_effect base-seed SDs: a one-sided "
            "Welch test that the effect exceeds the smallest that matters; nearer X tested at α/impostors",
    _floor=_welch_min_effect,
    _detectable=_welch_min_effect_detectable,
    _nearer=_welch_min_effect_nearer,
    smallest_effect=True,
)

PROMPT_PAIRED = FloorRule(
    id="prompt-paired",
    version=1,
    registered=REPLICATES_REQUIRED,
    summary=f"floor = delta_cb × (ε + critical) / mean of a one-sided sign-flip test over prompts (per prompt, the "
            f"base's seeds' mean distance of that prompt's generation minus the candidate's; {PAIRED_FLIPS} seeded "
            f"flips, exact up to {PAIRED_EXACT} prompts; α {WELCH_ALPHA}, nearer X at α/impostors), ε = "
            "floor.smallest_effect base-seed SDs; welch-t-min-effect's floor where a seed × prompt-group F test "
            f"(p < {SEED_CHECK_ALPHA}) finds seeds moving prompts together; computed only by a gate that chooses it",
    _floor=_paired_floor(lambda e: WELCH_ALPHA, _welch_min_effect),
    _detectable=_paired_detectable,
    _nearer=_paired_floor(lambda e: WELCH_ALPHA / max(1, e.family), _welch_min_effect_nearer),
    smallest_effect=True,
    paired=True,
    by_choice=True,
)

RULES: dict[str, FloorRule] = {r.id: r for r in (GLOBAL_MAX_SPREAD, PAIRWISE_MAX_SPREAD, WELCH_T, WELCH_T_MIN_EFFECT,
                                                 PROMPT_PAIRED)}


def rules_in_force(on: _dt.date) -> tuple[str, ...]:
    """The ids of the rules registered on or before `on`: what a gate registered that day computes (a rule a gate
    must choose, `by_choice`, only where it is the gate's deciding rule: `Registration.rules` adds it)."""
    return tuple(rid for rid, r in RULES.items() if r.registered <= on and not r.by_choice)


def fallback_note(rule_id: str, distances: Distances, base: str, candidate: str, effect: Effect) -> str | None:
    """Why `rule_id` decided `candidate` by another rule's floor (None: by its own)."""
    if not get_rule(rule_id).paired:
        return None
    test = paired(distances, base, candidate, effect)
    if test.check.ok and test.parts:
        return None
    why = (f"the seed × prompt-group check found seeds moving prompts together ({test.check.text()}, under "
           f"{SEED_CHECK_ALPHA})" if math.isfinite(test.check.f) else
           "the seed × prompt-group check cannot be made (two seeds per arm and two prompts a group needed)")
    return f"{why}: prompts are not independent units here, so welch-t-min-effect's floor decides"



# -- what a surface may say about a rule without holding it ---------------------------------
# The rendering layers (artifacts, report, cli) print rules; they never hold one (its floor function,
# its verdict), so they reach the registry only through these words.


def rule_signature(rule_id: str) -> str:
    """'pairwise-max-spread@1': the id with its version; an id this voicegate does not know, as given."""
    rule = RULES.get(rule_id)
    return f"{rule_id}@{rule.version}" if rule else rule_id


def rule_family_note(rule_id: str, family: int) -> str | None:
    """What a rule says of a "nearer X" claim corrected over `family` impostors (None: it corrects none)."""
    rule = RULES.get(rule_id)
    return rule.family_note(family) if rule is not None else None


def in_registry_order(ids: set[str]) -> list[str]:
    """`ids` in the registry's order, ids this voicegate does not know last (sorted)."""
    return [r for r in RULES if r in ids] + sorted(ids - set(RULES))


def get_rule(rule_id: str) -> FloorRule:
    from voicegate._errors import VoicegateError

    try:
        return RULES[rule_id]
    except KeyError:
        known = ", ".join(sorted(RULES))
        raise VoicegateError(f"unknown floor rule {rule_id!r} (registered rules: {known})") from None
