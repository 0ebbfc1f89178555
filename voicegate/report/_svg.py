"""The report's five plots, drawn as inline SVG by voicegate itself (no plotting library).

Every element goes through `el()`, which escapes each attribute value and each
text child with markupsafe: arm names, seeds and labels come from result files,
and a result file is data, never markup. Tag and attribute names are fixed by
this module's code, never taken from data.

Plots must read in greyscale and without colour at all: seeds differ by shape
(and marks that would sit on top of each other are moved apart), the two floors by
dash pattern and a letter label, PASS and FAIL by a plain grey fill versus a dense
hatch with a heavy border (red on screen: a bad outcome never looks the weaker) and
by the word itself at the end of the bar; INCONCLUSIVE (the gate cannot tell) by a
dotted fill with a dashed amber border, neither the good look nor the bad one. Every mark carries a <title> (a hover
tooltip) with its exact number, and `class`/`data-*` attributes that the tests
count.

Over 400 lines because its five plots share one escaping element builder, one set of scales and one
legend style; split, each plot would import them back, and a plot reads as one drawing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup, escape

from voicegate._figures import ratio_figure
from voicegate.scoring import ArmResult, CandidateResult

INK = "#1a1a1a"
MID = "#6b6b6b"
LIGHT = "#c8c8c8"
FAINT = "#eeeeee"
FONT = 13
BAD = "#a4161a"
# What a bad bar is filled with: the dense hatch, framed by a heavy border of the same ink.
BAD_FILL = "url(#vg-bad)"
BAD_STROKE = {"stroke": BAD, "stroke-width": 2.5}
# Neither good nor bad (INCONCLUSIVE: within noise): a dotted fill inside a dashed amber border.
AMBER = "#8a5a00"
AMBER_FILL = "url(#vg-dots)"
AMBER_STROKE = {"stroke": AMBER, "stroke-width": 2.5, "stroke-dasharray": "4 2"}
NOISE = "#fbeecf"  # the band within ± the deciding rule's floor: light amber, a light grey in print

_NAME = re.compile(r"[a-z][a-z0-9-]*")
_ATTR = re.compile(r"[a-zA-Z][a-zA-Z0-9-]*")


def _fmt_attr(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}".rstrip("0").rstrip(".") if math.isfinite(value) else "0"
    return str(value)


def el(tag: str, attrs: Mapping[str, Any] | None = None, *children: Any) -> Markup:
    """One SVG element; attribute values and text children are escaped, Markup children kept."""
    if not _NAME.fullmatch(tag):
        raise ValueError(f"bad tag {tag!r}")
    parts = [f"<{tag}"]
    for key, value in (attrs or {}).items():
        if value is None:
            continue
        name = key.rstrip("_").replace("_", "-")
        if not _ATTR.fullmatch(name):
            raise ValueError(f"bad attribute {name!r}")
        parts.append(f' {name}="{escape(_fmt_attr(value))}"')
    inner = "".join(str(escape(c)) for c in children if c is not None)
    parts.append(f">{inner}</{tag}>")
    return Markup("".join(parts))


def text(x: float, y: float, s: Any, *, anchor: str = "start", size: int = FONT, weight: str | None = None,
         cls: str | None = None, fill: str = INK) -> Markup:
    return el("text", {"x": x, "y": y, "text-anchor": anchor, "font-size": size, "font-weight": weight,
                       "class": cls, "fill": fill}, s)


def title(s: Any) -> Markup:
    return el("title", None, s)


# -- scales -------------------------------------------------------------------


class Scale:
    """A linear map from data to pixels with 'nice' ticks."""

    def __init__(self, lo: float, hi: float, px0: float, px1: float):
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
            lo, hi = (lo, lo + 1.0) if math.isfinite(lo) else (0.0, 1.0)
        self.lo, self.hi, self.px0, self.px1 = lo, hi, px0, px1

    def __call__(self, v: float) -> float:
        v = min(max(v, self.lo), self.hi)
        return self.px0 + (v - self.lo) / (self.hi - self.lo) * (self.px1 - self.px0)

    def ticks(self, count: int = 5) -> list[float]:
        raw = (self.hi - self.lo) / max(count, 1)
        mag = 10 ** math.floor(math.log10(raw))
        step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
        first = math.ceil(self.lo / step - 1e-9) * step
        out, v = [], first
        while v <= self.hi + 1e-9:
            out.append(round(v, 10))
            v += step
        return out


def padded(values: Iterable[float], *, include: Sequence[float] = (), pad: float = 0.08,
           min_span: float = 0.05) -> tuple[float, float]:
    vals = [v for v in (*values, *include) if v is not None and math.isfinite(v)]
    if not vals:
        return 0.0, 1.0
    lo, hi = min(vals), max(vals)
    span = max(hi - lo, min_span)
    return lo - span * pad, hi + span * pad


def axis(scale: Scale, y: float, *, decimals: int = 2, label: str = "", grid_top: float | None = None) -> Markup:
    """A horizontal axis at y with ticks, optional grid lines up to grid_top, and a label."""
    parts = [el("line", {"x1": scale.px0, "y1": y, "x2": scale.px1, "y2": y, "stroke": MID})]
    for t in scale.ticks():
        x = scale(t)
        if grid_top is not None:
            parts.append(el("line", {"x1": x, "y1": grid_top, "x2": x, "y2": y, "stroke": FAINT}))
        parts.append(el("line", {"x1": x, "y1": y, "x2": x, "y2": y + 4, "stroke": MID}))
        parts.append(text(x, y + 17, f"{t:.{decimals}f}", anchor="middle", size=11, fill=MID))
    if label:
        parts.append(text((scale.px0 + scale.px1) / 2, y + 33, label, anchor="middle", size=12, fill=MID))
    return Markup("").join(parts)


def svg(width: int, height: int, label: str, *children: Any, cls: str) -> Markup:
    return el("svg", {"viewBox": f"0 0 {width} {height}",
                      "width": width, "height": height, "role": "img", "aria-label": label,
                      "class": f"plot {cls}", "font-family": "sans-serif"},
              title(label), *children)


# -- shared definitions: hatching for FAIL, so it reads without colour ----------


def defs() -> Markup:
    hatch = el("pattern", {"id": "vg-hatch", "width": 6, "height": 6, "patternUnits": "userSpaceOnUse",
                           "patternTransform": "rotate(45)"},
               el("rect", {"width": 6, "height": 6, "fill": "#ffffff"}),
               el("line", {"x1": 0, "y1": 0, "x2": 0, "y2": 6, "stroke": INK, "stroke-width": 2}))
    bad = el("pattern", {"id": "vg-bad", "width": 5, "height": 5, "patternUnits": "userSpaceOnUse",
                         "patternTransform": "rotate(45)"},
             el("rect", {"width": 5, "height": 5, "fill": "#ffffff"}),
             el("line", {"x1": 0, "y1": 0, "x2": 0, "y2": 5, "stroke": BAD, "stroke-width": 3}))
    dots = el("pattern", {"id": "vg-dots", "width": 5, "height": 5, "patternUnits": "userSpaceOnUse"},
              el("rect", {"width": 5, "height": 5, "fill": "#ffffff"}),
              el("circle", {"cx": 2.5, "cy": 2.5, "r": 1.1, "fill": INK}))
    return el("svg", {"width": 0, "height": 0, "class": "defs",
                      "aria-hidden": "true", "focusable": "false"}, el("defs", None, hatch, bad, dots))


# -- seed shapes ----------------------------------------------------------------

SHAPES = ("circle", "square", "triangle", "diamond", "down", "cross")


def shape(kind: str, x: float, y: float, r: float, attrs: Mapping[str, Any], *children: Any) -> Markup:
    common = {"fill": INK, "stroke": INK, "stroke-width": 1.2, **attrs}
    if kind == "circle":
        return el("circle", {"cx": x, "cy": y, "r": r, **common}, *children)
    if kind == "square":
        return el("rect", {"x": x - r * 0.9, "y": y - r * 0.9, "width": r * 1.8, "height": r * 1.8, **common},
                  *children)
    pts = {
        "triangle": [(x, y - r * 1.1), (x + r, y + r * 0.8), (x - r, y + r * 0.8)],
        "down": [(x, y + r * 1.1), (x + r, y - r * 0.8), (x - r, y - r * 0.8)],
        "diamond": [(x, y - r * 1.2), (x + r * 1.1, y), (x, y + r * 1.2), (x - r * 1.1, y)],
        "cross": [(x - r, y - r * 0.3), (x - r * 0.3, y - r * 0.3), (x - r * 0.3, y - r), (x + r * 0.3, y - r),
                  (x + r * 0.3, y - r * 0.3), (x + r, y - r * 0.3), (x + r, y + r * 0.3),
                  (x + r * 0.3, y + r * 0.3), (x + r * 0.3, y + r), (x - r * 0.3, y + r),
                  (x - r * 0.3, y + r * 0.3), (x - r, y + r * 0.3)],
    }[kind]
    return el("polygon", {"points": " ".join(f"{_fmt_attr(px)},{_fmt_attr(py)}" for px, py in pts), **common},
              *children)


def seed_shape(i: int) -> tuple[str, bool]:
    """(shape, hollow) for the i-th seed: six shapes, filled then hollow."""
    return SHAPES[i % len(SHAPES)], (i // len(SHAPES)) % 2 == 1


# -- (1) per-arm, per-seed voice distances ------------------------------------------

# Vertical places for a mark, nearest the row's middle first: a tie moves up, then down, then further.
_LEVELS = (0.0, -11.0, 11.0, -20.0, 20.0)


def _apart(xs: Sequence[float | None], r: float = 5.0) -> list[float]:
    """A vertical offset per mark so that no two marks of one row overlap (x within 2r + 1 px)."""
    placed: list[tuple[float, float]] = []
    out: list[float] = []
    for x in xs:
        if x is None:
            out.append(0.0)
            continue
        level = next((lv for lv in _LEVELS
                      if all(abs(x - px) > 2 * r + 1 or abs(lv - py) >= 2 * r for px, py in placed)),
                     _LEVELS[len(placed) % len(_LEVELS)])
        placed.append((x, level))
        out.append(level)
    return out



def distances_plot(arms: Sequence[ArmResult], seeds: Sequence[str]) -> Markup:
    """One mark per (arm, seed) on a distance axis, each arm's mean as a bar and its spread as a bracket.

    Each arm's `distances` ({seed: d}), `mean_distance` and `spread` are drawn. Dots at the same
    distance are nudged vertically by seed so an outlier and a tie both stay visible.
    """
    W, left, right, top, row = 760, 120, 190, 44, 46
    H = top + row * len(arms) + 46
    # A seed without a distance (a hand-made result) has no mark.
    values = [float(d) for a in arms for d in a.distances.values() if d is not None]
    sc = Scale(*padded(values), left, W - right)
    parts: list[Markup] = [text(left, 16, "voice distance to the held-out author (lower = closer)", size=12,
                                fill=MID)]
    # Legend: one shape per seed.
    lx = left
    for i, seed in enumerate(seeds):
        kind, hollow = seed_shape(i)
        parts.append(shape(kind, lx + 5, 31, 4.5, {"fill": "#ffffff" if hollow else INK, "class": "legend"}))
        parts.append(text(lx + 14, 35, f"seed {seed}", size=11))
        lx += 30 + 7 * len(f"seed {seed}")
    parts.append(el("line", {"x1": lx + 4, "y1": 25, "x2": lx + 4, "y2": 37, "stroke": INK, "stroke-width": 3}))
    parts.append(text(lx + 10, 35, "mean", size=11))
    lx += 48
    parts.append(el("path", {"d": f"M{lx} 27 v6 h22 v-6", "fill": "none", "stroke": MID}))
    parts.append(text(lx + 27, 35, "spread (max - min)", size=11))

    body_top = top
    for r, a in enumerate(arms):
        y = body_top + row * r + row / 2
        if r % 2 == 0:
            parts.append(el("rect", {"x": 0, "y": y - row / 2, "width": W, "height": row, "fill": "#f7f7f7"}))
        role = "base" if a.is_base else "candidate"
        parts.append(text(left - 10, y - 2, a.name, anchor="end", weight="bold"))
        parts.append(text(left - 10, y + 13, role, anchor="end", size=11, fill=MID))
        ds = {str(k): float(v) for k, v in a.distances.items() if v is not None}
        if ds:
            lo, hi = min(ds.values()), max(ds.values())
            # Spread bracket under the dots: the number the floors are made of.
            parts.append(el("path", {"d": f"M{_fmt_attr(sc(lo))} {_fmt_attr(y + 12)} v6 H{_fmt_attr(sc(hi))} v-6",
                                     "fill": "none", "stroke": MID, "class": "spread",
                                     "data-arm": a.name},
                            title(f"{a.name}: spread {a.spread if a.spread is not None else hi - lo:.3f}")))
        mean = a.mean_distance
        if mean is not None:
            parts.append(el("line", {"x1": sc(mean), "y1": y - 15, "x2": sc(mean), "y2": y + 11, "stroke": INK,
                                     "stroke-width": 3, "class": "mean", "data-arm": a.name},
                            title(f"{a.name}: mean distance {float(mean):.3f}")))
        offsets = _apart([sc(ds[seed]) if seed in ds else None for seed in seeds])
        for i, seed in enumerate(seeds):
            if seed not in ds:
                continue
            kind, hollow = seed_shape(i)
            dy = offsets[i]
            parts.append(shape(kind, sc(ds[seed]), y + dy, 5, {
                "fill": "#ffffff" if hollow else INK, "fill-opacity": None if hollow else 0.85,
                "stroke": "#ffffff" if not hollow else INK, "class": "dot", "data-arm": a.name,
                "data-seed": seed}, title(f"{a.name}, seed {seed}: d = {ds[seed]:.3f}")))
        summary = []
        if mean is not None:
            summary.append(f"mean {float(mean):.3f}")
        if a.spread is not None:
            summary.append(f"spread {float(a.spread):.3f}")
        parts.append(text(W - right + 12, y + 4, " · ".join(summary), size=12))
    axis_y = body_top + row * len(arms) + 4
    parts.append(axis(sc, axis_y, decimals=2, grid_top=body_top))
    return svg(W, H, "Voice distance per arm and seed, with each arm's mean and spread",
               Markup("").join(parts), cls="plot-distances")


# -- (2) delta_cb against both floors ---------------------------------------------

FLOOR_STYLE = {
    # rule id -> (letter, dash pattern): the floors differ by dash and letter, not by colour.
    "global-max-spread": ("G", "6 3"),
    "pairwise-max-spread": ("P", None),
    "welch-t": ("W", "8 3 2 3"),
    "welch-t-min-effect": ("M", "2 2"),
    "prompt-paired": ("X", "4 2 1 2"),
}


def _floor_style(rule: str, i: int) -> tuple[str, str | None]:
    return FLOOR_STYLE.get(rule, (rule[:1].upper() or str(i), "2 2"))


_DASH_WORDS = {"6 3": "dashed", None: "solid", "2 2": "dotted", "8 3 2 3": "dash-dot", "4 2 1 2": "dash-dot-short"}


def floor_legend(rule_order: Sequence[str]) -> str:
    """The caption's key to the floor marks, from the same styles `delta_plot` draws them in."""
    keys = []
    for i, rule in enumerate(rule_order):
        letter, dash = _floor_style(rule, i)
        keys.append(f"{letter} = {rule} ({_DASH_WORDS.get(dash, 'dashed')})")
    marked = "both floors" if len(keys) == 2 else f"all {len(keys)} floors" if len(keys) > 2 else "the floor"
    return f"{marked} marked: {', '.join(keys)}"


