"""Random corruptions of every artifact make `verify` exit 1.

The workspace is the lv-bronte story after score, ship and amend: three entries
in each of the gate record, the adapter README and compose.yaml. Hypothesis
picks an artifact and one corruption — delete, empty, truncate, replace whole
(with noise, with a report page, or with the file as it was before voicegate
wrote to it), edit one byte, reorder two entries, duplicate an entry — and
`voicegate verify` must say BROKEN and exit 1, never pass and never crash.

Which bytes count: the markdown chains hash every byte up to their newest
marker, so an edit anywhere up to the end of that marker's line is a
corruption. compose.yaml is hashed whole (DESIGN.md §4: any line changed
outside voicegate's entries is reported), so any byte of it counts.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import COMPOSE_FIXTURE
from helpers.bronte import README, as_shipped, scored_workspace
from helpers.workspace import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ARTIFACTS = {"record": "gates/lv-bronte.md", "readme": "adapters/lv-bronte-4b-v1/README.md",
             "compose": "deploy/compose.yaml"}


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not COMPOSE_FIXTURE.is_file():
        pytest.skip(f"fleet compose fixture not present at {COMPOSE_FIXTURE}")
    root = scored_workspace(tmp_path_factory.mktemp("story") / "ws", as_shipped(COMPOSE_FIXTURE))
    assert run_cli("verify", "lv-bronte", cwd=root).code == 0
    return root


def _blocks(kind: str, data: bytes) -> tuple[bytes, list[bytes], bytes]:
    """(text before the first entry, each entry's bytes ending with its marker line, the rest)."""
    from voicegate.artifacts._chain import compose_markers, md_markers

    if kind == "compose":
        lines = data.splitlines(keepends=True)
        spans = [(m.index - m.lines + 1, m.index + 1) for m in compose_markers(lines)]
        head, tail = b"".join(lines[:spans[0][0]]), b"".join(lines[spans[-1][1]:])
        return head, [b"".join(lines[a:b]) for a, b in spans], tail
    ends = [data.index(b"\n", m.start) + 1 for m in md_markers(data)]
    starts = [0] + ends[:-1]  # an entry's own bytes start right after the previous marker's line
    head = b""
    first = data.rfind(b"\n\n", 0, data.index(b"<!-- voicegate:entry 1 "))
    if first > 0:  # the text before entry 1 (the README's own, the record's header) stays where it is
        head, starts[0] = data[:first + 2], first + 2
    return head, [data[a:b] for a, b in zip(starts, ends, strict=True)], data[ends[-1]:]


def _covered(kind: str, data: bytes) -> int:
    """How many leading bytes the chain protects."""
    if kind == "compose":
        return len(data)
    head, entries, _ = _blocks(kind, data)
    return len(head) + sum(map(len, entries))


def _before_voicegate(kind: str) -> bytes:
    if kind == "compose":
        return as_shipped(COMPOSE_FIXTURE)
    return README.encode("utf-8") if kind == "readme" else b""


Corruption = Callable[[str, bytes], bytes | None]  # None: delete the file


@st.composite
def corruptions(draw: st.DrawFn) -> tuple[str, Corruption]:
    choice = draw(st.sampled_from(["delete", "empty", "truncate", "noise", "report", "original", "edit",
                                   "reorder", "duplicate"]))
    pick = draw(st.floats(min_value=0.0, max_value=1.0, exclude_max=True))
    noise = draw(st.binary(min_size=1, max_size=400))
    flip = draw(st.integers(min_value=1, max_value=255))

    def apply(kind: str, data: bytes) -> bytes | None:
        if choice == "delete":
            return None
        if choice == "empty":
            return b""
        if choice == "truncate":
            return data[:int(pick * len(data))]
        if choice == "noise":
            return noise
        if choice == "report":
            return b"<!doctype html><html><body><h1>lv-bronte</h1></body></html>\n"
        if choice == "original":
            return _before_voicegate(kind)
        if choice == "edit":
            at = int(pick * _covered(kind, data))
            return data[:at] + bytes([data[at] ^ flip]) + data[at + 1:]
        head, entries, tail = _blocks(kind, data)
        i = int(pick * len(entries))
        if choice == "reorder":
            j = i + 1 if i + 1 < len(entries) else i - 1
            entries[i], entries[j] = entries[j], entries[i]
        else:
            entries.insert(i + 1, entries[i])
        return head + b"".join(entries) + tail

    return choice, apply


def test_the_blocks_cut_every_artifact_into_its_three_entries(story: Path) -> None:
    # The reorder and duplicate corruptions rest on this split: it must give back the file.
    for kind, rel in ARTIFACTS.items():
        data = (story / rel).read_bytes()
        head, entries, tail = _blocks(kind, data)
        assert len(entries) == 3 and head + b"".join(entries) + tail == data
        assert all(b"voicegate:entry" in e.splitlines()[-1] for e in entries)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(sorted(ARTIFACTS)), corruption=corruptions())
def test_every_corruption_of_an_artifact_is_broken(story: Path, kind: str,
                                                   corruption: tuple[str, Corruption]) -> None:
    name, apply = corruption
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        shutil.copytree(story, root, symlinks=True)
        path = root / ARTIFACTS[kind]
        before = path.read_bytes()
        after = apply(kind, before)
        if after == before:
            return  # a corruption that changed nothing (a duplicate of nothing) is not one
        if after is None:
            path.unlink()
        else:
            path.write_bytes(after)
        checked = run_cli("verify", "lv-bronte", cwd=root)
        assert checked.code == 1 and "BROKEN" in checked.stdout, (
            f"{name} of {kind} passed verify:\n{checked.stdout}\n{checked.stderr}")
        assert ARTIFACTS[kind] in checked.stdout + checked.stderr


@pytest.mark.parametrize("kind", sorted(ARTIFACTS))
@pytest.mark.parametrize("cut", [1, 2, 40])
def test_a_file_cut_short_by_a_few_bytes_is_broken(story: Path, kind: str, cut: int, tmp_path: Path) -> None:
    # The smallest truncations: the newest marker's line ending, or part of the marker itself.
    root = tmp_path / "ws"
    shutil.copytree(story, root, symlinks=True)
    path = root / ARTIFACTS[kind]
    path.write_bytes(path.read_bytes()[:-cut])
    checked = run_cli("verify", "lv-bronte", cwd=root)
    assert checked.code == 1 and "BROKEN" in checked.stdout, checked.stdout
