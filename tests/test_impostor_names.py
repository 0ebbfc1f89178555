"""Issue 35, item 5: an impostor's name that hides the gate author, or a line break, is refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from _workspace import base_spec, make_workspace, run_cli

from voicegate.spec._types import author_key


def _register(tmp_path: Path, author: str, impostor: str) -> tuple[int, str]:
    spec = base_spec("lv-imp")
    spec["author"] = author
    spec["corpora"]["impostors"] = {impostor: ["corpora/back/*.txt"]}
    root = tmp_path / "ws"
    make_workspace(root, spec)
    out = run_cli("register", "lv-imp", cwd=root)
    return out.code, out.stderr


def test_a_line_break_in_an_impostors_name_is_refused_with_its_reason_on_the_one_line(tmp_path: Path) -> None:
    code, err = _register(tmp_path, "Charlotte Brontë", "Anne\nBrontë")
    assert code == 2 and err.count("\n") == 1, err
    assert err.endswith("corpora.impostors: 'Anne\\nBrontë': an impostor's name must be one line of text: it "
                        "contains a line break or control character (U+000A)\n")


@pytest.mark.parametrize("disguised", ["\u0421harlotte Bront\u00eb",        # Cyrillic Es for C
                                       "Charl\u043ette Bront\u00eb",        # Cyrillic o
                                       "\u0421HARL\u039fTTE BRONTE"])       # Cyrillic Es, Greek Omicron, no accent
def test_an_impostor_spelled_with_look_alike_letters_is_the_gate_author(tmp_path: Path, disguised: str) -> None:
    assert author_key(disguised) == author_key("Charlotte Brontë") == "charlotte bronte"
    code, err = _register(tmp_path, "Charlotte Brontë", disguised)
    assert code == 2 and f"{disguised!r} is the gate author ('Charlotte Brontë')" in err, err
    assert author_key("Anne Brontë") != author_key("Charlotte Brontë")
