"""The seat client against the stand-in seat: endpoints, vLLM error bodies, retries, the key."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

from voicegate._errors import SeatUnreachable, VoicegateError
from voicegate.seat import (
    AdapterAlreadyLoaded,
    AdapterNotFound,
    AdapterNotLoaded,
    ModelCard,
    ModelNotFound,
    RetryPolicy,
    RuntimeLoraDisabled,
    SeatAuthError,
    SeatClient,
    StandinSeat,
    api_key_from_env,
    parse_error_body,
    redact_url,
    root_url,
    run,
)

SAMPLING = {"temperature": 0.8, "top_p": 0.95, "max_tokens": 32}
FAST = RetryPolicy(attempts=4, base_s=0.01, max_delay_s=0.05, budget_s=5.0)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_root_url_and_redaction():
    assert root_url("http://h:8027/v1") == "http://h:8027"
    assert root_url("http://h:8027/v1/") == "http://h:8027"
    assert root_url("http://h:8027") == "http://h:8027"
    assert redact_url("http://user:s3cret@h:8027/v1") == "http://h:8027/v1"
    assert redact_url("http://h:8027/v1") == "http://h:8027/v1"


def test_parse_error_bodies_as_vllm_writes_them():
    body = ('{"error":{"message":"The model `x` does not exist. Valid aliases: voices-base.",'
            '"type":"NotFoundError","param":"model","code":404}}')
    assert parse_error_body(body) == ("NotFoundError", "The model `x` does not exist. Valid aliases: voices-base.")
    assert parse_error_body(b'{"detail":"Not Found"}') == ("detail", "Not Found")
    assert parse_error_body("upstream\n  timed out") == (None, "upstream timed out")


def test_models_version_health_and_deterministic_chat():
    with StandinSeat(adapters={"lv-a": "/adapters/a"}, version="0.32.0") as seat:
        async def go():
            async with SeatClient(seat.url) as c:
                models = await c.models()
                version = await c.version()
                healthy = await c.health()
                one = await c.chat("lv-a", "Write about rain.", seed=5, sampling=SAMPLING)
                two = await c.chat("lv-a", "Write about rain.", seed=5, sampling=SAMPLING)
                other = await c.chat("voices-base", "Write about rain.", seed=5, sampling=SAMPLING)
                return models, version, healthy, one, two, other

        models, version, healthy, one, two, other = run(go())
    assert models == [ModelCard("voices-base", "/models/voices-base", None),
                      ModelCard("lv-a", "/adapters/a", "voices-base")]
    assert version == "0.32.0"
    assert healthy is True
    assert one.text == two.text and one.text != other.text
    assert one.usage["completion_tokens"] == len(one.text.split())
    assert one.usage["total_tokens"] == one.usage["prompt_tokens"] + one.usage["completion_tokens"]
    assert one.finish_reason in ("stop", "length") and one.latency_s > 0
    # The body that went out carried the model, the seed and the sampling.
    chats = seat.chat_log()
    assert [e["model"] for e in chats] == ["lv-a", "lv-a", "voices-base"] and chats[0]["seed"] == 5


def test_health_is_false_and_models_unreachable_on_a_closed_port():
    port = _closed_port()

    async def go():
        async with SeatClient(f"http://127.0.0.1:{port}/v1", retry=FAST) as c:
            assert await c.health() is False
            t0 = time.monotonic()
            with pytest.raises(SeatUnreachable) as info:
                await c.models()
            return info.value, time.monotonic() - t0

    err, took = run(go())
    msg = str(err)
    assert "\n" not in msg and "connection refused" in msg and "GET /v1/models" in msg
    assert "4 attempts" in msg and took < 5


def test_adapter_load_unload_and_vllm_refusals(tmp_path):
    adapter = tmp_path / "ckpt"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    with StandinSeat(check_paths=True) as seat:
        async def go():
            async with SeatClient(seat.url, retry=FAST) as c:
                took = await c.load_adapter("lv-x", str(adapter))
                served = [m.id for m in await c.models()]
                with pytest.raises(AdapterAlreadyLoaded, match="already loaded"):
                    await c.load_adapter("lv-x", str(adapter))
                with pytest.raises(AdapterNotFound, match="no adapter for 'lv-y' at /nope"):
                    await c.load_adapter("lv-y", "/nope")
                await c.unload_adapter("lv-x")
                with pytest.raises(AdapterNotLoaded, match="'lv-x' is not loaded"):
                    await c.unload_adapter("lv-x")
                with pytest.raises(ModelNotFound, match="does not serve model 'lv-x'"):
                    await c.chat("lv-x", "hi", seed=1, sampling=SAMPLING)
                return took, served

        took, served = run(go())
    assert served == ["voices-base", "lv-x"] and took >= 0
    # Refusals are not retried: one request each.
    assert seat.counts["/v1/load_lora_adapter"] == 3 and seat.counts["/v1/unload_lora_adapter"] == 2


def test_runtime_lora_disabled_is_explained():
    with StandinSeat(runtime_lora=False) as seat:
        async def go():
            async with SeatClient(seat.url, retry=FAST) as c:
                await c.load_adapter("lv-x", "/adapters/x")

        with pytest.raises(RuntimeLoraDisabled) as info:
            run(go())
    assert "VLLM_ALLOW_RUNTIME_LORA_UPDATING=1" in str(info.value) and "--lora-modules" in str(info.value)
    assert info.value.exit_code == 2


def test_bearer_key_is_sent_and_a_refusal_names_the_variable(monkeypatch):
    with StandinSeat(api_key="sk-test-123") as seat:
        async def go(key):
            async with SeatClient(seat.url, api_key=key, api_key_env="VOICES_API_KEY", retry=FAST) as c:
                return await c.models()

        assert len(run(go("sk-test-123"))) == 1
        with pytest.raises(SeatAuthError, match=r"401.*\$VOICES_API_KEY"):
            run(go("wrong"))
    monkeypatch.delenv("VOICES_API_KEY", raising=False)
    assert api_key_from_env("VOICES_API_KEY") is None  # unset: no key is sent (a keyless seat needs none)
    monkeypatch.setenv("VOICES_API_KEY", "k")
    assert api_key_from_env("VOICES_API_KEY") == "k" and api_key_from_env(None) is None


def test_5xx_and_429_are_retried_within_the_budget():
    with StandinSeat(fail_every=2, rate_limit_every=3) as seat:
        async def go():
            async with SeatClient(seat.url, retry=FAST) as c:
                out = [await c.chat("voices-base", f"p{i}", seed=i, sampling=SAMPLING) for i in range(6)]
                return out, c.retries

        out, retries = run(go())
    assert len(out) == 6 and retries > 0
    statuses = [e["status"] for e in seat.chat_log()]
    assert statuses.count(200) == 6 and 500 in statuses and 429 in statuses


def test_timeouts_retry_then_budget_spent_is_unreachable():
    with StandinSeat(timeout_every=1, timeout_delay=0.6) as seat:
        async def go():
            async with SeatClient(seat.url, timeout=0.2, retry=RetryPolicy(attempts=3, base_s=0.01, budget_s=5)) as c:
                await c.chat("voices-base", "p", seed=1, sampling=SAMPLING)

        with pytest.raises(SeatUnreachable, match=r"POST /v1/chat/completions: timed out.*3 attempts"):
            run(go())
    assert seat.counts["/v1/chat/completions"] == 3


def test_a_5xx_from_the_load_route_is_a_refusal_not_a_fault():
    # vLLM answers 500 for an adapter whose rank exceeds --max-lora-rank: retrying cannot help.
    with StandinSeat(fail_every=1, fault_paths=("/v1/load_lora_adapter",)) as seat:
        async def go():
            async with SeatClient(seat.url, retry=FAST) as c:
                await c.load_adapter("lv-x", "/adapters/x")

        with pytest.raises(VoicegateError) as info:
            run(go())
    assert info.value.exit_code == 2 and "could not load adapter 'lv-x'" in str(info.value)
    assert seat.counts["/v1/load_lora_adapter"] == 1


def test_standin_slots_bound_concurrency_and_log_in_flight():
    # 32 tokens at 20 ms: the first two answers decode for ~0.6 s, time for all six requests to arrive on a loaded
    # box (at 2 ms the window was 64 ms, and under CI's load the sixth came after the first had finished)
    with StandinSeat(slots=2, token_time=0.02) as seat:
        async def go():
            import asyncio
            async with SeatClient(seat.url) as c:
                await asyncio.gather(*(c.chat("voices-base", f"p{i}", seed=i, sampling=SAMPLING) for i in range(6)))

        run(go())
    assert seat.peak_in_flight == 6 and seat.peak_decoding == 2
    assert max(e["in_flight"] for e in seat.chat_log()) == 6


def test_standin_restart_drops_only_runtime_adapters():
    with StandinSeat(adapters={"lv-kept": "/a/kept"}) as seat:
        httpx.post(f"{seat.url}/load_lora_adapter", json={"lora_name": "lv-rt", "lora_path": "/a/rt"})
        assert set(seat.served()) == {"lv-kept", "lv-rt"}
        seat.restart()
        assert set(seat.served()) == {"lv-kept"}
        r = httpx.post(f"{seat.url}/chat/completions",
                       json={"model": "lv-rt", "messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 404
    assert r.json()["error"]["message"] == "The model `lv-rt` does not exist. Valid aliases: voices-base, lv-kept."


def test_a_429_holds_back_every_request_of_the_client_for_retry_after():
    import asyncio

    with StandinSeat(rate_limit_every=5, retry_after=0.4, token_time=0.0005) as seat:
        async def worker(c, w):
            # Each worker sends its next request as soon as the last one answers.
            for i in range(4):
                await c.chat("voices-base", f"w{w} p{i}", seed=i, sampling=SAMPLING)

        async def go():
            async with SeatClient(seat.url, retry=FAST) as c:
                await asyncio.gather(worker(c, 0), worker(c, 1))

        run(go())
    log = seat.chat_log()
    first_429 = next(e["time"] for e in log if e["status"] == 429)
    # The other worker's request already on the wire may land just after it; then nothing is
    # sent by either worker until Retry-After has passed.
    assert len([e for e in log if first_429 < e["time"] < first_429 + 0.35]) <= 1
    assert sum(e["status"] == 200 for e in log) == 8


def _refused_after_answering(monkeypatch: pytest.MonkeyPatch, policy: RetryPolicy | None) -> tuple[float, int, str]:
    """A seat that answers /v1/models, then refuses every connection (it went down); the client's clock and
    sleeps are simulated, so the default policy's minutes cost no time. (seconds spent, attempts, message)."""
    import asyncio

    import voicegate.seat._client as client_mod

    clock = [1000.0]

    class Clock:
        @staticmethod
        def monotonic() -> float:
            return clock[0]

    class Loop:
        def __getattr__(self, name: str):
            return getattr(asyncio, name)

        @staticmethod
        async def sleep(seconds: float) -> None:
            clock[0] += seconds

    monkeypatch.setattr(client_mod, "time", Clock)
    monkeypatch.setattr(client_mod, "asyncio", Loop())
    attempts = [0]

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": "voices-base", "root": "/m", "parent": None}]})
        attempts[0] += 1
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    async def go() -> tuple[float, str]:
        async with SeatClient("http://seat.test:8027/v1", retry=policy, transport=httpx.MockTransport(handler)) as c:
            await c.models()
            t0 = clock[0]
            with pytest.raises(SeatUnreachable) as refused:
                await c.chat("voices-base", "p", seed=1, sampling=SAMPLING)
            return clock[0] - t0, str(refused.value)

    spent, message = run(go())
    return spent, attempts[0], message


def test_a_seat_that_answered_then_refuses_is_down_within_the_refused_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """A seat that died mid-run was retried for the full policy (79 s) before the run said so."""
    assert RetryPolicy().refused_budget_s == 10.0 < RetryPolicy().budget_s
    spent, attempts, message = _refused_after_answering(monkeypatch, None)   # the default policy
    assert spent <= 10.0 and attempts < RetryPolicy().attempts, (spent, attempts)
    assert message == (f"seat http://seat.test:8027/v1 went down: it answered earlier in this run, now nothing listens "
                       f"there (POST /v1/chat/completions: connection refused, {attempts} attempts over {spent:.1f}s)")
    # an explicit budget (generate --retry-budget) is the user's: it applies to a refusal too
    patient = RetryPolicy(attempts=50, base_s=0.5, max_delay_s=4.0, budget_s=60.0, refused_budget_s=60.0)
    spent, _, _ = _refused_after_answering(monkeypatch, patient)
    assert 50.0 < spent <= 60.0
