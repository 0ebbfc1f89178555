"""Judging the base's greedy answers against the carrier's own: pure, so `score` re-judges them.

`generate._carrier_files` computes the carrier's answers from its files and asks the seat; the pairs are
kept in canaries.jsonl (phase ``carrier``) and judged here, by generate and again by score.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

AGREES = 0.5          # a probe agrees when the seat's answer keeps at least the carrier's first half


def agreement(seat: str, local: str) -> float:
    """The share of the local answer the seat's answer keeps before they part (1.0: the same text)."""
    a, b = seat.strip(), local.strip()
    if not b:
        return 1.0 if not a else 0.0
    return len(os.path.commonprefix([a, b])) / len(b)


@dataclass(frozen=True)
class CarrierCheck:
    """The base's greedy answers against the carrier's files: holds, failed, unclear or not checked (why)."""

    status: str                       # holds | failed | unclear | not-checked
    why: str                          # in words, for the record
    agreements: tuple[float, ...] = ()
    of: str = "the carrier's"         # whose answers the seat's are held to

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "why": self.why, "agreements": [round(a, 3) for a in self.agreements]}

    def problem(self, arm: str) -> str | None:
        """What fails the session, if this check failed (one wording for generate and score)."""
        return f"arm {arm}'s answers are not {self.of}: {self.why}" if self.status == "failed" else None


def judge_carrier(seat: Sequence[str], local: Sequence[str], weights_sha256: str, max_tokens: int,
                  adapter_sha256: str | None = None) -> CarrierCheck:
    """Holds when all probes but one agree (all, under three); failed when at most a fifth do (of three or more:
    one of six); unclear between (not decided). With `adapter_sha256`, the local answers are the carrier's with
    that adapter merged in, and the seat's are an adapter arm's."""
    shares = tuple(agreement(s, x) for s, x in zip(seat, local, strict=True))
    n, agree = len(shares), sum(s >= AGREES for s in shares)
    # No path: the bytes are the identity, and a record read on another machine names the same ones.
    if adapter_sha256 is None:
        told = (f"{agree}/{n} greedy answers of {max_tokens} tokens reproduced from the carrier's files "
                f"(weights sha256 {weights_sha256[:12]}…, float32)")
        wrong, of = "the seat serves other weights as the base", "the carrier's"
    else:
        told = (f"{agree}/{n} greedy answers of {max_tokens} tokens reproduced from its own files (the carrier's "
                f"weights sha256 {weights_sha256[:12]}… with the adapter's {adapter_sha256[:12]}… merged, float32)")
        wrong, of = "the seat serves other weights under the adapter's name", "its own files'"
    if n and agree >= n - (1 if n >= 3 else 0):
        return CarrierCheck("holds", told, shares, of)
    if n >= 3 and agree <= n // 5:
        return CarrierCheck("failed", f"{told}: {wrong}", shares, of)
    return CarrierCheck("unclear", told + ": not decided (another dtype can part answers at a near-tie)", shares, of)


def carrier_judged(rows: Sequence[Mapping[str, Any]]) -> CarrierCheck | None:
    """One arm's kept probes judged again (None: there were none)."""
    if not rows:
        return None
    seat = [str(r.get("text", "")) for r in rows]
    local = [str(r.get("carrier_text", "")) for r in rows]
    sampling = rows[0].get("sampling")
    tokens = sampling.get("max_tokens") if isinstance(sampling, Mapping) else None
    adapter = rows[0].get("adapter_sha256")
    return judge_carrier(seat, local, str(rows[0].get("weights_sha256", "")), int(tokens or 0),
                         str(adapter) if adapter else None)
