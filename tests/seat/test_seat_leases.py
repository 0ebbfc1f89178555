"""What a SIGKILLed run left loaded is known seat-wide (`seat._leases`).

A run of gate A in one workspace is SIGKILLed after its runtime load; `seat models` names the
adapter as left by a killed run (text and --json), and the next `generate` of another gate in
another workspace unloads it, with one note. A lease whose owner is alive (a sleeping child's pid),
one from another host and an adapter the fleet serves are never unloaded. Every test has its own
`VOICEGATE_STATE_DIR` (conftest), so no lease crosses tests or reaches the real home.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from helpers.workspace import cli, gate_spec, registered_workspace, rows, run_cli

from voicegate.seat import StandinSeat, lease_path, read_leases, state_dir
from voicegate.seat._leases import Lease, _boot_id, _proc_stat, owner_state

A, B = "lv-lease-a", "lv-lease-b"
FLEET = {f"{A}-ckpt475": f"/adapters/{A}/ckpt475", f"{B}-ckpt475": f"/adapters/{B}/ckpt475"}
LEFT = f"{A}-ckpt925"          # gate A's runtime-loaded candidate
FAST = ("--retries", "6", "--retry-budget", "5")


def _seat(**kw) -> StandinSeat:
    return StandinSeat(adapters=dict(FLEET), **kw)


def _kill_after_load(seat: StandinSeat, root: Path, gate: str) -> int:
    """Run `generate gate` as a real process, SIGKILL it once its runtime load landed and a row is stored."""
    generations = root / "runs" / gate / "generations.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "voicegate", "generate", gate, "--quiet", *FAST], cwd=root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if LEFT in seat.served() and generations.exists() and generations.read_bytes().count(b"\n") >= 1:
            break
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before the kill: {proc.stderr.read().decode() if proc.stderr else ''}")
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    return proc.pid


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])


def _write_leases(url: str, leases: list[Lease]) -> None:
    path = lease_path(url)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"seat": url, "leases": [x.as_dict() for x in leases]}), encoding="utf-8")


def _lease(model: str, root: str, pid: int, *, host: str | None = None, start: str | None = None,
           gate: str = "lv-other", where: Path = Path("/nowhere")) -> Lease:
    return Lease(model, root, gate, str(where), str(where / "runs" / gate),
                 str(where / "runs" / gate / "adapters.json"),
                 "x", host or socket.gethostname(), pid, _boot_id(), start, "2025-01-01T00:00:00Z")


def _load(seat: StandinSeat, model: str, root: str) -> None:
    assert httpx.post(f"{seat.url}/load_lora_adapter", json={"lora_name": model, "lora_path": root}).status_code == 200


def _by_id(out: str) -> dict[str, dict]:
    return {m["id"]: m for m in json.loads(out)["models"]}


def test_a_killed_runs_adapter_is_reported_and_unloaded_by_another_gates_run(tmp_path):
    with _seat(token_time=0.01, slots=2) as seat:
        ws1 = registered_workspace(tmp_path / "ws1", gate_spec(A, url=seat.url, seeds=[101, 202, 303], concurrency=2))
        ws2 = registered_workspace(tmp_path / "ws2", gate_spec(B, url=seat.url))
        pid = _kill_after_load(seat, ws1, A)
        assert LEFT in seat.runtime                                   # the kill left it loaded
        assert [(x.model, x.gate, x.pid) for x in read_leases(seat.url)] == [(LEFT, A, pid)]

        # `seat models` tells the leftover from the fleet's adapters, in text and JSON.
        code, out, _ = run_cli("seat", "models", "--seat", seat.url)
        assert code == 0
        lines = out.splitlines()
        row = next(i for i, line in enumerate(lines) if line.split()[:1] == [LEFT])
        assert lines[row + 1].strip() == (f"^ left loaded by a killed voicegate run of {A} (workspace {ws1.resolve()}, "
                                          f"pid {pid}): the next voicegate run on this seat unloads it")
        assert sum("voicegate run" in line for line in lines) == 1    # the fleet's adapters carry no mark
        code, out, _ = run_cli("seat", "models", "--seat", seat.url, "--json")
        models = _by_id(out)
        mark = models[LEFT]["voicegate"]
        assert mark["state"] == "killed" and mark["gate"] == A and mark["pid"] == pid
        assert mark["workspace"] == str(ws1.resolve()) and mark["run_dir"] == str((ws1 / "runs" / A).resolve())
        assert mark["host"] == socket.gethostname() and mark["adapter_path"] == f"/adapters/{A}/ckpt925"
        assert all(models[m]["voicegate"] is None for m in (*FLEET, "voices-base"))

        # Another gate, another workspace: its generate unloads the leftover first, says so once, and runs.
        done = cli(ws2, "generate", B, "--quiet", *FAST)
        assert done.returncode == 0, done.stderr
        notes = [line for line in done.stderr.splitlines() if "left loaded by a killed voicegate run" in line]
        assert notes == [(f"voicegate: note: unloaded {LEFT} from {seat.url}: left loaded by a killed voicegate run "
                          f"({A} in {ws1.resolve()}, pid {pid})")]
        assert LEFT not in seat.runtime and seat.runtime == {}        # B's own runtime load unloaded too
        assert seat.lora_modules == FLEET                             # the fleet's, untouched
        assert len(rows(ws2, B)) == 18
        assert read_leases(seat.url) == [] and not lease_path(seat.url).exists()
        # A's own tracking file was told (no run of A held its gate): A's next run does not try it blindly.
        assert not (ws1 / "runs" / A / "adapters.json").exists()
        unloads = [e for e in seat.requests() if e["path"] == "/v1/unload_lora_adapter"]
        assert sum(1 for e in unloads if json.dumps(e).count(LEFT)) == 1

        # A resumes: it loads its voice again, finishes, and leaves nothing loaded and no lease.
        again = cli(ws1, "generate", A, "--quiet", *FAST)
        assert again.returncode == 0, again.stderr
        assert "killed voicegate run" not in again.stderr
        assert seat.runtime == {} and seat.lora_modules == FLEET and read_leases(seat.url) == []


def test_the_same_gates_killed_run_is_adopted_not_unloaded_twice(tmp_path):
    """The gate's own next run keeps the adapter (no unload and reload) and takes the lease over."""
    with _seat(token_time=0.01, slots=2) as seat:
        ws = registered_workspace(tmp_path / "ws", gate_spec(A, url=seat.url, seeds=[101, 202, 303], concurrency=2))
        _kill_after_load(seat, ws, A)
        (ws / "runs" / A / "adapters.json").unlink()   # the tracking file lost: the lease still says it is A's
        done = cli(ws, "generate", A, "--quiet", *FAST)
        assert done.returncode == 0, done.stderr
        assert "killed voicegate run" not in done.stderr
        loads = [e for e in seat.requests() if e["path"] == "/v1/load_lora_adapter"]
        assert len(loads) == 1                                        # only the killed run's
        assert seat.runtime == {} and read_leases(seat.url) == []


