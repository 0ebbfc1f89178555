"""`voicegate seat simulate` dry-runs a spec on the stand-in seat and writes nothing in the workspace."""

from __future__ import annotations

import re
import socket
import tempfile
from pathlib import Path

import pytest
import yaml
from helpers.workspace import make_workspace, run_cli, tree_snapshot


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
    # the design it would register, as `register` states it: seeds, words per pool, power if known
    assert "design: 2 seeds per arm, ~" in done.stdout and "words per (arm, seed) pool" in done.stdout
    assert "design: power unknown: no calibrate result on file for Test Author on carrier" in done.stdout
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

    from helpers.workspace import BACK, HELD, TRAIN, base_spec

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
    """10,000 prompts were still running after 300 s (every request a round trip).

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


# -- every spec `register` accepts, the user's paths, a measured estimate ------------------


def _outside_spec(tmp_path: Path, variant: str) -> tuple[Path, dict]:
    """A workspace whose spec names files outside it in each form `register` accepts (returns root, spec)."""
    import copy

    from helpers.workspace import BACK, HELD, PROBES, TRAIN, base_spec

    shared = tmp_path / "shared"
    # another author's words, not a near-copy of the held-out text (register refuses one)
    emily = ("Cold in the earth, and the deep snow piled above thee, far removed, cold in the dreary grave; "
             "have I forgot, my only love, to love thee, severed at last by time's all-severing wave? ") * 6
    texts = {"held/h.txt": HELD, "train/t.txt": TRAIN, "back/b.txt": BACK, "prompts.txt": "Write about the moor.\n"
             "Write about a letter.\nWrite about rain.\n", "probes.yaml": yaml.safe_dump(PROBES, sort_keys=False),
             "imp/anne/a.txt": BACK.replace("Pickwick", "Weston"), "imp/emily/e.txt": emily}
    for rel, text in texts.items():
        (shared / rel).parent.mkdir(parents=True, exist_ok=True)
        (shared / rel).write_text(text, encoding="utf-8")
    spec = copy.deepcopy(base_spec())
    spec["artifacts"] = {"record": "gates/lv-test.md"}
    if variant == "relative":   # single-string globs, impostors as a mapping of a string and a list, ../ files
        spec["prompts"] = "../shared/prompts.txt"
        spec["corpora"] = {"heldout": "../shared/held/*.txt", "training": ["../shared/train/t.txt"],
                           "background": "../shared/back/*.txt",
                           "impostors": {"Anne Weston": "../shared/imp/anne/*.txt",
                                         "Emily Heath": ["../shared/imp/emily/e.txt"]}}
        spec["damage"] = {"probes": "../shared/probes.yaml", "tolerance": 0.05}
    elif variant == "absolute":   # absolute paths, and a path that climbs out through a folder of the workspace
        spec["prompts"] = str(shared / "prompts.txt")
        spec["corpora"] = {"heldout": [str(shared / "held" / "*.txt")], "training": "corpora/../../shared/train/t.txt",
                           "background": [str(shared / "back" / "b.txt")],
                           "impostors": {"Anne Weston": str(shared / "imp" / "anne" / "a.txt")}}
    else:   # an impostor glob outside the workspace that matches nothing
        spec["corpora"]["impostors"] = {"Anne Weston": "../shared/imp/nobody/*.txt"}
    root = tmp_path / "ws"
    make_workspace(root, spec, corpora=None if variant == "missing" else {"corpora/README": "outside\n"})
    return root, spec


@pytest.mark.parametrize("variant", ["relative", "absolute"])
def test_simulate_accepts_every_spec_register_accepts(tmp_path: Path, variant: str) -> None:
    """It rejected specs whose impostors (a mapping) or a single-string glob sit outside the workspace."""
    root, _ = _outside_spec(tmp_path, variant)
    before = tree_snapshot(root)
    simulated = run_cli("seat", "simulate", "lv-test", "--seat", f"http://127.0.0.1:{_closed_port()}/v1", cwd=root)
    assert simulated.code == 0, simulated.stderr
    assert tree_snapshot(root) == before
    assert "18 requests (18 voice + 0 probe)" in simulated.stdout or "probe)" in simulated.stdout
    registered = run_cli("register", "lv-test", cwd=root)
    assert registered.code == 0, registered.stderr


def test_simulate_and_register_refuse_alike_naming_the_users_path(tmp_path: Path) -> None:
    root, _ = _outside_spec(tmp_path, "missing")
    simulated = run_cli("seat", "simulate", "lv-test", cwd=root)
    registered = run_cli("register", "lv-test", cwd=root)
    assert simulated.code == registered.code == 2
    assert simulated.stderr == registered.stderr
    assert simulated.stderr.startswith(f"voicegate: {root}/preregistrations/lv-test.yaml: ")
    assert "'../shared/imp/nobody/*.txt' matches no file" in simulated.stderr


def test_a_refusal_in_the_scratch_copy_names_the_users_folder(tmp_path: Path) -> None:
    from voicegate._errors import VoicegateError
    from voicegate.generate._simulate import _users_paths

    scratch = Path(tempfile.mkdtemp(prefix="voicegate-simulate-", dir=tmp_path))
    with pytest.raises(VoicegateError) as refused, _users_paths(scratch, Path("/home/you/work")):
        raise VoicegateError(f"{scratch}/bronte-gate/preregistrations/lv-x.yaml: artifacts.record: bad")
    assert str(refused.value) == "/home/you/work/bronte-gate/preregistrations/lv-x.yaml: artifacts.record: bad"


def test_the_estimate_is_measured_on_the_seat_it_reaches_or_names_its_constant(tmp_path: Path) -> None:
    """It used the fleet GPU seat's 108.2 tok/s, whatever seat the gate would run on (the CPU seat ran 42-48)."""
    from helpers.workspace import base_spec

    from voicegate.seat import StandinSeat

    make_workspace(tmp_path)
    closed = f"http://127.0.0.1:{_closed_port()}/v1"
    done = run_cli("seat", "simulate", "lv-test", "--seat", closed, cwd=tmp_path)
    assert done.code == 0, done.stderr
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("  on a real seat: "))
    assert re.fullmatch(r"  on a real seat: roughly \d+ s at 108\.2 tok/s per sequence in "
                        r"flight, a constant, the fleet GPU seat's LoRA decode speed \(docs/design\.md §5\): "
                        r"the seat at "
                        + re.escape(closed) + r" did not answer a probe \(.*connection refused.*\)", line), line
    # 0.02 s per token: about 50 tok/s a sequence. The seat answers 2 at a time, the run keeps 8 in flight: the
    # throughput is about 100 tok/s, not 8 x 50 (one answer's speed times the concurrency said a quarter of it).
    spec = base_spec()
    del spec["arms"][1]["adapter_path"]   # ckpt475 served by the seat, ckpt925 loaded at run time
    make_workspace(tmp_path, spec)
    with StandinSeat(token_time=0.02, slots=2, adapters={"lv-test-ckpt475": "/adapters/lv-test-ckpt475"}) as seat:
        done = run_cli("seat", "simulate", "lv-test", cwd=tmp_path, env={"VOICEGATE_SEAT_URL": seat.url})
        probes = [e for e in seat.chat_log() if e["status"] == 200]
    assert done.code == 0, done.stderr
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("  on a real seat: "))
    m = re.fullmatch(r"  on a real seat: roughly (\d+) s at ([\d.]+) tok/s with 8 in "
                     r"flight, measured on " + re.escape(seat.url) + r" just now \(([\d,]+) tokens in ([\d.]+) s, 8 "
                     r"answers at once of voices-base, lv-test-ckpt475\)", line)
    assert m, line
    # the base and the candidate the seat serves, mixed as a run sends them; ckpt925 is loaded at run time
    assert sorted(p["model"] for p in probes) == ["lv-test-ckpt475"] * 4 + ["voices-base"] * 4
    assert 70 < float(m[2]) < 110, line   # the seat's two slots, not 8 x 50 and not the constant
    parts = done.stdout.splitlines()[done.stdout.splitlines().index(line) + 1]
    generations = re.match(r"    = generations ~([\d.]+) s \(18, ~([\d,]+) completion tokens\) \+ ", parts)
    assert generations, parts
    # the generations at the throughput the seat gave at the run's 8; the rest is what the run sends beside them
    assert float(generations[1]) == pytest.approx(int(generations[2].replace(",", "")) / float(m[2]), abs=0.051)

    # Arms isolated: a wave of 8 per model, a model at a time, as the run sends them.
    spec["generation"] = {"isolate_arms": True}
    make_workspace(tmp_path, spec)
    with StandinSeat(token_time=0.02, slots=2, adapters={"lv-test-ckpt475": "/adapters/lv-test-ckpt475"}) as seat:
        done = run_cli("seat", "simulate", "lv-test", cwd=tmp_path, env={"VOICEGATE_SEAT_URL": seat.url})
        probes = [e for e in seat.chat_log() if e["status"] == 200]
    assert done.code == 0, done.stderr
    assert [p["model"] for p in probes] == ["voices-base"] * 8 + ["lv-test-ckpt475"] * 8
    assert "8 answers each of voices-base, lv-test-ckpt475, a model at a time)" in done.stdout


def test_one_in_flight_is_one_answer_each_in_turn_and_the_constant_scales_per_sequence(tmp_path: Path) -> None:
    from helpers.workspace import base_spec

    from voicegate.generate._estimate import constant
    from voicegate.seat import StandinSeat

    assert constant("why").estimate_s(1082, 10) == 1082 / (108.2 * 10)   # per sequence in flight, as it says
    spec = base_spec()
    spec["seat"]["concurrency"] = 1
    make_workspace(tmp_path, spec)
    with StandinSeat(token_time=0.02) as seat:
        done = run_cli("seat", "simulate", "lv-test", cwd=tmp_path, env={"VOICEGATE_SEAT_URL": seat.url})
    assert done.code == 0, done.stderr
    assert re.search(r"tok/s per sequence in flight, measured on .* \([\d,]+ tokens in [\d.]+ s, one answer each of "
                     r"voices-base\)", done.stdout), done.stdout
