"""The stores on this machine that decide whether a seat holds are evidence with integrity of their own.

- ``<data dir>/identity.jsonl`` (earlier answers of each arm's weights): every line sealed; a damaged line
  (a non-UTF-8 byte, two texts swapped, a row's max_tokens raised, UTF-8 junk) refuses `generate` before
  any request, in one line that calls it local damage and says how to rebuild — never a traceback,
  never the seat's fault, never `--isolate-arms`. Before seals, each of those crashed, failed a right
  seat, refused every session at the seat, or was silently ignored.
- Identity is keyed by the weights, not by the seat's reported version: a seat reporting another
  version is still held to the earlier answers of the same weights; one that does not reproduce them
  is "not decided", and the session does not hold.

The carrier answer cache and the weights-hash memo are tested in tests/generate/test_carrier_identity.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.workspace import cli, gate_spec, manifest, registered_workspace, rows, run_cli

from voicegate.generate._identity import weights_key
from voicegate.seat import StandinSeat

GATE = "lv-stores"
SERVED = f"{GATE}-ckpt475"
SEEDS = [101, 202, 303, 404]


def _seat(**kw: object) -> StandinSeat:
    return StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, token_time=0.0005, slots=8, **kw)  # type: ignore[arg-type]


def _honest_session(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace whose data dir holds one clean session's references; the gate's run removed after it (the
    store is the data dir's, not the run's), so the next generate opens a new session."""
    with _seat() as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=8, seeds=SEEDS))
        done = cli(root, "generate", GATE, "--quiet")
    assert done.returncode == 0, done.stderr
    store = root / "runs" / "identity.jsonl"
    assert len(store.read_text().splitlines()) == 6     # 2 canaries x 3 arms
    shutil.rmtree(root / "runs" / GATE)
    return root, store


def _lines(store: Path) -> list[dict]:
    return [json.loads(x) for x in store.read_text(encoding="utf-8").splitlines()]


def _write(store: Path, lines: list[dict]) -> None:
    store.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def _swap_texts(store: Path) -> None:
    lines = _lines(store)
    lines[0]["text"], lines[1]["text"] = lines[1]["text"], lines[0]["text"]
    _write(store, lines)


def _raise_max_tokens(store: Path) -> None:
    lines = _lines(store)
    lines[2]["sampling"]["max_tokens"] = 100000
    _write(store, lines)


def _non_utf8(store: Path) -> None:
    raw = store.read_bytes().split(b"\n")
    raw[1] = raw[1].replace(b'"text": "', b'"text": "\xff', 1)
    store.write_bytes(b"\n".join(raw))


def _junk(store: Path) -> None:
    with store.open("a", encoding="utf-8") as fh:
        fh.write("ceci n'est pas une ligne\n")


@pytest.mark.parametrize(("damage", "line", "why"), [
    (_non_utf8, 2, "not UTF-8"),
    (_swap_texts, 1, "its checksum does not match its content) (and 1 more"),
    (_raise_max_tokens, 3, "its checksum does not match its content"),
    (_junk, 7, "not a JSON line"),
])
def test_a_damaged_identity_line_refuses_generate_as_local_damage_before_any_request(
        tmp_path: Path, damage, line: int, why: str) -> None:
    root, store = _honest_session(tmp_path)
    damage(store)
    before = store.read_bytes()
    with _seat() as seat:
        done = cli(root, "generate", GATE, "--quiet", "--seat", seat.url)
        asked = seat.requests()
    assert done.returncode == 2, (done.stdout, done.stderr)
    said = done.stderr.strip().splitlines()
    assert len(said) == 1 and "Traceback" not in done.stderr, done.stderr
    assert said[0] == (
        f"voicegate: {store}: line {line} is damaged ({why}): local damage to this machine's store of earlier "
        f"answers, not the seat's doing; nothing was sent to the seat. Rebuild it: `mv {store} {store}.damaged`, "
        "and the next generate rebuilds it from that copy's sound lines")
    assert "--isolate-arms" not in done.stderr and asked == []
    assert store.read_bytes() == before and not (root / "runs" / GATE).exists()


