"""`generate` under a registered sequential design makes one look's seeds at a time, so `score` decides there.

It makes the next look only after a score at this look decided nothing (CONTINUE); a look stored and not scored,
or a design a score decided (PASS or FAIL: final), makes nothing, writes nothing and asks no seat: exit 0, one line
naming the look. The decision is read from the gate record, so it holds after the run directory is deleted too.
The seat answers each arm with constructed texts (by request seed and prompt), chosen so that look 1 continues,
passes or stops every candidate for futility.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.sequential import TEXTS, _mixed, sequential_workspace
from helpers.workspace import GATE, carrier_like, rows, run_cli, tree_snapshot

from voicegate.seat import StandinSeat

MODELS = {"base": "base", "lv-test-cand": "cand", "lv-test-other": "other"}
RATES = ("error rates: false pass ≤ α 0.01 overall across looks 3, 5 (the sequential design's, simulated at "
         "register), design power not simulated")


def _seat(texts: dict[str, Any]) -> StandinSeat:
    """A seat that answers each arm's (seed, prompt k) with `texts[arm](seed, k)`."""
    def answer(arm: str) -> Callable[[str, int, str, int], tuple[str, str]]:
        return lambda model, seed, prompt, max_tokens: (texts[arm](seed, int(prompt.split()[-1])), "stop")

    return StandinSeat(base="base", base_root="/models/base", slots=8,
                       adapters={m: f"/adapters/{m}" for m in MODELS if m != "base"},
                       generators={m: answer(arm) for m, arm in MODELS.items()})


def _generate(root: Path, seat: StandinSeat, *more: str) -> Any:
    done = run_cli("generate", GATE, "-C", root, "--seat", seat.url, "--quiet", *more)
    assert done.code == 0, done.stderr
    return done


def _score(root: Path) -> str:
    done = run_cli("score", GATE, "-C", root, "--quiet")
    assert done.code == 0, done.stderr
    return done.stdout


def _seeds(root: Path) -> Counter[int]:
    return Counter(r["seed"] for r in rows(root, GATE))


def _stops(root: Path, line: str) -> dict[str, Any]:
    """`generate` (no seat listening: it asks none) exits 0 saying `line` alone and writes no byte; returns its
    --json document."""
    before = tree_snapshot(root)
    done = run_cli("generate", GATE, "-C", root, "--seat", "http://127.0.0.1:9/v1", "--quiet")
    assert (done.code, done.stdout, done.stderr) == (0, line + "\n", "")
    document = run_cli("generate", GATE, "-C", root, "--seat", "http://127.0.0.1:9/v1", "--json")
    assert document.code == 0 and document.stderr == "", document.stderr
    assert tree_snapshot(root) == before
    return dict(json.loads(document.stdout))


def test_the_next_look_is_made_only_after_a_score_at_this_look_continues(tmp_path: Path) -> None:
    root = sequential_workspace(tmp_path / "ws")
    with _seat(TEXTS) as seat:
        _generate(root, seat)
    assert _seeds(root) == {1: 18, 2: 18, 3: 18}  # 3 arms x 6 prompts a seed
    doc = _stops(root, f"{GATE}: nothing to generate yet: look 1 of 2 (3 seeds) is stored and not scored; run "
                       f"`voicegate score {GATE}` to decide at it (look 2, 5 seeds, is made only after a look that "
                       "decides nothing)")
    assert (doc["generated"], doc["total"], doc["stored"]) == (0, 54, 54)
    assert doc["look"] == {"index": 1, "of": 2, "seeds": 3, "decision": None, "message": doc["look"]["message"]}
    assert _score(root) == (f"{GATE}: ships: none (sequential design, look 1 of 2 (3 seeds): CONTINUE — nothing ships "
                            f"yet; continue to look 2 (5 seeds)); {RATES}\n")
    with _seat(TEXTS) as seat:
        made = _generate(root, seat, "--json")
    assert json.loads(made.stdout)["look"] is None
    assert _seeds(root) == {s: 18 for s in (1, 2, 3, 4, 5)}