def _letters(marks: Sequence[tuple[float, str]], y: float) -> list[Markup]:
    """Floor letters right of their marks, left to right, never on top of each other (two floors at
    the same place, like ckpt925's 0.251 under both rules, read "G=P")."""
    groups: list[tuple[float, str]] = []
    for x, letter in sorted(marks):
        if groups and abs(groups[-1][0] - x) < 1.0:
            groups[-1] = (groups[-1][0], f"{groups[-1][1]}={letter}")
        else:
            groups.append((x, letter))
    out = []
    for g, (x, letter) in enumerate(groups):
        # A neighbour close on the right: this label goes left of its mark, so neither hides a line.
        crowded = g + 1 < len(groups) and groups[g + 1][0] - x < 8 * len(letter) + 10
        out.append(text(x - 4, y, letter, anchor="end", size=11, weight="bold") if crowded
                   else text(x + 4, y, letter, size=11, weight="bold"))
    return out


def _floor_keys(rule_order: Sequence[str], deciding: str, x0: float, y: float, x_max: float,
                what: str = "floor") -> tuple[list[Markup], float]:
    """The legend's key to the floor marks (dash and letter per rule), wrapped onto a further line
    where it would run past x_max; returns the parts and the baseline of the last line."""
    parts: list[Markup] = []
    lx = x0
    for i, rule in enumerate(rule_order):
        letter, dash = _floor_style(rule, i)
        width = 40 + 7 * len(rule) + 7 * (len(what) - len("floor"))
        if lx > x0 and lx + 24 + 6 * len(f"{letter} = {rule} {what}") > x_max:
            lx, y = x0, y + 18
        parts.append(el("line", {"x1": lx, "y1": y - 12, "x2": lx, "y2": y + 4, "stroke": INK, "stroke-width": 2.5,
                                 "stroke-dasharray": dash}))
        parts.append(text(lx + 6, y, f"{letter} = {rule} {what}", size=11,
                          weight="bold" if rule == deciding else None))
        lx += width
    return parts, y