def test_a_live_runs_lease_another_hosts_and_the_fleets_adapters_are_never_unloaded(tmp_path):
    live = _sleeper()
    gone = _sleeper()
    gone.kill()
    gone.wait()
    try:
        with _seat() as seat:
            _load(seat, "lv-live-x", "/adapters/live/x")
            _load(seat, "lv-far-x", "/adapters/far/x")
            stat = _proc_stat(live.pid)
            _write_leases(seat.url, [
                _lease("lv-live-x", "/adapters/live/x", live.pid, start=stat[1] if stat else None, gate="lv-live"),
                _lease("lv-far-x", "/adapters/far/x", 1, host="another-host.example", gate="lv-far"),
                # a killed run's lease of a name the fleet now serves from its own path: not the run's adapter
                _lease(f"{A}-ckpt475", "/adapters/somewhere-else", gone.pid, gate="lv-gone"),
            ])
            code, out, _ = run_cli("seat", "models", "--seat", seat.url, "--json")
            assert code == 0
            models = _by_id(out)
            assert models["lv-live-x"]["voicegate"]["state"] == "running"
            assert models["lv-live-x"]["voicegate"]["note"] == \
                f"loaded by a running voicegate run (lv-live, pid {live.pid})"
            assert models["lv-far-x"]["voicegate"]["state"] == "elsewhere"
            assert models[f"{A}-ckpt475"]["voicegate"] is None        # served from another root: the fleet's
            code, out, _ = run_cli("seat", "models", "--seat", seat.url)
            assert code == 0
            assert f"^ loaded by a running voicegate run (lv-live, pid {live.pid})" in out
            assert "^ loaded by a voicegate run of lv-far on host another-host.example" in out

            ws = registered_workspace(tmp_path / "ws", gate_spec(B, url=seat.url))
            done = cli(ws, "generate", B, "--quiet", *FAST)
            assert done.returncode == 0, done.stderr
            assert "note: unloaded" not in done.stderr
            assert seat.runtime == {"lv-live-x": "/adapters/live/x", "lv-far-x": "/adapters/far/x"}
            assert seat.lora_modules == FLEET
            # the live and far leases stay; the dead one (its adapter not on the seat) is dropped
            assert sorted(x.model for x in read_leases(seat.url)) == ["lv-far-x", "lv-live-x"]

            # Once the owner is gone, the same lease reads as a killed run's.
            live.kill()
            live.wait()
            code, out, _ = run_cli("seat", "models", "--seat", seat.url, "--json")
            assert code == 0 and _by_id(out)["lv-live-x"]["voicegate"]["state"] == "killed"
    finally:
        live.kill()
        live.wait()


