from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("VOICEGATE_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpora" / "british-fiction"
COMPOSE_FIXTURE = SHARED / "fixtures" / "voices-seat.compose.yaml"


@pytest.fixture
def corpus_dir() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"public-domain corpus not present at {CORPUS}")
    return CORPUS


@pytest.fixture
def compose_fixture() -> Path:
    if not COMPOSE_FIXTURE.is_file():
        pytest.skip(f"fleet compose fixture not present at {COMPOSE_FIXTURE}")
    return COMPOSE_FIXTURE


# The session-scoped real vLLM seat (tests/vllm_seat.py); it skips when the vLLM venv is absent.
from vllm_seat import vllm_seat  # noqa: E402,F401
