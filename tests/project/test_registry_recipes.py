"""docs/architecture.md's recipes, followed inside a test: a rule, a view and an artifact kind defined only here.

Each throwaway is given exactly the parts its recipe ("Where to add …") lists — registered by monkeypatching
the one registry the recipe names, its templates in a loader folder of this test's, its docs lines written
into a copy of docs/ — and then every check of the registry battery (`helpers/registry_checks.py`, the
same functions `test_registries.py` runs over the built-in entries) holds for it, end to end: a spec names
it, `score`, `ship`, `amend`, `note` and `verify` handle it. Then each required part is left out in turn,
and the check named for that part fails. No other test knows these entries.
"""

from __future__ import annotations

import datetime as _dt
import shutil
import statistics
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import registry_checks as rc
from helpers.registry_checks import Ctx
from helpers.workspace import Templates

from voicegate.scoring import _views as scoring_views
from voicegate.spec import _artifact_kinds, _rules, _views

# -- a floor rule -------------------------------------------------------------------------------------------------


def _median_spread(distances: Any, base: str, candidate: str, effect: Any) -> float:
    return float(statistics.median(_rules.spread(per_seed) for per_seed in distances.values()))


TOY_RULE = _rules.FloorRule(id="median-spread", version=1, registered=_dt.date(2026, 11, 30),  # type: ignore[arg-type]
                            summary="floor = the median seed spread of the run's arms", _floor=_median_spread)
RULE_HELP = "median-spread (v1, registered 2026-11-30: floor = the median seed spread of the run's arms)"
RULE_CONCEPT = "  - `median-spread` (v1, registered 2026-11-30): the median seed spread of the run's arms.\n"


# -- a voice view: mean word length against the author's --------------------------------------------------------

TOY_VIEW = _views.ViewSpec("word-length", keys=("voice.mfw",), signature_keys=("word_length_mfw",),
                           title="word length")


class WordLength(scoring_views.View):
    """d(a, s) = |mean word length of the pool − the author's|, in characters."""

    descriptor = TOY_VIEW

    def corpus_files(self, targets: Sequence[scoring_views.Target]) -> tuple[Path, ...]:
        return ()

    def measure(self, cache: Any, cells: Any, target: scoring_views.Target) -> scoring_views.Measured:
        words = [w for p in target.files for w in cache.read_text(p).split()]
        author = sum(map(len, words)) / len(words)
        chars = np.asarray([sum(len(t) for t in cells.tokens(i)) for i in range(len(cells.rows))], dtype=float)
        dist: dict[str, dict[int, float]] = {}
        for (arm, seed), rows in cells.by_cell.items():
            dist.setdefault(arm, {})[seed] = float(abs(chars[rows].sum() / cells.lengths[rows].sum() - author))

        def pool(arm: str, seed: int, prompts: Sequence[str]) -> scoring_views.Pool:
            c, n = (cells.cell_matrix(arm, seed, prompts, v) for v in (chars, cells.lengths))
            return lambda w: np.abs((w @ c) / (w @ n) - author)

        return scoring_views.Measured(dist, pool)

    def signature(self) -> dict[str, Any]:
        return {"word_length_mfw": self.spec.voice.mfw}

    @staticmethod
    def signature_parts(params: Mapping[str, Any]) -> list[str]:
        return [f"wl:{params.get('word_length_mfw')}"]


# -- an artifact kind: a changelog, markdown-chained -------------------------------------------------------------

TOY_KIND = _artifact_kinds.ArtifactKind("changelog", "the changelog", "changelog",
                                        "the gate's changelog, e.g. `CHANGELOG.md`", "markdown",
                                        "changelog_{event}.md.j2")
TEMPLATES = {
    "changelog_score.md.j2": "## {{ date }} — {{ gate }} scored under {{ result.rule | rule_sig }}\n\n"
                             "Ships: {{ result.ships or \"none\" }}.\n",
    "changelog_ship.md.j2": "## {{ date }} — {{ gate }}: {{ arm.name }} shipped\n\nReason: {{ reason }}\n",
    "changelog_amend.md.j2": "## {{ date }} — {{ gate }} amended: {{ rule_from | rule_sig }} → "
                             "{{ rule_to | rule_sig }}\n",
    "changelog_note.md.j2": "## {{ date }} — {{ gate }}: a note\n\n{{ text }}\n",
}


# -- the parts, given and left out ----------------------------------------------------------------------------------


