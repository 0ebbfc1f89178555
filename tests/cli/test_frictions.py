"""The frictions a new user met on their own gate, one test (or a few) each."""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path

import pytest
from helpers.workspace import gate_spec, registered_workspace, run_cli, tree_snapshot

from voicegate.run._manifest import RunManifest

GATE = "lv-gen"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- a seat that is not there --------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_loopback_seat_that_is_not_up_fails_fast_and_says_how_to_start_one(tmp_path: Path, host: str) -> None:
    """Nothing listening on a loopback port was retried for ~50 s, and the message named a generations
    file that did not exist."""
    root = registered_workspace(tmp_path / "ws", gate_spec(GATE))
    url = f"http://{host}:{_closed_port()}/v1"
    t0 = time.monotonic()
    done = run_cli("generate", GATE, "--quiet", "--seat", url, cwd=root)  # the default retry policy
    took = time.monotonic() - t0
    assert done.code == 3
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1, done.stderr
    assert took < 4.0, took
    assert "connection refused" in line and "`voicegate seat up --voices DIR`" in line
    assert "generations.jsonl" not in line and not (root / "runs" / GATE / "generations.jsonl").exists()
    assert "no generation is stored yet (0/" in line
    assert line.endswith(f"run `voicegate generate {GATE} --seat {url}` again to resume")


def test_a_host_that_does_not_resolve_says_how_to_start_a_local_seat(tmp_path: Path) -> None:
    root = registered_workspace(tmp_path / "ws", gate_spec(GATE))
    url = "http://no-such-seat.invalid:8027/v1"
    t0 = time.monotonic()
    done = run_cli("generate", GATE, "--quiet", "--seat", url, cwd=root)
    assert done.code == 3 and time.monotonic() - t0 < 4.0
    line = done.stderr.strip()
    assert "host name does not resolve" in line and "`voicegate seat up --voices DIR`" in line
    assert "generations.jsonl" not in line
    assert line.endswith(f"run `voicegate generate {GATE} --seat {url}` again to resume")


def test_retry_notes_carry_one_prefix(tmp_path: Path) -> None:
    root = registered_workspace(tmp_path / "ws", gate_spec(GATE))
    done = run_cli("generate", GATE, "--seat", f"http://127.0.0.1:{_closed_port()}/v1", cwd=root)
    assert done.code == 3 and "voicegate: retrying GET /version" in done.stderr
    assert "voicegate: voicegate:" not in done.stderr


def test_a_seat_that_dies_mid_run_says_why_it_waits_under_quiet(tmp_path: Path) -> None:
    """`generate -q` printed nothing for 79 s of retries; --quiet silences progress, not the reason."""
    from voicegate.seat._standin import StandinSeat

    with StandinSeat(adapters={f"{GATE}-ckpt475": f"/adapters/{GATE}/ckpt475"}) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=1))
        seat.hooks = {24: lambda s: s.kill()}   # the 24th chat request: mid-run, after the integrity references
        done = run_cli("generate", GATE, "--quiet", "--retry-budget", "1", cwd=root)
    assert done.code == 3, done.stderr
    lines = done.stderr.strip().splitlines()
    # the request in flight when it died is dropped (a protocol error), the next attempts are refused
    refused = [ln for ln in lines if re.fullmatch(r"voicegate: retrying POST /v1/chat/completions: connection "
                                                  r"refused; retry \d+ in \d+\.\ds", ln)]
    assert refused, lines
    assert lines[-1].startswith(f"voicegate: seat {seat.url} went down: it answered earlier in this run, now nothing "
                                "listens there (POST /v1/chat/completions: connection refused, ")
    assert re.search(r"; [1-9]\d*/18 generations are saved in ", lines[-1])
    assert lines[-1].endswith(f"run `voicegate generate {GATE}` again to resume")


# -- a seat URL that is not the base URL --------------------------------------------------------------


