"""The score table (rich): every floor side by side, DISAGREE, copying, damage, ship line, signature.

Rendered from a `GateResult` (docs/design.md §6) and nothing else, so `score`,
`amend` and the demo print the same thing for the same numbers. No floor is
ever shown without the others the result carries (its own rules, never the
code's list); the deciding rule is marked with `*`.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from voicegate._clip import clip
from voicegate._figures import ratio_text
from voicegate.scoring import CandidateResult, GateResult, Specificity, detectable_rules


def _num(x: float | None, digits: int = 3, signed: bool = False) -> str:
    if x is None:
        return "-"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def _verdict(v: str | None) -> Text:
    if v is None:
        return Text("-")
    good = v in ("PASS", "NOT-COPIED", "NO-DAMAGE", "SPECIFIC")
    return Text(v, style="bold green" if good else "bold yellow" if v == "INCONCLUSIVE" else "bold red")


def _short(rule_id: str) -> str:
    return rule_id.removesuffix("-max-spread").removeprefix("welch-t-")


def _voice_title(result: GateResult) -> str:
    return f"{result.gate}: voice (deciding rule: {result.rule}, marked *)"


def _rules_caption(result: GateResult, *, one_a_line: bool = False) -> str:
    pairs = [f"{_short(r)} = {r}" for r in result.rules if _short(r) != r]
    head = "floor and VOICE under every rule of this gate" + (":" if pairs else "")
    text = head + "".join(f"\n  {p}" for p in pairs) if one_a_line else f"{head} {', '.join(pairs)}".rstrip()
    if detectable_rules(result.candidates, result.rules):
        text += ("\n" if one_a_line else "; ") + "detectable: the delta_cb this design sees with 80% power"
    return text


def _rule_label(rid: str, rule: str) -> str:
    return f"{_short(rid)}{' *' if rid == rule else ''}"


def _floor_cell(arm: CandidateResult, rid: str) -> str:
    if rid not in arm.floors:
        return "-"
    return f"{_num(arm.floors[rid])} ({ratio_text(arm.ratio_under(rid))})"


def _disagree(arm: CandidateResult) -> Text | str:
    return Text("DISAGREE", style="bold yellow") if arm.disagree else ""


def voice_table(result: GateResult) -> Table:
    """One row per arm, every rule's floor and VOICE side by side (about 127 columns)."""
    rule, rules, detect = result.rule, result.rules, detectable_rules(result.candidates, result.rules)
    t = Table(title=_voice_title(result), title_justify="left", caption=_rules_caption(result), caption_justify="left")
    t.add_column("arm", no_wrap=True)
    t.add_column("d(a,s) by seed", no_wrap=True)
    t.add_column("spread", justify="right", no_wrap=True)
    t.add_column("delta_cb", justify="right", no_wrap=True)
    for rid in rules:
        t.add_column(f"floor\n{_rule_label(rid, rule)}", justify="right", no_wrap=True)
    t.add_column("ratio", justify="right", no_wrap=True)
    for rid in rules:
        t.add_column(f"VOICE\n{_rule_label(rid, rule)}", no_wrap=True)
    for rid in detect:
        t.add_column(f"detectable\n{_short(rid)}", justify="right", no_wrap=True)
    t.add_column("DISAGREE", no_wrap=True)
    for arm in result.arms:
        per_seed = " ".join(f"{d:.3f}" for d in arm.distances.values())
        name = f"{arm.name} (base)" if arm.is_base else arm.name
        row: list[Any] = [name, per_seed, _num(arm.spread)]
        if not isinstance(arm, CandidateResult):
            row += ["-"] + ["-"] * len(rules) + ["-"] + ["-"] * len(rules) + ["-"] * len(detect) + [""]
        else:
            row.append(_num(arm.delta_cb, signed=True))
            row += [_floor_cell(arm, rid) for rid in rules]
            row.append(ratio_text(arm.ratio))
            row += [_verdict(arm.voice_under(rid)) for rid in rules]
            row += [_num(arm.detectable_under(rid)) for rid in detect]
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
    t = Table(title=_voice_title(result), title_justify="left", caption=_rules_caption(result, one_a_line=True),
              caption_justify="left")
    t.add_column("arm")
    t.add_column("delta_cb", justify="right")
    t.add_column("rule")
    t.add_column("floor (ratio)", justify="right")
    t.add_column("VOICE")
    t.add_column("DISAGREE")
    rules = result.rules
    for arm in result.candidates:
        lines: list[tuple[str, str, Text | str]] = []
        for rid in rules:
            lines.append((_rule_label(rid, rule), _floor_cell(arm, rid), _verdict(arm.voice_under(rid))))
            detect = arm.detectable_under(rid)
            if detect is not None:  # its own line: a floor cell never wraps
                lines.append(("  detectable", _num(detect), ""))
        for i, (label, floor, verdict) in enumerate(lines):
            first = i == 0
            t.add_row(arm.name if first else "", _num(arm.delta_cb, signed=True) if first else "",
                      label, floor, verdict, _disagree(arm) if first else "", end_section=i == len(lines) - 1)
    return t


