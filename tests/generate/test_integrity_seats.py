"""Seats that canary-reproduction@2 called "holds" while serving wrong weights, on the stand-in.

- a seat right only on repeats (a response cache in front of a mixing seat): ``repeats_right``;
- a seat consistently wrong from the start (one stale adapter answering every arm): ``impostors``;
- a fault tied to cells (every even request seed): ``even_seeds_only``.

Each must end FAILED or NOT CHECKED, with `score` refusing to decide. Under @2 the first two held
(measured: 9/9 checks right on each), and the third held whenever both canary cells had odd seeds.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from helpers.workspace import cli, gate_spec, manifest, registered_workspace, rows, run_cli

from voicegate.generate import _session
from voicegate.generate._canaries import choose_canaries
from voicegate.generate._generate import generate
from voicegate.scoring import CanaryParams, attribute, calibrate, detection_floor
from voicegate.seat import StandinSeat
from voicegate.seat._standin import default_text
from voicegate.spec._spec import load_spec

GATE = "lv-s35"
SERVED = f"{GATE}-ckpt475"
RUNTIME = f"{GATE}-ckpt925"
SEEDS = [101, 202, 303, 404]


def _run(tmp_path: Path, *, isolate: bool = False, **faults: object) -> tuple[Path, object, StandinSeat]:
    with StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, token_time=0.0005, slots=8, **faults) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=8, seeds=SEEDS))
        done = cli(root, "generate", GATE, "--quiet", *(["--isolate-arms"] if isolate else []))
    return root, done, seat


def _checks(root: Path) -> list[dict]:
    lines = (root / "runs" / GATE / "canaries.jsonl").read_text().splitlines()
    return [c for c in map(json.loads, lines) if c["phase"] == "check"]


def _refused(root: Path, gate: str = GATE) -> str:
    out = run_cli("score", gate, cwd=root)
    assert out.code == 2, (out.stdout[-400:], out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "refusing to decide: seat integrity" in lines[0], out.stderr
    assert not (root / "runs" / gate / "scores.json").exists()
    return lines[0]


# -- build item 1: checks a seat cannot tell from first asks ---------------------------------------


def test_a_prefix_answer_reproduces_its_reference_and_another_models_does_not() -> None:
    """Seeded sampling: a shorter max_tokens answers the reference's prefix; compared cut, it reproduces it."""
    p = "Write scene 3 of the story."
    refs = {m: [default_text(m, 77, p, 60)[0]] * 2 for m in ("base", "x")}
    params = CanaryParams()
    cal = calibrate({"k0": refs}, ["base", "x"], params, {"base": "voices-base", "x": "lv-x"})
    short = default_text("base", 77, p, 12)[0]
    assert short.split() == refs["base"][0].split()[:12]
    # Whole, the prefix is far from its reference (under the threshold); cut, it is the reference.
    assert attribute(short, "base", refs, cal, params).status != "right"
    found = attribute(short, "base", refs, cal, params, prefix=True)
    assert found.status == "right" and found.similarities["base"] == 1.0
    other = attribute(default_text("x", 77, p, 12)[0], "base", refs, cal, params, prefix=True)
    assert (other.status, other.answered_as) == ("wrong", "x")


def test_a_seat_right_only_on_repeats_fails(tmp_path: Path) -> None:
    """First asks answered with another arm's weights, repeats right, the reference waves spared: FAILED.

    Under @2 every check was a repeat of a reference: 9/9 right, HOLDS, with 30 of 57 answers wrong (arms
    isolated too: benchmarks/bench_integrity.py "repeats right, isolated", 20/20 detected).
    """
    # The reference waves spared: arms mixed, each wave of 4 references is filled to the concurrency (8) with
    # its arm's own real requests: 24 requests.
    root, done, seat = _run(tmp_path, repeats_right=True, faults_from=24)
    assert seat.wrong_served >= 10
    assert done.returncode == 4, done.stdout + done.stderr
    checks = sorted(_checks(root), key=lambda c: c["time"])
    # A canary check (a shorter max_tokens: a first ask to any cache) meets the fault; one is right only
    # when an earlier check drew the very same request (a repeat).
    seen: set[tuple] = set()
    for c in checks:
        asked = (c["arm"], c["cell"][2], c["seed"], c["sampling"]["max_tokens"])
        if c["check"] == "canary":
            assert (c["status"] == "right") == (asked in seen), c
            seen.add(asked)
    # A re-ask is a repeat (answered right): it reproduces the row the seat first gave only when that row was
    # right too (a spared request of the reference waves, or a canary cell's row: a repeat of its reference).
    spec = load_spec(root, GATE)
    texts = {p.id: p.text for p in spec.prompts}
    for c in checks:
        if c["check"] == "reask":
            right = default_text(c["model"], c["seed"], texts[c["prompt_id"]], spec.sampling.max_tokens)[0]
            assert (c["status"] == "right") == (c["against"][c["arm"]] == right), c
    assert manifest(root, GATE)["sessions"][0]["integrity"]["status"] == "failed"
    assert "FAILED" in _refused(root)