@pytest.mark.parametrize(("rule", "texts", "said", "then"), [
    ("welch-t-min-effect", {"base": carrier_like("b"), "cand": _mixed("c", 80), "other": carrier_like("o")},
     "PASS — cand ships", f"`voicegate ship {GATE} cand --reason TEXT` records a shipping decision"),
    ("welch-t", {"base": _mixed("b", 40), "cand": carrier_like("c"), "other": carrier_like("o")},
     "FAIL for futility — nothing ships", "more seeds are a new registration"),
], ids=["pass", "futility"])
def test_a_design_decided_at_a_look_makes_nothing_more_even_with_its_run_data_deleted(
        tmp_path: Path, rule: str, texts: dict[str, Any], said: str, then: str) -> None:
    root = sequential_workspace(tmp_path / "ws", rule=rule, artifacts=True)
    with _seat(texts) as seat:
        _generate(root, seat)
    assert _score(root).startswith(f"{GATE}: ships: {'cand' if 'PASS' in said else 'none'} (sequential design, "
                                   f"look 1 of 2 (3 seeds): {said}); ")
    line = (f"{GATE}: nothing to generate: its registered sequential design decided at look 1 of 2 (3 seeds): {said}; "
            f"a decision is final, so no more seeds are made ({then}; `voicegate report {GATE}` shows it)")
    doc = _stops(root, line)
    assert doc["look"] == {"index": 1, "of": 2, "seeds": 3, "decision": said.split()[0], "message": line}
    assert (doc["generated"], doc["total"], doc["stored"]) == (0, 54, 54)
    # no amendment can reopen it (a sequential design's rule is fixed), so generate says the same after one is tried
    assert run_cli("amend", GATE, "--rule", "pairwise-max-spread", "--reason", "reopen the look", "-C", root).code == 2
    _stops(root, line)
    # the decision is the record's: with runs/ gone, generate neither makes look 1 again nor creates runs/
    shutil.rmtree(root / "runs")
    assert _stops(root, line)["stored"] == 0
    assert not (root / "runs").exists()


@pytest.mark.parametrize("attack", ["edit the decision", "cut the record back", "delete the record"])
def test_a_record_changed_by_hand_after_a_decision_buys_no_seeds(tmp_path: Path, attack: str) -> None:
    """The decision is read from the record, so a record that does not verify is refused before anything is made:
    a PASS edited to read CONTINUE, a record cut back or deleted would otherwise make the next look's seeds."""
    texts = {"base": carrier_like("b"), "cand": _mixed("c", 80), "other": carrier_like("o")}
    root = sequential_workspace(tmp_path / "ws", rule="welch-t-min-effect", artifacts=True)
    with _seat(texts) as seat:
        _generate(root, seat)
    assert "PASS — cand ships" in _score(root)
    record = root / "gates" / f"{GATE}.md"
    text = record.read_text(encoding="utf-8")
    if attack == "edit the decision":
        record.write_text(text.replace("PASS — cand ships", "CONTINUE — nothing ships"), encoding="utf-8")
        why = "entry 1 was edited: the bytes before its marker changed, in the text before entry 1 or entry 1 itself"
    elif attack == "cut the record back":
        record.write_text(text[: len(text) // 3], encoding="utf-8")
        why = "entry 1 (written by `score` at "
    else:
        record.unlink()
        why = "the file is gone, but the run's ledger lists 1 entry written to it"
    before = tree_snapshot(root)
    with _seat(texts) as seat:
        done = run_cli("generate", GATE, "-C", root, "--seat", seat.url, "--quiet")
        asked = seat.chat_log()
    assert done.code == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"voicegate: gates/{GATE}.md: {why}")
    assert done.stderr.endswith("; generate reads the sequential design's decisions from it "
                                f"(`voicegate verify {GATE}` says what); nothing made\n")
    assert asked == [] and tree_snapshot(root) == before
