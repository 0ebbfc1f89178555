"""Impostors that cannot test specificity are refused (a name hiding the gate author behind
look-alike letters, a line break in a name, a near-copy of another text) or warned about (one impostor, an
impostor text in the background)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.workspace import base_spec, make_workspace, run_cli

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


# -- near-copies and what weakens the check ---------------------------------------------------------------


def _impostors(tmp_path: Path, impostors: dict[str, list[str]], files: dict[str, str] | None = None) -> tuple[int, str]:
    from helpers.workspace import git, impostor_spec, impostor_workspace

    root = impostor_workspace(tmp_path / "ws", impostor_spec(impostors))
    for name, body in (files or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", "more")
    out = run_cli("register", "lv-test", cwd=root)
    return out.code, out.stderr


def _edited(path: str, every: int = 40) -> str:
    """The file at `path` of the impostor workspace with every `every`-th word changed: not a byte copy."""
    from helpers.workspace import IMPOSTOR_CORPORA

    words = IMPOSTOR_CORPORA[path].split()
    return " ".join("changed" if i % every == 0 else w for i, w in enumerate(words))


def test_an_impostor_that_is_a_near_copy_of_the_held_out_text_is_refused(tmp_path: Path) -> None:
    code, err = _impostors(tmp_path, {"Anne Bronte": ["corpora/near/*.txt"]},
                           {"corpora/near/near.txt": _edited("corpora/held/held.txt")})
    assert code == 2 and err.count("\n") == 1, err
    assert ("corpora.impostors.Anne Bronte: corpora/near/near.txt shares 80% of its 8-word sequences with the "
            "gate author's held-out text corpora/held/held.txt: a near-copy") in err, err


def test_an_impostor_that_is_a_near_copy_of_another_impostors_file_is_refused(tmp_path: Path) -> None:
    code, err = _impostors(tmp_path, {"Anne Bronte": ["corpora/imp/*.txt"], "Emily Bronte": ["corpora/near/*.txt"]},
                           {"corpora/near/near.txt": _edited("corpora/imp/imp.txt")})
    assert code == 2, err
    assert "shares 80% of its 8-word sequences with impostor 'Anne Bronte': corpora/imp/imp.txt" in err, err


def test_one_impostor_or_an_impostor_in_the_background_is_warned_about(tmp_path: Path) -> None:
    code, err = _impostors(tmp_path, {"Anne Bronte": ["corpora/bg/*.txt"]})
    assert code == 0, err
    assert ("warning: one impostor ('Anne Bronte'): SPECIFIC then says 'nearer the author than Anne Bronte', not "
            "than other authors; register two or more") in err
    assert "warning: impostor 'Anne Bronte': corpora/bg/bg1.txt is also in corpora.background" in err


def test_a_background_of_one_authors_text_is_warned_about(tmp_path: Path) -> None:
    # The impostor workspace's background is one file: every margin is measured with a ruler of one text.
    code, err = _impostors(tmp_path, {"Anne Bronte": ["corpora/imp/*.txt"], "Emily Bronte": ["corpora/imp2/*.txt"]})
    assert code == 0, err
    assert "warning: corpora.background is one author's text (a single file, bg1.txt)" in err
    code, err = _impostors(tmp_path / "two", {"Anne Bronte": ["corpora/imp/*.txt"],
                                              "Emily Bronte": ["corpora/imp2/*.txt"]},
                           {"corpora/bg/bg2.txt": _edited("corpora/train/train.txt", every=2)})
    assert code == 0 and "is one author's text" not in err, err


def test_one_author_in_the_background_is_read_from_the_corpora_file_names() -> None:
    from voicegate.spec._resolve import _one_background_author

    assert _one_background_author([Path("Austen_Emma.txt"), Path("Austen_Pride.txt")]) == (
        "every one of its 2 files is named Austen_…")
    assert _one_background_author([Path("Austen_Emma.txt"), Path("Dickens_Bleak.txt")]) is None
    assert _one_background_author([Path("a.txt"), Path("b.txt")]) is None  # names that say nothing claim nothing
