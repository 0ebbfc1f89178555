"""The score table (rich): both floors side by side, DISAGREE, copying, damage, ship line, signature.

Rendered from a `GateResult` (DESIGN.md §6) and nothing else, so `score`,
`amend` and the demo print the same thing for the same numbers. Neither floor
is ever shown without the other; the deciding rule is marked with `*`.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from voicegate._clip import clip
from voicegate.scoring._result import CandidateResult, GateResult
from voicegate.spec._rules import RULES


def ratio_text(ratio: float | None) -> str:
    """delta_cb / floor as printed: "2.1x" (a zero floor has no ratio)."""
    from voicegate._figures import ratio_figure

    return "n/a" if ratio is None else ratio_figure(ratio)


def _num(x: float | None, digits: int = 3, signed: bool = False) -> str:
    if x is None:
        return "-"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def _verdict(v: str | None) -> Text:
    if v is None:
        return Text("-")
    good = v in ("PASS", "NOT-COPIED", "NO-DAMAGE")
    return Text(v, style="bold green" if good else "bold red")


def _short(rule_id: str) -> str:
    return rule_id.removesuffix("-max-spread")


def _voice_title(result: GateResult) -> str:
    return f"{result.gate}: voice (deciding rule: {result.rule}, marked *)"


def _rules_caption(*, one_a_line: bool = False) -> str:
    pairs = [f"{_short(r)} = {r}" for r in RULES]
    head = "floor and VOICE under every registered rule:"
    return head + "".join(f"\n  {p}" for p in pairs) if one_a_line else f"{head} {', '.join(pairs)}"


def _rule_label(rid: str, rule: str) -> str:
    return f"{_short(rid)}{' *' if rid == rule else ''}"


def _floor_cell(arm: CandidateResult, rid: str) -> str:
    return f"{_num(arm.floors[rid])} ({ratio_text(arm.ratios[rid])})"


def _disagree(arm: CandidateResult) -> Text | str:
    return Text("DISAGREE", style="bold yellow") if arm.disagree else ""


def voice_table(result: GateResult) -> Table:
    """One row per arm, every rule's floor and VOICE side by side (about 127 columns)."""
    rule = result.rule
    t = Table(title=_voice_title(result), title_justify="left", caption=_rules_caption(), caption_justify="left")
    t.add_column("arm", no_wrap=True)
    t.add_column("d(a,s) by seed", no_wrap=True)
    t.add_column("spread", justify="right", no_wrap=True)
    t.add_column("delta_cb", justify="right", no_wrap=True)
    for rid in RULES:
        t.add_column(f"floor\n{_rule_label(rid, rule)}", justify="right", no_wrap=True)
    t.add_column("ratio", justify="right", no_wrap=True)
    for rid in RULES:
        t.add_column(f"VOICE\n{_rule_label(rid, rule)}", no_wrap=True)
    t.add_column("DISAGREE", no_wrap=True)
    for arm in result.arms:
        per_seed = " ".join(f"{d:.3f}" for d in arm.distances.values())
        name = f"{arm.name} (base)" if arm.is_base else arm.name
        row: list[Any] = [name, per_seed, _num(arm.spread)]
        if not isinstance(arm, CandidateResult):
            row += ["-"] + ["-"] * len(RULES) + ["-"] + ["-"] * len(RULES) + [""]
        else:
            row.append(_num(arm.delta_cb, signed=True))
            row += [_floor_cell(arm, rid) for rid in RULES]
            row.append(ratio_text(arm.ratio))
            row += [_verdict(arm.voice[rid]) for rid in RULES]
            row.append(_disagree(arm))
        t.add_row(*row)
    return t


def seed_table(result: GateResult) -> Table:
    """The narrow layout's first half: each arm's distance by seed and its spread."""
    t = Table(title=f"{result.gate}: distance to the author's held-out text", title_justify="left")
    t.add_column("arm")
    t.add_column("d(a,s) by seed")
    t.add_column("spread", justify="right")
    for arm in result.arms:
        t.add_row(f"{arm.name} (base)" if arm.is_base else arm.name,
                  " ".join(f"{d:.3f}" for d in arm.distances.values()), _num(arm.spread))
    return t


def rule_table(result: GateResult) -> Table:
    """The narrow layout's second half: one line per (candidate, rule), so both floors stay whole."""
    rule = result.rule
    # One rule a line: a narrow caption must not break "global = global-max-spread" in two.
    t = Table(title=_voice_title(result), title_justify="left", caption=_rules_caption(one_a_line=True),
              caption_justify="left")
    t.add_column("arm")
    t.add_column("delta_cb", justify="right")
    t.add_column("rule")
    t.add_column("floor (ratio)", justify="right")
    t.add_column("VOICE")
    t.add_column("DISAGREE")
    for arm in result.candidates:
        for i, rid in enumerate(RULES):
            first = i == 0
            t.add_row(arm.name if first else "", _num(arm.delta_cb, signed=True) if first else "",
                      _rule_label(rid, rule), _floor_cell(arm, rid), _verdict(arm.voice[rid]),
                      _disagree(arm) if first else "", end_section=i == len(RULES) - 1)
    return t


_COPYING_COLUMNS = (("overlap", "right"), ("vs control", "right"), ("longest run", "right"), ("COPYING", "left"))
_DAMAGE_COLUMNS = (("degeneration", "right"), ("truncated", "right"), ("probes passed", "right"), ("DAMAGE", "left"))


def _copying_cells(result: GateResult, arm: Any) -> list[Any]:
    control, overlap = result.control, arm.overlap
    vs = (_num(overlap - control.overlap, 4, signed=True)
          if overlap is not None and control.overlap is not None else "-")
    cand = arm if isinstance(arm, CandidateResult) else None
    return [_num(overlap, 4), "control" if arm.is_base else vs,
            "-" if arm.longest_run is None else str(arm.longest_run),
            _verdict(cand.copying) if cand is not None else ""]


