"""Nothing raw from outside decides, and nothing raw crashes.

The rule for every test here: bad input is exit 2 with ONE line on stderr (no traceback) and
nothing written (every file of the workspace, `.git` included, hashes the same before and
after); a seat that keeps failing is exit 3 with one line.

- 5  empty corpora decide: an empty (or whitespace-only, or nearly wordless) corpus is refused
     at register; a corpus emptied after registration is caught at score by its hash.
- 7  seat answers are validated (text a string, the echoed model the requested one, a string
     finish_reason, integer usage, strict JSON), a bad answer is a seat fault under the client's
     retry policy, and `seat.timeout` is a whole-request deadline (a trickling body is cut off).
- 8  inputs that used to end in a traceback: odd spec shapes, a bad name pattern, odd import
     rows, bad `--seat` URLs (and a credential in one is never printed), damaged state files.
- 9  silent coercion: strings for booleans, duplicate YAML keys, wrong types, NaN / Infinity.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from helpers.workspace import GATE as SCORED_GATE
from helpers.workspace import (
    Result,
    Templates,
    author_like,
    base_spec,
    carrier_like,
    copier,
    gate_spec,
    git,
    make_workspace,
    registered_workspace,
    run_cli,
    voice_rows,
    write_rows,
)
from helpers.workspace import rows as stored_rows
from helpers.workspace import scoring_workspace as scored_workspace

from voicegate._errors import SeatUnreachable
from voicegate.seat import RetryPolicy, SeatClient, StandinSeat, run

GATE = "lv-test"
SAMPLING = {"temperature": 0.8, "top_p": 0.95, "max_tokens": 32}
FAST = RetryPolicy(attempts=3, base_s=0.01, max_delay_s=0.02, budget_s=5.0)


# -- helpers ------------------------------------------------------------------------------


def workspace_hash(root: Path) -> dict[str, str]:
    """sha256 of every file under root, `.git` included: a refused command changes none."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def refused(res: Result, code: int = 2, *needles: str) -> str:
    """The one stderr line of a refusal with exit `code`; fails on a traceback or a second line."""
    err = res.stderr
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert res.code == code, (res.code, err)
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def refused_unchanged(root: Path, *args: str, code: int = 2, needles: tuple[str, ...] = (),
                      env: dict[str, str | None] | None = None) -> str:
    before = workspace_hash(root)
    line = refused(run_cli(*args, cwd=root, env=env), code, *needles)
    assert workspace_hash(root) == before, "a refused command wrote something"
    return line


# Workspaces are built once per module and copied per test (most tests here refuse one input).
_TEMPLATES: Templates | None = None


@pytest.fixture(scope="module", autouse=True)
def _templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    global _TEMPLATES
    _TEMPLATES = Templates(tmp_path_factory.mktemp("templates"))
    yield
    _TEMPLATES = None


def _copy(name: str, build: Callable[[Path], object], dest: Path) -> Path:
    assert _TEMPLATES is not None
    return _TEMPLATES.copy(name, build, dest)


def constructed(dest: Path) -> Path:
    """A copy of `_workspace.scoring_workspace`: registered, over the constructed corpora, no generations."""
    return _copy("constructed", scored_workspace, dest)


def registered_gen(dest: Path) -> Path:
    """A copy of `registered_workspace(gate_spec("lv-gen"))`."""
    return _copy("lv-gen", lambda root: registered_workspace(root, gate_spec("lv-gen")), dest)


def unregistered(tmp_path: Path, spec: dict[str, Any] | None = None,
                 files: dict[str, str] | None = None) -> Path:
    """A committed workspace (helpers.workspace) whose spec is not registered yet; `files` overwrite its files.

    Copied from a git-initialised `make_workspace` of `base_spec`, then written again for `spec`."""
    root = _copy("git-init", lambda root: make_workspace(root, base_spec(GATE)), tmp_path / "ws")
    make_workspace(root, spec if spec is not None else base_spec(GATE), git_init=False)
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "workspace")
    return root


def write_spec_text(root: Path, text: str, gate: str = GATE) -> None:
    (root / "preregistrations" / f"{gate}.yaml").write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "spec")


def spec_with(path: str, value: Any) -> dict[str, Any]:
    """The default test spec with one dotted key set (a missing section is created)."""
    spec = base_spec(GATE)
    *parents, last = path.split(".")
    node = spec
    for p in parents:
        node = node.setdefault(p, {})
    node[last] = value
    return spec


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- defect 5: empty corpora decide -------------------------------------------------------------


@pytest.mark.parametrize("corpus,rel", [("heldout", "corpora/held/held.txt"),
                                        ("training", "corpora/train/train.txt"),
                                        ("background", "corpora/back/back.txt")])
