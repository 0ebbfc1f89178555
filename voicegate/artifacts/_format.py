"""How verdict numbers read in every artifact: one formatter, one jinja environment per kind of file.

The same phrases ("VOICE FAIL (global-max-spread: +0.193 vs floor 0.251, 0.8x;
pairwise-max-spread would PASS 2.1x: DISAGREE)") appear in the record, the
README and the compose comment, so they are built here once. Both floors are
always printed beside each other (docs/design.md §3): neither can be quoted alone.

**Nothing from outside reaches an artifact raw.** Every value a template prints
(`{{ ... }}`) passes through the environment's `finalize`, so no template can
forget it: in the markdown files (`*.md.j2`) a value becomes one line of inert
text (`md_text`: no line break, so no heading, list, marker or block of its own;
HTML and markdown punctuation escaped, so it renders as exactly the characters
it had); a value meant for a code span goes through the `code` filter, which
makes the span itself (or falls back to inert text when the value could end
it). In the compose comment (`compose_*.j2`) a value becomes one line
(`one_line`), which `_chain.comment_safe` then keeps a YAML comment. Markers are
written only by `_chain`, which also makes any marker-looking line of an entry
inert.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import unicodedata
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from voicegate._figures import ratio_text
from voicegate.scoring import CandidateResult, GateResult, Specific, Specificity
from voicegate.spec import rule_family_note, rule_signature

if TYPE_CHECKING:
    import jinja2  # imported when a template is first rendered: a dry run or a read needs none


def stamp(when: _dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


_NOT_PRINTED = ("Cc", "Cf", "Zl", "Zp", "Cs", "Cn")
_SPACES = re.compile(r"\s+")


def flat(text: str) -> str:
    """`text` on one line: every control, format or separator character (line breaks included) and every
    run of white space becomes one space. Edges are kept, so a template's ", " stays ", "."""
    return _SPACES.sub(" ", "".join(" " if unicodedata.category(c) in _NOT_PRINTED else c for c in text))


def one_line(text: str) -> str:
    """A person's text (a --reason) as one trimmed line: no line break can forge a marker, start a
    heading or end a comment."""
    return flat(text).strip()


class Safe(str):
    """Text already made safe for the place it lands (a code span built by `code`): `finalize` keeps it."""


# What markdown (CommonMark + GitHub's tables and strikethrough) would read as structure inside a
# line: backslash escapes, code spans, emphasis, links and images, headings, table cells, raw HTML,
# entity references and "~~" strikethrough. `<`, `>` and `&` become entities (so no raw HTML is in
# the file at all); the rest get a backslash. Everything renders as the characters it was.
_MD_ACTIVE = re.compile(r"[\\`*_\[\]#|<>]|&(?=#?[0-9A-Za-z]+;)|~(?=~)|(?<=~)~")
_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def md_text(value: Any) -> str:
    """Any value as one line of inert markdown text."""
    return _MD_ACTIVE.sub(lambda m: _ENTITIES.get(m.group(), "\\" + m.group()), flat(str(value)))


_ENDS_CODE_SPAN = re.compile(r"[`<>]")


def code(value: Any) -> Safe:
    """A value as a markdown code span (`value`); a value that could end the span, or carries HTML,
    is inert text instead (a code span shows backslashes and entities literally)."""
    text = flat(str(value))
    if not text.strip() or text != text.strip() or _ENDS_CODE_SPAN.search(text):
        return Safe(md_text(text))
    return Safe(f"`{text}`")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _md_finalize(value: Any) -> Any:
    return value if isinstance(value, Safe) or _is_number(value) else md_text(value)


def _line_finalize(value: Any) -> Any:
    return value if _is_number(value) else flat(str(value))


def num(x: Any, digits: int = 3) -> str:
    if x is None:
        return "—"
    return f"{x:.{digits}f}"


def signed(x: Any) -> str:
    return "—" if x is None else f"{x:+.3f}"


def rule_sig(rule_id: str) -> str:
    return rule_signature(rule_id)


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
    parts += [detectable_phrase(arm, rid) for rid in arm.detectable if arm.detectable[rid] is not None]
    return f"VOICE {verdict} ({'; '.join(parts)})"


def detectable_phrase(arm: CandidateResult, rule_id: str) -> str:
    """'detectable 0.045 at 80% power under welch-t': what a FAIL could have seen (a rule with a power model)."""
    return (f"detectable {num(arm.detectable.get(rule_id))} at 80% power under {rule_id}"
            + (": under what this design can see (more seeds are a new registration, recorded as a follow-up "
               "design)" if arm.unseen(rule_id) else ""))


# A score entry with an author-specificity section is format 2 (it says so in that section); an entry
# without one is the format-1 entry it always was, byte for byte.
SPECIFICITY_FORMAT = 2