@pytest.mark.parametrize(("given", "meant"), [
    ("http://127.0.0.1:8027", "http://127.0.0.1:8027/v1"),
    ("http://127.0.0.1:8027/", "http://127.0.0.1:8027/v1"),
    ("http://127.0.0.1:8027/v1/chat/completions", "http://127.0.0.1:8027/v1"),
    ("http://127.0.0.1:8027/v1/models", "http://127.0.0.1:8027/v1"),
])
def test_a_seat_url_that_is_not_the_base_url_says_what_it_must_look_like(tmp_path: Path, given: str,
                                                                         meant: str) -> None:
    root = registered_workspace(tmp_path / "ws", gate_spec(GATE))
    before = tree_snapshot(root)
    for args in (("generate", GATE, "--quiet", "--seat", given), ("seat", "models", "--seat", given)):
        done = run_cli(*args, cwd=root)
        assert done.code == 2, (args, done.stderr)
        line = done.stderr.strip()
        assert len(line.splitlines()) == 1
        assert line.startswith("voicegate: --seat: must be the OpenAI base URL, ending in /v1, such as "
                               f"{meant} "), line
    assert tree_snapshot(root) == before


def test_a_spec_seat_url_without_v1_is_refused_at_load(tmp_path: Path) -> None:
    from helpers.workspace import make_workspace

    make_workspace(tmp_path, gate_spec(GATE, url="http://127.0.0.1:8027"))
    done = run_cli("register", GATE, cwd=tmp_path)
    assert done.code == 2
    assert "seat.url: must be the OpenAI base URL, ending in /v1, such as http://127.0.0.1:8027/v1" in done.stderr


# -- register: files git does not hold, and how to recover a changed one ----------------------------


def test_register_warns_for_every_pinned_file_git_does_not_track(tmp_path: Path) -> None:
    from helpers.workspace import base_spec, git, make_workspace

    make_workspace(tmp_path, base_spec("lv-test"))
    git(tmp_path, "add", "prompts", "corpora/held")
    git(tmp_path, "commit", "-q", "-m", "some inputs")
    (tmp_path / "corpora" / "held" / "held.txt").write_text("changed after the commit " * 400, encoding="utf-8")
    done = run_cli("register", "lv-test", cwd=tmp_path)
    assert done.code == 0, done.stderr
    err = done.stderr.splitlines()
    assert "voicegate: warning: corpora/train/train.txt is pinned by its sha256 but git does not track it" in err
    assert "voicegate: warning: corpora/back/back.txt is pinned by its sha256 but git does not track it" in err
    assert "voicegate: warning: corpora/held/held.txt is pinned by its sha256 but its changes are not committed" in err
    assert not any("prompts/beats.txt" in line and "warning" in line for line in err)  # committed and unchanged
    how = [line for line in err if line.startswith("voicegate: commit them")]
    assert how == [("voicegate: commit them, so a clone holds what the registration pins: `git add "
                   "corpora/back/back.txt corpora/train/train.txt corpora/held/held.txt && "
                   "git commit -m \"lv-test: the gate's inputs\"`")]


def test_register_with_every_input_committed_warns_of_nothing(tmp_path: Path) -> None:
    from helpers.workspace import base_spec, git, make_workspace

    make_workspace(tmp_path, base_spec("lv-test"))
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "inputs")
    done = run_cli("register", "lv-test", cwd=tmp_path)
    assert done.code == 0 and "git does not track" not in done.stderr and "commit them" not in done.stderr


def test_a_changed_registered_file_says_how_to_recover(tmp_path: Path) -> None:
    from helpers.workspace import base_spec

    root = registered_workspace(tmp_path / "ws", base_spec("lv-test"))
    from voicegate._hashing import sha256_file

    prompts = root / "prompts" / "beats.txt"
    then = sha256_file(prompts)
    prompts.write_text("Write about something else.\n", encoding="utf-8")
    done = run_cli("score", "lv-test", cwd=root)
    assert done.code == 2
    assert done.stderr.strip() == (
        f"voicegate: registered file changed since registration: prompts/beats.txt; restore the file that has the "
        f"recorded sha256 {then} (now {sha256_file(prompts)}), or re-register with the new file "
        "(`voicegate register lv-test --supersede`: no results exist yet)")


# -- compose entries belong to the gate above whose item they sit --------------------------------------


