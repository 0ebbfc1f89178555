"""The seat-ops library parts on their own: compose parsing, drift, cost arithmetic, sizes."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from voicegate._errors import VoicegateError
from voicegate.seat import StandinSeat
from voicegate.seat._carrier_fit import gb, memory_table, parse_bytes
from voicegate.seat._client import BadAnswer, parse_chat_stream
from voicegate.seat._cost import ARMS, CostResult, Run, schedule
from voicegate.seat._drift import compare
from voicegate.seat._lora_modules import compose_line_hint, interpolate, read_compose
from voicegate.seat._retire import mask


def _write(tmp_path, text: str, name: str = "compose.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


# -- compose parsing ----------------------------------------------------------------


def test_fixture_compose_persists_yarros_and_bronte_with_host_paths(compose_fixture):
    c = read_compose(compose_fixture, environ={})
    assert [(m.name, m.path, m.host_path, m.service) for m in c.modules] == [
        ("lv-yarros", "/adapters/lv-yarros-4b-v1", "/tank/aimodels/voice-adapters/lv-yarros-4b-v1", "vllm-voices"),
        ("lv-bronte", "/adapters/lv-bronte-4b-v1", "/tank/aimodels/voice-adapters/lv-bronte-4b-v1", "vllm-voices"),
    ]
    assert c.warnings == []
    svc = c.services[0]
    assert svc.flag("--kv-cache-memory-bytes", "--kv-cache-memory") == ["2147483648"]
    assert svc.flag("--served-model-name") == ["voices-base"]


def test_interpolation_follows_compose_rules():
    env = {"SET": "v", "EMPTY": ""}
    assert interpolate("${SET:-d} ${UNSET:-d} ${EMPTY:-d} ${EMPTY-d} ${UNSET-d}", env) == "v d d  d"
    assert interpolate("$$literal ${SET:+alt} ${UNSET:+alt} $SET", env) == "$literal alt  v"
    with pytest.raises(VoicegateError, match="MUST is required: say why"):
        interpolate("${MUST:?say why}", env)


def test_all_item_forms_env_and_dotenv(tmp_path):
    (tmp_path / ".env").write_text("ADAPTERS=/srv/adapters\nNAME_B=lv-b\n")
    p = _write(tmp_path, """
services:
  seat:
    volumes:
      - ${ADAPTERS}:/adapters:ro
      - {type: bind, source: /srv/deep, target: /adapters/deep}
    command:
      - /model
      - --enable-lora
      - --lora-modules
      - lv-a=/adapters/lv-a
      - '{"name": "${NAME_B}", "path": "/adapters/deep/lv-b", "base_model_name": "voices-base"}'
      - {"name": "lv-c", "path": "/adapters/x,y"}
      - --max-loras
      - "4"
""")
    c = read_compose(p, environ={"NAME_B": "lv-b-from-shell"})   # the shell wins over .env
    assert [(m.name, m.path, m.host_path, m.base_model_name) for m in c.modules] == [
        ("lv-a", "/adapters/lv-a", "/srv/adapters/lv-a", None),
        ("lv-b-from-shell", "/adapters/deep/lv-b", "/srv/deep/lv-b", "voices-base"),
        ("lv-c", "/adapters/x,y", "/srv/adapters/x,y", None),
    ]


def test_string_command_equals_form_and_repeated_flag_warning(tmp_path):
    p = _write(tmp_path, """
services:
  seat:
    command: /model --enable-lora --lora-modules lv-a=/a lv-b=/b --max-loras 2 --lora-modules=lv-c=/c
  other:
    image: redis
""")
    c = read_compose(p, environ={})
    # vLLM's argparse action replaces the list on each occurrence: only the last survives.
    assert [m.name for m in c.modules] == ["lv-c"]
    assert len(c.warnings) == 1 and "given 2 times" in c.warnings[0]


def test_several_lora_services_need_a_choice(tmp_path):
    p = _write(tmp_path, """
services:
  a: {command: [--enable-lora, --lora-modules, lv-a=/a]}
  b: {command: [--enable-lora, --lora-modules, lv-b=/b]}
