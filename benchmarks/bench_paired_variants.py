"""Benchmark: where the prompt-paired rule's power is lost on the tiny voices' sweep, and what sound changes buy.

A ship needs VOICE PASS and SPECIFIC. SPECIFIC needs the margin against EVERY impostor above its floor, each
tested at α (an intersection-union test: no multiplicity correction enters it; α/m is "nearer X"'s, which moves
INCONCLUSIVE to NOT-SPECIFIC and never a ship). So a ship is five paired tests (the voice and four margins on the
five-author gates), and what each variant below changes is one of them:

- ``as registered``: ``prompt-paired``'s own floors (``get_rule("prompt-paired").floor``), as ``specificity`` and
  ``decide`` compare them;
- ``rebuilt``: the same test rebuilt from ``seed_check`` and ``sign_flip`` (must agree with the line above: the
  benchmark stops where any verdict differs);
- ``pooled eps``: ε in the prompts' units from the base's within-prompt variance over seeds (``(S − 1) · P`` degrees
  of freedom under the rule's own assumption) instead of the ratio of two K-seed SDs;
- ``studentized``: each prompt's difference over its own standard error (both arms' seeds), then sign flips;
- ``no eps on margins`` and ``no seed check``: what ε on the margins and the assumption's check cost (neither is
  a rule anyone may register: the smallest effect is the companion issue's, and the check is what the paired
  test's error rate rests on); both together: what the test would ship with neither;
- ``SPECIFIC at 0.05``: every margin's paired test at α 0.05 (a fallback as registered), VOICE at 0.01: a looser
  claim, not a better test (a wrong author's voice whose margin sits at ε would ship up to 5% of the time);
- ``seed check at 0.01``: each test's seed x prompt-group check at p < 0.01 (a family-wise 5% over a candidate's
  five tests) instead of 0.05; what it costs in protection, ``seed_component`` measures: the A-vs-A arm's VOICE
  PASS with a seed-level shift (1% of a generation's variance, every prompt of a seed moved together) added to
  both arms' distances, the check at 0.05 and at 0.01.

Draws of K seeds per arm without resampling, on both splits of the base's 96 pools (as bench_paired.py's A-vs-A
draws), the same draws for every variant. Right voices: VOICE PASS, SPECIFIC, ships (mean of 7 gates; weakest
gate); A-vs-A VOICE PASS and ships (mean of 7 gates x 2 splits; worst); another author's voice ships (mean of 22
pairs; worst). Last, on simulated prompts, what testing SPECIFIC by its smallest margin against that minimum's
joint sign-flip distribution (the same flips for every impostor) would do to its error rate.

    python benchmarks/bench_paired_variants.py [--draws 150] [--ks 3,5] [--keep DIR]
"""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_operating import A_VS_A, RIGHT, per_gate_lines, swapped
from bench_paired import sweep_main

ALPHA = 0.01
SEED_CHECK_ALPHA = 0.05
SEED_COMPONENT = 0.01
"""The seed-level share of a generation's variance added to the A-vs-A draws by `seed_component`."""
VARIANTS = ("as registered", "rebuilt", "pooled eps", "studentized", "no eps on margins", "no seed check",
            "no eps on margins, no seed check", "SPECIFIC at 0.05", "seed check at 0.01")


def _sd(values: Any) -> float:
    import numpy as np

    return float(np.std(values, ddof=1))


@dataclass
class Paired:
    """One paired test's inputs (rows seeds x prompts of base and candidate, per-seed pool distances, ε in the pool
    distance's units), with what every variant shares computed once: the assumption's check and its fallback."""

    pb: Any
    pc: Any
    db: Any
    dc: Any
    smallest: float
    flips: int

    def __post_init__(self) -> None:
        from voicegate.spec import Effect, get_rule, seed_check

        self.check_p = seed_check(self.pb.tolist(), self.pc.tolist()).p
        self.delta = float(self.db.mean() - self.dc.mean())
        self.y = self.pb.mean(axis=0) - self.pc.mean(axis=0)
        dist = {"base": dict(enumerate(self.db.tolist())), "c": dict(enumerate(self.dc.tolist()))}
        self.fallback = self.passes(get_rule("welch-t-min-effect").floor(dist, "base", "c",
                                                                         Effect(smallest=self.smallest)))

    def passes(self, floor: float) -> bool:
        return round(self.delta, 12) > round(floor, 12)  # as every verdict compares


