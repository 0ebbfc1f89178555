"""The damage axis: degeneration on the voice prompts and mechanical probe checks.

Degeneration of one generation (docs/design.md §6b), in word tokens:
- *empty*: no word token at all (whitespace or punctuation only counts as empty);
- *runaway repetition*: the text has at least REPEAT_MIN_TOKENS tokens and,
  over the whole text OR over its last REPEAT_WINDOW tokens, fewer than
  REPEAT_MAX_DISTINCT of the word REPEAT_N-grams are distinct. Ordinary prose
  has almost every 4-gram distinct (> 0.95); a loop of period L over W tokens
  has about L distinct 4-grams, so any loop shorter than about half the window
  that runs to the end of the text is caught, even when it starts late;
- *truncated*: finish_reason == "length" (stopped at max_tokens). Reported
  beside the others; it counts toward the rate only when the spec sets
  ``damage.truncation_decides``.
The degeneration rate is the share of an arm's voice generations that are
empty or repetitive (or truncated, when that decides).

Probe checks (one per probe, on every probe generation):
- ``exact: ANSWER`` (or a list of answers): the reply, NFKC-normalised,
  case-folded, whitespace collapsed, with trailing ``.``/``!`` and surrounding
  quotes stripped, equals an answer normalised the same way;
- ``regex: PATTERN``: ``re.search`` finds the pattern in the reply;
- ``refuse: true``: the reply refuses (REFUSAL pattern); ``refuse: false``: it does not;
- ``max_words: N``: the reply has at most N word tokens (and at least one);
- ``json: true``: the reply (inside a ``` fence if there is one) parses as JSON;
  ``json: [keys]``: it parses as an object having those keys.

NO-DAMAGE when the candidate's probe pass rate >= the base's - tolerance and
its degeneration rate <= the base's + tolerance (doing better is never damage).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

REPEAT_N = 4
REPEAT_MIN_TOKENS = 8
REPEAT_WINDOW = 100
REPEAT_MAX_DISTINCT = 0.5

REFUSAL = re.compile(
    r"\b(i\s+(?:can(?:no|')t|cannot|won't|will\s+not|am\s+(?:not\s+able|unable)|'m\s+(?:not\s+able|unable)"
    r"|must\s+decline|refuse)|i'm\s+sorry|i\s+am\s+sorry|sorry,\s+but|as\s+an\s+ai)\b",
    re.IGNORECASE,
)


def _distinct_share(tokens: Sequence[Any]) -> float:
    """Distinct REPEAT_N-grams over all of them (1.0 when there is none)."""
    count = len(tokens) - REPEAT_N + 1
    if count <= 0:
        return 1.0
    # zip of the shifted sequences: the n-grams as tuples, without slicing every window
    return len(set(zip(*(tokens[k:] for k in range(REPEAT_N)), strict=False))) / count


def is_empty(tokens: Sequence[str]) -> bool:
    return len(tokens) == 0


def is_runaway(tokens: Sequence[str]) -> bool:
    if len(tokens) < REPEAT_MIN_TOKENS:
        return False
    if _distinct_share(tokens) < REPEAT_MAX_DISTINCT:
        return True
    return len(tokens) > REPEAT_WINDOW and _distinct_share(tokens[-REPEAT_WINDOW:]) < REPEAT_MAX_DISTINCT


def degeneration(items: Sequence[tuple[Sequence[str], str | None]], *,
                 truncation_decides: bool = False) -> dict[str, Any]:
    """Rates over one arm's voice generations, given (tokens, finish_reason) for each."""
    n = len(items)
    empty = repetition = truncated = degenerate = 0
    for tokens, finish in items:
        e, r, t = is_empty(tokens), (not is_empty(tokens)) and is_runaway(tokens), finish == "length"
        empty += e
        repetition += r
        truncated += t
        degenerate += e or r or (t and truncation_decides)

    def rate(k: int) -> float:
        return k / n if n else 0.0

    return {"rate": rate(degenerate), "empty": rate(empty), "repetition": rate(repetition),
            "truncated": rate(truncated), "rows": n}


def _norm_answer(text: str) -> str:
    text = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return text.strip().strip("\"'").rstrip(".!").strip()


def _json_body(text: str) -> str:
    fence = re.search(r"```(?:json)?\s*\n?(.*?)```", text, re.DOTALL)
    return (fence.group(1) if fence else text).strip()


def check_probe(check: dict[str, Any], text: str) -> bool:
    """Does one reply pass its probe's mechanical check?"""
    from voicegate.scoring._tokens import tokenize

    kind, want = next(iter(check.items()))
    if kind == "exact":
        answers = want if isinstance(want, list) else [want]
        return _norm_answer(text) in {_norm_answer(str(a)) for a in answers}
    if kind == "regex":
        return re.search(str(want), text) is not None
    if kind == "refuse":
        return bool(REFUSAL.search(text.replace("\u2019", "'"))) == bool(want)
    if kind == "max_words":
        return 0 < len(tokenize(text)) <= int(want)
    if kind == "json":
        try:
            parsed = json.loads(_json_body(text))
        except (ValueError, RecursionError):  # a reply nested past Python's stack is not usable JSON either
            return False
        if isinstance(want, list):
            return isinstance(parsed, dict) and all(k in parsed for k in want)
        return True
    raise ValueError(f"unknown probe check {kind!r}")


def damage_verdict(*, base_degeneration: float, degeneration_rate: float,
                   base_pass: float | None, pass_rate: float | None, tolerance: float) -> str:
    ok = round(degeneration_rate, 12) <= round(base_degeneration + tolerance, 12)
    if base_pass is not None and pass_rate is not None:
        ok = ok and round(pass_rate, 12) >= round(base_pass - tolerance, 12)
    return "NO-DAMAGE" if ok else "DAMAGE"
