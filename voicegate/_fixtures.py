"""Where the project's fixtures are: one environment variable, ``$VOICEGATE_SHARED``.

The trained tiny voices (a carrier and its PEFT LoRA voices) and the british-fiction novels are
not in the repository: they live in a folder laid out as ``shared/`` is (``fixtures/tiny-voices``,
``corpora/british-fiction``, ``fixtures/voices-seat.compose.yaml``), beside the clone by default.
Every default that points into it (the commands', the tests', the benchmarks') is read here, so a
folder kept elsewhere is named once (docs/fixtures.md says where the files come from).
"""

from __future__ import annotations

import os
from pathlib import Path

SHARED_ENV = "VOICEGATE_SHARED"
VOICES = Path("fixtures") / "tiny-voices"
CORPUS = Path("corpora") / "british-fiction"
COMPOSE = Path("fixtures") / "voices-seat.compose.yaml"


def shared_dir(fallback: Path | None = None) -> Path | None:
    """``$VOICEGATE_SHARED`` when set (``~`` expanded), else `fallback` (the tests' and benchmarks' ``../shared``)."""
    value = os.environ.get(SHARED_ENV, "").strip()
    return Path(value).expanduser() if value else fallback


def default_voices() -> Path | None:
    """The tiny-voices folder a command uses when none is given: under ``$VOICEGATE_SHARED``, or None."""
    shared = shared_dir()
    return None if shared is None else shared / VOICES
