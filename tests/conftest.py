from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# The session-scoped real vLLM seat (tests/vllm_seat.py; it skips when the vLLM venv or the tiny-voices
# fixture is absent): imported here so pytest registers the fixture for every test module.
from vllm_seat import Watcher, running_seat, vllm_seat  # noqa: F401

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("VOICEGATE_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpora" / "british-fiction"
COMPOSE_FIXTURE = SHARED / "fixtures" / "voices-seat.compose.yaml"

# VOICEGATE_* variables that configure the test suite itself, not the tool: where the shared
# corpora and the vLLM venv live, which browser or embedding model to use, and the switches that
# rewrite the golden files and the screenshot. Every other VOICEGATE_* variable is cleared.
_SUITE_SETTINGS = frozenset({
    "VOICEGATE_SHARED", "VOICEGATE_VLLM_VENV", "VOICEGATE_CHROMIUM", "VOICEGATE_EMBEDDING_MODEL",
    "VOICEGATE_UPDATE_GOLDEN", "VOICEGATE_UPDATE_SCREENSHOT", "VOICEGATE_UPDATE_TUTORIAL",
})
# The keys the tests name: the fixture compose's seat key, LiteLLM's master key, vLLM's own.
_KEYS = ("VOICES_API_KEY", "LITELLM_MASTER_KEY", "API_KEY", "VLLM_API_KEY")


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test depends on the caller's environment: no seat URL, workspace, data dir or key leaks in."""
    for name in list(os.environ):
        if (name.startswith("VOICEGATE_") and name not in _SUITE_SETTINGS) or name in _KEYS:
            monkeypatch.delenv(name)
    # The score tables fit the terminal; tests read the wide layout unless they ask for a narrow one.
    monkeypatch.setenv("COLUMNS", "130")


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


_WATCHER = Watcher()


@pytest.fixture(scope="session", autouse=True)
def _vllm_watcher() -> Iterator[Watcher]:
    """Watches for a real vLLM server started outside tests/vllm_seat.py (see _shared_vllm_seat_only)."""
    _WATCHER.start()
    yield _WATCHER
    _WATCHER.stop()


@pytest.fixture(autouse=True)
def _current_test(request: pytest.FixtureRequest) -> None:
    _WATCHER.test = request.node.nodeid


@pytest.fixture(scope="module", autouse=True)
def _shared_vllm_seat_only(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each module: it started no vLLM server of its own (one session seat, tests/vllm_seat.py), and it
    left that seat serving what it started with (runtime-loaded adapters unloaded; /v1/models is the witness)."""
    yield
    _WATCHER.poll()
    module = Path(str(request.node.path)).relative_to(REPO).as_posix()
    own = _WATCHER.offenders(module)
    if own:
        pytest.fail(f"{module} started a vLLM server of its own (use the session's `vllm_seat`, or the stub "
                    f"through vllm_seat.stub_venv): {own}")
    seat = running_seat()
    if seat is not None:
        problem = seat.left_as_started()
        if problem:
            pytest.fail(problem)