@dataclass
class Recipe:
    """A throwaway entry and its parts: `give(part)` puts one in place (undone with the test's monkeypatch)."""

    entry: Any
    checks: tuple[Callable[..., None], ...]
    parts: Mapping[str, Callable[[], None]]

    def give(self, *, without: str | None = None) -> None:
        for name, part in self.parts.items():
            if name != without:
                part()


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Templates:
    """The reference workspace, built once for the module (with the toy kind: once more) and copied per check."""
    return Templates(tmp_path_factory.mktemp("recipes"))


@pytest.fixture
def ctx(tmp_path: Path, templates: Templates) -> Ctx:
    docs = tmp_path / "docs"
    shutil.copytree(rc.DOCS, docs)
    return Ctx(tmp_path / "scratch", docs=docs, templates=templates)


def _regenerate_reference(ctx: Ctx) -> None:
    """The recipe's `write_reference`, run on the test's copy of docs/reference.md."""
    from voicegate.spec._schema import write_reference

    write_reference(ctx.docs / "reference.md")


def _append(ctx: Ctx, name: str, text: str) -> None:
    path = ctx.docs / name
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


@pytest.fixture
def recipes(ctx: Ctx, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Recipe]]:
    from voicegate.artifacts import _format
    from voicegate.cli import _entries as cli_entries
    from voicegate.report import _svg

    def toy_templates(names: Sequence[str]) -> Callable[[], None]:
        def give() -> None:
            import jinja2

            folder = tmp_path / "templates"
            folder.mkdir(exist_ok=True)
            for name in names:
                (folder / name).write_text(TEMPLATES[name], encoding="utf-8")
            for markdown in (True, False):
                env = _format.env(markdown=markdown)
                monkeypatch.setattr(env, "loader", jinja2.ChoiceLoader([jinja2.FileSystemLoader(str(folder)),
                                                                        env.loader]))
        return give

    def kind_row() -> None:
        _artifact_kinds.ARTIFACT_KINDS.append(TOY_KIND)  # the one list every reader holds; removed after the test

    # the registries' own order: a part that regenerates docs runs after the registry entry it documents
    yield {
        "rule": Recipe(TOY_RULE, rc.RULE_CHECKS, {
            "FloorRule in RULES": lambda: monkeypatch.setitem(_rules.RULES, TOY_RULE.id, TOY_RULE),
            "cli/_entries.RULES_HELP": lambda: monkeypatch.setattr(
                cli_entries, "RULES_HELP", cli_entries.RULES_HELP.removesuffix(").") + "); " + RULE_HELP + "."),
            "report/_svg.FLOOR_STYLE": lambda: monkeypatch.setitem(_svg.FLOOR_STYLE, TOY_RULE.id,
                                                                   (_free_letter(), "2 2")),
            "docs/concepts.md": lambda: _append(ctx, "concepts.md", RULE_CONCEPT),
            "docs/reference.md regenerated": lambda: _regenerate_reference(ctx),
        }),
        "view": Recipe(TOY_VIEW, rc.VIEW_CHECKS, {
            "ViewSpec in VIEW_SPECS": lambda: monkeypatch.setitem(_views.VIEW_SPECS, TOY_VIEW.name, TOY_VIEW),
            "View class in VIEWS": lambda: monkeypatch.setitem(scoring_views.VIEWS, TOY_VIEW.name, WordLength),
            "docs/reference.md regenerated": lambda: _regenerate_reference(ctx),
        }),
        "kind": Recipe(TOY_KIND, rc.KIND_CHECKS, {
            "ArtifactKind in ARTIFACT_KINDS": kind_row,
            "its four templates": toy_templates(list(TEMPLATES)),
            "docs/reference.md regenerated": lambda: _regenerate_reference(ctx),
        }),
    }
    if TOY_KIND in _artifact_kinds.ARTIFACT_KINDS:
        _artifact_kinds.ARTIFACT_KINDS.remove(TOY_KIND)


def _free_letter() -> str:
    """A letter no registered rule's floor mark uses (the recipe: a letter of its own)."""
    from voicegate.report._svg import FLOOR_STYLE

    return next(c for c in "DQZYVUKJ" if c not in {letter for letter, _ in FLOOR_STYLE.values()})


def _failing(entry: Any, checks: Sequence[Callable[..., None]], ctx: Ctx) -> dict[str, str]:
    """The checks that fail for `entry`, each with its message."""
    failed = {}
    for check in checks:
        try:
            check(entry, ctx)
        except AssertionError as exc:
            failed[check.__name__] = str(exc).splitlines()[0]
    return failed


