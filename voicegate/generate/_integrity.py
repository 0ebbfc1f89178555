"""Seat integrity: canaries that tell whether the seat served each arm its own weights (issues 16, 25).

The gate's premise is that a difference between arms is the adapter's. A seat can
break it silently: vLLM on CPU, base and adapters batched together, has answered
adapter requests with the carrier's weights and base requests with an adapter's,
echoing the requested ``model`` name all along. This module makes that visible.

**Method** (``canary-reproduction@2``; every parameter is recorded in run.json):

1. *Canaries a seat cannot tell from real requests.* Each session draws, from a
   secret per-session nonce, ``count`` of the gate's own voice cells (a prompt and a
   registered seed); a canary is that cell's very request — the prompt, its request
   seed, the gate's own sampling (temperature, top_p, max_tokens) — so nothing in
   its body marks it, not even for a seat that knows the schedule. vLLM's seeded
   sampling repeats on the same weights (the same seed gives the same text, also
   under concurrency and across restarts), so a canary's answer is a fingerprint of
   the weights that produced it.
2. *References, asked twice, alone.* Before any real request, each arm answers
   every canary ``asks`` (2) times, alone on the seat (one wave per arm, drained
   before the next). The two asks *calibrate* the session from the seat itself:
   ``S`` = the lowest similarity between two asks of one (arm, canary) — how well
   the seat reproduces itself — and ``X`` = the highest similarity between two
   different arms' references on one canary — how near different weights come.
   The threshold sits a third of the way from the nearest other arm to the seat's own
   reproduction, ``t = X + (S - X) / 3``: an answer of another arm's (or of no arm's)
   weights lands near ``X`` or below, a reproduction near ``S`` — and on the stand-in
   with late divergence, the midpoint flagged 1 clean run in 20 (a reproduction at
   0.676 against t = 0.677). When ``S - X`` is below ``min_gap`` the seat cannot tell
   its arms apart and every check is *unclear*.
3. *Checks.* During the run the canaries are re-sent at unpredictable positions
   (stratified random, from the nonce) among the real requests, so they meet the
   conditions those meet; at least one check per arm falls in the last
   ``closing`` share of the run, and under ``--isolate-arms`` a check opens every
   wave (the first request after an arm switch) and one more falls in each arm's
   last wave.
4. *Reproduction.* Similarity is the Dice coefficient over the multisets of
   character ``ngram``-grams of the case-folded, whitespace-collapsed texts; a
   check is compared with each arm's asks and keeps the best. It is **right** only
   when it reproduces its own arm's reference (similarity >= t, and no other arm's
   reference nearer). Otherwise it counts against integrity: **wrong** (answered as
   another arm: that arm's reference is reproduced), **foreign weights** (near no
   reference at all: stale or unknown weights), or **unclear** (the session could
   not be calibrated). Nothing but "right" can make a session hold. Arms whose
   references are the very same text on a canary cannot be told apart on it; such
   a pair never counts as wrong.
5. *Replicas.* Every replica asks the same canaries; before any cell, each
   replica's references for each arm must reproduce the first replica's (within
   the first replica's threshold), or the run is refused naming the replica.

**Detection floor.** Checks per arm scale with the run: the references (one ask
each) and the checks stay within ``overhead`` (5%) of the real requests, the
second asks (the calibration repeats) on top, with at least ``min_checks_per_arm``
per arm (and, isolated, one per wave). ``n`` checks would all miss a fault that
hits a share ``f`` of the requests with probability ``(1 - f)^n``; the record
states ``f95 = 1 - 0.05^(1/n)``, the fault rate caught with 95% probability, for
the seat (all checks) and for one arm alone (its checks).

**Verdict.** `score` recomputes every check from the stored texts of
``canaries.jsonl`` under the parameters in run.json (a row's own ``status`` is
never read back). Integrity *holds* for the scored rows only when every
(session, replica) that produced one of them was calibrated, had at least one
check, every check was right, and its stored rows and checks are no more than
run.json recorded for it. Anything else refuses the verdict: ``generate
--isolate-arms`` moves the rows of a failed (session, replica) to the quarantine
file (never deleting one) and regenerates them with one arm on the seat at a time.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from voicegate.scoring import Confusion, Integrity

METHOD_ID = "canary-reproduction@2"
METHOD = ("each session draws canaries from the gate's own prompts with fixed per-canary seeds and the gate's own "
          "sampling; each arm answers each canary twice alone on the seat (its reference, and the calibration); the "
          "canaries are re-sent at unpredictable positions among the real requests; a check is right only when it "
          "reproduces its own arm's reference within the session's calibrated threshold (Dice similarity of "
          "character n-gram multisets), otherwise it counts against integrity")
THRESHOLD_RULE = ("t = X + (S - X) / 3: S the lowest similarity between two asks of one (arm, canary) alone on "
                  "the seat, X the highest similarity between two arms' references on one canary; uncalibrated "
                  "when S - X < min_gap")
POSITION_RULE = ("checks at stratified random positions among each replica's real requests (drawn from the "
                 "session's nonce), one per arm in the last `closing` share of the run; isolated: one check opens "
                 "every wave and one more falls in each arm's last wave")
FLOOR_RULE = "f95 = 1 - 0.05^(1/n): the share of faulty requests that n checks would catch with 95% probability"
FOREIGN = "foreign weights"


@dataclass(frozen=True)
class Canary:
    """One of the gate's own voice cells (prompt, registered seed): its very request, asked of every arm."""

    id: str
    prompt_id: str
    prompt: str
    seed: int                 # the request seed, as the real requests of that cell carry it
    registered_seed: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "prompt_id": self.prompt_id, "registered_seed": self.registered_seed,
                "prompt_sha256": hashlib.sha256(self.prompt.encode("utf-8")).hexdigest(), "seed": self.seed}


