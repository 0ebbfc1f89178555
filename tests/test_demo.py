"""Issue 8: `voicegate demo` runs a whole gate offline, loopback only, and leaves verifiable artifacts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

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
    probe = "import socket\ntry:\n    socket.create_connection(('192.0.2.1', 80), timeout=1)\nexcept OSError as e:\n    print(e)\n"
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
    assert arms["ckpt475"]["voice"] == {"global-max-spread": "FAIL", "pairwise-max-spread": "PASS"}
    assert arms["ckpt475"]["disagree"] is True
    assert arms["ckpt925"]["voice"] == {"global-max-spread": "FAIL", "pairwise-max-spread": "FAIL"}
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

    # and the chains verify, in a fresh process, without the seat
    verify = subprocess.run([sys.executable, "-m", "voicegate", "verify", "lv-marlowe"], cwd=ws, env=env,
                            capture_output=True, text=True, check=False)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert (ws / "runs" / "lv-marlowe" / "report.html").read_text().count("<svg") >= 4


def test_demo_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    done = subprocess.run([sys.executable, "-m", "voicegate", "demo", str(tmp_path)], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 2
    assert "not empty" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


REPO = Path(__file__).resolve().parents[1]


def test_the_repository_holds_the_demo_gate_as_voicegate_wrote_it() -> None:
    from voicegate.demo._workspace import PRESERVED
    from voicegate.spec._registration import check_registered
    from voicegate.spec._spec import load_spec

    # the committed spec and inputs are the demo's own, byte for byte, and still match the registration
    for rel, text in PRESERVED.items():
        assert (REPO / rel).read_text(encoding="utf-8") == text \
            or rel.startswith(("demo/adapters/", "demo/deploy/")), rel
    check_registered(load_spec(REPO, "lv-marlowe"))
    record = (REPO / "gates" / "lv-marlowe.md").read_text()
    assert "## Amendment" in record and "DISAGREE" in record
    done = subprocess.run([sys.executable, "-m", "voicegate", "verify", "lv-marlowe", "-C", str(REPO)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every chain holds" in done.stdout


def _demo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "voicegate", "demo", *args], capture_output=True, text=True,
                          check=False, timeout=120, env={**os.environ, **(env or {})})


def test_demo_seat_vllm_needs_voices_and_says_what_is_missing(tmp_path: Path) -> None:
    done = _demo(str(tmp_path / "a"), "--seat", "vllm")
    assert done.returncode == 2 and "--voices DIR" in done.stderr and "Traceback" not in done.stderr
    done = _demo(str(tmp_path / "b"), "--seat", "vllm", "--voices", str(tmp_path))
    assert done.returncode == 2 and "not a tiny-voices folder" in done.stderr and "carrier/config.json" in done.stderr
    done = _demo(str(tmp_path / "c"), "--seat", "gpu")
    assert done.returncode == 2 and "--seat must be 'standin' or 'vllm'" in done.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
