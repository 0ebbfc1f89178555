"""The typed run manifest and the typed signature: one reader each, the stored bytes kept."""

from __future__ import annotations

import dataclasses
import json

import pytest

from voicegate.run._manifest import RunManifest
from voicegate.scoring._result import GateResult, result_text
from voicegate.scoring._signature import IntegrityEvidence, Signature

GENERATED = {"source": "generated", "order_seed": 7, "registration_commit": "abc123",
             "seat": {"url": "http://fv-ml1:8027/v1", "version": {"version": "0.11.0"},
                      "models": [{"id": "voices-base"}, "lv-bronte-ckpt475"]},
             "runtime_loaded": ["lv-bronte-ckpt475"], "sessions": [{"generated": 3}, "not a session"],
             "integrity": {"method": "canary-reproduction@2"}}


def test_the_seat_is_found_wherever_a_manifest_put_it() -> None:
    m = RunManifest.from_json(GENERATED)
    assert (m.source, m.seat_url, m.seat_version) == ("generated", "http://fv-ml1:8027/v1", "0.11.0")
    assert m.seat_models == ("voices-base", "lv-bronte-ckpt475")
    assert (m.order_seed, m.registration_commit, m.runtime_loaded) == ("7", "abc123", ("lv-bronte-ckpt475",))
    assert m.sessions == ({"generated": 3},) and m.integrity == {"method": "canary-reproduction@2"}
    assert not m.imported
    # Older and hand-written manifests: the seat and its version at the top.
    old = RunManifest.from_json({"seat_url": "http://old:8000/v1", "vllm_version": "0.6.3", "source": "imported",
                                 "file": "gens.jsonl", "file_sha256": "", "sessions": "?"})
    assert (old.seat_url, old.seat_version, old.file, old.file_sha256) == ("http://old:8000/v1", "0.6.3",
                                                                           "gens.jsonl", None)
    assert old.imported and old.sessions == () and old.seat_models == ()
    plain = RunManifest.from_json({"seat": "http://plain:8000/v1", "version": "0.9"})
    assert (plain.seat_url, plain.seat_version, plain.source) == ("http://plain:8000/v1", "0.9", None)


def _signature(**over: object) -> dict[str, object]:
    sig: dict[str, object] = {
        "view": "stylometric", "mfw": 1000, "chunk": 2500, "n": 8, "copying_tolerance": 0.02, "max_run": 50,
        "damage_tolerance": 0.05, "truncation_decides": False, "tokenizer": "regex-letters-v1",
        "embedding_model": None, "embedding_revision": None, "rule": "global-max-spread@1",
        "rules": {"global-max-spread": "global-max-spread@1", "pairwise-max-spread": "pairwise-max-spread@1"},
        "bootstrap": "b", "voicegate": "0.1.0", "numpy": "2.1.3", "scipy": None,
        "spec_sha256": "5e" * 32, "generations_sha256": "9a" * 32, "corpus_sha256": "c0" * 32}
    sig.update(over)
    return sig


@pytest.mark.parametrize("stored", [
    _signature(),
    _signature(specificity="impostors,decides,margin-floor-per-impostor@1", integrity_sha256="aa" * 32,
               canaries_sha256=None),
    {"generations_sha256": "0" * 64, "rules": {"global-max-spread": "global-max-spread@1"}},  # a test seam's
    {"view": "stylometric", "n": 8, "a key from the future": [1, 2]},
])
def test_a_stored_signature_gives_back_its_own_bytes(stored: dict[str, object]) -> None:
    # A ship decision hashes the result it reads back: one byte moved would be a different result.
    sig = Signature.from_json(stored)
    assert sig is not None and json.dumps(sig.to_json()) == json.dumps(stored)
    result = GateResult.from_json({"gate": "g", "rule": "global-max-spread", "ships": None,
                                   "control": {"arm": "base", "overlap": 0.0}, "arms": [], "signature": stored})
    assert json.loads(result_text(result))["signature"] == stored
    assert result.generations_sha256 == stored.get("generations_sha256")


def test_a_built_signature_reads_as_the_stored_one_and_its_line() -> None:
    stored = _signature(specificity="impostors,reported,margin-floor-per-impostor@1")
    sig = Signature.from_json(stored)
    assert sig is not None
    built = Signature(**{**sig.__dict__, "stored": None})
    assert built.to_json() == stored and list(built.to_json()) == list(stored)  # key order too
    assert built.text() == ("view:stylometric|mfw:1000|chunk:2500|n:8|tol:0.02|maxrun:50|dmg:0.05|"
                            "tok:regex-letters-v1|rule:global-max-spread@1|"
                            "rules:global-max-spread@1,pairwise-max-spread@1|boot:b|version:0.1.0|numpy:2.1.3|"
                            "scipy:None|spec:5e5e5e5e5e5e|gens:9a9a9a9a9a9a|corpus:c0c0c0c0c0c0|"
                            "spec-axis:impostors,reported,margin-floor-per-impostor@1")
    # Binding the integrity evidence adds its two keys at the end, and never to the printed line.
    bound = dataclasses.replace(built, evidence=IntegrityEvidence("11" * 32, "22" * 32))
    assert list(bound.to_json())[-2:] == ["integrity_sha256", "canaries_sha256"]
    assert bound.text() == built.text()
    assert Signature.from_json({}) is None