# -- build item 2: an identity the seat does not control ---------------------------------------------


def test_calibration_refuses_arms_of_different_models_that_answer_alike() -> None:
    params = CanaryParams()
    text = "The moor was grey and the wind rose over the hills all night long."
    refs = {"k0": {"base": [text] * 2, "x": [text] * 2}, "k1": {"base": ["a b c d e f g h"] * 2,
                                                                    "x": ["a b c d e f g h"] * 2}}
    stale = calibrate(refs, ["base", "x"], params, {"base": "voices-base", "x": "lv-x"})
    assert stale.problem is not None and "arms base and x" in stale.problem and stale.threshold is None
    # An A-vs-A arm asks the base's own model: alike by construction, not a problem.
    assert calibrate(refs, ["base", "x"], params, {"base": "voices-base", "x": "voices-base"}).problem is None
    # Alike on one canary only: the pair is still told apart on the other.
    refs["k1"]["x"] = ["Her sister laughed at the letter, and the house by the river was still."] * 2
    assert calibrate(refs, ["base", "x"], params, {"base": "voices-base", "x": "lv-x"}).problem is None


def test_one_stale_adapter_answering_every_arm_from_the_start_fails(tmp_path: Path) -> None:
    """Every arm served by a stale lv-trollope: references agree with the checks, but arms cannot be told apart."""
    stale = {"voices-base": "lv-trollope", SERVED: "lv-trollope", RUNTIME: "lv-trollope"}
    root, done, _ = _run(tmp_path, impostors=stale)
    assert done.returncode == 4, done.stdout + done.stderr
    v = manifest(root, GATE)["sessions"][0]["integrity"]
    assert v["status"] == "failed" and v["right"] == 0 and v["unclear"] == v["sent"] == 9
    assert "answered alike on every canary" in v["problems"][0]
    assert "answered alike on every canary" in _refused(root)


# -- build item 3: checks across many cells ----------------------------------------------------------


def _odd_nonce(root: Path) -> str:
    """A nonce whose two canary cells both have odd request seeds: the canaries alone never meet the fault."""
    spec = load_spec(root, GATE)
    prompts = [(p.id, p.text) for p in spec.prompts]
    for i in range(1000):
        nonce = f"{i:032x}"
        if all(c.seed % 2 for c in choose_canaries(prompts, 2, nonce, spec.seeds)):
            return nonce
    raise AssertionError("no such nonce")