@pytest.mark.parametrize("content", ["", "   \n\t\n", "... !!! 1234 -- ''", "\ufeff"])
def test_a_corpus_file_without_words_is_refused_at_register(tmp_path, corpus, rel, content):
    root = unregistered(tmp_path, files={rel: content})
    line = refused_unchanged(root, "register", GATE, needles=(f"corpora.{corpus}", rel))
    assert "no words" in line
    assert not (root / "preregistrations" / f"{GATE}.registration.json").exists()


def test_an_empty_heldout_file_beside_a_real_one_is_refused(tmp_path):
    root = unregistered(tmp_path, files={"corpora/held/empty.txt": ""})
    refused_unchanged(root, "register", GATE, needles=("corpora.heldout", "corpora/held/empty.txt", "no words"))


@pytest.mark.parametrize("corpus,rel", [("heldout", "corpora/held/held.txt"),
                                        ("training", "corpora/train/train.txt")])
def test_a_corpus_of_too_few_words_is_refused_at_register(tmp_path, corpus, rel):
    # A training corpus shorter than copying.max_run cannot show a verbatim run of that length,
    # and a twelve-word held-out text is no voice to measure against.
    root = unregistered(tmp_path, files={rel: "She said nothing; the wind said everything, and the heather bent."})
    refused_unchanged(root, "register", GATE, needles=(f"corpora.{corpus}", "words"))


def test_a_corpus_emptied_after_registration_is_refused_at_score(tmp_path):
    root = constructed(tmp_path / "ws")
    write_rows(root, voice_rows({"base": carrier_like("b"), "cand": author_like("c"), "other": copier}))
    (root / "corpora" / "held" / "held.txt").write_text("", encoding="utf-8")
    refused_unchanged(root, "score", SCORED_GATE, "--quiet", needles=("corpora/held/held.txt", "changed"))
    (root / "corpora" / "held" / "held.txt").unlink()
    refused_unchanged(root, "score", SCORED_GATE, "--quiet", needles=("corpora",))


# -- defect 7: seat answers are validated --------------------------------------------------------


def _answer(echoed: Any = "lv-a", **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": echoed,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "The moor lay grey."},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9},
    }
    for path, value in overrides.items():
        node: Any = body
        *parents, last = path.split("__")
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        if value is _DROP:
            del node[last]
        else:
            node[last] = value
    return body


_DROP = object()


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


BAD_ANSWERS: dict[str, bytes] = {
    "content null": json.dumps(_answer(choices__0__message__content=None)).encode(),
    "content a number": json.dumps(_answer(choices__0__message__content=42)).encode(),
    "content a list": json.dumps(_answer(choices__0__message__content=["a", "b"])).encode(),
    "no message": json.dumps(_answer(choices__0__message=_DROP)).encode(),
    "message a string": json.dumps(_answer(choices__0__message="hello")).encode(),
    "no choices": json.dumps(_answer(choices=[])).encode(),
    "choices a dict": json.dumps(_answer(choices={"0": {}})).encode(),
    "another model echoed": json.dumps(_answer("lv-other")).encode(),
    "no model echoed": json.dumps({k: v for k, v in _answer().items() if k != "model"}).encode(),
    "finish_reason a dict": json.dumps(_answer(choices__0__finish_reason={"type": "stop"})).encode(),
    "finish_reason a number": json.dumps(_answer(choices__0__finish_reason=1)).encode(),
    "usage NaN": json.dumps(_answer(usage__completion_tokens=float("nan"))).encode(),
    "usage Infinity": json.dumps(_answer(usage__total_tokens=float("inf"))).encode(),
    "usage a string": json.dumps(_answer(usage="many")).encode(),
    "usage tokens a string": json.dumps(_answer(usage__completion_tokens="4")).encode(),
    "usage tokens negative": json.dumps(_answer(usage__completion_tokens=-4)).encode(),
    "usage tokens true": json.dumps(_answer(usage__prompt_tokens=True)).encode(),
    "body a list": b"[]",
    "body not JSON": b"<html>gateway</html>",
    "body deeply nested": _nested(100_000).encode(),
}


def _mock_seat(bodies: Iterator[bytes]) -> tuple[httpx.MockTransport, list[int]]:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(200, content=next(bodies), headers={"content-type": "application/json"})

    return httpx.MockTransport(handler), calls


def _chat(transport: httpx.MockTransport, *, retry: RetryPolicy = FAST, timeout: float = 5.0) -> Any:
    async def go() -> Any:
        async with SeatClient("http://seat.test:8027/v1", retry=retry, transport=transport, timeout=timeout) as c:
            return await c.chat("lv-a", "Write about rain.", seed=1, sampling=SAMPLING)

    return run(go())


