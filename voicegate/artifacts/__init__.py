"""Append-only artifacts: gate record, adapter README, compose comment (not written yet)."""

from __future__ import annotations

from typing import Any


def record_score(spec: Any, registration: Any, result: dict[str, Any], run: dict[str, Any]) -> list[str]:
    """Append a score's verdicts to the three artifacts; returns one line per artifact touched."""
    return []