def _binding_cell(axis: Specificity, rid: str) -> str:
    """'George Eliot +0.229 vs 0.225 (1.0x)': the impostor that decides under `rid`, its margin, floor and ratio."""
    who = axis.binding.get(rid)
    margin = axis.margins.get(who) if who else None
    floor, ratio = _num(axis.floors.get(rid)), ratio_text(axis.ratios.get(rid))
    return f"{who or '-'} {_num(margin, signed=True)} vs {floor} ({ratio})"


def _nearest_cell(axis: Specificity, rule: str) -> str:
    """The impostor it moved toward most and its margin; "nearer" only where the deciding rule shows it
    (NOT-SPECIFIC: the margin below minus its floor), never for a negative margin within noise."""
    if axis.nearest is not None and axis.nearest in axis.nearer(rule):
        return f"nearer {axis.nearest} ({_num(axis.margin, signed=True)})"
    return f"{axis.nearest or '-'} ({_num(axis.margin, signed=True)})"


def specificity_table(result: GateResult) -> Table | None:
    """Each candidate's margins over the impostors, both rules' floors and verdicts side by side (None: unchecked)."""
    imp = result.impostors
    if imp is None:
        return None
    rule = result.rule
    t = Table(title=f"{result.gate}: author specificity ({imp.mode})", title_justify="left",
              caption="margin over an impostor = delta_cb minus the delta toward that impostor; its floor is the "
                      "rule's floor of (distance to the author minus distance to the impostor) by seed. SPECIFIC: "
                      "every margin above its floor; NOT-SPECIFIC: a margin below minus its floor (nearer that "
                      "author); INCONCLUSIVE otherwise (within noise: more seeds or longer pools are a new "
                      "registration); shown, the impostor that decides"
                      + "".join(f"\n{a.name} RULER-WEAK: {a.specificity.weak_said()}" for a in result.candidates
                                if a.specificity is not None and a.specificity.weak),
              caption_justify="left")
    rules = result.rules
    t.add_column("arm", no_wrap=True)
    t.add_column("nearest impostor\n(margin)", no_wrap=True)
    for rid in rules:
        t.add_column(f"deciding impostor: margin vs floor\n{_rule_label(rid, rule)}", no_wrap=True)
    for rid in rules:
        t.add_column(f"SPECIFIC\n{_rule_label(rid, rule)}", no_wrap=True)
    t.add_column("DISAGREE", no_wrap=True)
    for arm in result.candidates:
        axis = arm.specificity
        if axis is None:
            continue
        row: list[Any] = [arm.name, _nearest_cell(axis, rule), *(_binding_cell(axis, rid) for rid in rules),
                          *(_verdict(axis.under(rid)) for rid in rules),
                          Text("DISAGREE", style="bold yellow") if axis.disagree else ""]
        t.add_row(*row)
    return t


def specificity_rows(result: GateResult) -> Text:
    """The specificity table for a narrow terminal, as lines (a verdict is never elided): one per (candidate, rule)."""
    rule = result.rule
    out = Text(f"{result.gate}: author specificity\n")
    for arm in result.candidates:
        axis = arm.specificity
        if axis is None:
            continue
        out.append(f"  {arm.name}: nearest impostor {_nearest_cell(axis, rule)}"
                   f"{'  DISAGREE' if axis.disagree else ''}\n")
        if axis.weak:
            out.append(f"    RULER-WEAK: {axis.weak_said()}\n")
        for rid in result.rules:
            out.append(f"    {_rule_label(rid, rule)}: ")
            out.append(_verdict(axis.under(rid)))
            out.append(f" (deciding impostor {_binding_cell(axis, rid)})\n")
    out.rstrip()
    return out


def author_matrix(result: GateResult) -> Table | None:
    """delta toward each author's held-out text, one row per candidate: the gate author's column marked *,
    each row's largest delta in bold (which author each voice really moves toward)."""
    imp = result.impostors
    if imp is None:
        return None
    authors = [imp.author, *imp.authors]
    t = Table(title="delta toward each author's text (* the gate author; bold: the row's largest)",
              title_justify="left")
    t.add_column("arm", no_wrap=True)
    for i, author in enumerate(authors):
        t.add_column(f"{author}{' *' if i == 0 else ''}", justify="right")
    for arm in result.candidates:
        if arm.specificity is None:
            continue
        deltas, top = arm.specificity.deltas, arm.specificity.largest_delta
        t.add_row(arm.name, *(Text(_num(deltas.get(a), signed=True),
                                   style="bold" if deltas.get(a) is not None and deltas.get(a) == top else "")
                              for a in authors))
    return t


