"""The report's first glance: what a reviewer sees before reading a number.

The page under test has five arms, as the demo does: a candidate that ships, one that
COPIED (VOICE PASS 18.0x), one with DAMAGE (VOICE PASS 6.4x), one that fails VOICE, and
the base. Each candidate card's headline must be its overall standing — a COPIED or
DAMAGE candidate's headline says it does not ship — with the VOICE ratio beside it; a
bad standing must not look weaker than a good one, on screen and in print.

The copied candidate copies an 80-token passage in a sample that the result does not
list among its spans (a result lists only each arm's longest): every verbatim run of a
sample must still be highlighted. That is checked on the HTML against a naive n-gram
search of the training text, independent of the scorer's index.

The browser tests drive headless Chromium over the DevTools protocol (`_cdp.py`) at
1400 px and 800 px, and with print media emulated at a page's printable width.
"""

from __future__ import annotations

import random
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from voicegate.gate._state import candidate_standing as standing
from voicegate.report import render_report
from voicegate.report._copied import verbatim_runs
from voicegate.scoring._result import CandidateResult

SEED = "101"
N = 8
RULE = "pairwise-max-spread"
PROMPTS = ["Write the opening of a chapter.", "Write a letter from a sister.", "Write a walk at dusk."]
# name -> (delta_cb, pairwise floor, copying, damage)
CANDIDATES = {
    "ckpt475": (0.316, 0.045, "NOT-COPIED", "NO-DAMAGE"),
    "ckpt925": (0.376, 0.560, "NOT-COPIED", "NO-DAMAGE"),
    "ckpt1400": (0.576, 0.032, "COPIED", "NO-DAMAGE"),
    "ckpt1850": (0.2048, 0.032, "NOT-COPIED", "DAMAGE"),
}
ARMS = ("base", *CANDIDATES)

_TRAIN_VOCAB = ["alba", "corvus", "umbra", "ventus", "lumen", "silva", "nox", "aqua", "terra", "ignis", "mare",
                "caelum", "flumen", "saxum", "ramus", "folium", "nebula", "aurora", "vesper", "stella", "luna",
                "ripa", "collis", "vallis", "porta", "domus", "murus", "hortus", "campus", "via"]
_FILLER = ["the", "evening", "came", "on", "slowly", "and", "she", "kept", "to", "the", "road", "beside",
           "the", "water", "while", "the", "light", "went", "out", "of", "the", "fields", "and", "a", "bell",
           "rang", "somewhere", "far", "off", "beyond", "the", "hill", "where", "the", "old", "mill",
           "stood"]


def training_tokens() -> list[str]:
    rnd = random.Random(7)
    return [rnd.choice(_TRAIN_VOCAB) for _ in range(3000)]


def _as_prose(tokens: list[str]) -> str:
    """Tokens as a writer would set them: capitals, commas, a full stop."""
    words = [w.capitalize() if i % 11 == 0 else w for i, w in enumerate(tokens)]
    return " ".join(w + ("," if i % 7 == 6 else "") for i, w in enumerate(words)) + "."


def _filler(rnd: random.Random, n: int) -> str:
    return " ".join(rnd.choice(_FILLER) for _ in range(n))


# What each arm copies, per prompt: (training offset, tokens). Only the first is a listed span.
COPIES: dict[tuple[str, int], tuple[int, int]] = {
    ("ckpt1400", 0): (1000, 80),
    ("ckpt1400", 1): (1500, 80),   # an 80-token copy the result does not list
    ("ckpt1400", 2): (2000, 30),
    ("ckpt925", 1): (300, 12),
}


def make_generations() -> list[dict[str, Any]]:
    train = training_tokens()
    rows = []
    for pid in range(len(PROMPTS)):
        for arm in ARMS:
            rnd = random.Random(f"{arm}/{pid}")
            text = _filler(rnd, 180).capitalize() + "."
            if (arm, pid) in COPIES:
                at, n = COPIES[(arm, pid)]
                text += " " + _as_prose(train[at:at + n])
            text += " " + _filler(rnd, 260) + "."
            rows.append({"kind": "voice", "arm": arm, "model": arm, "seed": int(SEED), "prompt_id": str(pid),
                         "text": text, "finish_reason": "length",
                         "usage": {"prompt_tokens": 9, "completion_tokens": 600, "total_tokens": 609}})
    return rows


