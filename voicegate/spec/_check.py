"""Validation: a parsed spec mapping in, checked values out (or one VoicegateError naming file, key, problem).

Pure on purpose: no file is opened, no glob matched and no environment read here
(`_resolve` does that), so a spec can be checked anywhere, and what a value may be
is decided by its declaration in `_schema` alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from voicegate._errors import VoicegateError
from voicegate.spec import _schema
from voicegate.spec._schema import Key, Schema
from voicegate.spec._types import Problem, Records, Section, author_key
from voicegate.spec._views import view_spec

DEFAULT_NAME_PATTERN = r"lv-[a-z0-9-]+"

Fail = Callable[[str, str], VoicegateError]


def failer(file: Path | str) -> Fail:
    """Builds the one-line messages: '<file>: <key>: <problem>'."""

    def fail(key: str, problem: str) -> VoicegateError:
        return VoicegateError(f"{file}: {key}: {problem}" if key else f"{file}: {problem}")

    return fail


def check_gate_name(name: str, pattern: str = DEFAULT_NAME_PATTERN) -> str:
    """Refuse a name before it becomes part of any path."""
    if not re.fullmatch(pattern, name) or "/" in name or ".." in name:
        raise VoicegateError(f"bad adapter name {name!r}: must match {pattern}")
    return name


def _did_you_mean(name: object, allowed: set[str]) -> str:
    """'; did you mean X?' for a key one slip away from a declared one (a typo, a missing 's'), else ''."""
    import difflib

    if not isinstance(name, str):
        return ""
    folded = {a.lower().replace("-", "_"): a for a in allowed}
    close = difflib.get_close_matches(name.lower().replace("-", "_"), list(folded), n=1, cutoff=0.6)
    return f"; did you mean {folded[close[0]]}?" if close else ""


def _join(key: str, name: object) -> str:
    return f"{key}.{name}" if key else str(name)


def _check(k: Key, value: Any, key: str, fail: Fail) -> Any:
    try:
        return k.kind.check(value)
    except Problem as exc:
        raise fail(key + exc.sub, exc.message) from None


def _walk(schema: Schema, parent: str, mapping: dict[str, Any], key: str, out: dict[str, Any], fail: Fail) -> None:
    """Check `mapping`, declared under `parent`, into `out` (dotted path -> value, defaults filled in)."""
    children = schema.children(parent)
    allowed = {c.name for c in children}
    for name in mapping:
        if name not in allowed:
            raise fail(_join(key, name), f"unknown key{_did_you_mean(name, allowed)} "
                                         f"(allowed: {', '.join(sorted(allowed))})")
    missing = [c.name for c in children if c.required and c.name not in mapping]
    if len(missing) == 1:
        raise fail(_join(key, missing[0]), "required key is missing")
    if missing:
        # All of them at once: a new spec is not written one refusal at a time.
        names = ", ".join(_join(key, m) for m in missing)
        raise fail(key, f"required keys are missing: {names}")
    for c in children:
        sub = _join(key, c.name)
        value = mapping.get(c.name)
        if value is None and not c.required:  # absent, or written as null: the default
            if isinstance(c.kind, Section):
                _walk(schema, c.path, {}, sub, out, fail)
            else:
                out[c.path] = c.default
            continue
        checked = _check(c, value, sub, fail)
        if isinstance(c.kind, Section):
            _walk(schema, c.path, checked, sub, out, fail)
        elif isinstance(c.kind, Records):
            items: list[dict[str, Any]] = []
            for i, item in enumerate(checked):
                item = _check(Key(c.item_path, Section(), ""), item, f"{sub}[{i}]", fail)
                got: dict[str, Any] = {}
                _walk(schema, c.item_path, item, f"{sub}[{i}]", got, fail)
                items.append({path.rsplit(".", 1)[-1]: v for path, v in got.items()})
            out[c.path] = items
        else:
            out[c.path] = checked


def check_mapping(raw: Any, fail: Fail, schema: Schema, *, key: str = "") -> dict[str, Any]:
    """Every declared key of `schema` checked: dotted path -> value; a list of mappings -> a list of dicts."""
    mapping = _check(Key("", Section(), ""), raw, key, fail)
    out: dict[str, Any] = {}
    _walk(schema, "", mapping, key, out, fail)
    return out


def check_spec(raw: Any, file: Path | str, *, name_pattern: str = DEFAULT_NAME_PATTERN,
               schema: Schema | None = None) -> dict[str, Any]:
    """The spec's values by dotted path, every default filled in, every rule across keys checked.

    `schema` defaults to `_schema.spec_schema()`, looked up at call time: a key added to `SPEC_SCHEMA`, or an
    artifact kind to `ARTIFACT_KINDS`, is a key checked here.
    """
    fail = failer(file)
    if raw is None:
        raise fail("", "empty spec")
    values = check_mapping(raw, fail, schema or _schema.spec_schema())
    _across_keys(values, fail, name_pattern)
    return values


def _across_keys(v: dict[str, Any], fail: Fail, name_pattern: str) -> None:
    """The rules no single declaration can state: they relate two or more keys."""
    try:
        check_gate_name(v["gate"], name_pattern)
    except VoicegateError as exc:
        raise fail("gate", str(exc)) from None
    arms = v["arms"]
    bases = [a for a in arms if a["role"] == "base"]
    if len(bases) != 1:
        raise fail("arms", f"needs exactly one arm with role: base, found {len(bases)}")
    if not any(a["role"] == "candidate" for a in arms):
        raise fail("arms", "needs at least one candidate arm")
    base = bases[0]
    for a in arms:
        # The A-vs-A arm is the base's own weights under fresh seeds: its model IS the base's.
        if a["role"] == "a-vs-a" and a["model"] != base["model"]:
            raise fail("arms", f"A-vs-A arm {a['name']} must use the base's model {base['model']} "
                               f"(it names {a['model']})")
    for attr in ("name", "model"):
        names = [a[attr] for a in arms if attr == "name" or a["role"] != "a-vs-a"]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise fail("arms", f"duplicate arm {attr}: {', '.join(dupes)}")
    if not isinstance(v["prompts"], str):
        check_prompt_list(v["prompts"], fail)
    view = view_spec(v["voice.view"])
    if view.needs_background and v["corpora.background"] is None:
        # Without other authors the z-scores come from the target alone and the
        # cosine is noise (docs/design.md §3), so the stylometric view requires it.
        raise fail("corpora.background", "must be a non-empty list of file globs")
    if view.model is not None and v[view.model.key] is None:
        raise fail(view.model.key, "must be a non-empty string")
    if v["copying.max_run"] < v["copying.n"]:
        raise fail("copying.max_run", f"must be >= copying.n ({v['copying.n']})")
    for impostor, _ in v["corpora.impostors"] or ():
        if author_key(impostor) == author_key(v["author"]):
            raise fail(f"corpora.impostors.{impostor}",
                       f"{impostor!r} is the gate author ({v['author']!r}); impostors are OTHER authors")
    candidates = {a["name"] for a in arms if a["role"] == "candidate"}
    if any(p not in candidates for p in v["prefer"]):
        raise fail("prefer", "must list candidate arm names, most preferred first")
    if v["floor.looks"] is not None:
        _check_looks(v, fail)


def _check_looks(v: dict[str, Any], fail: Fail) -> None:
    from voicegate.spec._rules import get_rule
    from voicegate.spec._sequential import check_looks

    rule = get_rule(v["floor.rule"])
    if not rule.has_power_model or rule.paired:
        raise fail("floor.looks", f"a sequential design needs a t rule (welch-t, welch-t-min-effect), not "
                                  f"{v['floor.rule']}: its boundaries are on the t test's p-value")
    problem = check_looks(v["floor.looks"], len(v["seeds"]))
    if problem is not None:
        raise fail("floor.looks", problem)


def check_prompt_list(prompts: tuple[tuple[str, str], ...], fail: Fail) -> tuple[tuple[str, str], ...]:
    """The prompts that will be sent: at least one non-empty, ids unique (inline or read from a file)."""
    kept = tuple((pid, text) for pid, text in prompts if text.strip())
    if not kept:
        raise fail("prompts", "no non-empty prompt")
    ids = [pid for pid, _ in kept]
    if len(set(ids)) != len(ids):
        raise fail("prompts", "prompt ids are not unique")
    return kept