def choose_canaries(prompts: Sequence[tuple[str, str]], count: int, nonce: str,
                    seeds: Sequence[int] = ()) -> list[Canary]:
    """`count` of the gate's voice cells (a prompt and a registered seed), drawn from the session's nonce.

    Without registered `seeds` (a caller outside a gate), each canary's seed is drawn from the nonce.
    """
    from voicegate.generate._schedule import request_seed

    order = sorted(prompts, key=lambda p: hashlib.sha256(f"{nonce}:prompt:{p[0]}".encode()).hexdigest())
    out = []
    for i, (pid, text) in enumerate(order[:max(1, count)]):
        digest = int(hashlib.sha256(f"{nonce}:seed:{i}".encode()).hexdigest()[:8], 16)
        if seeds:
            registered = list(seeds)[digest % len(seeds)]
            out.append(Canary(f"k{i}", pid, text, request_seed(registered, "voice", pid), registered))
        else:
            out.append(Canary(f"k{i}", pid, text, digest & 0x7FFFFFFF))
    return out


@dataclass(frozen=True)
class CanaryParams:
    """How canaries are chosen, placed and judged; all of it is recorded with the verdict."""

    count: int = 2                  # distinct canaries per session
    asks: int = 2                   # each reference asked this often, alone (the calibration)
    ngram: int = 4
    min_gap: float = 0.2            # S - X below this: the seat cannot tell its arms apart
    overhead: float = 0.05          # references (one ask each) + checks as a share of the real requests
    min_checks_per_arm: int = 3     # a floor for small runs, where 5% would be no check at all
    checks_per_arm: int | None = None  # an explicit number (``generate --canaries``) beats the budget
    closing: float = 0.03           # the final share of the run where one check per arm is placed
    confidence: float = 0.95        # the detection floor's probability

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "asks": self.asks, "similarity": f"dice over character {self.ngram}-gram multisets",
                "ngram": self.ngram, "min_gap": self.min_gap, "threshold_rule": THRESHOLD_RULE,
                "overhead_goal": self.overhead, "min_checks_per_arm": self.min_checks_per_arm,
                "checks_per_arm": self.checks_per_arm, "closing": self.closing, "position_rule": POSITION_RULE,
                "confidence": self.confidence, "floor_rule": FLOOR_RULE,
                "sampling": "the gate's own (temperature, top_p, max_tokens)"}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CanaryParams:
        """The parameters a run recorded (what `score` judges its checks under)."""
        base = cls()

        def num(key: str, default: Any, kind: type) -> Any:
            v = d.get(key, default)
            return kind(v) if isinstance(v, int | float) and not isinstance(v, bool) else default

        return cls(count=num("count", base.count, int), asks=num("asks", base.asks, int),
                   ngram=max(1, num("ngram", base.ngram, int)), min_gap=num("min_gap", base.min_gap, float),
                   overhead=num("overhead_goal", base.overhead, float),
                   min_checks_per_arm=num("min_checks_per_arm", base.min_checks_per_arm, int),
                   checks_per_arm=d.get("checks_per_arm") if isinstance(d.get("checks_per_arm"), int) else None,
                   closing=num("closing", base.closing, float), confidence=num("confidence", base.confidence, float))