def test_a_fault_on_even_seeds_only_is_met_by_checks_across_cells(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Every even-seed request that shares the seat answered with another arm's weights; both canaries odd.

    The canary checks all reproduce their references (as every @2 check did); the re-asks, a fresh cell
    each, meet the even cells, and the run FAILS.
    """
    with StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, token_time=0.0005, slots=8,
                     wrong_weights_every=1, even_seeds_only=True, faults_from=24) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=8, seeds=SEEDS))
        monkeypatch.setattr(_session.secrets, "token_hex", lambda n: _odd_nonce(root))
        result = generate(load_spec(root, GATE), quiet=True)
    assert seat.wrong_served > 0 and result.canaries.failed
    checks = _checks(root)
    assert all(c["seed"] % 2 == 1 and c["status"] == "right" for c in checks if c["check"] == "canary")
    reask = [c for c in checks if c["check"] == "reask"]
    assert any(c["seed"] % 2 == 0 and c["status"] != "right" for c in reask)
    assert len({tuple(c["cell"]) for c in reask}) == len(reask)     # a fresh cell per re-ask
    _refused(root)


def test_the_record_states_the_cell_coverage_floor_and_what_identity_rests_on(tmp_path: Path) -> None:
    root, done, _ = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    cells = {tuple(c["cell"]) for c in _checks(root)}
    floor = detection_floor(len(cells))
    assert floor is not None
    assert run_cli("score", GATE, cwd=root).code == 0
    integrity = json.loads((root / "runs" / GATE / "scores.json").read_text())["integrity"]
    assert integrity["cells_checked"] == len(cells) > 2 and integrity["detects_cells_95"] == round(floor, 4)
    record = (root / "gates" / f"{GATE}.md").read_text()
    assert (f"A fault tied to cells is met with 95% when it hits {100 * floor:.1f}% of cells or more "
            f"({len(cells)} distinct cells checked)") in record
    assert ("Identity of each arm's weights: base: the seat's word only: model 'voices-base', root "
            "'/models/voices-base' (no weights file reachable from here); the carrier's files: not checked (no "
            "carrier directory readable here at the base's root), held to no earlier answer (the first session on "
            "it); ckpt475: the seat's word only") in record


def test_a_reask_is_judged_against_the_stored_row_it_names(tmp_path: Path) -> None:
    """Editing a re-ask's copy of the stored rows (to make a failed check reproduce) is refused."""
    root, done, _ = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    path = root / "runs" / GATE / "canaries.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    edited = 0
    for c in lines:
        if c.get("check") == "reask":
            c["against"][c["arm"]] = c["text"] + " and then"
            edited += 1
    assert edited
    path.write_text("".join(json.dumps(c) + "\n" for c in lines))
    assert f"{edited} re-ask check copies differ from the stored rows" in _refused(root)
    assert len(rows(root, GATE)) == 36


# -- build item 2: identity outside the seat (the adapter's file, earlier sessions and gates) -----------


def _same_file(model: str, seed: int, prompt: str, max_tokens: int) -> tuple[str, str]:
    """What one adapter file answers, under whichever name a gate loads it (the stand-in hashes the name in)."""
    return default_text("weights:ckpt925", seed, prompt, max_tokens)


ONE_FILE = {f"{GATE}-{g}-ckpt925": _same_file for g in ("a", "b")}


def _two_gates(tmp_path: Path, url: str) -> tuple[Path, str, str]:
    """One workspace, gates A and B; each's ckpt925 is the same adapter directory (one weights file)."""
    adapter = tmp_path / "adapters" / "ckpt925"
    adapter.mkdir(parents=True)
    (adapter / "adapter_model.safetensors").write_bytes(b"lora weights " * 100)
    (adapter / "adapter_config.json").write_text("{}")
    a, b = f"{GATE}-a", f"{GATE}-b"

    def spec(gate: str) -> dict:
        return gate_spec(gate, url=url, concurrency=8, seeds=SEEDS, candidates=[
            {"name": "ckpt925", "model": f"{gate}-ckpt925", "role": "candidate", "adapter_path": str(adapter)}])

    root = registered_workspace(tmp_path / "ws", spec(a))
    import yaml
    from helpers.workspace import git

    (root / "preregistrations" / f"{b}.yaml").write_text(yaml.safe_dump(spec(b), sort_keys=False))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "gate b")
    assert run_cli("register", b, cwd=root).code == 0
    return root, a, b


def test_register_pins_the_adapter_weights_and_run_json_says_what_identity_rests_on(tmp_path: Path) -> None:
    with StandinSeat(token_time=0.0005, slots=8) as seat:
        root, a, _ = _two_gates(tmp_path, seat.url)
        assert cli(root, "generate", a, "--quiet").returncode == 0
    import hashlib

    sha = hashlib.sha256(b"lora weights " * 100).hexdigest()
    reg = json.loads((root / "preregistrations" / f"{a}.registration.json").read_text())
    assert reg["adapter_weights"] == {"ckpt925": {"model": f"{a}-ckpt925", "sha256": sha,
                                                  "file": str(tmp_path / "adapters/ckpt925/adapter_model.safetensors")}}
    ident = manifest(root, a)["sessions"][0]["identity"]
    assert ident["ckpt925"]["rests_on"] == (f"adapter_model.safetensors sha256 {sha} pinned at register; its own "
                                            "files: not checked: the carrier's files were not read (no carrier "
                                            "directory readable here at the base's root)")
    assert ident["ckpt925"]["key"] == f"sha256:{sha}"      # the weights alone: the seat's version is beside it
    assert ident["base"]["rests_on"].startswith("the seat's word only: model 'voices-base', root '/models/voices-base'")
    # The ledger: the session's references, filed under each arm's key (2 canaries x 2 arms).
    ledger = [json.loads(x) for x in (root / "runs" / "identity.jsonl").read_text().splitlines()]
    assert len(ledger) == 4 and {r["key"] for r in ledger} == {ident["base"]["key"], ident["ckpt925"]["key"]}
    assert {r["version"] for r in ledger} == {"0.32.0+standin"} and all(len(r["check"]) == 64 for r in ledger)


