"""Acceptance 3: the compose writer — block, JSON and flow forms, CRLF, the fleet fixture byte for byte.

Every test checks the same three things: the added lines are comments sitting
directly above the gate's item with its indentation, removing them gives back
the original bytes exactly, and the parsed YAML is unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from voicegate._errors import VoicegateError
from voicegate.artifacts import _chain, _compose

BODY = ["voicegate 2026-09-17 lv-x score, rule global-max-spread@1:",
        "  ckpt475: VOICE FAIL (global-max-spread: +0.193 vs floor 0.251, 0.8x) · NOT-COPIED · NO-DAMAGE"]


def _insert(path: Path, gate: str = "lv-x", body: list[str] = BODY) -> tuple[bytes, bytes]:
    before = path.read_bytes()
    message = _compose.annotate(path, gate, body)
    assert "comment-only" in message and "no redeploy needed" in message
    return before, path.read_bytes()


def _added(before: bytes, after: bytes) -> tuple[int, list[bytes]]:
    """(index of the first added line, the added lines), proving everything else is untouched."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    i = next((k for k, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), len(old))
    extra = len(new) - len(old)
    assert new[:i] == old[:i] and new[i + extra:] == old[i:], "only an insertion, every old byte in order"
    return i, new[i:i + extra]


def _check(before: bytes, after: bytes, anchor: bytes, indent: bytes) -> list[bytes]:
    assert yaml.safe_load(before) == yaml.safe_load(after)
    i, added = _added(before, after)
    assert after.splitlines(keepends=True)[i + len(added)].strip() == anchor
    assert len(added) == len(BODY) + 1
    for line in added:
        assert line.startswith(indent + b"# "), line
    assert added[-1].lstrip().startswith(b"# voicegate:entry 1 lines=3 ")
    return added


def test_fleet_fixture_byte_for_byte(tmp_path: Path, compose_fixture: Path) -> None:
    path = tmp_path / "compose.yaml"
    path.write_bytes(compose_fixture.read_bytes())
    before, after = _insert(path, "lv-bronte")
    added = _check(before, after, b"- lv-bronte=/adapters/lv-bronte-4b-v1", b"      ")
    # After the human-written block (it ends with the persistent-memory pointer), not inside it.
    lines = after.splitlines(keepends=True)
    i = lines.index(added[0])
    assert lines[i - 1] == b"      # persistent-memory.d/2026-09-17-lv-bronte-gate.md\n"
    assert added[0] == ("      # " + BODY[0] + "\n").encode()
    assert added[1] == ("      #   " + BODY[1][2:] + "\n").encode("utf-8")
    assert _chain.compose_verify(path).problem is None
    # lv-yarros gets its own entry, numbered on from the file's last one.
    _compose.annotate(path, "lv-yarros", ["yarros note"])
    data = path.read_bytes()
    assert b"      # yarros note\n      # voicegate:entry 2 lines=2 " in data
    assert data.index(b"voicegate:entry 2") < data.index(b"- lv-yarros=") < data.index(b"voicegate:entry 1")
    report = _chain.compose_verify(path)
    assert report.problem is None and len(report.ok) == 2


BLOCK = b"""services:
  vllm:
    command:
      - /model
      - --lora-modules
      - lv-y=/adapters/lv-y
      # a human note about lv-x
      - lv-x=/adapters/lv-x
      - --max-loras
      - "4"
"""

JSON_FORM = b"""services:
  vllm:
    command:
      - --lora-modules
      - '{"name": "lv-x", "path": "/adapters/lv-x-4b-v1", "base_model_name": "voices-base"}'
      - '{"name": "lv-y", "path": "/adapters/lv-y", "base_model_name": "voices-base"}'
"""

FLOW_ONE_LINE = b"""services:
  vllm:
    image: vllm/vllm-openai
    command: [/model, --enable-lora, --lora-modules, lv-y=/adapters/lv-y, lv-x=/adapters/lv-x]
    ports: ["8027:8000"]
"""