def test_an_unreadable_lease_file_is_said_and_set_aside_never_trusted(tmp_path):
    with _seat() as seat:
        _load(seat, "lv-unknown-x", "/adapters/unknown/x")
        path = lease_path(seat.url)
        path.parent.mkdir(parents=True)
        path.write_text("{not json", encoding="utf-8")
        code, out, err = run_cli("seat", "models", "--seat", seat.url, "--json")
        assert code == 0 and "cannot be read" in err and "shown without them" in err
        assert _by_id(out)["lv-unknown-x"]["voicegate"] is None
        ws = registered_workspace(tmp_path / "ws", gate_spec(B, url=seat.url))
        done = cli(ws, "generate", B, "--quiet", *FAST)
        assert done.returncode == 0, done.stderr
        assert f"moved to {path}.unreadable" in done.stderr
        assert seat.runtime == {"lv-unknown-x": "/adapters/unknown/x"}   # no lease, so not voicegate's to unload
        assert path.with_name(path.name + ".unreadable").read_text(encoding="utf-8") == "{not json"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to see a pid's start time")
def test_a_reused_pid_or_a_zombie_is_a_dead_owner():
    host, boot = socket.gethostname(), _boot_id()
    stat = _proc_stat(os.getpid())
    assert stat is not None
    assert owner_state(host, os.getpid(), boot, stat[1]) == "running"
    assert owner_state(host, os.getpid(), boot, str(int(stat[1]) + 1)) == "killed"   # the pid, another process
    assert owner_state(host, os.getpid(), "another-boot", stat[1]) == "killed"
    assert owner_state("another-host.example", os.getpid(), boot, stat[1]) == "elsewhere"
    child = _sleeper()
    try:
        child.send_signal(signal.SIGKILL)
        deadline = time.monotonic() + 10
        while (_proc_stat(child.pid) or ("?",))[0] != "Z" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert owner_state(host, child.pid, boot, None) == "killed"   # killed, not yet reaped
    finally:
        child.wait()


def test_the_state_directory():
    assert state_dir({"VOICEGATE_STATE_DIR": "/s", "XDG_STATE_HOME": "/x"}) == Path("/s")
    assert state_dir({"XDG_STATE_HOME": "/x"}) == Path("/x/voicegate")
    assert state_dir({}) == Path.home() / ".local" / "state" / "voicegate"
    # one seat, however its URL is spelled
    assert lease_path("http://localhost:8027/v1/") == lease_path("http://127.0.0.1:8027/v1")
    assert lease_path("http://user:pw@127.0.0.1:8027/v1") == lease_path("http://127.0.0.1:8027/v1")
    assert lease_path("http://127.0.0.1:8028/v1") != lease_path("http://127.0.0.1:8027/v1")
    assert str(lease_path("http://127.0.0.1:8027/v1")).startswith(os.environ["VOICEGATE_STATE_DIR"])
