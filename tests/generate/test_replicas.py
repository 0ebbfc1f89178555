"""One gate over several replicas of a seat, on stand-in replicas.

What a user relies on: every arm of a (seed, prompt) cell comes from one replica
(read from the rows), exactly one row per (kind, arm, seed, prompt) however the
replicas fare, a replica that is not the same seat refused before any request,
a lost replica's unfinished cells re-run whole elsewhere with nothing lost, and
score refusing a cell whose arms came from different replicas.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from helpers.workspace import cli, gate_spec, make_workspace, manifest, registered_workspace, rows, run_cli

from voicegate.generate._cells import cell_key, plan_cells
from voicegate.generate._schedule import build_schedule
from voicegate.scoring import mixed_cells, part_of, unchecked_parts
from voicegate.seat import StandinSeat
from voicegate.spec._spec import load_spec

GATE = "lv-rep"
SERVED = f"{GATE}-ckpt475"
RUNTIME = f"{GATE}-ckpt925"          # loaded at run time, on every replica
PROMPTS = [f"Write scene {i} of the story, in the author's voice." for i in range(6)]
TOTAL = 3 * 2 * len(PROMPTS)         # arms x seeds x prompts
# The lead (the first replica) answers, per arm, the first canary twice and the second once before any check: it
# claims the canary cells and sends their real rows as two of those answers, in its first chat requests. Every
# other replica asks each arm the first canary once (held to the lead's): its first 3 chat requests.
REFERENCES = 3 * (2 + 1)
VERIFY = 3


def _replicas(stack: ExitStack, n: int, **kw: Any) -> list[StandinSeat]:
    kw.setdefault("token_time", 0.002)
    return [stack.enter_context(StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, **kw)) for _ in range(n)]


def _workspace(tmp_path: Path, seats: list[StandinSeat], *, concurrency: int = 2, in_spec: bool = True) -> Path:
    spec = gate_spec(GATE, url=seats[0].url, concurrency=concurrency)
    if in_spec:
        spec["seat"]["replicas"] = [s.url for s in seats]
    return registered_workspace(tmp_path / "ws", spec, prompts=PROMPTS)


def _cells(found: list[dict[str, Any]]) -> dict[tuple[str, int, str], set[str]]:
    out: dict[tuple[str, int, str], set[str]] = defaultdict(set)
    for r in found:
        out[cell_key(r)].add(r["replica"])
    return out


def _keys(found: list[dict[str, Any]]) -> list[tuple[str, str, int, str]]:
    return [(r["kind"], r["arm"], r["seed"], r["prompt_id"]) for r in found]


def _chats(seat: StandinSeat) -> list[dict[str, Any]]:
    return [e for e in seat.chat_log() if e["status"] == 200]


def _generations(seat: StandinSeat, skip: int = REFERENCES) -> list[dict[str, Any]]:
    """The answers after the integrity references (canary checks are real requests: the log cannot tell)."""
    return _chats(seat)[skip:]


def test_three_replicas_every_cell_on_one_replica_one_row_per_key(tmp_path):
    with ExitStack() as stack:
        seats = _replicas(stack, 3)
        root = _workspace(tmp_path, seats)
        out = cli(root, "generate", GATE, "--quiet")
        assert out.returncode == 0, out.stderr
        found = rows(root, GATE)
        # exactly one row per (kind, arm, seed, prompt)
        assert len(found) == TOTAL and len(set(_keys(found))) == TOTAL
        cells = _cells(found)
        assert len(cells) == 2 * len(PROMPTS)
        assert all(len(where) == 1 for where in cells.values()), cells
        per_replica = Counter(next(iter(w)) for w in cells.values())
        assert set(per_replica) == {s.url for s in seats}, per_replica   # every replica took cells
        for s in seats:
            mine = [r for r in found if r["replica"] == s.url]
            # the rows a replica is named on are exactly the generations it answered
            canaries = [json.loads(x) for x in (root / "runs" / GATE / "canaries.jsonl").read_text().splitlines()]
            # a reference that is a canary cell's real row (real_row) is one of `mine`, no request of its own
            assert len(mine) + sum(c["replica"] == s.url and not c.get("real_row") for c in canaries) == len(_chats(s))
            assert s.peak_in_flight <= 2                                  # each kept at its own concurrency
            # the runtime candidate was loaded there, and unloaded from it afterwards
            loads = [e["path"] for e in s.log if e["path"].endswith("lora_adapter") and e["status"] == 200]
            assert loads == ["/v1/load_lora_adapter", "/v1/unload_lora_adapter"]
            assert s.runtime == {}
        # integrity ran per replica: every replica has its own references for every arm
        canaries = [json.loads(line) for line in (root / "runs" / GATE / "canaries.jsonl").read_text().splitlines()]
        refs = Counter((c["replica"], c["arm"]) for c in canaries if c["phase"] == "reference")
        assert set(refs) == {(s.url, a) for s in seats for a in ("base", "ckpt475", "ckpt925")}
        session = manifest(root, GATE)["sessions"][-1]
        assert [p["url"] for p in session["per_replica"]] == [s.url for s in seats]
        assert sum(p["cells"] for p in session["per_replica"]) == 2 * len(PROMPTS)
        assert all(p["status"] == "ok" and p["tokens_per_s"] for p in session["per_replica"])
        assert "replica" in out.stdout and "cells" in out.stdout


def test_seat_given_several_times_on_the_command_line(tmp_path):
    with ExitStack() as stack:
        seats = _replicas(stack, 2)
        root = _workspace(tmp_path, seats, in_spec=False)   # the spec names one seat; --seat names two
        args = [a for s in seats for a in ("--seat", s.url)]
        out = cli(root, "generate", GATE, "--quiet", *args)
        assert out.returncode == 0, out.stderr
        found = rows(root, GATE)
    assert len(found) == TOTAL and {r["replica"] for r in found} == {s.url for s in seats}
    assert all(len(w) == 1 for w in _cells(found).values())


def test_one_of_three_killed_mid_run_completes_on_two(tmp_path):
    with ExitStack() as stack:
        seats = _replicas(stack, 3)
        victim = seats[1]

        def kill_after_first_generation(s: StandinSeat) -> None:
            if not s.dead and _generations(s, VERIFY):
                s.kill()   # SIGKILL: in-flight requests drop, nothing listens any more

        # With one request in flight per replica, the victim dies holding a cell with one arm stored.
        victim.hooks = {n: kill_after_first_generation for n in range(1, 200)}
        root = _workspace(tmp_path, seats, concurrency=1)
        out = cli(root, "generate", GATE, "--quiet", "--retries", "2", "--retry-budget", "1")
        assert out.returncode == 0, out.stderr
        assert f"replica {victim.url} is unreachable" in out.stderr
        found = rows(root, GATE)
        quarantine = [json.loads(x) for x in (root / "runs" / GATE / "quarantine.jsonl").read_text().splitlines()]
    # nothing duplicated, nothing missing
    assert len(found) == TOTAL and len(set(_keys(found))) == TOTAL
    # no cell mixes replicas among its scored rows
    assert all(len(w) == 1 for w in _cells(found).values())
    assert victim.dead
    # The victim's stored arm of its unfinished cell was kept, in quarantine, and the cell re-run whole elsewhere.
    assert quarantine and all(q["replica"] == victim.url for q in quarantine)
    assert all("re-run whole" in q["quarantined"]["reason"] for q in quarantine)
    survivors = {seats[0].url, seats[2].url}
    for q in quarantine:
        assert _cells(found)[cell_key(q)] <= survivors
    # every victim row left in the run belongs to a cell it finished
    victim_cells = [k for k, w in _cells(found).items() if w == {victim.url}]
    for k in victim_cells:
        assert sum(cell_key(r) == k for r in found) == 3
    status = {p["url"]: p["status"] for p in manifest(root, GATE)["sessions"][-1]["per_replica"]}
    assert status[victim.url] == "unreachable" and status[seats[0].url] == "ok"


def test_every_replica_lost_exits_3_and_a_resume_on_new_replicas_reruns_partial_cells_whole(tmp_path):
    with ExitStack() as stack:
        seats = _replicas(stack, 2)

        def die(s: StandinSeat) -> None:
            if not s.dead and len(_generations(s, REFERENCES if s is seats[0] else VERIFY)) >= 2:
                s.kill()

        for s in seats:
            s.hooks = {n: die for n in range(1, 200)}
        root = _workspace(tmp_path, seats, concurrency=1, in_spec=False)
        args = [a for s in seats for a in ("--seat", s.url)]
        lost = cli(root, "generate", GATE, "--quiet", "--retries", "2", "--retry-budget", "1", *args)
        assert lost.returncode == 3, lost.stderr
        assert "every replica became unreachable" in lost.stderr and "again to resume" in lost.stderr
        assert lost.stderr.count("--seat") >= 2    # the resume hint names every replica
        saved = rows(root, GATE)
        assert 0 < len(saved) < TOTAL
        qpath = root / "runs" / GATE / "quarantine.jsonl"
        # the first replica lost had its unfinished cell moved to the second (its stored arm to quarantine)
        before = qpath.read_text().splitlines() if qpath.exists() else []
        checked = [json.loads(x) for x in (root / "runs" / GATE / "canaries.jsonl").read_text().splitlines()]
        # Fresh replicas (new processes, new URLs, the same seat): partial cells cannot continue there.
        fresh = _replicas(stack, 2)
        args = [a for s in fresh for a in ("--seat", s.url)]
        back = cli(root, "generate", GATE, "--quiet", *args)
        assert back.returncode == 0, back.stderr
        found = rows(root, GATE)
    assert len(found) == TOTAL and len(set(_keys(found))) == TOTAL
    assert all(len(w) == 1 for w in _cells(found).values())
    partial = [k for k, n in Counter(cell_key(r) for r in saved).items() if n < 3]
    for k in partial:
        assert _cells(found)[k] <= {s.url for s in fresh}
    quarantine = qpath.read_text().splitlines()
    assert partial and quarantine[:len(before)] == before
    moved = [json.loads(x) for x in quarantine[len(before):]]
    # ... and so do the rows of a replica that died before its first check (its reference waves carry the canary
    # cells' real rows): they carry no check, so they are redone too.
    unchecked = unchecked_parts(saved, checked)
    assert sorted(_keys(moved)) == sorted(k for r, k in zip(saved, _keys(saved), strict=True)
                                          if cell_key(r) in partial or part_of(r) in unchecked)
    # nothing lost: every stored row is still in the run or kept in quarantine
    kept = {json.dumps(r, sort_keys=True) for r in found} | {
        json.dumps({k: v for k, v in json.loads(x).items() if k != "quarantined"}, sort_keys=True) for x in quarantine}
    assert all(json.dumps(r, sort_keys=True) in kept for r in saved)


def test_a_resume_on_the_same_replicas_finishes_a_partial_cell_where_it_started(tmp_path):
    with ExitStack() as stack:
        seats = _replicas(stack, 2)
        root = _workspace(tmp_path, seats)
        spec = load_spec(root, GATE)
        jobs = build_schedule(spec)
        # A stored half cell from replica 2: its missing arms must go to replica 2, nothing else.
        first = jobs[0]
        row = {"kind": first.kind, "arm": first.arm, "model": first.model, "seed": first.seed,
               "request_seed": first.request_seed, "prompt_id": first.prompt_id, "replica": seats[1].url,
               "seat_url": seats[1].url}
        plan = plan_cells(jobs, [row], [s.url for s in seats])
    assert [c.key for c in plan.pinned[seats[1].url]] == [cell_key(first)]
    assert len(plan.pinned[seats[1].url][0].jobs) == 2 and not plan.orphans
    assert cell_key(first) not in {c.key for c in plan.free}
    gone = plan_cells(jobs, [row], [seats[0].url])
    assert gone.orphans == [row] and cell_key(first) in {c.key for c in gone.free}


def test_a_replica_with_another_adapter_root_is_refused_before_any_request(tmp_path):
    with ExitStack() as stack:
        good = _replicas(stack, 2)
        odd = stack.enter_context(StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475-retrained"}))
        seats = [*good, odd]
        root = _workspace(tmp_path, seats)
        out = cli(root, "generate", GATE, "--quiet")
        assert out.returncode == 2
        line = out.stderr.strip().splitlines()
        assert len(line) == 1 and f"replica {odd.url} is not the same seat" in line[0]
        assert "ckpt475-retrained" in line[0] and "nothing was sent" in line[0]
        for s in seats:
            assert not [e for e in s.log if e["path"] != "/v1/models" and e["path"] != "/version"]
    assert not (root / "runs" / GATE / "generations.jsonl").exists()


def test_a_replica_with_another_vllm_version_is_refused_before_any_request(tmp_path):
    with ExitStack() as stack:
        good = _replicas(stack, 1)
        odd = stack.enter_context(StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, version="0.33.0"))
        root = _workspace(tmp_path, [*good, odd])
        out = cli(root, "generate", GATE, "--quiet")
        assert out.returncode == 2
        assert "0.33.0" in out.stderr and "version" in out.stderr and len(out.stderr.strip().splitlines()) == 1
        assert not [e for e in odd.log + good[0].log if e["path"] == "/v1/chat/completions"]


def test_score_refuses_a_cell_whose_arms_came_from_two_replicas(tmp_path):
    with ExitStack() as stack:
        seats = _replicas(stack, 2)
        root = _workspace(tmp_path, seats)
        assert cli(root, "generate", GATE, "--quiet").returncode == 0
    path = root / "runs" / GATE / "generations.jsonl"
    found = rows(root, GATE)
    other = {seats[0].url: seats[1].url, seats[1].url: seats[0].url}
    found[0]["replica"] = other[found[0]["replica"]]
    path.write_text("".join(json.dumps(r) + "\n" for r in found))
    assert mixed_cells(found)
    code, _, err = run_cli("score", GATE, cwd=root)
    assert code == 2 and "mixes replicas" in err and len(err.strip().splitlines()) == 1
    assert not (root / "gates" / f"{GATE}.md").exists() and not (root / "runs" / GATE / "scores.json").exists()


def test_the_record_and_report_show_cells_and_rows_per_replica(tmp_path):
    with ExitStack() as stack:
        seats = _replicas(stack, 2)
        root = _workspace(tmp_path, seats)
        assert cli(root, "generate", GATE, "--quiet").returncode == 0
    code, out, err = run_cli("score", GATE, "--json", cwd=root)
    assert code == 0, err
    shares = json.loads(out)["replicas"]
    found = rows(root, GATE)
    assert [s["url"] for s in shares] == sorted(s.url for s in seats)
    assert sum(s["rows"] for s in shares) == TOTAL and sum(s["cells"] for s in shares) == 2 * len(PROMPTS)
    for s in shares:
        assert s["rows"] == sum(r["replica"] == s["url"] for r in found) and s["tokens_per_s"] > 0
    record = (root / "gates" / f"{GATE}.md").read_text()
    assert "**Replicas.**" in record
    for s in shares:
        assert f"| `{s['url']}` | {s['cells']} | {s['rows']} |" in record
    code, _, err = run_cli("report", GATE, cwd=root)
    assert code == 0, err
    page = (root / "runs" / GATE / "report.html").read_text()
    assert 'class="replicas"' in page and all(s["url"] in page for s in shares)


def test_seat_replicas_in_the_spec_is_checked(tmp_path):
    spec = gate_spec(GATE)
    spec["seat"]["replicas"] = ["http://127.0.0.1:8001/v1", "http://127.0.0.1:8001/v1/"]
    make_workspace(tmp_path / "ws", spec)
    code, _, err = run_cli("register", GATE, cwd=tmp_path / "ws")
    assert code == 2 and "seat.replicas[1]" in err and "listed twice" in err and len(err.strip().splitlines()) == 1
    spec["seat"]["replicas"] = ["http://127.0.0.1:8001/v1", "ftp://x"]
    make_workspace(tmp_path / "ws2", spec)
    code, _, err = run_cli("register", GATE, cwd=tmp_path / "ws2")
    assert code == 2 and "seat.replicas[1]" in err
    assert not (tmp_path / "ws2" / "preregistrations" / f"{GATE}.registration.json").exists()


def test_isolated_arms_over_replicas_never_share_a_replica(tmp_path):
    with ExitStack() as stack:
        seats = _replicas(stack, 2)
        root = _workspace(tmp_path, seats)
        out = cli(root, "generate", GATE, "--quiet", "--isolate-arms")
        assert out.returncode == 0, out.stderr
        found = rows(root, GATE)
        # waves of one arm on each replica: no request ever met another arm's in flight there
        assert [s.shared_requests for s in seats] == [0, 0]
        assert all(len(_generations(s)) > 0 for s in seats)
    assert len(found) == TOTAL and len(set(_keys(found))) == TOTAL
    assert all(len(w) == 1 for w in _cells(found).values())
    assert all(r["isolated"] for r in found)


def test_a_replica_restart_reloads_the_runtime_candidate_there_only(tmp_path):
    with ExitStack() as stack:
        seats = _replicas(stack, 2)
        restarted = seats[0]

        def restart_once(s: StandinSeat) -> None:
            if not s.restarts and len(_generations(s)) >= 3:
                s.restart()   # `compose up -d`: the runtime-loaded adapter is gone from this replica

        restarted.hooks = {n: restart_once for n in range(1, 200)}
        root = _workspace(tmp_path, seats)
        out = cli(root, "generate", GATE, "--quiet")
        assert out.returncode == 0, out.stderr
        found = rows(root, GATE)
        loads = [[e["path"] for e in s.log if e["path"] == "/v1/load_lora_adapter" and e["status"] == 200]
                 for s in seats]
        assert restarted.restarts == 1
        assert [len(x) for x in loads] == [2, 1]     # loaded on both, reloaded on the restarted one only
        assert all(s.runtime == {} for s in seats)  # and unloaded from each afterwards
    assert len(found) == TOTAL and len(set(_keys(found))) == TOTAL
    assert all(len(w) == 1 for w in _cells(found).values())
    assert manifest(root, GATE)["sessions"][-1]["reloads"] == 1


def test_integrity_is_judged_per_replica_and_only_the_failing_replicas_rows_are_quarantined(tmp_path):
    with ExitStack() as stack:
        good = _replicas(stack, 1)[0]
        bad = stack.enter_context(StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, token_time=0.002,
                                              wrong_weights_every=2))   # serves another arm's weights, often
        root = _workspace(tmp_path, [good, bad], concurrency=3)
        first = cli(root, "generate", GATE, "--quiet", "--canaries", "8")   # unmet with (1/2)^24 at most
        assert first.returncode == 4, first.stderr   # generate's own check failed
        assert "seat integrity FAILED" in first.stdout
        canaries = [json.loads(x) for x in (root / "runs" / GATE / "canaries.jsonl").read_text().splitlines()]
        wrong = {c["replica"] for c in canaries if c.get("status") == "wrong"}
        assert wrong == {bad.url}
        before = rows(root, GATE)
        on_bad = [r for r in before if r["replica"] == bad.url]
        code, _, err = run_cli("score", GATE, cwd=root)
        assert code == 2 and "seat integrity FAILED" in err
        bad.wrong_weights_every = None
        again = cli(root, "generate", GATE, "--quiet", "--isolate-arms")
        assert again.returncode == 0, again.stderr
        quarantine = [json.loads(x) for x in (root / "runs" / GATE / "quarantine.jsonl").read_text().splitlines()]
        found = rows(root, GATE)
    # only the failing replica's rows of that session left the run; the good replica's stayed as they were
    assert sorted(_keys(quarantine)) == sorted(_keys(on_bad))
    assert all(q["replica"] == bad.url for q in quarantine)
    kept = [r for r in before if r["replica"] == good.url]
    assert all(r in found for r in kept)
    assert len(found) == TOTAL and len(set(_keys(found))) == TOTAL
    assert all(len(w) == 1 for w in _cells(found).values())
    code, _, err = run_cli("score", GATE, cwd=root)
    assert code == 0, err