def detection_floor(checks: int, confidence: float = 0.95) -> float | None:
    """The fault rate (share of requests) that `checks` independent checks catch with `confidence`."""
    if checks <= 0:
        return None
    return float(1.0 - (1.0 - confidence) ** (1.0 / checks))


# -- comparison -----------------------------------------------------------------------


def _grams(text: str, n: int) -> Counter[str]:
    norm = " ".join(text.casefold().split())
    if len(norm) < n:
        return Counter([norm]) if norm else Counter()
    return Counter(norm[i:i + n] for i in range(len(norm) - n + 1))


def similarity(a: str, b: str, n: int = 4) -> float:
    """Dice coefficient of the character n-gram multisets: 1.0 for the same text, 0.0 for nothing shared."""
    ga, gb = _grams(a, n), _grams(b, n)
    total = sum(ga.values()) + sum(gb.values())
    if total == 0:
        return 1.0
    return 2 * sum((ga & gb).values()) / total


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


Refs = Mapping[str, Mapping[str, Sequence[str]]]   # canary id -> arm -> the texts of its asks


def _same_text(a: Sequence[str], b: Sequence[str]) -> bool:
    return bool({_norm(x) for x in a} & {_norm(y) for y in b})


def _best(text: str, asks: Sequence[str], n: int) -> float:
    return max((similarity(text, t, n) for t in asks), default=0.0)


@dataclass(frozen=True)
class Calibration:
    """What the seat's own references say about how well it reproduces itself and tells arms apart."""

    self_similarity: float | None      # S
    cross_similarity: float | None     # X (None: no two arms' references differ)
    threshold: float | None            # t
    problem: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"self_similarity": _r(self.self_similarity), "cross_similarity": _r(self.cross_similarity),
                "threshold": _r(self.threshold), "problem": self.problem}


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def calibrate(refs: Refs, arms: Sequence[str], params: CanaryParams) -> Calibration:
    """S, X and the threshold from one (session, replica)'s references; a problem when they cannot separate arms."""
    if not refs:
        return Calibration(None, None, None, "no references")
    selfs: list[float] = []
    for cid, by_arm in sorted(refs.items()):
        for arm in arms:
            asks = list(by_arm.get(arm, ()))
            if len(asks) < params.asks:
                return Calibration(None, None, None, f"canary {cid}: arm {arm} has {len(asks)} of its "
                                                     f"{params.asks} reference asks")
            selfs.extend(similarity(a, b, params.ngram) for i, a in enumerate(asks) for b in asks[i + 1:])
    s = min(selfs) if selfs else 1.0
    crosses: list[float] = []
    for by_arm in refs.values():
        names = sorted(by_arm)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                if not _same_text(by_arm[a], by_arm[b]):
                    crosses.append(max(similarity(x, y, params.ngram) for x in by_arm[a] for y in by_arm[b]))
    x = max(crosses) if crosses else None
    if x is None:
        return Calibration(s, None, max(0.0, s - 2 * params.min_gap / 3))
    t = x + (s - x) / 3
    if s - x < params.min_gap:
        return Calibration(s, x, t, f"the seat does not reproduce its own references well enough to tell its arms "
                                    f"apart (lowest self-similarity {s:.3f}, highest cross-arm {x:.3f}, "
                                    f"gap under {params.min_gap})")
    return Calibration(s, x, t)


@dataclass(frozen=True)
class Attribution:
    status: str                      # "right" | "wrong" | "foreign" | "unclear"
    answered_as: str | None          # the arm whose reference it reproduces (None: none)
    similarities: dict[str, float]
    exact: bool = False