def delta_plot(candidates: Sequence[CandidateResult], rule_order: Sequence[str], deciding: str) -> Markup:
    """delta_cb per candidate as a bar; every floor drawn as a labelled mark on the same axis.

    Each candidate's `delta_cb`, `floors`, `voice` and `ratios` ({rule: ...}, the ratios under
    every rule in `rule_order`) and `disagree` are drawn. The bar is solid when the deciding
    rule passes and hatched when it fails.
    """
    W, left, right, top, row = 760, 120, 24, 50, 78
    H = top + row * len(candidates) + 46
    vals = [float(c.delta_cb) for c in candidates if c.delta_cb is not None]
    vals += [float(f) for c in candidates for f in c.floors.values() if f is not None]
    lo, hi = padded(vals, include=(0.0,), pad=0.1)
    sc = Scale(min(lo, 0.0), hi, left, W - right)
    parts: list[Markup] = [text(left, 16, "delta_cb = mean d(base) - mean d(candidate); PASS needs the bar "
                                "to pass the floor", size=12, fill=MID)]
    lx = left
    parts.append(el("rect", {"x": lx, "y": 26, "width": 18, "height": 11, "fill": MID, "stroke": INK}))
    parts.append(text(lx + 24, 36, "PASS (deciding rule)", size=11))
    lx += 150
    parts.append(el("rect", {"x": lx, "y": 26, "width": 18, "height": 11, "fill": BAD_FILL, **BAD_STROKE}))
    parts.append(text(lx + 24, 36, "FAIL", size=11, weight="bold"))
    lx += 64
    keys, last = _floor_keys(rule_order, deciding, lx, 36, W - right)
    parts += keys
    if last > 36:  # the key took further lines: the rows move down, the plot grows
        top += int(last - 36)
        H += int(last - 36)
    zero = sc(0.0)
    for r, c in enumerate(candidates):
        y0 = top + row * r
        bar_y, bar_h = y0 + 16, 20
        if r % 2 == 0:
            parts.append(el("rect", {"x": 0, "y": y0, "width": W, "height": row, "fill": "#f7f7f7"}))
        parts.append(text(left - 10, bar_y + 15, c.name, anchor="end", weight="bold"))
        delta = c.delta_cb
        verdict = c.voice_under(deciding)
        if delta is not None:
            x1, x2 = sorted((zero, sc(float(delta))))
            look = {"fill": MID, "stroke": INK} if verdict == "PASS" else {"fill": BAD_FILL, **BAD_STROKE}
            parts.append(el("rect", {"x": x1, "y": bar_y, "width": max(x2 - x1, 1.0), "height": bar_h, **look,
                                     "class": "delta-bar", "data-arm": c.name, "data-verdict": verdict},
                            title(f"{c.name}: delta_cb {float(delta):+.3f}, {verdict} under {deciding}")))
        floors = c.floors
        marks = []
        for i, rule in enumerate(rule_order):
            f = floors.get(rule)
            if f is None:
                continue
            letter, dash = _floor_style(rule, i)
            x = sc(float(f))
            marks.append((x, letter))
            # A white casing under the mark, so a floor inside a bar still shows.
            parts.append(el("line", {"x1": x, "y1": bar_y - 8, "x2": x, "y2": bar_y + bar_h + 8,
                                     "stroke": "#ffffff", "stroke-width": 6}))
            parts.append(el("line", {"x1": x, "y1": bar_y - 8, "x2": x, "y2": bar_y + bar_h + 8,
                                     "stroke": INK, "stroke-width": 3 if rule == deciding else 2,
                                     "stroke-dasharray": dash, "class": "floor-mark", "data-arm": c.name,
                                     "data-rule": rule},
                            title(f"{c.name}: {rule} floor {float(f):.3f}")))
        parts += _letters(marks, bar_y - 1)
        if verdict is not None:
            # The verdict in words under the name, FAIL as heavy as PASS (and red on screen).
            parts.append(text(left - 10, bar_y + 31, ("\u2713 " if verdict == "PASS" else "\u2717 ") + str(verdict),
                              anchor="end", size=12, weight="bold", fill=INK if verdict == "PASS" else BAD,
                              cls="delta-verdict"))
        # The sentence under the bar: every number on it, with both rules and DISAGREE.
        bits = [f"{float(delta):+.3f}" if delta is not None else "n/a"]
        for rule in rule_order:
            f = floors.get(rule)
            v = c.voice.get(rule, "?")
            rt = c.ratios.get(rule)
            letter = _floor_style(rule, 0)[0]
            ratio = f" {ratio_figure(float(rt))}" if rt is not None else ""
            bits.append(f"{letter} {float(f):.3f} {v}{ratio}" if f is not None else f"{letter} n/a")
        line = el("text", {"x": left, "y": bar_y + bar_h + 24, "font-size": 12, "fill": INK},
                  " · ".join(bits),
                  el("tspan", {"font-weight": "bold", "dx": 8}, "· DISAGREE") if c.disagree else None)
        parts.append(line)
    parts.append(el("line", {"x1": zero, "y1": top, "x2": zero, "y2": top + row * len(candidates),
                             "stroke": MID}))
    parts.append(axis(sc, top + row * len(candidates) + 4, decimals=2, label="delta_cb"))
    n = len(rule_order)
    marked = "both floors" if n == 2 else f"all {n} floors" if n > 2 else "its floor"
    return svg(W, H, f"delta_cb per candidate with {marked}", Markup("").join(parts), cls="plot-delta")