def test_a_damaged_store_moved_aside_is_rebuilt_from_its_sound_lines_and_the_seat_is_held_to_them(
        tmp_path: Path) -> None:
    root, store = _honest_session(tmp_path)
    _swap_texts(store)      # lines 1 and 2 damaged, 3-6 sound
    sound = store.read_text().splitlines()[2:]
    store.rename(store.with_name("identity.jsonl.damaged"))
    with _seat() as seat:
        done = cli(root, "generate", GATE, "--seat", seat.url)
    assert done.returncode == 0, done.stderr
    assert (f"note: rebuilt {store} from the 4 sound lines of {store}.damaged (2 damaged line(s) left out; "
            f"{store}.damaged kept)") in done.stderr
    session = manifest(root, GATE)["sessions"][0]
    assert session["integrity"]["status"] == "holds"
    assert set(session["identity_asks"]) == {"base", "ckpt475", "ckpt925"}     # each arm still has one on file
    assert store.read_text().splitlines()[:4] == sound and len(_lines(store)) == 4 + 6


def test_a_torn_last_line_is_no_damage_and_the_next_append_cuts_it(tmp_path: Path) -> None:
    root, store = _honest_session(tmp_path)
    with store.open("a", encoding="utf-8") as fh:
        fh.write('{"key": "sha256:ab')           # a writer killed mid-line
    with _seat() as seat:
        assert cli(root, "generate", GATE, "--quiet", "--seat", seat.url).returncode == 0
    assert len(_lines(store)) == 12 and manifest(root, GATE)["sessions"][0]["integrity"]["status"] == "holds"


def test_lines_written_before_seals_are_counted_never_asked_and_the_record_says_so(tmp_path: Path) -> None:
    root, store = _honest_session(tmp_path)
    legacy = []
    for x in _lines(store):     # as the store was written before seals: the version inside the key
        key = f"{x.pop('key')}@{x.pop('version')}"
        x.pop("check")
        legacy.append({**x, "key": key})
    legacy[0]["text"] = "Damage nobody can see in a line without a seal."
    _write(store, legacy)
    assert weights_key(legacy[1]) == (legacy[1]["key"].rpartition("@")[0], "0.32.0+standin")
    with _seat() as seat:
        done = cli(root, "generate", GATE, "--quiet", "--seat", seat.url)
    assert done.returncode == 0, done.stderr
    session = manifest(root, GATE)["sessions"][0]
    assert session["identity_asks"] == {} and session["integrity"]["status"] == "holds"
    assert {a: i["unsealed"] for a, i in session["identity"].items()} == {"base": 2, "ckpt475": 2, "ckpt925": 2}
    assert run_cli("score", GATE, cwd=root).code == 0
    record = (root / "gates" / f"{GATE}.md").read_text()
    assert ("held to no earlier answer: the 2 on file were written before the identity store sealed its lines "
            "(not asked: not checked)") in record
    assert "the first session on it" not in record
    assert len(_lines(store)) == 12 and all("check" in x for x in _lines(store)[6:])


# -- identity keyed by the weights, not by the seat's reported version ----------------------------------------


