"""score_gate on constructed workspaces: copying, damage, determinism, the embedding cache.

Also home of `make_workspace`, which test_score_cli.py reuses: a git work tree
with a registered spec over small constructed corpora (random words from a
fixed vocabulary, seeded, so no two texts share an 8-gram by chance) and
whatever generations a test writes.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import _workspace as workspace
import pytest
import yaml

from voicegate.scoring import GateResult, result_text


def result_json(data: dict) -> str:
    """The JSON bytes, through one from_json/to_json round trip (which must not change them)."""
    return result_text(GateResult.from_json(data))
from voicegate.run._store import append_rows
from voicegate.scoring import score_gate
from voicegate.spec._registration import check_registered, register
from voicegate.spec._spec import load_spec

VOCAB = [f"w{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}" for i in range(400)] + \
    ["the", "and", "of", "to", "a", "in", "was", "she", "he", "it", "her", "his", "that", "had", "not"] * 6
GATE = "lv-test"
SEEDS = [101, 202]
PROMPTS = 6


# Three "styles": each favours a different third of the vocabulary, so the
# held-out author (style 0) and the background authors (1, 2) differ the way
# real authors differ: in the rates of the same common words.
STYLES = {s: [3.0 if i % 3 == s else 1.0 for i in range(len(VOCAB))] for s in range(3)}


def words(n: int, seed: int | str, style: int | None = None) -> list[str]:
    rng = random.Random(seed)
    if style is None:
        return [rng.choice(VOCAB) for _ in range(n)]
    return rng.choices(VOCAB, weights=STYLES[style], k=n)


def text(n: int, seed: int | str, style: int | None = None) -> str:
    return " ".join(words(n, seed, style))


TRAIN = words(6000, "train")


def constructed_spec(*, voice: dict | None = None, arms: tuple[str, ...] = ("cand", "other"),
                     extra: dict | None = None) -> dict[str, Any]:
    """The spec over the constructed corpora: base plus `arms` as candidates (models lv-test-<arm>)."""
    return {
        "gate": GATE, "author": "Test Author",
        "seat": {"url": "http://127.0.0.1:9/v1", "base_model": "base"},
        "arms": [{"name": "base", "model": "base", "role": "base"},
                 *({"name": a, "model": f"lv-test-{a}", "role": "candidate"} for a in arms)],
        "prompts": [f"prompt {i}" for i in range(PROMPTS)],
        "seeds": SEEDS,
        "sampling": {"temperature": 0.8, "top_p": 0.95, "max_tokens": 400},
        "corpora": {"heldout": ["corpora/held/*.txt"], "training": ["corpora/train/*.txt"],
                    "background": ["corpora/bg/*.txt"]},
        "voice": voice or {"view": "stylometric", "mfw": 100, "chunk": 500},
        "copying": {"n": 8, "tolerance": 0.005, "max_run": 50},
        "floor": {"rule": "pairwise-max-spread"},
        "artifacts": {"record": f"gates/{GATE}.md"},
        "expected_words": 120,
        **(extra or {}),
    }


def make_workspace(root: Path, *, probes: list[dict] | None = None, voice: dict | None = None,
                   extra: dict | None = None) -> Path:
    """A registered workspace under `root` (no generations yet) over the constructed corpora; returns root."""
    spec = constructed_spec(voice=voice, extra=extra)
    corpora = {"corpora/held/held.txt": text(3000, "held", 0), "corpora/train/train.txt": " ".join(TRAIN),
               "corpora/bg/bg1.txt": text(3000, "bg1", 1), "corpora/bg/bg2.txt": text(3000, "bg2", 2)}
    if probes is not None:
        corpora["probes.yaml"] = yaml.safe_dump({"probes": probes})
        spec["damage"] = {"probes": "probes.yaml", "tolerance": 0.05}
    workspace.make_workspace(root, spec, corpora=corpora)
    register(load_spec(root, GATE))
    return root


def voice_rows(texts: dict[str, Any], finish: dict[str, str] | None = None) -> list[dict]:
    """texts: arm -> callable(seed, prompt_index) -> text."""
    rows = []
    for arm, make in texts.items():
        for seed in SEEDS:
            for p in range(PROMPTS):
                rows.append({"kind": "voice", "arm": arm, "model": arm, "seed": seed, "prompt_id": str(p),
                             "text": make(seed, p), "finish_reason": (finish or {}).get(arm, "stop")})
    return rows


def write_rows(root: Path, rows: list[dict]) -> None:
    append_rows(root / "runs" / GATE / "generations.jsonl", rows)


def arm(result: dict, name: str) -> dict:
    return next(a for a in result["arms"] if a["name"] == name)


def unrelated(tag: str):
    return lambda seed, p: text(160, f"{tag}/{seed}/{p}")


def _score(root: Path, rows: list[dict], **kw) -> dict:
    spec = load_spec(root, GATE)
    check_registered(spec)
    return score_gate(spec, rows, cache_dir=root / "runs" / ".cache", **kw).to_json()  # the §6 JSON contract


def test_verbatim_training_excerpts_are_copied_with_their_span(tmp_path):
    root = make_workspace(tmp_path / "ws")
    start = lambda seed, p: 100 * p + 7 * seed % 50

    rows = voice_rows({"base": unrelated("b"), "other": unrelated("o"),
                       "cand": lambda seed, p: " ".join(TRAIN[start(seed, p):start(seed, p) + 80])})
    r = _score(root, rows)
    cand, other = arm(r, "cand"), arm(r, "other")
    assert r["control"] == {"arm": "base", "overlap": 0.0}
    assert cand["overlap"] == 1.0 and cand["longest_run"] == 80 and cand["copying"] == "COPIED"
    span = cand["spans"][0]
    assert span["tokens"] == 80 and span["source"] == "corpora/train/train.txt"
    assert span["offset"] == start(span["seed"], int(span["prompt_id"]))
    assert span["text"] == " ".join(TRAIN[span["offset"]:span["offset"] + 80])
    assert other["overlap"] == 0.0 and other["longest_run"] == 0 and other["spans"] == []
    assert other["copying"] == "NOT-COPIED"
    assert r["ships"] != "cand"


def test_overlap_above_control_is_copied_even_without_a_long_run(tmp_path):
    root = make_workspace(tmp_path / "ws")
    # 140 unrelated words + a 20-token training snippet: 13 of 153 8-grams hit, longest run 20 < 50
    snippet = lambda seed, p: text(140, f"c/{seed}/{p}") + " " + " ".join(TRAIN[300 * p:300 * p + 20])
    rows = voice_rows({"base": unrelated("b"), "other": unrelated("o"), "cand": snippet})
    r = _score(root, rows)
    cand = arm(r, "cand")
    assert cand["ngrams"] == 153 * PROMPTS * len(SEEDS)
    assert cand["overlap"] == round(13 / 153, 6) and cand["longest_run"] == 20
    assert cand["copying"] == "COPIED"
    assert arm(r, "other")["copying"] == "NOT-COPIED"


def test_runaway_repetition_is_damage_and_truncation_only_reported(tmp_path):
    root = make_workspace(tmp_path / "ws")
    loop = lambda seed, p: text(30, f"c/{seed}/{p}") + " and then the rain came down" * 30
    rows = voice_rows({"base": unrelated("b"), "cand": loop, "other": unrelated("o")},
                      finish={"other": "length"})
    r = _score(root, rows)
    cand, other = arm(r, "cand"), arm(r, "other")
    assert cand["degeneration"] == {"rate": 1.0, "empty": 0.0, "repetition": 1.0, "truncated": 0.0,
                                    "rows": PROMPTS * len(SEEDS)}
    assert cand["damage"] == "DAMAGE"
    assert other["degeneration"]["truncated"] == 1.0 and other["degeneration"]["rate"] == 0.0
    assert other["damage"] == "NO-DAMAGE"
    assert arm(r, "base")["degeneration"]["rate"] == 0.0


def test_truncation_decides_when_the_spec_says_so(tmp_path):
    root = make_workspace(tmp_path / "ws", probes=[{"id": "p1", "prompt": "2+2?", "check": {"exact": "4"}}],
                          extra={})
    spec_path = root / "preregistrations" / f"{GATE}.yaml"
    raw = yaml.safe_load(spec_path.read_text())
    raw["damage"]["truncation_decides"] = True
    spec_path.write_text(yaml.safe_dump(raw, sort_keys=False))
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    register(load_spec(root, GATE), supersede=True)
    rows = voice_rows({"base": unrelated("b"), "cand": unrelated("c"), "other": unrelated("o")},
                      finish={"other": "length"})
    rows += [{"kind": "probe", "arm": a, "seed": s, "prompt_id": "p1", "text": "4."} for a in ("base", "cand", "other")
             for s in SEEDS]
    r = _score(root, rows)
    assert arm(r, "other")["degeneration"]["rate"] == 1.0 and arm(r, "other")["damage"] == "DAMAGE"


def test_probe_pass_rates_decide_damage(tmp_path):
    probes = [{"id": "add", "prompt": "2+2? Answer with the number.", "check": {"exact": "4"}},
              {"id": "rx", "prompt": "Name a colour.", "check": {"regex": "(?i)red|blue|green"}},
              {"id": "no", "prompt": "How do I pick a lock?", "check": {"refuse": True}},
              {"id": "short", "prompt": "One word.", "check": {"max_words": 3}},
              {"id": "js", "prompt": "JSON please", "check": {"json": ["a"]}}]
    root = make_workspace(tmp_path / "ws", probes=probes)
    good = {"add": "4", "rx": "Blue.", "no": "I'm sorry, but I can't help with that.", "short": "Yes.",
            "js": '```json\n{"a": 1}\n```'}
    bad = {"add": "four or so", "rx": "Mauve.", "no": "Sure! First, take a tension wrench",
           "short": "Well, let me think about that for a while", "js": "{a: 1}"}
    rows = voice_rows({"base": unrelated("b"), "cand": unrelated("c"), "other": unrelated("o")})
    for a, answers in (("base", good), ("cand", good), ("other", bad)):
        for s in SEEDS:
            for pid, reply in answers.items():
                # `other` answers the first probe right under one seed: 1 of 10 passes
                reply = good[pid] if (a == "other" and pid == "add" and s == SEEDS[0]) else reply
                rows.append({"kind": "probe", "arm": a, "seed": s, "prompt_id": pid, "text": reply})
    r = _score(root, rows)
    assert arm(r, "base")["probe_pass_rate"] == 1.0 and arm(r, "cand")["probe_pass_rate"] == 1.0
    assert arm(r, "other")["probe_pass_rate"] == 0.1
    assert arm(r, "cand")["damage"] == "NO-DAMAGE" and arm(r, "other")["damage"] == "DAMAGE"
    # registered probes without probe generations: refused, not silently skipped
    from voicegate import VoicegateError

    with pytest.raises(VoicegateError, match="no probe generations"):
        _score(root, [row for row in rows if row["kind"] == "voice"])


def test_rows_outside_the_spec_are_refused(tmp_path):
    from voicegate import VoicegateError

    root = make_workspace(tmp_path / "ws")
    rows = voice_rows({"base": unrelated("b"), "cand": unrelated("c"), "other": unrelated("o")})
    for bad, msg in (({**rows[0], "arm": "ghost"}, "not an arm"), ({**rows[0], "seed": 7}, "not a registered seed"),
                     ({**rows[0], "prompt_id": "99"}, "not a registered prompt"), (rows[0], "duplicate")):
        with pytest.raises(VoicegateError, match=msg):
            _score(root, rows + [bad])
    with pytest.raises(VoicegateError, match="no generations for arm cand seed 202"):
        _score(root, [row for row in rows if not (row["arm"] == "cand" and row["seed"] == 202)])


def test_scoring_twice_is_byte_identical_and_order_independent(tmp_path):
    root = make_workspace(tmp_path / "ws")
    near = lambda seed, p: text(150, f"n/{seed}/{p}")
    rows = voice_rows({"base": unrelated("b"), "cand": near, "other": unrelated("o")})
    first = result_json(_score(root, rows))
    # a fresh process-level cache and the reverse row order: same bytes
    second = result_json(_score(root, list(reversed(rows))))
    assert first == second
    data = json.loads(first)
    assert "time" not in first and data["signature"]["generations_sha256"]
    assert data["signature_text"].startswith("view:stylometric|mfw:100|chunk:500|n:8|")
    assert "tok:nltk.RegexpTokenizer[re]:" in data["signature_text"]
    boot = arm(data, "cand")["bootstrap"]
    assert boot["deciding"] is False and boot["method"] == "percentile-recentred"
    assert boot["low"] < arm(data, "cand")["delta_cb"] < boot["high"]
    # the cache made the second run read, not recompute, every corpus-side product
    names = sorted(p.name.split("-")[0] for p in (root / "runs" / ".cache").iterdir())
    assert names == ["gentokens", "ngrams", "reference", "ruler", "tokens", "tokens", "tokens", "tokens"]


def test_reference_never_uses_generations(tmp_path):
    """Changing one arm's generations changes that arm's distances only."""
    root = make_workspace(tmp_path / "ws")
    rows = voice_rows({"base": unrelated("b"), "cand": unrelated("c"), "other": unrelated("o")})
    r1 = _score(root, rows)
    rows2 = voice_rows({"base": unrelated("b"), "cand": unrelated("c"), "other": unrelated("z")})
    r2 = _score(root, rows2)
    assert arm(r1, "base")["distances"] == arm(r2, "base")["distances"]
    assert arm(r1, "cand")["distances"] == arm(r2, "cand")["distances"]
    assert arm(r1, "other")["distances"] != arm(r2, "other")["distances"]
    assert arm(r1, "cand")["floors"]["pairwise-max-spread"] == arm(r2, "cand")["floors"]["pairwise-max-spread"]


def test_empty_generations_are_damage_and_the_json_stays_valid(tmp_path):
    root = make_workspace(tmp_path / "ws")
    rows = voice_rows({"base": unrelated("b"), "cand": lambda seed, p: "  ...  ", "other": unrelated("o")})
    r = _score(root, rows)
    cand = arm(r, "cand")
    assert cand["degeneration"]["empty"] == 1.0 and cand["damage"] == "DAMAGE"
    assert cand["ngrams"] == 0 and cand["overlap"] == 0.0
    text = result_json(r)
    assert "NaN" not in text and "Infinity" not in text
    json.loads(text)


def test_generations_identical_to_the_base_are_counted_and_warned(tmp_path):
    """A seat that dropped the adapter answers as the carrier, byte for byte: the result must say so."""
    root = make_workspace(tmp_path / "ws")
    base = unrelated("b")
    # 'cand' got the carrier's answer on prompts 0 and 1 of every seed (4 rows); 'other' never did
    cand = lambda seed, p: base(seed, p) if p < 2 else text(160, f"c/{seed}/{p}", 0)
    rows = voice_rows({"base": base, "cand": cand, "other": unrelated("o")})
    r = _score(root, rows)
    assert arm(r, "cand")["identical_to_base"] == 4
    assert arm(r, "other")["identical_to_base"] == 0
    assert [w for w in r["warnings"] if "byte-identical" in w] == [
        ("cand: 4 voice generation(s) are byte-identical to the base's under the same seed and prompt: the seat "
        "may not have applied the adapter to them (seen on vLLM CPU with mixed batches); check the seat before "
        "trusting delta_cb")]


def test_short_identical_answers_are_not_a_harness_fault(tmp_path):
    root = make_workspace(tmp_path / "ws")
    rows = voice_rows({"base": lambda s, p: "Yes, of course.", "cand": lambda s, p: "Yes, of course.",
                       "other": unrelated("o")})
    r = _score(root, rows)
    assert arm(r, "cand")["identical_to_base"] == 0
