"""The canary method's parameters and how an answer is compared (the seat-integrity check, `_integrity`).

Pure: texts in, similarities, a session's calibration and an answer's attribution out. `generate`
uses it live (each check as it lands, each replica's references against the first's); `score`
judges every stored check again through the very same functions (`_integrity.verdict`).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

METHOD_ID = "canary-reproduction@3"
METHOD = ("each session draws canaries from the gate's own prompts with fixed per-canary seeds and the gate's own "
          "sampling; before any check, each arm answers every canary alone on the seat, the first canary twice (its "
          "reference and the calibration) and the others once, an answer being the canary cell's own real row "
          "wherever the session sends that row there (the very same request), else an ask of its own; at "
          "unpredictable positions among the real requests, a check either asks a canary again under a shorter "
          "max_tokens drawn per check (a request no cache has seen; seeded sampling makes its answer the reference's "
          "prefix) or asks again one of the session's stored rows, of a cell not checked before, exactly as it was "
          "asked; a check is right only when it reproduces its own arm's reference (or stored row) within the "
          "session's calibrated threshold (Dice similarity of character n-gram multisets), otherwise it counts "
          "against integrity; two arms of different models whose references are no further apart than an arm's "
          "own asks leave the session uncalibrated; with replicas, the lead replica's references calibrate the "
          "session and every other replica answers each arm the first canary once, held to the lead's")
THRESHOLD_RULE = ("t = X + (S - X) / 3: S the lowest similarity between two asks of one (arm, canary) alone on "
                  "the seat, X the highest similarity between two arms' references on one canary; uncalibrated "
                  "when S - X < min_gap, or when two arms of different models are, on every canary, at least as "
                  "similar as S (the seat does not tell their weights apart)")
POSITION_RULE = ("checks at stratified random positions among each replica's real requests (drawn from the "
                 "session's nonce), one per arm in the last `closing` share of the run; isolated: one check opens "
                 "every wave and one more falls in each arm's last wave; a random check re-asks a stored row of a "
                 "fresh cell with probability `reask_share` (when one is stored), else a canary under a shorter "
                 "max_tokens")
FLOOR_RULE = ("f95 = 1 - 0.05^(1/n): the share of faulty requests that n checks would catch with 95% probability, "
              "for a fault that hits requests independently of the check (of its position, its cell and whether "
              "the request was asked before or under another max_tokens); for a fault tied to cells, the same "
              "formula over the distinct cells the checks asked (canaries and re-asked rows), as a share of cells")
PREFIX_RULE = ("a canary check asks max_tokens drawn from [ceil(m/2), m-1] (m the gate's); when its answer was cut "
               "by that length, each reference is compared cut to the answer's length (case-folded, whitespace "
               "collapsed), else whole")
REPLICA_RULE = ("the first replica (in the session's order) whose references are whole is the lead: it calibrates "
                "the session; every other replica answers each arm the first canary once, alone on it, before any "
                "check, which must reproduce the lead's (within the lead's threshold) or the run is refused, and its "
                "checks and identity re-asks are judged against the lead's references and threshold (a replica that "
                "serves the same weights answers the same canaries alike, so a second set of references tells "
                "nothing the first does not)")
REFERENCES_RULE = ("each arm answers the first `repeated` canaries `asks` times and the others once, alone on the "
                   "seat, "
                   "before any check; an answer is the canary cell's own real row (the very same request: prompt, "
                   "request seed, the gate's sampling) when the session sends that row on this replica in the arm's "
                   "reference wave, else an ask on its own: a replica holding the canary cells asks each arm only "
                   "the repeat of the first canary; with replicas, " + REPLICA_RULE)
ALIKE_RULE = ("two arms of different models whose stored rows of one cell (the same prompt and request seed) are at "
              "least as similar as the seat's own two asks of one request (S), each of at least {words} words, fail "
              "the (session, replica) that stored them: one arm's weights answered under the other's name (a seat "
              "that mixes arms on some requests only, e.g. those it meets for the first time, leaves such pairs on "
              "every cell it hit; no request is sent for it)")
ALIKE_MIN_WORDS = 8   # shorter answers (an early end of text) may coincide across honest arms
FOREIGN = "foreign weights"


@dataclass(frozen=True)
class CanaryParams:
    """How canaries are chosen, placed and judged; all of it is recorded with the verdict."""

    count: int = 2                  # distinct canaries per session
    asks: int = 2                   # a repeated canary's answers per arm, alone (the calibration: S)
    repeated: int = 1               # canaries answered `asks` times per arm (the first ones); the others once
    ngram: int = 4
    min_gap: float = 0.2            # S - X below this: the seat cannot tell its arms apart
    overhead: float = 0.05          # every extra request (references, identity re-asks, checks) / real requests
    min_checks_per_arm: int = 3     # a floor for small runs, where 5% would be no check at all
    checks_per_arm: int | None = None  # an explicit number (``generate --canaries``) beats the budget
    closing: float = 0.03           # the final share of the run where one check per arm is placed
    confidence: float = 0.95        # the detection floor's probability
    reask_share: float = 0.5        # of the random checks: re-asks of a stored row of a fresh cell

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "asks": self.asks, "repeated": self.repeated, "references_rule": REFERENCES_RULE,
                "similarity": f"dice over character {self.ngram}-gram multisets",
                "ngram": self.ngram, "min_gap": self.min_gap, "threshold_rule": THRESHOLD_RULE,
                "overhead_goal": self.overhead, "min_checks_per_arm": self.min_checks_per_arm,
                "checks_per_arm": self.checks_per_arm, "closing": self.closing, "position_rule": POSITION_RULE,
                "confidence": self.confidence, "floor_rule": FLOOR_RULE, "reask_share": self.reask_share,
                "prefix_rule": PREFIX_RULE, "alike_rule": ALIKE_RULE.format(words=ALIKE_MIN_WORDS),
                "sampling": "the gate's own (temperature, top_p, max_tokens)"}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CanaryParams:
        """The parameters a run recorded (what `score` judges its checks under)."""
        base = cls()

        def num(key: str, default: Any, kind: type) -> Any:
            v = d.get(key, default)
            return kind(v) if isinstance(v, int | float) and not isinstance(v, bool) else default

        count = num("count", base.count, int)
        # a record from before `repeated` asked every canary `asks` times
        return cls(count=count, asks=num("asks", base.asks, int), repeated=num("repeated", count, int),
                   ngram=max(1, num("ngram", base.ngram, int)), min_gap=num("min_gap", base.min_gap, float),
                   overhead=num("overhead_goal", base.overhead, float),
                   min_checks_per_arm=num("min_checks_per_arm", base.min_checks_per_arm, int),
                   checks_per_arm=d.get("checks_per_arm") if isinstance(d.get("checks_per_arm"), int) else None,
                   closing=num("closing", base.closing, float), confidence=num("confidence", base.confidence, float),
                   reask_share=num("reask_share", base.reask_share, float))

    def asks_of(self, index: int) -> int:
        """How many answers each arm gives the `index`-th canary (in id order) before any check."""
        return self.asks if index < self.repeated else 1

    def references_per_arm(self, canaries: int) -> int:
        return sum(self.asks_of(i) for i in range(canaries))


def detection_floor(checks: int, confidence: float = 0.95) -> float | None:
    """The fault rate (share of requests) that `checks` independent checks catch with `confidence`."""
    if checks <= 0:
        return None
    return float(1.0 - (1.0 - confidence) ** (1.0 / checks))


# -- comparison -----------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _grams(text: str, n: int) -> Counter[str]:
    """A text's n-gram multiset, counted once: a session compares each reference with every check and every
    replica's references, and judging them is time every replica waits for (callers never change it)."""
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


