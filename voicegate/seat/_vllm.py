"""Start and stop a real vLLM-on-CPU server for the trained tiny voices.

Shared by `voicegate seat up`, `voicegate demo --seat vllm`, the real-seat integration tests and the
benchmarks: the seat package owns it, as it owns every way voicegate talks to or runs a seat.
The recipe is the measured one (``shared/docs/VLLM-CPU.md`` and the tiny-voices README):
``--dtype float32 --max-model-len 512 --enable-lora --max-lora-rank 16 --kv-cache-memory-bytes
128M --distributed-executor-backend uni`` with ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` and runtime
LoRA updating on. The server gets its own session so its whole process group (the engine too)
can be ended by its id; nothing else is ever signalled.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import httpx

from voicegate._errors import VoicegateError
from voicegate._threads import without_our_blas

VENV_ENV = "VOICEGATE_VLLM_VENV"
BASE_NAME = "voices-base"

# The fixture's voices, in the roles the gate gives them.
BRONTE_CHECKPOINTS = ("lv-bronte-ckpt60", "lv-bronte-ckpt475", "lv-bronte-ckpt925")
PARROT = "lv-bronte-parrot"
AUSTEN = "lv-austen"
ALL_VOICES = (*BRONTE_CHECKPOINTS, PARROT, AUSTEN)


def venv_dir() -> Path:
    return Path(os.environ.get(VENV_ENV) or Path.home() / ".cache" / "voicegate" / "vllm-venv")


def vllm_python() -> Path | None:
    """The python that can run vLLM: the project's vLLM venv, else this one if `vllm` imports."""
    venv_py = venv_dir() / "bin" / "python"
    if venv_py.exists():
        return venv_py
    if importlib.util.find_spec("vllm") is not None:
        return Path(sys.executable)
    return None


def why_no_vllm() -> str:
    return (f"no vLLM: {venv_dir()} has no bin/python and `vllm` does not import here "
            f"(in a clone of voicegate: `bash .ci/vllm-venv`; installed without one: the recipe in the README's "
            f"row \"the real seat\"; or point ${VENV_ENV} at one)")


def check_voices_dir(voices: Path) -> list[str]:
    """What is missing from a tiny-voices folder (empty when it holds the carrier and every voice)."""
    missing = []
    if not (voices / "carrier" / "config.json").is_file():
        missing.append("carrier/config.json")
    for name in ALL_VOICES:
        if not (voices / name / "adapter_config.json").is_file():
            missing.append(f"{name}/adapter_config.json")
    if not (voices / "prompts.txt").is_file():
        missing.append("prompts.txt")
    return missing


# Seconds `VllmServer.stop` waits after SIGTERM before it kills the group (vLLM idle: 0.5-2.4 s).
STOP_GRACE_S = 3.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def port_holder(port: int, host: str = "127.0.0.1") -> str | None:
    """Why a server could not listen on ``host:port`` now, or None when it could.

    "listening" when something answers a connect there (a seat may already be up); else the bind's
    error. The bind sets SO_REUSEADDR, as vLLM's (uvicorn's) own socket does: a port whose only holders
    are connections closing in TIME_WAIT (up to 60 s after a seat stopped) is free for vLLM, so a
    restart right after a stop is not refused.
    """
    with socket.socket() as probe:
        probe.settimeout(1.0)
        if probe.connect_ex((host, port)) == 0:
            return "listening"
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
        return None


