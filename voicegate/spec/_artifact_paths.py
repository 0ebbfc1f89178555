"""Where a gate's artifacts may be: each a file of its own, inside the workspace unless the spec says otherwise.

voicegate appends markdown to the gate record and the README and comment lines to
compose.yaml. Appended to the spec, a registration record, `generations.jsonl` or
a corpus, that text breaks the gate for good; written through a symlink it lands
wherever the link points. So `check_artifact_paths` refuses (one line, before
anything is written) an artifact path that, after every symlink is resolved:

- is a file voicegate reads as an input or keeps for itself: the spec, a
  registration record (anything under `preregistrations/`), anything in the
  data directory (generations, scores, run state, the cache), a corpus file,
  the prompts file, the probes file, the embedding model's files, git's own
  files, voicegate's lock directory; a hard link to one of them counts as it;
- is another artifact of the same gate (record = compose), or another gate's
  artifact of a kind that is not `shared` (two gates may share a compose file: that is
  what it is for);
- exists and is not a regular file (a directory);
- is outside the workspace, unless `artifacts.outside_workspace` names it
  (an adapter directory on a mounted volume) and its kind `may_be_outside`; the gate
  record never is (`_artifact_kinds.ARTIFACT_KINDS`).

`register` runs it before anything is written; `score`, `amend` and `ship` run
it again, under the artifacts' locks, because a file can be swapped for a
symlink after registration.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from voicegate._errors import VoicegateError
from voicegate._locks import lock_root
from voicegate.spec._artifact_kinds import ARTIFACT_KINDS, artifact_kind
from voicegate.spec._check import failer
from voicegate.spec._model import GateSpec
from voicegate.spec._resolve import resolve_path


def _shown(root: Path, path: Path) -> str:
    """The path as the spec names it (symlinks not followed), workspace-relative where it can be."""
    plain = Path(os.path.normpath(os.path.abspath(path)))
    try:
        return plain.relative_to(root).as_posix()
    except ValueError:
        return str(plain)


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _same(a: Path, b: Path) -> bool:
    """One file: the same real path, or two names of one inode (a hard link)."""
    if _real(a) == _real(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _inside(path: Path, directory: Path) -> bool:
    real, where = _real(path), _real(directory)
    return real == where or where in real.parents


def _inputs(spec: GateSpec) -> list[tuple[Path, str]]:
    """Every file the gate reads or keeps, with what it is."""
    files = [(spec.path, "the spec"), (spec.registration_path, "the registration record")]
    if spec.prompts_path is not None:
        files.append((spec.prompts_path, "the prompts file"))
    for what, corpus in (("held-out", spec.corpora.heldout), ("training", spec.corpora.training),
                         ("background", spec.corpora.background)):
        files += [(p, f"a {what} corpus file") for p in corpus]
    if spec.damage.probes_path is not None:
        files.append((spec.damage.probes_path, "the probes file"))
    if spec.view.model is not None:
        files += [(p, f"a file of {spec.view.model.what}") for p in spec.model_files]
    return files


def _owned_dirs(spec: GateSpec) -> list[tuple[Path, str]]:
    """Directories whose every file is voicegate's (or git's)."""
    root = _real(spec.root)
    dirs = [(spec.root / "preregistrations", "inside preregistrations/, where voicegate keeps the specs"),
            (spec.run.path, "inside the gate's run directory, which voicegate keeps"),
            (spec.run.cache, "inside the scoring cache, which voicegate keeps"),
            (spec.root / ".git", "inside git's own directory"),
            (lock_root(), "inside voicegate's lock directory")]
    data = _real(spec.data_dir)
    if not (data == root or data in root.parents):  # a data dir of "." would own the whole workspace
        dirs.append((spec.data_dir, "inside the data directory, which voicegate keeps"))
    if spec.view.model is not None and spec.model_dir is not None:
        dirs.append((spec.model_dir, f"inside {spec.view.model.what}'s directory, which voicegate reads"))
    return dirs


def _other_gates(spec: GateSpec) -> list[tuple[str, str, Path]]:
    """(gate, artifact key, path) of every other registered gate's artifacts, read leniently."""
    found: list[tuple[str, str, Path]] = []
    for reg in sorted((spec.root / "preregistrations").glob("*.registration.json")):
        try:
            data = json.loads(reg.read_text(encoding="utf-8"))
            gate, artifacts = data["gate"], data["spec"]["artifacts"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if gate == spec.gate or not isinstance(artifacts, dict):
            continue
        for kind in ARTIFACT_KINDS:
            value = artifacts.get(kind.name)
            if isinstance(value, str) and value.strip():
                found.append((str(gate), kind.name, resolve_path(spec.root, value)))
    return found


def _what(key: str) -> str:
    return artifact_kind(key).what


def check_artifact_paths(spec: GateSpec) -> None:
    """Refuse (a VoicegateError naming the key) any artifact path that is not a file of its own where it may be."""
    fail = failer(_shown(spec.root, spec.path))
    named = spec.artifacts.named()
    inputs, dirs, others = _inputs(spec), _owned_dirs(spec), _other_gates(spec)
    keys = list(named)
    for i, (key, path) in enumerate(named.items()):
        k = f"artifacts.{key}"
        shown = _shown(spec.root, path)
        real = _real(path)
        if real.exists() and not real.is_file():
            raise fail(k, f"{shown} is not a regular file; an artifact is a file voicegate appends to")
        for other, what in inputs:
            if _same(path, other):
                also = "" if _shown(spec.root, other) == shown else f" ({_shown(spec.root, other)})"
                raise fail(k, f"{shown} is {what} of {spec.gate}{also}: voicegate reads it, so it cannot be "
                              "an artifact; each artifact must be a file of its own")
        for directory, what in dirs:
            if _inside(path, directory):
                raise fail(k, f"{shown} is {what} ({_shown(spec.root, directory)}); an artifact must be a "
                              "file of its own")
        for other_key in keys[:i]:
            if _same(path, named[other_key]):
                raise fail(k, f"{shown} is also artifacts.{other_key}: each artifact must be a file of its own")
        for gate, other_key, other in others:
            if key == other_key and artifact_kind(key).shared:
                continue  # gates share the seat's compose file; each entry sits above its own adapter
            if _same(path, other):
                raise fail(k, f"{shown} is {_what(other_key)} of {gate}: each artifact must be a file "
                              "of its own")
        if not _inside(path, spec.root) and key not in spec.artifacts.outside_workspace:
            where = "" if str(real) == shown else f" (it resolves to {real})"
            if not artifact_kind(key).may_be_outside:
                raise fail(k, f"{shown}{where} is outside the workspace {spec.root}; {_what(key)} is the "
                              "workspace's own and must be inside it")
            raise fail(k, f"{shown}{where} is outside the workspace {spec.root}; if that is meant (an adapter "
                          f"directory on a mounted volume), say so: artifacts.outside_workspace: [{key}]")



def check_regular(path: Path, flag: str) -> None:
    """Refuse an existing path that is not a regular file or a directory: a file written whole goes in by a rename,
    which would replace a device (/dev/null, for whoever runs it as root), a pipe or a socket with a plain file."""
    if os.path.exists(path) and not (os.path.isfile(path) or os.path.isdir(path)):
        raise VoicegateError(f"{flag} {path} is not a regular file (a device, a pipe or a socket): the file is "
                             "written whole, replacing what is there; give a file name")


def check_output_path(spec: GateSpec, path: Path, flag: str, *, allowed: Path | None = None) -> None:
    """Refuse a file a command would overwrite whole (`report --out`) when voicegate owns or reads it.

    Overwriting the gate record with a report page once left `verify` nothing to check; `allowed`
    is the command's own default place (the report's in the run directory).
    """
    if allowed is not None and _same(path, allowed):
        return
    shown = _shown(spec.root, path)
    why = f"{flag} {shown}"
    check_regular(path, flag)
    for key, artifact in spec.artifacts.named().items():
        if _same(path, artifact):
            raise VoicegateError(f"{why} is {_what(key)} of {spec.gate}: voicegate only appends to it; "
                                 "write the report elsewhere")
    for gate, key, artifact in _other_gates(spec):
        if _same(path, artifact):
            raise VoicegateError(f"{why} is {_what(key)} of {gate}: voicegate only appends to it; "
                                 "write the report elsewhere")
    for other, what in _inputs(spec):
        if _same(path, other):
            raise VoicegateError(f"{why} is {what} of {spec.gate}: voicegate reads it; write the report elsewhere")
    for directory, what in _owned_dirs(spec):
        if _inside(path, directory):
            raise VoicegateError(f"{why} is {what}; write the report elsewhere")
