"""A harness check: did the seat really apply each candidate's adapter?

A seat that drops the adapter for some requests answers them as the carrier
would, and under the same seed that is the carrier's text to the byte. That was
seen on a real vLLM CPU seat, with base and adapters batched together, and it
makes delta_cb silently smaller. Two different models giving the same
long answer to the same prompt under the same seed is otherwise vanishingly
unlikely, so every such pair is counted and reported (not deciding: the floors
are computed as registered; a reviewer must look).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

MIN_TOKENS = 20
"""Short answers (probes, one-liners) may legitimately coincide."""


def identical_to_base(rows: Iterable[Mapping[str, Any]], base: str, candidate: str) -> int:
    """How many of candidate's voice generations equal base's for the same (seed, prompt)."""
    base_text: dict[tuple[int, str], str] = {}
    mine: list[tuple[tuple[int, str], str]] = []
    for row in rows:
        if row.get("kind", "voice") != "voice":
            continue
        key = (int(row["seed"]), str(row["prompt_id"]))
        if row["arm"] == base:
            base_text[key] = row["text"]
        elif row["arm"] == candidate:
            mine.append((key, row["text"]))
    return sum(1 for key, text in mine
               if len(text.split()) >= MIN_TOKENS and base_text.get(key) == text)