@pytest.mark.parametrize("what", sorted(BAD_ANSWERS))
def test_a_bad_chat_answer_is_a_seat_fault_retried_then_exit_3(what):
    transport, calls = _mock_seat(iter([BAD_ANSWERS[what]] * 10))
    with pytest.raises(SeatUnreachable) as caught:
        _chat(transport)
    assert len(calls) == FAST.attempts          # the retry policy applied to it
    message = str(caught.value)
    assert "\n" not in message and "/v1/chat/completions" in message
    assert caught.value.exit_code == 3


def test_a_bad_answer_then_a_good_one_is_the_good_one():
    transport, calls = _mock_seat(iter([BAD_ANSWERS["content null"], BAD_ANSWERS["another model echoed"],
                                        json.dumps(_answer()).encode()]))
    done = _chat(transport)
    assert done.text == "The moor lay grey." and done.finish_reason == "stop"
    assert done.usage == {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}
    assert len(calls) == 3


def test_a_good_answer_without_usage_or_finish_reason_is_kept():
    body = _answer(usage=None, choices__0__finish_reason=None)
    done = _chat(_mock_seat(iter([json.dumps(body).encode()]))[0])
    assert done.usage is None and done.finish_reason is None


@pytest.mark.parametrize("body", [_nested(100_000).encode(), b'{"data": [{"id": {"x": 1}}]}',
                                  b'{"data": [{"id": "a", "root": ["r"]}]}', b'{"data": [{"id": "a"}], "x": NaN}'],
                         ids=["deep", "id-dict", "root-list", "nan"])
def test_an_odd_models_answer_is_a_one_line_seat_error(body):
    from voicegate.seat import SeatError

    async def go() -> Any:
        transport = httpx.MockTransport(lambda request: httpx.Response(200, content=body))
        async with SeatClient("http://seat.test:8027/v1", retry=FAST, transport=transport) as c:
            return await c.models()

    with pytest.raises(SeatError) as caught:
        run(go())
    assert "\n" not in str(caught.value) and caught.value.exit_code == 2


class _EditingSeat(StandinSeat):
    """A stand-in seat whose chat answers for `model` go through `edit` (a broken seat)."""

    def __init__(self, model: str, edit: Callable[[dict[str, Any]], Any], **kw: Any) -> None:
        super().__init__(**kw)
        self._edit_model = model
        self._edit = edit

    def _chat(self, entry: dict[str, Any], data: Any) -> tuple[int, Any, dict[str, str]]:
        status, payload, extra = super()._chat(entry, data)
        if status == 200 and isinstance(data, dict) and data.get("model") == self._edit_model:
            payload = self._edit(payload)
        return status, payload, extra


def _null_content(payload: dict[str, Any]) -> dict[str, Any]:
    payload["choices"][0]["message"]["content"] = None
    return payload


@pytest.mark.parametrize("edit", [
    _null_content,
    lambda p: {**p, "model": "lv-somebody-else"},
    lambda p: {**p, "choices": [{**p["choices"][0], "finish_reason": {"why": "stop"}}]},
    lambda p: {**p, "usage": {**p["usage"], "completion_tokens": float("nan")}},
], ids=["content-null", "model-echo", "finish-dict", "usage-nan"])
def test_generate_stores_no_row_from_a_bad_answer_and_exits_3(tmp_path, edit):
    model = "lv-gen-ckpt475"
    with _EditingSeat(model, edit, adapters={model: "/adapters/lv-gen/ckpt475"}) as seat:
        spec = gate_spec("lv-gen", url=seat.url, concurrency=2,
                         candidates=[{"name": "ckpt475", "model": model, "role": "candidate"}])
        root = registered_workspace(tmp_path / "ws", spec)
        res = run_cli("generate", "lv-gen", "--quiet", "--retries", "2", "--retry-budget", "2", cwd=root)
    # each retry is a line under --quiet too; then the one
    # reason
    retrying = "voicegate: retrying POST /v1/chat/completions: bad answer"
    retries = [ln for ln in res.stderr.splitlines() if ln.startswith(retrying)]
    rest = "".join(ln + "\n" for ln in res.stderr.splitlines() if ln not in retries)
    line = refused(Result(res.code, res.stdout, rest), 3)
    assert retries and "/v1/chat/completions" in line
    kept = stored_rows(root, "lv-gen")
    assert all(r["model"] != model for r in kept)
    assert all(isinstance(r["text"], str) for r in kept)
    assert all(r["finish_reason"] in (None, "stop", "length") for r in kept)
    # Once the seat answers properly, the same run resumes and completes.
    with StandinSeat(adapters={model: "/adapters/lv-gen/ckpt475"}) as good:
        res = run_cli("generate", "lv-gen", "--quiet", "--seat", good.url, cwd=root)
    assert res.code == 0, res.stderr
    assert len(stored_rows(root, "lv-gen")) == 2 * 2 * 3


