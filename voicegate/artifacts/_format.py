"""How verdict numbers read in every artifact: one formatter, one jinja environment.

The same phrases ("VOICE FAIL (global-max-spread: +0.193 vs floor 0.251, 0.8x;
pairwise-max-spread would PASS 2.1x: DISAGREE)") appear in the record, the
README and the compose comment, so they are built here once. Both floors are
always printed beside each other (DESIGN.md §3): neither can be quoted alone.
"""

from __future__ import annotations

import datetime as _dt
import math
from functools import lru_cache
from typing import Any

import jinja2

from voicegate.scoring._result import CandidateResult, GateResult
from voicegate.spec._rules import RULES


def stamp(when: _dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def one_line(text: str) -> str:
    """A person's text (a --reason) as one line: no line break can forge a marker or end a comment."""
    import unicodedata

    cleaned = "".join(" " if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Cn") else c for c in text)
    return " ".join(cleaned.split())


def num(x: Any, digits: int = 3) -> str:
    if x is None:
        return "—"
    return f"{x:.{digits}f}"


def signed(x: Any) -> str:
    return "—" if x is None else f"{x:+.3f}"


def ratio_text(r: Any) -> str:
    if r is None:
        return "—"
    if isinstance(r, float) and math.isinf(r):
        return "inf"
    return f"{r:.1f}x"


def rule_sig(rule_id: str) -> str:
    rule = RULES.get(rule_id)
    return f"{rule_id}@{rule.version}" if rule else rule_id


def ratio_of(arm: CandidateResult, rule_id: str) -> float | None:
    """The result's own ratio under `rule_id`; else delta_cb / floor, a zero floor being infinitely clear."""
    if rule_id in arm.ratios:
        return arm.ratios[rule_id]
    floor = arm.floors.get(rule_id)
    if floor is None or arm.delta_cb is None:
        return None
    return math.inf if floor == 0 else arm.delta_cb / floor


def voice_phrase(arm: CandidateResult, deciding: str) -> str:
    """'VOICE FAIL (rule: +0.193 vs floor 0.251, 0.8x; other would PASS 2.1x: DISAGREE)'."""
    verdict = arm.voice[deciding]
    parts = [(f"{deciding}: {signed(arm.delta_cb)} vs floor {num(arm.floors[deciding])}, "
             f"{ratio_text(ratio_of(arm, deciding))}")]
    for other in sorted(set(arm.floors) - {deciding}):
        v = arm.voice[other]
        if v != verdict:
            parts.append(f"{other} would {v} {ratio_text(ratio_of(arm, other))} "
                         f"(floor {num(arm.floors[other])}): DISAGREE")
        else:
            parts.append(f"{other}: {v} {ratio_text(ratio_of(arm, other))} (floor {num(arm.floors[other])})")
    return f"VOICE {verdict} ({'; '.join(parts)})"


def verdict_line(arm: CandidateResult, deciding: str) -> str:
    return f"{voice_phrase(arm, deciding)} · {arm.copying} · {arm.damage}"


def candidates(result: GateResult, featured: str | None = None) -> list[CandidateResult]:
    """Candidate arms, the featured (shipped or recommended) one first."""
    return sorted(result.candidates, key=lambda a: a.name != featured)


@lru_cache(maxsize=1)
def env() -> jinja2.Environment:
    e = jinja2.Environment(
        loader=jinja2.PackageLoader("voicegate", "templates"),
        undefined=jinja2.StrictUndefined,  # a missing field is a bug, never a blank in a record
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    e.filters.update(num=num, signed=signed, ratio=ratio_text, rule_sig=rule_sig)
    e.globals.update(voice_phrase=voice_phrase, verdict_line=verdict_line, ratio_of=ratio_of)
    return e


def render(name: str, **ctx: Any) -> str:
    return env().get_template(name).render(**ctx)