# -- (2b) specificity: each margin against every rule's floor band -------------------------

SPECIFIC, NOT_SPECIFIC, INCONCLUSIVE = "SPECIFIC", "NOT-SPECIFIC", "INCONCLUSIVE"


@dataclass(frozen=True, kw_only=True)
class MarginRow:
    """One (candidate, impostor): the margin, each rule's floor and what it says (the plot's row, the table's)."""

    candidate: str
    impostor: str
    first: bool                                  # the candidate's first impostor (its name is written there)
    delta: float | None                          # the candidate's delta toward the impostor
    margin: float | None                         # delta_cb minus that delta
    floors: Mapping[str, float | None] = field(default_factory=dict)      # rule id -> floor of this margin
    outcomes: Mapping[str, str | None] = field(default_factory=dict)      # rule id -> impostor_outcome
    binding: tuple[str, ...] = ()                # the rules under which this impostor decides the verdict
    verdict: str | None = None                   # the candidate's verdict under the deciding rule


def _finite_or_none(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) and not isinstance(v, bool) else None


def _outcome_look(outcome: str | None) -> dict[str, Any]:
    if outcome == SPECIFIC:
        return {"fill": MID, "stroke": INK, "stroke-width": 1.5}
    if outcome == NOT_SPECIFIC:
        return {"fill": BAD_FILL, **BAD_STROKE}
    if outcome == INCONCLUSIVE:
        return {"fill": AMBER_FILL, **AMBER_STROKE}
    return {"fill": "#ffffff", "stroke": INK, "stroke-width": 1.2, "stroke-dasharray": "2 2"}


