"""`voicegate demo` runs a whole gate offline, loopback only, and leaves verifiable artifacts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from helpers.shared import VOICES as SHARED_VOICES
from helpers.workspace import rules_of_gate

# Loaded into every Python process of the demo (it spawns `python -m voicegate` children):
# any connection or name lookup that is not loopback is refused and written down.
GUARD = textwrap.dedent('''
    import os, socket
    _LOG = os.environ["VOICEGATE_TEST_NET_LOG"]
    _LOOPBACK = ("127.", "::1", "localhost")

    def _note(what):
        with open(_LOG, "a") as fh:
            fh.write(repr(what) + "\\n")

    def _check(address):
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, bytes):
            host = host.decode()
        if isinstance(host, str) and not host.startswith(_LOOPBACK) and not host.startswith("/"):
            _note(address)
            raise ConnectionRefusedError(f"network guard: {address!r} is not loopback")

    _connect = socket.socket.connect
    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _check(address)
        return _connect(self, address)
    socket.socket.connect = connect

    _connect_ex = socket.socket.connect_ex
    def connect_ex(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _check(address)
        return _connect_ex(self, address)
    socket.socket.connect_ex = connect_ex

    _getaddrinfo = socket.getaddrinfo
    def getaddrinfo(host, *args, **kwargs):
        if host is not None:
            _check((host,))
        return _getaddrinfo(host, *args, **kwargs)
    socket.getaddrinfo = getaddrinfo
''')


def _guarded_env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    guard_dir = tmp_path / "guard"
    guard_dir.mkdir()
    (guard_dir / "sitecustomize.py").write_text(GUARD)
    log = tmp_path / "net.log"
    log.write_text("")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(guard_dir), os.environ.get("PYTHONPATH", "")]),
           "VOICEGATE_TEST_NET_LOG": str(log), "HF_HUB_OFFLINE": "1"}
    env.pop("VOICEGATE_SEAT_URL", None)
    env.pop("VOICEGATE_WORKSPACE", None)
    return env, log


def test_the_guard_refuses_outside_addresses(tmp_path: Path) -> None:
    env, log = _guarded_env(tmp_path)
    probe = ("import socket\ntry:\n    socket.create_connection(('192.0.2.1', 80), timeout=1)\n"
             "except OSError as e:\n    print(e)\n")
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=False)
    assert "network guard" in done.stdout
    assert "192.0.2.1" in log.read_text()


def test_demo_runs_a_whole_gate_offline(tmp_path: Path) -> None:
    env, log = _guarded_env(tmp_path)
    ws = tmp_path / "demo"
    done = subprocess.run([sys.executable, "-m", "voicegate", "demo", str(ws)], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert log.read_text() == "", f"the demo tried to leave loopback: {log.read_text()}"
    out = done.stdout

    # both floors, the DISAGREE flag and the verdicts of all three axes are printed
    for text in ("global", "pairwise", "DISAGREE", "PASS", "FAIL", "NOT-COPIED", "COPIED", "NO-DAMAGE", "DAMAGE",
                 "stand-in seat is stopped"):
        assert text in out, text

    # every artifact it promised exists
    promised = [line.strip() for line in out.splitlines() if line.startswith(f"  {ws}")]
    assert len(promised) >= 6
    for path in promised:
        assert Path(path).is_file(), path

    scores = json.loads((ws / "runs" / "lv-marlowe" / "scores.json").read_text())
    arms = {a["name"]: a for a in scores["arms"]}
    assert scores["rule"] == "global-max-spread"
    # registered today, so every rule in force today is computed beside the seeds' two rules
    demo_rules = set(rules_of_gate(ws, "lv-marlowe"))
    assert {"global-max-spread", "pairwise-max-spread", "welch-t"} <= demo_rules
    known = ("global-max-spread", "pairwise-max-spread", "welch-t", "welch-t-min-effect")
    expected = {"ckpt475": {"global-max-spread": "FAIL", "pairwise-max-spread": "PASS", "welch-t": "PASS",
                            "welch-t-min-effect": "PASS"},
                "ckpt925": dict.fromkeys(known, "FAIL")}
    for name, verdicts in expected.items():
        assert set(arms[name]["voice"]) == demo_rules, name
        assert {r: arms[name]["voice"][r] for r in known} == verdicts, name
    assert arms["ckpt475"]["disagree"] is True
    assert arms["ckpt1400"]["copying"] == "COPIED"
    assert arms["ckpt1850"]["damage"] == "DAMAGE"
    # the global floor is ckpt925's outlier spread, for every candidate
    assert {round(a["floors"]["global-max-spread"], 9) for a in arms.values() if a["role"] == "candidate"} == {
        round(arms["ckpt925"]["spread"], 9)}

    amendment = json.loads((ws / "runs" / "lv-marlowe" / "amendments.jsonl").read_text().splitlines()[0])
    assert amendment["rule_to"] == "pairwise-max-spread"
    assert amendment["result"]["ships"] == "ckpt475"

    # the compose edit was comment-only
    compose = ws / "demo" / "deploy" / "compose.yaml"
    data = yaml.safe_load(compose.read_text())
    assert "lv-marlowe=/adapters/lv-marlowe-v1" in data["services"]["vllm-voices"]["command"]

    # The seeds' story in the seeds' order: score under global (ckpt475 FAIL), a person ships it against the
    # verdict (shown as such), the pairwise rule registered for a second, un-run gate, then the amendment cites it.
    at = {what: out.index(what) for what in (
        "$ voicegate score lv-marlowe", "$ voicegate ship lv-marlowe ckpt475",
        "warning: ckpt475 is not what the gate recommends under global-max-spread",
        "$ voicegate register lv-marlowe-v2", "$ voicegate amend lv-marlowe",
        "cites: pairwise-max-spread was registered for lv-marlowe-v2 AFTER this gate's numbers",
        "$ voicegate verify lv-marlowe")}
    assert list(at.values()) == sorted(at.values()), at
    assert "AGAINST the verdict" in out[at["$ voicegate score lv-marlowe"]:at["$ voicegate ship lv-marlowe ckpt475"]]
    second = yaml.safe_load((ws / "preregistrations" / "lv-marlowe-v2.yaml").read_text())
    assert second["floor"] == {"rule": "pairwise-max-spread"}
    assert not (ws / "runs" / "lv-marlowe-v2").exists(), "the second gate is never run"
    log = subprocess.run(["git", "log", "--format=%H %s"], cwd=ws, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert [line.split(" ", 1)[1] for line in log][:2] == ["voicegate: register lv-marlowe-v2",
                                                           "voicegate: register lv-marlowe"]
    commit = log[0].split()[0]
    reg = json.loads((ws / "preregistrations" / "lv-marlowe-v2.registration.json").read_text())
    record = (ws / "gates" / "lv-marlowe.md").read_text()
    numbers = re.search(r"numbers first recorded at workspace commit `([0-9a-f]{40})`", record)
    assert numbers is not None
    # the second gate was registered after lv-marlowe's numbers: the amendment is a post-hoc correction
    assert amendment["citation"] == {"gate": "lv-marlowe-v2", "commit": commit, "spec_sha256": reg["spec_sha256"],
                                     "rule": "pairwise-max-spread", "committed": reg["registered_at"],
                                     "numbers_at": numbers.group(1), "after_numbers": 1, "post_hoc": True}
    assert f"by gate `lv-marlowe-v2`, registered in commit `{commit}`" in record
    assert "**Post-hoc correction cited.**" in record
    assert out.rstrip().splitlines()[-4:] == [
        "next:", f"  open the report:        {(ws / 'runs' / 'lv-marlowe' / 'report.html').as_uri()}",
        "  every number explained: docs/concepts.md; your first gate step by step: docs/tutorial.md",
        "  start your own gate:    voicegate init DIR"]

    # and the chains verify, in a fresh process, without the seat
    verify = subprocess.run([sys.executable, "-m", "voicegate", "verify", "lv-marlowe"], cwd=ws, env=env,
                            capture_output=True, text=True, check=False)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "citation: entry 4 is a POST-HOC correction: it cites lv-marlowe-v2's registration" in verify.stdout
    # the seeds' order: the defect noted and left alone (entry 3), then the post-hoc correction that says so
    record = (ws / "gates" / "lv-marlowe.md").read_text()
    assert record.index("## Note — ") < record.index("## Amendment — ")
    assert "Noted on the record before this correction: “global-max-spread lets one arm's outlier seed" in record
    assert (ws / "runs" / "lv-marlowe" / "report.html").read_text().count("<svg") >= 4


def test_demo_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    done = subprocess.run([sys.executable, "-m", "voicegate", "demo", str(tmp_path)], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 2
    assert "not empty" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


REPO = Path(__file__).resolve().parents[2]


def test_the_repository_holds_the_demo_gate_as_voicegate_wrote_it() -> None:
    from voicegate._errors import VoicegateError
    from voicegate.demo._workspace import PRESERVED
    from voicegate.spec._registration import check_registered, spec_sha256
    from voicegate.spec._spec import load_spec

    # the committed spec and inputs are the demo's own, byte for byte, and still match the registration
    for rel, text in PRESERVED.items():
        assert (REPO / rel).read_text(encoding="utf-8") == text \
            or rel.startswith(("demo/adapters/", "demo/deploy/")), rel
    spec = load_spec(REPO, "lv-marlowe")
    # Registered in the demo's own workspace: its spec still hashes to the record, but this repository's history
    # holds no commit `register` made for it, so nothing here may score or amend it as a registered gate.
    assert spec_sha256(spec) == json.loads(spec.registration_path.read_text())["spec_sha256"]
    with pytest.raises(VoicegateError, match="no commit made by `voicegate register lv-marlowe` holds it"):
        check_registered(spec)
    record = (REPO / "gates" / "lv-marlowe.md").read_text()
    assert "## Amendment" in record and "DISAGREE" in record
    done = subprocess.run([sys.executable, "-m", "voicegate", "verify", "lv-marlowe", "-C", str(REPO)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every chain holds" in done.stdout


def _demo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "voicegate", "demo", *args], capture_output=True, text=True,
                          check=False, timeout=120, env={**os.environ, **(env or {})})


def test_demo_seat_vllm_needs_voices_and_says_what_is_missing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("VOICEGATE_SHARED", raising=False)
    done = _demo(str(tmp_path / "a"), "--seat", "vllm")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr == ("voicegate: --seat vllm needs --voices DIR (the tiny-voices folder), or $VOICEGATE_SHARED "
                           "set to the fixtures folder (docs/fixtures.md)\n")
    # The fixtures variable names the folder: there, the same check as for a --voices given.
    done = _demo(str(tmp_path / "a"), "--seat", "vllm", env={"VOICEGATE_SHARED": str(tmp_path / "shared")})
    assert done.returncode == 2 and "tiny-voices is not a tiny-voices folder" in done.stderr
    assert str(tmp_path / "shared" / "fixtures" / "tiny-voices") in done.stderr
    done = _demo(str(tmp_path / "b"), "--seat", "vllm", "--voices", str(tmp_path))
    assert done.returncode == 2 and "not a tiny-voices folder" in done.stderr and "carrier/config.json" in done.stderr
    done = _demo(str(tmp_path / "c"), "--seat", "gpu")
    assert done.returncode == 2 and "--seat must be 'standin' or 'vllm'" in done.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


VOICES = SHARED_VOICES


def test_the_vllm_demo_tells_the_same_story_through_the_same_steps_and_ends_the_same(
        tmp_path: Path, monkeypatch) -> None:
    """`--seat vllm` shares the stand-in demo's steps, progress and ending; only the seat differs."""
    import pytest

    from voicegate.demo import _run

    if not (VOICES / "carrier" / "config.json").is_file():
        pytest.skip(f"tiny-voices fixture not present at {VOICES}")
    ran: list[tuple[list[str], float | None]] = []

    def fake_run_steps(root: Path, all_steps: list, echo, *, progress_every: float | None = None) -> None:
        ran.extend((step.args, progress_every) for step in all_steps)

    monkeypatch.setattr(_run, "_run_steps", fake_run_steps)
    monkeypatch.setattr(_run.tempfile, "mkdtemp", lambda prefix="": str(tmp_path / "vllm-demo"))
    lines: list[str] = []
    root = _run.run_vllm_demo(None, lines.append, voices=VOICES, seat_url="http://127.0.0.1:9/v1")
    standin = [step.args[0:2] for step in _run.steps("http://x", "lv-bronte")]
    assert [args[0:2] for args, _ in ran] == standin
    assert [a[0:2] for a in standin] == [["register", "lv-bronte"], ["generate", "lv-bronte"], ["score", "lv-bronte"],
                                         ["ship", "lv-bronte"], ["note", "lv-bronte"], ["register", "lv-bronte-v2"],
                                         ["amend", "lv-bronte"],
                                         ["verify", "lv-bronte"], ["report", "lv-bronte"]]
    assert ran[1][0][3] == "http://127.0.0.1:9/v1" and all(every for _, every in ran)
    assert lines[-5:] == [
        "\nnext:", f"  open the report:        {(root / 'runs' / 'lv-bronte' / 'report.html').as_uri()}",
        "  every number explained: docs/concepts.md; your first gate step by step: docs/tutorial.md",
        "  start your own gate:    voicegate init DIR",
        f"  this workspace is a temporary folder, kept so you can look: rm -r {root} when done"]


def test_generate_progress_is_printed_while_the_child_runs(tmp_path: Path) -> None:
    from voicegate.demo._run import _progress
    from voicegate.demo._workspace import GATE, write_workspace
    from voicegate.generate._schedule import build_schedule
    from voicegate.spec._spec import load_spec

    write_workspace(tmp_path / "ws")
    total = len(build_schedule(load_spec(tmp_path / "ws", GATE)))
    gens = tmp_path / "ws" / "runs" / GATE / "generations.jsonl"
    gens.parent.mkdir(parents=True)
    gens.write_text('{"arm": "base"}\n' * 3)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"])
    lines: list[str] = []
    _progress(tmp_path / "ws", GATE, child, lines.append, 0.3)
    assert child.returncode == 0
    assert lines and lines[0].startswith(f"  generated 3/{total} (")
    assert len(lines) == 1, "a count that did not move is not printed again"
