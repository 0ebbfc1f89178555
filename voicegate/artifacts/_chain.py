"""Append-only discipline, in one place: chained markers, atomic writes, locks, verification.

Every artifact voicegate writes (the gate record, the adapter README, the
compose comment: `spec.ARTIFACT_KINDS`) goes through this module, so the rules
below hold for all of them and are checked by one `verify`. Each kind names its
chain format; `CHAINS` (at the end) gives each format its behaviour: the
markdown chain (record, README) and the compose chain.

**Markdown files** (record, README). An entry is appended at the end of the
file and closed by one marker line::

    <!-- voicegate:entry N sha256=<H> prev=<P> -->

``H`` is the sha256 of every byte of the file before the marker line (the
human-written text above the first entry, every earlier entry and marker, and
this entry's body); ``P`` is the previous marker's ``H`` (``none`` for entry 1).
Numbers run 1, 2, 3, ... in file order. `verify` recomputes each ``H`` from the
bytes actually in front of the marker, so the first marker whose hash no longer
matches names the entry whose text (between it and the previous marker) was
edited or lost lines; a gap or an inversion in the numbers names a deleted
marker or two swapped entries. A file with entries ends with its newest marker
line: a byte after it is not an entry (a forged verdict, junk), so `verify`
calls it broken and the next entry refuses to seal it in (`md_tail`).

**compose.yaml**. Entries are comment blocks inserted mid-file, directly above
the adapter's ``--lora-modules`` item, so a prefix hash cannot work. As
docs/design.md §4 says, each entry's marker records the hash of the WHOLE file as it
was before the entry went in::

    # voicegate:entry N lines=K body=<B> sha256=<H>

``K`` is the entry's line count including the marker, ``B`` the first 16 hex
digits of the sha256 of its other K-1 lines (so an edit inside entry N names
entry N, not whichever entry happens to be newest), and ``H`` the sha256 of the
file before insertion. `verify` checks every body, then walks back from the
newest entry: the marker must sit directly above a non-comment line (the
adapter's item — which is what catches two entries swapped), removing its K
lines must leave exactly the file whose hash it recorded, and so on down to
entry 1. A consequence of hashing the whole file (DESIGN's choice): any edit to
compose.yaml made outside voicegate after an entry was written — even a new
image tag — shows up in `verify` as "changed outside voicegate's entries after
entry N was written (and before entry N+1)": a change made between two entries
breaks exactly the entries before it, so the newest broken one dates it. The
git check then tells whether the commits since only added lines.

**Writes** are atomic: the new content goes to a temp file in the same
directory, is fsync'd, given the old file's mode and renamed over the old file
(then the directory is fsync'd). A crash at any point leaves either the old
file or the new one, never a torn one. Writers to one file are serialised by a
`filelock` lock kept outside the workspace (so no lock files litter the repo):
the read-modify-rename happens entirely under it, so two concurrent writers
produce two whole entries, one after the other.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from voicegate._atomic import write_atomic
from voicegate._clip import clip
from voicegate._locks import lock_for, locked
from voicegate.spec import artifact_kind

# `lock_for` and `locked` are `_locks`'s, exported from here: writers and tests lock through this module.
__all__ = [
    "CHAINS", "COMPOSE_MARKER", "MD_MARKER", "ChainFormat", "ComposeMarker", "Marker", "Report", "atomic_write",
    "body_hash", "chain_of", "comment_safe",
    "compose_entry", "compose_markers", "compose_verify", "is_comment", "lock_for", "locked", "md_append",
    "md_appended", "md_inert", "md_markers", "md_tail", "md_verify", "newline_of", "sha256", "tail_problem", "verify",
]

MD_MARKER = re.compile(
    rb"^<!-- voicegate:entry (\d+) sha256=([0-9a-f]{64}) prev=([0-9a-f]{64}|none) -->[ \t]*\r?$", re.MULTILINE)
COMPOSE_MARKER = re.compile(
    rb"^[ \t]*# voicegate:entry (\d+) lines=(\d+) body=([0-9a-f]{16}) sha256=([0-9a-f]{64})[ \t]*\r?\n?$")
# A marker-looking line that does not parse is a damaged marker, not prose.
_MD_LOOSE = re.compile(rb"^<!-- voicegate:entry\b.*$", re.MULTILINE)
_COMPOSE_LOOSE = re.compile(rb"^[ \t]*# voicegate:entry\b")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- atomic writes ---------------------------------------------------------------


def _replace(src: str, dst: str) -> None:
    # A module-level seam: the crash tests kill the process right here, between
    # the fsync'd temp file and the rename.
    os.replace(src, dst)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace path's content with data, all or nothing, keeping its mode (caller holds `locked(path)`)."""
    # the lambda looks `_replace` up at call time, so the crash tests' patch takes effect
    write_atomic(path, data, fixed_tmp=True, replace=lambda src, dst: _replace(src, dst))


