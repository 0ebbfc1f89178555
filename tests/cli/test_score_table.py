"""The score table fits the terminal (`COLUMNS`) without cutting a floor, a verdict or DISAGREE."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.bronte import bronte_workspace, generations, patch_scoring, write_jsonl
from helpers.workspace import run_cli

from voicegate._clip import clip

GATE = "lv-bronte"
BOX = re.compile(r"^[┏┃┡│├└]")  # a line of a table


@pytest.fixture
def bronte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The DESIGN.md reference case: global floor 0.251, pairwise 0.091, ckpt475 +0.193, ckpt925 +0.210."""
    patch_scoring(monkeypatch)
    root = bronte_workspace(tmp_path / "ws", None)
    assert run_cli("import", GATE, write_jsonl(tmp_path / "g.jsonl", generations()), cwd=root).code == 0
    return root


def _score(root: Path, columns: int) -> list[str]:
    done = run_cli("score", GATE, "--dry-run", cwd=root, env={"COLUMNS": str(columns)})
    assert done.code == 0, done.stderr
    return done.stdout.splitlines()


def _rows(lines: list[str], arm: str) -> list[str]:
    return [ln for ln in lines if ln.startswith(f"│ {arm} ")]


def test_an_80_column_terminal_gets_narrow_tables_with_every_number_whole(bronte: Path) -> None:
    lines = _score(bronte, 80)
    table = [ln for ln in lines if BOX.match(ln)]
    assert table and max(len(ln) for ln in table) <= 80
    assert not any("…" in ln for ln in table)  # no cell was elided
    # ckpt475: one line per rule, each with its own floor, ratio and verdict; DISAGREE on the candidate.
    first, second = [ln for ln in lines if "│ global" in ln or "│ pairwise" in ln][:2]
    assert first.startswith("│ ckpt475 ") and "+0.193" in first and "global *" in first
    assert "0.251 (0.8x)" in first and "FAIL" in first and "DISAGREE" in first
    assert "pairwise " in second and "0.091 (2.1x)" in second and "PASS" in second
    shown = [ln.rstrip() for ln in lines]  # the caption: one rule a line, never broken inside a pair
    assert "  global = global-max-spread" in shown and "  pairwise = pairwise-max-spread" in shown
    ckpt925 = _rows(lines, "ckpt925")
    assert any("+0.210" in ln and "0.251 (0.8x)" in ln and "FAIL" in ln for ln in ckpt925)
    # Copying and damage are two tables there, every column header whole.
    header = "\n".join(lines)
    for column in ("overlap", "vs control", "longest run", "COPYING", "degeneration", "truncated",
                   "probes passed", "DAMAGE"):
        assert column in header


def test_a_wide_terminal_gets_one_row_per_arm_with_both_floors_side_by_side(bronte: Path) -> None:
    lines = _score(bronte, 200)
    (row,) = [ln for ln in _rows(lines, "ckpt475") if "+0.193" in ln]
    assert "0.251 (0.8x)" in row and "0.091 (2.1x)" in row and "DISAGREE" in row
    assert row.count("FAIL") == 1 and row.count("PASS") == 1
    assert max(len(ln) for ln in lines if BOX.match(ln)) <= 130


def test_the_columns_setting_decides_the_layout(bronte: Path) -> None:
    def tables(columns: int) -> list[str]:
        return [ln for ln in _score(bronte, columns) if BOX.match(ln)]

    assert tables(80) != tables(130)
    assert tables(130) == tables(200)  # the wide layout fits in 130 columns: a wider terminal changes nothing


def test_a_quote_is_cut_at_a_word_boundary_with_an_ellipsis() -> None:
    text = "reader I married him a quiet wedding we had he and I the parson and clerk were alone present"
    assert clip(text, 200) == text
    assert clip(text, 30) == "reader I married him a quiet…"
    assert len(clip(text, 30)) <= 30
    assert clip("reader, I married him", 9) == "reader…"  # no dangling comma before the ellipsis
    assert clip("supercalifragilistic", 8) == "superca…"  # one long word: cut inside it, still fits
    assert clip("abc def", 4, ellipsis="...") == "a..."



def test_verify_cuts_entry_titles_at_a_word_boundary_with_an_ellipsis(tmp_path: Path) -> None:
    from conftest import COMPOSE_FIXTURE
    from helpers.bronte import as_shipped, scored_workspace

    if not COMPOSE_FIXTURE.is_file():
        pytest.skip(f"the fleet's compose file is not at {COMPOSE_FIXTURE}")
    root = scored_workspace(tmp_path / "ws", as_shipped(COMPOSE_FIXTURE))
    done = run_cli("verify", GATE, cwd=root)
    assert done.code == 0, done.stderr
    titles = re.findall(r"^  entry \d+ \((.*)\) OK$", done.stdout, flags=re.MULTILINE)
    assert len(titles) == 9
    text = " ".join(" ".join(p.read_text(encoding="utf-8").split()) for p in
                    (root / "gates" / "lv-bronte.md", root / "adapters" / "lv-bronte-4b-v1" / "README.md",
                     root / "deploy" / "compose.yaml"))
    cut = [t for t in titles if t.endswith("…")]
    assert cut, "the amendment's long titles are cut"
    for title in cut:
        stem = title.removesuffix("…")
        assert len(title) <= 70
        assert re.search(re.escape(stem) + r"[\s,;:—–\-→]", text), f"cut inside a word: {title!r}"