def _other_gate_spec(root: Path, gate: str) -> None:
    import yaml
    from helpers.workspace import base_spec

    spec = base_spec(gate)
    spec["artifacts"] = {"record": f"gates/{gate}.md", "compose": "deploy/compose.yaml"}
    (root / "preregistrations" / f"{gate}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")


def test_verify_gate_lists_only_that_gates_compose_entries(tmp_path: Path, compose_fixture: Path) -> None:
    """`verify lv-yarros` showed lv-bronte's three compose entries as lv-yarros's, and passed."""
    from helpers.bronte import as_shipped, scored_workspace

    root = scored_workspace(tmp_path / "ws", as_shipped(compose_fixture))
    _other_gate_spec(root, "lv-yarros")      # listed in the fleet compose, never scored
    _other_gate_spec(root, "lv-hemingway")   # not in the compose at all
    bronte = run_cli("verify", "lv-bronte", cwd=root)
    assert bronte.code == 0, bronte.stderr
    block = bronte.stdout.split("deploy/compose.yaml (compose, lv-bronte):\n", 1)[1]
    assert [ln.split()[1] for ln in block.splitlines() if ln.startswith("  entry ")] == ["1", "2", "3"]
    yarros = run_cli("verify", "lv-yarros", cwd=root)
    assert yarros.code == 0, yarros.stderr
    block = yarros.stdout.split("deploy/compose.yaml (compose, lv-yarros):\n", 1)[1]
    assert "  entry " not in block, yarros.stdout
    assert "  no entries of lv-yarros yet" in block
    assert "3 entries of other gates not listed" in block
    hemingway = run_cli("verify", "lv-hemingway", cwd=root)
    assert "no --lora-modules entry for lv-hemingway here" in hemingway.stdout


def test_entries_in_a_one_line_flow_list_go_by_the_gate_their_first_line_names() -> None:
    from voicegate.artifacts._chain import compose_entry
    from voicegate.artifacts._compose import entries_for

    data = b"services:\n  seat:\n    command: [--lora-modules, lv-a=/a, lv-b=/b]\n"
    data = compose_entry(data, 2, ["voicegate 2026-01-01 lv-b score, rule x:"], "    ", b"\n")
    data = compose_entry(data, 4, ["voicegate 2026-01-02 lv-a score, rule x:"], "    ", b"\n")
    assert entries_for(data, "lv-a") == [2] and entries_for(data, "lv-b") == [1]


def test_register_says_when_the_compose_file_has_no_entry_for_the_gate(tmp_path: Path) -> None:
    from helpers.workspace import base_spec, git, make_workspace

    make_workspace(tmp_path, base_spec("lv-test"))
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "compose.yaml").write_text(
        "services:\n  seat:\n    command:\n      - --lora-modules\n      - lv-other=/adapters/other\n",
        encoding="utf-8")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "inputs")
    done = run_cli("register", "lv-test", cwd=tmp_path)
    assert done.code == 0, done.stderr
    assert ("voicegate: note: artifacts.compose deploy/compose.yaml has no --lora-modules entry for lv-test "
            "(an item `lv-test=PATH`") in done.stderr


# -- verify says when git was not asked ---------------------------------------------------------------


def test_verify_says_it_did_not_run_the_git_check_on_uncommitted_artifacts(tmp_path: Path,
                                                                           compose_fixture: Path) -> None:
    from helpers.bronte import as_shipped, scored_workspace
    from helpers.workspace import git

    root = scored_workspace(tmp_path / "ws", as_shipped(compose_fixture), ship=False, amend=False)
    done = run_cli("verify", "lv-bronte", cwd=root)
    assert done.code == 0
    assert ("  git: not checked: no commit holds an entry of this file yet (commit it: `git add gates/lv-bronte.md "
            "&& git commit`)") in done.stdout
    assert done.stdout.count("git: not checked") == 3
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "verdicts")
    done = run_cli("verify", "lv-bronte", cwd=root)
    assert "git: not checked" not in done.stdout and done.stdout.count("only added lines") == 3


# -- the signature printed is the one recorded -------------------------------------------------------


