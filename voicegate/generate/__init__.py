"""Filling a run with generations: driving the seat, or importing rows made elsewhere.

- `_schedule`  the interleaved order of (arm, seed, prompt) requests
- `_generate`  drive the seat (one or several replicas): resumable, nothing lost, nothing duplicated
- `_plan`      what the seat serves against the spec: the refusals before any request
- `_session`   one generate session on every replica: ask, load, record, run, unload
- `_runner`    requests in flight per replica, canary checks among them, the one writer
- `_runlog`    what run.json records about a generate run and its sessions
- `_progress`  the progress bars and the lines a stopped run prints
- `_result`    what a generate did (`GenerateResult`) and its summary
- `_cells`     cells (one (seed, prompt) with every arm) and where an unfinished one may continue
- `_integrity` canary fingerprints: did the seat serve each arm its own weights
- `_quarantine` rows that may not be scored, moved aside, never deleted
- `_import`    bring in generations made outside voicegate
- `_simulate`  a dry run of a gate's schedule against a stand-in seat
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from voicegate.generate._cells import mixed_cells, replica_shares
from voicegate.generate._import import import_file
from voicegate.generate._integrity import verdict
from voicegate.generate._schedule import build_schedule, request_seed
from voicegate.generate._simulate import simulate

if TYPE_CHECKING:
    from voicegate.generate._generate import generate


def __getattr__(name: str) -> Any:
    # The seat client (httpx, rich) loads only when something drives a seat: `score`, `report`
    # and `import` use this package's checks and must not pay for it (tests/test_cli_startup.py).
    if name == "generate":
        from voicegate.generate._generate import generate

        return generate
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "build_schedule",
    "generate",
    "import_file",
    "mixed_cells",
    "replica_shares",
    "request_seed",
    "simulate",
    "verdict",
]
