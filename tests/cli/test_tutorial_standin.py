"""docs/tutorial-standin.md, executed on `voicegate seat up --standin`, prints what it says (tests/helpers/tutorial.py
says how): the tutorial's gate end to end with no vLLM, every printed output checked. Needs the corpus."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.shared import CORPUS, VOICES
from helpers.tutorial import check_tutorial

pytestmark = pytest.mark.corpus

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial-standin.md"


def test_the_standin_tutorial_prints_what_it_says(tmp_path: Path) -> None:
    for needed in (CORPUS, VOICES / "prompts.txt"):
        if not needed.exists():
            pytest.skip(f"the stand-in tutorial's inputs are not present at {needed}")
    check_tutorial(TUTORIAL, tmp_path)
