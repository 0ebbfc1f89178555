"""A record any clone re-checks, and says what it could not check.

- files outside the workspace are pinned by the path the spec gives (`../shared/...`), so a clone
  or a moved workspace beside the same bytes re-checks the registration; an old record, keyed by
  the first workspace's absolute paths, still reads;
- a full clone in another folder verifies the amended lv-bronte record, citation included, and
  `report` there says "scored ..., run data not in this checkout", not "not scored";
- a depth-1 clone says its citations were not checked (shallow clone), never "BROKEN";
- with git missing from PATH, verify still checks the chains and the ledger and says "git: not checked";
- a ledger deleted while the run data is still there is BROKEN.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from helpers.bronte import committed_story
from helpers.workspace import base_spec, git, make_workspace, run_cli

from voicegate._errors import VoicegateError
from voicegate.spec import check_registered, load_spec


@pytest.fixture(scope="module")
def amended(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """lv-bronte scored, shipped and amended (citing lv-hemingway), committed; runs/ ignored."""
    return committed_story(tmp_path_factory.mktemp("story") / "ws")


def _verify(root: Path, **env: str | None) -> tuple[int, str]:
    done = run_cli("verify", "lv-bronte", "-C", str(root), env=env)
    assert "Traceback" not in done.stderr
    return done.code, done.stdout + done.stderr


def test_a_full_clone_elsewhere_verifies_the_citation_and_reports_scored_without_run_data(
        amended: Path, tmp_path: Path) -> None:
    clone = tmp_path / "elsewhere" / "review"
    git(tmp_path, "clone", "-q", str(amended), str(clone))
    code, out = _verify(clone)
    assert code == 0, out
    assert "citation: entry 3 cites lv-hemingway's registration of pairwise-max-spread" in out
    assert "git still holds it" in out
    done = run_cli("report", "lv-bronte", "-C", str(clone))
    assert done.code == 2 and len(done.stderr.strip().splitlines()) == 1
    assert ("lv-bronte was scored (3 entries in gates/lv-bronte.md, the committed account), but its run data is "
            "not in this checkout") in done.stderr
    assert not (clone / "runs").exists()


def test_a_depth_one_clone_says_its_citations_were_not_checked(amended: Path, tmp_path: Path) -> None:
    clone = tmp_path / "ci"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{amended}", str(clone))
    code, out = _verify(clone)
    assert "BROKEN" not in out, out
    assert code == 0
    assert ("1 amendment citation(s) not checked: shallow clone, the history they cite may be cut off "
            "(git fetch --unshallow, then verify again)") in out
    assert "note: shallow clone: only the commits this clone holds were checked" in out


def test_without_git_on_path_the_chains_and_ledger_are_still_checked(amended: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(amended, ws, symlinks=True)
    empty = tmp_path / "bin"
    empty.mkdir()
    code, out = _verify(ws, PATH=str(empty))
    assert code == 0, out
    assert re.search(r"entry 3 \(Amendment .*\) OK", out) and "3 line(s), each chained to the lines before it" in out
    assert "git: not checked: git is not on PATH, so only the chain and the ledger witness it" in out
    assert "1 amendment citation(s) not checked: git is not on PATH" in out
    # ... and a broken chain is still BROKEN without git
    record = ws / "gates" / "lv-bronte.md"
    record.write_bytes(record.read_bytes().replace(b"+0.193", b"+0.293", 1))
    code, out = _verify(ws, PATH=str(empty))
    assert code == 1 and "BROKEN" in out


def test_a_ledger_deleted_beside_its_run_data_is_broken(amended: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(amended, ws, symlinks=True)
    assert _verify(ws)[0] == 0
    (ws / "runs" / "lv-bronte" / "entries.jsonl").unlink()
    code, out = _verify(ws)
    assert code == 1, out
    assert ("BROKEN: lv-bronte's run data is here (runs/lv-bronte/recorded.json) but its ledger "
            "runs/lv-bronte/entries.jsonl is gone") in out
    shutil.rmtree(ws / "runs")  # no run data at all (a clone): the chains and git witness, no BROKEN
    code, out = _verify(ws)
    assert code == 0, out
    assert "no run ledger lists it (run data absent?)" in out


def _outside_workspace(base: Path) -> Path:
    """A workspace whose corpora sit beside it in ../shared, named by relative paths, registered and committed."""
    root = base / "ws"
    spec = base_spec("lv-x")
    spec["corpora"] = {"heldout": ["../shared/held/*.txt"], "training": ["../shared/train.txt"],
                       "background": ["corpora/back/*.txt"]}
    from helpers.workspace import BACK, HELD, TRAIN

    make_workspace(root, spec, corpora={"../shared/held/held.txt": HELD, "../shared/train.txt": TRAIN,
                                        "corpora/back/back.txt": BACK})
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "workspace")
    done = run_cli("register", "lv-x", "-C", str(root))
    assert done.code == 0, done.stderr
    return root


def test_files_outside_the_workspace_are_pinned_by_the_specs_path_and_a_clone_rechecks(tmp_path: Path) -> None:
    root = _outside_workspace(tmp_path / "a")
    record = json.loads((root / "preregistrations" / "lv-x.registration.json").read_text())
    assert set(record["files"]) == {"../shared/held/held.txt", "../shared/train.txt", "corpora/back/back.txt",
                                    "prompts/beats.txt"}
    clone = tmp_path / "b" / "ws"
    git(tmp_path, "clone", "-q", str(root), str(clone))
    shutil.copytree(tmp_path / "a" / "shared", tmp_path / "b" / "shared")
    assert check_registered(load_spec(clone, "lv-x")).spec_sha256 == record["spec_sha256"]
    (tmp_path / "b" / "shared" / "train.txt").write_text("other words\n", encoding="utf-8")
    with pytest.raises(VoicegateError, match="registered file changed since registration: ../shared/train.txt"):
        check_registered(load_spec(clone, "lv-x"))


def test_an_old_record_keyed_by_absolute_paths_still_reads_here_and_in_a_clone(tmp_path: Path) -> None:
    root = _outside_workspace(tmp_path / "a")
    path = root / "preregistrations" / "lv-x.registration.json"
    record = json.loads(path.read_text())
    old = {(f"{root}/{k}" if k.startswith("../") else k): v for k, v in record["files"].items()}
    assert any(k.startswith("/") for k in old)
    path.write_text(json.dumps({**record, "files": old}, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    git(root, "commit", "-q", "-am", "voicegate: register lv-x")  # an older voicegate's register wrote it
    check_registered(load_spec(root, "lv-x"))
    clone = tmp_path / "b" / "ws"
    git(tmp_path, "clone", "-q", str(root), str(clone))
    shutil.copytree(tmp_path / "a" / "shared", tmp_path / "b" / "shared")
    check_registered(load_spec(clone, "lv-x"))
