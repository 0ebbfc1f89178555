"""The append-only chain itself: markers, hashes, line endings, what verify accepts and rejects."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from voicegate.artifacts import _chain


def _append(path: Path, *bodies: str, header: str = "") -> None:
    for body in bodies:
        with _chain.locked(path):
            _chain.md_append(path, body, header=header)


def test_markdown_marker_hashes_every_byte_before_it(tmp_path: Path) -> None:
    path = tmp_path / "README.md"
    path.write_bytes(b"# adapter\n\nhuman text")  # no final newline: a newline is added, nothing changed
    _append(path, "### first\n\nbody one", "### second\n\nbody two")
    data = path.read_bytes()
    assert data.startswith(b"# adapter\n\nhuman text\n\n### first\n\nbody one\n\n<!-- voicegate:entry 1 sha256=")
    markers = list(re.finditer(rb"<!-- voicegate:entry (\d) sha256=(\w+) prev=(\w+) -->\n", data))
    assert [m.group(1) for m in markers] == [b"1", b"2"]
    for m in markers:
        assert m.group(2).decode() == hashlib.sha256(data[:m.start()]).hexdigest()
    assert markers[0].group(3) == b"none" and markers[1].group(3) == markers[0].group(2)
    assert data.endswith(b"body two\n\n" + markers[1].group(0))
    report = _chain.md_verify(path)
    assert report.problem is None
    assert report.ok == ["entry 1 (first)", "entry 2 (second)"]


def test_header_is_written_once_and_covered(tmp_path: Path) -> None:
    path = tmp_path / "gates" / "lv-x.md"
    _append(path, "## one", "## two", header="# Gate record: lv-x\n")
    data = path.read_bytes()
    assert data.count(b"# Gate record: lv-x") == 1 and data.startswith(b"# Gate record: lv-x\n\n## one\n")
    path.write_bytes(data.replace(b"lv-x\n", b"lv-y\n", 1))
    assert _chain.md_verify(path).problem.startswith("entry 1 was edited")


def test_crlf_markdown_stays_crlf(tmp_path: Path) -> None:
    path = tmp_path / "README.md"
    path.write_bytes(b"# adapter\r\n\r\nnotes\r\n")
    _append(path, "### verdict\n\nline a\nline b")
    data = path.read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n")
    assert b"### verdict\r\n\r\nline a\r\nline b\r\n\r\n<!-- voicegate:entry 1 " in data
    assert _chain.md_verify(path).problem is None


def test_text_appended_after_the_last_marker_is_not_an_entry(tmp_path: Path) -> None:
    path = tmp_path / "README.md"
    _append(path, "### one")
    with open(path, "ab") as fh:
        fh.write(b"\nA person's later note.\n")
    assert _chain.md_verify(path).problem is None
    _append(path, "### two")  # the next entry's hash covers the note
    assert _chain.md_verify(path).problem is None
    path.write_bytes(path.read_bytes().replace(b"later note", b"earlier note"))
    assert _chain.md_verify(path).problem.startswith("entry 2 was edited")


def test_a_damaged_marker_is_named(tmp_path: Path) -> None:
    path = tmp_path / "README.md"
    _append(path, "### one", "### two", "### three")
    data = path.read_bytes()
    m = list(re.finditer(rb"sha256=([0-9a-f]{64}) prev", data))[1]
    path.write_bytes(data[:m.start(1)] + b"Z" + data[m.start(1) + 1:])
    assert _chain.md_verify(path).problem == "entry 2's marker (line 7) is damaged"
    path.write_bytes(data[:m.start(1)] + (b"0" if data[m.start(1)] != ord("0") else b"1") + data[m.start(1) + 1:])
    problem = _chain.md_verify(path).problem
    assert problem.startswith(("entry 2 was edited", "entry 3 was edited"))


def test_prev_link_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "README.md"
    _append(path, "### one", "### two")
    data = path.read_bytes()
    first = re.search(rb"entry 1 sha256=(\w+)", data).group(1)
    # Rewriting entry 2's prev (and re-hashing nothing) is caught by the prev check.
    path.write_bytes(data.replace(b"prev=" + first, b"prev=" + b"f" * 64))
    assert "does not chain" in _chain.md_verify(path).problem


COMPOSE = b"""services:
  seat:
    command:
      - --lora-modules
      - lv-a=/adapters/a
      # a person's note
      - lv-b=/adapters/b