def author_rows(result: GateResult) -> Text:
    """The author matrix for a narrow terminal, as lines: each candidate's delta toward every author."""
    imp = result.impostors
    authors = [] if imp is None else [imp.author, *imp.authors]
    out = Text("delta toward each author's text (* the gate author; bold: the candidate's largest)\n")
    for arm in result.candidates:
        if arm.specificity is None:
            continue
        deltas, top = arm.specificity.deltas, arm.specificity.largest_delta
        out.append(f"  {arm.name}:")
        for i, a in enumerate(authors):
            d = deltas.get(a)
            out.append(f"{',' if i else ''} {a}{' *' if i == 0 else ''} ")
            out.append(_num(d, signed=True), style="bold" if d is not None and d == top else "")
        out.append("\n")
    out.rstrip()
    return out


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
        cells = (_copying_cells(result, arm) if copying else []) + (_damage_cells(arm) if damage else [])
        t.add_row(arm.name, *cells)
    return t


def ship_line(result: GateResult) -> str:
    arm = result.candidate(result.ships) if result.ships else None
    decides = result.impostors is not None and result.impostors.mode == "decides"
    if arm is not None:
        specific = f", {arm.specificity.under(result.rule)}" if arm.specificity is not None else ""
        return (f"ships: {result.ships} (VOICE PASS {ratio_text(arm.ratio)} under {result.rule}, "
                f"{arm.copying}, {arm.damage}{specific})")
    axes = "VOICE, SPECIFIC, COPYING and DAMAGE" if decides else "VOICE, COPYING and DAMAGE"
    return f"ships: none (no candidate passes {axes} under {result.rule})"


def specificity_line(result: GateResult) -> str:
    """Whether specificity was checked, and how it counts: printed under every table."""
    imp = result.impostors
    if imp is None:
        return "specificity: not checked (no impostors registered; a VOICE PASS says 'toward the author's text', " \
               "not 'toward this author rather than another')"
    how = "decides (only a SPECIFIC candidate ships)" if imp.mode == "decides" else "reported, not deciding"
    return f"specificity: {how}; impostors: {', '.join(imp.authors)}"


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


def score_tables(result: GateResult, width: int) -> list[Table | Text]:
    """The wide tables when they fit in `width` columns, else the same cells in narrower tables.

    Rich would elide cells of a table wider than the terminal; a floor or DISAGREE cut short
    is a wrong reading, so a narrow terminal gets more, narrower tables instead.
    """
    wide = voice_table(result)
    tables: list[Table | Text] = [wide] if _fits(wide, width) else [seed_table(result), rule_table(result)]
    for full, narrow in ((specificity_table, specificity_rows), (author_matrix, author_rows)):
        table = full(result)
        if table is not None:
            tables.append(table if _fits(table, width) else narrow(result))
    # A result always carries copying statistics now; older hand-made ones had none to show.
    if any(a.overlap is not None for a in result.arms):
        both = safety_table(result)
        tables += ([both] if _fits(both, width)
                   else [safety_table(result, damage=False), safety_table(result, copying=False)])
    return tables


def renderables(result: GateResult, width: int = 130, ships: str | None = None) -> Group:
    """The tables and lines `score` prints; `ships` is the state in force's line of what ships where it is not the
    result's own (a sequential design's look decides it)."""
    parts: list[Any] = list(score_tables(result, width))
    parts.append(Text(ships or ship_line(result), style="bold"))
    parts.append(Text(specificity_line(result)))
    if len(result.replicas) > 1:
        parts.append(Text("replicas (every arm of a cell on one): " + "; ".join(r.line() for r in result.replicas)))
    if result.integrity is not None:
        parts.append(Text(f"seat integrity: {result.integrity.line()}",
                          style="bold red" if result.integrity.failed else ""))
    parts += [Text(line) for line in notes(result)]
    for w in result.warnings:
        parts.append(Text(f"warning: {w}", style="yellow"))
    return Group(*parts)


def print_score(result: GateResult, console: Console | None = None, ships: str | None = None) -> None:
    console = console or make_console()
    console.print(renderables(result, console.width, ships))
    if result.signature_text:
        # One unbroken line, however wide: it is copied, not read.
        console.print(f"signature: {result.signature_text}", style="dim", soft_wrap=True, markup=False)


def make_console(file: Any = None) -> Console:
    """The terminal's width (`COLUMNS` when set, 80 when not a terminal); the tables fit themselves to it."""
    return Console(file=file, highlight=False, soft_wrap=False)