def _damage_cells(arm: Any) -> list[Any]:
    cand = arm if isinstance(arm, CandidateResult) else None
    return [_num(arm.degeneration.rate), _num(arm.degeneration.truncated), _num(arm.probe_pass_rate),
            _verdict(cand.damage) if cand is not None else ""]


def safety_table(result: GateResult, *, copying: bool = True, damage: bool = True) -> Table:
    """Copying and damage per arm; the narrow layout asks for each half on its own."""
    halves = [f"copying (control: {result.control.arm or '-'})"] if copying else []
    if damage:
        halves.append("damage")
    title = " and ".join(halves)
    t = Table(title=title, title_justify="left")
    t.add_column("arm")
    columns = (_COPYING_COLUMNS if copying else ()) + (_DAMAGE_COLUMNS if damage else ())
    for name, just in columns:
        t.add_column(name, justify=just)  # type: ignore[arg-type]
    for arm in result.arms:
        t.add_row(arm.name, *((_copying_cells(result, arm) if copying else []) + (_damage_cells(arm) if damage else [])))
    return t


def ship_line(result: GateResult) -> str:
    arm = result.candidate(result.ships) if result.ships else None
    if arm is not None:
        return (f"ships: {result.ships} (VOICE PASS {ratio_text(arm.ratio)} under {result.rule}, "
                f"{arm.copying}, {arm.damage})")
    return f"ships: none (no candidate passes VOICE, COPYING and DAMAGE under {result.rule})"


def ruler_lines(result: GateResult) -> list[str]:
    """The ruler check of each view, one line each (from the registered corpora alone)."""
    lines = []
    for view, r in result.ruler.items():
        lines.append(f"ruler ({view}, corpora only): held-out vs background AUC {_num(r.heldout_auc)} "
                     f"({r.heldout_chunks} vs {r.background_chunks} chunks), author's training text vs background "
                     f"AUC {_num(r.author_auc)} ({r.training_chunks} chunks); threshold {_num(r.threshold, 2)}: "
                     f"{'OK' if r.ok else 'TOO LOW (a FAIL may mean a ruler that cannot see this author)'}")
    return lines


def pool_line(result: GateResult) -> str | None:
    """Words per (arm, seed) pool: what the distances rest on."""
    parts = [f"{a.name} {'/'.join(f'{w:,}' for w in a.pool_words.values())}" for a in result.arms if a.pool_words]
    if not parts:
        return None
    return "words per (arm, seed) pool (seeds in order; Cosine Delta needs ~10,000): " + "; ".join(parts)


def notes(result: GateResult) -> list[str]:
    lines = []
    pools = pool_line(result)
    if pools:
        lines.append(pools)
    lines += ruler_lines(result)
    for cand in result.candidates:
        boot = cand.bootstrap
        if boot:
            lines.append(f"  {cand.name}: delta_cb {_num(cand.delta_cb, signed=True)}, "
                         f"{boot.level or 0:.0%} prompt-bootstrap [{_num(boot.low, signed=True)}, "
                         f"{_num(boot.high, signed=True)}] (informational, not deciding)")
    from voicegate._figures import once_each

    for arm in result.arms:
        for span, times in once_each(arm.spans[:3]):
            lines.append(f"  {arm.name}: {span.tokens}-token run from {span.source} "
                         f"@{span.offset}: \"{clip(span.text, 120)}\"" + (f" ({times})" if times else ""))
    return lines


def _fits(table: Table, width: int) -> bool:
    # Measured on a console wider than any table: rich clamps a measurement to the console's width.
    return Console(width=10_000).measure(table).maximum <= width


def score_tables(result: GateResult, width: int) -> list[Table]:
    """The wide tables when they fit in `width` columns, else the same cells in narrower tables.

    Rich would elide cells of a table wider than the terminal; a floor or DISAGREE cut short
    is a wrong reading, so a narrow terminal gets more, narrower tables instead.
    """
    wide = voice_table(result)
    tables = [wide] if _fits(wide, width) else [seed_table(result), rule_table(result)]
    # A result always carries copying statistics now; older hand-made ones had none to show.
    if any(a.overlap is not None for a in result.arms):
        both = safety_table(result)
        tables += ([both] if _fits(both, width)
                   else [safety_table(result, damage=False), safety_table(result, copying=False)])
    return tables


def renderables(result: GateResult, width: int = 130) -> Group:
    parts: list[Any] = list(score_tables(result, width))
    parts.append(Text(ship_line(result), style="bold"))
    if len(result.replicas) > 1:
        parts.append(Text("replicas (every arm of a cell on one): " + "; ".join(r.line() for r in result.replicas)))
    if result.integrity is not None:
        parts.append(Text(f"seat integrity: {result.integrity.line()}",
                          style="bold red" if result.integrity.failed else ""))
    parts += [Text(line) for line in notes(result)]
    for w in result.warnings:
        parts.append(Text(f"warning: {w}", style="yellow"))
    return Group(*parts)


def print_score(result: GateResult, console: Console | None = None) -> None:
    console = console or make_console()
    console.print(renderables(result, console.width))
    if result.signature_text:
        # One unbroken line, however wide: it is copied, not read.
        console.print(f"signature: {result.signature_text}", style="dim", soft_wrap=True, markup=False)


def make_console(file: Any = None) -> Console:
    """The terminal's width (`COLUMNS` when set, 80 when not a terminal); the tables fit themselves to it."""
    return Console(file=file, highlight=False, soft_wrap=False)
