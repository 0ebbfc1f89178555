"""What a voice costs in decode speed, measured the way vLLM's serving benchmark measures it.

Three arms — the base, the voice, and the base again (``base2``) — run *interleaved*,
one request at a time, with the same prompt, ``max_tokens`` and seed within a round. The
order rotates every round so no arm always goes first (a blocked design would fold any
drift of the machine — a co-tenant, thermal throttling, a cache warming up — into the
difference between arms).

Every request is streamed (``stream: true``, server-sent events), and each token is timed
as it arrives. Decode speed is what vLLM's ``benchmark_serving`` calls TPOT, the time per
output token after the first: ``(last token − first token) / (completion_tokens − 1)``;
decode tok/s is its inverse. The time to first token (TTFT: HTTP, queueing, prefill) is
reported beside it and kept out of it: dividing tokens by the whole request's latency, as
an earlier version did, let those fixed costs dilute the adapter's cost (an adapter that
decodes exactly 25% slower read −12% at 64 tokens), and by an amount that depends on
``max_tokens``.

The medians of n runs per arm give the overhead ``voice / base − 1``, and base2 gives an
A-versus-A noise floor ``|base2 / base − 1|`` from the same run: an overhead inside the
floor is not a measured cost.

A voice whose tokens take 1/0.75 of the base's time decodes at 0.75× the base's tok/s:
overhead −25%. The seat's own record (whole-request tok/s, 143 tokens): 143.0 vs 108.2
tok/s, −24.3% against a 0.1% floor.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from voicegate._errors import VoicegateError

ARMS = ("base", "voice", "base2")
DEFAULT_PROMPT = ("Write the opening paragraph of a novel: a woman walks home along a river "
                  "at dusk, thinking about a letter she has not yet opened.")


def schedule(n: int) -> list[str]:
    """n rounds of the three arms, the order rotated each round (base/voice/base2, voice/base2/base, ...)."""
    order: list[str] = []
    for i in range(n):
        k = i % len(ARMS)
        order.extend(ARMS[k:] + ARMS[:k])
    return order


@dataclass
class Run:
    """One measured request: its token count and when its first and last tokens came."""

    arm: str
    model: str
    round: int
    seed: int
    completion_tokens: int
    latency_s: float        # the whole request, out to last byte
    ttft_s: float           # out to the first token
    decode_s: float         # first token to last token
    finish_reason: str | None

    @property
    def tpot_s(self) -> float:
        """Time per output token after the first (vLLM's TPOT)."""
        return self.decode_s / (self.completion_tokens - 1) if self.completion_tokens > 1 else 0.0

    @property
    def tok_s(self) -> float:
        """Decode speed: 1 / TPOT."""
        return 1 / self.tpot_s if self.tpot_s > 0 else 0.0

    @property
    def request_tok_s(self) -> float:
        """Tokens over the whole request's latency: TTFT and HTTP included (shown, not used)."""
        return self.completion_tokens / self.latency_s if self.latency_s > 0 else 0.0


@dataclass
class CostResult:
    base: str
    voice: str
    n: int
    max_tokens: int
    prompt: str
    sampling: dict[str, Any]
    runs: list[Run] = field(default_factory=list)
    warmup: int = 0

    def arm_stats(self, arm: str) -> dict[str, Any]:
        rs = [r for r in self.runs if r.arm == arm]
        rates = [r.tok_s for r in rs]

        def med(xs: list[float]) -> float:
            return statistics.median(xs) if xs else 0.0

        return {"n": len(rs), "median_tok_s": med(rates),
                "median_tpot_ms": 1000 * med([r.tpot_s for r in rs]),
                "median_ttft_ms": 1000 * med([r.ttft_s for r in rs]),
                "median_latency_s": med([r.latency_s for r in rs]),
                "median_request_tok_s": med([r.request_tok_s for r in rs]),
                "median_completion_tokens": statistics.median(r.completion_tokens for r in rs) if rs else 0,
                "min_tok_s": min(rates, default=0.0), "max_tok_s": max(rates, default=0.0)}

    def _median_tok_s(self, arm: str) -> float:
        return float(self.arm_stats(arm)["median_tok_s"])

    @property
    def base_tok_s(self) -> float:
        return self._median_tok_s("base")

    @property
    def voice_tok_s(self) -> float:
        return self._median_tok_s("voice")

    @property
    def base2_tok_s(self) -> float:
        return self._median_tok_s("base2")

    @property
    def overhead(self) -> float:
        """voice / base − 1 (negative: the voice decodes slower)."""
        return self.voice_tok_s / self.base_tok_s - 1 if self.base_tok_s else float("nan")

    @property
    def noise_floor(self) -> float:
        """|base2 / base − 1|: how far the same model strays from itself in this run."""
        return abs(self.base2_tok_s / self.base_tok_s - 1) if self.base_tok_s else float("nan")

    @property
    def base_ttft_ms(self) -> float:
        return float(self.arm_stats("base")["median_ttft_ms"])

    @property
    def voice_ttft_ms(self) -> float:
        return float(self.arm_stats("voice")["median_ttft_ms"])

    @property
    def outside_floor(self) -> bool:
        return abs(self.overhead) > self.noise_floor

    @property
    def warnings(self) -> list[str]:
        """Why the comparison may not be like for like."""
        out = []
        mb = self.arm_stats("base")["median_completion_tokens"]
        mv = self.arm_stats("voice")["median_completion_tokens"]
        if mb != mv:
            # A token's cost grows with the context it attends to: a longer answer has dearer late
            # tokens, and base2 replays base exactly, so the floor cannot see it.
            out.append(f"the arms decoded different lengths (median {mb:g} tokens for the base, {mv:g} for the "
                       f"voice): part of the difference may be length, not the adapter; the seat did not honour "
                       f"ignore_eos, or stopped early")
        return out

    def as_json(self) -> dict[str, Any]:
        return {
            "base": self.base, "voice": self.voice, "n": self.n, "max_tokens": self.max_tokens,
            "warmup": self.warmup, "prompt": self.prompt, "sampling": self.sampling,
            "base_tok_s": round(self.base_tok_s, 3), "voice_tok_s": round(self.voice_tok_s, 3),
            "base2_tok_s": round(self.base2_tok_s, 3),
            "measure": "decode tok/s = 1 / TPOT, TPOT = (last token - first token) / (completion_tokens - 1), "
                       "streamed; TTFT apart",
            "base_ttft_ms": round(self.base_ttft_ms, 3), "voice_ttft_ms": round(self.voice_ttft_ms, 3),
            "overhead_pct": round(100 * self.overhead, 2), "noise_floor_pct": round(100 * self.noise_floor, 2),
            "outside_floor": self.outside_floor, "warnings": self.warnings,
            "arms": {arm: self.arm_stats(arm) for arm in ARMS},
            "order": [r.arm for r in self.runs],
            "runs": [{"arm": r.arm, "model": r.model, "round": r.round, "seed": r.seed,
                      "completion_tokens": r.completion_tokens, "latency_s": round(r.latency_s, 6),
                      "ttft_s": round(r.ttft_s, 6), "decode_s": round(r.decode_s, 6),
                      "tpot_ms": round(1000 * r.tpot_s, 4), "tok_s": round(r.tok_s, 3),
                      "request_tok_s": round(r.request_tok_s, 3), "finish_reason": r.finish_reason}
                     for r in self.runs],
        }


async def measure(client: Any, *, base: str, voice: str, n: int = 30, max_tokens: int = 64,
                  prompt: str = DEFAULT_PROMPT, seed: int = 1, warmup: int = 1, temperature: float = 0.8,
                  top_p: float = 0.95, ignore_eos: bool = True,
                  progress: Callable[[int, int], None] | None = None) -> CostResult:
    """Run the interleaved schedule against ``client`` (a ``SeatClient``), one streamed request at a time."""
    if n < 1:
        raise VoicegateError("--n must be at least 1")
    if max_tokens < 2:
        raise VoicegateError("--max-tokens must be at least 2: decode speed is timed from the first token to "
                             "the last")
    sampling: dict[str, Any] = {"temperature": temperature, "top_p": top_p, "max_tokens": max_tokens}
    if ignore_eos:
        # vLLM's extension: decode all max_tokens, so every arm decodes the same length.
        sampling["ignore_eos"] = True
    models = {"base": base, "voice": voice, "base2": base}
    result = CostResult(base=base, voice=voice, n=n, max_tokens=max_tokens, prompt=prompt, sampling=sampling,
                        warmup=warmup)
    # Warm-up: the first request to an adapter pays for loading it into a LoRA slot.
    for w in range(warmup):
        for arm in ARMS:
            await client.chat_stream(models[arm], prompt, seed=seed + w, sampling=sampling)
    order = schedule(n)
    for i, arm in enumerate(order):
        rnd = i // len(ARMS)
        c = await client.chat_stream(models[arm], prompt, seed=seed + rnd, sampling=sampling)
        tokens = c.completion_tokens
        if tokens <= 0:
            raise VoicegateError(f"the seat reported no completion_tokens for {models[arm]!r} (usage in the "
                                 "stream's last chunk): decode speed cannot be measured")
        if tokens < 2:
            raise VoicegateError(f"{models[arm]!r} stopped after {tokens} token: decode speed is timed from the "
                                 "first token to the last; raise --max-tokens or use a seat that honours ignore_eos")
        result.runs.append(Run(arm=arm, model=models[arm], round=rnd, seed=seed + rnd, completion_tokens=tokens,
                               latency_s=c.latency_s, ttft_s=c.first_token_s,
                               decode_s=c.last_token_s - c.first_token_s, finish_reason=c.finish_reason))
        if progress is not None:
            progress(i + 1, len(order))
    return result


def render_cost(r: CostResult) -> str:
    a = r.as_json()
    arms = a["arms"]

    def row(label: str, name: str, arm: str) -> str:
        st = arms[arm]
        return (f"  {label:<5} {name:<28} {st['median_tok_s']:>12.1f} {st['median_tpot_ms']:>9.3f} "
                f"{st['median_ttft_ms']:>9.1f}")

    lines = [
        f"decode speed, n={r.n} per arm, interleaved, max_tokens={r.max_tokens}, medians, streamed",
        f"  {'arm':<5} {'model':<28} {'decode tok/s':>12} {'TPOT ms':>9} {'TTFT ms':>9}",
        row("base", r.base, "base"),
        row("voice", r.voice, "voice"),
        row("base2", r.base + " (A-vs-A)", "base2"),
        f"overhead {a['overhead_pct']:+.1f}%  noise floor {a['noise_floor_pct']:.1f}%  -> "
        + (("outside the floor: a measured cost" if a["overhead_pct"] < 0 else
            "outside the floor: the voice decoded faster than the base, a measured difference and no cost")
           if r.outside_floor else "inside the floor: not a measured cost"),
        (f"TTFT {r.voice_ttft_ms - r.base_ttft_ms:+.1f} ms for the voice (HTTP, queueing, prefill: kept out of "
         "the decode figure)"),
        "decode tok/s = 1 / TPOT, the time per output token after the first, as vLLM's serving benchmark",
    ]
    lines += [f"warning: {w}" for w in r.warnings]
    return "\n".join(lines)