def _outcome_word(outcome: str | None) -> tuple[str, str]:
    """(the word with its sign, its ink): the same marks the page's verdict badges carry."""
    if outcome == SPECIFIC:
        return "\u2713 SPECIFIC", INK
    if outcome == NOT_SPECIFIC:
        return "\u2717 NOT-SPECIFIC", BAD
    if outcome == INCONCLUSIVE:
        return "? INCONCLUSIVE", AMBER
    return "no verdict", MID


def _diamond(x: float, y: float, r: float, attrs: Mapping[str, Any], *children: Any) -> Markup:
    return shape("diamond", x, y, r, attrs, *children)


def _clip_name(name: str, n: int = 22) -> str:
    return name if len(name) <= n else name[:n - 1] + "\u2026"


def specificity_plot(rows: Sequence[MarginRow], rule_order: Sequence[str], deciding: str) -> Markup:
    """Each (candidate, impostor) margin as a mark against every rule's floor, drawn on both sides of zero.

    SPECIFIC against an impostor needs the mark right of +floor; left of -floor the voice is shown closer
    to that impostor than to the gate author (NOT-SPECIFIC); between the two it is within noise
    (INCONCLUSIVE). The band within ± the deciding rule's floor is shaded; every rule's ±floor is a
    labelled line in the dash and letter the delta plot uses. The mark's look is what the deciding rule
    says about that one impostor; the candidate's verdict (every impostor at once) heads its rows.
    """
    W, left, right, row, head = 760, 170, 24, 68, 24
    vals: list[float] = [0.0]
    for r in rows:
        if (m := _finite_or_none(r.margin)) is not None:
            vals.append(m)
        for f in r.floors.values():
            if (fv := _finite_or_none(f)) is not None:
                vals += [fv, -fv]
    sc = Scale(*padded(vals, pad=0.1), left, W - right)
    parts: list[Markup] = [text(left, 16, "margin = delta_cb - delta toward the impostor; SPECIFIC needs it past "
                                "+floor, NOT-SPECIFIC past -floor", size=12, fill=MID)]
    lx = 10
    for kind in (SPECIFIC, INCONCLUSIVE, NOT_SPECIFIC):
        word, ink = _outcome_word(kind)
        parts.append(_diamond(lx + 7, 31, 6.5, {**_outcome_look(kind), "class": "legend"}))
        parts.append(text(lx + 18, 36, word, size=11, weight="bold", fill=ink))
        lx += 30 + 7 * len(word)
    parts.append(el("rect", {"x": lx, "y": 26, "width": 18, "height": 11, "fill": NOISE, "stroke": LIGHT}))
    parts.append(text(lx + 24, 36, "within \u00b1 the deciding floor", size=11))
    keys, last = _floor_keys(rule_order, deciding, 10, 56, W - right, what="floor (\u00b1)")
    parts += keys
    top = last + 16
    groups = sum(1 for r in rows if r.first)
    H = int(top + row * len(rows) + head * groups + 46)
    y0 = top
    shade = False
    zero = sc(0.0)
    for r in rows:
        if r.first:
            shade = not shade
            word, ink = _outcome_word(r.verdict)
            parts.append(el("rect", {"x": 0, "y": y0, "width": W, "height": head, "fill": "#efefef"}))
            parts.append(el("text", {"x": 10, "y": y0 + 17, "font-size": FONT, "fill": INK},
                            el("tspan", {"font-weight": "bold"}, r.candidate),
                            el("tspan", {"dx": 8, "fill": ink, "font-weight": "bold", "class": "spec-verdict",
                                         "data-arm": r.candidate}, word),
                            el("tspan", {"dx": 6, "fill": MID}, f"under {deciding}, every impostor")))
            y0 += head
        if shade:
            parts.append(el("rect", {"x": 0, "y": y0, "width": W, "height": row, "fill": "#f7f7f7"}))
        my = y0 + 22
        outcome = r.outcomes.get(deciding)
        word, ink = _outcome_word(outcome)
        parts.append(el("text", {"x": left - 10, "y": my + 1, "text-anchor": "end", "font-size": 12, "fill": INK},
                        title(r.impostor), f"vs {_clip_name(r.impostor)}"))
        parts.append(text(left - 10, my + 17, word, anchor="end", size=11, weight="bold", fill=ink,
                          cls="margin-verdict"))
        f_dec = _finite_or_none(r.floors.get(deciding))
        if f_dec is not None:
            x1, x2 = sc(-f_dec), sc(f_dec)
            parts.append(el("rect", {"x": x1, "y": my - 14, "width": max(x2 - x1, 1.0), "height": 28,
                                     "fill": NOISE, "class": "noise-band", "data-arm": r.candidate,
                                     "data-impostor": r.impostor, "data-rule": deciding},
                            title(f"{r.candidate} vs {r.impostor}: within noise under {deciding}, "
                                  f"{-f_dec:+.3f} to {f_dec:+.3f}")))
        parts.append(el("line", {"x1": zero, "y1": my - 16, "x2": zero, "y2": my + 16, "stroke": MID}))
        plus: list[tuple[float, str]] = []
        minus: list[tuple[float, str]] = []
        for i, rule in enumerate(rule_order):
            f = _finite_or_none(r.floors.get(rule))
            if f is None:
                continue
            letter, dash = _floor_style(rule, i)
            for side, xf in (("plus", sc(f)), ("minus", sc(-f))):
                (plus if side == "plus" else minus).append((xf, letter))
                parts.append(el("line", {"x1": xf, "y1": my - 14, "x2": xf, "y2": my + 14,
                                         "stroke": "#ffffff", "stroke-width": 6}))
                what = (f"{r.candidate} vs {r.impostor}: {rule} floor {f:.3f} (SPECIFIC past it)" if side == "plus"
                        else f"{r.candidate} vs {r.impostor}: minus the {rule} floor, {-f:.3f} "
                             "(NOT-SPECIFIC past it)")
                parts.append(el("line", {"x1": xf, "y1": my - 14, "x2": xf, "y2": my + 14, "stroke": INK,
                                         "stroke-width": 3 if rule == deciding else 2, "stroke-dasharray": dash,
                                         "class": "spec-floor", "data-arm": r.candidate,
                                         "data-impostor": r.impostor, "data-rule": rule, "data-side": side},
                                title(what)))
        # +floor letters above the row, minus-floor letters below it: two floors near zero never collide.
        parts += _letters(plus, my - 16)
        parts += _letters([(x, "\u2212" + letter) for x, letter in minus], my + 26)
        m = _finite_or_none(r.margin)
        if m is not None:
            parts.append(_diamond(sc(m), my, 7, {**_outcome_look(outcome), "class": "margin-mark",
                                                 "data-arm": r.candidate, "data-impostor": r.impostor,
                                                 "data-verdict": outcome or ""},
                                  title(f"{r.candidate} vs {r.impostor}: margin {m:+.3f}, "
                                        f"{outcome or 'no verdict'} under {deciding}")))
        bits = [f"margin {m:+.3f}" if m is not None else "margin n/a"]
        for i, rule in enumerate(rule_order):
            letter = _floor_style(rule, i)[0]
            f = _finite_or_none(r.floors.get(rule))
            bits.append(f"{letter} \u00b1{f:.3f} {r.outcomes.get(rule) or '-'}" if f is not None else f"{letter} n/a")
        parts.append(text(left, my + 41, " \u00b7 ".join(bits), size=12))
        y0 += row
    parts.append(axis(sc, y0 + 4, decimals=2, label="margin over the impostor"))
    return svg(W, H, "Specificity: each candidate's margin over each impostor against every rule's floor",
               Markup("").join(parts), cls="plot-specificity")