def attribute(answer: str, arm: str, refs: Mapping[str, Sequence[str]], cal: Calibration,
              params: CanaryParams) -> Attribution:
    """Whose weights answered: right only when `answer` reproduces `arm`'s own reference."""
    sims = {a: round(_best(answer, asks, params.ngram), 4) for a, asks in sorted(refs.items())}
    if cal.problem is not None or cal.threshold is None or arm not in refs:
        return Attribution("unclear", None, sims)
    t = cal.threshold
    own = sims[arm]
    others = {a: s for a, s in sims.items() if a != arm and not _same_text(refs[a], refs[arm])}
    nearest = max(sorted(others), key=lambda a: others[a]) if others else None
    if own >= t and (nearest is None or own >= others[nearest]):
        return Attribution("right", arm, sims, exact=any(_norm(answer) == _norm(x) for x in refs[arm]))
    if nearest is not None and others[nearest] >= t:
        return Attribution("wrong", nearest, sims)
    return Attribution("foreign", None, sims)


def replica_differs(first: Refs, other: Refs, cal: Calibration, params: CanaryParams) -> tuple[str, float] | None:
    """The first arm whose references on `other` do not reproduce `first`'s, and how near they came."""
    t = cal.threshold if cal.threshold is not None else 1.0
    worst: tuple[str, float] | None = None
    for cid, by_arm in sorted(first.items()):
        for arm, asks in sorted(by_arm.items()):
            theirs = (other.get(cid) or {}).get(arm) or ()
            s = max((similarity(a, b, params.ngram) for a in asks for b in theirs), default=0.0)
            if s < t and (worst is None or s < worst[1]):
                worst = (arm, s)
    return worst


# -- the plan: how many checks, and where they go --------------------------------------


@dataclass(frozen=True)
class CanaryCheck:
    """One canary re-sent mid-run for one arm."""

    seq: int
    arm: str
    model: str
    canary: Canary
    role: str = "random"     # "random" | "closing" | "opening"


@dataclass(frozen=True)
class CanaryReference:
    """One canary asked of one arm alone on the seat, before the run: part of that arm's fingerprint."""

    arm: str
    model: str
    canary: Canary
    ask: int


