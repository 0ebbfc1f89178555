"""Benchmark: `voicegate score` (whole command) against a naive pure-Python reference.

Builds its own temporary workspace from the public-domain corpus (git init,
spec, `voicegate register`), writes 360 generations (3 arms x 3 seeds x 40
prompts, ~250-word excerpts), then measures in the same run:

- `python -m voicegate score GATE --json` in a subprocess: first right after
  `voicegate register` (which fills the corpus side of the cache: the first score a
  user runs), then truly cold (`runs/.cache` deleted), then warm (median of the next
  runs): process start, imports, reading and checking the spec, scoring, writing
  scores.json and the record; `register` itself is timed too (it pays the corpus work);
- a naive reference of the same math in a subprocess: regex tokens, a Python
  set of 8-gram tuples, Cosine Delta in plain lists (it reads the corpora and
  the generations, nothing else);
- `python -m voicegate score GATE --dry-run --json`, warm, `--dry-runs` times (median): the
  command a CI job or a reviewer repeats; with `--baseline DIR` (another voicegate source
  tree, e.g. `git worktree add /tmp/vg-base main`) the same command from that tree,
  interleaved run for run, and both must print the same bytes;
- the n-gram index build rate (tokens/s) and lookup rate (8-grams/s), in process.

The generations come in through `voicegate import`, as lv-bronte's did. It also checks
that voicegate and the reference give the same distances and overlaps.

    python benchmarks/bench_score.py [--corpus DIR] [--warm-runs 3] [--dry-runs 5] [--baseline DIR]
                                     [--keep] [--no-bytecode]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from voicegate._fixtures import CORPUS, shared_dir

HERE = Path(__file__).resolve().parent
DEFAULT_CORPUS = (shared_dir(HERE.parent.parent / "shared") or HERE.parent.parent / "shared") / CORPUS
GATE = "lv-bronte-bench"
HELDOUT = ["CBronte_Villette"]
TRAINING = ["CBronte_Jane", "CBronte_Professor", "ABronte_Tenant", "ABronte_Agnes", "EBronte_Wuthering"]
BACKGROUND = ["Austen_Emma", "Austen_Pride", "Dickens_Hard", "Eliot_Adam", "Eliot_Mill", "Thackeray_Barry",
              "Trollope_Barchester", "Fielding_Joseph", "Sterne_Sentimental", "Richardson_Pamela"]
ARMS = {"base": "Fielding_Tom", "ckpt475": "CBronte_Jane", "ckpt925": "Dickens_David"}
SEEDS = [101, 202, 303]
PROMPTS = 40
WORDS = 250

NAIVE = textwrap.dedent(r'''
    import json, math, re, sys, unicodedata
    from collections import Counter

    PATTERN = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")

    def tokens(text):
        return PATTERN.findall(unicodedata.normalize("NFKC", text).replace("\u2019", "'").casefold())

    cfg = json.load(open(sys.argv[1]))
    read = lambda p: tokens(open(p, encoding="utf-8").read())
    held = [read(p) for p in cfg["heldout"]]
    background = [read(p) for p in cfg["background"]]
    training = [read(p) for p in cfg["training"]]
    rows = [json.loads(line) for line in open(cfg["generations"], encoding="utf-8") if line.strip()]

    # Cosine Delta, reference from held-out + background
    totals = Counter()
    for d in held + background:
        totals.update(d)
    mfw = [w for w, _ in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))[:cfg["mfw"]]]
    chunk = cfg["chunk"]
    freqs = []
    for d in held + background:
        pieces = [d[i:i + chunk] for i in range(0, len(d) - chunk + 1, chunk)] if len(d) >= chunk else [d]
        for p in pieces:
            c = Counter(p)
            freqs.append([c[w] / len(p) for w in mfw])
    n = len(freqs)
    mean = [sum(r[j] for r in freqs) / n for j in range(len(mfw))]
    sd = [math.sqrt(sum((r[j] - mean[j]) ** 2 for r in freqs) / (n - 1)) for j in range(len(mfw))]

    def z(counter, total):
        return [((counter[w] / total) - m) / s if s > 0 else 0.0 for w, m, s in zip(mfw, mean, sd)]

    hc = Counter()
    for d in held:
        hc.update(d)
    zh = z(hc, sum(len(d) for d in held))
    gen_tokens = [tokens(r["text"]) for r in rows]
    pools = {}
    for r, t in zip(rows, gen_tokens):
        pools.setdefault((r["arm"], r["seed"]), []).append(t)
    dist = {}
    for (arm, seed), ts in pools.items():
        c = Counter()
        for t in ts:
            c.update(t)
        za = z(c, sum(len(t) for t in ts))
        cos = sum(a * b for a, b in zip(za, zh)) / math.sqrt(sum(a * a for a in za) * sum(b * b for b in zh))
        dist.setdefault(arm, {})[str(seed)] = 1 - cos

    # 8-gram overlap and longest verbatim run
    k = cfg["n"]
    grams = set()
    for d in training:
        grams.update(tuple(d[i:i + k]) for i in range(len(d) - k + 1))
    hits, total, longest = Counter(), Counter(), Counter()
    for r, t in zip(rows, gen_tokens):
        run = 0
        for i in range(len(t) - k + 1):
            total[r["arm"]] += 1
            if tuple(t[i:i + k]) in grams:
                hits[r["arm"]] += 1
                run += 1
                longest[r["arm"]] = max(longest[r["arm"]], run + k - 1)
            else:
                run = 0
    print(json.dumps({"distances": dist, "overlap": {a: hits[a] / total[a] for a in total},
                      "longest_run": dict(longest)}))
''')


def build_workspace(root: Path, corpus: Path) -> dict:
    env = _env()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    for group, names in (("heldout", HELDOUT), ("training", TRAINING), ("background", BACKGROUND)):
        (root / "corpora" / group).mkdir(parents=True)
        for name in names:
            shutil.copyfile(corpus / f"{name}.txt", root / "corpora" / group / f"{name}.txt")
    (root / "prompts.txt").write_text("".join(f"Write scene {i} in her voice.\n" for i in range(PROMPTS)))
    (root / "preregistrations").mkdir()
    (root / "preregistrations" / f"{GATE}.yaml").write_text(textwrap.dedent(f"""\
        gate: {GATE}
        author: Charlotte Bronte
        seat: {{url: "http://127.0.0.1:9/v1", base_model: voices-base}}
        arms:
          - {{name: base, model: voices-base, role: base}}
          - {{name: ckpt475, model: {GATE}-ckpt475, role: candidate}}
          - {{name: ckpt925, model: {GATE}-ckpt925, role: candidate}}
        prompts: prompts.txt
        seeds: {SEEDS}
        sampling: {{temperature: 0.8, top_p: 0.95, max_tokens: 512}}
        corpora:
          heldout: [corpora/heldout/*.txt]
          training: [corpora/training/*.txt]
          background: [corpora/background/*.txt]
        voice: {{view: stylometric, mfw: 1000, chunk: 2500}}
        copying: {{n: 8, tolerance: 0.005, max_run: 50}}
        floor: {{rule: pairwise-max-spread}}
        artifacts: {{record: gates/{GATE}.md}}
        """))
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "voicegate", "register", GATE, "-C", str(root)],
                          check=False, capture_output=True, text=True, env=env)
    register_s = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"register failed: {done.stderr}")
    rows = []
    for arm, source in ARMS.items():
        words = (corpus / f"{source}.txt").read_text(encoding="utf-8").split()
        for seed in SEEDS:
            rng = random.Random(f"{arm}/{seed}")
            for p in range(PROMPTS):
                start = rng.randrange(len(words) - WORDS)
                rows.append({"kind": "voice", "arm": arm, "model": arm, "seed": seed, "prompt_id": str(p),
                             "text": " ".join(words[start:start + WORDS]), "finish_reason": "stop"})
    source = root.parent / "generations-in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = subprocess.run([sys.executable, "-m", "voicegate", "import", GATE, str(source), "-C", str(root)],
                          check=False, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"import failed: {done.stderr}")
    run_dir = root / "runs" / GATE
    return {"heldout": [str(p) for p in sorted((root / "corpora/heldout").iterdir())],
            "training": [str(p) for p in sorted((root / "corpora/training").iterdir())],
            "background": [str(p) for p in sorted((root / "corpora/background").iterdir())],
            "generations": str(run_dir / "generations.jsonl"), "mfw": 1000, "chunk": 2500, "n": 8,
            "register_s": register_s}


BYTECODE: dict[str, str | None] = {}  # how the subprocesses treat .pyc files (see main)


def _env(pythonpath: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOICEGATE_")}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    for key, value in BYTECODE.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


CPU: dict[str, list[float]] = {}


def timed(cmd: list[str], cwd: Path, label: str = "", pythonpath: str | None = None) -> tuple[float, str]:
    """Wall time of a subprocess; its CPU time (user + sys) is kept in CPU[label].

    On a shared machine wall time swings with other jobs' load; CPU time is the
    steadier second opinion, so both are reported.
    """
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, check=False, capture_output=True, text=True, env=_env(pythonpath))
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.setdefault(label, []).append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed ({done.returncode}): {done.stderr}")
    return elapsed, done.stdout


def index_rates(cfg: dict) -> tuple[float, float, int, int]:
    """(index build tokens/s, lookup 8-grams/s, training tokens, queries) in process."""
    from voicegate.scoring import build_index, doc_from_text
    from voicegate.scoring._copying import ngram_hashes, token_hashes

    training = [doc_from_text(Path(p).read_text(encoding="utf-8")) for p in cfg["training"]]
    queries = [ngram_hashes(token_hashes(doc_from_text(Path(p).read_text(encoding="utf-8"))), 8)
               for p in cfg["background"]]
    import numpy as np

    q = np.concatenate(queries)
    n_tokens = sum(len(d) for d in training)
    t0 = time.perf_counter()
    idx = build_index(training, 8)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    idx.lookup(q)
    lookup = time.perf_counter() - t0
    return n_tokens / build, q.shape[0] / lookup, n_tokens, int(q.shape[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--warm-runs", type=int, default=3)
    ap.add_argument("--dry-runs", type=int, default=5, help="warm `score --dry-run --json` runs (median)")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="another voicegate source tree (its root: the directory holding voicegate/) whose "
                         "`score --dry-run --json` is timed beside this one's, run for run")
    ap.add_argument("--keep", action="store_true", help="keep the temporary workspace")
    ap.add_argument("--no-bytecode", action="store_true",
                    help="write no .pyc (PYTHONDONTWRITEBYTECODE=1), as the fleet's sandboxes do: voicegate's "
                         "modules are compiled from source in every run, installed packages read the .pyc their "
                         "install wrote; default: .pyc files kept under the temporary directory (every module's, "
                         "installed packages' too: the first process to import one compiles it)")
    args = ap.parse_args()
    if not args.corpus.is_dir():
        raise SystemExit(f"corpus not found at {args.corpus}")
    if args.baseline is not None and not (args.baseline / "voicegate" / "__init__.py").is_file():
        raise SystemExit(f"--baseline {args.baseline}: no voicegate/__init__.py there")
    tmp = Path(tempfile.mkdtemp(prefix="vg-bench-score-"))
    if args.no_bytecode:
        BYTECODE.update(PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=None)
    else:
        # The modules' bytecode is kept (outside the source tree): register, the first command, writes it.
        BYTECODE.update(PYTHONDONTWRITEBYTECODE=None, PYTHONPYCACHEPREFIX=str(tmp / "pycache"))
    print("bytecode: " + ("no .pyc written (PYTHONDONTWRITEBYTECODE=1): voicegate's modules compiled in every run"
                          if args.no_bytecode else f".pyc kept under {tmp / 'pycache'} (an ordinary install)"))
    try:
        root = tmp / "ws"
        root.mkdir()
        cfg = build_workspace(root, args.corpus)
        (tmp / "naive.py").write_text(NAIVE)
        (tmp / "naive.json").write_text(json.dumps(cfg))
        words = {g: sum(len(Path(p).read_text(encoding="utf-8").split()) for p in cfg[g])
                 for g in ("heldout", "training", "background")}
        print(f"workspace {root}: 360 generations x ~{WORDS} words; words: heldout {words['heldout']:,}, "
              f"training {words['training']:,}, background {words['background']:,} ({len(BACKGROUND)} novels)")

        score = [sys.executable, "-m", "voicegate", "score", GATE, "-C", str(root), "--json"]
        naive = [sys.executable, str(tmp / "naive.py"), str(tmp / "naive.json")]
        naive_s, naive_out = timed(naive, tmp, "naive")
        # The first score after `register`: the cache as register left it (it warms the corpus side).
        after_reg_s, out = timed(score, root, "after-register")
        shutil.rmtree(root / "runs" / ".cache", ignore_errors=True)
        fresh_s, _ = timed(score, root, "fresh")
        warm = [timed(score, root, "warm")[0] for _ in range(args.warm_runs)]
        warm_s = statistics.median(warm)
        dry = [*score, "--dry-run"]
        here = str(HERE.parent)
        dry_out = {}
        dry_s: dict[str, list[float]] = {"here": [], "baseline": []}
        for _ in range(args.dry_runs):  # interleaved, so both see the same load
            t, dry_out["here"] = timed(dry, root, "dry", pythonpath=here)
            dry_s["here"].append(t)
            if args.baseline is not None:
                t, dry_out["baseline"] = timed(dry, root, "dry-baseline", pythonpath=str(args.baseline.resolve()))
                dry_s["baseline"].append(t)
        naive2_s, _ = timed(naive, tmp, "naive")
        naive_s = min(naive_s, naive2_s)
        cpu = {"naive": min(CPU["naive"]), "fresh": CPU["fresh"][0], "warm": statistics.median(CPU["warm"]),
               "after-register": CPU["after-register"][0]}
        bare = [timed([sys.executable, "-c", "pass"], tmp, "bare")[0] for _ in range(5)]
        helps = [timed([sys.executable, "-m", "voicegate", "--help"], tmp, "help")[0] for _ in range(5)]

        ours, ref = json.loads(out), json.loads(naive_out)
        diffs = [abs(a["distances"][s] - ref["distances"][a["name"]][s]) for a in ours["arms"] for s in a["distances"]]
        odiffs = [abs(a["overlap"] - ref["overlap"][a["name"]]) for a in ours["arms"]]
        runs_equal = all(a["longest_run"] == ref["longest_run"].get(a["name"], 0) for a in ours["arms"])

        build_rate, lookup_rate, n_tok, n_q = index_rates(cfg)
        print(f"naive pure-Python reference (subprocess, best of 2): {naive_s:6.2f} s wall, "
              f"{cpu['naive']:5.2f} s cpu")
        print(f"voicegate score, first after register:              {after_reg_s:6.2f} s wall, "
              f"{cpu['after-register']:5.2f} s cpu; ratio {after_reg_s / naive_s:.2f}x wall, "
              f"{cpu['after-register'] / cpu['naive']:.2f}x cpu (goal <= 0.35x)")
        print(f"voicegate score, cold cache (runs/.cache deleted):   {fresh_s:6.2f} s wall, "
              f"{cpu['fresh']:5.2f} s cpu; ratio {fresh_s / naive_s:.2f}x wall, {cpu['fresh'] / cpu['naive']:.2f}x cpu")
        print(f"voicegate score, warm cache (median of {len(warm)}):         {warm_s:6.2f} s wall, "
              f"{cpu['warm']:5.2f} s cpu; ratio {warm_s / naive_s:.2f}x wall, {cpu['warm'] / cpu['naive']:.2f}x cpu "
              "(goal <= 0.5x)")
        for label, name in (("here", "dry"), ("baseline", "dry-baseline")):
            if not dry_s[label]:
                continue
            wall, c = statistics.median(dry_s[label]), statistics.median(CPU[name])
            who = "this tree" if label == "here" else f"baseline {args.baseline}"
            print(f"voicegate score --dry-run --json, warm ({who}, median of {len(dry_s[label])}): {wall:6.2f} s wall, "
                  f"{c:5.2f} s cpu; ratio {wall / naive_s:.2f}x wall, {c / cpu['naive']:.2f}x cpu (goal <= 0.35x)")
        if dry_s["baseline"]:
            same = dry_out["here"] == dry_out["baseline"]
            wall = statistics.median(dry_s["here"]) / statistics.median(dry_s["baseline"])
            c = statistics.median(CPU["dry"]) / statistics.median(CPU["dry-baseline"])
            print(f"dry run, this tree / baseline: {wall:.2f}x wall, {c:.2f}x cpu; same --json bytes: {same}")
            if not same:
                raise SystemExit("the baseline's score --dry-run --json printed other bytes")
        print(f"voicegate register (hashes, commit, fills the corpus cache): {cfg['register_s']:.2f} s wall")
        print(f"voicegate --help: {statistics.median(helps):.3f} s vs bare python {statistics.median(bare):.3f} s "
              f"(median of 5): +{statistics.median(helps) - statistics.median(bare):.3f} s (goal <= 0.3 s over bare)")
        print(f"load average at the end: {os.getloadavg()[0]:.2f} (2 cores shared with other jobs)")
        print(f"n-gram index build: {build_rate:,.0f} tokens/s ({n_tok:,} training tokens)")
        print(f"n-gram lookup:      {lookup_rate:,.0f} 8-grams/s ({n_q:,} queries)")
        print(f"agreement with the reference: max |d diff| {max(diffs):.2e}, max |overlap diff| {max(odiffs):.2e}, "
              f"longest runs equal: {runs_equal}")
        print(f"ships: {ours['ships']}; " + ", ".join(
            f"{a['name']} d={a['mean_distance']:.3f} overlap={a['overlap']:.4f} run={a['longest_run']}"
            for a in ours["arms"]))
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
