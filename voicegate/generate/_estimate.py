"""How long a gate's generation would take on a real seat: measured on the seat `seat simulate` can reach.

A constant speed misled: the fleet GPU seat's 108.2 tok/s said "1 min" for a gate the CPU
seat took 111-165 s over. So the estimate asks the seat the run would use (`--seat`,
`$VOICEGATE_SEAT_URL`, else the spec's) for one short answer each of the base and up to two served
candidates, in turn as a run sends them, timed end to end (queueing, prefill, decode, adapter
switching), and divides the schedule's tokens by that speed per sequence in flight. Only when no seat
answers does it fall back to the constant, and then it says it did, and why.
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


@dataclass(frozen=True)
class Speed:
    tok_s: float
    measured: bool
    how: str   # the clause after the speed: where it was measured, or which constant and why

    def estimate_s(self, tokens: int, concurrency: int) -> float:
        return tokens / (self.tok_s * concurrency)


def constant(why: str) -> Speed:
    return Speed(SEAT_LORA_TOK_S, False,
                 f"a constant, the fleet GPU seat's LoRA decode speed (docs/design.md §5): {why}")


def probe_models(spec: GateSpec) -> list[str]:
    """What the probe asks, one answer each, in turn: the base, then up to two candidates the seat serves
    already (one loaded at run time is not loaded for a probe). Taking turns between adapters is what a
    run does, and on a small seat it costs: the base alone answered 3x faster than a run went."""
    served = [a.model for a in spec.candidates if not a.adapter_path]
    return [spec.base.model, *served[:PROBE_CANDIDATES]]


def probe_speed(spec: GateSpec, url: str, api_key: str | None) -> Speed:
    """One answer of each `probe_models`, `PROBE_MAX_TOKENS` at most, from `url`; the constant when none comes.

    The speed is their completion tokens over their summed latencies: per sequence in flight, end to end.
    """
    from voicegate.seat import ModelNotFound, RetryPolicy, SeatClient, redact_url, run

    shown = redact_url(url)
    sampling = {"temperature": spec.sampling.temperature, "top_p": spec.sampling.top_p,
                "max_tokens": min(spec.sampling.max_tokens, PROBE_MAX_TOKENS)}

    async def ask() -> list[tuple[str, int, float]]:
        answers = []
        async with SeatClient(url, api_key=api_key, timeout=PROBE_TIMEOUT_S, api_key_env=spec.seat.api_key_env,
                              retry=RetryPolicy(attempts=1, budget_s=PROBE_TIMEOUT_S)) as client:
            for model in probe_models(spec):
                try:
                    answer = await client.chat(model, spec.prompts[0].text, seed=spec.seeds[0], sampling=sampling)
                except ModelNotFound:
                    continue   # a candidate this seat does not serve (yet): `generate` says so, not the estimate
                answers.append((model, int((answer.usage or {}).get("completion_tokens") or 0), answer.latency_s))
        return answers

    try:
        answers = run(ask())
    except VoicegateError as exc:
        reason = str(exc).split(": ", 1)[-1] if str(exc).startswith("seat ") else str(exc)
        return constant(f"the seat at {shown} did not answer a probe ({reason[:160]})")
    tokens, secs = sum(a[1] for a in answers), sum(a[2] for a in answers)
    if tokens < 1 or secs <= 0:
        return constant(f"the seat at {shown} answered the probe with no completion tokens")
    return Speed(tokens / secs, True, f"measured on {shown} just now ({tokens} tokens in {secs:.1f} s, one answer "
                                      f"each of {', '.join(a[0] for a in answers)})")


def duration_text(seconds: float) -> str:
    """Seconds under ten minutes (a CPU seat's gates), minutes above."""
    return f"{seconds:.0f} s" if seconds < 600 else f"{seconds / 60:,.0f} min"