# -- (3) 8-gram overlap per arm vs the control --------------------------------------


def overlap_plot(arms: Sequence[ArmResult], control_arm: str, control: float, tolerance: float,
                 n: int) -> Markup:
    """Overlap per arm as a bar; the control's overlap and control + tolerance as marked lines."""
    W, left, right, top, row = 760, 120, 200, 50, 36
    H = top + row * len(arms) + 46
    limit = control + tolerance
    vals = [float(a.overlap) for a in arms if a.overlap is not None]
    hi = max([*vals, limit, 0.0]) * 1.25 or 0.01
    sc = Scale(0.0, max(hi, 0.01), left, W - right)
    parts: list[Markup] = [text(left, 16, f"fraction of word {n}-grams found in the adapter's training text",
                                size=12, fill=MID)]
    parts.append(el("line", {"x1": left, "y1": 24, "x2": left, "y2": 40, "stroke": INK, "stroke-width": 2,
                             "stroke-dasharray": "2 2"}))
    parts.append(text(left + 6, 36, f"C = control ({control_arm}) {control:.4f}", size=11))
    parts.append(el("line", {"x1": left + 210, "y1": 24, "x2": left + 210, "y2": 40, "stroke": INK,
                             "stroke-width": 2, "stroke-dasharray": "6 3"}))
    parts.append(text(left + 216, 36, f"T = control + tolerance {tolerance:.4f} = {limit:.4f}", size=11))
    for r, a in enumerate(arms):
        y0 = top + row * r
        if r % 2 == 0:
            parts.append(el("rect", {"x": 0, "y": y0, "width": W, "height": row, "fill": "#f7f7f7"}))
        parts.append(text(left - 10, y0 + 23, a.name, anchor="end", weight="bold"))
        ov = a.overlap
        over = ov is not None and float(ov) > limit + 1e-12
        if ov is not None:
            parts.append(el("rect", {"x": left, "y": y0 + 9, "width": max(sc(float(ov)) - left, 1.5),
                                     "height": 18,
                                     **({"fill": BAD_FILL, **BAD_STROKE} if over else {"fill": MID, "stroke": INK}),
                                     "class": "overlap-bar", "data-arm": a.name},
                            title(f"{a.name}: overlap {float(ov):.4f}")))
        label = "n/a" if ov is None else f"{float(ov):.4f}"
        if a.name == control_arm:
            label += " (control)"
        elif isinstance(a, CandidateResult) and a.copying:
            label += f" · {a.copying}"
        parts.append(text(W - right + 12, y0 + 23, label, size=12, weight="bold" if over else None))
    bottom = top + row * len(arms)
    cx, tx = sc(control), sc(limit)
    for x, letter, dash in ((cx, "C", "2 2"), (tx, "T", "6 3")):
        parts.append(el("line", {"x1": x, "y1": top - 4, "x2": x, "y2": bottom, "stroke": INK,
                                 "stroke-width": 2, "stroke-dasharray": dash, "class": "overlap-ref"}))
    # C left of its line when T is close by (a wide axis squeezes them together), T to the right.
    parts.append(text(cx - 3, top + 2, "C", anchor="end", size=11, weight="bold") if tx - cx < 14 and cx > left + 10
                 else text(cx + 3, top + 2, "C", size=11, weight="bold"))
    parts.append(text(max(tx + 3, cx + 14), top + 2, "T", size=11, weight="bold"))
    parts.append(axis(sc, bottom + 4, decimals=3, label=f"{n}-gram overlap"))
    return svg(W, H, f"{n}-gram overlap per arm against the never-saw-it control",
               Markup("").join(parts), cls="plot-overlap")