def test_the_signature_score_prints_is_byte_identical_to_the_recorded_one(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """rich read `RegexpTokenizer[re]` as markup and printed `RegexpTokenizer` (and docs/tutorial.md copied it)."""
    import json

    from helpers.bronte import bronte_workspace, generations, patch_scoring, write_jsonl

    patch_scoring(monkeypatch)
    root = bronte_workspace(tmp_path / "ws", None)
    assert run_cli("import", "lv-bronte", write_jsonl(tmp_path / "g.jsonl", generations()), cwd=root).code == 0
    done = run_cli("score", "lv-bronte", cwd=root)
    assert done.code == 0, done.stderr
    recorded = json.loads((root / "runs" / "lv-bronte" / "scores.json").read_text(encoding="utf-8"))["signature_text"]
    assert "|tok:re:nfkc-casefold-letters-apostrophe@2|" in recorded  # the regex that runs, no nltk
    printed = [ln for ln in done.stdout.splitlines() if ln.startswith("signature: ")]
    assert printed == [f"signature: {recorded}"]
    assert f"`{recorded}`" in (root / "gates" / "lv-bronte.md").read_text(encoding="utf-8")
    tutorial = (Path(__file__).resolve().parents[2] / "docs" / "tutorial.md").read_text(encoding="utf-8")
    assert "|tok:re:nfkc-casefold-letters-apostrophe@2|" in tutorial and "RegexpTokenizer" not in tutorial


# -- small ------------------------------------------------------------------------------------------


def test_help_lists_the_commands_in_workflow_order() -> None:
    done = run_cli("--help")
    listed = [ln.split()[0] for ln in done.stdout.split("Commands:\n", 1)[1].splitlines() if ln.startswith("  ")]
    assert listed == ["init", "register", "generate", "import", "score", "calibrate", "ship", "note", "amend", "verify",
                      "report", "seat", "demo"]
    seat = run_cli("seat", "--help")
    listed = [ln.split()[0] for ln in seat.stdout.split("Commands:\n", 1)[1].splitlines() if ln.startswith("  ")]
    assert listed[:4] == ["up", "models", "check", "simulate"]


def test_amend_help_lists_every_built_in_rule_with_its_registration_date() -> None:
    from voicegate.spec._rules import RULES

    done = run_cli("amend", "--help")
    text = re.sub(r"(?<=-) ", "", " ".join(done.stdout.split()))  # a rule id wrapped at its hyphen, rejoined
    assert done.code == 0
    for rule in RULES.values():
        assert f"{rule.id} (v{rule.version}, registered {rule.registered.isoformat()}: {rule.summary})" in text


def test_seat_models_in_a_workspace_reaches_the_specs_seat(tmp_path: Path) -> None:
    from helpers.workspace import make_workspace

    from voicegate.seat._standin import StandinSeat

    with StandinSeat() as seat:
        make_workspace(tmp_path, gate_spec(GATE, url=seat.url))
        done = run_cli("seat", "models", cwd=tmp_path)
        assert done.code == 0, done.stderr
        assert done.stdout.splitlines()[0].startswith(f"seat {seat.url}")
        assert "voices-base" in done.stdout
        env_wins = run_cli("seat", "models", "--seat", f"http://127.0.0.1:{_closed_port()}/v1", cwd=tmp_path)
        assert env_wins.code == 3  # an explicit --seat still wins
    other = gate_spec("lv-other", url="http://127.0.0.1:8999/v1")
    make_workspace(tmp_path, other, git_init=False)
    done = run_cli("seat", "models", cwd=tmp_path)
    assert done.code == 2 and "the specs here name 2 seats" in done.stderr and "pass --seat URL" in done.stderr


def test_seat_up_on_a_busy_port_says_a_seat_may_already_be_up(tmp_path: Path) -> None:
    from helpers.shared import VOICES as voices

    if not (voices / "carrier").is_dir():
        pytest.skip(f"tiny-voices fixture not present at {voices}")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run_cli("seat", "up", "--voices", voices, "--port", port, cwd=tmp_path)
    assert done.code == 2
    assert done.stderr.strip() == (
        f"voicegate: port {port} on 127.0.0.1 is already in use: a seat may already be up there "
        f"(`voicegate seat models --seat http://127.0.0.1:{port}/v1` shows what it serves); choose another with --port")


def test_generate_prints_its_file_workspace_relative(tmp_path: Path) -> None:
    from voicegate.seat._standin import StandinSeat

    with StandinSeat(adapters={f"{GATE}-ckpt475": "/adapters/x"}) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url))
        done = run_cli("generate", GATE, "--quiet", cwd=root)
        again = run_cli("generate", GATE, "--quiet", cwd=root)
    assert done.code == 0, done.stderr
    assert f"stored in runs/{GATE}/generations.jsonl)" in done.stdout and str(root) not in done.stdout
    assert again.stdout.startswith(f"{GATE}: nothing to generate, all 18 generations are stored in "
                                   f"runs/{GATE}/generations.jsonl")