FLOW_MULTI = b"""services:
  vllm:
    command: [/model, --enable-lora, --lora-modules,
      lv-y=/adapters/lv-y,
      lv-x=/adapters/lv-x,
      --max-loras, "4"]
"""

QUOTED_AND_EQUALS = b"""services:
  a:
    command:
      - "--lora-modules=lv-z=/adapters/lv-z"
      - --lora-modules
      - "lv-x=/adapters/lv-x"
"""


@pytest.mark.parametrize("text, anchor, indent", [
    (BLOCK, b"- lv-x=/adapters/lv-x", b"      "),
    (JSON_FORM, b"""- '{"name": "lv-x", "path": "/adapters/lv-x-4b-v1", "base_model_name": "voices-base"}'""",
     b"      "),
    (FLOW_ONE_LINE, FLOW_ONE_LINE.splitlines()[3].strip(), b"    "),
    (FLOW_MULTI, b"lv-x=/adapters/lv-x,", b"      "),
    (QUOTED_AND_EQUALS, b'- "lv-x=/adapters/lv-x"', b"      "),
], ids=["block", "json", "flow-one-line", "flow-multi-line", "quoted"])
def test_entry_forms(tmp_path: Path, text: bytes, anchor: bytes, indent: bytes) -> None:
    path = tmp_path / "compose.yaml"
    path.write_bytes(text)
    before, after = _insert(path)
    _check(before, after, anchor, indent)
    assert _chain.compose_verify(path).problem is None


def test_block_form_goes_after_the_existing_comment(tmp_path: Path) -> None:
    path = tmp_path / "compose.yaml"
    path.write_bytes(BLOCK)
    _, after = _insert(path)
    lines = after.splitlines()
    note = lines.index(b"      # a human note about lv-x")
    assert lines[note + 1] == b"      # " + BODY[0].encode()
    assert lines[note + 4] == b"      - lv-x=/adapters/lv-x"


def test_equals_form_item(tmp_path: Path) -> None:
    path = tmp_path / "compose.yaml"
    path.write_bytes(QUOTED_AND_EQUALS)
    before, after = _insert(path, "lv-z")
    _check(before, after, b'- "--lora-modules=lv-z=/adapters/lv-z"', b"      ")


def test_crlf_file_keeps_crlf(tmp_path: Path, compose_fixture: Path) -> None:
    path = tmp_path / "compose.yaml"
    crlf = compose_fixture.read_bytes().replace(b"\n", b"\r\n")
    path.write_bytes(crlf)
    before, after = _insert(path, "lv-bronte")
    _, added = _added(before, after)
    assert all(line.endswith(b"\r\n") for line in added)
    assert after.count(b"\n") == after.count(b"\r\n")  # not one bare LF anywhere
    assert yaml.safe_load(before) == yaml.safe_load(after)
    _compose.annotate(path, "lv-bronte", ["second"])
    assert _chain.compose_verify(path).problem is None


def test_file_mode_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "compose.yaml"
    path.write_bytes(BLOCK)
    path.chmod(0o640)
    _insert(path)
    assert path.stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize("text", [
    BLOCK.replace(b"lv-x=", b"lv-xx="),                       # a different adapter that merely starts alike
    b"services:\n  a:\n    command: [--served-model-name, lv-x]\n",  # named, but not as a LoRA module
    b"# lv-x=/adapters/lv-x is mentioned only in a comment\nservices: {}\n",
], ids=["prefix", "not-a-module", "comment-only"])
def test_refuses_when_the_gate_has_no_entry(tmp_path: Path, text: bytes) -> None:
    path = tmp_path / "compose.yaml"
    path.write_bytes(text)
    with pytest.raises(VoicegateError, match="no --lora-modules entry for lv-x") as exc:
        _compose.annotate(path, "lv-x", BODY)
    assert exc.value.exit_code == 2
    assert path.read_bytes() == text