""")
    with pytest.raises(VoicegateError, match="pick one with --service"):
        read_compose(p, environ={})
    assert [m.name for m in read_compose(p, service="b", environ={}).modules] == ["lv-b"]
    with pytest.raises(VoicegateError, match="no service named 'c'"):
        read_compose(p, service="c", environ={})


@pytest.mark.parametrize("item, msg", [
    ("lv-a", "neither name=path nor JSON"),
    ('{"name": "lv-a"}', "needs string 'name' and 'path'"),
    ('{"name": "lv-a", "path": "/a", "rank": 8}', "fields vLLM refuses"),
])
def test_bad_items_are_refused(tmp_path, item, msg):
    p = _write(tmp_path, "services:\n  s:\n    command: [--lora-modules, " + json.dumps(item) + "]\n")
    with pytest.raises(VoicegateError, match=msg):
        read_compose(p, environ={})


def test_compose_line_hint_without_and_with_compose(compose_fixture):
    assert compose_line_hint(None, "lv-x", "/adapters/lv-x") == (
        "under `- --lora-modules` in the seat's compose command list", "- lv-x=/adapters/lv-x")
    where, line = compose_line_hint(compose_fixture, "lv-x", "/adapters/lv-x")
    assert line == "      - lv-x=/adapters/lv-x"
    assert where.endswith("after line 115 (- lv-bronte=/adapters/lv-bronte-4b-v1)")
    # The line it names really is the last --lora-modules item of the file.
    assert compose_fixture.read_text().splitlines()[114].strip() == "- lv-bronte=/adapters/lv-bronte-4b-v1"


# -- drift -------------------------------------------------------------------------------


def _card(id_, root, parent="voices-base"):
    return SimpleNamespace(id=id_, root=root, parent=parent)


def test_compare_classifies_every_case(compose_fixture):
    c = read_compose(compose_fixture, environ={})
    cards = [_card("other-base", "/model", None), _card("lv-yarros", "/adapters/lv-yarros-4b-v1/"),
             _card("lv-runtime", "/adapters/lv-runtime")]
    d = compare(cards, c)
    assert [e["name"] for e in d.in_step] == ["lv-yarros"]   # a trailing slash is the same directory
    assert [e["name"] for e in d.served_not_persisted] == ["lv-runtime"]
    assert [e["name"] for e in d.persisted_not_served] == ["lv-bronte"]
    assert d.drifted and d.summary() == "drift: 1 served but not persisted, 1 persisted but not served"
    assert any("serves the base as voices-base" in w for w in d.warnings)


# -- cost ---------------------------------------------------------------------------------


def test_schedule_rotates_and_interleaves():
    assert schedule(3) == ["base", "voice", "base2", "voice", "base2", "base", "base2", "base", "voice"]
    s = schedule(30)
    assert len(s) == 90 and all(sorted(s[i:i + 3]) == sorted(ARMS) for i in range(0, 90, 3))


def test_cost_arithmetic_reproduces_the_seats_record():
    # The seat's README: base 143.0 tok/s, lv-yarros 108.2 tok/s -> -24.3%, floor 0.1%.
    r = CostResult(base="voices-base", voice="lv-yarros", n=3, max_tokens=143, prompt="p", sampling={})
    for i, (rate_b, rate_v, rate_b2) in enumerate([(143.0, 108.2, 143.143), (140.0, 100.0, 150.0),
                                                   (150.0, 110.0, 130.0)]):
        for arm, rate in (("base", rate_b), ("voice", rate_v), ("base2", rate_b2)):
            # 142 tokens after the first, at `rate` tok/s; a TTFT that the decode figure leaves out.
            r.runs.append(Run(arm, "m", i, 1, 143, 0.05 + 142 / rate, 0.05, 142 / rate, "length"))
    j = r.as_json()
    assert (j["base_tok_s"], j["voice_tok_s"], j["base2_tok_s"]) == (143.0, 108.2, 143.143)
    assert j["overhead_pct"] == -24.34 and j["noise_floor_pct"] == 0.1 and j["outside_floor"] is True
    assert j["warnings"] == []


def test_an_overhead_inside_the_floor_is_not_a_cost():
    r = CostResult(base="b", voice="v", n=1, max_tokens=10, prompt="p", sampling={})
    r.runs += [Run("base", "b", 0, 1, 101, 1.1, 0.1, 1.0, None), Run("voice", "v", 0, 1, 100, 1.1, 0.1, 1.0, None),
               Run("base2", "b", 0, 1, 96, 1.1, 0.1, 1.0, None)]
    assert r.as_json()["overhead_pct"] == -1.0 and r.as_json()["noise_floor_pct"] == 5.0
    assert r.outside_floor is False
    # 99 vs 100 tokens: per-request costs are amortised differently, and the result says so.
    assert len(r.warnings) == 1 and "different lengths (median 101 tokens for the base, 100" in r.warnings[0]


def _sse_lines(*payloads, start=0.1, step=0.01):
    return [(start + i * step, f"data: {p if isinstance(p, str) else json.dumps(p)}") for i, p in enumerate(payloads)]


def _chunk(delta, finish=None, model="m"):
    return {"object": "chat.completion.chunk", "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_a_stream_is_timed_from_its_first_token_to_its_last():
    usage = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    lines = _sse_lines(_chunk({"role": "assistant", "content": ""}), _chunk({"content": "a"}),
                       _chunk({"content": " b"}), _chunk({"content": " c"}), _chunk({"content": ""}, "length"),
                       {"object": "chat.completion.chunk", "model": "m", "choices": [], "usage": usage}, "[DONE]")
    c = parse_chat_stream(lines, "m", latency_s=0.2)
    assert c.text == "a b c" and c.finish_reason == "length" and c.completion_tokens == 3
    # The role chunk carries no token: the first token is the one at 0.11 s, the last at 0.13 s.
    assert (c.first_token_s, c.last_token_s) == pytest.approx((0.11, 0.13))
    assert c.tpot_s == pytest.approx(0.01)


@pytest.mark.parametrize("lines, msg", [
    ([(0.1, "data: " + json.dumps(_chunk({"content": "a"})))], r"without data: \[DONE\]"),
    ([(0.1, "data: " + json.dumps(_chunk({"content": "a"}, model="other"))), (0.2, "data: [DONE]")], "names model"),
    ([(0.1, "data: {nope"), (0.2, "data: [DONE]")], "not strict JSON"),
    ([(0.1, "data: [DONE]")], "no token"),
    ([(0.1, "data: " + json.dumps({"error": {"message": "engine died"}}))], "engine died"),
])
def test_a_broken_stream_is_a_bad_answer(lines, msg):
    with pytest.raises(BadAnswer, match=msg):
        parse_chat_stream(lines, "m", latency_s=0.3)


def test_the_standin_streams_like_vllm():
    import httpx

    with StandinSeat(token_time=0.001) as seat:
        body = {"model": "voices-base", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 80,
                "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True}}
        with httpx.stream("POST", f"{seat.url}/chat/completions", json=body) as resp:
            assert resp.headers["content-type"].startswith("text/event-stream")
            lines = [ln for ln in resp.iter_lines() if ln]
    assert all(ln.startswith("data: ") for ln in lines) and lines[-1] == "data: [DONE]"
    chunks = [json.loads(ln[6:]) for ln in lines[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 80
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks[:-1])
    assert len(text.split()) == 80   # ignore_eos: past the generator's own end, to max_tokens


# -- sizes, masks ---------------------------------------------------------------------------


def test_parse_bytes_follows_vllm_suffixes():
    assert parse_bytes("2147483648") == 2**31
    assert parse_bytes("64M") == 64 * 2**20 and parse_bytes("64m") == 64_000_000
    assert parse_bytes("264MB") == 264_000_000 and parse_bytes("252MiB") == 252 * 2**20
    assert parse_bytes("2.5g") == 2_500_000_000
    with pytest.raises(VoicegateError):
        parse_bytes("2.5G")   # vLLM refuses decimals with binary suffixes


def test_memory_table_and_units():
    rows = memory_table(7_600_000_000, 264_000_000, [3, 6], kv=2**31)
    assert rows[0] == {"voices": 3, "merged_bytes": 22_800_000_000, "lora_bytes": 8_392_000_000,
                       "saved_bytes": 14_408_000_000, "lora_plus_kv_bytes": 8_392_000_000 + 2**31}
    assert [gb(7_600_000_000), gb(264_000_000), gb(148_000), gb(12), gb(-5_000_000_000)] == \
        ["7.6 GB", "264 MB", "148 KB", "12 B", "-5.0 GB"]


def test_mask_never_shows_a_usable_secret():
    assert mask("sk-live-skaldsong-7f3a") == "sk-…7f3a"
    assert mask("short") == "…" and mask(None) == "?"
