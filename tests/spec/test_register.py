"""Registration freezes the spec and its files, commits them, and is enforced later."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from helpers.workspace import cli, git, make_workspace, run_cli, tree_snapshot, voicegate

from voicegate._hashing import sha256_json
from voicegate.spec import RULES, rules_in_force


def _registered(tmp_path: Path) -> Path:
    path = make_workspace(tmp_path)
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "workspace")
    done = voicegate(tmp_path, "register", "lv-test")
    assert done.returncode == 0, done.stderr
    return path


def test_register_commits_spec_and_record(tmp_path: Path) -> None:
    path = _registered(tmp_path)
    record = json.loads((tmp_path / "preregistrations" / "lv-test.registration.json").read_text())
    assert record["spec_sha256"] == sha256_json(yaml.safe_load(path.read_text()))
    assert record["deciding_rule"] == "pairwise-max-spread"
    # registered today: every rule registered on or before today is in force (RULES, by their dates), each computed
    today = dt.date.fromisoformat(record["registered_at"][:10])
    assert set(record["rules_in_force"]) == set(rules_in_force(today))
    assert {"global-max-spread", "pairwise-max-spread"} <= set(record["rules_in_force"])
    assert all(record["rules_in_force"][rid] == {"version": RULES[rid].version,
                                                 "registered": RULES[rid].registered.isoformat()}
               for rid in record["rules_in_force"])
    assert record["files"]["corpora/held/held.txt"]
    assert record["files"]["prompts/beats.txt"]
    # committed, clean, and the message names the hash
    assert git(tmp_path, "status", "--porcelain", "preregistrations") == ""
    message = git(tmp_path, "log", "-1", "--format=%B")
    assert record["spec_sha256"] in message
    head = git(tmp_path, "rev-parse", "HEAD").strip()
    assert "lv-test.registration.json" in git(tmp_path, "show", "--stat", "--format=", head)
    tracked = git(tmp_path, "ls-files", "preregistrations").split()
    assert tracked == ["preregistrations/lv-test.registration.json", "preregistrations/lv-test.yaml"]


def test_register_records_the_spec_files_raw_bytes_sha256(tmp_path: Path) -> None:
    """Beside the canonical hash, the hash `sha256sum preregistrations/GATE.yaml` prints."""
    path = make_workspace(tmp_path)
    # comments and odd spacing: the canonical hash ignores them, the file hash does not
    path.write_bytes(b"# a comment the canonical hash never sees\n" + path.read_bytes().replace(b": ", b":   ", 1))
    raw = hashlib.sha256(path.read_bytes()).hexdigest()
    done = cli(tmp_path, "register", "lv-test")
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "preregistrations" / "lv-test.registration.json").read_text())
    assert record["spec_file_sha256"] == raw
    assert record["spec_sha256"] == sha256_json(yaml.safe_load(path.read_text())) != raw
    assert f"spec file sha256 {raw}  preregistrations/lv-test.yaml" in done.stdout
    assert f"spec file sha256 {raw}  preregistrations/lv-test.yaml" in git(tmp_path, "log", "-1", "--format=%B")
    # the committed spec is the file that was hashed: a fresh checkout's sha256sum agrees
    committed = subprocess.run(["git", "show", "HEAD:preregistrations/lv-test.yaml"], cwd=tmp_path, check=True,
                               capture_output=True).stdout
    assert hashlib.sha256(committed).hexdigest() == raw
    if shutil.which("sha256sum"):
        out = subprocess.run(["sha256sum", "preregistrations/lv-test.yaml"], cwd=tmp_path, check=True,
                             capture_output=True, text=True).stdout
        assert out.split() == [raw, "preregistrations/lv-test.yaml"]


def test_register_prints_the_commit(tmp_path: Path) -> None:
    make_workspace(tmp_path)
    done = cli(tmp_path, "register", "lv-test")
    assert done.returncode == 0, done.stderr
    assert git(tmp_path, "rev-parse", "HEAD").strip() in done.stdout


def test_register_outside_git_is_refused(tmp_path: Path) -> None:
    make_workspace(tmp_path, git_init=False)
    before = tree_snapshot(tmp_path)
    done = cli(tmp_path, "register", "lv-test")
    assert done.returncode == 2
    assert "not a git work tree" in done.stderr
    assert tree_snapshot(tmp_path) == before


def test_reregistering_needs_supersede_and_names_the_old_one(tmp_path: Path) -> None:
    path = _registered(tmp_path)
    first = json.loads((tmp_path / "preregistrations" / "lv-test.registration.json").read_text())
    raw = yaml.safe_load(path.read_text())
    raw["seeds"] = [101, 202, 303]
    path.write_text(yaml.safe_dump(raw))
    refused = cli(tmp_path, "register", "lv-test")
    assert refused.returncode == 2 and "--supersede" in refused.stderr
    done = cli(tmp_path, "register", "lv-test", "--supersede")
    assert done.returncode == 0, done.stderr
    second = json.loads((tmp_path / "preregistrations" / "lv-test.registration.json").read_text())
    assert second["supersedes"]["spec_sha256"] == first["spec_sha256"]
    # the superseded record stays in history
    assert first["spec_sha256"] in git(tmp_path, "show", "HEAD~1:preregistrations/lv-test.registration.json")


def test_registering_again_once_generations_exist_is_refused(tmp_path: Path) -> None:
    _registered(tmp_path)
    run = tmp_path / "runs" / "lv-test"
    run.mkdir(parents=True)
    (run / "generations.jsonl").write_text('{"arm": "base", "seed": 101, "prompt_id": "0", "text": "x"}\n')
    head = git(tmp_path, "rev-parse", "HEAD")
    for args in (["register", "lv-test"], ["register", "lv-test", "--supersede"]):
        done = cli(tmp_path, *args)
        assert done.returncode == 2
        assert "results already exist" in done.stderr
    assert git(tmp_path, "rev-parse", "HEAD") == head


def test_words_warning(tmp_path: Path) -> None:
    make_workspace(tmp_path)
    done = cli(tmp_path, "register", "lv-test")
    assert done.returncode == 0
    assert "per (arm, seed)" in done.stderr and "10,000" in done.stderr


def _edit(path: Path, mutate) -> bytes:
    original = path.read_bytes()
    raw = yaml.safe_load(original)
    mutate(raw)
    path.write_text(yaml.safe_dump(raw))
    return original


UNREACHABLE = "http://127.0.0.1:9/v1"
KEY = {"VOICES_API_KEY": "test-key"}  # the spec names this variable


def _check_commands(tmp_path: Path, expected: str) -> None:
    for args in (["score", "lv-test"], ["generate", "lv-test", "--seat", UNREACHABLE, "--quiet", "--retries", "1"]):
        done = cli(tmp_path, *args, env=KEY)
        assert done.returncode == 2, (args, done.returncode, done.stderr)
        assert expected in done.stderr, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1


def test_changed_seed_is_refused_by_name(tmp_path: Path) -> None:
    path = _registered(tmp_path)
    original = _edit(path, lambda raw: raw["seeds"].__setitem__(1, 203))
    _check_commands(tmp_path, "seeds[1]")
    path.write_bytes(original)
    # restored: generate gets past registration and fails only on the unreachable seat (exit 3)
    done = cli(tmp_path, "generate", "lv-test", "--seat", UNREACHABLE, "--quiet", "--retries", "1", env=KEY)
    assert done.returncode == 3, done.stderr


def test_changed_threshold_is_refused_by_name(tmp_path: Path) -> None:
    path = _registered(tmp_path)
    original = _edit(path, lambda raw: raw["copying"].__setitem__("tolerance", 0.05))
    _check_commands(tmp_path, "copying.tolerance")
    path.write_bytes(original)
    done = cli(tmp_path, "score", "lv-test")
    assert "differs from its registration" not in done.stderr


def test_changed_corpus_file_is_refused_by_name(tmp_path: Path) -> None:
    _registered(tmp_path)
    corpus = tmp_path / "corpora" / "train" / "train.txt"
    original = corpus.read_bytes()
    corpus.write_bytes(original + b"One more sentence.\n")
    _check_commands(tmp_path, "corpora/train/train.txt")
    corpus.write_bytes(original)
    done = cli(tmp_path, "generate", "lv-test", "--seat", UNREACHABLE, "--quiet", "--retries", "1", env=KEY)
    assert done.returncode == 3, done.stderr


def test_unregistered_spec_is_refused(tmp_path: Path) -> None:
    make_workspace(tmp_path)
    done = cli(tmp_path, "score", "lv-test")
    assert done.returncode == 2 and "not registered" in done.stderr


def test_cli_import_does_not_import_torch() -> None:
    code = ("import sys, voicegate.cli, voicegate.scoring, voicegate.seat, voicegate.artifacts; "
            "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules]; "
            "print(heavy); sys.exit(1 if heavy else 0)")
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_help_answers(tmp_path: Path) -> None:
    done = voicegate(tmp_path, "--help", timeout=20)
    assert done.returncode == 0
    for command in ("init", "register", "generate", "score", "amend", "ship", "verify", "report", "import",
                    "seat", "demo"):
        assert command in done.stdout


def raw_rule(example: str) -> tuple[str, int]:
    raw = yaml.safe_load(example)
    return raw["floor"]["rule"], len(raw["seeds"])


def test_init_lays_out_a_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    done = voicegate(tmp_path, "init", str(ws))
    assert done.returncode == 0, done.stderr
    for name in ("preregistrations", "gates", "runs"):
        assert (ws / name).is_dir()
    assert (ws / ".git").is_dir()
    assert "/runs/" in (ws / ".gitignore").read_text()
    example = (ws / "preregistrations" / "lv-example.yaml.example").read_text()
    # The strongest registered design by default (docs/validity.md: welch-t at 8 seeds ships ~0.9 of real voices).
    assert raw_rule(example) == ("welch-t", 8)
    # the example is a valid spec apart from its files: its keys are the schema's
    raw = yaml.safe_load(example)
    assert raw["gate"] == "lv-example"
    again = cli(tmp_path, "init", str(ws))
    assert again.returncode == 0
    assert (ws / ".gitignore").read_text().count("/runs/") == 1


def test_the_rules_in_force_are_those_registered_by_the_registration_date(tmp_path: Path) -> None:
    # A gate registered before welch-t@1 (2026-12-06) computes the two rules then in force; its scores never
    # grow a column a newer voicegate added, unless an amendment brings that rule in.
    path = make_workspace(tmp_path)
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "workspace")
    done = voicegate(tmp_path, "register", "lv-test", env={"SOURCE_DATE_EPOCH": "1796169600"})  # 2026-12-02
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "preregistrations" / "lv-test.registration.json").read_text())
    assert record["rules_in_force"] == {"global-max-spread": {"version": 1, "registered": "2026-09-16"},
                                        "pairwise-max-spread": {"version": 1, "registered": "2026-09-17"}}
    # A deciding rule that did not exist on the registration's date is refused, and nothing is written.
    spec = yaml.safe_load(path.read_text())
    spec["floor"] = {"rule": "welch-t"}
    path.write_text(yaml.safe_dump(spec))
    before = tree_snapshot(tmp_path)
    done = voicegate(tmp_path, "register", "lv-test", "--supersede", env={"SOURCE_DATE_EPOCH": "1796169600"})
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert ("deciding rule welch-t@1 was registered 2026-12-06, after this registration's date (2026-12-02)"
            in done.stderr)
    assert tree_snapshot(tmp_path) == before


def test_init_inside_another_repository_is_refused_without_inside(tmp_path: Path) -> None:
    # a newcomer standing in a clone of voicegate runs `voicegate init bronte-gate`.
    tool = tmp_path / "voicegate-clone"
    tool.mkdir()
    git(tool, "init", "-q")
    (tool / "README.md").write_text("the tool\n")
    git(tool, "add", "-A")
    git(tool, "commit", "-q", "-m", "tool")
    before = sorted(p.relative_to(tool) for p in tool.rglob("*") if ".git" not in p.parts)
    done = run_cli("init", "bronte-gate", cwd=tool)
    assert done.code == 2 and len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert f"is inside the git repository {tool}" in done.stderr and "--inside" in done.stderr
    assert sorted(p.relative_to(tool) for p in tool.rglob("*") if ".git" not in p.parts) == before
    done = run_cli("init", "bronte-gate", "--inside", cwd=tool)
    assert done.code == 0, done.stderr
    assert f"a workspace inside the git repository {tool} (--inside)" in done.stdout
    assert not (tool / "bronte-gate" / ".git").exists() and (tool / "bronte-gate" / "preregistrations").is_dir()
    # its own repository's top (a workspace re-initialised in place) is not "another" repository
    assert run_cli("init", str(tool)).code == 0