def test_refuses_an_insertion_that_would_change_the_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "compose.yaml"
    path.write_bytes(BLOCK)
    real = _chain.compose_entry

    def broken(data: bytes, index: int, body: list[str], indent: str, nl: bytes) -> bytes:
        out = real(data, index, body, indent, nl)
        return out.replace(b"# voicegate 2026", b"- voicegate 2026", 1)  # an item, not a comment

    monkeypatch.setattr(_chain, "compose_entry", broken)
    with pytest.raises(VoicegateError, match="would change the parsed YAML; refused, file untouched"):
        _compose.annotate(path, "lv-x", BODY)
    assert path.read_bytes() == BLOCK


def test_restores_the_original_when_the_written_file_parses_differently(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "compose.yaml"
    path.write_bytes(BLOCK)
    real = _chain.atomic_write
    calls = []

    def flaky(target: Path, data: bytes) -> None:
        calls.append(data)
        # The first write lands damaged (say, a filesystem that mangles it); the restore is honest.
        real(target, data.replace(b"- --max-loras", b"- --max-lorax") if len(calls) == 1 else data)

    monkeypatch.setattr(_chain, "atomic_write", flaky)
    with pytest.raises(VoicegateError, match="the original was restored"):
        _compose.annotate(path, "lv-x", BODY)
    assert path.read_bytes() == BLOCK
    assert calls[-1] == BLOCK


def test_invalid_yaml_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "compose.yaml"
    text = b"services: [unclosed\n"
    path.write_bytes(text)
    with pytest.raises(VoicegateError, match="not valid YAML"):
        _compose.annotate(path, "lv-x", BODY)
    assert path.read_bytes() == text



@st.composite
def _compose_files(draw):  # type: ignore[no-untyped-def]
    indent = " " * draw(st.integers(2, 8))
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    names = draw(st.lists(st.from_regex(r"lv-[a-z]{1,6}", fullmatch=True), min_size=1, max_size=5, unique=True))
    target = draw(st.sampled_from(names))
    form = draw(st.sampled_from(["block", "json", "flow"]))
    # A person's existing notes: whatever YAML itself accepts in a comment.
    notes = draw(st.lists(st.text(st.characters(min_codepoint=0x20, max_codepoint=0xD7FF,
                                                exclude_characters="\x7f\x85\u2028\u2029",
                                                exclude_categories=("Cc", "Cs")), max_size=30), max_size=3))
    head = f"services:{nl}{indent}seat:{nl}"
    if form == "flow":
        items = ", ".join(f"{n}=/adapters/{n}" for n in names)
        return head + f"{indent * 2}command: [/model, --lora-modules, {items}]{nl}", target, form
    lines = [head, f"{indent * 2}command:{nl}", f"{indent * 3}- --lora-modules{nl}"]
    for n in names:
        if n == target:
            lines += [f"{indent * 3}# {note}".rstrip() + nl for note in notes]
        item = (f"'{{\"name\": \"{n}\", \"path\": \"/adapters/{n}\", \"base_model_name\": \"b\"}}'"
                if form == "json" else f"{n}=/adapters/{n}")
        lines.append(f"{indent * 3}- {item}{nl}")
    return "".join(lines), target, form


@settings(max_examples=60, deadline=None)
@given(_compose_files(), st.lists(st.text(max_size=40), min_size=1, max_size=4))  # any text: ESC, NEL, LS...
def test_any_compose_keeps_every_byte_and_the_data(case, body: list[str]) -> None:  # type: ignore[no-untyped-def]
    import tempfile

    text, target, _ = case
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "compose.yaml"
        path.write_bytes(text.encode("utf-8"))
        before = path.read_bytes()
        _compose.annotate(path, target, body)
        after = path.read_bytes()
        i, added = _added(before, after)
        assert yaml.safe_load(before) == yaml.safe_load(after)
        nl = b"\r\n" if b"\r\n" in before else b"\n"
        assert all(line.endswith(nl) and line.lstrip().startswith(b"#") for line in added)
        anchor = after.splitlines(keepends=True)[i + len(added)]
        assert target.encode() in anchor
        assert _chain.compose_verify(path).problem is None
