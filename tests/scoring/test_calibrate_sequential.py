"""`calibrate` of a sequential design: each draw decided look by look as `score` decides a look.

Constructed pilots (`helpers.sequential`): 24 seeds per arm of a fixed design, calibrated with `--looks 3,5` (the
boundaries `register` records for those looks). A candidate far from the base stops at the first look in every
draw; where the candidate and the A-vs-A arm write as the base does, the design rarely passes them; and one
draw's looks, written as a gate's rows and scored, are decided by `score` as the simulation decided them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.sequential import look_rows, sequential_workspace
from helpers.workspace import GATE, carrier_like, run_cli, words, write_rows

PILOT_SEEDS = 24
ALPHA = 0.01
TOLERANCE = 0.01  # three binomial SEs at α over 1,000 draws (0.0094)


def _long(tag: str, style: int) -> Any:  # 400 words a prompt: per-seed distances tight around the arm's mean
    return lambda seed, p: " ".join(words(400, f"{tag}/{seed}/{p}", style))


NULL = {"base": carrier_like("b"), "cand": carrier_like("c"), "other": carrier_like("o"), "aa": carrier_like("a")}


def _pilot(root: Path, texts: dict[str, Any]) -> Path:
    root = sequential_workspace(root, looks=[], seeds=PILOT_SEEDS, a_vs_a=True)
    write_rows(root, look_rows(list(range(1, PILOT_SEEDS + 1)), texts))
    return root


@pytest.fixture(scope="module")
def null(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The A-vs-A-like pilot calibrated in this process: 1,000 draws with the looks 3, 5."""
    from voicegate.gate import calibrate

    root = _pilot(tmp_path_factory.mktemp("null") / "ws", NULL)
    return calibrate(root, GATE, seeds=3, draws=1000, looks=[3, 5], write=False).sequential


def test_a_far_candidate_stops_at_the_first_look_in_every_draw(tmp_path: Path) -> None:
    far = {**NULL, "base": _long("b", 1), "cand": _long("c", 0)}
    root = _pilot(tmp_path / "ws", far)
    run = run_cli("calibrate", GATE, "--seeds", "3", "--looks", "3,5", "--draws", "200", "--json", "-C", root)
    assert run.code == 0, run.stderr
    design = json.loads(run.stdout)["sequential"]
    assert [look["seeds"] for look in design["looks"]] == [3, 5] and design["registered"] is False
    cand = design["candidates"]["cand"]
    assert cand["would_ship"]["count"] == 200 and cand["would_ship"]["share"] == 1.0
    assert cand["expected_seeds"] == 3.0
    assert [s["count"] for s in cand["stops"]] == [200, 0]


def test_a_vs_a_like_pilot_passes_at_most_alpha_and_runs_on_or_stops_for_futility(null: Any) -> None:
    aa = next(a for a in null.a_vs_a if a.name == "aa")
    cand = next(c for c in null.candidates if c.name == "cand")
    for arm in (aa, cand):
        assert arm.passes.draws == 1000 and arm.passes.share <= ALPHA + TOLERANCE, (arm.name, arm.passes)
        said = [d[arm.name] for d in null.decided]
        # no early passes to speak of: a draw either fails for futility at the first look or runs to the second
        early = sum(1 for verdict, look, _ in said if verdict == "PASS" and look == 1)
        assert early <= 0.01 * len(said), (arm.name, early)
        assert arm.stops[1].share > 0.2 and 3 < arm.expected_seeds < 5


def test_a_draws_looks_are_decided_as_score_decides_them(null: Any, tmp_path: Path) -> None:
    """Draws replayed as gates: the draw's seeds of each arm written as seeds 1..n of a gate registering the same
    looks, then scored: `score` gives each candidate the decision, look and p-value the simulation gave it."""
    to_second = next(i for i, d in enumerate(null.decided) if d["cand"][1] == 2)
    at_first = next(i for i, d in enumerate(null.decided) if d["cand"][:2] == ("FAIL", 1))
    for i, seeds in ((to_second, 5), (at_first, 3)):
        root = sequential_workspace(tmp_path / f"draw{i}")
        write_rows(root, [{"kind": "voice", "arm": arm, "model": arm, "seed": j + 1, "prompt_id": str(p),
                           "text": NULL[arm](null.drawn[arm][i][j], p), "finish_reason": "stop"}
                          for arm in ("base", "cand", "other") for j in range(seeds) for p in range(6)])
        scored = run_cli("score", GATE, "--json", "-C", root)
        assert scored.code == 0, scored.stderr
        look = json.loads(scored.stdout)["look"]
        scored_at = 1 if seeds == 3 else 2
        for arm in ("cand", "other"):
            verdict, index, p = null.decided[i][arm]
            said = look["candidates"][arm]
            if index > scored_at:  # the draw decided it at a later look: this one leaves it open
                assert (said["decision"], said["look"]) == ("CONTINUE", scored_at), (i, arm)
                continue
            assert (said["decision"], said["look"]) == (verdict, index), (i, arm)
            assert said["p"] == pytest.approx(p, rel=1e-9, abs=1e-12), (i, arm)


@pytest.mark.parametrize("looks, message", [
    ("5", "--looks 5: must list at least two looks (one look is the fixed design)"),
    ("5,3", "--looks 5,3: must be strictly ascending"),
    ("1,3", "--looks 1,3: the first look needs at least 2 seeds per arm (a t test has no variance with one)"),
    ("3,x", "--looks 3,x: seeds per arm at each look, comma-separated (3,5,8)"),
    ("3,25", "--looks 3,25: the last look takes 25 seeds per arm; arm aa has 24 stored"),
])
def test_looks_that_cannot_be_a_design_of_the_pilot_are_refused(tmp_path: Path, looks: str, message: str) -> None:
    from helpers.workspace import tree_snapshot

    root = _pilot(tmp_path / "ws", NULL)
    before = tree_snapshot(root)
    run = run_cli("calibrate", GATE, "--seeds", "3", "--looks", looks, "-C", root)
    assert (run.code, run.stdout) == (2, "") and run.stderr == f"voicegate: {message}\n"
    assert tree_snapshot(root) == before


def test_looks_on_a_pilot_without_a_t_rule_are_refused(tmp_path: Path) -> None:
    from helpers.workspace import tree_snapshot

    root = sequential_workspace(tmp_path / "ws", rule="pairwise-max-spread", looks=[], seeds=PILOT_SEEDS)
    write_rows(root, look_rows(list(range(1, PILOT_SEEDS + 1))))
    before = tree_snapshot(root)
    run = run_cli("calibrate", GATE, "--seeds", "3", "--looks", "3,5", "-C", root)
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == ("voicegate: --looks 3,5: a sequential design needs a t rule (welch-t, welch-t-min-effect), "
                          "and lv-test decides by pairwise-max-spread\n")
    assert tree_snapshot(root) == before
