"""`voicegate report GATE`: the real CLI on a registered lv-bronte workspace with stored results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers.report_data import GATE, PROMPTS, SEEDS, reference_data, write_run
from helpers.workspace import cli, make_workspace

from voicegate.run._store import generations_hash, read_rows
from voicegate.spec._registration import register, spec_sha256
from voicegate.spec._spec import load_spec


def _spec() -> dict:
    return {
        "gate": GATE, "author": "Charlotte Brontë",
        "seat": {"url": "http://127.0.0.1:8027/v1", "base_model": "voices-base"},
        "arms": [{"name": "base", "model": "voices-base", "role": "base"},
                 {"name": "ckpt475", "model": f"{GATE}-ckpt475", "role": "candidate"},
                 {"name": "ckpt925", "model": f"{GATE}-ckpt925", "role": "candidate"}],
        "prompts": "prompts/bronte.txt", "seeds": list(SEEDS),
        "sampling": {"temperature": 0.8, "top_p": 0.95, "max_tokens": 512},
        "corpora": {"heldout": ["corpora/held/*.txt"], "training": ["corpora/train/*.txt"],
                    "background": ["corpora/back/*.txt"]},
        "voice": {"view": "stylometric", "mfw": 1000},
        "copying": {"n": 8, "tolerance": 0.005, "max_run": 50},
        "damage": {"tolerance": 0.05},
        "floor": {"rule": "global-max-spread"},
        "artifacts": {"record": f"gates/{GATE}.md"},
    }


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    make_workspace(root, _spec(), corpora={
        "prompts/bronte.txt": "\n".join(PROMPTS) + "\n",
        "corpora/held/villette.txt": "The moor lay grey beneath a sky of iron. " * 50,
        "corpora/train/jane-eyre.txt": "Reader, I married him. A quiet wedding we had. " * 50,
        "corpora/back/pickwick.txt": "Mr. Pickwick laughed heartily at the notion. " * 50})
    register(load_spec(root, GATE))
    return root


def _stored(root: Path) -> dict:
    """The reference data, with its signature pointing at this workspace's real spec and rows."""
    spec = load_spec(root, GATE)
    data = reference_data()
    gh = generations_hash(data["generations"])
    for res in [data["score"], *(a["result"] for a in data["amendments"])]:
        res["signature"].update(spec_sha256=spec_sha256(spec), generations_sha256=gh)
    return data


def run_cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli(root, "report", *args, timeout=120)


def test_report_refuses_without_scores_and_writes_nothing(workspace: Path):
    write_run(workspace / "runs" / GATE, reference_data(), scores=False)
    done = run_cli(workspace, GATE)
    assert done.returncode == 2
    assert done.stderr.startswith("voicegate: lv-bronte has not been scored (runs/lv-bronte/scores.json missing, "
                                  "no entry in gates/lv-bronte.md)")
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (workspace / "runs" / GATE / "report.html").exists()
    assert sorted(p.name for p in (workspace / "runs" / GATE).iterdir()) == ["generations.jsonl", "run.json"]


def test_report_refuses_bad_gate_name_and_missing_spec(workspace: Path):
    done = run_cli(workspace, "../etc")
    assert done.returncode == 2 and "bad adapter name" in done.stderr
    done = run_cli(workspace, "lv-nobody")
    assert done.returncode == 2 and "no such spec" in done.stderr


def test_report_writes_default_path_from_stored_results(workspace: Path):
    write_run(workspace / "runs" / GATE, _stored(workspace))
    done = run_cli(workspace, GATE)
    assert done.returncode == 0, done.stderr
    out = workspace / "runs" / GATE / "report.html"
    assert done.stdout.strip() == f"wrote {out}"
    page = out.read_text(encoding="utf-8")
    assert '<td class="num floor" data-rule="pairwise-max-spread">0.091</td>' in page
    assert '<td class="num floor" data-rule="global-max-spread">0.251</td>' in page
    assert "DISAGREE" in page and "Amendment 1" in page
    # Everything matches its registration: no deviation notice.
    assert 'class="notice"' not in page
    # The registration shown is this workspace's: its spec hash and the commit that registered it.
    reg = json.loads((workspace / "preregistrations" / f"{GATE}.registration.json").read_text())
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=workspace, check=False, capture_output=True,
                          text=True).stdout.strip()
    assert reg["spec_sha256"] in page and head in page
    # Prompts come from the registered prompt file.
    assert PROMPTS[3] in page
    # The page did not change any stored input.
    assert len(read_rows(workspace / "runs" / GATE / "generations.jsonl")) == 360


def test_report_out_option_and_workspace_flag(workspace: Path, tmp_path: Path):
    write_run(workspace / "runs" / GATE, _stored(workspace))
    target = tmp_path / "mail" / "bronte.html"
    done = subprocess.run([sys.executable, "-m", "voicegate", "report", GATE, "-C", str(workspace),
                           "--out", str(target), "--samples", "2"], check=False, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = target.read_text(encoding="utf-8")
    assert page.count('<article class="sample"') == 2
    assert not (workspace / "runs" / GATE / "report.html").exists()


@pytest.mark.parametrize("target", ["gates/lv-bronte.md", "preregistrations/lv-bronte.yaml",
                                    "corpora/held/villette.txt", "runs/lv-bronte/scores.json",
                                    "runs/lv-bronte/generations.jsonl"])
def test_report_out_over_a_file_voicegate_keeps_or_reads_is_refused(workspace: Path, target: str):
    """`report --out gates/<gate>.md` overwrote the record and verify still passed."""
    write_run(workspace / "runs" / GATE, _stored(workspace))
    (workspace / "gates").mkdir(exist_ok=True)
    (workspace / "gates" / f"{GATE}.md").write_text("# the record, with its entries\n", encoding="utf-8")
    before = {p: p.read_bytes() for p in workspace.rglob("*") if p.is_file() and ".git" not in p.parts}
    done = run_cli(workspace, GATE, "--out", target)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"voicegate: --out {target} is ") and "write the report elsewhere" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert {p: p.read_bytes() for p in workspace.rglob("*") if p.is_file() and ".git" not in p.parts} == before


