"""The entries' exact bytes: README verdict block, compose comment, record sections, run provenance."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from helpers.bronte import README, as_shipped, bronte_workspace, result, scored_workspace

from voicegate.artifacts import record_score, result_sha256
from voicegate.run._manifest import RunManifest
from voicegate.spec._registration import check_registered
from voicegate.spec._spec import load_spec

EPOCH = "1789603200"  # 2026-09-17T00:00:00Z
L475 = ("ckpt475: VOICE FAIL (global-max-spread: +0.193 vs floor 0.251, 0.8x; pairwise-max-spread would PASS 2.1x "
        "(floor 0.091): DISAGREE) · NOT-COPIED · NO-DAMAGE")
L925 = ("ckpt925: VOICE FAIL (global-max-spread: +0.210 vs floor 0.251, 0.8x; pairwise-max-spread: FAIL 0.8x "
        "(floor 0.251)) · NOT-COPIED · NO-DAMAGE")


@pytest.fixture
def scored(tmp_path: Path, compose_fixture: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    return scored_workspace(tmp_path / "ws", as_shipped(compose_fixture), ship=False, amend=False)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_readme_entry_bytes(scored: Path) -> None:
    spec = load_spec(scored, "lv-bronte")
    from voicegate.run._store import generations_hash, read_rows

    # The recorded result's sha256, recomputed from the same inputs.
    digest = result_sha256(result("global-max-spread", generations_hash(read_rows(spec.generations_path))))
    body = (f"{README}\n### voicegate verdict — lv-bronte — score 2026-09-17T00:00:00Z\n\n"
            "**In force:** rule global-max-spread, as registered; ships: none; error rates: not stated.\n\n"
            "Rule `global-max-spread@1`; both floors shown.\n"
            f"- {L475}\n- {L925}\n- Ships (the rule's recommendation): none.\n\n"
            f"Gate record: `gates/lv-bronte.md` (result sha256 `{digest[:16]}`).\n\n").encode()
    expected = body + f"<!-- voicegate:entry 1 sha256={_sha(body)} prev=none -->\n".encode()
    assert (scored / "adapters/lv-bronte-4b-v1/README.md").read_bytes() == expected


def test_compose_entry_bytes(scored: Path, compose_fixture: Path) -> None:
    shipped = as_shipped(compose_fixture)
    first = ("      # voicegate 2026-09-17 lv-bronte score (rule global-max-spread@1) — in force: rule "
             "global-max-spread, as registered; ships: none; error rates: not stated")
    lines = [first,
             f"      #   {L475}", f"      #   {L925}",
             "      #   ships (rule's recommendation): none; record gates/lv-bronte.md"]
    body = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
    block = "".join(ln + "\n" for ln in lines) + \
        f"      # voicegate:entry 1 lines=5 body={body} sha256={_sha(shipped)}\n"
    item = b"      - lv-bronte=/adapters/lv-bronte-4b-v1\n"
    assert (scored / "deploy/compose.yaml").read_bytes() == shipped.replace(item, block.encode() + item)


def test_record_score_entry(scored: Path) -> None:
    record = (scored / "gates/lv-bronte.md").read_text(encoding="utf-8")
    spec = load_spec(scored, "lv-bronte")
    reg = check_registered(spec)
    assert record.startswith("# Gate record: lv-bronte\n\nAuthor: Charlotte Brontë. Spec: "
                             "`preregistrations/lv-bronte.yaml`.\n\nThis file is append-only.")
    assert "\n## Score — 2026-09-17T00:00:00Z — rule global-max-spread@1\n" in record
    assert reg.spec_file_sha256 == hashlib.sha256((scored / "preregistrations/lv-bronte.yaml").read_bytes()).hexdigest()
    assert (f"**Registration.** Spec `preregistrations/lv-bronte.yaml`, sha256 `{reg.spec_sha256}` (canonical), "
            f"file sha256 `{reg.spec_file_sha256}` (raw bytes, as `sha256sum` prints), registered "
            f"{reg.registered_at}, commit `{reg.commit}`. Deciding floor rule: `global-max-spread@1`; the other rule "
            "is shown beside it, never applied.") in record
    header = ("| arm | role | delta_cb | spread | floor global-max-spread | VOICE global-max-spread | "
              "floor pairwise-max-spread | VOICE pairwise-max-spread | DISAGREE | overlap | longest run | COPYING | "
              "probes | degeneration | DAMAGE |")
    assert header in record
    assert "| base | base (control) | — | 0.040 | — | — | — | — | — | 0.000 | 0 | control | — | 0.00 | control |" \
        in record
    assert f"**Verdicts.**\n- {L475}\n- {L925}\n" in record
    assert re.search(r"\nResult sha256: `[0-9a-f]{64}`\n\n<!-- voicegate:entry 1 sha256=[0-9a-f]{64} prev=none -->\n$",
                     record)


def test_generated_run_provenance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    root = bronte_workspace(tmp_path / "ws", None)
    spec = load_spec(root, "lv-bronte")
    manifest = {"source": "generated", "seat": {"url": "http://fv-ml1:8027/v1", "version": "0.32.0"},
                "counts": {"total": 360}}
    lines = record_score(spec, check_registered(spec), result("global-max-spread"), RunManifest.from_json(manifest))
    assert lines[0] == "gates/lv-bronte.md: appended entry 1 (score)"
    assert lines[2] == ("deploy/compose.yaml: compose comment not written — compose file not found "
                        "(the record and README carry the entry)")
    record = (root / "gates/lv-bronte.md").read_text(encoding="utf-8")
    assert "**Run.** Generated by voicegate on seat http://fv-ml1:8027/v1 (vLLM 0.32.0). 0 generations" in record
    assert "Imported" not in record


def test_missing_readme_is_created(tmp_path: Path) -> None:
    root = bronte_workspace(tmp_path / "ws", None)
    (root / "adapters/lv-bronte-4b-v1/README.md").unlink()
    spec = load_spec(root, "lv-bronte")
    record_score(spec, check_registered(spec), result("global-max-spread"), None)
    readme = (root / "adapters/lv-bronte-4b-v1/README.md").read_text(encoding="utf-8")
    assert readme.startswith("### voicegate verdict — lv-bronte — score ")