def test_seat_timeout_is_a_whole_request_deadline_against_a_trickling_body():
    # 1 byte every 20 ms: each read is quick, the whole answer takes ~10 s.
    with StandinSeat(trickle_s=0.02) as seat:
        async def go() -> Any:
            async with SeatClient(seat.url, timeout=0.5,
                                  retry=RetryPolicy(attempts=2, base_s=0.01, max_delay_s=0.02, budget_s=5.0)) as c:
                return await c.chat("voices-base", "Write about rain.", seed=1, sampling=SAMPLING)

        t0 = time.monotonic()
        with pytest.raises(SeatUnreachable) as caught:
            run(go())
        took = time.monotonic() - t0
    assert took < 3.0, took
    assert "timed out" in str(caught.value) and "\n" not in str(caught.value)


def test_a_trickling_body_within_the_deadline_is_read_whole():
    with StandinSeat(trickle_s=0.0005) as seat:
        async def go() -> Any:
            async with SeatClient(seat.url, timeout=10.0, retry=FAST) as c:
                return await c.chat("voices-base", "Write about rain.", seed=1, sampling=SAMPLING)

        done = run(go())
    assert done.text and done.finish_reason in ("stop", "length")


# -- defect 8: no tracebacks -----------------------------------------------------------------------


@pytest.mark.parametrize("path,value", [
    ("floor.rule", ["pairwise-max-spread"]),
    ("floor.rule", {"id": "pairwise-max-spread"}),
    ("prefer", [["ckpt475"]]),
    ("prefer", [{"arm": "ckpt475"}]),
    ("prefer", {"ckpt475": 1}),
    ("voice.view", ["stylometric"]),
    ("arms", [{"name": ["base"], "model": "voices-base", "role": "base"}]),
    ("seeds", [[101]]),
    ("seat.url", ["http://127.0.0.1:8027/v1"]),
])
def test_odd_spec_shapes_are_one_line_exit_2(tmp_path, path, value):
    root = unregistered(tmp_path, spec_with(path, value))
    refused_unchanged(root, "register", GATE, needles=(path.split(".")[0],))


@pytest.mark.parametrize("pattern", ["(", "lv-[", "*", "a{2,1}"])
def test_an_invalid_name_pattern_is_one_line_exit_2(tmp_path, pattern):
    root = unregistered(tmp_path)
    env: dict[str, str | None] = {"VOICEGATE_NAME_PATTERN": pattern}
    for args in (("register", GATE), ("score", GATE), ("verify", GATE), ("verify",), ("report", GATE)):
        refused_unchanged(root, *args, env=env, needles=("VOICEGATE_NAME_PATTERN",))


@pytest.fixture
def scored(tmp_path: Path) -> Path:
    """A registered, imported and scored workspace (`_workspace.scoring_workspace`'s gate)."""
    return _copy("scored", _scored, tmp_path / "ws")


def _scored(root: Path) -> Path:
    scored_workspace(root)
    source = root.parent / "gens.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in voice_rows(
        {"base": carrier_like("b"), "cand": author_like("c"), "other": copier})), encoding="utf-8")
    assert run_cli("import", SCORED_GATE, source, cwd=root).code == 0
    res = run_cli("score", SCORED_GATE, "--quiet", cwd=root)
    assert res.code == 0, res.stderr
    return root


def _import_rows(root: Path, tmp_path: Path, rows: list[Any], name: str = "more.jsonl") -> Path:
    source = tmp_path / name
    source.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return source


def _good_row(**kw: Any) -> dict[str, Any]:
    return {"arm": "base", "seed": 101, "prompt_id": "0", "text": "The moor lay grey.", **kw}


