"""The lv-bronte reference case as report data, built from the registered floor rules.

The report is a renderer over stored results; these builders make those results
for the reference case of DESIGN.md §3 (base, ckpt475, ckpt925; seeds 101/202/303;
360 generations) with the floors computed by voicegate's own rule objects, so a
report test checks the page against numbers the rules really give. The tests in
`test_report_data.py` pin those numbers, so a builder that drifted from the reference case
would fail there rather than silently weaken the report tests.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

from voicegate.spec._rules import RULES

GATE = "lv-bronte"
SEEDS = (101, 202, 303)
ARMS = ("base", "ckpt475", "ckpt925")
N_PROMPTS = 40

# Per-seed voice distances: base and ckpt475 spread <= 0.091 (ckpt475 exactly), ckpt925's
# seed 202 is the outlier that makes its spread 0.251; delta_cb = +0.193 and +0.210.
DISTANCES: dict[str, dict[int, float]] = {
    "base": {101: 0.812, 202: 0.781, 303: 0.842},
    "ckpt475": {101: 0.575, 202: 0.666, 303: 0.615},
    "ckpt925": {101: 0.516, 202: 0.767, 303: 0.522},
}

# The one copied span of the reference data: ckpt925 reproduces a Jane Eyre line.
SPAN = {"text": "reader i married him a quiet wedding we had", "tokens": 9,
        "source": "corpora/bronte/train/jane-eyre.txt", "offset": 183412,
        "excerpt": "…Reader, I married him. A quiet wedding we had: he and I, the parson and clerk…"}
SPAN_PROMPT, SPAN_SEED = "3", 202

AMEND_REASON = ("global-max-spread lets an arm nobody ships fail the one that ships; "
                "pairwise-max-spread was registered 2026-09-17 for lv-hemingway before any of its numbers existed")
SHIP_REASON = "additive, reversible and safety-clean"

PROMPTS = [f"Write a scene (about 250 words) in which {who} {what}." for who, what in [
    (w, x) for w in ("a governess", "a curate", "a widow", "a schoolmistress", "a blind master",
                     "a young clerk", "an orphan", "a housekeeper")
    for x in ("receives a letter", "walks on the moor at dusk", "hears a voice in the night",
              "refuses an offer", "returns after many years")]]


def _mean(d: dict[int, float]) -> float:
    return sum(d.values()) / len(d)


def _spread(d: dict[int, float]) -> float:
    return max(d.values()) - min(d.values())


# lv-bronte was scored before welch-t@1 was registered: its results carry the seeds' two rules only.
BRONTE_RULES = ("global-max-spread", "pairwise-max-spread")


def _floor_json(floor: Any) -> float | None:
    """A floor as the result's JSON holds it: a finite number, else None (an infinite floor, or a rule whose
    floor is not a number: nothing passes it here)."""
    return float(floor) if isinstance(floor, int | float) and math.isfinite(floor) else None


def make_result(rule: str, *, distances: dict[str, dict[int, float]] | None = None,
                arm_names: tuple[str, ...] = ARMS, rules: tuple[str, ...] = BRONTE_RULES) -> dict[str, Any]:
    """The score result (the scoring contract's shape) for the reference case under `rule`, carrying `rules`."""
    distances = distances or DISTANCES
    computed = {rid: RULES[rid] for rid in rules}
    base = arm_names[0]
    arms: list[dict[str, Any]] = []
    overlaps = {"base": 0.0, "ckpt475": 0.0, "ckpt925": 0.0004}
    probes = {"base": 0.950, "ckpt475": 0.950, "ckpt925": 0.925}
    degen = {"base": 0.008, "ckpt475": 0.008, "ckpt925": 0.017}
    verdicts: dict[str, dict[str, str]] = {}
    for name in arm_names:
        d = distances[name]
        arm: dict[str, Any] = {
            "name": name, "role": "base" if name == base else "candidate",
            "model": "voices-base" if name == base else f"{GATE}-{name}",
            "distances": {str(s): v for s, v in d.items()},
            "mean_distance": _mean(d), "spread": _spread(d),
            "overlap": overlaps.get(name, 0.0), "longest_run": 9 if name == "ckpt925" else 0,
            "spans": [dict(SPAN)] if name == "ckpt925" else [],
            "degeneration": {"rate": degen.get(name, 0.0), "empty": 0.0, "repetition": degen.get(name, 0.0),
                             "truncated": 0.033},
            "probe_pass_rate": probes.get(name),
        }
        if name != base:
            delta = _mean(distances[base]) - _mean(d)
            floors = {rid: _floor_json(r.floor(distances, base, name)) for rid, r in computed.items()}
            voice = {rid: "PASS" if f is not None and delta > f else "FAIL" for rid, f in floors.items()}
            ratios = {rid: delta / f if f else None for rid, f in floors.items()}
            verdicts[name] = voice
            arm.update({
                "delta_cb": delta, "floors": floors, "voice": voice, "ratios": ratios,
                "ratio": ratios[rule], "disagree": len(set(voice.values())) > 1,
                "copying": "NOT-COPIED", "damage": "NO-DAMAGE",
                "bootstrap": {"low": delta - 0.06, "high": delta + 0.05, "level": 0.95, "deciding": False},
            })
        arms.append(arm)
    passing = [a for a in arms if a["role"] == "candidate" and a["voice"][rule] == "PASS"]
    ships = max(passing, key=lambda a: a["ratio"])["name"] if passing else None
    sig = {"view": "stylometric", "mfw": 1000, "chunk": 2500, "n": 8, "tokenizer": "regex-letters-v1",
           "embedding_model": None, "embedding_revision": None,
           "rules": {rid: r.signature for rid, r in computed.items()}, "voicegate": "0.1.0",
           "numpy": "2.1.3", "scipy": "1.14.1", "spec_sha256": "5e" * 32, "generations_sha256": "9a" * 32}
    text = "|".join([f"view:{sig['view']}", f"mfw:{sig['mfw']}", f"chunk:{sig['chunk']}", f"n:{sig['n']}",
                     f"tok:{sig['tokenizer']}", f"rule:{RULES[rule].signature}", f"voicegate:{sig['voicegate']}",
                     "spec:5e5e5e5e5e5e", "gens:9a9a9a9a9a9a"])
    return {"gate": GATE, "rule": rule, "ships": ships, "signature": sig, "signature_text": text,
            "control": {"arm": base, "overlap": overlaps.get(base, 0.0)}, "arms": arms}


_WORDS = [
    ("the wind moaned about the house and I sat by the window with my work, thinking of him; it was a grey day, "
     "and the moor beyond the garden wall lay cold and silent under a low sky"),
    "I had resolved to say nothing, yet my heart would not be still",
    "Mrs Fairfax came in with a candle and a letter, and I knew the hand before I broke the seal",
    "Reader, there are hours in which the soul is very quiet, and this was not one of them",
    "He had written but three lines, and I read them twice, and then a third time, slowly",
    "Outside the rooks were going home across the pale field, and the lamp was not yet lit.",
]


def make_generations() -> list[dict[str, Any]]:
    """360 voice rows (3 arms x 3 seeds x 40 prompts), deterministic; one carries the copied span."""
    rows = []
    order = 0
    for seed in SEEDS:
        for pid in range(N_PROMPTS):
            for arm in ARMS:
                rnd = random.Random(f"{arm}/{seed}/{pid}")
                sentences = [rnd.choice(_WORDS).strip().rstrip(".") + "." for _ in range(rnd.randint(4, 7))]
                if arm == "base":
                    sentences.insert(0, "Certainly! Here is a scene in the style you asked for.")
                if arm == "ckpt925" and str(pid) == SPAN_PROMPT and seed == SPAN_SEED:
                    sentences.insert(2, "Reader, I married him. A quiet wedding we had, and no one came.")
                text = " ".join(sentences)
                rows.append({
                    "kind": "voice", "arm": arm, "model": "voices-base" if arm == "base" else f"{GATE}-{arm}",
                    "seed": seed, "prompt_id": str(pid), "text": text, "finish_reason": "stop",
                    "usage": {"prompt_tokens": 40, "completion_tokens": int(len(text.split()) * 1.3),
                              "total_tokens": 40 + int(len(text.split()) * 1.3)},
                    "imported": True, "order": order,
                })
                order += 1
    return rows


def make_amendment() -> dict[str, Any]:
    return {
        "time": "2026-09-18T10:12:00Z", "rule_from": "global-max-spread", "rule_to": "pairwise-max-spread",
        "reason": AMEND_REASON, "result": make_result("pairwise-max-spread"),
        "changes": [
            "ckpt475: VOICE FAIL -> PASS (floor 0.091, not 0.251; 2.1x)",
            "withdrawn: 'do not cite lv-bronte as evidence that pair-SFT works for this author'",
            "unchanged: ckpt925 still FAIL; NOT-COPIED and NO-DAMAGE as recorded; ckpt475 over ckpt925",
        ],
    }


def make_decision() -> dict[str, Any]:
    return {"time": "2026-09-16T15:40:00Z", "arm": "ckpt475", "reason": SHIP_REASON}


def reference_data(**overrides: Any) -> dict[str, Any]:
    """`render_report` input for lv-bronte as it stands: scored, shipped, amended once."""
    data: dict[str, Any] = {
        "gate": GATE, "author": "Charlotte Brontë",
        "score": make_result("global-max-spread"),
        "amendments": [make_amendment()],
        "decisions": [make_decision()],
        "run": {"source": "imported", "file": "imports/lv-bronte-360.jsonl", "file_sha256": "ab" * 32,
                "counts": {"voice": 360}},
        "registration": {"spec_path": "preregistrations/lv-bronte.yaml", "spec_sha256": "5e" * 32,
                         "commit": "0123456789abcdef0123456789abcdef01234567",
                         "registered_at": "2026-09-10T09:00:00Z", "deciding_rule": "global-max-spread",
                         "voicegate_version": "0.1.0"},
        "notices": [],
        "seeds": [str(s) for s in SEEDS],
        "prompts": {str(i): p for i, p in enumerate(PROMPTS)},
        "copying": {"n": 8, "tolerance": 0.005, "max_run": 50},
        "damage": {"tolerance": 0.05, "truncation_decides": False},
        "generations": make_generations(),
        "max_samples": 4,
        "rendered_at": "2026-09-18T10:15:00Z",
    }
    data.update(overrides)
    return data


def write_run(run_dir: Path, data: dict[str, Any], *, scores: bool = True) -> None:
    """Lay the reference data out as the producers store it in `<run_dir>`."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / "generations.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, sort_keys=True) + "\n" for r in data["generations"])
    (run_dir / "run.json").write_text(json.dumps(data["run"]), encoding="utf-8")
    if scores:
        (run_dir / "scores.json").write_text(json.dumps(data["score"]), encoding="utf-8")
        with open(run_dir / "amendments.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(a) + "\n" for a in data["amendments"])
        with open(run_dir / "decisions.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(d) + "\n" for d in data["decisions"])