def test_stale_weights_from_the_start_fail_against_earlier_answers_of_the_same_weights(tmp_path: Path) -> None:
    """Gate A on a clean seat; gate B on a seat serving stale weights for the base and for ckpt925 from its first
    request. Within B everything reproduces (the references are stale too); held to the earlier answers of the
    same weights (the base by the seat's model root, the adapter by its file's sha256), each arm fails."""
    with StandinSeat(token_time=0.0005, slots=8, generators=ONE_FILE) as clean:
        root, a, b = _two_gates(tmp_path, clean.url)
        assert cli(root, "generate", a, "--quiet").returncode == 0
        # The same seat again, clean: B is held to A's answers, and they reproduce.
        assert cli(root, "generate", b, "--quiet").returncode == 0
        assert manifest(root, b)["sessions"][0]["identity_asks"] == {"base": {"gate": a, "session": 0},
                                                                      "ckpt925": {"gate": a, "session": 0}}
    import shutil

    shutil.rmtree(root / "runs" / b)
    stale = {"voices-base": "voices-base~stale", f"{b}-ckpt925": "lv-trollope"}
    with StandinSeat(token_time=0.0005, slots=8, impostors=stale, generators=ONE_FILE) as seat:
        done = cli(root, "generate", b, "--quiet", "--seat", seat.url)
    assert done.returncode == 4, done.stdout + done.stderr
    v = manifest(root, b)["sessions"][0]["integrity"]
    assert v["right"] == v["sent"] and len(v["problems"]) == 2     # every check reproduced: stale all along
    # Held to the latest answers of those weights on file: B's own clean session before its run dir was removed
    # (the ledger is the data dir's, not one gate's).
    for arm, key in (("base", "seat:voices-base:/models/voices-base"), ("ckpt925", "sha256:")):
        assert any(p.startswith(f"arm {arm}'s answer does not reproduce what the same weights ({key}")
                   and f"in gate {b} session 0" in p for p in v["problems"]), v["problems"]
    assert "arm base's answer does not reproduce" in _refused(root, b)


# -- build item 4: references reused across sessions of one gate on an unchanged seat -------------------


def _when(stamp: str) -> dt.datetime:
    return dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")


def _stop_short(root: Path, n: int) -> None:
    """The gate's run as if stopped `n` rows short."""
    path = root / "runs" / GATE / "generations.jsonl"
    path.write_text("".join(x + "\n" for x in path.read_text().splitlines()[:-n]))


def test_a_resume_on_an_unchanged_seat_borrows_its_references_and_stores_a_row_within_5_s(tmp_path: Path) -> None:
    """Each request takes 0.6 s on the second session: asking the references again (3 waves of one arm, each
    drained) would hold the first new row back to 2.4 s; borrowed, each arm re-asks one recorded reference
    among the first requests, and the first row is stored in about one request's time (under 5 s)."""
    with StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, slots=16) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=16, seeds=SEEDS))
        assert cli(root, "generate", GATE, "--quiet").returncode == 0
        _stop_short(root, 6)
        seat.request_overhead = 0.6
        before = len(seat.chat_log())
        done = cli(root, "generate", GATE, "--quiet", "--canaries", "1")
        assert done.returncode == 0, done.stdout + done.stderr
        asked = len(seat.chat_log()) - before
    s = manifest(root, GATE)["sessions"][1]
    assert s["references_reused_from"] == 0 and s["identity_asks"] == {a: {"gate": GATE, "session": 0}
                                                                      for a in ("base", "ckpt475", "ckpt925")}
    assert asked == 6 + 3 + 3          # the rows, one check per arm, one identity re-ask per arm: no reference
    new = [r for r in rows(root, GATE) if r["session"] == 1]
    first = min(_when(r["time"]) for r in new) - _when(s["started"])
    assert len(new) == 6 and first.total_seconds() < min(5, 2 * 0.6), first
    checks = [c for c in _checks(root) if c["session"] == 1]
    lines = (root / "runs" / GATE / "canaries.jsonl").read_text().splitlines()
    copies = [c for c in map(json.loads, lines) if c["session"] == 1 and c["phase"] == "reference"]
    # 9 borrowed references (per arm: the first canary twice, the second once), 6 of them the lender's real rows
    assert len(copies) == 9 and all(c["reused_from"] == 0 for c in copies) and len(checks) == 3
    assert sum(1 for c in copies if c.get("real_row")) == 6
    assert run_cli("score", GATE, cwd=root).code == 0