ODD_IMPORT_ROWS: dict[str, Any] = {
    "arm a list": _good_row(arm=["base"]),
    "arm a dict": _good_row(arm={"name": "base"}),
    "arm null": _good_row(arm=None),
    "seed a list": _good_row(seed=[101]),
    "seed a float": _good_row(seed=101.0),
    "seed a string": _good_row(seed="101"),
    "prompt_id a list": _good_row(prompt_id=["0"]),
    "prompt_id a float": _good_row(prompt_id=0.0),
    "kind a list": _good_row(kind=["voice"]),
    "kind a dict": _good_row(kind={"voice": 1}),
    "model a list": _good_row(model=["voices-base"]),
    "text null": _good_row(text=None),
    "text a dict": _good_row(text={"t": "x"}),
    "usage a string": _good_row(usage="many"),
    "usage a list": _good_row(usage=[1, 2]),
    "usage tokens a string": _good_row(usage={"completion_tokens": "4"}),
    "usage tokens a float": _good_row(usage={"completion_tokens": 4.5}),
    "finish_reason a dict": _good_row(finish_reason={"type": "stop"}),
    "finish_reason a number": _good_row(finish_reason=3),
    "imported not a bool": _good_row(imported="yes"),
    "a list, not an object": '["base", 101, "0", "text"]',
    "a string, not an object": '"base"',
    "deeply nested": '{"arm": "base", "seed": 101, "prompt_id": "0", "text": "x", "extra": ' + _nested(100_000) + "}",
    "deeply nested objects": '{"a":' * 50_000 + "1" + "}" * 50_000,
    "NaN": '{"arm": "base", "seed": 101, "prompt_id": "0", "text": "x", "latency_s": NaN}',
    "Infinity": '{"arm": "base", "seed": 101, "prompt_id": "0", "text": "x", "latency_s": Infinity}',
    "-Infinity": '{"arm": "base", "seed": 101, "prompt_id": "0", "text": "x", "usage": {"total_tokens": -Infinity}}',
    "a float too large": '{"arm": "base", "seed": 101, "prompt_id": "0", "text": "x", "latency_s": 1e999}',
    "NaN seed": '{"arm": "base", "seed": NaN, "prompt_id": "0", "text": "x"}',
    "a lone surrogate": '{"arm": "base", "seed": 101, "prompt_id": "0", "text": "\\ud800"}',
    "a duplicate key": '{"arm": "base", "seed": 101, "prompt_id": "0", "text": "x", "text": "y"}',
}


@pytest.mark.parametrize("what", sorted(ODD_IMPORT_ROWS))
def test_odd_import_rows_are_one_line_exit_2_and_nothing_imported(tmp_path, what):
    root = constructed(tmp_path / "ws")
    source = _import_rows(root, tmp_path, [_good_row(prompt_id="1"), ODD_IMPORT_ROWS[what]])
    line = refused_unchanged(root, "import", SCORED_GATE, source, needles=("line 2",))
    assert "nothing imported" in line
    assert not (root / "runs" / SCORED_GATE / "generations.jsonl").exists()


def test_report_after_an_import_of_usage_as_a_string(scored, tmp_path):
    # The import refuses it; a row like it already on disk (written before the fix) is a damaged file.
    source = _import_rows(scored, tmp_path, [_good_row(usage="12")])
    assert run_cli("import", SCORED_GATE, source, cwd=scored).code == 2
    assert run_cli("report", SCORED_GATE, cwd=scored).code == 0
    gens = scored / "runs" / SCORED_GATE / "generations.jsonl"
    rows = [json.loads(x) for x in gens.read_text(encoding="utf-8").splitlines()]
    rows[0]["usage"] = "12"
    gens.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    refused_unchanged(scored, "report", SCORED_GATE, needles=("generations.jsonl", "line 1", "usage"))


SEAT_URLS_BAD = {
    "a newline": "http://127.0.0.1:8027/v1\nX-Injected: 1",
    "a tab": "http://127.0.0.1:8027/v1\t",
    "a space in the host": "http://127 .0.0.1:8027/v1",
    "port 99999": "http://127.0.0.1:99999/v1",
    "port 0": "http://127.0.0.1:0/v1",
    "port not a number": "http://127.0.0.1:80x/v1",
    "no host": "http://:8027/v1",
    "no host, no port": "http:///v1",
    "only userinfo": "http://user:pw@/v1",
    "not http": "ftp://127.0.0.1:8027/v1",
}


@pytest.mark.parametrize("what", sorted(SEAT_URLS_BAD))
def test_bad_seat_urls_are_exit_2_for_seat_commands(what):
    refused(run_cli("seat", "models", "--seat", SEAT_URLS_BAD[what]), 2, "--seat")


@pytest.mark.parametrize("what", sorted(SEAT_URLS_BAD))
def test_bad_seat_urls_are_exit_2_for_generate_and_nothing_written(tmp_path, what):
    root = registered_gen(tmp_path / "ws")
    refused_unchanged(root, "generate", "lv-gen", "--quiet", "--seat", SEAT_URLS_BAD[what], needles=("seat",))
    assert not (root / "runs" / "lv-gen").exists()  # runs/.cache is register's (the warmed corpus cache)


@pytest.mark.parametrize("what", sorted(SEAT_URLS_BAD))
def test_bad_seat_urls_in_a_spec_are_exit_2(tmp_path, what):
    root = unregistered(tmp_path, spec_with("seat.url", SEAT_URLS_BAD[what]))
    refused_unchanged(root, "register", GATE, needles=("seat.url",))


