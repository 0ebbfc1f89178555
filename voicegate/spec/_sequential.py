"""A registered sequential design: looks fixed at `register`, each with its efficacy and futility boundary.

The statistic is the t rules': T = (delta_cb − ε·SD(base)) / SE with Welch's SE, as a one-sided p-value. At
look k (n_k seeds per arm) the design PASSes where p < a_k, FAILs for futility where p > g_k (every look
but the last), and at the last look FAILs whatever did not pass. Nothing else decides: a score at a number of
seeds that is not a look is refused, so adding seeds until a test passes (optional stopping) is not possible.

- Efficacy: a_k = Φ(−C·(n_K/n_k)^0.25) (Wang–Tsiatis, Δ 0.25: between Pocock's flat and O'Brien–Fleming's
  steep boundaries); C by bisection so that the simulated false pass at the null's boundary (true effect ε)
  is at most α.
- Futility (binding): g_k = 0.5 · n_1/n_k (0.5, 0.3, 0.19 for looks 3, 5, 8).
- The simulation: per-seed distances in units of the base's per-seed SD, base N(0, 1) and candidate N(−ε, 1),
  `RUNS` runs from a fixed seed, p-values on 2n − 2 degrees of freedom. `score` uses Welch's df, which is at
  most 2n − 2: its critical values are at least the simulated ones, so its false pass is at most the design's.

The same looks always give the same boundaries (a seeded simulation): `register` records them and `score`
reads them from the registration, never recomputing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import Any

SHAPE = 0.25
FUTILITY_FIRST = 0.5
RUNS = 100_000
SIM_SEED = 20261207
# The null's boundary the boundaries are calibrated at, in base-seed SDs: welch-t-min-effect's default ε. A
# rule without a smallest effect (welch-t) tests zero; the boundary's false pass is the same statistic shifted.
SIM_EFFECT = 0.2


@dataclass(frozen=True)
class Look:
    """One registered look: its seeds per arm and its boundaries on the one-sided p-value."""

    seeds: int
    efficacy: float  # PASS where p < efficacy
    futility: float | None  # FAIL where p > futility (None at the last look: whatever did not pass FAILs)

    def to_json(self) -> dict[str, Any]:
        return {"seeds": self.seeds, "efficacy": self.efficacy, "futility": self.futility}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Look:
        return cls(seeds=int(d["seeds"]), efficacy=float(d["efficacy"]),
                   futility=None if d.get("futility") is None else float(d["futility"]))


def futility(looks: Sequence[int]) -> tuple[float, ...]:
    """g_k for every look but the last."""
    return tuple(round(FUTILITY_FIRST * looks[0] / n, 4) for n in looks[:-1])


def simulated_p(looks: Sequence[int], runs: int, seed: int, delta: float, eps: float = SIM_EFFECT) -> Any:
    """runs × looks one-sided p-values of the t rules' statistic on simulated per-seed distances (true effect
    `delta` base-seed SDs, tested against ε)."""
    import numpy as np
    from scipy.special import stdtr

    rng = np.random.default_rng(seed)
    n_max = looks[-1]
    b = rng.standard_normal((runs, n_max))
    c = rng.standard_normal((runs, n_max)) - delta
    out = []
    for n in looks:
        vb, vc = b[:, :n].var(1, ddof=1), c[:, :n].var(1, ddof=1)
        t = (b[:, :n].mean(1) - c[:, :n].mean(1) - eps * np.sqrt(vb)) / np.sqrt(vb / n + vc / n)
        out.append(stdtr(2 * n - 2, -t))  # the upper tail: P(T_df > t)
    return np.column_stack(out)


def simulate(p: Any, design: Sequence[Look]) -> tuple[Any, Any]:
    """(passed, seeds used) per run of `p` (runs × looks) under `design`."""
    import numpy as np

    runs = p.shape[0]
    decided = np.zeros(runs, bool)
    passed = np.zeros(runs, bool)
    used = np.full(runs, design[-1].seeds)
    for k, look in enumerate(design):
        yes = ~decided & (p[:, k] < look.efficacy)
        no = ~decided & ~yes & (p[:, k] > look.futility if look.futility is not None else True)
        passed |= yes
        used[yes | no] = look.seeds
        decided |= yes | no
    return passed, used


def _efficacy(looks: Sequence[int], c: float) -> list[float]:
    from scipy.special import ndtr

    return [float(ndtr(-c * (looks[-1] / n) ** SHAPE)) for n in looks]


def _design(looks: Sequence[int], efficacy: Sequence[float]) -> tuple[Look, ...]:
    g = futility(looks)
    return tuple(Look(n, a, g[k] if k < len(g) else None) for k, (n, a) in enumerate(zip(looks, efficacy,
                                                                                        strict=True)))


@lru_cache(maxsize=16)
def _boundaries(looks: tuple[int, ...], alpha: float) -> tuple[Look, ...]:
    null = simulated_p(looks, RUNS, SIM_SEED, SIM_EFFECT)
    lo, hi = 0.5, 8.0
    for _ in range(40):
        mid = (lo + hi) / 2
        passed, _ = simulate(null, _design(looks, _efficacy(looks, mid)))
        lo, hi = (mid, hi) if passed.mean() > alpha else (lo, mid)
    # To 6 significant digits: the record's numbers are the ones `score` applies.
    return _design(looks, [float(f"{a:.5e}") for a in _efficacy(looks, hi)])


def boundaries(looks: Sequence[int], alpha: float) -> tuple[Look, ...]:
    """The registered design of `looks` (ascending seeds per arm) at false pass `alpha`: deterministic."""
    return _boundaries(tuple(looks), alpha)


@dataclass(frozen=True)
class Operating:
    """The registered design's operating characteristics at the null's boundary, simulated at `register` on fresh
    runs (not the ones its boundaries were calibrated on): its false pass over every look together and its
    expected seeds per arm. Its power is not simulated: it depends on the true effect, which no one knows."""

    runs: int
    seed: int
    false_pass: float
    expected_seeds: float

    def to_json(self) -> dict[str, Any]:
        return {"runs": self.runs, "seed": self.seed, "false_pass": self.false_pass,
                "expected_seeds": self.expected_seeds}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Operating:
        return cls(runs=int(d["runs"]), seed=int(d["seed"]), false_pass=float(d["false_pass"]),
                   expected_seeds=float(d["expected_seeds"]))


@lru_cache(maxsize=16)
def _operating(design: tuple[Look, ...]) -> Operating:
    seed = SIM_SEED + 1
    passed, used = simulate(simulated_p([look.seeds for look in design], RUNS, seed, SIM_EFFECT), design)
    return Operating(RUNS, seed, round(float(passed.mean()), 5), round(float(used.mean()), 2))


def operating(design: Sequence[Look]) -> Operating:
    """`design`'s false pass and expected seeds per arm at the null's boundary, on fresh runs: deterministic."""
    return _operating(tuple(design))


def check_looks(looks: Sequence[int], seeds: int) -> str | None:
    """Why `looks` cannot be a design over `seeds` seeds per arm (None: it can)."""
    if len(looks) < 2:
        return "must list at least two looks (one look is the fixed design)"
    if looks[0] < 2:
        return "the first look needs at least 2 seeds per arm (a t test has no variance with one)"
    if any(b <= a for a, b in pairwise(looks)):
        return "must be strictly ascending"
    if looks[-1] != seeds:
        return f"the last look must be every seed of `seeds` ({seeds}), not {looks[-1]}"
    return None


@dataclass(frozen=True)
class LookDecision:
    """What a look decides for one candidate: PASS, FAIL (futility or the last look) or CONTINUE."""

    verdict: str
    p: float
    look: Look
    index: int  # 1-based
    of: int

    @property
    def line(self) -> str:
        head = f"look {self.index} of {self.of}, {self.look.seeds} seeds"
        if self.verdict == "PASS":
            return f"{head}: PASS (p {self.p:.5f} under {self.look.efficacy:g})"
        if self.verdict == "CONTINUE":
            return (f"{head}: CONTINUE (p {self.p:.5f}, between {self.look.efficacy:g} and {self.look.futility:g}): "
                    "not decided at this look: generate to the next look")
        why = f"p {self.p:.5f} over {self.look.futility:g}: futility" if self.look.futility is not None else \
            f"p {self.p:.5f} not under {self.look.efficacy:g} at the last look"
        return f"{head}: FAIL ({why})"


def decide_look(p: float, design: Sequence[Look], seeds: int) -> LookDecision:
    """The decision at the look of `seeds` seeds per arm (ValueError: not a registered look)."""
    index = next((k for k, look in enumerate(design) if look.seeds == seeds), None)
    if index is None:
        raise ValueError(seeds)
    look = design[index]
    if p < look.efficacy:
        verdict = "PASS"
    elif look.futility is None or p > look.futility:
        verdict = "FAIL"
    else:
        verdict = "CONTINUE"
    return LookDecision(verdict, p, look, index + 1, len(design))