def same_text(a: Sequence[str], b: Sequence[str]) -> bool:
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


def canary_order(cid: str) -> tuple[int, str]:
    """Canary ids in the order they were drawn (k0, k1, ..., k10: not as strings sort)."""
    digits = cid.lstrip("k")
    return (int(digits), cid) if digits.isdigit() else (1 << 30, cid)


def calibrate(refs: Refs, arms: Sequence[str], params: CanaryParams,
              models: Mapping[str, str] | None = None) -> Calibration:
    """S, X and the threshold from one (session, replica)'s references; a problem when they cannot separate arms.

    With `models` (arm -> the model it asks), two arms of different models whose references are, on
    every canary, no further apart than the seat's own two asks are a problem too: a seat
    serving the same (stale) weights under both names makes every check "reproduce", so nothing the
    checks say would mean the arms got their own weights. Arms of one model (an A-vs-A arm and the
    base) are expected to coincide and are left out.
    """
    if not refs:
        return Calibration(None, None, None, "no references")
    selfs: list[float] = []
    for index, (cid, by_arm) in enumerate(sorted(refs.items(), key=lambda kv: canary_order(kv[0]))):
        want = params.asks_of(index)
        for arm in arms:
            asks = list(by_arm.get(arm, ()))
            if len(asks) < want:
                return Calibration(None, None, None, f"canary {cid}: arm {arm} has {len(asks)} of its "
                                                     f"{want} reference asks")
            selfs.extend(similarity(a, b, params.ngram) for i, a in enumerate(asks) for b in asks[i + 1:])
    s = min(selfs) if selfs else 1.0
    crosses: list[float] = []
    pair_low: dict[tuple[str, str], float] = {}   # the pair's cross-similarity on its most different canary
    for by_arm in refs.values():
        names = sorted(by_arm)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                best = max(similarity(x, y, params.ngram) for x in by_arm[a] for y in by_arm[b])
                pair_low[(a, b)] = min(pair_low.get((a, b), best), best)
                if not same_text(by_arm[a], by_arm[b]):
                    crosses.append(best)
    if models is not None:
        alike = [(a, b, v) for (a, b), v in sorted(pair_low.items())
                 if a in models and b in models and models[a] != models[b] and v >= s]
        if alike:
            a, b, v = alike[0]
            return Calibration(s, v, None, f"arms {a} and {b} ({models[a]!r}, {models[b]!r}) answered alike on every "
                                           f"canary (similarity {v:.3f}, the seat's own reproduction {s:.3f}): the "
                                           "seat does not tell their weights apart (the same weights under both "
                                           "names?)")
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
              params: CanaryParams, *, prefix: bool = False) -> Attribution:
    """Whose weights answered: right only when `answer` reproduces `arm`'s own reference.

    `prefix`: the answer was cut by a shorter max_tokens than the references were asked under;
    seeded sampling makes it their prefix, so each reference is compared cut to the answer's length.
    """
    whole = refs
    if prefix:
        cut = len(_norm(answer))
        refs = {a: [_norm(t)[:cut] for t in asks] for a, asks in refs.items()}
    sims = {a: round(_best(answer, asks, params.ngram), 4) for a, asks in sorted(refs.items())}
    if cal.problem is not None or cal.threshold is None or arm not in refs:
        return Attribution("unclear", None, sims)
    t = cal.threshold
    own = sims[arm]
    others = {a: s for a, s in sims.items() if a != arm and not same_text(whole[a], whole[arm])}
    nearest = max(sorted(others), key=lambda a: others[a]) if others else None
    if own >= t and (nearest is None or own >= others[nearest]):
        return Attribution("right", arm, sims, exact=any(_norm(answer) == _norm(x) for x in refs[arm]))
    if nearest is not None and others[nearest] >= t:
        return Attribution("wrong", nearest, sims)
    return Attribution("foreign", None, sims)


