"""Filling a run with generations: driving the seat, or importing rows made elsewhere.

- `_schedule`  the interleaved order of (arm, seed, prompt) requests
- `_generate`  drive the seat (one or several replicas): resumable, nothing lost, nothing duplicated
- `_plan`      what the seat serves against the spec: the refusals before any request
- `_session`   one generate session on every replica: ask, load, record, run, unload
- `_runner`    the scheduler: requests in flight per replica, cells claimed, the canary checks placed
- `_replica`   one replica in a session: its client, adapters, cells, tally (and `Mode`, how it sends)
- `_seat_checks` the integrity checks a session sends: references, calibration, checks, re-asks, identity
- `_writer`    the one writer: every finished row stored, in order, before it is counted
- `_runlog`    `RunLog`: run.json of a generate run and its sessions, built through one object
- `_progress`  the progress bars and the lines a stopped run prints
- `_result`    what a generate did (`GenerateResult`) and its summary
- `_cells`     cells (one (seed, prompt) with every arm) and where an unfinished one may continue
- `_canaries`  seat-integrity canaries: which cells, how many checks, where they go (the method, the
               comparison and the verdict are `scoring`'s: `_similarity`, `_integrity`)
- `_identity`  each arm's weights held to what the same weights answered before (the data dir's store)
- `_carrier_files` the base held to the carrier's own files; `_adapter_files` each adapter to its own
- `_quarantine` rows that may not be scored, moved aside, never deleted
- `_import`    bring in generations made outside voicegate
- `_simulate`  a dry run of a gate's schedule against a stand-in seat
- `_estimate`  its runtime estimate: the real seat's speed, probed (or a named constant)
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

from voicegate.generate._generate import generate
from voicegate.generate._import import import_file
from voicegate.generate._result import GenerateResult
from voicegate.generate._schedule import build_schedule, request_seed
from voicegate.generate._simulate import estimate_json, simulate


class _Package(types.ModuleType):
    """This package, callable as the root package's use case: `voicegate.generate(root, gate, **options)`.

    `voicegate.generate` names the package once it is imported (Python binds a subpackage to its parent's
    attribute), so the use case is the package called, not a function beside it.
    """

    def __call__(self, root: str | os.PathLike[str] | None, gate: str, **options: Any) -> GenerateResult:
        """Make every registered generation of `gate` not yet stored, as `voicegate generate` does.

        `root` None means $VOICEGATE_WORKSPACE or the current directory; `options` are `generate`'s:
        seat_url, concurrency, quiet, isolate_arms, canaries, wave_size, say.
        """
        from voicegate.spec import load_spec, workspace_root

        return generate(load_spec(workspace_root(root), gate), **options)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "build_schedule",
    "estimate_json",
    "generate",
    "import_file",
    "request_seed",
    "simulate",
]