"""


def test_compose_marker_records_the_whole_file_before_it(tmp_path: Path) -> None:
    data = COMPOSE
    lines = data.splitlines(keepends=True)
    one = _chain.compose_entry(data, 6, ["first", "  detail"], "      ", b"\n")
    added = one.splitlines(keepends=True)[6:9]
    assert added[:2] == [b"      # first\n", b"      #   detail\n"]
    m = _chain.COMPOSE_MARKER.match(added[2])
    assert m and m.group(1) == b"1" and m.group(2) == b"3"
    assert m.group(4).decode() == hashlib.sha256(data).hexdigest()
    assert m.group(3).decode() == _chain.body_hash(added[:2])
    two = _chain.compose_entry(one, 4, ["on a"], "      ", b"\n")
    assert b"      # on a\n      # voicegate:entry 2 lines=2 " in two
    assert hashlib.sha256(one).hexdigest().encode() in two
    path = tmp_path / "compose.yaml"
    path.write_bytes(two)
    report = _chain.compose_verify(path)
    assert report.problem is None and report.ok == ["entry 1 (first)", "entry 2 (on a)"]
    assert lines == COMPOSE.splitlines(keepends=True)


def test_compose_edit_outside_entries_is_dated_by_the_chain(tmp_path: Path) -> None:
    one = _chain.compose_entry(COMPOSE, 6, ["first"], "      ", b"\n")
    two = _chain.compose_entry(one, 6 + 2, ["second"], "      ", b"\n")
    path = tmp_path / "compose.yaml"
    path.write_bytes(two.replace(b"a person's note", b"a person's edited note"))
    assert _chain.compose_verify(path).problem == (
        "entry 2: compose.yaml was changed outside voicegate's entries after entry 2 was written "
        "(a line edited, added, removed or moved)")
    # A line that was there before any entry, removed: same.
    path.write_bytes(two.replace(b"      - lv-a=/adapters/a\n", b""))
    assert _chain.compose_verify(path).problem.startswith("entry 2: compose.yaml was changed outside")
    # An edit made between the two entries (a deploy bumping the image) is dated by the chain.
    bumped = one.replace(b"services:\n", b"services:\n  # image bumped\n")
    path.write_bytes(_chain.compose_entry(bumped, 6 + 1 + 2, ["second"], "      ", b"\n"))
    assert _chain.compose_verify(path).problem == (
        "entry 1: compose.yaml was changed outside voicegate's entries after entry 1 was written and before "
        "entry 2 (a line edited, added, removed or moved)")


def test_compose_damaged_marker(tmp_path: Path) -> None:
    one = _chain.compose_entry(COMPOSE, 6, ["first"], "      ", b"\n")
    path = tmp_path / "compose.yaml"
    path.write_bytes(one.replace(b"lines=2", b"lines=two"))
    assert "damaged" in _chain.compose_verify(path).problem


def test_atomic_write_keeps_mode_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "f.md"
    path.write_bytes(b"old")
    path.chmod(0o604)
    _chain.atomic_write(path, b"new")
    assert path.read_bytes() == b"new" and path.stat().st_mode & 0o777 == 0o604
    assert [p.name for p in tmp_path.iterdir()] == ["f.md"]


def test_lock_files_live_outside_the_workspace(tmp_path: Path) -> None:
    lock = _chain.lock_for(tmp_path / "gates" / "lv-x.md")
    assert not Path(lock.lock_file).is_relative_to(tmp_path)
    assert _chain.lock_for(tmp_path / "gates" / ".." / "gates" / "lv-x.md").lock_file == lock.lock_file


def test_a_symlinked_artifact_stays_a_link(tmp_path: Path) -> None:
    target = tmp_path / "real" / "compose.yaml"
    target.parent.mkdir()
    target.write_bytes(b"a: 1\n")
    link = tmp_path / "compose.yaml"
    link.symlink_to(target)
    _chain.atomic_write(link, b"a: 2\n")
    assert link.is_symlink() and target.read_bytes() == b"a: 2\n"
