"""Canaries: which of the gate's own cells are asked, how many checks, and where they go among the requests.

The planning half of the seat-integrity check; the method, the comparison and the verdict are
`scoring`'s (`scoring/_integrity.py` states the method whole), so `score` judges the stored checks
without importing `generate`.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from voicegate.scoring import CanaryParams


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


def checks_per_arm(params: CanaryParams, arms: int, real_requests: int, extra: int | None = None) -> int:
    """The budget: every extra request within `overhead` of the real requests, a floor per arm.

    `extra` is what the session sends besides its checks: by default each arm's own reference asks
    (`own_asks`: the repeat of the first canary; the other answers are the canary cells' real rows);
    a session that borrows its references and re-asks an earlier answer per arm says so.
    """
    if params.checks_per_arm is not None:
        return params.checks_per_arm
    spent = arms * own_asks(params) if extra is None else extra
    budget = math.floor(params.overhead * real_requests) - spent
    return max(params.min_checks_per_arm, budget // max(arms, 1))


def random_checks_isolated(per_arm: int, arms: int, share: int, wave: int) -> int:
    """Of an arm's `per_arm` checks with arms isolated, those placed at random: every turn (an arm switch) opens
    with a check and each arm's last wave holds one more. R rounds of A arms make R(A-1)+1 turns (`isolate_waves`,
    waves of `wave` jobs over `share` real requests), ~1/A of them each arm's."""
    a = max(1, arms)
    rounds = math.ceil(share / a / wave)
    return max(0, per_arm - math.ceil((rounds * (a - 1) + 1) / a) - 1)


def shorter_max_tokens(max_tokens: int) -> tuple[int, int]:
    """The range a check that is no re-ask draws its max_tokens from: a request no response cache holds, whose
    seeded answer is its reference's prefix."""
    return math.ceil(max_tokens / 2), max_tokens - 1


def own_asks(params: CanaryParams) -> int:
    """Per arm, the reference asks a replica holding every canary cell sends on their own: the canary cells'
    real rows are the other answers (the first answer of every canary, the repeated ones' last)."""
    return params.references_per_arm(params.count) - params.count


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


def after_references(placed: Sequence[tuple[int, CanaryCheck]], sent: int,
                     share: int) -> list[tuple[int, CanaryCheck]]:
    """The checks' places drawn over the replica's `share`, squeezed into what is left once the reference
    waves sent `sent` of its real rows (the canary cells' own, and under arms mixed the waves' free slots).

    Unsqueezed, every check due before the `sent`-th request would go out at once right after the references,
    a burst a seat could learn; squeezed, the first comes after one more real request, the last stays last.
    """
    share = max(1, share)
    left = max(1, share - sent)
    return [(sent + math.ceil(at * left / share), c) for at, c in placed]


def reference_order(arms: Sequence[tuple[str, str]], rng: random.Random) -> list[tuple[str, str]]:
    """The arms' reference waves (one per arm, the arm alone on the seat) in a random order."""
    order = list(arms)
    rng.shuffle(order)
    return order


def reference_asks(params: CanaryParams, arm: str, model: str, canaries: Sequence[Canary],
                   real: Collection[str]) -> list[CanaryReference]:
    """One arm's reference asks of its own: the i-th canary wants `params.asks_of(i)` answers, of which its
    cell's real row is one when the wave sends it (`real`: those canaries' ids); the row is the last ask."""
    out = []
    for i, c in enumerate(canaries):
        own = params.asks_of(i) - (1 if c.id in real else 0)
        out += [CanaryReference(arm, model, c, k) for k in range(own)]
    return out


def place_in_wave(wave: Sequence[Any], opening: CanaryCheck | None, extra: Sequence[CanaryCheck],
                  rng: random.Random) -> list[Any]:
    """An isolated wave: `opening` first (the first request after the arm switch), `extra` at random places."""
    out: list[Any] = list(wave)
    for c in extra:
        out.insert(rng.randint(1 if out else 0, len(out)), c)
    if opening is not None:
        out.insert(0, opening)
    return out