def checks_per_arm(params: CanaryParams, arms: int, real_requests: int) -> int:
    """The budget: references (one ask each) plus checks within `overhead` of the real requests, a floor per arm."""
    if params.checks_per_arm is not None:
        return params.checks_per_arm
    budget = math.floor(params.overhead * real_requests) - arms * params.count
    return max(params.min_checks_per_arm, budget // max(arms, 1))


def plan_checks(params: CanaryParams, arms: Sequence[tuple[str, str]], per_arm: int, canaries: Sequence[Canary],
                rng: random.Random, *, closing: bool = True) -> list[CanaryCheck]:
    """`per_arm` checks for every (arm name, model), arms shuffled per round, canaries drawn at random.

    With `closing`, the last round is the closing one (one check per arm near the end of the run).
    """
    out: list[CanaryCheck] = []
    for r in range(per_arm):
        order = list(arms)
        rng.shuffle(order)
        for name, model in order:
            out.append(CanaryCheck(len(out), name, model, rng.choice(list(canaries)),
                                   "closing" if closing and r == per_arm - 1 else "random"))
    return out


def positions(checks: Sequence[CanaryCheck], share: int, params: CanaryParams,
              rng: random.Random) -> list[tuple[int, CanaryCheck]]:
    """(due before the n-th real request, check): stratified random, the closing ones in the last stretch."""
    share = max(1, share)
    start_close = max(1, math.floor(share * (1 - params.closing)))
    main = [c for c in checks if c.role != "closing"]
    closing = [c for c in checks if c.role == "closing"]
    out: list[tuple[int, CanaryCheck]] = []
    width = max(1, start_close - 1)
    for k, c in enumerate(main):
        lo = 1 + (k * width) // max(1, len(main))
        hi = max(lo, 1 + ((k + 1) * width) // max(1, len(main)) - 1)
        out.append((rng.randint(lo, hi), c))
    for c in closing:
        out.append((rng.randint(start_close, share), c))
    out.sort(key=lambda x: x[0])
    return out


def reference_waves(params: CanaryParams, arms: Sequence[tuple[str, str]], canaries: Sequence[Canary],
                    rng: random.Random) -> list[list[CanaryReference]]:
    """One wave per arm (the arm alone on the seat), arms in a random order; every canary asked `asks` times."""
    order = list(arms)
    rng.shuffle(order)
    return [[CanaryReference(name, model, c, k) for k in range(params.asks) for c in canaries]
            for name, model in order]


def place_in_wave(wave: Sequence[Any], opening: CanaryCheck | None, extra: Sequence[CanaryCheck],
                  rng: random.Random) -> list[Any]:
    """An isolated wave: `opening` first (the first request after the arm switch), `extra` at random places."""
    out: list[Any] = list(wave)
    for c in extra:
        out.insert(rng.randint(1 if out else 0, len(out)), c)
    if opening is not None:
        out.insert(0, opening)
    return out


# -- tallies and the verdict --------------------------------------------------------------


@dataclass
class Tally:
    """Checks of one (session, replica), or of the sessions behind the scored rows."""

    references: int = 0
    sent: int = 0
    right: int = 0
    exact: int = 0
    wrong: int = 0
    foreign: int = 0
    unclear: int = 0
    confusions: Counter[tuple[str, str]] = field(default_factory=Counter)
    per_arm: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    calibration: Calibration | None = None
    confidence: float = 0.95

    def add(self, arm: str, found: Attribution) -> None:
        self.sent += 1
        self.per_arm[arm] += 1
        if found.status == "right":
            self.right += 1
            self.exact += found.exact
        elif found.status == "wrong":
            self.wrong += 1
            self.confusions[(arm, str(found.answered_as))] += 1
        elif found.status == "foreign":
            self.foreign += 1
            self.confusions[(arm, FOREIGN)] += 1
        else:
            self.unclear += 1

    def merge(self, other: Tally) -> None:
        for name in ("references", "sent", "right", "exact", "wrong", "foreign", "unclear"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.confusions.update(other.confusions)
        self.per_arm.update(other.per_arm)
        self.problems.extend(other.problems)

    @property
    def against(self) -> int:
        return self.wrong + self.foreign + self.unclear

    @property
    def failed(self) -> bool:
        return self.against > 0 or bool(self.problems)

    @property
    def status(self) -> str:
        return "failed" if self.failed else ("holds" if self.sent else "not checked")

    def floors(self) -> tuple[float | None, float | None]:
        """(the seat's f95 over all checks, one arm's f95 over its fewest checks)."""
        fewest = min(self.per_arm.values()) if self.per_arm else 0
        return detection_floor(self.sent, self.confidence), detection_floor(fewest, self.confidence)

    def as_dict(self) -> dict[str, Any]:
        seat, arm = self.floors()
        return {"references": self.references, "sent": self.sent, "right": self.right, "exact": self.exact,
                "wrong": self.wrong, "foreign": self.foreign, "unclear": self.unclear, "status": self.status,
                "confusions": [{"arm": a, "answered_as": b, "count": n} for (a, b), n in sorted(self.confusions.items())],
                "checks_per_arm": dict(sorted(self.per_arm.items())), "detects_95": _r(seat),
                "detects_95_one_arm": _r(arm), "problems": list(self.problems),
                "calibration": self.calibration.as_dict() if self.calibration else None}


Part = tuple[int, str | None]   # (session, replica): what one set of references fingerprints


def part_of(row: Mapping[str, Any]) -> Part | None:
    """The (session, replica) a generation or canary row belongs to (replica None before replicas existed)."""
    s = row.get("session")
    if not isinstance(s, int) or isinstance(s, bool):
        return None
    replica = row.get("replica")
    return (s, str(replica) if replica else None)


def describe_parts(parts: Iterable[Part]) -> str:
    return ", ".join(f"{s}" + (f" on {r}" if r else "") for s, r in sorted(parts, key=lambda p: (p[0], p[1] or "")))


def references_of(canary_rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, list[str]]]:
    refs: dict[str, dict[str, list[tuple[int, str]]]] = {}
    for row in canary_rows:
        if row.get("phase") == "reference":
            raw = row.get("ask")
            ask = raw if isinstance(raw, int) else 0
            refs.setdefault(str(row.get("canary")), {}).setdefault(str(row.get("arm")), []).append(
                (ask, str(row.get("text", ""))))
    return {c: {a: [t for _, t in sorted(v)] for a, v in by_arm.items()} for c, by_arm in refs.items()}


def judge(canary_rows: Sequence[Mapping[str, Any]], arms: Sequence[str], params: CanaryParams) -> Tally:
    """One (session, replica)'s checks judged again from their texts against its own references."""
    refs = references_of(canary_rows)
    cal = calibrate(refs, arms, params)
    tally = Tally(calibration=cal, confidence=params.confidence)
    tally.references = sum(len(v) for by_arm in refs.values() for v in by_arm.values())
    if cal.problem is not None:
        tally.problems.append(cal.problem)
    for row in canary_rows:
        if row.get("phase") == "check":
            arm = str(row.get("arm"))
            tally.add(arm, attribute(str(row.get("text", "")), arm, refs.get(str(row.get("canary")), {}), cal, params))
    return tally


def by_part(canary_rows: Iterable[Mapping[str, Any]]) -> dict[Part, list[Mapping[str, Any]]]:
    out: dict[Part, list[Mapping[str, Any]]] = {}
    for row in canary_rows:
        part = part_of(row)
        if part is not None:
            out.setdefault(part, []).append(row)
    return out


def _arms(manifest: Mapping[str, Any] | None, canary_rows: Iterable[Mapping[str, Any]]) -> list[str]:
    arms = [str(a.get("name")) for a in (manifest or {}).get("arms") or [] if isinstance(a, Mapping)]
    return arms or sorted({str(r.get("arm")) for r in canary_rows if r.get("phase") == "reference"})


def params_of(manifest: Mapping[str, Any] | None) -> CanaryParams:
    info = (manifest or {}).get("integrity")
    raw = info.get("params") if isinstance(info, Mapping) else None
    return CanaryParams.from_dict(raw if isinstance(raw, Mapping) else {})


def tallies(canary_rows: Sequence[Mapping[str, Any]], manifest: Mapping[str, Any] | None) -> dict[Part, Tally]:
    """Each (session, replica)'s checks judged from the texts; a replica whose references differ fails."""
    params = params_of(manifest)
    arms = _arms(manifest, canary_rows)
    parts = by_part(canary_rows)
    out = {part: judge(rows, arms, params) for part, rows in parts.items()}
    for session in sorted({s for s, _ in parts}):
        order = _replica_order(manifest, session, [p for p in parts if p[0] == session])
        if len(order) < 2:
            continue
        first = order[0]
        cal = out[first].calibration or Calibration(None, None, None)
        mine = references_of(parts[first])
        for part in order[1:]:
            differs = replica_differs(mine, references_of(parts[part]), cal, params)
            if differs is not None:
                out[part].problems.append(f"replica {part[1]}'s references for arm {differs[0]} do not reproduce "
                                          f"{first[1]}'s (similarity {differs[1]:.3f})")
    return out


def _replica_order(manifest: Mapping[str, Any] | None, session: int, parts: list[Part]) -> list[Part]:
    s = _session(manifest, session)
    named = [str(u) for u in s.get("replicas") or [s.get("seat_url")] if u]
    rank = {u: i for i, u in enumerate(named)}
    return sorted(parts, key=lambda p: (rank.get(p[1] or "", len(rank)), p[1] or ""))


def failed_parts(canary_rows: Sequence[Mapping[str, Any]], manifest: Mapping[str, Any] | None) -> set[Part]:
    return {p for p, t in tallies(canary_rows, manifest).items() if t.failed}


def is_generated(row: Mapping[str, Any], manifest: Mapping[str, Any] | None) -> bool:
    """A row `generate` made (not imported, not written by hand): it must carry checks to be scored."""
    if row.get("imported"):
        return False
    if (manifest or {}).get("source") == "generated":
        return True
    return any(k in row for k in ("session", "replica", "seat_url", "request_seed", "latency_s"))


def unchecked_parts(rows: Iterable[Mapping[str, Any]], canary_rows: Sequence[Mapping[str, Any]]) -> set[Part | None]:
    """The (session, replica)s of `rows` without a single check (a run killed before its first one)."""
    checked = {part_of(r) for r in canary_rows if r.get("phase") == "check"}
    return {part_of(r) for r in rows} - checked


def _recorded(manifest: Mapping[str, Any] | None, part: Part) -> dict[str, Any] | None:
    """What run.json says (session, replica) generated and checked, once the session ended."""
    s = _session(manifest, part[0])
    if "generated" not in s:
        return None   # killed before it could write its end: nothing to hold the files to
    for p in s.get("per_replica") or []:
        if isinstance(p, Mapping) and (p.get("url") == part[1] or part[1] is None):
            canaries = p.get("canaries")
            return {"rows": p.get("rows"), "checks": canaries.get("sent") if isinstance(canaries, Mapping) else None}
    return {"rows": s.get("generated"), "checks": (s.get("integrity") or {}).get("sent")}


def verdict(rows: Sequence[Mapping[str, Any]], canary_rows: Sequence[Mapping[str, Any]],
            manifest: Mapping[str, Any] | None, *, quarantine: str | None = None) -> Integrity | None:
    """The integrity of the seat behind `rows` (the generations that are scored), judged again from the texts.

    None when no row was generated by voicegate (imported generations, or rows written by hand):
    the record then stays as it always was. Generated rows without checks are "not checked",
    which `score` refuses.
    """
    generated = [r for r in rows if is_generated(r, manifest)]
    if not generated:
        return None
    problems: list[str] = []
    info = (manifest or {}).get("integrity")
    if manifest is None:
        problems.append("run.json is missing")
    elif manifest.get("source") != "generated":
        problems.append(f"run.json says its generations were {manifest.get('source')!r}, but "
                        f"{len(generated)} rows were generated")
    elif not isinstance(info, Mapping):
        problems.append("run.json has no integrity record")
    elif info.get("method") != METHOD_ID:
        problems.append(f"run.json records the canary method {info.get('method')!r}, not {METHOD_ID} "
                        "(a faulty seat can slip past older methods)")
    per_part = tallies(canary_rows, manifest) if not problems else {}
    used = Counter(part_of(r) for r in generated)
    total = Tally(confidence=params_of(manifest).confidence)
    unchecked = 0
    for maybe, n in sorted(used.items(), key=lambda x: (x[0] is None, x[0] or (0, ""))):
        t = per_part.get(maybe) if maybe is not None else None
        if maybe is None or t is None or t.sent == 0:
            unchecked += n
            continue
        part: Part = maybe
        total.merge(t)
        rec = _recorded(manifest, part)
        if not _session(manifest, part[0]):
            problems.append(f"session {part[0]} is not in run.json")
        elif rec is not None:
            if isinstance(rec["rows"], int) and n > rec["rows"]:
                problems.append(f"session {describe_parts([part])}: {n} stored rows, run.json records "
                                f"{rec['rows']} generated")
            if isinstance(rec["checks"], int) and t.sent != rec["checks"]:
                problems.append(f"session {describe_parts([part])}: {t.sent} checks in canaries.jsonl, run.json "
                                f"records {rec['checks']}")
    total.problems.extend(problems)
    sessions = sorted({p[0] for p in used if p is not None and p in per_part})
    modes = {bool(_session(manifest, s).get("isolate_arms")) for s in sessions}
    if total.failed:
        status = "failed"
    elif unchecked or not total.sent:
        status = "not checked"
    else:
        status = "holds"
    cal = [t.calibration.threshold for p, t in per_part.items()
           if p in used and t.calibration is not None and t.calibration.threshold is not None]
    seat, one_arm = total.floors()
    q = (manifest or {}).get("quarantine") if quarantine is None else {"file": quarantine}
    return Integrity(
        status=status, method=str((info or {}).get("method", METHOD_ID)) if isinstance(info, Mapping) else METHOD_ID,
        params=dict(info.get("params") or {}) if isinstance(info, Mapping) else {},
        references=total.references, sent=total.sent, right=total.right, wrong=total.wrong,
        unclear=total.unclear, foreign=total.foreign, exact=total.exact,
        confusions=tuple(Confusion(arm=a, answered_as=b, count=n) for (a, b), n in sorted(total.confusions.items())),
        sessions=tuple(sessions), isolated=(modes == {True}) if modes else None, unchecked_rows=unchecked,
        quarantined=int(q.get("rows", 0)) if isinstance(q, Mapping) else 0,
        quarantine=str(q.get("file")) if isinstance(q, Mapping) and q.get("file") else None,
        threshold=round(min(cal), 4) if cal else None,
        checks_per_arm=min(total.per_arm.values()) if total.per_arm else 0,
        detects=_r(seat), detects_one_arm=_r(one_arm), problems=tuple(total.problems))


def _session(manifest: Mapping[str, Any] | None, index: int) -> Mapping[str, Any]:
    sessions = (manifest or {}).get("sessions") or []
    return sessions[index] if 0 <= index < len(sessions) and isinstance(sessions[index], Mapping) else {}