def registered(t: Paired, family: int) -> bool:
    """The registered rule's own floor."""
    from voicegate.spec import Effect, get_rule

    dist = {"base": dict(enumerate(t.db.tolist())), "c": dict(enumerate(t.dc.tolist()))}
    parts = {"base": dict(enumerate(map(tuple, t.pb.tolist()))), "c": dict(enumerate(map(tuple, t.pc.tolist())))}
    return t.passes(get_rule("prompt-paired").floor(dist, "base", "c", Effect(smallest=t.smallest, family=family,
                                                                              prompts=parts, flip_seed=t.flips)))


def rebuilt(t: Paired, *, eps_mode: str = "ratio", check: float = SEED_CHECK_ALPHA, studentize: bool = False,
            alpha: float = ALPHA) -> bool:
    """The rule's test rebuilt from `sign_flip`, with the variant's changes."""
    import numpy as np

    from voicegate.spec import sign_flip

    if t.check_p < check:  # the registered check: p < 0.05 falls back (check 0: never)
        return t.fallback
    stat = float(t.y.mean())
    if eps_mode == "none":
        eps = 0.0
    elif eps_mode == "pooled":  # ε's share of the base's pool SD, times a seed mean's SD from within-prompt variance
        eps = t.smallest / _sd(t.db) * math.sqrt(float(t.pb.var(axis=0, ddof=1).sum())) / t.pb.shape[1]
    else:
        eps = t.smallest * _sd(t.pb.mean(axis=1)) / _sd(t.db)
    if not math.isfinite(eps) or t.delta <= 0 or stat <= 0:
        return False
    if studentize:
        se = np.sqrt(t.pb.var(axis=0, ddof=1) / len(t.pb) + t.pc.var(axis=0, ddof=1) / len(t.pc))
        z = (t.y - eps) / np.maximum(se, 1e-12)
        return float(z.mean()) > sign_flip(z.tolist(), alpha, t.flips).critical
    flip = sign_flip((t.y - eps).tolist(), alpha, t.flips)
    return t.passes(t.delta * (eps + flip.critical) / stat)


def no_eps(t: Paired) -> Paired:
    return Paired(t.pb, t.pc, t.db, t.dc, 0.0, t.flips)


Test = Callable[[Paired, bool], bool]


def tests(family: int) -> dict[str, Test]:
    """variant -> (the test, whether it is a margin's) -> passes."""
    return {
        "as registered": lambda t, m: registered(t, family),
        "rebuilt": lambda t, m: rebuilt(t),
        "pooled eps": lambda t, m: rebuilt(t, eps_mode="pooled"),
        "studentized": lambda t, m: rebuilt(t, studentize=True),
        "no eps on margins": lambda t, m: rebuilt(no_eps(t) if m else t),
        "no seed check": lambda t, m: rebuilt(t, check=0.0),
        "no eps on margins, no seed check": lambda t, m: rebuilt(no_eps(t) if m else t, check=0.0),
        "SPECIFIC at 0.05": lambda t, m: rebuilt(t, alpha=0.05 if m else ALPHA),
        "seed check at 0.01": lambda t, m: rebuilt(t, check=0.01),
    }


def draws_of(author: str, dist: Any, toward: Any, parts: Any, cands: list[str], k: int, draws: int, seed: int,
             flips: int, smallest_sds: float) -> dict[tuple[str, str], dict[str, int]]:
    """(variant, arm) -> counts of VOICE PASS, SPECIFIC and ships over `draws` draws of K seeds per arm."""
    import numpy as np

    rng = np.random.default_rng(seed)
    arms = ["base", *cands, A_VS_A]
    impostors = list(toward)
    by = tests(len(impostors))
    counts: dict[tuple[str, str], dict[str, int]] = {(v, a): {"voice": 0, "specific": 0, "ships": 0}
                                                    for v in VARIANTS for a in arms[1:]}

    def rows(target: str, arm: str, seeds: list[int]) -> Any:
        return np.array([parts[target][arm][s] for s in seeds], dtype=float)

    def pool(d: Any, arm: str, seeds: list[int]) -> Any:
        return np.array([d[arm][s] for s in seeds], dtype=float)

    disagree = [0]
    for _ in range(draws):
        pick = {arm: [int(s) for s in rng.permutation(sorted(dist[arm]))[:k]] for arm in arms}
        pb, db = rows(author, "base", pick["base"]), pool(dist, "base", pick["base"])
        smallest = smallest_sds * _sd(db)
        for c in arms[1:]:
            pc, dc = rows(author, c, pick[c]), pool(dist, c, pick[c])
            voice_test = Paired(pb, pc, db, dc, smallest, flips)
            margins = [Paired(pb - rows(n, "base", pick["base"]), pc - rows(n, c, pick[c]),
                              db - pool(toward[n], "base", pick["base"]), dc - pool(toward[n], c, pick[c]), smallest,
                              flips) for n in impostors]
            said = {v: [test(voice_test, False)] + [test(m, True) for m in margins] for v, test in by.items()}
            disagree[0] += said["rebuilt"] != said["as registered"]
            for v, (voice, *specific) in said.items():
                n = counts[(v, c)]
                n["voice"] += voice
                n["specific"] += all(specific)
                n["ships"] += voice and all(specific)
    if disagree[0]:
        raise SystemExit(f"{author}: the rebuilt test disagrees with the registered rule on {disagree[0]} candidates")
    return counts


