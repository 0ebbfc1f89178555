"""This machine's stores that are evidence: every line or entry sealed by the sha256 of its own content.

The identity store (``<data dir>/identity.jsonl``), the carrier answer cache and the weights-hash memo
decide whether a seat holds; the vLLM registry cache decides what `seat check` says of a venv. A byte
changed on this disk must never read as the seat's doing, nor decide for it: each line or entry carries
``check``, the sha256 of its canonical JSON without that key, and one that does not match is local
damage, said as such. A seal is no signature (whoever can write the file can seal a line): it tells
damage from evidence, not a forger from this machine.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from voicegate._errors import VoicegateError
from voicegate._hashing import sha256_json

CHECK = "check"
CACHE_ENV = "VOICEGATE_CACHE_DIR"
Seal = Literal["intact", "damaged", "unsealed"]


class LocalDamage(VoicegateError):
    """A store on this machine is damaged: bad input (exit 2), never a fault of the seat."""


def seal(entry: Mapping[str, Any]) -> dict[str, Any]:
    """`entry` with its seal (any earlier one replaced)."""
    body = {k: v for k, v in entry.items() if k != CHECK}
    return {**body, CHECK: sha256_json(body)}


def seal_of(entry: Any) -> Seal:
    """intact (its seal matches), damaged (it does not, or it is no object), or unsealed (written before seals)."""
    if not isinstance(entry, dict):
        return "damaged"
    if CHECK not in entry:
        return "unsealed"
    body = {k: v for k, v in entry.items() if k != CHECK}
    try:
        return "intact" if entry[CHECK] == sha256_json(body) else "damaged"
    except (TypeError, ValueError):
        return "damaged"


def cache_dir() -> Path:
    """This machine's cache of derived data (carrier answers, the hash memo, the vLLM registry answer)."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "voicegate")
