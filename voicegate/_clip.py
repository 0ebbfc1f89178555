"""Shortening text for a line a person reads: cut at a word boundary and say so with an ellipsis."""

from __future__ import annotations

ELLIPSIS = "…"


def clip(text: str, limit: int, *, ellipsis: str = ELLIPSIS) -> str:
    """`text` if it fits in `limit` characters, else its longest run of whole words that fits with `ellipsis`.

    A single word longer than the room is cut inside it: the line must still fit.
    """
    if len(text) <= limit:
        return text
    room = max(limit - len(ellipsis), 0)
    head = text[:room]
    # Cut at the last space only when the next character does not carry on the same word.
    if text[room:room + 1] != " ":
        space = head.rfind(" ")
        if space > 0:
            head = head[:space]
    return head.rstrip(" ,;:—–-→") + ellipsis