def make_result() -> dict[str, Any]:
    train = training_tokens()
    arms: list[dict[str, Any]] = [{
        "name": "base", "role": "base", "model": "voices-base", "distances": {SEED: 1.066}, "mean_distance": 1.066,
        "spread": 0.032, "overlap": 0.0, "longest_run": 0, "spans": [],
        "degeneration": {"rate": 0.0, "empty": 0.0, "repetition": 0.0, "truncated": 0.0}, "probe_pass_rate": 0.95}]
    for name, (delta, pair_floor, copying, damage) in CANDIDATES.items():
        floors = {"global-max-spread": 0.560, RULE: pair_floor}
        voice = {r: "PASS" if delta > f else "FAIL" for r, f in floors.items()}
        spans = []
        if name == "ckpt1400":
            spans = [{"text": " ".join(train[1000:1080]), "tokens": 80, "source": "train.txt", "offset": 1000,
                      "seed": int(SEED), "prompt_id": "0"}]
        arms.append({
            "name": name, "role": "candidate", "model": name, "distances": {SEED: 1.066 - delta},
            "mean_distance": 1.066 - delta, "spread": 0.0, "delta_cb": delta, "floors": floors, "voice": voice,
            "ratios": {r: delta / f for r, f in floors.items()}, "ratio": delta / pair_floor,
            "disagree": len(set(voice.values())) > 1,
            "overlap": 0.157 if copying == "COPIED" else 0.0, "longest_run": 80 if spans else 0, "spans": spans,
            "degeneration": {"rate": 0.3 if damage == "DAMAGE" else 0.0, "empty": 0.0, "repetition": 0.0,
                             "truncated": 0.0},
            "probe_pass_rate": 0.6 if damage == "DAMAGE" else 0.95, "copying": copying, "damage": damage,
            "bootstrap": None})
    sig = {"view": "stylometric", "n": N, "truncation_decides": False, "embedding_model": None,
           "embedding_revision": None, "rules": {"global-max-spread": "global-max-spread@1"}}
    return {"gate": "lv-glance", "rule": RULE, "ships": "ckpt475", "signature": sig,
            "signature_text": "view:stylometric", "control": {"arm": "base", "overlap": 0.0}, "arms": arms}


def glance_data(train_file: Path | None) -> dict[str, Any]:
    rows = make_generations()
    copied = verbatim_runs(rows, [train_file], N, None) if train_file is not None else None
    return {"gate": "lv-glance", "author": "Ada Marlowe", "score": make_result(), "amendments": [],
            "decisions": [], "run": {"source": "imported"}, "registration": None, "notices": [],
            "seeds": [SEED], "prompts": {str(i): p for i, p in enumerate(PROMPTS)},
            "copying": {"n": N, "tolerance": 0.02, "max_run": 50}, "damage": {"tolerance": 0.05,
                                                                              "truncation_decides": False},
            "generations": rows, "max_samples": 3, "rendered_at": "2026-12-03T10:00:00Z", "copied": copied}


