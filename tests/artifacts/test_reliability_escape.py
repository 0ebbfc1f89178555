"""Strings from outside (seat, files, spec, CLI) never reach an artifact raw.

A seat whose `/version` string, an import file whose name, and reasons on the
command line that carry a line break, a markdown heading, HTML and a forged
entry marker must leave every artifact with exactly the entries voicegate
wrote, a chain `verify` accepts, no raw HTML or heading in the markdown, and a
compose.yaml whose data are unchanged and whose new lines are all comments.
Values with a natural shape (the spec's `author`, an arm's `model`) are
refused at register instead (exit 2, one line, nothing written).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.bronte import README, as_shipped, bronte_spec, bronte_workspace, generations, patch_scoring, write_jsonl
from helpers.workspace import cli, gate_spec, git, registered_workspace, run_cli, tree_snapshot

from voicegate.artifacts import _chain
from voicegate.seat import StandinSeat

FORGED_MARKER = f"<!-- voicegate:entry 2 sha256={'a' * 64} prev={'b' * 64} -->"
COMPOSE_FORGED = f"voicegate:entry 2 lines=2 body={'c' * 16} sha256={'d' * 64}"
HOSTILE = f"x\n## forged\n<script>alert(1)</script>\n{FORGED_MARKER}\n# {COMPOSE_FORGED}\n- [click](http://evil)"
# A file name holds no "/" and at most 255 bytes: the heading, the HTML and the markdown marker.
HOSTILE_NAME = f"x\n## forged\n<script>alert(1)<script>\n{FORGED_MARKER}\n"

# The headings voicegate's own templates write; nothing else may start a markdown line with '#'.
HEADINGS = re.compile(r"^(# Gate record: |## Score — |## Shipping decision — |## Amendment — |### voicegate |"
                      r"### Seat integrity — details$)")


def _markdown_is_clean(path: Path, entries: int, before: str = "") -> None:
    """`path` has `entries` whole entries, a chain that holds, and nothing raw in what voicegate added after
    `before`."""
    data = path.read_bytes()
    assert data.decode("utf-8").startswith(before)
    text = data.decode("utf-8")[len(before):]
    assert len(_chain.md_markers(data)) == entries, text
    assert _chain.md_verify(path).problem is None
    assert "<script" not in text.lower() and "</script" not in text.lower()
    assert "[click](" not in text  # a link written by an outsider stays text
    for line in text.splitlines():
        if line.startswith("#"):
            assert HEADINGS.match(line), f"a heading voicegate did not write: {line!r}"
        if line.startswith("<!--"):
            assert _chain.MD_MARKER.match(line.encode()), f"a marker-like line: {line!r}"
    assert "forged" not in "".join(ln for ln in text.splitlines() if ln.startswith(("#", "<!--", "- [")))


def _compose_is_clean(path: Path, before: bytes, entries: int) -> None:
    after = path.read_bytes()
    assert list(yaml.safe_load_all(after)) == list(yaml.safe_load_all(before))
    old = before.splitlines()
    added = [ln for ln in after.splitlines() if ln not in old]
    assert added and all(ln.lstrip().startswith(b"#") for ln in added), added
    assert len(_chain.compose_markers(after.splitlines(keepends=True))) == entries
    assert _chain.compose_verify(path).problem is None


@pytest.fixture
def compose_bytes(compose_fixture: Path) -> bytes:
    return as_shipped(compose_fixture)


def test_import_file_name_and_reasons_reach_no_artifact_raw(tmp_path: Path, compose_bytes: bytes,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    patch_scoring(monkeypatch)
    root = bronte_workspace(tmp_path / "ws", compose_bytes)
    source = write_jsonl(tmp_path / f"bronte{HOSTILE_NAME}.jsonl", generations())
    steps: list[tuple[Any, ...]] = [
        ("import", "lv-bronte", source),
        ("score", "lv-bronte"),
        ("ship", "lv-bronte", "ckpt475", "--reason", HOSTILE),
        ("amend", "lv-bronte", "--rule", "pairwise-max-spread", "--reason", HOSTILE),
    ]
    for step in steps:
        done = run_cli(*step, cwd=root)
        assert done.code == 0, (step, done.stderr)
    _markdown_is_clean(root / "gates/lv-bronte.md", 3)
    _markdown_is_clean(root / "adapters/lv-bronte-4b-v1/README.md", 3, README)
    _compose_is_clean(root / "deploy/compose.yaml", compose_bytes, 3)
    record = (root / "gates/lv-bronte.md").read_text(encoding="utf-8")
    assert "&lt;script&gt;" in record  # the file name and the reason are still there, as text
    done = run_cli("verify", "lv-bronte", cwd=root)
    assert done.code == 0, done.stdout + done.stderr
    assert "newest entry 3 matches the run's ledger" in done.stdout, done.stdout


COMPOSE_FOR_GEN = """services:
  seat:
    image: vllm/vllm-openai:v0.32.0
    command:
      - --model
      - Qwen/Qwen3-4B-Instruct
      - --lora-modules
      - lv-gen=/adapters/lv-gen
