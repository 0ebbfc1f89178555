"""How close does `generate` keep a seat to busy? Wall time against the ideal makespan.

A stand-in seat with N decode slots and a fixed time per token does
``sum(overhead + tokens * t)`` seconds of work over a run; spread perfectly over
N slots that is the ideal makespan, ``work / N``. ``generate`` with N requests
in flight should come close: the goal is wall / ideal <= 1.10.

Two wall times are reported: the whole ``generate()`` call (seat checks,
adapter load/unload, manifest, fsync'd rows included) and the seat's busy span
(first request in to last answer out).

    python benchmarks/bench_generate.py [--slots 8] [--token-time 0.007] [--prompts 30] [--seeds 3]

The default time per token, 7 ms, is the seat's own measured base decode rate
(143 tok/s, DESIGN.md §5).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from _workspace import gate_spec, registered_workspace  # noqa: E402

from voicegate.generate._generate import generate  # noqa: E402
from voicegate.spec._spec import load_spec  # noqa: E402
from voicegate.seat import StandinSeat  # noqa: E402

GATE = "lv-bench"


def bench(*, slots: int = 8, concurrency: int | None = None, token_time: float = 0.007,
          overhead: float = 0.0, prompts: int = 30, seeds: int = 3, workdir: Path | None = None) -> dict:
    concurrency = concurrency or slots
    tmp = tempfile.TemporaryDirectory() if workdir is None else None
    root = Path(tmp.name if tmp else workdir) / "ws"
    try:
        with StandinSeat(adapters={f"{GATE}-ckpt475": "/adapters/b/ckpt475"}, slots=slots,
                         token_time=token_time, request_overhead=overhead) as seat:
            spec_dict = gate_spec(GATE, url=seat.url, seeds=[101 * (i + 1) for i in range(seeds)],
                                  concurrency=concurrency, max_tokens=64)
            registered_workspace(root, spec_dict,
                                 prompts=[f"Write scene {i} of the story, in the author's voice." for i in range(prompts)])
            spec = load_spec(root, GATE)
            t0 = time.monotonic()
            result = generate(spec, quiet=True)
            wall = time.monotonic() - t0
            log = [e for e in seat.chat_log() if e["status"] == 200]
            rows = [json.loads(line) for line in spec.generations_path.read_text().splitlines()]
        work = sum(overhead + r["usage"]["completion_tokens"] * token_time for r in rows)
        ideal = work / slots
        first_in = min(e["time"] for e in log)
        # The log records arrival; the last answer leaves one request's service time after its arrival.
        busy = max(e["time"] + overhead + next(r["usage"]["completion_tokens"] for r in rows
                                               if r["model"] == e["model"] and r["request_seed"] == e["seed"])
                   * token_time for e in log) - first_in
        return {
            "requests": result.generated, "slots": slots, "concurrency": concurrency, "token_time_s": token_time,
            "tokens": sum(r["usage"]["completion_tokens"] for r in rows),
            "work_s": round(work, 3), "ideal_makespan_s": round(ideal, 3),
            "wall_s": round(wall, 3), "ratio": round(wall / ideal, 3),
            "seat_busy_s": round(busy, 3), "ratio_seat_busy": round(busy / ideal, 3),
            "peak_in_flight": seat.peak_in_flight, "peak_decoding": seat.peak_decoding,
        }
    finally:
        if tmp is not None:
            tmp.cleanup()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slots", type=int, default=8)
    ap.add_argument("--concurrency", type=int, default=None)
    ap.add_argument("--token-time", type=float, default=0.007)
    ap.add_argument("--overhead", type=float, default=0.0)
    ap.add_argument("--prompts", type=int, default=30)
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    out = bench(slots=args.slots, concurrency=args.concurrency, token_time=args.token_time,
                overhead=args.overhead, prompts=args.prompts, seeds=args.seeds)
    print(json.dumps(out, indent=2))
    print(f"wall / ideal makespan = {out['ratio']:.3f}x (goal <= 1.10x)", file=sys.stderr)


if __name__ == "__main__":
    main()
