"""How a VOICE ratio (delta_cb / floor) is written, everywhere it is printed.

One decimal is enough to read a ratio (0.8x, 2.1x), except next to the threshold: a ratio
that rounds to 1.0x reads as a tie, while PASS means delta_cb *exceeds* the floor. There
the figure gets the decimals it takes to show on which side of 1 it lies (1.03x, 0.996x);
only an exact 1 is written 1.0x.
"""

from __future__ import annotations

MAX_DIGITS = 6


def ratio_figure(ratio: float) -> str:
    """`ratio` as a number with "x", e.g. "2.1x", "1.04x"; the caller handles None and infinity."""
    digits = 1
    text = f"{ratio:.{digits}f}"
    while text == f"{1:.{digits}f}" and ratio != 1 and digits < MAX_DIGITS:
        digits += 1
        text = f"{ratio:.{digits}f}"
    return f"{text}x"