@pytest.fixture(scope="module")
def train_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "train.txt"
    path.write_text(_as_prose(training_tokens()), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def glance_html(train_file: Path) -> str:
    return render_report(glance_data(train_file))


# -- the HTML: the standing, and every copied run marked ----------------------------------------


def test_the_standing_of_each_kind():
    def cand(**kw: Any) -> CandidateResult:
        base = {"name": "c", "voice": {RULE: "PASS"}, "copying": "NOT-COPIED", "damage": "NO-DAMAGE",
                "ratios": {RULE: 2.0}}
        return CandidateResult.from_json({**base, **kw})

    assert standing(cand(), RULE, "c").label == "ships"
    assert standing(cand(), RULE, "other").kind == "passes"
    assert standing(cand(copying="COPIED"), RULE, None).label == "blocked by COPYING"
    assert standing(cand(damage="DAMAGE"), RULE, None).label == "blocked by DAMAGE"
    both = standing(cand(copying="COPIED", damage="DAMAGE", voice={RULE: "FAIL"}), RULE, None)
    # The first failing axis in pipeline order (VOICE, SPECIFICITY, COPYING, DAMAGE) is named first.
    assert both.label == "VOICE FAIL · blocked by COPYING + DAMAGE" and not both.ok
    assert both.blockers == ("VOICE", "COPYING", "DAMAGE")
    assert standing(cand(voice={RULE: "FAIL"}), RULE, None).label == "VOICE FAIL"
    assert standing(cand(damage=None), RULE, None).label == "no verdict on DAMAGE"
    # The pick under a post-hoc rule says so on its headline.
    assert standing(cand(), RULE, "c", post_hoc=True).label == "ships under a POST-HOC rule"


class _Cells(HTMLParser):
    """Each sample cell's text as (piece, inside a <mark>) pairs."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.cells: list[tuple[str, str, list[tuple[str, bool]]]] = []   # (sample id, arm, pieces)
        self._sample = ""
        self._arm: str | None = None
        self._in_text = 0
        self._marks = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "article" and "sample" in cls:
            self._sample = a.get("id") or ""
        elif tag == "div" and "gen" in cls:
            self._arm = a.get("data-arm")
        elif tag == "div" and "text" in cls and self._arm is not None:
            self._in_text = 1
            self.cells.append((self._sample, self._arm, []))
        elif self._in_text:
            if tag == "div":
                self._in_text += 1
            if tag == "mark":
                self._marks += 1

    def handle_endtag(self, tag: str) -> None:
        if not self._in_text:
            return
        if tag == "mark":
            self._marks -= 1
        elif tag == "div":
            self._in_text -= 1
            if not self._in_text:
                self._arm = None

    def handle_data(self, data: str) -> None:
        if self._in_text:
            self.cells[-1][2].append((data, self._marks > 0))


_WORD = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)*")


def _unmarked_copies(html: str, train: list[str]) -> list[str]:
    """Every word of a sample that lies in an n-gram shared with the training text but is not marked."""
    grams = {tuple(train[i:i + N]) for i in range(len(train) - N + 1)}
    parser = _Cells()
    parser.feed(html)
    assert parser.cells, "no sample cells on the page"
    missing = []
    for sample, arm, pieces in parser.cells:
        text = "".join(p for p, _ in pieces)
        marked = [False] * len(text)
        pos = 0
        for piece, inside in pieces:
            if inside:
                marked[pos:pos + len(piece)] = [True] * len(piece)
            pos += len(piece)
        toks = [(m.group().casefold(), m.start(), m.end()) for m in _WORD.finditer(text)]
        words = [t for t, _, _ in toks]
        for i in range(len(words) - N + 1):
            if tuple(words[i:i + N]) in grams:
                for _, s, e in toks[i:i + N]:
                    if not all(marked[s:e]):
                        missing.append(f"{sample} {arm}: {text[s:e]!r} at {s}")
    return missing


def test_every_copied_run_of_a_sample_is_highlighted(glance_html: str):
    assert _unmarked_copies(glance_html, training_tokens()) == []
    # The listed span links to its row; the unlisted 80-token copy is marked as a further run.
    assert glance_html.count('<a class="copied" href="#span-3-0"') == 1
    parser = _Cells()
    parser.feed(glance_html)
    cell = next(p for s, a, p in parser.cells if s == "sample-1" and a == "ckpt1400")
    marked = " ".join(piece for piece, inside in cell if inside)
    assert len(_WORD.findall(marked)) == 80
    assert '<mark class="copied run"' in glance_html and "a mark with * is a further run" in glance_html
    # The 12-token run of a candidate that is NOT-COPIED overall is marked too: copied text is copied text.
    ckpt925 = next(p for s, a, p in parser.cells if s == "sample-1" and a == "ckpt925")
    assert len(_WORD.findall(" ".join(piece for piece, inside in ckpt925 if inside))) == 12


def test_without_the_training_text_the_page_says_only_listed_spans_are_marked():
    html = render_report(glance_data(None))
    assert "training text was not at hand" in html and '<mark class="copied run"' not in html
    # The checker sees what is then left unmarked: it is a real check, not a tautology.
    missing = _unmarked_copies(html, training_tokens())
    assert missing and all(m.startswith(("sample-1", "sample-2")) for m in missing)


def test_card_headlines_in_the_html(glance_html: str):
    kinds = {name: kind for kind, name in re.findall(r'data-standing="([\w-]+)">\n<h3><span>([^<]+)</span>',
                                                     glance_html)}
    assert kinds == {"ckpt475": "ships", "ckpt925": "voice-fail", "ckpt1400": "blocked", "ckpt1850": "blocked"}


def test_no_python_spelling_in_the_signature_table(glance_html: str):
    table = glance_html.split('<table class="signature">', 1)[1].split("</table>", 1)[0]
    assert "None" not in table and "False" not in table and "True" not in table
    assert "<th scope=\"row\">embedding_model</th><td><code>—</code>" in table
    assert "<th scope=\"row\">truncation_decides</th><td><code>no</code>" in table


# -- in a browser: at 1400 px, at 800 px, and printed -------------------------------------------

# (viewport width, media): a desktop, a narrow window, and a printed A4 page (its printable width at 96 dpi).
VIEWS = [(1400, "screen"), (800, "screen"), (718, "print")]

CARDS_JS = r"""
(() => {
  const lum = (c) => {
    const m = c.match(/[\d.]+/g).map(Number);
    const lin = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * lin(m[0]) + 0.7152 * lin(m[1]) + 0.0722 * lin(m[2]);
  };
  const paint = (el) => {
    // What the badge puts on the page: its fill if it has one, else the card's white.
    const bg = getComputedStyle(el).backgroundColor;
    return bg.startsWith('rgba(0, 0, 0, 0)') ? 'rgb(255, 255, 255)' : bg;
  };
  return [...document.querySelectorAll('article.card')].map((card) => {
    const st = card.querySelector('.standing');
    const cs = getComputedStyle(st);
    const r = st.getBoundingClientRect(), cr = card.getBoundingClientRect();
    const first = card.querySelector('.standing, .v');
    const fg = lum(cs.color), bg = lum(paint(st));
    return {
      name: card.querySelector('h3 > span').textContent, kind: card.dataset.standing,
      shown: st.innerText, aside: card.querySelector('.voice-aside').innerText,
      firstIsStanding: first === st,
      inside: r.width > 0 && r.height > 0 && r.left >= cr.left - 0.5 && r.right <= cr.right + 0.5
              && r.right <= document.documentElement.clientWidth + 0.5,
      border: parseFloat(cs.borderTopWidth), borderStyle: cs.borderTopStyle, weight: Number(cs.fontWeight),
      fontSize: parseFloat(cs.fontSize), contrast: (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05),
    };
  });
})()
"""

SIDES_JS = r"""
[...document.querySelectorAll('.side')].map((side) => {
  const box = side.getBoundingClientRect();
  const gap = parseFloat(getComputedStyle(side).columnGap) || 0;
  const rows = {};
  for (const g of side.querySelectorAll(':scope > .gen')) {
    const r = g.getBoundingClientRect();
    (rows[Math.round(r.top)] = rows[Math.round(r.top)] || []).push(r.width);
  }
  return {width: box.width, gap: gap, rows: Object.values(rows)};
})
"""

TEXT_BOXES_JS = r"""
[...document.querySelectorAll('.gen .text')].map((t) => ({
  hidden: t.scrollHeight - t.clientHeight, overflow: getComputedStyle(t).overflowY,
}))
"""


@pytest.fixture(scope="module")
def glance_file(glance_html: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("glance") / "lv-glance.html"
    path.write_text(glance_html, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    from helpers.cdp import Browser
    from helpers.dom import chromium

    b = Browser(chromium(), tmp_path_factory.mktemp("profile"))
    try:
        yield b
    finally:
        b.close()


@pytest.mark.browser
@pytest.mark.parametrize("width, media", VIEWS)
def test_a_copied_or_damaged_candidate_headline_says_it_does_not_ship(browser, glance_file: Path, width: int,
                                                                      media: str):
    browser.open(glance_file.resolve().as_uri(), width, media=media)
    cards = {c["name"]: c for c in browser.evaluate(CARDS_JS)}
    assert browser.console() == []
    shown = {name: " ".join(c["shown"].split()) for name, c in cards.items()}
    assert shown == {"ckpt475": "✓ SHIPS", "ckpt925": "✗ VOICE FAIL", "ckpt1400": "✗ BLOCKED BY COPYING",
                     "ckpt1850": "✗ BLOCKED BY DAMAGE"}
    # The VOICE ratio is beside the standing, not in its place.
    assert " ".join(cards["ckpt1400"]["aside"].split()) == f"VOICE PASS 18.0x under {RULE}"
    assert " ".join(cards["ckpt1850"]["aside"].split()) == f"VOICE PASS 6.4x under {RULE}"
    for c in cards.values():
        assert c["firstIsStanding"], f"{c['name']}: a verdict badge comes before the standing"
        assert c["inside"], f"{c['name']}: the standing is cut off or outside its card at {width}px {media}"
        assert c["contrast"] >= 4.5, f"{c['name']}: the standing's text has contrast {c['contrast']:.1f}"
    good = cards["ckpt475"]
    for name in ("ckpt925", "ckpt1400", "ckpt1850"):
        bad = cards[name]
        # A bad outcome is never the weaker-looking badge: as heavy, as big, a border at least as strong.
        assert bad["weight"] >= good["weight"] and bad["fontSize"] >= good["fontSize"]
        assert bad["border"] > good["border"], (name, bad["border"], good["border"])
    if media == "print":
        # Printed (backgrounds may be dropped; greyscale): a double border carries it, not a fill.
        assert all(cards[n]["borderStyle"] == "double" for n in ("ckpt925", "ckpt1400", "ckpt1850"))


@pytest.mark.browser
@pytest.mark.parametrize("width, media", VIEWS)
def test_five_arms_lay_out_in_full_rows(browser, glance_file: Path, width: int, media: str):
    browser.open(glance_file.resolve().as_uri(), width, media=media)
    sides = browser.evaluate(SIDES_JS)
    assert len(sides) == 3
    for side in sides:
        rows = side["rows"]
        assert sum(len(r) for r in rows) == 5
        if width >= 1200 and media == "screen":
            assert len(rows) == 1, rows   # every arm side by side
        for r in rows:
            # No orphan: every row spans the sample's width, and no box is squeezed.
            filled = sum(r) + side["gap"] * (len(r) - 1)
            assert filled >= side["width"] - 2, (width, media, rows)
            assert min(r) >= 200, (width, media, rows)


@pytest.mark.browser
def test_scroll_boxes_lose_no_text_in_print(browser, glance_file: Path):
    browser.open(glance_file.resolve().as_uri(), 1400)
    boxes = browser.evaluate(TEXT_BOXES_JS)
    assert any(b["hidden"] > 0 for b in boxes), "the test data should overflow a box on screen"
    browser.media("print")
    boxes = browser.evaluate(TEXT_BOXES_JS)
    assert all(b["hidden"] <= 1 and b["overflow"] == "visible" for b in boxes), boxes


def test_plots_keep_tied_seeds_apart_and_draw_fail_no_weaker(glance_html: str):
    from voicegate.report._svg import _apart

    assert _apart([100.0, 100.0, 100.0]) == [0.0, -11.0, 11.0]   # a three-way tie: three places
    assert _apart([100.0, 200.0, 100.5]) == [0.0, 0.0, -11.0]
    assert _apart([100.0, None]) == [0.0, 0.0]
    bars = {m["arm"]: m for m in (
        dict(re.findall(r'([\w-]+)="([^"]*)"', tag)) for tag in re.findall(r'<rect [^>]*class="delta-bar"[^>]*>',
                                                                            glance_html))
        for m in [{"arm": m["data-arm"], "verdict": m["data-verdict"], "width": float(m.get("stroke-width", 1)),
                   "fill": m["fill"]}]}
    assert bars["ckpt925"]["verdict"] == "FAIL" and bars["ckpt475"]["verdict"] == "PASS"
    assert bars["ckpt925"]["width"] > bars["ckpt475"]["width"] and bars["ckpt925"]["fill"] == "url(#vg-bad)"
    assert re.search(r'class="delta-verdict" fill="#a4161a">✗ FAIL</text>', glance_html)
    # Two floors at one place read as one label, not two letters run together.
    assert ">G=P</text>" in glance_html


def test_a_run_around_a_listed_span_is_marked_on_both_sides():
    from voicegate.report._spans import segments
    from voicegate.scoring._result import Span

    text = "Plain start. One two three four five six seven. Plain end."
    run = (text.index("One"), text.index("seven") + len("seven"))
    segs = segments(text, [Span.from_json({"text": "three four"})], [run])
    assert [(s.text, s.span, s.run) for s in segs] == [
        ("Plain start. ", None, False), ("One two ", None, True), ("three four", 0, False),
        (" five six seven", None, True), (". Plain end.", None, False)]
    assert "".join(s.text for s in segs) == text
    # Without runs: exactly the listed span, as before.
    assert [s.run for s in segments(text, [Span.from_json({"text": "three four"})])] == [False, False, False]
