"""docs/tutorial.md, executed against a real local vLLM seat, prints what it says (tests/helpers/tutorial.py says how).

About 4-5 minutes on 2 shared cores: the vLLM start (≈ 45 s) and 72 generations of ≤ 64 tokens.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.seat_up import skip_reason
from helpers.tutorial import check_tutorial

pytestmark = [pytest.mark.vllm, pytest.mark.corpus]

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial.md"


def test_the_tutorial_prints_what_it_says(tmp_path: Path) -> None:
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    check_tutorial(TUTORIAL, tmp_path)