@dataclass
class VllmServer:
    """A running vLLM server: its OpenAI base URL and the process group to end."""

    url: str
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    lora_modules: dict[str, Path]
    tmp: Path | None = None
    timings: dict[str, float] = field(default_factory=dict)
    killed: bool = False   # stop() had to SIGKILL the group: vLLM outlived the grace after SIGTERM

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self, grace: float = STOP_GRACE_S) -> float:
        """SIGTERM the server; if it is still there after `grace` seconds, SIGKILL its own process group.

        vLLM exits in 0.5-2.4 s on SIGTERM when idle, but with requests in flight it waited for them
        (30 s and more): a seat being stopped has no one left to answer, so what it was still
        generating is dropped with the group (the engine too). `killed` says whether that happened.
        """
        proc = self.proc
        if proc.poll() is not None:
            self._clean()
            return 0.0
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.killed = True
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        try:
            os.killpg(proc.pid, signal.SIGKILL)   # whatever of its own group is left
        except (ProcessLookupError, PermissionError):
            pass
        secs = round(time.monotonic() - t0, 2)
        self.timings["stop_s"] = secs
        self._clean()
        return secs

    def _clean(self) -> None:
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def last_error(self) -> str:
        lines = [ln.strip() for ln in self.log_tail().splitlines() if ln.strip()]
        return next((ln for ln in reversed(lines) if "Error" in ln), lines[-1] if lines else "(empty log)")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_vllm(carrier: Path, workdir: Path, *, lora_modules: dict[str, Path] | None = None,
               max_loras: int = 2, max_lora_rank: int = 16, timeout: float = 400.0,
               max_num_seqs: int | None = None, port: int | None = None, log_path: Path | None = None,
               extra_args: Sequence[str] = ()) -> VllmServer:
    """Start vLLM serving ``carrier`` as ``voices-base`` (plus ``lora_modules``) and wait for /health.

    ``port`` None picks a free loopback port; a given port must be free (refused before vLLM starts).
    ``log_path`` (default ``workdir/vllm-server.log``) gets vLLM's output, after a first line with the
    command; ``extra_args`` go last on vLLM's command line, so a value flag given there wins over the
    recipe's (argparse keeps the last); `seat._commands.check_vllm_args` refuses the ones voicegate owns.
    """
    python = vllm_python()
    if python is None:
        raise VoicegateError(why_no_vllm())
    workdir.mkdir(parents=True, exist_ok=True)
    # A private TMPDIR (vLLM leaves files there), short: its engine binds a unix socket in it and
    # a socket path longer than 107 bytes is refused (a deep workspace path was).
    if port is None:
        port = free_port()
    elif (held := port_holder(port)) is not None:
        raise VoicegateError(f"port {port} on 127.0.0.1 is not free ({held}): choose another with --port")
    tmp = Path(tempfile.mkdtemp(prefix="vg-vllm-"))
    env = {
        **without_our_blas(dict(os.environ)),
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "OMP_NUM_THREADS": os.environ.get("VOICEGATE_VLLM_THREADS", "1"),
        "TMPDIR": str(tmp),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    env.pop("PYTHONPATH", None)   # the venv must not import this project's tree
    modules = dict(lora_modules or {})
    args = [
        str(python), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(carrier), "--served-model-name", BASE_NAME,
        "--host", "127.0.0.1", "--port", str(port),
        "--enable-lora", "--max-lora-rank", str(max_lora_rank), "--max-loras", str(max_loras),
        "--max-model-len", "512", "--dtype", "float32", "--kv-cache-memory-bytes", "128M",
        "--distributed-executor-backend", "uni",
    ]
    if max_num_seqs is not None:
        args += ["--max-num-seqs", str(max_num_seqs)]
    if modules:
        args += ["--lora-modules", *(f"{name}={path}" for name, path in modules.items())]
    args += list(extra_args)
    log_path = log_path or workdir / "vllm-server.log"
    t0 = time.monotonic()
    with open(log_path, "wb") as log:
        log.write(f"$ {shlex.join(args)}\n".encode())   # what ran, for whoever reads the log later
        log.flush()
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=workdir,
                                start_new_session=True)
    server = VllmServer(url=f"http://127.0.0.1:{port}/v1", port=port, proc=proc, log_path=log_path,
                        lora_modules=modules, tmp=tmp)
    deadline = t0 + timeout
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                server.stop()
                raise VoicegateError(f"vLLM exited with {proc.returncode} before answering /health: "
                                     f"{server.last_error()[:400]} (log: {log_path})")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2.0).status_code == 200:
                    server.timings["start_s"] = round(time.monotonic() - t0, 2)
                    return server
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
    except BaseException:
        server.stop()   # Ctrl-C (or a SIGTERM turned into an exception) while waiting: no orphan server
        raise
    server.stop()
    raise VoicegateError(f"vLLM did not answer /health within {timeout:.0f}s: {server.last_error()[:400]} "
                         f"(log: {log_path})")
