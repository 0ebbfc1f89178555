"""The repository's lv-hemingway example spec is valid, under the pairwise rule, and readable outside the fleet."""

from __future__ import annotations

from pathlib import Path

import yaml

from voicegate.spec._check import check_spec
from voicegate.spec._spec import read_spec_yaml, validate

REPO = Path(__file__).resolve().parents[2]


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


def test_hemingway_spec_names_no_fleet_host_or_storage() -> None:
    # a newcomer cannot follow /tank/... paths or an fv-ml1.invalid seat
    path = REPO / "preregistrations" / "lv-hemingway.yaml"
    text = path.read_text(encoding="utf-8")
    assert "/tank" not in text and ".invalid" not in text and "/srv/" not in text
    raw = yaml.safe_load(text)
    spec = validate(raw, path, REPO, check_files=False)
    assert spec.seat.url == "http://127.0.0.1:8027/v1"   # where `voicegate seat up` serves
    # every file the gate reads or writes is workspace-relative; only adapter_path is the seat's own path
    assert not Path(raw["prompts"]).is_absolute() and not Path(raw["damage"]["probes"]).is_absolute()
    assert all(not Path(p).is_absolute() for ps in raw["corpora"].values() for p in ps)
    assert all(not Path(v).is_absolute() for v in raw["artifacts"].values())
    assert "outside_workspace" not in raw["artifacts"]


def test_hemingway_spec_passes_the_pure_check() -> None:
    # none of its files exist in this repository: checking the text must not need them
    path = REPO / "preregistrations" / "lv-hemingway.yaml"
    values = check_spec(read_spec_yaml(path), path)
    assert values["corpora.background"] and values["voice.mfw"] == 1000 and values["damage.truncation_decides"] is False


def test_hemingway_spec_is_not_registered_here() -> None:
    # its corpora are the user's to bring; a registration here would hash nothing real
    assert not (REPO / "preregistrations" / "lv-hemingway.registration.json").exists()
