"""Issue 8: `voicegate seat simulate` dry-runs a spec on the stand-in seat and writes nothing in the workspace."""

from __future__ import annotations

from pathlib import Path

from _workspace import make_workspace, run_cli, tree_snapshot


def test_simulate_counts_without_writing(tmp_path: Path) -> None:
    make_workspace(tmp_path)  # base + 2 candidates, 2 seeds, 3 prompts; not registered
    before = tree_snapshot(tmp_path)
    done = run_cli("seat", "simulate", "lv-test", cwd=tmp_path)
    assert done.code == 0, done.stderr
    assert "18 requests (18 voice + 0 probe)" in done.stdout
    for arm in ("base", "ckpt475", "ckpt925"):
        assert f"  {arm}: 6 generations" in done.stdout
    assert "runs/lv-test/generations.jsonl  (generate)" in done.stdout
    assert "gates/lv-test.md" in done.stdout
    assert "runtime-loaded" in done.stdout
    # the design it would register, as `register` states it (issue 31): seeds, words per pool, power if known
    assert "design: 2 seeds per arm, ~" in done.stdout and "words per (arm, seed) pool" in done.stdout
    assert "no calibrate result on file for carrier" in done.stdout
    assert tree_snapshot(tmp_path) == before
    assert not (tmp_path / "preregistrations" / "lv-test.registration.json").exists()


def test_simulate_refuses_a_bad_spec(tmp_path: Path) -> None:
    make_workspace(tmp_path)
    (tmp_path / "prompts" / "beats.txt").write_text("\n")
    done = run_cli("seat", "simulate", "lv-test", cwd=tmp_path)
    assert done.code == 2 and "no non-empty prompt" in done.stderr


def test_simulate_a_spec_whose_corpora_sit_beside_the_workspace(tmp_path: Path) -> None:
    # the tutorial's layout: corpora in ../shared/..., the README in the workspace's adapters/ folder
    import copy

    from _workspace import BACK, HELD, TRAIN, base_spec

    shared = tmp_path / "shared"
    for rel, text in (("held/h.txt", HELD), ("train/t.txt", TRAIN), ("back/b.txt", BACK)):
        (shared / rel).parent.mkdir(parents=True, exist_ok=True)
        (shared / rel).write_text(text, encoding="utf-8")
    spec = copy.deepcopy(base_spec())
    spec["corpora"] = {"heldout": ["../shared/held/*.txt"], "training": ["../shared/train/t.txt"],
                       "background": ["../shared/back/*.txt"]}
    spec["artifacts"]["readme"] = "adapters/lv-test/README.md"
    root = tmp_path / "ws"
    make_workspace(root, spec, corpora={})
    before = tree_snapshot(root)
    done = run_cli("seat", "simulate", "lv-test", cwd=root)
    assert done.code == 0, done.stderr
    assert "18 requests (18 voice + 0 probe)" in done.stdout
    assert "adapters/lv-test/README.md  (score, amend, ship)" in done.stdout
    assert tree_snapshot(root) == before


def test_simulate_is_linear_in_prompts_and_quick_at_10000(tmp_path: Path) -> None:
    """Issue 25, finding 10: 10,000 prompts were still running after 300 s (every request a round trip).

    The counts cover the whole schedule; the real path runs on a fixed sample of prompts, so the
    run's size does not grow with the spec's (the timing ratio is in benchmarks/bench_simulate.py).
    """
    import time

    from voicegate.generate._simulate import SAMPLE_PROMPTS

    prompts = [f"Write about the {i}th morning on the moor." for i in range(10_000)]
    make_workspace(tmp_path, prompts=prompts)  # base + 2 candidates, 2 seeds
    before = tree_snapshot(tmp_path)
    t0 = time.monotonic()
    done = run_cli("seat", "simulate", "lv-test", cwd=tmp_path)
    took = time.monotonic() - t0
    assert done.code == 0, done.stderr
    assert "60000 requests (60000 voice + 0 probe) scheduled" in done.stdout
    ran = SAMPLE_PROMPTS * 3 * 2
    assert f"the real path ran {ran} of them (the first {SAMPLE_PROMPTS} of 10,000 prompts" in done.stdout
    for arm in ("base", "ckpt475", "ckpt925"):
        assert f"  {arm}: 20000 generations" in done.stdout
    assert took < 120, took  # generous: a shared 2-core box; it takes seconds
    assert tree_snapshot(tmp_path) == before