def test_a_seat_serving_stale_weights_under_another_version_is_not_held(tmp_path: Path) -> None:
    """An honest session, then a seat reporting another /version that serves stale weights for every arm from
    its first request: everything reproduces within the session, and before, integrity held ("the first session
    on it"). Held to the same weights' earlier answers, it is not decided: generate says so, score refuses."""
    root, store = _honest_session(tmp_path)
    stale = {"voices-base": "voices-base~stale", SERVED: "lv-trollope", f"{GATE}-ckpt925": "lv-austen"}
    with _seat(impostors=stale, version="0.33.0+standin") as seat:
        done = cli(root, "generate", GATE, "--seat", seat.url)
    assert done.returncode == 0, done.stderr
    assert "seat integrity NOT DECIDED" in done.stdout + done.stderr and "integrity holds" not in done.stdout
    session = manifest(root, GATE)["sessions"][0]
    v = session["integrity"]
    assert v["right"] == v["sent"] and v["status"] == "not checked" and not v["problems"]
    assert len(v["undecided"]) == 3 and all(
        "answered in gate lv-stores session 0" in u and "on vLLM '0.32.0+standin'; the seat reports "
        "'0.33.0+standin' now" in u and u.endswith(": not decided") for u in v["undecided"])
    assert session["identity_asks"]["base"] == {"gate": GATE, "session": 0, "version": "0.32.0+standin",
                                                "version_now": "0.33.0+standin"}
    assert len(_lines(store)) == 6          # a session not decided records no answers for those weights
    out = run_cli("score", GATE, cwd=root)
    assert out.code == 2 and "seat integrity NOT CHECKED" in out.stderr and "not decided" in out.stderr, out.stderr
    assert "--isolate-arms" not in out.stderr
    assert not (root / "runs" / GATE / "scores.json").exists()
    # The same stale seat on a fresh run of the same data dir: still held to the honest answers, never "first".
    shutil.rmtree(root / "runs" / GATE)
    with _seat(impostors=stale, version="0.33.0+standin") as seat:
        assert cli(root, "generate", GATE, "--quiet", "--seat", seat.url).returncode == 0
    assert manifest(root, GATE)["sessions"][0]["integrity"]["status"] == "not checked"


def test_an_honest_seat_under_another_version_is_held_to_the_same_weights_and_holds(tmp_path: Path) -> None:
    root, store = _honest_session(tmp_path)
    with _seat(version="0.33.0+standin") as seat:
        done = cli(root, "generate", GATE, "--quiet", "--seat", seat.url)
    assert done.returncode == 0, done.stderr
    session = manifest(root, GATE)["sessions"][0]
    assert session["integrity"]["status"] == "holds" and set(session["identity_asks"]) == {"base", "ckpt475",
                                                                                            "ckpt925"}
    assert run_cli("score", GATE, cwd=root).code == 0
    assert ("held to its answer in gate lv-stores session 0 (on vLLM '0.32.0+standin'; the seat reported "
            "'0.33.0+standin')") in (root / "gates" / f"{GATE}.md").read_text()
    assert [weights_key(x)[1] for x in _lines(store)] == ["0.32.0+standin"] * 6 + ["0.33.0+standin"] * 6
    assert len(rows(root, GATE)) == len(SEEDS) * 3 * 3


def test_an_upgrade_on_purpose_is_not_decided_until_the_store_is_moved_aside_then_its_rows_are_made_again(
        tmp_path: Path) -> None:
    """A new vLLM whose seeded sampling differs for every arm looks, from here, exactly like stale weights: not
    decided. The warning says how to start the earlier answers afresh; the next generate remakes the rows."""
    from voicegate.seat._standin import default_text

    root, store = _honest_session(tmp_path)
    models = ["voices-base", SERVED, f"{GATE}-ckpt925"]
    upgraded = {m: (lambda model, seed, prompt, n: default_text(f"{model}@new", seed, prompt, n)) for m in models}
    with _seat(generators=upgraded, version="0.33.0+standin") as seat:
        done = cli(root, "generate", GATE, "--seat", seat.url)
        aside = root / "runs" / "identity.before-0.33.0+standin.jsonl"
        assert f"`mv {store} {aside}` starts the earlier answers afresh" in done.stderr, done.stderr
        assert manifest(root, GATE)["sessions"][0]["integrity"]["status"] == "not checked"
        store.rename(aside)
        again = cli(root, "generate", GATE, "--seat", seat.url)
    assert again.returncode == 0, again.stderr
    assert (f"note: 36 stored generation(s) of session(s) 0 on {seat.url} left an arm's weights not decided (its "
            "answers differ from earlier ones of the same weights on another vLLM version); moved them to"
            ) in again.stderr
    m = manifest(root, GATE)
    assert m["sessions"][1]["integrity"]["status"] == "holds" and m["sessions"][1]["identity_asks"] == {}
    assert m["quarantine"]["rows"] == 36 and {r["session"] for r in rows(root, GATE)} == {1}
    assert run_cli("score", GATE, cwd=root).code == 0
