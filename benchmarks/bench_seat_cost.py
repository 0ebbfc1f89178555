"""How well does `voicegate seat cost` recover a known decode slowdown?

Runs the interleaved cost measurement against the in-process stand-in seat, whose voice
decodes at a set fraction of the base's tok/s, and prints true vs measured overhead and
the A-vs-A noise floor for a few n. Usage:

    python benchmarks/bench_seat_cost.py [--token-ms 2] [--n 10 30]

With ``--seat URL --voice NAME`` it measures a real seat instead (one line, as the CLI).
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--token-ms", type=float, default=2.0)
    ap.add_argument("--n", type=int, nargs="+", default=[10, 30])
    ap.add_argument("--speeds", type=float, nargs="+", default=[1.0, 0.9, 0.75, 0.5],
                    help="voice tok/s as a fraction of the base's")
    ap.add_argument("--seat")
    ap.add_argument("--voice")
    args = ap.parse_args()

    from voicegate.seat import SeatClient, StandinSeat, _standin, run
    from voicegate.seat._cost import measure, render_cost

    if args.seat:
        async def real():
            async with SeatClient(args.seat) as c:
                bases = [m.id for m in await c.models() if m.parent is None]
                return await measure(c, base=bases[0], voice=args.voice, n=args.n[0])
        print(render_cost(run(real())))
        return

    # See the report of issue 7: the stand-in's replies need TCP_NODELAY to time tokens, not Nagle.
    _standin._Handler.disable_nagle_algorithm = True
    t = args.token_ms / 1000
    print(f"{'speed':>6} {'n':>4} {'true %':>8} {'measured %':>11} {'floor %':>8} {'outside':>8} {'secs':>6}")
    for speed in args.speeds:
        for n in args.n:
            with StandinSeat(adapters={"lv-x": "/adapters/lv-x"}, token_time=t,
                             token_time_by_model={"lv-x": t / speed}) as seat:
                async def go(n: int = n):
                    async with SeatClient(seat.url) as c:
                        return await measure(c, base="voices-base", voice="lv-x", n=n)
                t0 = time.monotonic()
                r = run(go()).as_json()
                secs = time.monotonic() - t0
            print(f"{speed:>6.2f} {n:>4} {100 * (speed - 1):>8.1f} {r['overhead_pct']:>11.2f} "
                  f"{r['noise_floor_pct']:>8.2f} {r['outside_floor']!s:>8} {secs:>6.1f}")


if __name__ == "__main__":
    main()