def test_an_isolated_resume_fills_each_identity_re_ask_wave_with_its_arms_requests(tmp_path: Path) -> None:
    """Isolated, each arm's identity re-ask is a wave of that arm: its free slots take the arm's own requests
    (one arm on the seat, not an empty one). With 0.6 s a request, the 12 rows are stored in the three re-ask
    waves (~1.8 s), not after three re-asks sent alone one after another and then three turns (~3.6 s)."""
    with StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, slots=16) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=16, seeds=SEEDS))
        assert cli(root, "generate", GATE, "--quiet").returncode == 0
        _stop_short(root, 12)
        seat.request_overhead = 0.6
        shared = seat.shared_requests
        done = cli(root, "generate", GATE, "--quiet", "--isolate-arms", "--canaries", "1")
        assert done.returncode == 0, done.stdout + done.stderr
        assert seat.shared_requests == shared       # never two arms in flight
    s = manifest(root, GATE)["sessions"][1]
    assert s["references_reused_from"] == 0 and s["isolate_arms"]
    new = [r for r in rows(root, GATE) if r["session"] == 1]
    last = max(_when(r["time"]) for r in new) - _when(s["started"])
    assert len(new) == 12 and last.total_seconds() < 5 * 0.6, last


def test_a_session_whose_check_failed_lends_no_references(tmp_path: Path) -> None:
    """Only a session whose integrity held lends its references: after a failed mixed run, --isolate-arms asks."""
    with StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, slots=8, token_time=0.001,
                     wrong_weights_every=3) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=8, seeds=SEEDS))
        # 8 checks per arm: an every-3rd fault goes unmet with (2/3)^24, not the default's 2.6%.
        assert cli(root, "generate", GATE, "--quiet", "--canaries", "8").returncode == 4
        assert cli(root, "generate", GATE, "--quiet", "--isolate-arms").returncode == 0
    sessions = manifest(root, GATE)["sessions"]
    assert sessions[0]["seat_fingerprint"] == sessions[1]["seat_fingerprint"]       # the same seat ...
    assert "references_reused_from" not in sessions[1]                             # ... but nothing borrowed
    lines = (root / "runs" / GATE / "canaries.jsonl").read_text().splitlines()
    refs = [c for c in map(json.loads, lines) if c["session"] == 1 and c["phase"] == "reference"]
    assert len(refs) == 9 and sum(1 for c in refs if not c.get("real_row")) == 3     # asked anew, each arm once


def test_borrowed_references_can_be_lent_again_and_score_holds_them_to_the_session_that_asked(tmp_path: Path) -> None:
    with StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, slots=8) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=8, seeds=SEEDS))
        path = root / "runs" / GATE / "generations.jsonl"
        for i in range(3):
            if i:      # a run stopped 4 rows short
                path.write_text("".join(x + "\n" for x in path.read_text().splitlines()[:-4]))
            assert cli(root, "generate", GATE, "--quiet").returncode == 0
    sessions = manifest(root, GATE)["sessions"]
    assert [s.get("references_reused_from") for s in sessions] == [None, 0, 1]
    lines = [json.loads(x) for x in (root / "runs" / GATE / "canaries.jsonl").read_text().splitlines()]
    assert {c.get("reused_from") for c in lines if c["phase"] == "reference" and c["session"] == 2} == {0}
    scored = run_cli("score", GATE, "--json", "--dry-run", cwd=root)
    assert scored.code == 0, scored.stderr
    assert json.loads(scored.stdout)["integrity"]["status"] == "holds"
    # A copy that is not what the session that asked it got is refused.
    for c in lines:
        if c["phase"] == "reference" and c["session"] == 2:
            c["text"] += " and more"
            break
    (root / "runs" / GATE / "canaries.jsonl").write_text("".join(json.dumps(c) + "\n" for c in lines))
    assert "a reference session 2 borrowed is not session 0's own" in _refused(root)
