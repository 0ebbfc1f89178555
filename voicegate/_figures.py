"""How a VOICE ratio (delta_cb / floor) and a repeated copied span are written, wherever printed.

One decimal is enough to read a ratio (0.8x, 2.1x), except next to the threshold: a ratio
that rounds to 1.0x reads as a tie, while PASS means delta_cb *exceeds* the floor. There
the figure gets the decimals it takes to show on which side of 1 it lies (1.03x, 0.996x);
only an exact 1 is written 1.0x. Next to 0 likewise (0.03x, -0.02x, never "-0.0x"); an exact 0 is 0.0x.

A missing ratio (a zero floor has none) is written "n/a" everywhere: the terminal table, the
record, the README, the compose comment, the amend summary and the report page (its `ratio`
filter) all print it through `ratio_text`. Sizes on disk are written in decimal units by `gb`
(the seat's memory check, the carrier bound).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, TypeVar

S = TypeVar("S")

MAX_DIGITS = 6


def ratio_figure(ratio: float) -> str:
    """`ratio` as a number with "x", e.g. "2.1x", "1.04x"; the caller handles None and infinity."""
    digits = 1
    text = f"{ratio:.{digits}f}"
    # Next to 1 a rounded figure reads as a tie; next to 0 as no gain at all, and "-0.0x" as a signed zero.
    while ratio not in (0, 1) and text in (f"{1:.{digits}f}", f"{0:.{digits}f}", f"-{0:.{digits}f}") \
            and digits < MAX_DIGITS:
        digits += 1
        text = f"{ratio:.{digits}f}"
    return "0.0x" if float(text) == 0 else f"{text}x"


def ratio_text(ratio: float | None) -> str:
    """delta_cb / floor as printed: "2.1x"; "n/a" when there is no ratio (a zero floor), "inf" for infinity."""
    if ratio is None:
        return "n/a"
    if math.isinf(ratio):
        return "inf"
    return ratio_figure(float(ratio))


def once_each(spans: Iterable[S]) -> list[tuple[S, str]]:
    """Identical copied spans once each, in first-seen order, with how often they came.

    One adapter reciting the same passage under every seed is one finding, not three lines:
    spans with the same text, length, source and offset are merged, and the second element
    says how many there were ("× 3 seeds" when each came under its own seed, "× 2" otherwise;
    "" for a span seen once).
    """
    groups: dict[tuple[Any, ...], list[S]] = {}
    for span in spans:
        key = (" ".join(str(getattr(span, "text", "")).split()), getattr(span, "tokens", None),
               getattr(span, "source", None), getattr(span, "offset", None))
        groups.setdefault(key, []).append(span)
    out = []
    for members in groups.values():
        n = len(members)
        seeds = {getattr(m, "seed", None) for m in members}
        label = "" if n == 1 else (f"× {n} seeds" if None not in seeds and len(seeds) == n else f"× {n}")
        out.append((members[0], label))
    return out


def gb(n: float) -> str:
    """Decimal units, as the seat's compose comment writes them (7.6 GB, 264 MB)."""
    if n < 0:
        return "-" + gb(-n)
    if n >= 1e9:
        return f"{n / 1e9:.1f} GB"
    if n >= 1e6:
        return f"{n / 1e6:.0f} MB"
    if n >= 1e3:
        return f"{n / 1e3:.0f} KB"
    return f"{int(n)} B"