@pytest.mark.parametrize(("before", "after"), [
    (None, "# generations can be large; voicegate records their sha256 instead\n/runs/\n"),
    ("node_modules", "node_modules\n# generations can be large; voicegate records their sha256 instead\n/runs/\n"),
    ("node_modules\n", "node_modules\n# generations can be large; voicegate records their sha256 instead\n/runs/\n"),
])
def test_init_leaves_a_gitignore_that_ends_with_a_newline(tmp_path: Path, before: str | None, after: str) -> None:
    if before is not None:
        (tmp_path / ".gitignore").write_text(before, encoding="utf-8")
    assert run_cli("init", tmp_path).code == 0
    assert (tmp_path / ".gitignore").read_text(encoding="utf-8") == after


@pytest.mark.parametrize(("typo", "meant"), [("sedes", "seeds"), ("seed", "seeds"), ("corpus", "corpora"),
                                            ("sampling.max_token", "max_tokens"), ("Arms", "arms")])
def test_a_misspelled_spec_key_says_which_key_was_meant(tmp_path: Path, typo: str, meant: str) -> None:
    from helpers.workspace import base_spec, make_workspace

    spec = base_spec("lv-test")
    if "." in typo:
        section, key = typo.split(".")
        spec[section][key] = spec[section].pop(meant)
    else:
        spec[typo] = spec.pop(meant.lower())
    make_workspace(tmp_path, spec)
    done = run_cli("register", "lv-test", cwd=tmp_path)
    assert done.code == 2
    assert f": {typo}: unknown key; did you mean {meant}? (allowed: " in done.stderr
    far = base_spec("lv-test")
    far["zzz"] = 1
    make_workspace(tmp_path, far, git_init=False)
    assert "did you mean" not in run_cli("register", "lv-test", cwd=tmp_path).stderr


@pytest.mark.parametrize(("ratio", "shown"), [(0.8, "0.8x"), (2.1, "2.1x"), (1.04, "1.04x"), (0.96, "0.96x"),
                                              (1.003, "1.003x"), (0.9996, "0.9996x"), (1.0, "1.0x"),
                                              (1.06, "1.1x"), (0.94, "0.9x")])
def test_a_ratio_next_to_one_never_reads_as_a_tie(ratio: float, shown: str) -> None:
    from voicegate._figures import ratio_text
    from voicegate.report._page import ratio as page_ratio

    assert ratio_text(ratio) == page_ratio(ratio) == shown


def test_one_ratio_text_for_the_table_and_the_artifacts() -> None:
    # the table and the record printed a missing ratio differently ("n/a", "—"); now one function.
    import math

    from voicegate._figures import ratio_text
    from voicegate.artifacts import _format
    from voicegate.report import _table
    from voicegate.report._page import ratio as page_ratio

    assert _format.ratio_text is _table.ratio_text is ratio_text
    assert (ratio_text(None), ratio_text(math.inf), ratio_text(2.1)) == ("n/a", "inf", "2.1x")
    # The report page's filter writes what the table and the record write (it printed "—").
    assert [page_ratio(v) for v in (None, math.inf, 2.1, "inf")] == ["n/a", "inf", "2.1x", "inf"]


