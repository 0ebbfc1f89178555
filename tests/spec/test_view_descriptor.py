"""A voice view is one descriptor (`spec/_views.py`) and one `View` class: nothing in `spec/` is spelled for a name.

A toy third view that measures through a model is registered here, in the test (monkeypatched registries),
and registration treats its model exactly as it treats the embedding view's: every file of a local model
directory hashed into the record, a changed one refused afterwards, a hub name refused unless pinned by
revision, the key naming the model required, no artifact inside the model's directory, a module the view
needs looked up before anything is committed. The same assertions run for `embedding`, so "exactly as"
is checked, not claimed. Its parameters go into the signature under its own keys, after the historical four.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.workspace import GATE, base_spec, git, make_workspace, run_cli

from voicegate.scoring import _views as scoring_views
from voicegate.scoring._signature import Signature
from voicegate.spec import VIEW_SPECS, Model, ViewSpec, load_spec

TOY = ViewSpec("toy", signature_keys=("toy_model",),
               model=Model("the toy model"))


class Toy(scoring_views.View):
    """A view that measures nothing: registration must not need more of it than its descriptor."""

    descriptor = TOY
    title = "the toy view"

    def corpus_files(self, targets: Sequence[scoring_views.Target]) -> tuple[Path, ...]:
        return ()

    def measure(self, cache: Any, cells: Any, target: Any) -> scoring_views.Measured:
        raise NotImplementedError

    def signature(self) -> dict[str, Any]:
        return {"toy_model": self.spec.voice.model}

    @staticmethod
    def signature_parts(params: Mapping[str, Any]) -> list[str]:
        return [f"toy:{params.get('toy_model')}"]


@pytest.fixture(autouse=True)
def toy_view(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(VIEW_SPECS, "toy", TOY)
    monkeypatch.setitem(scoring_views.VIEWS, "toy", Toy)


def _workspace(root: Path, view: str, *, model: str | None = "models/m", revision: str | None = None,
               readme: str | None = None) -> Path:
    spec = base_spec()
    voice: dict[str, Any] = {"view": view}
    if model is not None:
        voice["model"] = model
    if revision is not None:
        voice["revision"] = revision
    spec["voice"] = voice
    if readme is not None:
        spec["artifacts"]["readme"] = readme
    make_workspace(root, spec)
    weights = root / "models" / "m"
    (weights / "sub").mkdir(parents=True)
    (weights / "config.json").write_text("{}", encoding="utf-8")
    (weights / "sub" / "weights.bin").write_bytes(b"\x00\x01weights")
    (root / ".gitignore").write_text("runs/\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "workspace")
    return root


def _record(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / "preregistrations" / f"{GATE}.registration.json").read_text())
    return data


@pytest.fixture(params=["toy", "embedding"])
def view(request: pytest.FixtureRequest) -> str:
    if request.param == "embedding" and VIEW_SPECS["embedding"].unavailable():
        pytest.skip("sentence-transformers is not installed")
    return str(request.param)


def test_every_view_has_one_descriptor_and_one_implementation() -> None:
    assert set(VIEW_SPECS) == set(scoring_views.VIEWS)
    for name, cls in scoring_views.VIEWS.items():
        assert cls.descriptor is VIEW_SPECS[name] and cls.name == name


def test_the_schema_accepts_the_registered_views_and_names_them(tmp_path: Path) -> None:
    from voicegate.spec._schema import SPEC_SCHEMA

    assert SPEC_SCHEMA.key("voice.view").kind.describe() == \
        "one of `stylometric`, `embedding`, `stylometric-wide`, `toy`"
    root = _workspace(tmp_path / "ws", "nope")
    done = run_cli("register", GATE, cwd=root)
    assert done.code == 2 and "must be one of stylometric, embedding, stylometric-wide, toy, got 'nope'" in done.stderr


def test_registration_hashes_every_model_file_and_refuses_a_changed_one(tmp_path: Path, view: str) -> None:
    root = _workspace(tmp_path / "ws", view)
    done = run_cli("register", GATE, cwd=root)
    assert done.code == 0, done.stderr
    files = _record(root)["files"]
    assert {"models/m/config.json", "models/m/sub/weights.bin"} <= set(files)
    spec = load_spec(root, GATE)
    assert spec.model_dir == root / "models" / "m"
    (root / "models" / "m" / "sub" / "weights.bin").write_bytes(b"other weights")
    from voicegate.spec import check_registered

    with pytest.raises(Exception, match="registered file changed since registration: models/m/sub/weights.bin"):
        check_registered(load_spec(root, GATE))


def test_a_hub_model_must_be_pinned_by_revision(tmp_path: Path, view: str) -> None:
    root = _workspace(tmp_path / "ws", view, model="some-org/some-model")
    done = run_cli("register", GATE, cwd=root)
    assert done.code == 2 and "voice.revision" in done.stderr and "pinned by revision" in done.stderr
    assert not (root / "preregistrations" / f"{GATE}.registration.json").exists()
    pinned = _workspace(tmp_path / "pinned", view, model="some-org/some-model", revision="abc123")
    spec = load_spec(pinned, GATE)
    assert spec.model_dir is None and spec.model_files == () and spec.voice.revision == "abc123"


def test_the_model_key_is_required(tmp_path: Path, view: str) -> None:
    root = _workspace(tmp_path / "ws", view, model=None)
    done = run_cli("register", GATE, cwd=root)
    assert done.code == 2 and "voice.model" in done.stderr and "must be a non-empty string" in done.stderr


def test_no_artifact_inside_the_model_directory(tmp_path: Path, view: str) -> None:
    root = _workspace(tmp_path / "ws", view, readme="models/m/README.md")
    done = run_cli("register", GATE, cwd=root)
    what = VIEW_SPECS[view].model
    assert what is not None
    assert done.code == 2 and f"inside {what.what}'s directory" in done.stderr, done.stderr
    assert not (root / "preregistrations" / f"{GATE}.registration.json").exists()


def test_a_module_the_view_needs_is_looked_up_before_anything_is_committed(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    needy = ViewSpec("toy", signature_keys=TOY.signature_keys, model=TOY.model,
                     requires=("voicegate_no_such_module",), missing="the toy view needs voicegate_no_such_module")
    monkeypatch.setitem(VIEW_SPECS, "toy", needy)
    monkeypatch.setattr(Toy, "descriptor", needy)
    root = _workspace(tmp_path / "ws", "toy")
    head = git(root, "rev-parse", "HEAD")
    done = run_cli("register", GATE, cwd=root)
    assert done.code == 2 and "the toy view needs voicegate_no_such_module" in done.stderr
    assert git(root, "rev-parse", "HEAD") == head


def test_the_toy_signature_keeps_the_historical_keys_and_adds_its_own(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", "toy")
    spec = load_spec(root, GATE)
    sig = Signature.of(spec, view=Toy(spec), rule="global-max-spread", generations_sha256="0" * 64,
                       corpus_sha256="1" * 64)
    stored = sig.to_json()
    keys = list(stored)
    assert keys[keys.index("embedding_revision") + 1] == "toy_model" and stored["toy_model"] == "models/m"
    assert all(stored[k] is None for k in ("mfw", "chunk", "embedding_model", "embedding_revision"))
    assert sig.text().startswith("view:toy|toy:models/m|n:")
    again = Signature.from_json(yaml.safe_load(json.dumps(stored)))
    assert again is not None and again.params["toy_model"] == "models/m"
    assert Signature(**{**again.__dict__, "stored": None}).to_json() == stored
