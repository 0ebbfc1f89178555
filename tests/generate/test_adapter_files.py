"""Each adapter arm held to its own files where they are readable here (the carrier's weights with its LoRA merged).

Earlier answers of the same weights hold nothing in a fresh data directory: a seat serving a stale adapter
under the right name from its first request reproduced itself everywhere and held. Held to its own files, it
fails. Across a vLLM upgrade (seeded sampling changed, greedy answers not), the files decide what the earlier
answers cannot. On the stand-in the local answers are monkeypatched to what the stand-in answers for the
model (as tests/generate/test_carrier_identity.py does for the carrier); the merge itself runs on the tiny voices.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.shared import VOICES
from helpers.workspace import cli, gate_spec, manifest, registered_workspace, run_cli

from voicegate.generate import _adapter_files, _carrier_files
from voicegate.generate._adapter_files import merged_answers, why_not_plain
from voicegate.generate._carrier_files import MAX_TOKENS, PROBE_SEED, PROBES, CarrierFiles, carrier_dir, hash_carrier
from voicegate.seat import StandinSeat
from voicegate.seat._standin import default_text

GATE = "lv-own"
SERVED = f"{GATE}-ckpt475"
RUNTIME = f"{GATE}-ckpt925"
TINY = VOICES


def _dir(where: Path, files: dict[str, str | bytes]) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    for name, body in files.items():
        (where / name).write_bytes(body if isinstance(body, bytes) else body.encode())
    return where


def _adapter(where: Path, tag: str) -> Path:
    return _dir(where, {"adapter_config.json": json.dumps({"peft_type": "LORA", "r": 8, "lora_alpha": 16}),
                        "adapter_model.safetensors": f"lora {tag}".encode()})


def _as_served(model: str):
    return lambda files, prompts: [default_text(model, PROBE_SEED, p, MAX_TOKENS)[0] for p in prompts]


def _setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, fleet_readable: bool = True) -> dict[str, str]:
    """A readable carrier and adapter directories; each one's 'own' greedy answers are what the stand-in
    answers for its model when it serves it honestly. Returns the fleet's adapters for the stand-in."""
    monkeypatch.setenv("VOICEGATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_carrier_files, "why_no_local", lambda: None)
    monkeypatch.setattr(_carrier_files, "local_answers", _as_served("voices-base"))
    owner = {str(tmp_path / "adapters" / "ckpt475"): SERVED, str(tmp_path / "adapters" / "ckpt925"): RUNTIME}

    def merged(files: CarrierFiles, adapter: Path, prompts: list[str]) -> list[str]:
        return _as_served(owner[str(adapter)])(files, prompts)
    monkeypatch.setattr(_adapter_files, "merged_answers", merged)
    _dir(tmp_path / "carrier", {"config.json": "{}", "model.safetensors": b"weights", "tokenizer.json": "{}"})
    _adapter(tmp_path / "adapters" / "ckpt925", "925")
    _adapter(tmp_path / "adapters" / "ckpt475", "475")
    return {SERVED: str(tmp_path / "adapters" / "ckpt475") if fleet_readable else f"/adapters/{GATE}/ckpt475"}


def _spec(tmp_path: Path, url: str) -> dict:
    return gate_spec(GATE, url=url, concurrency=8, seeds=[1, 2], candidates=[
        {"name": "ckpt475", "model": SERVED, "role": "candidate"},
        {"name": "ckpt925", "model": RUNTIME, "role": "candidate", "adapter_path": str(tmp_path / "adapters/ckpt925")}])


def test_adapters_answering_as_their_own_files_hold_and_out_of_reach_is_said(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fleet = _setup(tmp_path, monkeypatch, fleet_readable=False)
    with StandinSeat(base_root=str(tmp_path / "carrier"), adapters=fleet, slots=8) as seat:
        root = registered_workspace(tmp_path / "ws", _spec(tmp_path, seat.url))
        done = cli(root, "generate", GATE, "--quiet")
        probes = [e for e in seat.chat_log() if e.get("seed") == PROBE_SEED]
    assert done.returncode == 0, done.stderr
    session = manifest(root, GATE)["sessions"][0]
    assert session["adapter_files"]["ckpt925"]["status"] == "holds"
    assert session["adapter_files"]["ckpt475"] == {
        "status": "not-checked", "agreements": [],
        "why": "no adapter directory readable here at its adapter_path or the root the seat lists"}
    rests = session["identity"]["ckpt925"]["rests_on"]
    assert rests.endswith(f"; its own files: {PROBES}/{PROBES} greedy answers of 16 tokens reproduced from its own "
                          "files (the carrier's weights sha256 " + rests.split("weights sha256 ")[-1])
    assert "with the adapter's" in rests and "merged, float32)" in rests
    # The base's probes and ckpt925's, each arm's alone: 6 + 6 greedy requests before any cell.
    assert [e["model"] for e in probes] == ["voices-base"] * PROBES + [RUNTIME] * PROBES
    assert run_cli("score", GATE, cwd=root).code == 0
    record = (root / "gates" / f"{GATE}.md").read_text()
    assert "its own files: not checked: no adapter directory readable here" in record


def test_a_stale_adapter_in_a_fresh_data_dir_fails_against_its_own_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No earlier session anywhere: a seat serving another voice under ckpt925's name from its first request
    reproduces itself in every check. Before, integrity held ("the first session on it")."""
    fleet = _setup(tmp_path, monkeypatch)
    with StandinSeat(base_root=str(tmp_path / "carrier"), adapters=fleet, slots=8,
                     impostors={RUNTIME: "lv-trollope"}) as seat:
        root = registered_workspace(tmp_path / "ws", _spec(tmp_path, seat.url))
        done = cli(root, "generate", GATE, "--quiet")
    assert done.returncode == 4, done.stdout + done.stderr
    session = manifest(root, GATE)["sessions"][0]
    assert session["identity_asks"] == {} and session["integrity"]["right"] == session["integrity"]["sent"]
    assert session["adapter_files"]["ckpt925"]["status"] == "failed"
    assert session["adapter_files"]["ckpt475"]["status"] == "holds"
    (problem,) = session["integrity"]["problems"]
    assert problem.startswith(f"arm ckpt925's answers are not its own files': 0/{PROBES} greedy answers")
    assert problem.endswith(": the seat serves other weights under the adapter's name")
    out = run_cli("score", GATE, cwd=root)
    assert out.code == 2 and "arm ckpt925's answers are not its own files'" in out.stderr, out.stderr


def test_its_own_files_decide_what_a_version_change_left_undecided(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A vLLM upgrade that changed seeded sampling and not greedy answers: every earlier answer differs, and
    without files every arm would be 'not decided'; each arm's files reproduce, so the session holds."""
    fleet = _setup(tmp_path, monkeypatch)
    with StandinSeat(base_root=str(tmp_path / "carrier"), adapters=fleet, slots=8) as seat:
        root = registered_workspace(tmp_path / "ws", _spec(tmp_path, seat.url))
        assert cli(root, "generate", GATE, "--quiet").returncode == 0
    shutil.rmtree(root / "runs" / GATE)

    def upgraded(model: str, seed: int, prompt: str, n: int):
        # Greedy probes (their own seed) answer as before; every seeded request answers anew, a shorter check
        # still the prefix of its reference. Told apart by the seed, never by the length: a check's shorter
        # max_tokens is drawn at random and can equal the probes' own.
        return default_text(model if seed == PROBE_SEED else f"{model}@0.33", seed, prompt, n)
    models = ["voices-base", SERVED, RUNTIME]
    with StandinSeat(base_root=str(tmp_path / "carrier"), adapters=fleet, slots=8, version="0.33.0+standin",
                     generators=dict.fromkeys(models, upgraded)) as seat:
        done = cli(root, "generate", GATE, "--quiet", "--seat", seat.url)
    assert done.returncode == 0, done.stderr
    session = manifest(root, GATE)["sessions"][0]
    assert set(session["identity_asks"]) == {"base", "ckpt475", "ckpt925"}
    assert session["integrity"]["status"] == "holds" and "undecided" not in session["integrity"]
    assert all(c["status"] == "holds" for c in session["adapter_files"].values())
    assert run_cli("score", GATE, cwd=root).code == 0
    # score re-judges: without the kept probes of an arm, its identity is not decided again
    path = root / "runs" / GATE / "canaries.jsonl"
    kept = [json.loads(x) for x in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in kept if not (r["phase"] == "carrier"
                                                                        and r["arm"] == "ckpt925")))
    out = run_cli("score", GATE, cwd=root)
    assert out.code == 2 and "arm ckpt925's answer does not reproduce" in out.stderr and "not decided" in out.stderr


def test_only_a_plain_lora_is_merged_here() -> None:
    plain = {"peft_type": "LORA", "r": 16, "lora_alpha": 32, "bias": "none", "use_dora": False, "rank_pattern": {}}
    assert why_not_plain(plain) is None
    assert why_not_plain({**plain, "use_dora": True}) == "use_dora is set (only a plain LoRA is merged here)"
    assert why_not_plain({**plain, "rank_pattern": {"q_proj": 8}}) == ("rank_pattern is set (only a plain LoRA is "
                                                                       "merged here)")
    assert why_not_plain({**plain, "peft_type": "IA3"}) == "peft_type 'IA3', not LORA"
    assert why_not_plain([]) == "adapter_config.json is not a JSON object"


@pytest.mark.skipif(not (TINY / "lv-austen" / "adapter_model.safetensors").is_file(), reason="no tiny voices")
def test_the_merge_answers_as_the_voice_not_as_the_carrier_on_the_tiny_voices() -> None:
    pytest.importorskip("transformers")
    found = carrier_dir(str(TINY / "carrier"))
    assert found is not None
    files = hash_carrier(found)
    assert files is not None
    prompts = [ln.strip() for ln in (TINY / "prompts.txt").read_text().splitlines() if ln.strip()][:2]
    austen = merged_answers(files, TINY / "lv-austen", prompts)
    assert austen == merged_answers(files, TINY / "lv-austen", prompts)        # greedy: the same every time
    assert austen != _carrier_files.local_answers(files, prompts) != merged_answers(files, TINY / "lv-anne", prompts)


def test_the_carriers_bound_counts_the_adapters_bytes_and_nothing_over_it_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fleet = _setup(tmp_path, monkeypatch)
    monkeypatch.setenv("VOICEGATE_CARRIER_MAX_BYTES", "7")         # the carrier's 7 bytes, not one more

    def never(*args: object) -> str:
        raise AssertionError("hashed or merged an adapter over the bound")
    monkeypatch.setattr(_adapter_files, "merged_answers", never)
    monkeypatch.setattr(_adapter_files, "sha256_file", never)
    with StandinSeat(base_root=str(tmp_path / "carrier"), adapters=fleet, slots=8) as seat:
        root = registered_workspace(tmp_path / "ws", _spec(tmp_path, seat.url))
        assert cli(root, "generate", GATE, "--quiet").returncode == 0
    session = manifest(root, GATE)["sessions"][0]
    assert session["carrier"]["status"] == "holds"
    assert session["adapter_files"]["ckpt925"]["why"] == (
        "carrier and adapter weights 15 B on disk, over the 7 B bound for answering locally: 15 > 7 bytes, a bound "
        "$VOICEGATE_CARRIER_MAX_BYTES raises")
