"""The fixtures folder every test reads (``$VOICEGATE_SHARED``, else ``shared/`` beside the clone).

One resolver (``voicegate._fixtures.shared_dir``) for every test module: a suite run with the
variable pointed elsewhere reads the fixtures there, and with it pointed at an empty folder every
test that needs them skips, naming the path it looked at (the session's summary groups them).
"""

from __future__ import annotations

from pathlib import Path

from voicegate._fixtures import COMPOSE, shared_dir
from voicegate._fixtures import CORPUS as _CORPUS
from voicegate._fixtures import VOICES as _VOICES

REPO = Path(__file__).resolve().parents[2]
SHARED: Path = shared_dir(REPO.parent / "shared") or REPO.parent / "shared"
VOICES = SHARED / _VOICES
CORPUS = SHARED / _CORPUS
COMPOSE_FIXTURE = SHARED / COMPOSE