def seed_component(author: str, dist: Any, parts: Any, k: int, draws: int, seed: int, flips: int,
                   smallest_sds: float) -> dict[float, tuple[int, int]]:
    """check alpha -> (A-vs-A VOICE PASS count, fallback count) over `draws` draws with a seed-level shift added."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = {arm: np.array([parts[author][arm][s] for s in sorted(parts[author][arm])], dtype=float)
            for arm in ("base", A_VS_A)}
    pool = {arm: np.array([dist[arm][s] for s in sorted(dist[arm])], dtype=float) for arm in ("base", A_VS_A)}
    tau = math.sqrt(SEED_COMPONENT * float(rows["base"].var(axis=0, ddof=1).mean()))
    out = {0.05: [0, 0], 0.01: [0, 0]}
    for _ in range(draws):
        shifted = {}
        for arm in ("base", A_VS_A):
            pick = rng.permutation(len(pool[arm]))[:k]
            u = rng.normal(0.0, tau, size=k)
            # a seed that moves each of its prompts by u moves the pool's mean distance by about u too
            shifted[arm] = (rows[arm][pick] + u[:, None], pool[arm][pick] + u)
        (pb, db), (pc, dc) = shifted["base"], shifted[A_VS_A]
        t = Paired(pb, pc, db, dc, smallest_sds * _sd(db), flips)
        for check, n in out.items():
            n[0] += rebuilt(t, check=check)
            n[1] += t.check_p < check
    return {c: (n[0], n[1]) for c, n in out.items()}


def prompt_noise(author: str, right: str, parts: Any, impostors: list[str]) -> dict[str, tuple[float, float, float]]:
    """On every stored seed, per target (the author's own distance, then each margin): the right voice's mean
    difference a prompt, the median over prompts of the SD of one base generation's minus one candidate generation's,
    and the ratio of
    the noisiest prompt's SD to the quietest's."""
    import numpy as np

    def rows(target: str, arm: str) -> Any:
        return np.array([parts[target][arm][s] for s in sorted(parts[target][arm])], dtype=float)

    out = {}
    for name in (author, *impostors):
        b, c = rows(author, "base"), rows(author, right)
        if name != author:
            b, c = b - rows(name, "base"), c - rows(name, right)
        noise = b.var(axis=0, ddof=1) + c.var(axis=0, ddof=1)
        out[name] = (float((b.mean(axis=0) - c.mean(axis=0)).mean()), float(np.sqrt(np.median(noise))),
                     float(np.sqrt(noise.max() / noise.min())))
    return out


def run(root: Path, gates: dict[str, str], ks: tuple[int, ...], draws: int, seed: int, log: Any = print) -> str:
    from voicegate.gate import load_generations
    from voicegate.scoring import measure_gate
    from voicegate.spec import flip_seed, load_spec

    share: dict[tuple[str, int, str, str], list[dict[str, float]]] = {}
    noise: dict[tuple[str, str], tuple[float, float, float]] = {}
    shifted: dict[tuple[int, float], list[tuple[int, int]]] = {}
    for author, gate in gates.items():
        spec = load_spec(root, gate)
        m = measure_gate(spec, load_generations(spec), cache_dir=spec.run.cache, write_cache=True, parts=True)
        cands = [a.name for a in spec.candidates]
        for name, n in prompt_noise(author, RIGHT[author], m.parts, list(m.toward)).items():
            noise[(gate, name)] = n
        for split in (False, True):
            dist = swapped(m.distances) if split else m.distances
            toward = {n: swapped(t) if split else t for n, t in m.toward.items()}
            parts = {n: swapped(p) if split else p for n, p in m.parts.items()}
            for k in ks:
                counts = draws_of(author, dist, toward, parts, cands, k, draws, seed, flip_seed(spec.gate),
                                  spec.smallest_effect)
                for (v, arm), n in counts.items():
                    share.setdefault((author, k, v, arm), []).append({x: c / draws for x, c in n.items()})
                for check, n in seed_component(author, dist, parts, k, 2 * draws, seed, flip_seed(spec.gate),
                                               spec.smallest_effect).items():
                    shifted.setdefault((k, check), []).append(n)
        log(f"  {gate}: done")

    def mean_of(author: str, k: int, v: str, arm: str, what: str) -> float:
        return statistics.mean(x[what] for x in share[(author, k, v, arm)])

    lines = [("| variant, seeds per arm | right voice: VOICE PASS; SPECIFIC; ships (weakest gate) | A-vs-A VOICE "
              "PASS (mean; worst) | A-vs-A ships (mean; worst) | another author's voice ships (mean; worst) |"),
             "|---|---|---|---|---|"]
    for v in VARIANTS:
        for k in ks:
            right = {a: [mean_of(a, k, v, RIGHT[a], w) for w in ("voice", "specific", "ships")] for a in gates}
            aa_voice = [x["voice"] for a in gates for x in share[(a, k, v, A_VS_A)]]
            aa_ships = [x["ships"] for a in gates for x in share[(a, k, v, A_VS_A)]]
            wrong = [mean_of(a, k, v, c, "ships") for (a, kk, vv, c) in share
                     if kk == k and vv == v and c not in (RIGHT[a], A_VS_A)]
            lines.append(f"| {v}, {k} | {statistics.mean(r[0] for r in right.values()):.3f}; "
                         f"{statistics.mean(r[1] for r in right.values()):.3f}; "
                         f"{statistics.mean(r[2] for r in right.values()):.3f} "
                         f"({min(r[2] for r in right.values()):.3f}) | {statistics.mean(aa_voice):.4f}; "
                         f"{max(aa_voice):.3f} | {statistics.mean(aa_ships):.4f}; {max(aa_ships):.3f} | "
                         f"{statistics.mean(wrong):.4f}; {max(wrong):.3f} |")
    lines += per_gate_lines(gates, ks, VARIANTS, lambda a, k, v: mean_of(a, k, v, RIGHT[a], "ships"))
    ratios = [r for _, _, r in noise.values()]
    lines += ["", (f"each prompt's noise (48 seeds, right voices, every target): the noisiest prompt's SD over the "
                   f"quietest's {min(ratios):.1f}-{max(ratios):.1f}; per gate and target, mean difference a prompt "
                   "against the median SD of one base generation's minus one candidate generation's:")]
    for gate in gates.values():
        lines.append(f"  {gate:14s} " + "; ".join(f"{name} {e:.4f} / {sd:.4f}"
                                                  for (g, name), (e, sd, _) in noise.items() if g == gate))
    lines += ["", (f"A-vs-A VOICE PASS with a seed component of {SEED_COMPONENT:.0%} of a generation's variance "
                   f"({2 * draws} draws per gate, K and split):")]
    for (k, check), n in sorted(shifted.items()):
        total = 2 * draws * len(n)
        lines.append(f"  K={k}, seed check at {check}: VOICE PASS {sum(x for x, _ in n) / total:.4f}, fell back "
                     f"{sum(f for _, f in n) / total:.3f}")
    return "\n".join(lines)


def min_statistic(reps: int = 2000, seed: int = 1) -> str:
    """Why SPECIFIC is not tested by its smallest margin against that minimum's joint sign-flip distribution: with
    one impostor at the null and three far from it (independent normal prompts), it rejects more often than α."""
    import numpy as np

    rng = np.random.default_rng(seed)
    prompts, impostors, flips = 40, 4, 999
    signs = rng.choice(np.array([-1.0, 1.0]), size=(flips, prompts))
    joint = each = 0
    for _ in range(reps):
        y = rng.normal(size=(impostors, prompts))
        y[1:] += 3.0
        stat = y.mean(axis=1)
        flipped = signs @ y.T / prompts  # the same flips for every impostor
        joint += stat.min() > np.quantile(flipped.min(axis=1), 1 - ALPHA)
        each += all(stat[i] > np.quantile(flipped[:, i], 1 - ALPHA) for i in range(impostors))
    return (f"one impostor at the null, three far ({reps} runs): the smallest margin against its joint flip "
            f"distribution rejects {joint / reps:.4f}; every margin at α (intersection-union) {each / reps:.4f}; "
            f"α {ALPHA}")


def main() -> None:
    sweep_main(__doc__ or "", run, draws=150, ks="3,5", prefix="vg-bench-paired-variants-", after=min_statistic)


if __name__ == "__main__":
    main()