def newline_of(data: bytes) -> bytes:
    """The file's line ending: CRLF if its first line ends so, else LF."""
    first = data.find(b"\n")
    return b"\r\n" if first > 0 and data[first - 1:first] == b"\r" else b"\n"


# -- markdown chain --------------------------------------------------------------


@dataclass(frozen=True)
class Marker:
    number: int
    sha256: str
    prev: str
    start: int  # byte offset of the marker line


def md_markers(data: bytes) -> list[Marker]:
    return [Marker(int(m.group(1)), m.group(2).decode(), m.group(3).decode(), m.start())
            for m in MD_MARKER.finditer(data)]


# A line of an entry's text that looks like a marker (to `verify`, or to a reader) is written
# with its "<" as "&lt;": it reads the same once rendered, and only `md_appended` writes markers.
_MD_MARKER_LIKE = re.compile(r"^([ \t]*)<(!--[ \t]*voicegate:entry)", re.MULTILINE)


def md_tail(data: bytes) -> bytes:
    """The bytes after the newest marker's line (b"" when there is no marker, or nothing after it)."""
    markers = md_markers(data)
    if not markers:
        return b""
    end = data.find(b"\n", markers[-1].start)
    return b"" if end < 0 else data[end + 1:]


def tail_problem(tail: bytes, newest: int) -> str:
    """What `verify` and the writers say about bytes after entry `newest`'s marker."""
    lines = len(tail.splitlines()) or 1
    return (f"{len(tail)} byte(s) ({lines} line(s)) after entry {newest}'s marker, the end of what voicegate wrote: "
            "text appended by hand or by another tool (a forged entry?); remove it")


def md_inert(text: str) -> str:
    """`text` with every marker-looking line made inert: an entry's body can never forge a marker."""
    return _MD_MARKER_LIKE.sub(r"\1&lt;\2", text)


def md_appended(data: bytes, body: str, *, header: str = "") -> tuple[bytes, int, str]:
    """(data with body and its marker appended, the entry number, the marker's hash); writes nothing.

    An empty `data` (a missing or emptied file) starts with `header`. Neither the body nor the
    header can add a marker of its own (`md_inert`): the one marker line is the one written here.
    """
    if not data:
        data = md_inert(header).encode("utf-8")
    nl = newline_of(data) if data else b"\n"
    if data and not data.endswith(b"\n"):
        data += nl  # only ever adds: the earlier bytes stay as they were
    markers = md_markers(data)
    number = markers[-1].number + 1 if markers else 1
    prev = markers[-1].sha256 if markers else "none"
    text = md_inert(body.replace("\r\n", "\n").replace("\r", "\n").strip("\n"))
    # A blank line before the entry keeps markdown from gluing it to the text above.
    sep = b"" if not data or data.endswith(nl + nl) else nl
    new = data + sep + text.replace("\n", nl.decode()).encode("utf-8") + nl + nl
    digest = sha256(new)
    marker = f"<!-- voicegate:entry {number} sha256={digest} prev={prev} -->".encode() + nl
    return new + marker, number, digest


def md_append(path: Path, body: str, *, header: str = "") -> int:
    """Append body (a markdown entry) and its marker; returns the entry number (caller holds `locked(path)`)."""
    path = Path(path)
    new, number, _ = md_appended(path.read_bytes() if path.exists() else b"", body, header=header)
    atomic_write(path, new)
    return number


@dataclass
class Report:
    path: Path
    ok: list[str]
    problem: str | None = None

    @property
    def entries(self) -> int:
        return len(self.ok)


# A sub-heading inside an entry, where its details go ("### Seat integrity — details"): not the entry's title.
_SUBHEADING = re.compile(r"^### .* — details\s*$".encode())


