"""The repository's lv-hemingway spec is valid, on the seat's real names, under the pairwise rule."""

from __future__ import annotations

from pathlib import Path

import yaml

from voicegate.spec._check import check_spec
from voicegate.spec._spec import read_spec_yaml, validate

REPO = Path(__file__).resolve().parents[1]


def test_hemingway_spec_validates_against_the_schema() -> None:
    path = REPO / "preregistrations" / "lv-hemingway.yaml"
    spec = validate(yaml.safe_load(path.read_text()), path, REPO, check_files=False)
    assert spec.gate == "lv-hemingway"
    assert spec.floor_rule == "pairwise-max-spread"
    assert spec.base.model == spec.seat.base_model == "voices-base"
    assert [a.model for a in spec.candidates] == ["lv-hemingway-ckpt475", "lv-hemingway-ckpt925"]
    assert all(a.adapter_path.startswith("/adapters/lv-hemingway-4b-v1/") for a in spec.candidates)
    assert spec.seat.url.endswith(":8027/v1") and spec.seat.api_key_env == "VOICES_API_KEY"
    assert len(spec.seeds) == 3 and spec.voice.view == "stylometric" and spec.voice.mfw == 1000
    assert spec.copying.n == 8 and spec.copying.max_run == 50


def test_hemingway_spec_passes_the_pure_check() -> None:
    # no corpus of it exists on this machine: checking the text must not need one
    path = REPO / "preregistrations" / "lv-hemingway.yaml"
    values = check_spec(read_spec_yaml(path), path)
    assert values["corpora.background"] and values["voice.mfw"] == 1000 and values["damage.truncation_decides"] is False


def test_hemingway_spec_is_not_registered_here() -> None:
    # its corpora live on the fleet's storage; a registration here would hash nothing real
    assert not (REPO / "preregistrations" / "lv-hemingway.registration.json").exists()