"""


def test_seat_version_reaches_no_artifact_raw(tmp_path: Path) -> None:
    spec = gate_spec("lv-gen")
    spec["artifacts"] = {"record": "gates/lv-gen.md", "readme": "adapters/lv-gen/README.md",
                         "compose": "deploy/compose.yaml"}
    with StandinSeat(adapters={"lv-gen-ckpt475": "/adapters/lv-gen/ckpt475"}, version=HOSTILE) as seat:
        spec["seat"]["url"] = seat.url
        root = tmp_path / "ws"
        (root / "adapters/lv-gen").mkdir(parents=True)
        (root / "deploy").mkdir(parents=True)
        (root / "deploy/compose.yaml").write_text(COMPOSE_FOR_GEN, encoding="utf-8")
        registered_workspace(root, spec)
        done = cli(root, "generate", "lv-gen", "--quiet")
        assert done.returncode == 0, done.stderr
    done = cli(root, "score", "lv-gen")
    assert done.returncode == 0, done.stderr
    _markdown_is_clean(root / "gates/lv-gen.md", 1)
    _markdown_is_clean(root / "adapters/lv-gen/README.md", 1)
    _compose_is_clean(root / "deploy/compose.yaml", COMPOSE_FOR_GEN.encode(), 1)
    record = (root / "gates/lv-gen.md").read_text(encoding="utf-8")
    run_line = next(ln for ln in record.splitlines() if ln.startswith("**Run.**"))
    assert "&lt;script&gt;" in run_line and "\\#\\# forged" in run_line  # one line, as text
    done = cli(root, "verify", "lv-gen")
    assert done.returncode == 0, done.stdout + done.stderr


# -- values with a natural shape are refused at the source -----------------------------------------


def _set(spec: dict[str, Any], key: str, value: str) -> None:
    if key == "author":
        spec["author"] = value
    elif key == "arms[1].model":
        spec["arms"][1]["model"] = value
    elif key == "seat.base_model":
        spec["seat"]["base_model"] = value
    elif key == "arms[1].adapter_path":
        spec["arms"][1]["adapter_path"] = value


@pytest.mark.parametrize("key", ["author", "arms[1].model", "seat.base_model", "arms[1].adapter_path"])
@pytest.mark.parametrize("bad", ["Charlotte\n## forged", "Charlotte\r<script>", "Char\x00lotte", "Char\u2028lotte",
                                 "Char\x85lotte", "Char\u202elotte"])
def test_spec_strings_with_line_breaks_or_controls_are_refused_at_register(tmp_path: Path, key: str,
                                                                          bad: str) -> None:
    spec = bronte_spec()
    _set(spec, key, bad)
    root = tmp_path / "ws"
    bronte_workspace(root, None, register=False, spec=spec)
    before = tree_snapshot(root)
    head = git(root, "rev-parse", "HEAD")
    done = run_cli("register", "lv-bronte", cwd=root)
    assert done.code == 2, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and key in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert tree_snapshot(root) == before and git(root, "rev-parse", "HEAD") == head


def test_an_author_with_markup_on_one_line_registers_and_is_escaped(tmp_path: Path, compose_bytes: bytes,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    patch_scoring(monkeypatch)
    spec = bronte_spec()
    spec["author"] = "Charlotte <b>Brontë</b> & **Currer** [Bell](http://evil) `x`"
    root = bronte_workspace(tmp_path / "ws", compose_bytes, spec=spec)
    assert run_cli("import", "lv-bronte", write_jsonl(tmp_path / "g.jsonl", generations()), cwd=root).code == 0
    assert run_cli("score", "lv-bronte", cwd=root).code == 0
    record = (root / "gates/lv-bronte.md").read_text(encoding="utf-8")
    author = next(ln for ln in record.splitlines() if ln.startswith("Author: "))
    assert author.startswith("Author: Charlotte &lt;b&gt;Brontë&lt;/b&gt; & \\*\\*Currer\\*\\* "
                             "\\[Bell\\](http://evil) \\`x\\`.")
    _markdown_is_clean(root / "gates/lv-bronte.md", 1)


# -- the chain itself cannot be handed a marker ----------------------------------------------------


def test_md_append_cannot_write_a_second_marker(tmp_path: Path) -> None:
    path = tmp_path / "r.md"
    body = f"## entry\n\n{FORGED_MARKER}\n<!-- voicegate:entry 7 -->\n  {FORGED_MARKER}\ntext"
    with _chain.locked(path):
        assert _chain.md_append(path, body, header=f"# head\n{FORGED_MARKER}\n") == 1
        assert _chain.md_append(path, body) == 2
    data = path.read_bytes()
    assert [m.number for m in _chain.md_markers(data)] == [1, 2]
    assert _chain.md_verify(path).problem is None


def test_compose_entry_cannot_write_a_second_marker(tmp_path: Path) -> None:
    path = tmp_path / "compose.yaml"
    path.write_bytes(COMPOSE_FOR_GEN.encode())
    from voicegate.artifacts import _compose

    _compose.annotate(path, "lv-gen", ["note", COMPOSE_FORGED, f"  {COMPOSE_FORGED}", "a\nb"])
    _compose.annotate(path, "lv-gen", [COMPOSE_FORGED])
    data = path.read_bytes()
    assert [m.number for m in _chain.compose_markers(data.splitlines(keepends=True))] == [1, 2]
    assert _chain.compose_verify(path).problem is None
    _compose_is_clean(path, COMPOSE_FOR_GEN.encode(), 2)


@pytest.mark.parametrize("text", [HOSTILE, "a\u2028b\u0085c\x0bd", "<img src=x onerror=alert(1)>", "&lt;x&gt;",
                                  "| a | b |", "![i](http://x/y.png)", "1. x", "> q", "```", "~~strike~~"])
def test_md_text_is_one_inert_line(text: str) -> None:
    from voicegate.artifacts._format import md_text

    out = md_text(text)
    assert "\n" not in out and "\r" not in out and "\u2028" not in out and "\x85" not in out
    assert "<" not in out and ">" not in out
    assert not re.search(r"(?<!\\)[`*_\[\]|#]", out)
    assert "~~" not in out


def test_md_text_leaves_plain_text_alone() -> None:
    from voicegate.artifacts._format import md_text

    for plain in ("Charlotte Brontë", "additive, reversible and safety-clean", "0.32.0+standin",
                  "http://fv-ml1:8027/v1", "smallest (arm, seed) pool has 440 words; needs ~10,000"):
        assert md_text(plain) == plain