def _title(chunk: bytes, heading: bool = False) -> str:
    """' (the entry's heading)' for the report, without the markdown/comment syntax."""
    lines = chunk.splitlines()
    if heading:  # the last markdown heading before a marker is its entry's own, past the details sub-headings in it
        lines = [ln for ln in lines if ln.startswith(b"#") and not _SUBHEADING.match(ln)][-1:] or lines
    for line in lines:
        text = line.decode("utf-8", "replace").strip().lstrip("#").strip()
        if text and not text.startswith("voicegate:entry"):
            return f" ({clip(text, 70)})"
    return ""


def md_verify(path: Path) -> Report:
    data = Path(path).read_bytes()
    markers = md_markers(data)
    report = Report(Path(path), [])
    numbers = [m.number for m in markers]
    # A damaged marker (one digit changed in the hash, say) no longer parses:
    # it is not prose, so say which one it is.
    for loose in _MD_LOOSE.finditer(data):
        if not MD_MARKER.match(data, loose.start()):
            line = data[:loose.start()].count(b"\n") + 1
            after = sum(1 for m in markers if m.start < loose.start())
            report.problem = f"entry {after + 1}'s marker (line {line}) is damaged"
            return report
    prev = "none"
    prev_end = 0
    for i, m in enumerate(markers, 1):
        if m.number != i:
            if i in numbers[i:]:
                report.problem = f"entry {m.number} appears before entry {i}: entries were reordered"
            else:
                report.problem = f"entry {i} is missing: its marker was deleted or the entry removed"
            return report
        if sha256(data[:m.start]) != m.sha256:
            where = ("the text before entry 1 or entry 1 itself" if i == 1
                     else f"entry {i} (after entry {i - 1}'s marker)")
            report.problem = f"entry {i} was edited: the bytes before its marker changed, in {where}"
            return report
        if m.prev != prev:
            report.problem = f"entry {i}'s marker does not chain to entry {i - 1}'s (prev= changed)"
            return report
        report.ok.append(f"entry {i}{_title(data[prev_end:m.start], heading=True)}")
        prev = m.sha256
        prev_end = data.find(b"\n", m.start) + 1
    if markers and prev_end == 0:
        # Every marker is written with its line ending: a file ending inside the newest
        # marker's line was cut short (the hashes cover only the bytes before a marker).
        report.ok.pop()
        report.problem = f"entry {len(markers)}'s marker line was cut short: the file was truncated"
    return report


# -- compose chain ---------------------------------------------------------------


@dataclass(frozen=True)
class ComposeMarker:
    number: int
    lines: int
    body: str
    sha256: str
    index: int  # line index of the marker


def compose_markers(lines: list[bytes]) -> list[ComposeMarker]:
    out = []
    for i, line in enumerate(lines):
        m = COMPOSE_MARKER.match(line)
        if m:
            out.append(ComposeMarker(int(m.group(1)), int(m.group(2)), m.group(3).decode(), m.group(4).decode(), i))
    return out


def is_comment(line: bytes) -> bool:
    return line.lstrip(b" \t").startswith(b"#")


def body_hash(lines: list[bytes]) -> str:
    # Line endings are excluded so the body hash names edits, not CRLF churn;
    # the whole-file hash still covers every byte.
    return sha256(b"\n".join(ln.rstrip(b"\r\n") for ln in lines))[:16]


