"""Are two replicas the same seat? What `/version` and `/v1/models` must agree on before a gate spreads over them.

A gate compares arms cell by cell, and every arm of a cell runs on one replica; but
different cells run on different replicas, so the replicas themselves must be
interchangeable: the same vLLM version, the carrier from the same root, and the
same adapters (ids, roots, parents). Adapters voicegate loads at run time (a
candidate with an ``adapter_path``) are loaded on each replica from the same path,
so they may be missing on one replica; where two replicas both serve one, its
root must still agree.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from voicegate.seat._client import ModelCard


@dataclass(frozen=True)
class SeatState:
    """What one replica said it is, before any generation request."""

    url: str                 # redacted: fit to print and record
    version: str | None
    cards: tuple[ModelCard, ...]

    def card(self, model: str) -> ModelCard | None:
        return next((c for c in self.cards if c.id == model), None)


def difference(a: SeatState, b: SeatState, *, base_model: str, runtime: Collection[str] = ()) -> str | None:
    """How replica `b` differs from replica `a`, in a few words; None when they are the same seat."""
    if a.version != b.version:
        return f"it reports vLLM version {b.version!r}, {a.url} reports {a.version!r}"
    ca, cb = a.card(base_model), b.card(base_model)
    if (ca is None) != (cb is None):
        return (f"it does not serve the carrier {base_model!r} ({a.url} does)" if cb is None
                else f"it serves the carrier {base_model!r}, {a.url} does not")
    ids = sorted({c.id for c in a.cards} | {c.id for c in b.cards})
    for mid in ids:
        x, y = a.card(mid), b.card(mid)
        if x is None or y is None:
            if mid in runtime:
                continue  # loaded at run time from the spec's adapter_path, on every replica that lacks it
            return (f"it does not serve {mid!r} ({a.url} does)" if y is None
                    else f"it serves {mid!r}, which {a.url} does not")
        if x.root != y.root:
            what = "the carrier" if mid == base_model else "adapter"
            return f"it serves {what} {mid!r} from {y.root!r}, {a.url} from {x.root!r}"
        if x.parent != y.parent:
            return f"its {mid!r} is an adapter on {y.parent!r}, on {a.url} on {x.parent!r}"
    return None


def check_identical(states: Sequence[SeatState], *, base_model: str, runtime: Collection[str] = ()) -> str | None:
    """The one line refusing the first replica that differs from the first; None when all are one seat."""
    for other in states[1:]:
        how = difference(states[0], other, base_model=base_model, runtime=runtime)
        if how is not None:
            return (f"replica {other.url} is not the same seat as replica {states[0].url}: {how}; every replica "
                    "must run the same vLLM with the same carrier and adapters (nothing was sent)")
    return None