def test_identical_copied_spans_are_listed_once_with_how_many_seeds(tmp_path: Path) -> None:
    import dataclasses

    from helpers.bronte import result

    from voicegate.report._table import notes
    from voicegate.scoring._result import Span

    base = result("pairwise-max-spread")
    recited = [Span(text="and you ought not to think yourself", tokens=51, source="train.txt", offset=3325,
                    seed=s, prompt_id="0") for s in (1, 2, 3)]
    other = Span(text="it would have been better", tokens=8, source="train.txt", offset=17, seed=1, prompt_id="4")
    arms = tuple(dataclasses.replace(a, spans=(*recited, other)) if a.name == "ckpt925" else a for a in base.arms)
    lines = [ln for ln in notes(dataclasses.replace(base, arms=arms)) if "-token run" in ln]
    assert lines == ['  ckpt925: 51-token run from train.txt @3325: "and you ought not to think yourself" (× 3 seeds)']

    from voicegate.artifacts._entries import _spans

    listed = _spans(dataclasses.replace(base, arms=arms))
    assert [(s["arm"], s["times"]) for s in listed] == [("ckpt925", "× 3 seeds")]


def test_the_record_lists_a_recited_span_once_under_a_versioned_heading(tmp_path: Path) -> None:
    import dataclasses

    from helpers.bronte import bronte_workspace, generations, result, write_jsonl

    from voicegate.artifacts import record_score
    from voicegate.generate._import import import_file
    from voicegate.run._store import generations_hash, read_rows
    from voicegate.scoring._result import Span
    from voicegate.spec._registration import check_registered
    from voicegate.spec._spec import load_spec

    root = bronte_workspace(tmp_path / "ws", None)
    spec = load_spec(root, "lv-bronte")
    manifest = import_file(spec, write_jsonl(root / "g.jsonl", generations()))
    base = result("global-max-spread", generations_hash(read_rows(spec.generations_path)))
    recited = tuple(Span(text="and you ought not to think", tokens=51, source="train.txt", offset=3325, seed=s,
                         prompt_id="0") for s in (1, 2, 3))
    arms = tuple(dataclasses.replace(a, spans=recited) if a.name == "ckpt925" else a for a in base.arms)
    record_score(spec, check_registered(spec), dataclasses.replace(base, arms=arms), RunManifest.from_json(manifest))
    text = (root / "gates" / "lv-bronte.md").read_text(encoding="utf-8")
    block = text.split("**Longest spans shared with the training text** (list format 2: a span copied identically "
                       "in several generations is listed once, with how often):\n", 1)[1]
    assert block.startswith("- ckpt925: 51 tokens, “and you ought not to think” (× 3 seeds)\n\nSignature: ")


def test_the_readme_states_the_measured_install_size() -> None:
    """The core install is ~270 MB (numpy + scipy; nltk since dropped), not "tens of MB"."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert "tens of MB" not in readme
    core = next(ln for ln in readme.splitlines() if ln.startswith("| the core |"))
    assert "~270 MB" in core and "scipy" in core and "numpy" in core
    assert "numpy, scipy, typer" in readme and "nltk, typer" not in readme  # nltk is no longer installed
    demo = readme.split("`voicegate demo --seat vllm --voices", 1)[1].split("\n\n", 1)[0]
    assert "between 2 and 5 minutes" in demo and "measured on the" in demo  # not a bare "2 minutes"


def test_a_changed_registered_file_of_a_gate_with_results_says_to_register_a_new_gate(tmp_path: Path) -> None:
    from helpers.bronte import bronte_workspace, generations, write_jsonl

    root = bronte_workspace(tmp_path / "ws", None)
    assert run_cli("import", "lv-bronte", write_jsonl(tmp_path / "g.jsonl", generations()), cwd=root).code == 0
    (root / "corpora" / "back" / "back.txt").write_text("another background " * 300, encoding="utf-8")
    done = run_cli("score", "lv-bronte", cwd=root)
    assert done.code == 2
    line = done.stderr.strip()
    assert line.startswith("voicegate: registered file changed since registration: corpora/back/back.txt; restore "
                           "the file that has the recorded sha256 ")
    assert line.endswith("or register a new gate for the new file (results of lv-bronte exist, so it cannot be "
                         "re-registered)")
