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
"""

from __future__ import annotations

from dataclasses import dataclass

from voicegate._errors import VoicegateError
from voicegate.spec import GateSpec

# Decode speed the fleet's seat measured (docs/design.md §5), the LoRA one (the slower of the two), per
# sequence in flight: the estimate's speed when no seat answers the probe.
SEAT_LORA_TOK_S = 108.2
PROBE_MAX_TOKENS = 64      # one short answer: 0.5-1.5 s on the 2-core CPU seat, a blink on a GPU
PROBE_CANDIDATES = 2       # candidates asked beside the base: enough to switch adapters as a run does
PROBE_TIMEOUT_S = 20.0     # a seat slower than this per short answer is not worth waiting on here
PROBE_IN_FLIGHT = 8        # answers in flight at most per probe wave: a run's batching, at a few seconds' cost


@dataclass(frozen=True)
class Speed:
    tok_s: float
    measured: bool
    how: str   # the clause after the speed: where it was measured, or which constant and why
    in_flight: int = 1   # how many answers were in flight when `tok_s` was measured (1: per sequence)

    def estimate_s(self, tokens: int, concurrency: int) -> float:
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

    async def ask() -> tuple[list[str], int, float]:
        answered: dict[str, None] = {}   # the models that answered, in order
        tokens, wall = 0, 0.0
        async with SeatClient(url, api_key=api_key, timeout=PROBE_TIMEOUT_S, api_key_env=spec.seat.api_key_env,
                              retry=RetryPolicy(attempts=1, budget_s=PROBE_TIMEOUT_S)) as client:

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
        return list(answered), tokens, wall

    try:
        answered, tokens, secs = run(ask())
    except VoicegateError as exc:
        reason = str(exc).split(": ", 1)[-1] if str(exc).startswith("seat ") else str(exc)
        return constant(f"the seat at {shown} did not answer a probe ({reason[:160]})")
    if tokens < 1 or secs <= 0:
        return constant(f"the seat at {shown} answered the probe with no completion tokens")
    names = ", ".join(answered)
    asked = (f"one answer each of {names}" if n == 1 else f"{n} answers each of {names}, a model at a time"
             if per_model else f"{n} answers at once of {names}")
    return Speed(tokens / secs, True, f"measured on {shown} just now ({tokens:,} tokens in {secs:.1f} s, {asked})",
                 in_flight=n)


def duration_text(seconds: float) -> str:
    """Seconds under ten minutes (a CPU seat's gates), minutes above."""
    return f"{seconds:.0f} s" if seconds < 600 else f"{seconds / 60:,.0f} min"