def test_a_credential_in_the_seat_url_is_never_printed(tmp_path):
    secret = "s3cr3t-Pa55"
    port = closed_port()
    for url, code in ((f"http://admin:{secret}@127.0.0.1:{port}/v1", 3),
                      (f"http://{secret}@127.0.0.1:{port}/v1", 3),
                      (f"http://{secret}@127.0.0.1:99999/v1", 2),
                      (f"http://admin:{secret}@127.0.0.1:99999/v1", 2),
                      (f"http://admin:{secret}@127.0.0.1:{port}/v1\n", 2),
                      (f"ftp://admin:{secret}@127.0.0.1:{port}/v1", 2)):
        res = run_cli("seat", "models", "--seat", url)
        refused(res, code)
        assert secret not in res.stderr and secret not in res.stdout
    root = registered_gen(tmp_path / "ws")
    for url, code in ((f"http://admin:{secret}@127.0.0.1:{port}/v1", 3),
                      (f"http://admin:{secret}@127.0.0.1:99999/v1", 2)):
        res = run_cli("generate", "lv-gen", "--quiet", "--retries", "1", "--retry-budget", "1", "--seat", url,
                      cwd=root)
        refused(res, code)
        assert secret not in res.stderr and secret not in res.stdout
        for p in root.rglob("*"):
            if p.is_file() and ".git" not in p.parts:
                assert secret.encode() not in p.read_bytes(), p


def test_a_seat_with_a_credential_that_answers_never_shows_it(tmp_path):
    secret = "s3cr3t-Pa55"
    with StandinSeat() as seat:
        url = seat.url.replace("http://", f"http://admin:{secret}@")
        res = run_cli("seat", "models", "--seat", url)
        res_missing = run_cli("seat", "cost", "lv-missing", "--n", "1", "--seat", url)
    assert res.code == 0 and secret not in res.stdout + res.stderr
    assert res_missing.code == 2 and secret not in res_missing.stdout + res_missing.stderr


@pytest.mark.parametrize("content", ['[]', '"x"', '{"results": []}', '{"results": {}, "current": 5}',
                                     '{"results": {"pairwise-max-spread": 7}}', '{"results": {}, "current": {}}',
                                     "{not json", ""])
def test_a_damaged_recorded_json_is_one_line_exit_2_naming_it(scored, content):
    state = scored / "runs" / SCORED_GATE / "recorded.json"
    state.write_text(content, encoding="utf-8")
    for args in (("score", SCORED_GATE, "--quiet"), ("ship", SCORED_GATE, "cand", "--reason", "fine"),
                 ("amend", SCORED_GATE, "--rule", "global-max-spread", "--reason", "a better rule")):
        refused_unchanged(scored, *args, needles=("recorded.json",))


@pytest.mark.parametrize("content", ['[]', '"x"', '{"spec_sha256": 5}', '{}', '{"spec_sha256": "ab", "files": []}',
                                     '{"spec_sha256": "ab", "files": {"a": 1}}', "{not json", "",
                                     '{"spec_sha256": "ab", "files": {}, "registered_at": 5, "spec": []}'])
def test_a_damaged_registration_json_is_one_line_exit_2_naming_it(scored, content):
    reg = scored / "preregistrations" / f"{SCORED_GATE}.registration.json"
    reg.write_text(content, encoding="utf-8")
    for args in (("score", SCORED_GATE, "--quiet"), ("ship", SCORED_GATE, "cand", "--reason", "fine"),
                 ("report", SCORED_GATE), ("import", SCORED_GATE, "nowhere.jsonl")):
        refused_unchanged(scored, *args, needles=("registration.json",))


@pytest.mark.parametrize("bad", ["{not json", "[1, 2]", '"a string"', "null"])
def test_a_corrupt_decisions_line_is_one_line_exit_2_naming_the_file(scored, bad):
    assert run_cli("ship", SCORED_GATE, "cand", "--reason", "it passes", cwd=scored).code == 0
    path = scored / "runs" / SCORED_GATE / "decisions.jsonl"
    good = path.read_text(encoding="utf-8")
    path.write_text(bad + "\n" + good, encoding="utf-8")
    for args in (("ship", SCORED_GATE, "cand", "--reason", "again"), ("report", SCORED_GATE),
                 ("amend", SCORED_GATE, "--rule", "global-max-spread", "--reason", "a better rule")):
        refused_unchanged(scored, *args, needles=("decisions.jsonl",))