def identity_outcome(arm: str, text: str, against: Mapping[str, Any], cal: Calibration, params: CanaryParams,
                     version: Any = None) -> tuple[str | None, str | None]:
    """(the problem, or why it is not decided) of an answer held to what the same weights answered before.

    Seeded sampling is only promised to repeat on one vLLM version: an answer that does not reproduce one
    recorded on another version than the seat's `version` now fails nothing, and decides nothing either.
    """
    if cal.problem is not None or cal.threshold is None:
        return None, None    # the session fails on its calibration already
    sim = similarity(text, str(against.get("text", "")), params.ngram)
    if sim >= cal.threshold:
        return None, None
    key = str(against.get("key", "")).split("@")[0]
    then = against.get("version")
    said = (f"arm {arm}'s answer does not reproduce what the same weights ({key}) answered in gate "
            f"{against.get('gate')} session {against.get('session')} (similarity {sim:.3f}, threshold "
            f"{cal.threshold:.3f})")
    if "version" in against and version is not None and then != version:
        return None, (f"{said} on vLLM {then!r}; the seat reports {version!r} now, and seeded sampling is only "
                      "promised to repeat on one version: not decided")
    return said + ": the seat serves other weights than it did then", None


def alike_pairs(cells: Mapping[Any, Mapping[str, str]], cal: Calibration, models: Mapping[str, str] | None,
                params: CanaryParams) -> list[tuple[Any, str, str, float]]:
    """(cell, arm, arm, similarity) for every cell where two arms of different models answered alike.

    `cells`: cell -> arm -> its stored text, of one (session, replica). "Alike" is the calibration's own bar
    for arms the seat does not tell apart: at least S, the seat's reproduction of one request by one arm.
    """
    s = cal.self_similarity
    if cal.problem is not None or s is None or not models:
        return []
    out: list[tuple[Any, str, str, float]] = []
    for cell, by_arm in cells.items():
        texts = {a: _norm(t) for a, t in by_arm.items() if a in models and len(t.split()) >= ALIKE_MIN_WORDS}
        names = sorted(texts)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                x, y = texts[a], texts[b]
                if models[a] == models[b] or 2 * min(len(x), len(y)) < s * (len(x) + len(y)):
                    continue      # the same model's, or too different in length to be as alike as S
                v = 1.0 if x == y else similarity(x, y, params.ngram)
                if v >= s:
                    out.append((cell, a, b, v))
    return out


