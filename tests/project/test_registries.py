"""Every floor rule, voice view and artifact kind (and kind × event) through one battery of named checks.

As scikit-learn's `parametrize_with_checks` runs every estimator through the same checks: the entries are
read from the registries (`spec/_rules.RULES`, `spec/_views.VIEW_SPECS` with `scoring/_views.VIEWS`,
`spec/_artifact_kinds.ARTIFACT_KINDS`) when the tests are collected, so a rule, view or kind added in the
code is checked here with no test edited, and a part it lacks fails a check named for that part
(`helpers/registry_checks.py` says what each check holds).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from helpers.registry_checks import (
    KIND_CHECKS,
    KIND_EVENT_CHECKS,
    RULE_CHECKS,
    VIEW_CHECKS,
    Ctx,
    events,
    kinds,
    rules,
    views,
)
from helpers.workspace import Templates


@pytest.fixture(scope="module")
def module_ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ctx]:
    """One context for the module: the reference workspace built once and copied per check, each kind's
    story (score, ship, amend, note, a hand edit) told once for its kind × event checks."""
    where = tmp_path_factory.mktemp("registries")
    yield Ctx(where / "scratch", templates=Templates(where / "templates"))


def _cases(entries: list[Any], checks: tuple[Callable[..., None], ...], name: Callable[[Any], str]) -> list[Any]:
    return [pytest.param(entry, check, id=f"{name(entry)}-{check.__name__}") for entry in entries for check in checks]


@pytest.mark.parametrize(("rule", "check"), _cases(rules(), RULE_CHECKS, lambda r: r.id))
def test_rule(rule: Any, check: Callable[[Any, Ctx], None], module_ctx: Ctx) -> None:
    check(rule, module_ctx)


@pytest.mark.parametrize(("view", "check"), _cases(views(), VIEW_CHECKS, lambda v: v.name))
def test_view(view: Any, check: Callable[[Any, Ctx], None], module_ctx: Ctx) -> None:
    check(view, module_ctx)


@pytest.mark.parametrize(("kind", "check"), _cases(kinds(), KIND_CHECKS, lambda k: k.name))
def test_artifact_kind(kind: Any, check: Callable[[Any, Ctx], None], module_ctx: Ctx) -> None:
    check(kind, module_ctx)


@pytest.mark.parametrize(("kind", "event", "check"), [
    pytest.param(kind, event, check, id=f"{kind.name}-{event}-{check.__name__}")
    for kind in kinds() for event in events() for check in KIND_EVENT_CHECKS])
def test_artifact_kind_event(kind: Any, event: str, check: Callable[[Any, str, Ctx], None], module_ctx: Ctx) -> None:
    check(kind, event, module_ctx)


def test_every_registry_is_checked_over_what_it_holds_now() -> None:
    """The parametrization above is read from the registries themselves, not a list typed here."""
    from voicegate.scoring._views import VIEWS
    from voicegate.spec import ARTIFACT_KINDS, EVENTS, RULES, VIEW_SPECS

    assert [r.id for r in rules()] == list(RULES)
    assert [v.name for v in views()] == list(VIEW_SPECS) == list(VIEWS)
    assert [k.name for k in kinds()] == [k.name for k in ARTIFACT_KINDS] and events() == EVENTS
