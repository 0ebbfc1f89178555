"""A citation is only what `register` wrote.

A registration record written by hand and committed (a zero or non-hash `spec_sha256`,
no spec beside it, a backdated commit), a forged "voicegate: register" message over a
spec that does not hash to the record, or a commit that carried other files in with
the registration, is refused at `amend` (nothing written) and, were it cited anyway,
BROKEN at `verify`. An amendment entry whose citation line does not parse is BROKEN,
not read as an entry from before citations were required.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from helpers.bronte import as_shipped, patch_scoring, scored_workspace
from helpers.workspace import base_spec, git, register_prospective, run_cli, tree_snapshot

REASON = "the global floor let an unshipped arm fail the shipped one"
RULE = "pairwise-max-spread"
OLD = {"GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z"}


@pytest.fixture
def bare(tmp_path: Path, compose_fixture: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """lv-bronte scored under global and shipped, with no other gate registered."""
    patch_scoring(monkeypatch)
    return scored_workspace(tmp_path / "ws", as_shipped(compose_fixture), ship=True, amend=False, prospective=False)


def _amend(root: Path, *args: str) -> tuple[int, str, str]:
    return run_cli("amend", "lv-bronte", "--rule", RULE, "--reason", REASON, "--post-hoc", *args, "-C", str(root))


def _forge(root: Path, *, sha: str, spec: bool, message: str, extra: bool = False) -> None:
    """A registration of lv-dummy under RULE written by hand, committed with an old date."""
    pre = root / "preregistrations"
    paths = [pre / "lv-dummy.registration.json"]
    if spec:
        raw = base_spec("lv-dummy")
        raw["floor"] = {"rule": RULE}
        (pre / "lv-dummy.yaml").write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
        paths.append(pre / "lv-dummy.yaml")
    record = {"gate": "lv-dummy", "spec_sha256": sha, "registered_at": "2020-01-01T00:00:00Z", "files": {},
              "deciding_rule": RULE, "spec": {"floor": {"rule": RULE}}, "spec_path": "preregistrations/lv-dummy.yaml"}
    paths[0].write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    if extra:
        (root / "notes.txt").write_text("unrelated\n", encoding="utf-8")
        paths.append(root / "notes.txt")
    git(root, "add", "--", *map(str, paths))
    git(root, "commit", "-q", "-m", message, env=OLD)


FORGERIES = {
    # the repro: zeros, no spec beside it, committed "in 2020" by hand
    "zero-hash": ({"sha": "0" * 64, "spec": False, "message": "add lv-dummy registration"}, "was not made by"),
    "forged-message": ({"sha": "0" * 64, "spec": False, "message": "voicegate: register lv-dummy"},
                       "holds no spec preregistrations/lv-dummy.yaml beside"),
    "not-a-hash": ({"sha": "x", "spec": True, "message": "voicegate: register lv-dummy"}, "records no sha256"),
    "hash-of-nothing": ({"sha": "1" * 64, "spec": True, "message": "voicegate: register lv-dummy"},
                        "not the registration's spec sha256 111111111111"),
    "other-files": ({"sha": "1" * 64, "spec": True, "message": "voicegate: register lv-dummy", "extra": True},
                    "also touches notes.txt"),
}


@pytest.mark.parametrize("how", sorted(FORGERIES))
def test_a_registration_not_written_by_register_is_refused_and_writes_nothing(bare: Path, how: str) -> None:
    kwargs, why = FORGERIES[how]
    _forge(bare, **kwargs)  # type: ignore[arg-type]
    before = tree_snapshot(bare)
    code, out, err = _amend(bare, "--registered-in", "lv-dummy")
    assert code == 2, out + err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "--registered-in lv-dummy cannot be cited" in err and why in err, err
    code, _, err = _amend(bare)  # nor found on its own
    assert code == 2 and "no prospective registration of pairwise-max-spread" in err and why in err, err
    assert tree_snapshot(bare) == before


def test_the_same_dummy_written_by_register_is_cited_as_a_post_hoc_correction(bare: Path) -> None:
    # The control: what the forgeries imitate, done by register, is accepted (as a post-hoc correction).
    register_prospective(bare, "lv-dummy", RULE)
    code, out, err = _amend(bare, "--registered-in", "lv-dummy")
    assert code == 0, err
    assert "a post-hoc correction, not a pre-registered rule" in out


def test_verify_breaks_an_amendment_that_cites_a_forged_registration(bare: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # An amendment an older voicegate let cite a hand-written record (the check switched off to write it):
    # verify asks git again and finds the cited commit is not register's.
    import voicegate.spec._prospective as prospective

    _forge(bare, sha="0" * 64, spec=False, message="add lv-dummy registration")
    with monkeypatch.context() as m:
        m.setattr(prospective, "written_by_register", lambda *a, **k: None)
        code, _, err = _amend(bare, "--registered-in", "lv-dummy")
        assert code == 0, err
    code, out, _ = run_cli("verify", "lv-bronte", "-C", str(bare))
    assert code == 1, out
    assert "citation BROKEN: entry 3's cited registration no longer holds: commit" in out
    assert "was not made by `voicegate register lv-dummy`" in out


def test_a_citation_line_that_does_not_parse_is_broken_not_legacy(bare: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: an amendment citing spec sha256 "x" was read as written before citations, and verify passed.
    import voicegate.spec as spec_api
    from voicegate.spec import Citation

    register_prospective(bare, "lv-dummy", RULE)
    found = spec_api.find_citation

    def bad_hash(*args: object, **kwargs: object) -> Citation:
        from dataclasses import replace

        return replace(found(*args, **kwargs), spec_sha256="x")  # type: ignore[arg-type]

    monkeypatch.setattr(spec_api, "find_citation", bad_hash)
    code, _, err = _amend(bare)
    assert code == 0, err
    code, out, _ = run_cli("verify", "lv-bronte", "-C", str(bare))
    assert code == 1, out
    assert "citation BROKEN: entry 3's citation line does not parse" in out
    assert "cites no prospective registration" not in out
