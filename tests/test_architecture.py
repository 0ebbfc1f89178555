"""Architecture: only `scoring/_result.py` knows a score result's JSON key names.

Every other module reads a result by attribute (`arm.delta_cb`, `result.ships`).
This test greps `voicegate/` (Python modules and templates) for a subscript or
`.get(` with one of the result's key names and fails if any remain.

Honesty of the grep:
- It is scoped to keys that only ever name a result field (`delta_cb`,
  `floors`, `ratios`, `disagree`, `spread`, `distances`, `ships`, ...).
  `"copying"`, `"damage"` and `"voice"` are also sections of a gate SPEC
  (`spec["copying"]` in the spec validator is not a result): they are checked
  everywhere except `voicegate/spec/`, which never sees a result.
- `voicegate/scoring/_result.py` is the one allowed reader and is excluded.
- A line ending in `# not-a-result: <what it is>` reads another structure that
  shares a key name (run.json's counts, the signature); the marker says which.
- KNOWN_REMAINING lists modules not yet converted; each entry must still
  contain a hit, so the list can only shrink. It is empty: the report page,
  the last to go, now reads typed results (`report/_data.py`) and hands typed
  views to its template and plots.
On the tree before `_result.py` existed this fails on artifacts/_entries.py,
artifacts/_format.py, cli/_score.py, report/_table.py and the record template;
before the report was converted, on report/_page.py, report/_svg.py and the
report template.
"""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "voicegate"
ALLOWED = {"scoring/_result.py"}
KNOWN_REMAINING: set[str] = set()

RESULT_ONLY = ("delta_cb", "floors", "ratio", "ratios", "disagree", "overlap", "spread", "distances", "ships",
               "mean_distance", "longest_run", "ngrams", "probe_pass_rate", "degeneration", "spans", "bootstrap",
               "identical_to_base", "signature_text", "voice_decides", "pool_words", "ruler", "heldout_auc",
               "author_auc")
SHARED_WITH_SPEC = ("copying", "damage", "voice")


def _pattern(keys: tuple[str, ...]) -> re.Pattern[str]:
    names = "|".join(keys)
    return re.compile(rf"""(\[\s*['"]({names})['"]\s*\]|\.get\(\s*['"]({names})['"])""")


def hits(root: Path = PACKAGE) -> dict[str, list[str]]:
    only, shared = _pattern(RESULT_ONLY), _pattern(SHARED_WITH_SPEC)
    found: dict[str, list[str]] = {}
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.j2")]):
        rel = path.relative_to(root).as_posix()
        if rel in ALLOWED:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "# not-a-result:" in line:
                continue
            if only.search(line) or (not rel.startswith("spec/") and shared.search(line)):
                found.setdefault(rel, []).append(f"{rel}:{n}: {line.strip()}")
    return found


def test_no_module_reads_a_result_by_string_key() -> None:
    found = hits()
    offenders = [line for rel, lines in found.items() if rel not in KNOWN_REMAINING for line in lines]
    assert not offenders, "result read by string key outside scoring/_result.py:\n" + "\n".join(offenders)


def test_known_remaining_is_not_stale() -> None:
    # A converted module must leave the list, so the exception can only shrink.
    stale = KNOWN_REMAINING - set(hits())
    assert not stale, f"no longer reads results by key; remove from KNOWN_REMAINING: {sorted(stale)}"


def test_the_grep_catches_a_key_read(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text('x = arm["delta_cb"]\ny = arm.get("copying")\n', encoding="utf-8")
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "v.py").write_text('t = spec["copying"]\n', encoding="utf-8")
    assert list(hits(tmp_path)) == ["m.py"] and len(hits(tmp_path)["m.py"]) == 2
