"""Single-threaded BLAS for the command line, set before numpy is imported.

Scoring's matrix work is small (a few thousand MFW columns, 1000 bootstrap rows): OpenBLAS's
thread pool costs more to start and spin than it saves. Measured with bench_score on the shared
2-core box: ~0.4 s less CPU per `score` and no wall time lost. A user's own setting wins, and a
process voicegate starts for someone else (the vLLM seat) does not inherit what voicegate set.
"""

from __future__ import annotations

import os
import sys

SINGLE_THREADED_BLAS = {"OPENBLAS_NUM_THREADS": "1"}
_set_here: set[str] = set()


def single_threaded_blas() -> None:
    if "numpy" in sys.modules:
        return  # too late to matter: whoever imported numpy first keeps its pool
    for name, value in SINGLE_THREADED_BLAS.items():
        if name not in os.environ:
            os.environ[name] = value
            _set_here.add(name)


def without_our_blas(env: dict[str, str]) -> dict[str, str]:
    """`env` minus the variables `single_threaded_blas` set (a user's own are kept)."""
    return {k: v for k, v in env.items() if k not in _set_here}
