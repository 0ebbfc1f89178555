"""The registered generations as one interleaved schedule, and the per-request seed rule.

**Interleaving.** Co-tenants on the card take traffic the seat does not
control; if one arm ran in a block, their load would alias onto that arm. So
the schedule is a sequence of blocks, one per (kind, prompt, seed) — voice
prompts first, then damage probes — and each block holds every arm once, in an
order shuffled by the spec's ``order_seed``. The shuffle is a sort by sha256 of
``"{order_seed}:{block index}:{arm name}"``: stable across Python versions and
platforms, so the recorded order can be recomputed from the spec alone.

**Seeds.** Every arm answering the same (prompt, registered seed) gets the same
request seed — that is what makes the comparison matched — but different
prompts must not share one random stream (with a fixed seed, vLLM would start
every prompt from the same sampler state). The rule, recorded on each row as
``request_seed`` and in run.json:

    request_seed = int(sha256(f"{seed}:{kind}:{prompt_id}").hexdigest()[:8], 16) & 0x7FFFFFFF

31 bits, so any OpenAI-compatible server accepts it as a plain int.

An **A-vs-A arm** (``role: a-vs-a``: the base's own model) must NOT share the base's
request seeds: it is the base under *fresh* seeds, the gate's own null. Its rows keep
the registered ``seed`` (so cells, integrity checks and scoring see an ordinary arm)
and carry a request seed of their own, from the same digest salted with ``a-vs-a``:

    request_seed = int(sha256(f"a-vs-a:{seed}:{kind}:{prompt_id}").hexdigest()[:8], 16) & 0x7FFFFFFF

(no registered seed's request seed equals it but by a 31-bit collision).

**Isolated arms** (``generate --isolate-arms``). A seat that batches
arms together may serve one arm's request with another's weights; isolation
sends the same jobs in *waves* of one arm, so no two arms are ever in flight
together. Waves stay interleaved: the jobs of each arm are taken in schedule
order, ``wave_size`` at a time, and every round gives each arm one wave. Round 0's
arms are sorted by ``sha256(f"{order_seed}:wave:0:{arm}")``; every later round
opens with the arm that closed the round before (while it has jobs left) and
sorts the others by ``sha256(f"{order_seed}:wave:{round}:{arm}")``, so the two
waves of one arm at a round boundary run as one *turn*.

One arm on the seat is the invariant, not an empty seat: within a turn the seat
is kept at the concurrency, a wave's requests sent as the previous wave's free
slots (no drain between waves of one arm); only an arm switch waits for every
request in flight to finish. With 2 arms and R rounds that is R turns instead of
2R waves drained whole (A B | B A | A B ...), with 3 arms 2R+1 instead of 3R.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from voicegate.spec import GateSpec

SEED_RULE_ID = "sha256-seed-kind-prompt@1"
SEED_RULE = 'request_seed = int(sha256(f"{seed}:{kind}:{prompt_id}").hexdigest()[:8], 16) & 0x7FFFFFFF'
WAVE_RULE = ('waves of one arm: the pending jobs of each arm in schedule order, wave_size - 1 at a time (the '
             'check that opens an arm switch makes wave_size); each round one wave per arm, round 0 sorted by '
             'sha256(f"{order_seed}:wave:0:{arm}"), every later round opening with the arm that closed the round '
             'before and the others sorted by sha256(f"{order_seed}:wave:{round}:{arm}"); consecutive waves of one '
             'arm are one turn, refilled as slots free; a turn is drained before the next arm starts')
ORDER_RULE = ('blocks of (kind, prompt, seed), voice then probe, prompts in spec order, seeds in spec '
              'order; within a block arms sorted by sha256(f"{order_seed}:{block}:{arm}")')

CELL_RULE = ('a cell is one (kind, seed, prompt) with every arm; every arm of a cell runs on one replica, cells '
             'go to whichever replica has a free slot; a cell left unfinished on a lost replica is re-run whole '
             'on another and its stored arms are quarantined')


A_VS_A_SEED_RULE = ('request_seed = int(sha256(f"a-vs-a:{seed}:{kind}:{prompt_id}").hexdigest()[:8], 16) '
                    '& 0x7FFFFFFF')


def request_seed(seed: int, kind: str, prompt_id: str, *, a_vs_a: bool = False) -> int:
    """The request seed of a (seed, kind, prompt) cell; `a_vs_a`: the A-vs-A arm's fresh one."""
    salt = "a-vs-a:" if a_vs_a else ""
    digest = hashlib.sha256(f"{salt}{seed}:{kind}:{prompt_id}".encode()).hexdigest()
    return int(digest[:8], 16) & 0x7FFFFFFF