# -- the recipes, followed ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("what", ["rule", "view"])
def test_a_throwaway_passes_every_check_of_its_registry(what: str, recipes: dict[str, Recipe], ctx: Ctx) -> None:
    recipe = recipes[what]
    recipe.give()
    entries = {"rule": rc.rules, "view": rc.views}[what]()
    assert recipe.entry in entries  # the battery's parametrization reads the registry: it is there
    assert _failing(recipe.entry, recipe.checks, ctx) == {}


def test_a_throwaway_artifact_kind_passes_every_check_and_every_event(recipes: dict[str, Recipe], ctx: Ctx) -> None:
    recipe = recipes["kind"]
    recipe.give()
    assert TOY_KIND in rc.kinds()
    assert _failing(TOY_KIND, recipe.checks, ctx) == {}
    for event in rc.events():
        for check in rc.KIND_EVENT_CHECKS:
            check(TOY_KIND, event, ctx)
    # the toy's entries went where its templates say, beside the built-in kinds' (which still verify)
    story = rc.kind_story(TOY_KIND, ctx)
    assert story["before"] == 0 and story["note"][0] == 4
    text = story["path"].read_text(encoding="utf-8")
    assert "scored under global-max-spread@1" in text and "amended: global-max-spread@1 → pairwise-max-spread@1" in text
    assert "BROKEN" in story["hand edit"][1] and "changelog" in story["hand edit"][1]


@pytest.mark.parametrize(("what", "left_out", "fails"), [
    pytest.param(what, left_out, fails, id=f"{what}-without-{left_out.split(' ')[0].replace('/', '.')}")
    for what, left_out, fails in (
        ("rule", "cli/_entries.RULES_HELP", "rule_spelled_out_in_amend_help"),
        ("rule", "report/_svg.FLOOR_STYLE", "rule_styled_in_the_report"),
        ("rule", "docs/concepts.md", "rule_named_in_the_docs"),
        ("rule", "docs/reference.md regenerated", "rule_named_in_the_docs"),
        ("view", "View class in VIEWS", "view_descriptor_registered"),
        ("view", "docs/reference.md regenerated", "view_listed_in_the_reference"),
        ("kind", "docs/reference.md regenerated", "kind_documented"),
    )])
def test_a_part_left_out_fails_the_check_named_for_it(what: str, left_out: str, fails: str,
                                                      recipes: dict[str, Recipe], ctx: Ctx) -> None:
    recipe = recipes[what]
    recipe.give(without=left_out)
    cheap = [c for c in recipe.checks if c.__name__ not in ("rule_renders_in_every_entry", "kind_end_to_end",
                                                             "view_measures_every_arm_and_seed")]
    failed = _failing(recipe.entry, cheap, ctx)
    assert fails in failed, f"leaving out {left_out} failed only {failed}"
    assert (getattr(recipe.entry, "id", None) or recipe.entry.name) in failed[fails]  # the message names it


def test_a_kind_without_its_note_template_fails_at_the_template_check(recipes: dict[str, Recipe], ctx: Ctx,
                                                                      tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The recipe's old "three templates, one per event: score, ship, amend": `note` is an event too."""
    recipe = recipes["kind"]
    recipe.give()
    (tmp_path / "templates" / "changelog_note.md.j2").unlink()
    with pytest.raises(AssertionError, match="template changelog_note.md.j2 not found"):
        rc.kind_templates(TOY_KIND, ctx)
    with pytest.raises(AssertionError, match="changelog_note.md.j2"):
        rc.kind_event_template(TOY_KIND, "note", ctx)
    rc.kind_event_template(TOY_KIND, "amend", ctx)


def test_a_kind_of_a_chain_format_without_behaviour_fails_the_chain_check(recipes: dict[str, Recipe],
                                                                          ctx: Ctx) -> None:
    from dataclasses import replace

    jsonl = replace(TOY_KIND, chain="jsonl")  # the recipe's JSON artifact, its ChainFormat and _Writer not written
    with pytest.raises(AssertionError, match="chain format 'jsonl' not in artifacts/_chain.CHAINS"):
        rc.kind_chain_format(jsonl, ctx)


def test_a_view_reading_an_undeclared_key_fails_the_key_check(ctx: Ctx) -> None:
    from dataclasses import replace

    with pytest.raises(AssertionError, match="key voice.word_scale is not declared in spec/_schema.py"):
        rc.view_keys_declared(replace(TOY_VIEW, keys=("voice.word_scale",)), ctx)


def test_a_rule_not_in_the_registry_fails_the_signature_check(ctx: Ctx) -> None:
    with pytest.raises(AssertionError, match="median-spread: not registered under its own id in RULES"):
        rc.rule_signature_and_date(TOY_RULE, ctx)