def test_a_corrupt_generations_line_is_one_line_exit_2_naming_the_file(scored):
    path = scored / "runs" / SCORED_GATE / "generations.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text(lines[0] + "{torn\n" + "".join(lines[1:]), encoding="utf-8")
    for args in (("score", SCORED_GATE, "--quiet"), ("report", SCORED_GATE)):
        refused_unchanged(scored, *args, needles=("generations.jsonl", "line 2"))


@pytest.mark.parametrize("edit", [
    lambda r: {**r, "text": 7}, lambda r: {**r, "arm": ["base"]}, lambda r: {**r, "seed": "101"},
    lambda r: {k: v for k, v in r.items() if k != "prompt_id"},
], ids=["text-int", "arm-list", "seed-str", "no-prompt-id"])
def test_a_wrong_shaped_generation_row_is_one_line_exit_2(scored, edit):
    path = scored / "runs" / SCORED_GATE / "generations.jsonl"
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    rows[3] = edit(rows[3])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for args in (("score", SCORED_GATE, "--quiet"), ("report", SCORED_GATE)):
        refused_unchanged(scored, *args, needles=("generations.jsonl", "line 4"))


# -- defect 9: silent coercion ----------------------------------------------------------------------


@pytest.mark.parametrize("path,value", [
    ("damage.truncation_decides", "false"),
    ("damage.truncation_decides", "no"),
    ("damage.truncation_decides", 0),
    ("data_dir", ["a"]),
    ("data_dir", 5),
    ("seat.timeout", "30"),
    ("seat.timeout", True),
    ("seat.concurrency", 4.0),
    ("copying.tolerance", "0.01"),
    ("copying.n", 8.0),
    ("sampling.max_tokens", "64"),
    ("expected_words", True),
    ("author", ["A", "B"]),
    ("artifacts.record", ["gates/x.md"]),
    ("prompts", [{"id": True, "text": "Write about the moor."}]),
    ("prompts", [{"id": 1.5, "text": "Write about the moor."}]),
    ("prompts", [{"id": ["a"], "text": "Write about the moor."}]),
    ("prompts", [{"id": "a", "text": 5}]),
    ("prompts", [5, "Write about rain."]),
    ("seeds", [True, 202]),
    ("seeds", [101.0]),
])
def test_wrong_types_are_refused_not_coerced(tmp_path, path, value):
    root = unregistered(tmp_path, spec_with(path, value))
    refused_unchanged(root, "register", GATE, needles=(path.split(".")[0],))


def test_a_hub_revision_that_is_not_a_string_is_refused(tmp_path):
    spec = base_spec(GATE)
    spec["voice"] = {"view": "embedding", "model": "sentence-transformers/all-MiniLM-L6-v2", "revision": [1]}
    root = unregistered(tmp_path, spec)
    refused_unchanged(root, "register", GATE, needles=("voice.revision",))


@pytest.mark.parametrize("pid", ["true", "false", "1.5", "null", '["a"]'])
def test_a_prompts_jsonl_id_that_is_not_a_string_or_integer_is_refused(tmp_path, pid):
    spec = base_spec(GATE)
    spec["prompts"] = "prompts/beats.jsonl"
    root = unregistered(tmp_path, spec, files={"prompts/beats.jsonl": f'{{"id": {pid}, "text": "Write."}}\n'})
    refused_unchanged(root, "register", GATE, needles=("prompts", "line 1"))


@pytest.mark.parametrize("text", [
    "gate: lv-test\ngate: lv-other\n",
    "floor:\n  rule: pairwise-max-spread\n  rule: global-max-spread\n",
    "damage:\n  truncation_decides: false\n  truncation_decides: true\n",
])
def test_a_duplicate_yaml_key_is_refused(tmp_path, text):
    root = unregistered(tmp_path)
    body = yaml.safe_dump({k: v for k, v in base_spec(GATE).items()
                           if k not in yaml.safe_load(text)}, sort_keys=False)
    write_spec_text(root, body + text)
    refused_unchanged(root, "register", GATE, needles=("duplicate key",))


def test_a_duplicate_key_in_the_probes_file_is_refused(tmp_path):
    spec = spec_with("damage.probes", "probes/general.yaml")
    probes = "probes:\n  - id: p1\n    prompt: Say hi.\n    prompt: Say bye.\n    check: {max_words: 5}\n"
    root = unregistered(tmp_path, spec, files={"probes/general.yaml": probes})
    refused_unchanged(root, "register", GATE, needles=("duplicate key",))


def test_a_yaml_nan_or_infinity_in_a_spec_is_refused(tmp_path):
    for text in ("seat:\n  timeout: .nan\n", "seat:\n  timeout: .inf\n", "copying:\n  tolerance: -.inf\n"):
        root = unregistered(tmp_path / text.split(":")[1].strip())
        spec = base_spec(GATE)
        section = yaml.safe_load(text)
        for key, sub in section.items():
            spec[key] = {**spec.get(key, {}), **{k: "PLACEHOLDER" for k in sub}}
        body = yaml.safe_dump(spec, sort_keys=False).replace("PLACEHOLDER", text.split(": ")[1].strip())
        write_spec_text(root, body)
        refused_unchanged(root, "register", GATE, needles=("must be a number",))


def test_nan_is_never_written_into_generations_jsonl(tmp_path):
    from voicegate.run._store import append_rows

    path = tmp_path / "generations.jsonl"
    with pytest.raises(ValueError):
        append_rows(path, [_good_row(latency_s=float("nan"))])
    assert not path.exists() or path.read_bytes() == b""


def test_threads_are_not_left_behind_by_a_trickling_seat():
    # The stand-in's trickling handler stops when the client goes away, so a test cannot leak it.
    before = threading.active_count()
    test_seat_timeout_is_a_whole_request_deadline_against_a_trickling_body()
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= before


@pytest.mark.parametrize("content", ["[]", '{"kind": "score", "time": "t", "writes": 5}',
                                     '{"kind": "score", "time": "t", "writes": [{"path": "x", "after": ""}]}',
                                     '{"kind": "score", "time": "t", "writes": ["x"]}', "{torn"])
def test_a_damaged_pending_intent_is_one_line_exit_2_naming_it(scored, content):
    intent = scored / "runs" / SCORED_GATE / "pending-entry.json"
    intent.write_text(content, encoding="utf-8")
    for args in (("score", SCORED_GATE, "--quiet"), ("ship", SCORED_GATE, "cand", "--reason", "fine")):
        refused_unchanged(scored, *args, needles=("pending-entry.json",))


@pytest.mark.parametrize("line", ['{"id": "a", "text": "Write.", "text": "Other."}', '{"id": NaN, "text": "Write."}',
                                  '{"id": "a", "text": "Write.", "x": ' + _nested(100_000) + "}",
                                  '{"id": 1e999, "text": "Write."}'], ids=["dup", "nan", "deep", "inf"])
def test_a_prompts_jsonl_line_that_is_not_strict_json_is_refused(tmp_path, line):
    spec = base_spec(GATE)
    spec["prompts"] = "prompts/beats.jsonl"
    root = unregistered(tmp_path, spec, files={"prompts/beats.jsonl": line + "\n"})
    refused_unchanged(root, "register", GATE, needles=("prompts", "line 1"))


def test_a_deeply_nested_error_body_from_the_seat_is_one_line():
    from voicegate.seat import SeatError

    async def go() -> Any:
        transport = httpx.MockTransport(lambda request: httpx.Response(400, content=_nested(100_000).encode()))
        async with SeatClient("http://seat.test:8027/v1", retry=FAST, transport=transport) as c:
            return await c.chat("lv-a", "Write.", seed=1, sampling=SAMPLING)

    with pytest.raises(SeatError) as caught:
        run(go())
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 600


@pytest.mark.parametrize("name,content", [("run.json", _nested(100_000)), ("run.json", '{"a": NaN}'),
                                          ("scores.json", _nested(100_000)), ("scores.json", "{torn")],
                         ids=["run-deep", "run-nan", "scores-deep", "scores-torn"])
def test_a_damaged_run_json_or_scores_json_is_one_line_exit_2(scored, name, content):
    (scored / "runs" / SCORED_GATE / name).write_text(content, encoding="utf-8")
    commands = [("report", SCORED_GATE)] + ([("score", SCORED_GATE, "--quiet")] if name == "run.json" else [])
    for args in commands:
        refused_unchanged(scored, *args, needles=(name,))


def test_a_json_probe_check_on_a_runaway_nested_reply_fails_not_crashes():
    from voicegate.scoring._damage import check_probe

    assert check_probe({"json": True}, _nested(100_000)) is False
    assert check_probe({"json": True}, '{"a": 1}') is True


ALIAS_BOMB = "".join(f"{a}: &{a} [{', '.join([f'*{b}' if b else 'x'] * 10)}]\n"
                     for a, b in zip("abcdefghi", ["", *"abcdefgh"], strict=True))
YAML_BOMBS = {
    "flow nesting": "gate: " + "[" * 20_000 + "]" * 20_000 + "\n",
    "block nesting": "gate:\n" + "".join("  " * i + "a:\n" for i in range(1, 3000)),
    "moderate nesting": "gate: lv-test\ndescription: " + "[" * 200 + "]" * 200 + "\n",
    "alias bomb": ALIAS_BOMB,
}


@pytest.mark.parametrize("what", sorted(YAML_BOMBS))
def test_a_runaway_yaml_spec_is_one_line_exit_2(tmp_path, what):
    root = unregistered(tmp_path)
    write_spec_text(root, YAML_BOMBS[what])
    for args in (("register", GATE), ("verify", GATE), ("verify",), ("score", GATE)):
        line = refused_unchanged(root, *args, needles=(f"{GATE}.yaml",))
        assert "deep" in line or "aliases" in line


@pytest.mark.parametrize("what", sorted(YAML_BOMBS))
def test_a_runaway_yaml_probes_file_is_one_line_exit_2(tmp_path, what):
    spec = spec_with("damage.probes", "probes/general.yaml")
    root = unregistered(tmp_path, spec, files={"probes/general.yaml": YAML_BOMBS[what]})
    refused_unchanged(root, "register", GATE, needles=("damage.probes", "not valid YAML"))