@dataclass(frozen=True)
class Job:
    """One generation to make: an arm answering one prompt (or probe) under one seed."""

    order: int
    kind: str          # "voice" | "probe"
    arm: str
    model: str
    seed: int
    request_seed: int
    prompt_id: str
    prompt: str

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.kind, self.arm, self.seed, self.prompt_id)

    def summary(self) -> dict[str, Any]:
        return {"order": self.order, "kind": self.kind, "arm": self.arm, "seed": self.seed,
                "request_seed": self.request_seed, "prompt_id": self.prompt_id}


def _arm_order(order_seed: int, block: int, arms: list[str]) -> list[str]:
    return sorted(arms, key=lambda a: hashlib.sha256(f"{order_seed}:{block}:{a}".encode()).hexdigest())


def build_schedule(spec: GateSpec) -> list[Job]:
    items = [("voice", p.id, p.text) for p in spec.prompts]
    items += [("probe", p.id, p.prompt) for p in spec.damage.probes]
    models = {a.name: a.model for a in spec.arms}
    fresh = {a.name for a in spec.a_vs_a}
    jobs: list[Job] = []
    block = 0
    for kind, pid, text in items:
        for seed in spec.seeds:
            rs = request_seed(seed, kind, pid)
            for arm in _arm_order(spec.order_seed, block, list(models)):
                own = request_seed(seed, kind, pid, a_vs_a=True) if arm in fresh else rs
                jobs.append(Job(len(jobs), kind, arm, models[arm], seed, own, pid, text))
            block += 1
    return jobs


def wave_order(order_seed: int, rnd: int, arms: list[str], after: str | None = None) -> list[str]:
    """Round `rnd`'s arm order; `after` (the arm on the seat before the round) opens it when it is one of `arms`."""
    out = sorted(arms, key=lambda a: hashlib.sha256(f"{order_seed}:wave:{rnd}:{a}".encode()).hexdigest())
    if after in out:
        out.remove(after)
        out.insert(0, after)
    return out


def isolate_waves(jobs: list[Job], wave_size: int, order_seed: int, *, first_round: int = 0,
                  after: str | None = None) -> list[list[Job]]:
    """`jobs` as waves of one arm, interleaved across rounds (see the module docstring).

    `first_round` and `after` continue an earlier call's rounds (the runner claims its cells a batch
    at a time): the round number to start from and the arm whose wave closed the previous round.
    """
    if wave_size < 1:
        raise ValueError("wave_size must be at least 1")
    per_arm: dict[str, list[Job]] = {}
    for j in jobs:
        per_arm.setdefault(j.arm, []).append(j)
    waves: list[list[Job]] = []
    rnd = first_round
    while any(per_arm.values()):
        for arm in wave_order(order_seed, rnd, [a for a, left in per_arm.items() if left], after):
            waves.append(per_arm[arm][:wave_size])
            per_arm[arm] = per_arm[arm][wave_size:]
        after = waves[-1][0].arm
        rnd += 1
    return waves


def turns(waves: list[list[Job]]) -> list[list[list[Job]]]:
    """Consecutive waves of one arm grouped: each group is one turn of that arm on the seat."""
    out: list[list[list[Job]]] = []
    for w in waves:
        if out and out[-1][-1][0].arm == w[0].arm:
            out[-1].append(w)
        else:
            out.append([w])
    return out