# -- (4) damage: probe pass rates and degeneration ------------------------------------


def _probe_pass_rate(a: ArmResult) -> float | None:
    return a.probe_pass_rate


def _degeneration_rate(a: ArmResult) -> float | None:
    return a.degeneration.rate


def damage_plot(arms: Sequence[ArmResult], base: str, tolerance: float) -> Markup:
    """Two panels on a 0..1 axis: probe pass rate (limit = base - tolerance) and degeneration
    rate on the voice prompts (limit = base + tolerance)."""
    W, left, right, row = 760, 120, 200, 28
    by = {a.name: a for a in arms}
    base_arm = by.get(base)
    # (label, metric as named in the marks' data-metric, how to read it off an arm, which way is worse)
    panels: list[tuple[str, str, Callable[[ArmResult], float | None], int]] = [
        ("probe pass rate (higher is better)", "probe_pass_rate", _probe_pass_rate, -1),
        ("degeneration rate on voice prompts (lower is better)", "degeneration_rate", _degeneration_rate, +1),
    ]
    panel_h = 30 + row * len(arms) + 40
    H = panel_h * len(panels) + 10
    sc = Scale(0.0, 1.0, left, W - right)
    parts: list[Markup] = []
    for p, (label, key, metric, sign) in enumerate(panels):
        y0 = p * panel_h
        parts.append(text(left, y0 + 16, label, size=12, fill=MID))
        ref = metric(base_arm) if base_arm is not None else None
        top = y0 + 26
        for r, a in enumerate(arms):
            y = top + row * r
            if r % 2 == 0:
                parts.append(el("rect", {"x": 0, "y": y, "width": W, "height": row, "fill": "#f7f7f7"}))
            parts.append(text(left - 10, y + 19, a.name, anchor="end", weight="bold"))
            value = metric(a)
            if value is None:
                parts.append(text(left + 4, y + 19, "no probe set registered" if key == "probe_pass_rate"
                                  else "n/a", size=12, fill=MID))
                parts.append(text(W - right + 12, y + 19, "n/a", size=12))
                continue
            v = float(value)
            worse = ref is not None and a.name != base and (
                v < float(ref) - tolerance - 1e-12 if sign < 0 else v > float(ref) + tolerance + 1e-12)
            parts.append(el("rect", {"x": left, "y": y + 6, "width": max(sc(v) - left, 1.5), "height": 16,
                                     **({"fill": BAD_FILL, **BAD_STROKE} if worse else {"fill": MID, "stroke": INK}),
                                     "class": "damage-bar", "data-arm": a.name, "data-metric": key},
                            title(f"{a.name}: {key.replace('_', ' ')} {v:.3f}")))
            parts.append(text(W - right + 12, y + 19, f"{v:.3f}" + (" · worse than base" if worse else ""),
                              size=12, weight="bold" if worse else None))
        bottom = top + row * len(arms)
        if ref is not None:
            limit = float(ref) + sign * tolerance
            if 0.0 <= limit <= 1.0:
                x = sc(limit)
                parts.append(el("line", {"x1": x, "y1": top - 4, "x2": x, "y2": bottom, "stroke": INK,
                                         "stroke-width": 2, "stroke-dasharray": "6 3", "class": "damage-limit"},
                                title(f"limit: base {float(ref):.3f} {'-' if sign < 0 else '+'} tolerance "
                                      f"{tolerance:.3f} = {limit:.3f}")))
                parts.append(text(x + 3, top + 6, "limit", size=10, weight="bold"))
        parts.append(axis(sc, bottom + 4, decimals=1))
    return svg(W, H, "Damage: probe pass rates and degeneration rates per arm", Markup("").join(parts),
               cls="plot-damage")