def test_report_out_may_name_the_default_place(workspace: Path):
    write_run(workspace / "runs" / GATE, _stored(workspace))
    done = run_cli(workspace, GATE, "--out", "runs/lv-bronte/report.html")
    assert done.returncode == 0, done.stderr


def test_report_flags_generations_changed_since_scoring(workspace: Path):
    run_dir = workspace / "runs" / GATE
    write_run(run_dir, _stored(workspace))
    rows = read_rows(run_dir / "generations.jsonl")
    rows[0]["text"] += " (edited)"
    (run_dir / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    done = run_cli(workspace, GATE)
    assert done.returncode == 0, done.stderr
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "The stored generations have changed since they were scored" in page


def test_report_flags_a_spec_that_deviates_from_its_registration(workspace: Path):
    write_run(workspace / "runs" / GATE, _stored(workspace))
    path = workspace / "preregistrations" / f"{GATE}.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["floor"]["rule"] = "pairwise-max-spread"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    done = run_cli(workspace, GATE)
    assert done.returncode == 0, done.stderr
    page = (workspace / "runs" / GATE / "report.html").read_text(encoding="utf-8")
    assert "DEVIATION:" in page and "floor.rule" in page


# -- on the real pipeline: register, generate, score, ship, amend, verify, report ------------


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`voicegate demo` runs every command, `report` last, against its embedded stand-in seat."""
    root = tmp_path_factory.mktemp("demo") / "ws"
    env = {k: v for k, v in os.environ.items() if k not in ("VOICEGATE_WORKSPACE", "VOICEGATE_DATA_DIR",
                                                            "VOICEGATE_SEAT_URL")}
    done = subprocess.run([sys.executable, "-m", "voicegate", "demo", str(root)], check=False, capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root


def test_report_draws_what_the_producers_stored(demo_run: Path):
    from helpers.dom import Tree, external_references, table_row

    run_dir = next(p for p in (demo_run / "runs").iterdir() if p.is_dir())  # not the data dir's identity.jsonl
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    root = Tree(page).root
    scores = json.loads((run_dir / "scores.json").read_text(encoding="utf-8"))
    amendments = [json.loads(line) for line in (run_dir / "amendments.jsonl").read_text().splitlines() if line]
    current = amendments[-1]["result"]
    # One mark per (arm, seed) of the stored result.
    expected = sorted((a["name"], s) for a in current["arms"] for s in a["distances"])
    dots = root.find("svg", cls="plot-distances").find_all(cls="dot")
    assert sorted((d.attrs["data-arm"], d.attrs["data-seed"]) for d in dots) == expected
    # Both floors of every candidate, as stored, to three decimals.
    table = root.find("table", cls="verdicts")
    for arm in (a for a in current["arms"] if a["role"] == "candidate"):
        shown = {td.attrs["data-rule"]: td.text() for td in table_row(table, arm["name"]).find_all("td", cls="floor")}
        assert shown == {r: "—" if f is None else f"{f:.3f}" for r, f in arm["floors"].items()}  # None: infinite
        assert bool(table_row(table, arm["name"]).find_all("span", cls="disagree")) == arm["disagree"]
    # The amendment, the person's decision, the signature of the current result.
    assert len(root.find_all("article", cls="amend")) == len(amendments) == 1
    decision = json.loads((run_dir / "decisions.jsonl").read_text().splitlines()[0])
    assert decision["reason"] in root.find("table", cls="decisions").text()
    assert root.find("p", cls="sig").text() == current["signature_text"]
    assert scores["rule"] in " ".join(root.find("header").text().split())
    # The demo's adapters copy: spans the scorer found are highlighted in the samples and listed.
    spans = sum(len(a.get("spans") or []) for a in current["arms"])
    assert spans > 0 and len(root.find("table", cls="spans").find_all("tr")) == spans + 1
    assert root.find_all("a", cls="copied")
    for link in root.find_all("a", cls="copied"):
        assert root.find_all("tr", id=link.attrs["href"][1:])
    # Self-contained, even with a seat URL in the run manifest (shown as text only).
    assert external_references(page) == []


def test_report_data_is_loaded_as_typed_results(workspace: Path):
    import datetime as dt

    from voicegate.report import load_report_data, render_report
    from voicegate.scoring._result import GateResult

    write_run(workspace / "runs" / GATE, _stored(workspace))
    data = load_report_data(load_spec(workspace, GATE), now=dt.datetime(2026, 9, 18, 10, 15, tzinfo=dt.UTC))
    assert isinstance(data.score, GateResult) and data.score.rule == "global-max-spread"
    assert [a.rule_to for a in data.amendments] == ["pairwise-max-spread"]
    assert isinstance(data.amendments[0].result, GateResult) and data.current.rule == "pairwise-max-spread"
    assert [d.arm for d in data.decisions] == ["ckpt475"] and data.notices == ()
    assert data.copying.tolerance == 0.005 and data.damage.tolerance == 0.05
    page = render_report(data)
    assert "rendered 2026-09-18T10:15:00Z" in page and "Amendment 1" in page