# What YAML accepts inside a comment: printable characters, no line breaks. YAML also
# breaks lines at NEL, LS and PS, so those would end a comment and start YAML content.
_NOT_IN_COMMENT = re.compile("[^\t\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def comment_safe(text: str) -> str:
    """One comment line's text: anything YAML would read as a line break or refuse becomes a space.

    Text that would make the line read as a marker gets a backslash (`voicegate\\:entry`):
    only `compose_entry` writes markers.
    """
    text = _NOT_IN_COMMENT.sub(" ", text)
    return "voicegate\\:entry" + text[len("voicegate:entry"):] if text.startswith("voicegate:entry") else text


def compose_entry(data: bytes, index: int, body_lines: list[str], indent: str, nl: bytes) -> bytes:
    """data with a comment entry inserted before line `index`, closed by its marker."""
    lines = data.splitlines(keepends=True)
    number = max((m.number for m in compose_markers(lines)), default=0) + 1
    block = [f"{indent}# {comment_safe(t)}".rstrip().encode("utf-8") + nl for t in body_lines]
    marker = (f"{indent}# voicegate:entry {number} lines={len(block) + 1} body={body_hash(block)} "
              f"sha256={sha256(data)}").encode() + nl
    return b"".join(lines[:index] + block + [marker] + lines[index:])


def compose_verify(path: Path) -> Report:
    data = Path(path).read_bytes()
    lines = data.splitlines(keepends=True)
    markers = compose_markers(lines)
    report = Report(Path(path), [])
    for i, line in enumerate(lines):
        if _COMPOSE_LOOSE.match(line) and not COMPOSE_MARKER.match(line):
            before = sum(1 for m in markers if m.index < i)
            report.problem = f"a voicegate marker (line {i + 1}, after entry {before}) is damaged"
            return report
    by_number = {m.number: m for m in markers}
    count = max(by_number, default=0)
    for n in range(1, count + 1):
        if n not in by_number:
            report.problem = f"entry {n} is missing: its marker was deleted or the entry removed"
            return report
    if len(markers) != count:
        dupe = next(m.number for m in markers if [x.number for x in markers].count(m.number) > 1)
        report.problem = f"entry {dupe} appears twice"
        return report
    # Bodies first, oldest first: an edit inside an entry names that entry.
    for m in sorted(markers, key=lambda m: m.number):
        start = m.index - m.lines + 1
        if start < 0 or body_hash(lines[start:m.index]) != m.body or not all(map(is_comment, lines[start:m.index])):
            report.problem = f"entry {m.number} was edited: its {m.lines - 1} comment lines are not what was written"
            return report
    # Then the walk back from the newest entry (docs/design.md §4).
    current = list(lines)
    failures: list[int] = []
    for n in range(count, 0, -1):
        idx, marker = next((i, c) for i, ln in enumerate(current)
                           if (c := COMPOSE_MARKER.match(ln)) and int(c.group(1)) == n)
        k = int(marker.group(2))
        if idx + 1 >= len(current) or is_comment(current[idx + 1]) or not current[idx + 1].strip():
            report.problem = (f"entry {n} is no longer directly above its adapter entry: entries were reordered, "
                              f"or lines were inserted after it, or a later entry's marker was deleted")
            return report
        current = current[:idx - k + 1] + current[idx + 1:]
        if sha256(b"".join(current)) != marker.group(4).decode():
            failures.append(n)
    if failures:
        # A change made between entry j and entry j+1 breaks exactly entries 1..j (their
        # "before" no longer matches) and not the later ones (theirs included it): the newest
        # failing entry says when it happened.
        j = max(failures)
        when = f"after entry {j} was written" + (f" and before entry {j + 1}" if j < count else "")
        report.problem = (f"entry {j}: compose.yaml was changed outside voicegate's entries {when} "
                          "(a line edited, added, removed or moved)")
        report.ok = [f"entry {n}" for n in range(1, min(failures))]
        return report
    titles = {m.number: _title(b"".join(lines[m.index - m.lines + 1:m.index])) for m in markers}
    report.ok = [f"entry {n}{titles[n]}" for n in range(1, count + 1)]
    return report


# -- the chain formats, as the artifact kinds name them ------------------------------


@dataclass(frozen=True)
class ChainFormat:
    """What `verify` and the writers need of one chain format (`spec.ArtifactKind.chain` names it)."""

    name: str
    markers: Callable[[bytes], dict[int, str]]  # entry number -> marker hash, as the ledger records them
    verify: Callable[[Path], Report]
    sealed: bool  # the newest marker ends the file: a byte after it is broken, and never sealed in (`md_tail`)


CHAINS: dict[str, ChainFormat] = {
    "markdown": ChainFormat("markdown", lambda data: {m.number: m.sha256 for m in md_markers(data)}, md_verify,
                            sealed=True),
    "compose": ChainFormat("compose", lambda data: {m.number: m.sha256
                                                    for m in compose_markers(data.splitlines(keepends=True))},
                           compose_verify, sealed=False),
}


def chain_of(kind: str) -> ChainFormat:
    """The chain format of the artifact kind named `kind` (`spec.ARTIFACT_KINDS`)."""
    return CHAINS[artifact_kind(kind).chain]


def verify(path: Path, kind: str) -> Report:
    return chain_of(kind).verify(path)
