"""score_gate on constructed workspaces: copying, damage, determinism, the embedding cache.

The constructed workspace (a git work tree with a registered spec over small constructed corpora:
random words from a fixed vocabulary, seeded, so no two texts share an 8-gram by chance) is
`_workspace.scoring_workspace`, which the other scoring tests use too.
"""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml
from helpers.workspace import GATE, SEEDS, arm, result_json, text, unrelated, voice_rows
from helpers.workspace import N_PROMPTS as PROMPTS
from helpers.workspace import TRAIN_WORDS as TRAIN
from helpers.workspace import score as _score
from helpers.workspace import scoring_workspace as make_workspace

from voicegate.spec._registration import register
from voicegate.spec._spec import load_spec


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
    assert "|tok:re:nfkc-casefold-letters-apostrophe@2|" in data["signature_text"]
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
