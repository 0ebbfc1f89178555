"""Seat integrity: canary fingerprints that tell whether the seat served each arm its own weights (issue 16).

The gate's premise is that a difference between arms is the adapter's. A seat can
break it silently: vLLM on CPU, base and adapters batched together, has answered
adapter requests with the carrier's weights and base requests with an adapter's,
echoing the requested ``model`` name all along. This module makes that visible.

**Method** (``canary-nearest-reference@1``, every parameter recorded in run.json):

1. *References.* At the start of every generate session, before any real request,
   each arm answers the fixed canary prompts **alone on the seat** (one wave per
   arm, drained before the next): greedy (temperature 0, top_p 1), a fixed seed,
   a short ``max_tokens``. Those answers are the arm's fingerprint for the session.
2. *Checks.* During the run the same canaries are sent again, spread evenly
   through the real requests and so meeting the conditions they meet (mixed arms
   in flight by default, the arm's own wave under ``--isolate-arms``).
3. *Attribution.* A check's answer is compared with every arm's reference for the
   same canary by character n-gram similarity (the Dice coefficient over the
   multisets of character ``ngram``-grams of the case-folded, whitespace-collapsed
   text). Exact equality would be fragile: batch composition changes floating
   point sums, and a greedy continuation can flip at a near-tie token and diverge.
   The answer is **right** when it is at least as near its own arm's reference as
   any other's; **wrong** (the seat served another arm's weights) when another
   arm's reference is nearer by more than ``margin``; **unclear** in between
   (reported, never decisive). A canary on which two arms' references are the
   same text cannot tell them apart; such a pair never counts as wrong.

It only needs ``/v1/chat/completions``.

**Verdict.** Integrity *fails* for the scored rows when any check of a session
(on a replica: each replica is fingerprinted and checked on its own) that produced
one of them was wrong; `score` then refuses to decide and points at
``generate --isolate-arms``, which moves the rows of that session on that replica to
the quarantine file (never deleting one) and regenerates them with one arm on the
seat at a time.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from voicegate.scoring._result import Confusion, Integrity

METHOD_ID = "canary-nearest-reference@1"
METHOD = ("each arm answers fixed canary prompts alone on the seat (its reference); the same canaries are "
          "re-sent among the real requests; an answer nearer another arm's reference than its own by more than "
          "the margin (Dice similarity of character n-gram multisets) is a wrong attribution")

# Short prose openings: an author voice should answer each in its own way.
CANARY_PROMPTS: tuple[tuple[str, str], ...] = (
    ("c-letter", "Continue the story: The letter came on a grey morning, and"),
    ("c-house", "Continue the story: When she reached the house by the river,"),
    ("c-night", "Continue the story: That night the wind rose over the hills, and I"),
    ("c-sister", "Continue the story: My sister looked up from her work and said"),
)


@dataclass(frozen=True)
class CanaryParams:
    """How canaries are asked and compared; all of it is recorded with the verdict."""

    prompts: tuple[tuple[str, str], ...] = CANARY_PROMPTS[:2]
    max_tokens: int = 32
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 1729
    ngram: int = 4
    margin: float = 0.15
    overhead: float = 0.05          # canary requests (references + checks) as a share of the real ones
    min_checks_per_arm: int = 3     # a floor for small runs, where 5% would be no check at all
    checks_per_arm: int | None = None  # an explicit number (``generate --canaries``) beats the budget

    def sampling(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens}

    def prompt(self, canary: str) -> str:
        return dict(self.prompts)[canary]

    def as_dict(self) -> dict[str, Any]:
        return {"canaries": [{"id": cid, "prompt": text} for cid, text in self.prompts],
                "temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens,
                "seed": self.seed, "similarity": f"dice over character {self.ngram}-gram multisets",
                "ngram": self.ngram, "margin": self.margin, "overhead_goal": self.overhead,
                "min_checks_per_arm": self.min_checks_per_arm, "checks_per_arm": self.checks_per_arm}


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


@dataclass(frozen=True)
class Attribution:
    status: str                      # "right" | "wrong" | "unclear"
    answered_as: str | None          # the arm whose reference is nearest (None: no reference at all)
    similarities: dict[str, float]


def attribute(answer: str, arm: str, references: Mapping[str, str], params: CanaryParams) -> Attribution:
    """Whose weights answered: the nearest reference, with `margin` against batch nondeterminism."""
    sims = {a: round(similarity(answer, ref, params.ngram), 4) for a, ref in references.items()}
    own = sims.get(arm, 0.0)
    # Arms whose reference is the very text of `arm`'s cannot be told apart from it on this canary.
    others = {a: s for a, s in sims.items() if a != arm and references[a] != references.get(arm)}
    if not others:
        return Attribution("right", arm, sims)
    nearest = max(sorted(others), key=lambda a: others[a])
    if own >= others[nearest]:
        return Attribution("right", arm, sims)
    if others[nearest] - own > params.margin:
        return Attribution("wrong", nearest, sims)
    return Attribution("unclear", nearest, sims)


# -- the plan: how many checks, and where they go --------------------------------------


@dataclass(frozen=True)
class CanaryCheck:
    """One canary re-sent mid-run for one arm."""

    seq: int
    arm: str
    model: str
    canary: str
    prompt: str


def checks_per_arm(params: CanaryParams, arms: int, real_requests: int) -> int:
    """The budget: references plus checks within `overhead` of the real requests, with a floor per arm."""
    if params.checks_per_arm is not None:
        return params.checks_per_arm
    budget = math.floor(params.overhead * real_requests) - arms * len(params.prompts)
    return max(params.min_checks_per_arm, budget // max(arms, 1))


def plan_checks(params: CanaryParams, arms: Sequence[tuple[str, str]], real_requests: int,
                order_seed: int, session: int | str) -> list[CanaryCheck]:
    """`checks_per_arm` checks for every (arm name, model), canaries cycled, arms shuffled per round."""
    per_arm = checks_per_arm(params, len(arms), real_requests)
    out: list[CanaryCheck] = []
    for r in range(per_arm):
        order = sorted(arms, key=lambda a: hashlib.sha256(f"{order_seed}:canary:{session}:{r}:{a[0]}".encode())
                       .hexdigest())
        for i, (name, model) in enumerate(order):
            cid, text = params.prompts[(r + i) % len(params.prompts)]
            out.append(CanaryCheck(len(out), name, model, cid, text))
    return out


def spread(items: list[Any], checks: list[Any]) -> list[Any]:
    """`checks` placed evenly among `items` (never first or last: they must meet a busy seat)."""
    if not checks:
        return list(items)
    out: list[Any] = []
    step = len(items) / (len(checks) + 1)
    at = [round(step * (k + 1)) for k in range(len(checks))]
    c = 0
    for i, item in enumerate(items):
        while c < len(checks) and at[c] <= i:
            out.append(checks[c])
            c += 1
        out.append(item)
    out.extend(checks[c:])
    return out


# -- tallies and the verdict --------------------------------------------------------------


@dataclass
class Tally:
    """Checks of one session (or of the sessions behind the scored rows)."""

    references: int = 0
    sent: int = 0
    right: int = 0
    wrong: int = 0
    unclear: int = 0
    confusions: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, row: Mapping[str, Any]) -> None:
        if row.get("phase") == "reference":
            self.references += 1
            return
        self.sent += 1
        status = row.get("status")
        if status == "right":
            self.right += 1
        elif status == "wrong":
            self.wrong += 1
            self.confusions[(str(row.get("arm")), str(row.get("answered_as")))] += 1
        else:
            self.unclear += 1

    @property
    def failed(self) -> bool:
        return self.wrong > 0

    def as_dict(self) -> dict[str, Any]:
        return {"references": self.references, "sent": self.sent, "right": self.right, "wrong": self.wrong,
                "unclear": self.unclear, "status": "failed" if self.failed else ("holds" if self.sent else
                                                                                  "not checked"),
                "confusions": [{"arm": a, "answered_as": b, "count": n}
                               for (a, b), n in sorted(self.confusions.items())]}


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


def tallies(canary_rows: Iterable[Mapping[str, Any]]) -> dict[Part, Tally]:
    """Each (session, replica)'s checks: a replica's canaries are judged against its own references."""
    out: dict[Part, Tally] = {}
    for row in canary_rows:
        part = part_of(row)
        if part is not None:
            out.setdefault(part, Tally()).add(row)
    return out


def failed_parts(canary_rows: Iterable[Mapping[str, Any]]) -> set[Part]:
    return {p for p, t in tallies(canary_rows).items() if t.failed}


def verdict(rows: Sequence[Mapping[str, Any]], canary_rows: Sequence[Mapping[str, Any]],
            manifest: Mapping[str, Any] | None, *, quarantine: str | None = None) -> Integrity | None:
    """The integrity of the seat behind `rows` (the generations that are scored).

    None when the run has no canary data at all (imported generations, or a run made
    before this check existed): the record then stays as it always was.
    """
    info = (manifest or {}).get("integrity")
    if not canary_rows or not isinstance(info, Mapping):
        return None
    per_part = tallies(canary_rows)
    used = Counter(part_of(r) for r in rows)
    total = Tally()
    unchecked = 0
    for part, n in used.items():
        t = per_part.get(part) if part is not None else None
        if t is None or t.sent == 0:
            unchecked += n
            continue
        total.references += t.references
        total.sent += t.sent
        total.right += t.right
        total.wrong += t.wrong
        total.unclear += t.unclear
        total.confusions.update(t.confusions)
    sessions = sorted({p[0] for p in used if p is not None and p in per_part})
    modes = {bool(_session(manifest, s).get("isolate_arms")) for s in sessions}
    status = "failed" if total.failed else ("holds" if total.sent else "not checked")
    q = (manifest or {}).get("quarantine") if quarantine is None else {"file": quarantine}
    return Integrity(
        status=status, method=str(info.get("method", METHOD_ID)), params=dict(info.get("params") or {}),
        references=total.references, sent=total.sent, right=total.right, wrong=total.wrong,
        unclear=total.unclear,
        confusions=tuple(Confusion(arm=a, answered_as=b, count=n) for (a, b), n in sorted(total.confusions.items())),
        sessions=tuple(sessions), isolated=(modes == {True}) if modes else None, unchecked_rows=unchecked,
        quarantined=int(q.get("rows", 0)) if isinstance(q, Mapping) else 0,
        quarantine=str(q.get("file")) if isinstance(q, Mapping) and q.get("file") else None)


def _session(manifest: Mapping[str, Any] | None, index: int) -> Mapping[str, Any]:
    sessions = (manifest or {}).get("sessions") or []
    return sessions[index] if 0 <= index < len(sessions) and isinstance(sessions[index], Mapping) else {}


@dataclass(frozen=True)
class CanaryReference:
    """One canary asked of one arm alone on the seat, before the run: part of that arm's fingerprint."""

    arm: str
    model: str
    canary: str
    prompt: str


