"""`import`, `ship` and `amend` through the real CLI: what they accept, and every refusal writing nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.bronte import (
    as_shipped,
    bronte_workspace,
    generations,
    patch_scoring,
    result,
    scored_workspace,
    write_jsonl,
)
from helpers.shared import COMPOSE_FIXTURE
from helpers.workspace import cli, copy_workspace, run_cli, tree_snapshot, voicegate

from voicegate._hashing import sha256_file

REASON = "additive, reversible and safety-clean"


# The workspaces are built once per module (registering and scoring cost git commits and a record each) and
# every test works on its own copy: most tests here only read them, and the rest must not see another's writes.


@pytest.fixture(scope="module")
def compose_bytes() -> bytes:
    if not COMPOSE_FIXTURE.is_file():
        pytest.skip(f"fleet compose fixture not present at {COMPOSE_FIXTURE}")
    return as_shipped(COMPOSE_FIXTURE)


def _once(tmp_path_factory: pytest.TempPathFactory, build, *args, **kw) -> Path:  # type: ignore[no-untyped-def]
    return build(tmp_path_factory.mktemp("template") / "ws", *args, **kw)


@pytest.fixture(scope="module")
def registered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """lv-bronte registered, no README or compose."""
    return _once(tmp_path_factory, bronte_workspace, None)


@pytest.fixture(scope="module")
def registered_with_compose(tmp_path_factory: pytest.TempPathFactory, compose_bytes: bytes) -> Path:
    return _once(tmp_path_factory, bronte_workspace, compose_bytes)


@pytest.fixture(scope="module")
def scored_unshipped(tmp_path_factory: pytest.TempPathFactory, compose_bytes: bytes) -> Path:
    return _once(tmp_path_factory, scored_workspace, compose_bytes, ship=False, amend=False)


@pytest.fixture(scope="module")
def scored_no_entry(tmp_path_factory: pytest.TempPathFactory, compose_bytes: bytes) -> Path:
    """Scored on a compose file that lists no lv-bronte entry."""
    return _once(tmp_path_factory, scored_workspace, _without_entry(compose_bytes), ship=False, amend=False)


@pytest.fixture(scope="module")
def scored_shipped(tmp_path_factory: pytest.TempPathFactory, compose_bytes: bytes) -> Path:
    return _once(tmp_path_factory, scored_workspace, compose_bytes, ship=True, amend=False)


def _without_entry(compose: bytes) -> bytes:
    return compose.replace(b"      - lv-bronte=/adapters/lv-bronte-4b-v1\n", b"")


# -- import ---------------------------------------------------------------------------------


def test_import_accepts_a_good_file(tmp_path: Path, registered: Path) -> None:
    root = copy_workspace(registered, tmp_path / "ws")
    rows = generations()
    for r in rows[:5]:
        del r["model"]  # optional: taken from the arm
    rows[5]["model"] = "baby-bronte"  # an older name is provenance, kept as given
    source = write_jsonl(tmp_path / "outside.jsonl", rows)
    done = voicegate(root, "import", "lv-bronte", str(source))
    assert done.returncode == 0, done.stderr
    assert "imported 360 generations" in done.stdout
    stored = [json.loads(ln) for ln in (root / "runs/lv-bronte/generations.jsonl").read_text().splitlines()]
    assert len(stored) == 360 and all(r["imported"] is True and r["kind"] == "voice" for r in stored)
    assert stored[0]["model"] == "voices-base" and stored[0]["text"] == rows[0]["text"]
    assert stored[5]["model"] == "baby-bronte" and stored[5]["arm"] == "base"
    run = json.loads((root / "runs/lv-bronte/run.json").read_text())
    assert run["source"] == "imported"
    assert run["file"] == str(source.resolve())  # outside the workspace: the absolute path
    assert run["file_sha256"] == sha256_file(source)
    assert run["counts"]["rows"] == 360 and run["counts"]["per_arm"] == {"base": 120, "ckpt475": 120, "ckpt925": 120}


def _bad(line: int, change):  # type: ignore[no-untyped-def]
    def make(rows: list[dict]) -> list:
        out: list = list(rows)
        out[line - 1] = change(dict(rows[line - 1]))
        return out
    return make


BAD = {
    "not-json": (7, "not JSON"),
    "array": (7, "must be a JSON object, got list"),
    "unknown-arm": (7, "arm 'ckpt999' is not in the spec"),
    "unregistered-seed": (7, "seed 404 is not a registered seed"),
    "seed-as-string": (7, "seed '101' is not a registered seed"),
    "unknown-prompt": (7, "prompt_id '40' is not a registered voice prompt id"),
    "probe-without-probes": (7, "prompt_id '6' is not a registered probe id"),
    "no-text": (7, "missing 'text'"),
    "text-not-string": (7, "text must be a string"),
    "model-not-string": (7, "model must be a non-empty string, got 475"),
    "duplicate": (200, "duplicate of line 3"),
}
CHANGES = {
    "not-json": lambda r: "{broken",
    "array": lambda r: [r],
    "unknown-arm": lambda r: {**r, "arm": "ckpt999"},
    "unregistered-seed": lambda r: {**r, "seed": 404},
    "seed-as-string": lambda r: {**r, "seed": "101"},
    "unknown-prompt": lambda r: {**r, "prompt_id": "40"},
    "probe-without-probes": lambda r: {**r, "kind": "probe"},
    "no-text": lambda r: {k: v for k, v in r.items() if k != "text"},
    "text-not-string": lambda r: {**r, "text": None},
    "model-not-string": lambda r: {**r, "model": 475},
}


@pytest.mark.parametrize("case", BAD)
def test_import_refuses_the_whole_file_on_one_bad_line(tmp_path: Path, registered: Path, case: str) -> None:
    root = copy_workspace(registered, tmp_path / "ws")
    rows: list = generations()
    line, message = BAD[case]
    if case == "duplicate":
        rows[line - 1] = dict(rows[2])
    else:
        rows[line - 1] = CHANGES[case](dict(rows[line - 1]))
    source = tmp_path / "bad.jsonl"
    source.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    before = tree_snapshot(root)
    done = cli(root, "import", "lv-bronte", str(source))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"voicegate: line {line}: "), done.stderr
    assert message in done.stderr
    assert "nothing imported" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert tree_snapshot(root) == before


def test_import_refuses_rows_already_stored_and_an_unregistered_gate(tmp_path: Path, registered: Path) -> None:
    root = copy_workspace(registered, tmp_path / "ws")
    first = write_jsonl(tmp_path / "a.jsonl", generations(("base",)))
    assert cli(root, "import", "lv-bronte", str(first)).returncode == 0
    before = tree_snapshot(root)
    again = write_jsonl(tmp_path / "b.jsonl", generations(("ckpt475",)) + generations(("base",))[5:6])
    done = cli(root, "import", "lv-bronte", str(again))
    assert done.returncode == 2
    assert "line 121: base, seed 101, prompt 5 is already stored" in done.stderr
    assert tree_snapshot(root) == before
    # The other arms complete the run; run.json lists both files.
    rest = write_jsonl(tmp_path / "c.jsonl", generations(("ckpt475", "ckpt925")))
    assert cli(root, "import", "lv-bronte", str(rest)).returncode == 0
    run = json.loads((root / "runs/lv-bronte/run.json").read_text())
    assert [i["rows"] for i in run["imports"]] == [120, 240] and run["counts"]["rows"] == 360

    unregistered = bronte_workspace(tmp_path / "ws2", None, register=False)
    done = cli(unregistered, "import", "lv-bronte", str(first))
    assert done.returncode == 2 and "is not registered" in done.stderr
    assert not (unregistered / "runs").exists()


# -- ship -----------------------------------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    (("ckpt475", "--reason", "   "), "needs --reason"),
    (("ckpt475",), "needs --reason"),
    (("base", "--reason", REASON), "base is the base carrier, not an adapter"),
    (("ckpt999", "--reason", REASON), "no arm named 'ckpt999'"),
], ids=["blank-reason", "no-reason", "base", "unknown-arm"])
def test_ship_refusals_write_nothing(tmp_path: Path, scored_unshipped: Path, args: tuple, message: str) -> None:
    root = copy_workspace(scored_unshipped, tmp_path / "ws")
    before = tree_snapshot(root)
    done = cli(root, "ship", "lv-bronte", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr
    assert tree_snapshot(root) == before


def test_ship_before_any_score_is_refused(tmp_path: Path, registered_with_compose: Path) -> None:
    root = copy_workspace(registered_with_compose, tmp_path / "ws")
    before = tree_snapshot(root)
    done = cli(root, "ship", "lv-bronte", "ckpt475", "--reason", REASON)
    assert done.returncode == 2
    assert "no score is recorded for lv-bronte" in done.stderr
    assert tree_snapshot(root) == before


def test_ship_refuses_when_compose_has_no_entry_for_the_gate(tmp_path: Path, scored_no_entry: Path) -> None:
    # Shipping means listed in --lora-modules: a decision with no entry to sit above is refused whole.
    root = copy_workspace(scored_no_entry, tmp_path / "ws")
    before = tree_snapshot(root)
    done = cli(root, "ship", "lv-bronte", "ckpt475", "--reason", REASON)
    assert done.returncode == 2
    assert "compose file has no --lora-modules entry for lv-bronte" in done.stderr
    assert tree_snapshot(root) == before


def test_score_of_a_gate_not_yet_in_compose_skips_the_comment(scored_no_entry: Path, compose_bytes: bytes) -> None:
    root = scored_no_entry   # read only
    assert (root / "deploy/compose.yaml").read_bytes() == _without_entry(compose_bytes)
    assert b"voicegate:entry 1 " in (root / "gates/lv-bronte.md").read_bytes()
    assert b"voicegate:entry 1 " in (root / "adapters/lv-bronte-4b-v1/README.md").read_bytes()


# -- amend ----------------------------------------------------------------------------------


@pytest.fixture
def scored(tmp_path: Path, scored_shipped: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    patch_scoring(monkeypatch)
    return copy_workspace(scored_shipped, tmp_path / "ws")


def _amend(root: Path, *args: str) -> tuple[int, str, str]:
    return run_cli("amend", "lv-bronte", *args, "-C", str(root))


@pytest.mark.parametrize("args, message", [
    (("--rule", "median-spread", "--reason", "x"), "unknown floor rule 'median-spread'"),
    (("--rule", "pairwise-max-spread"), "needs --reason"),
    (("--rule", "pairwise-max-spread", "--reason", " \t"), "needs --reason"),
    (("--rule", "global-max-spread", "--reason", "again"), "already under global-max-spread@1"),
], ids=["unknown-rule", "no-reason", "blank-reason", "same-rule"])
def test_amend_refusals_write_nothing(scored: Path, args: tuple, message: str) -> None:
    before = tree_snapshot(scored)
    code, out, err = _amend(scored, *args)
    assert code == 2, out + err
    assert message in err
    assert tree_snapshot(scored) == before


def test_amend_refuses_a_rule_registered_on_or_after_the_amendment(scored: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1789603200")  # 2026-09-17: the day pairwise was registered
    before = tree_snapshot(scored)
    code, _, err = _amend(scored, "--rule", "pairwise-max-spread", "--reason", "x")
    assert code == 2
    assert "registered 2026-09-17, which does not precede this amendment (2026-09-17)" in err
    assert tree_snapshot(scored) == before


def test_amend_refuses_changed_generations(scored: Path) -> None:
    gens = scored / "runs/lv-bronte/generations.jsonl"
    gens.write_text(gens.read_text().replace("Reader, the moor", "Reader, the fen", 1))
    before = tree_snapshot(scored)
    code, _, err = _amend(scored, "--rule", "pairwise-max-spread", "--reason", "x")
    assert code == 2
    assert "the stored generations changed since they were scored" in err
    assert tree_snapshot(scored) == before


def test_amend_with_nothing_scored_is_refused(tmp_path: Path, registered_with_compose: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    patch_scoring(monkeypatch)
    root = copy_workspace(registered_with_compose, tmp_path / "ws")
    before = tree_snapshot(root)
    code, _, err = _amend(root, "--rule", "pairwise-max-spread", "--reason", "x")
    assert code == 2
    assert "nothing to amend: no score is recorded for lv-bronte" in err
    assert tree_snapshot(root) == before


def test_amend_refuses_when_delta_cb_moves(scored: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The same generations must give the same delta_cb; if they do not, nothing is appended.
    from helpers import bronte as _bronte

    moved = {**_bronte.DISTANCES, "ckpt475": {101: 0.5, 202: 0.6, 303: 0.7}}
    monkeypatch.setattr(_bronte, "DISTANCES", moved)
    before = tree_snapshot(scored)
    code, _, err = _amend(scored, "--rule", "pairwise-max-spread", "--reason", "x")
    assert code == 2
    assert "delta_cb of ckpt475 changed on re-scoring the same generations (0.193 -> 0.22)" in err
    assert tree_snapshot(scored) == before


def test_amend_then_score_again_is_current(scored: Path) -> None:
    code, out, err = _amend(scored, "--rule", "pairwise-max-spread", "--reason", "pairwise was registered first")
    assert code == 0, err
    assert "appended entry 3 (amend)" in out
    before = tree_snapshot(scored)
    # Scoring again under the spec's rule: that result is already recorded, nothing is appended.
    from voicegate.artifacts import record_score
    from voicegate.run._store import generations_hash, read_rows
    from voicegate.spec._registration import check_registered
    from voicegate.spec._spec import load_spec

    spec = load_spec(scored, "lv-bronte")
    gh = generations_hash(read_rows(spec.generations_path))
    lines = record_score(spec, check_registered(spec), result("global-max-spread", gh), None)
    assert lines == [("gates/lv-bronte.md: the record is current (same generations, same rule global-max-spread); "
                     "nothing appended")]
    assert tree_snapshot(scored) == before


def test_import_into_a_generated_run_is_refused(tmp_path: Path, registered: Path) -> None:
    root = copy_workspace(registered, tmp_path / "ws")
    run = root / "runs/lv-bronte/run.json"
    run.parent.mkdir(parents=True)
    run.write_text(json.dumps({"source": "generated", "gate": "lv-bronte"}))
    before = tree_snapshot(root)
    done = cli(root, "import", "lv-bronte", str(write_jsonl(tmp_path / "g.jsonl", generations())))
    assert done.returncode == 2
    assert "were made by `voicegate generate`" in done.stderr
    assert tree_snapshot(root) == before


def test_a_reason_cannot_forge_a_marker_or_break_the_compose(tmp_path: Path, scored_unshipped: Path) -> None:
    root = copy_workspace(scored_unshipped, tmp_path / "ws")
    forged = "ok\n<!-- voicegate:entry 9 sha256=" + "0" * 64 + " prev=none -->\n- lv-evil=/x\u2028\x1b done"
    done = voicegate(root, "ship", "lv-bronte", "ckpt475", "--reason", forged)
    assert done.returncode == 0, done.stderr
    flat = "ok <!-- voicegate:entry 9 sha256=" + "0" * 64 + " prev=none --> - lv-evil=/x done"
    # In markdown the reason is also inert text: no raw HTML comment in the record.
    shown = flat.replace("<", "&lt;").replace(">", "&gt;")
    assert f"Reason, as given: “{shown}”" in (root / "gates/lv-bronte.md").read_text(encoding="utf-8")
    assert f'#   reason: "{flat}"' in (root / "deploy/compose.yaml").read_text(encoding="utf-8")
    done = voicegate(root, "verify", "lv-bronte")
    assert done.returncode == 0, done.stdout + done.stderr
    decision = json.loads((root / "runs/lv-bronte/decisions.jsonl").read_text().splitlines()[-1])
    assert decision["reason"] == flat