def is_prefix(asked: int | None, gate: int | None, finish_reason: str | None) -> bool:
    """A canary check's answer is its references' prefix: asked shorter than the gate's, and cut by that length."""
    return asked is not None and gate is not None and asked < gate and finish_reason == "length"


def canary_cell(registered_seed: int | None, prompt_id: str) -> tuple[str, int, str]:
    """The gate cell a canary is (a canary drawn outside a gate has no registered seed: -1)."""
    return ("voice", -1 if registered_seed is None else registered_seed, prompt_id)


def complete(refs: Refs, arms: Sequence[str], params: CanaryParams) -> bool:
    """Whether `refs` hold every canary's asks for every arm: a replica that calibrates the session (the lead).

    A replica after the lead asks each arm the first canary once (`REPLICA_RULE`), never all of them.
    """
    if not refs:
        return False
    for index, (_, by_arm) in enumerate(sorted(refs.items(), key=lambda kv: canary_order(kv[0]))):
        if any(len(by_arm.get(arm, ())) < params.asks_of(index) for arm in arms):
            return False
    return True


def replica_differs(first: Refs, other: Refs, cal: Calibration, params: CanaryParams) -> tuple[str, float] | None:
    """The first arm whose references on `other` do not reproduce `first`'s, and how near they came.

    Compared on the canaries `other` asked (a replica after the lead asks only the first); an arm
    `other` answered on none of them counts as not reproduced (similarity 0).
    """
    t = cal.threshold if cal.threshold is not None else 1.0
    worst: tuple[str, float] | None = None
    shared = [cid for cid in sorted(first) if other.get(cid)]
    for arm in sorted({a for by_arm in first.values() for a in by_arm}):
        asked = [cid for cid in shared if arm in first[cid] and (other.get(cid) or {}).get(arm)]
        if not asked:
            if worst is None or worst[1] > 0.0:
                worst = (arm, 0.0)
            continue
        for cid in asked:
            s = max((similarity(a, b, params.ngram) for a in first[cid][arm] for b in other[cid][arm]), default=0.0)
            if s < t and (worst is None or s < worst[1]):
                worst = (arm, s)
    return worst