def specificity_phrase(arm: CandidateResult, deciding: str) -> str | None:
    """'NOT-SPECIFIC, deciding (pairwise-max-spread: margin -0.141 over Anne Bronte vs floor 0.040, -3.6x;
    global-max-spread: NOT-SPECIFIC -0.9x (floor 0.162); nearest impostor Anne Bronte)'; None when unchecked."""
    axis = arm.specificity
    if axis is None:
        return None
    verdict = axis.under(deciding)

    def against(rid: str) -> str:
        return f"{_margin_vs_floor(axis, rid)}, {ratio_text(axis.ratios.get(rid))}"

    parts = [axis.weak_said()] if verdict == Specific.RULER_WEAK and axis.weak else []
    parts += [f"{deciding}: {against(deciding)}"
              + (": within noise (more seeds or longer pools are a new registration, recorded as a follow-up "
                "design)" if verdict == "INCONCLUSIVE" else "")]
    for other in sorted(set(axis.verdict) - {deciding}):
        v = axis.under(other)
        tail = ": DISAGREE" if v != verdict else ""
        parts.append(f"{other}{' would be' if v != verdict else ':'} {v} ({against(other)}){tail}")
    parts.append(_nearest(axis, deciding))
    how = "deciding" if axis.decides else "reported"
    return f"{verdict}, {how} ({'; '.join(parts)})"


def _margin_vs_floor(axis: Specificity, rule_id: str) -> str:
    """'margin +0.026 over George Eliot vs floor 0.113': the impostor that decides under the rule."""
    who = axis.binding.get(rule_id, "?")
    return f"margin {signed(axis.margins.get(who))} over {who} vs floor {num(axis.floors.get(rule_id))}"


def _nearest(axis: Specificity, rule_id: str) -> str:
    """"nearer X" only where the voice is shown nearer X than the gate author; else the impostor it moved
    toward most, with its margin, which says nothing about which author it sounds like."""
    nearer = axis.nearer(rule_id)
    if nearer:
        return f"nearer {', '.join(nearer)} ({signed(axis.margins.get(nearer[0]))}{_family(axis, rule_id)})"
    return f"nearest impostor {axis.nearest} ({signed(axis.margin)})"


def _family(axis: Specificity, rule_id: str) -> str:
    """'; each of the 4 impostors at α 0.01/4 ...': the family a "nearer X" claim was corrected over, where the
    rule corrects it (nothing for the rules that do not, so their lines read as they always did)."""
    note = rule_family_note(rule_id, len(axis.margins))
    return f"; {note}" if note else ""


def axes_line(arm: CandidateResult, deciding: str) -> str:
    """VOICE, COPYING and DAMAGE on one line (the compose comment gives specificity a line of its own)."""
    return f"{voice_phrase(arm, deciding)} · {arm.copying} · {arm.damage}"


def verdict_line(arm: CandidateResult, deciding: str) -> str:
    """Every verdict of a candidate on one line, specificity last where it was checked."""
    specific = specificity_phrase(arm, deciding)
    return axes_line(arm, deciding) if specific is None else f"{axes_line(arm, deciding)} · {specific}"


def specificity_summary(result: GateResult) -> str | None:
    """One line for the compose comment: each candidate's specificity under the deciding rule; None when unchecked."""
    imp = result.impostors
    if imp is None:
        return None
    each = ", ".join(f"{a.name} {a.specificity.under(result.rule)}{_why(a.specificity, result.rule)}"
                     for a in result.candidates if a.specificity is not None)
    return f"specificity ({imp.mode}; impostors {', '.join(imp.authors)}): {each}"


def _why(axis: Specificity, rule_id: str) -> str:
    """What a compose reader needs beside a verdict that is not SPECIFIC: who it is nearer, or why nobody can tell."""
    verdict = axis.under(rule_id)
    if verdict == "SPECIFIC":
        return ""
    if verdict == Specific.RULER_WEAK and axis.weak:
        return f" ({axis.weak_said()})"
    nearer = axis.nearer(rule_id)
    if nearer:
        return f" (nearer {', '.join(nearer)}{_family(axis, rule_id)})"
    return f" ({_margin_vs_floor(axis, rule_id)}: within noise; more seeds are a new registration)"


def floors_shown(count: int) -> str:
    """How many rules' floors an entry shows, as words that stay true: "both floors", "all 3 floors"."""
    return "the floor" if count < 2 else "both floors" if count == 2 else f"all {count} floors"


def others_shown(count: int) -> str:
    """The rules shown beside the deciding one, `count` rules in all."""
    return "the other rule is" if count == 2 else "the other rules are"


def candidates(result: GateResult, featured: str | None = None) -> list[CandidateResult]:
    """Candidate arms, the featured (shipped or recommended) one first."""
    return sorted(result.candidates, key=lambda a: a.name != featured)


@lru_cache(maxsize=2)
def env(markdown: bool = True) -> jinja2.Environment:
    """The environment for markdown templates (values escaped by `md_text`) or for compose comments."""
    import jinja2

    e = jinja2.Environment(
        loader=jinja2.PackageLoader("voicegate", "templates"),
        undefined=jinja2.StrictUndefined,  # a missing field is a bug, never a blank in a record
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        finalize=_md_finalize if markdown else _line_finalize,
    )
    e.filters.update(num=num, signed=signed, ratio=ratio_text, rule_sig=rule_sig, code=code)
    e.globals.update(voice_phrase=voice_phrase, verdict_line=verdict_line, axes_line=axes_line, ratio_of=ratio_of,
                     specificity_summary=specificity_summary, specificity_format=SPECIFICITY_FORMAT)
    return e


def render(name: str, **ctx: Any) -> str:
    """Template `name` rendered; `*.md.j2` escapes every value for markdown, the others keep each on one line."""
    return env(markdown=name.endswith(".md.j2")).get_template(name).render(**ctx)
