"""The compose comment: comment lines inserted directly above an adapter's `--lora-modules` item.

The file is never re-serialised: the new text is spliced in at the byte level,
so every other byte (the operator's comments, quoting, key order, CRLF line
endings) stays exactly as it was.

Where "directly above" is:

- the item is found by parsing the file with PyYAML's composer (which keeps
  each scalar's line), in any sequence that contains the scalar
  ``--lora-modules``: the items after it (up to the next ``--flag``) are
  modules, as is a ``--lora-modules=<module>`` scalar. A module belongs to the
  gate when it reads ``<gate>=<path>`` or is the JSON form
  ``{"name": "<gate>", "path": ..., "base_model_name": ...}``.
- the comment lines go immediately before the line on which that item starts,
  with that line's indentation — so after any comment lines already there
  (a human's note, earlier voicegate entries), in the order they were written.
- for an item inside a flow list (``command: [..., --lora-modules, lv-x=/a]``)
  "above" is above the line holding the item: when the whole list is on one
  line, the comments go above that line (YAML has no comments inside a line).
  When a flow list spans lines, the comment sits inside the brackets, above
  the item's line, which YAML allows.
- when a file lists the gate's module more than once (two services), the first
  in file order is the anchor.

Which gate an entry belongs to (what `verify GATE` lists): the gate whose module
item is on the entry's anchor line, the first line below its marker that is not a
comment (entries stacked above one item share it). A one-line flow list can hold
several gates' items on that line; there the entry's first line, which every
entry starts with ``voicegate <date> <gate> ...``, names the gate.

After splicing, the file is parsed before and after; if the data differ (they
cannot, unless a form slipped through that this module misjudges), nothing is
written and the command refuses with exit 2. The check is repeated on the
written file, and the original restored if it fails there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import yaml

from voicegate._clip import clip
from voicegate._errors import VoicegateError
from voicegate.artifacts import _chain


def _module_name(value: str) -> str | None:
    value = value.strip()
    if value.startswith("{"):
        try:
            obj = json.loads(value)
        except ValueError:
            return None
        return obj.get("name") if isinstance(obj, dict) and isinstance(obj.get("name"), str) else None
    name, sep, _ = value.partition("=")
    return name.strip() if sep else None


def _walk(node: yaml.Node) -> Iterator[yaml.Node]:
    yield node
    if isinstance(node, yaml.SequenceNode):
        for child in node.value:
            yield from _walk(child)
    elif isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            yield from _walk(k)
            yield from _walk(v)


def module_items(text: str) -> list[tuple[str, int]]:
    """(module name, 0-based line of the item) for every --lora-modules item in the file."""
    try:
        docs = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise VoicegateError(f"compose file is not valid YAML: {str(exc).splitlines()[0]}") from None
    found: list[tuple[str, int]] = []
    for doc in docs:
        if doc is None:
            continue
        for node in _walk(doc):
            if not isinstance(node, yaml.SequenceNode):
                continue
            in_modules = False
            for item in node.value:
                if not isinstance(item, yaml.ScalarNode):
                    in_modules = False
                    continue
                value = str(item.value)
                if value == "--lora-modules":
                    in_modules = True
                    continue
                if value.startswith("--lora-modules="):
                    value = value[len("--lora-modules="):]
                elif value.startswith("--"):
                    in_modules = False
                    continue
                elif not in_modules:
                    continue
                name = _module_name(value)
                if name:
                    found.append((name, item.start_mark.line))
    return found


def anchor_line(data: bytes, gate: str) -> int:
    text = data.decode("utf-8")
    lines = [line for name, line in module_items(text) if name == gate]
    if not lines:
        raise VoicegateError(f"compose file has no --lora-modules entry for {gate}: "
                             "nothing to annotate (file left untouched)")
    return min(lines)


def has_module(data: bytes, gate: str) -> bool:
    """Whether the file lists `gate` among its --lora-modules (so score can comment above it)."""
    return any(name == gate for name, _ in module_items(data.decode("utf-8")))


_TITLE_GATE = re.compile(r"^[ \t]*#[ \t]*voicegate[ \t]+\S+[ \t]+([^\s:]+)")


def entries_for(data: bytes, gate: str) -> list[int]:
    """The numbers of the entries that belong to `gate` (see the module docstring for the rule)."""
    from voicegate.artifacts._chain import compose_markers, is_comment

    lines = data.splitlines(keepends=True)
    on_line: dict[int, set[str]] = {}
    for name, line in module_items(data.decode("utf-8")):
        on_line.setdefault(line, set()).add(name)
    out = []
    for m in compose_markers(lines):
        anchor = m.index + 1
        while anchor < len(lines) and is_comment(lines[anchor]):
            anchor += 1
        names = on_line.get(anchor, set())
        if gate not in names:
            continue
        if len(names) > 1:
            title = _TITLE_GATE.match(lines[max(m.index - m.lines + 1, 0)].decode("utf-8", "replace"))
            if title is None or title.group(1) != gate:
                continue
        out.append(m.number)
    return sorted(out)


def _data(text: bytes) -> object:
    try:
        return list(yaml.safe_load_all(text.decode("utf-8")))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise VoicegateError(f"compose file is not valid YAML: {str(exc).splitlines()[0]}") from None


def plan(path: Path, original: bytes, gate: str, body_lines: list[str]) -> tuple[bytes, bytes]:
    """(the new bytes, the item line) — or a refusal; writes nothing."""
    before = _data(original)
    index = anchor_line(original, gate)
    lines = original.splitlines(keepends=True)
    item = lines[index]
    nl = (b"\r\n" if item.endswith(b"\r\n") else b"\n") if item.endswith(b"\n") else _chain.newline_of(original)
    indent = item[:len(item) - len(item.lstrip(b" \t"))].decode()
    new = _chain.compose_entry(original, index, body_lines, indent, nl)
    if _data(new) != before:
        raise VoicegateError(f"{path}: the comment would change the parsed YAML; refused, file untouched")
    return new, item


def entry_message(path: Path, body_lines: list[str], item: bytes) -> str:
    """What to tell the user about a compose entry (it is comment-only: nothing to redeploy)."""
    return (f"{path}: {len(body_lines) + 1} comment lines above {clip(item.strip().decode(), 60)} — "
            "comment-only, the YAML data are unchanged: no redeploy needed (it rides with the next deploy)")


def annotate(path: Path, gate: str, body_lines: list[str]) -> str:
    """Insert an entry above the gate's item on its own (verdicts go through `_transaction`)."""
    path = Path(path)
    if not path.is_file():
        raise VoicegateError(f"{path}: compose file not found")
    with _chain.locked(path):
        original = path.read_bytes()
        before = _data(original)
        new, item = plan(path, original, gate, body_lines)
        _chain.atomic_write(path, new)
        try:
            same = _data(path.read_bytes()) == before
        except VoicegateError:
            same = False
        if not same:
            _chain.atomic_write(path, original)
            raise VoicegateError(f"{path}: the written file parsed differently; the original was restored")
    return entry_message(path, body_lines, item)