def reference_waves(params: CanaryParams, arms: Sequence[tuple[str, str]], order_seed: int,
                    session: int) -> list[list[CanaryReference]]:
    """One wave per arm (the arm alone on the seat), arms in a recorded shuffled order."""
    order = sorted(arms, key=lambda a: hashlib.sha256(f"{order_seed}:reference:{session}:{a[0]}".encode())
                   .hexdigest())
    return [[CanaryReference(name, model, cid, text) for cid, text in params.prompts] for name, model in order]


def into_waves(waves: Sequence[Sequence[Any]], checks: Sequence[CanaryCheck],
               arm_of: Any = lambda item: item.arm) -> list[list[Any]]:
    """Each arm's checks spread evenly over that arm's waves (isolated mode: a check meets its own wave)."""
    by_arm: dict[str, list[int]] = {}
    for i, wave in enumerate(waves):
        if wave:
            by_arm.setdefault(arm_of(wave[0]), []).append(i)
    extra: dict[int, list[CanaryCheck]] = {}
    mine: dict[str, list[CanaryCheck]] = {}
    for c in checks:
        mine.setdefault(c.arm, []).append(c)
    for arm, cs in mine.items():
        slots = by_arm.get(arm)
        if not slots:
            continue
        for k, c in enumerate(cs):
            extra.setdefault(slots[(k * len(slots)) // len(cs)], []).append(c)
    return [spread(list(wave), extra.get(i, [])) for i, wave in enumerate(waves)]
